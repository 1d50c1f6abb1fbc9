"""Reproduce TRL's LoRA -> vLLM weight-sync bug with TRL's, PEFT's and vLLM's own code and nothing else.

TRL's `VLLMGeneration._iter_named_params` merges the adapter, yields live `param.data` and unmerges when the consumer
asks for one tensor past the last. vLLM's `packed_nccl_broadcast_producer` packs *views* and copies them with
`torch.cat` only when a chunk passes the buffer (1 GiB) or the iterator ends - after the unmerge. So the last chunk a
`trl vllm-serve` server receives holds base weights: the LoRA update of every tensor in it is lost (for a model under
1 GiB, all of it). This script sends one LoRA model's weights the way TRL's server mode does - TRL's generator ->
vLLM's producer -> an in-process stand-in for the NCCL group -> vLLM's consumer -> `load_weights` of a real vLLM
engine - reads vLLM's weights back, and prints per chunk the fraction of the LoRA update that arrived, without and
with a fix that clones each tensor while the adapter is merged.

    python tools/repro_trl_lora_sync.py --model PATH_TO_A_QWEN2_MODEL [--dtype float32|bfloat16] [--buffer-mib 1024]

Needs a CUDA GPU, torch, transformers, peft, trl (tested with 1.16) and vllm (tested with 0.26)."""
import argparse, os
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")       # the engine in this process, so its weights can be read
import torch

class Wire:
    "Stands where the NCCL communicator stands: the producer's broadcasts are kept as sent and handed, in order, to the consumer."
    def __init__(self): self.sent, self.receiving = [], False
    def broadcast(self, t, src=0, stream=None):
        if not self.receiving: self.sent.append(t.detach().clone())
        else: t.copy_(self.sent.pop(0))

def trl_iterator(model):
    "TRL's own `_iter_named_params` over a PEFT model (a `VLLMGeneration` shell: only what the generator reads is set)."
    from accelerate import Accelerator
    from trl.distributed import DistributedBackend
    from trl.generation.vllm_generation import VLLMGeneration
    g = VLLMGeneration.__new__(VLLMGeneration); g.model, g.accelerator = model, Accelerator(); g._dist = DistributedBackend(g.accelerator)
    return g._iter_named_params()

def send(model, engine_model, buffer_bytes):
    "TRL's generator -> vLLM's producer -> Wire -> vLLM's consumer -> load_weights; returns the tensor names per chunk."
    from vllm.distributed.weight_transfer.packed_tensor import packed_nccl_broadcast_consumer, packed_nccl_broadcast_producer
    meta = [(n, list(t.shape), t.dtype) for n, t in trl_iterator(model)]          # TRL announces the metadata first
    wire, chunks = Wire(), []
    packed_nccl_broadcast_producer(trl_iterator(model), wire, 0, lambda item: item[1], buffer_bytes)
    torch.cuda.synchronize(); wire.receiving = True
    def load(pairs): chunks.append([n for n, _ in pairs]); engine_model.load_weights(pairs)
    packed_nccl_broadcast_consumer(((n, (s, d)) for n, s, d in meta), wire, 0, load, buffer_bytes, device="cuda")
    torch.cuda.synchronize()
    return chunks

def vllm_weight(engine_model, name, cfg):
    "vLLM's copy of one transformers tensor (its fused qkv_proj / gate_up_proj split back)."
    p = dict(engine_model.named_parameters())
    hd = cfg.hidden_size // cfg.num_attention_heads; q, kv, i = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd, cfg.intermediate_size
    for part, fused, lo, hi in (("q_proj", "qkv_proj", 0, q), ("k_proj", "qkv_proj", q, q + kv), ("v_proj", "qkv_proj", q + kv, q + 2 * kv),
                                ("gate_proj", "gate_up_proj", 0, i), ("up_proj", "gate_up_proj", i, 2 * i)):
        if f".{part}." in name: return p[name.replace(part, fused)][lo:hi]
    return p[name]

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True); ap.add_argument("--dtype", default=None, choices=["float32", "bfloat16"])
    ap.add_argument("--buffer-mib", type=int, default=1024); ap.add_argument("--rank", type=int, default=16)
    a = ap.parse_args()
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from vllm import LLM
    import trl, vllm
    from trl.generation.vllm_generation import VLLMGeneration
    for dtype in ([a.dtype] if a.dtype else ["float32", "bfloat16"]):
        torch.manual_seed(0)
        m = AutoModelForCausalLM.from_pretrained(a.model, dtype=getattr(torch, dtype)).cuda()
        pm = get_peft_model(m, LoraConfig(r=a.rank, lora_alpha=2 * a.rank, lora_dropout=0.0, target_modules="all-linear"))
        with torch.no_grad():
            for n, p in pm.named_parameters():
                if "lora_B" in n: p.normal_(0, 0.02)                       # a trained-looking adapter: ΔW = s·B·A ≠ 0
        merged = {n: t.detach().clone() for n, t in trl_iterator(pm)}      # cloned as yielded, while TRL has it merged
        base = {n: t.detach().clone() for n, t in list(trl_iterator(pm))}  # exhausted first: unmerged
        llm = LLM(model=a.model, dtype=dtype, enforce_eager=True, gpu_memory_utilization=0.25, max_model_len=512, skip_tokenizer_init=True)
        eng = llm.llm_engine.model_executor.driver_worker.model_runner.model
        print(f"\n== {a.model}: {dtype}, {sum(t.numel() * t.element_size() for t in base.values()) / 1e9:.2f} GB, "
              f"buffer {a.buffer_mib} MiB; TRL {trl.__version__}, vLLM {vllm.__version__}")
        orig = VLLMGeneration._iter_named_params
        def cloned(self):
            for n, t in orig(self): yield n, t.detach().clone()
        for label, fn in (("unpatched", orig), ("patched (clone while merged)", cloned)):
            VLLMGeneration._iter_named_params = fn
            try: chunks = send(pm, eng, a.buffer_mib << 20)
            finally: VLLMGeneration._iter_named_params = orig
            print(f"-- {label}: {len(chunks)} chunk(s)")
            for c, names in enumerate(chunks):
                fr = []
                for n in names:
                    d = merged[n].double() - base[n].double()
                    if d.norm() == 0: continue
                    r = vllm_weight(eng, n, m.config).double() - base[n].double()
                    fr.append(float((r * d).sum() / (d * d).sum()))
                if fr: print(f"   chunk {c}: {len(names):4d} tensors, {len(fr):4d} LoRA-updated; fraction of the update received "
                             f"mean {sum(fr) / len(fr):.3f}, min {min(fr):.3f}; {sum(f < 0.5 for f in fr)} arrived as base weights")
                else: print(f"   chunk {c}: {len(names):4d} tensors, none LoRA-updated")
        del llm, eng, pm, m
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory
        cleanup_dist_env_and_memory(); torch.cuda.empty_cache()

if __name__ == "__main__": main()
