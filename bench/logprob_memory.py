"""Peak GPU memory (and gradient agreement) of per-token log-probs with backward, 8 x 2,048 tokens over 151,936 rows:
full fp32 logits (baseline), naive chunking (no recomputation), TRL's ChunkedLogProbFunction (what GRPOTrainer runs:
chunked, recomputed in backward, Triton on CUDA), and Liger's fused linear cross-entropy when importable.
Saves bench/results/logprob_memory.json (or $OUT)."""
import torch
from _common import args, device, sync, save

a = args(__doc__, seqs=dict(type=int, default=8), length=dict(type=int, default=2048))
dev = device()
H, V = (896, 151936) if a.preset == "gpu" else (64, 151936)
N = a.seqs * a.length if a.preset == "gpu" else 256
g = torch.Generator(device=dev).manual_seed(0)
h0 = torch.randn(N, H, device=dev, generator=g) * 1.0
w0 = torch.randn(V, H, device=dev, generator=g) * 0.02
tgt = torch.randint(0, V, (N,), device=dev, generator=g)
up = torch.randn(N, device=dev, generator=g)          # a random upstream gradient per token
ac = dict(device_type="cuda", dtype=torch.bfloat16, enabled=dev == "cuda")

def full(h, w):
    with torch.autocast(**ac): logits = h @ w.T
    return logits.float().log_softmax(-1).gather(-1, tgt[:, None]).squeeze(-1)

def naive_chunks(h, w, c=2048):
    outs = []
    for s in range(0, N, c):
        with torch.autocast(**ac): z = h[s:s+c] @ w.T
        outs.append(z.float().log_softmax(-1).gather(-1, tgt[s:s+c, None]).squeeze(-1))
    return torch.cat(outs)

def trl_chunked(h, w):
    from trl.kernels import ChunkedLogProbFunction
    from trl.trainer.utils import _CHUNKED_LOGPROB_CHUNK_SIZE as cs
    with torch.autocast(**ac): return ChunkedLogProbFunction.apply(h, w, None, tgt, 1.0, cs, None, 1.0, ())[0]

def liger(h, w):
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss
    with torch.autocast(**ac): return -LigerFusedLinearCrossEntropyLoss(reduction="none")(w, h, tgt)

def measure(fn):
    h = h0.clone().requires_grad_()
    w = w0.clone().requires_grad_()
    sync()
    torch.cuda.empty_cache() if dev == "cuda" else None
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    lp = fn(h, w)
    (lp * up).sum().backward()
    sync()
    peak = (torch.cuda.max_memory_allocated() - base) / 2**30 if dev == "cuda" else None
    return dict(peak_gib=peak), lp.detach().float(), h.grad.float(), w.grad.float()

res, ref = {}, None
for name, fn in [("full_fp32_logits", full), ("naive_chunks", naive_chunks), ("trl_chunked_recompute", trl_chunked),
                 ("liger_fused", liger)]:
    try: r, lp, gh, gw = measure(fn)
    except Exception as e:
        res[name] = dict(error=f"{type(e).__name__}: {str(e)[:200]}")
        print(name, "unavailable:", res[name]["error"])
        continue
    if ref is None: ref = (lp, gh, gw)
    rel = lambda x, y: float((x - y).norm() / y.norm())
    r.update(logp_rel_err=rel(lp, ref[0]), grad_h_rel_err=rel(gh, ref[1]), grad_w_rel_err=rel(gw, ref[2]))
    res[name] = r
    print(name, r, flush=True)
base = res["full_fp32_logits"]["peak_gib"]
for k, r in res.items():
    if base and r.get("peak_gib"): r["memory_ratio_vs_full"] = base / r["peak_gib"]
save(a, "logprob_memory", res)
