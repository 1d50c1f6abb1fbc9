"""Does TRL's LoRA sync race the optimizer when vLLM's packed producer drives it? (GPU only; TRL and PEFT, vLLM
optional.)
On the H200 (2026-12-04) the live experiment's clone-fix arms stopped learning: in fp32 the trainer's probe drift
stayed at 0.0019154 ± 1e-8 for 29 steps while the unpatched arms drifted to 0.0113-0.0127 and the out-of-place arm to
0.0116. The suspect:
vLLM's `packed_nccl_broadcast_producer` advances the sync iterator inside its own CUDA side streams, so TRL's
`merge_adapter()` may run before the optimizer's kernels on the default stream have written the new LoRA weights, and
`unmerge_adapter()` (queued later) subtracts the new ones: the base weight absorbs each step and the effective weight
never moves. This script trains a LoRA model of the gpu preset's shape a few steps with plain AdamW and, right after
each `optimizer.step()` (as the probe callback syncs, before anything waits for the GPU), drives TRL's sync generator
through the producer's stream pattern (vLLM's own when installed, else the same loop written out here), then measures
the trainer's drift from the start on fixed tokens. Modes: unpatched, `clone_on_side_stream` (the clone fix as it was
before the stream ordering), and the library's `clone` and `out_of_place`. Prints one row per mode and step; saves
--out/stream_race.json.
How to read it: unpatched TRL runs the same merge/unmerge on the same side streams, and in the live run its trainer did
learn; so the stream race explains the freeze only if `clone_on_side_stream` freezes here while `unpatched` does not. If
neither freezes, the other candidate is memory: the live waves peaked at 142 of 143 GB, the clone fix allocates a copy
of every tensor per sync, and the arms ran with expandable segments (set here too) — re-run one clone arm alone to
test it.
What it showed (H200, 2026-12-04, fp32, lr 1e-3, 8 steps; bench/h200/stream_race.json, two runs): `clone` and
`out_of_place` agree at every step and across runs (drift 2.263 at step 2, 4.729 at step 8). Through vLLM's own
producer, `unpatched` parts from them at step 1 (1.285 vs 1.317) and `clone_on_side_stream` at step 2, its drift falling
back to 0.917 at step 7 (the trainer's weights damaged); with the loop written out (vLLM absent), `unpatched` stopped
moving after step 6 (3.15878 at steps 6, 7 and 8) while `clone_on_side_stream` did not freeze. So the race is real and
TRL's own, the unordered clone fix inherited it, and the stream ordering ends it. By the rule above this does not single
it out as the cause of the live freeze (here the unordered clone did not freeze); what is known is that the live clone
arms, re-run stream-ordered, trained (fp32 trainer drift 0.0019 -> 0.0148 in 30 steps), also three at a time (peak 130
GB against the first waves' 142 GB), so memory is not ruled out."""
import argparse, contextlib, importlib.util, json, os, time
from pathlib import Path
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")    # as the live arms ran
import torch

def vllm_here() -> bool:
    "vLLM is importable (its producer is then the one driven)."
    return importlib.util.find_spec("vllm") is not None

def producer_pattern(items, buffer_size_bytes, num_buffers=2):
    "vLLM's packed producer's stream use: each chunk packed (and the iterator advanced) on its own side stream."
    try: from vllm.distributed.weight_transfer.packed_tensor import packed_nccl_broadcast_producer
    except ImportError: packed_nccl_broadcast_producer = None
    if packed_nccl_broadcast_producer is not None:
        class Sink:
            def broadcast(self, tensor, src=0, stream=None): self.last = tensor.clone()
        packed_nccl_broadcast_producer(iter(items), Sink(), 0, lambda it: it[1], buffer_size_bytes, num_buffers)
        return "vllm"
    cuda = torch.cuda.is_available()
    streams = [torch.cuda.Stream() if cuda else NoStream() for _ in range(num_buffers)]
    hold, idx, it = [None] * num_buffers, 0, iter(items)
    while True:
        streams[idx].synchronize()
        hold[idx] = None
        with torch.cuda.stream(streams[idx]) if cuda else contextlib.nullcontext():
            parts, total = [], 0
            for _, t in it:
                parts.append(t.contiguous().view(torch.uint8).view(-1))
                total += parts[-1].numel()
                if total > buffer_size_bytes: break
            if not parts: return "mimic"
            hold[idx] = torch.cat(parts).clone()
            idx = (idx + 1) % num_buffers

class NoStream:
    "A CUDA stream's stand-in on the CPU, where everything runs in order (the smoke run: no race is possible there)."
    def synchronize(self): pass

def old_clone(orig):
    "The clone fix before 2026-12-04: clones on whatever stream the caller is on."
    def _iter_named_params(self):
        for name, t in orig(self): yield name, t.detach().clone()
    _iter_named_params.__wrapped__, _iter_named_params._mathworklog_patch = orig, "clone"
    return _iter_named_params

def run(mode, a):
    from trl.generation.vllm_generation import VLLMGeneration
    from _common import preset_model, sync
    from mathworklog.data import load_gsm8k, prepare
    from mathworklog.generation import token_logprobs
    from mathworklog.settings import pick_device, seed_everything
    from mathworklog.weights import SyncPatch, lora_model, patch_trl_lora_sync, probe_batch, trl_generation_for
    seed_everything(0)
    tok, path = preset_model(a.preset)
    pm = lora_model(path, r=16, dtype=getattr(torch, a.dtype), scale=0.0)
    ids, mask, keep = probe_batch(tok, prepare(load_gsm8k("test", n=8, preset=a.preset)), max_tokens=64)
    ids, mask = ids.to(pick_device()), mask.to(pick_device())
    opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=a.lr)
    g = trl_generation_for(pm)
    start = token_logprobs(pm, ids, mask, keep)
    n = mask[:, -keep:].sum()
    orig = VLLMGeneration._iter_named_params
    if mode == "clone_on_side_stream":
        VLLMGeneration._iter_named_params = old_clone(orig)
        ctx = SyncPatch(orig, "clone")
    else: ctx = patch_trl_lora_sync(mode) if mode != "unpatched" else SyncPatch(None)
    rows = []
    with ctx:
        for step in range(1, a.steps + 1):
            loss = -token_logprobs(pm, ids, mask, keep, grad=True).sum() / n
            # queued on the default stream; nothing waits for it
            loss.backward()
            opt.step()
            opt.zero_grad()
            how = producer_pattern(g._iter_named_params(), a.buffer_mib << 20)
            sync()
            lp = token_logprobs(pm, ids, mask, keep)
            rows.append(dict(mode=mode, step=step, trainer_drift=float((lp - start).abs().sum() / n), transport=how))
            print(json.dumps(rows[-1]), flush=True)
    VLLMGeneration._iter_named_params = orig
    del pm, opt
    if torch.cuda.is_available(): torch.cuda.empty_cache()
    return rows

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--modes", nargs="+", default=["unpatched", "clone_on_side_stream", "clone", "out_of_place"])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--buffer-mib", type=int, default=1024)
    ap.add_argument("--preset", default="gpu", help="gpu: the 0.5B shape; tiny: a CPU smoke run of the code path (no "
                    "streams on a CPU, so no race: it checks that the script runs)")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results"))
    a = ap.parse_args()
    from mathworklog.files import atomic_write_text
    from mathworklog.weights import cpu_streams
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    # the race is between CUDA streams: on a CPU (vLLM's producer through `weights.cpu_streams`) this is a smoke run
    res = dict(args=vars(a), rows=[], device=torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu")
    for m in a.modes:
        t = time.perf_counter()
        with contextlib.nullcontext() if torch.cuda.is_available() or not vllm_here() else cpu_streams():
            res["rows"] += run(m, a)
        print(m, f"{time.perf_counter() - t:.1f} s", flush=True)
        atomic_write_text(out/"stream_race.json", json.dumps(res, indent=2))
