"""Rollout throughput of mathworklog's generation path (HFGenerator, fast=True: a reused static KV cache, grouped-query
decoding, the decode step compiled with CUDA graphs) against plain `model.generate`, measured in the same run, at
batch 64 and 512, sampling, stopping at <|im_end|>; whether greedy outputs are identical (in fp32, where only the
algorithm can differ, and in bf16, where kernels round differently); and a profile of a few fast decode steps.
With vLLM installed it adds vLLM's rows, each measured in a fresh process (no CUDA touched before the engine): the
engine core in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`, what TRL's colocate mode runs) and in its own process
(vLLM's default), at the same batches, 16 prompts x n=8, and a profile of the in-process engine (wall time against GPU
kernel time) that says where vLLM's time goes on this small model.
Prints the ratios and saves bench/results/rollout_throughput.json (or $OUT)."""
import json, os, sys, time
from _common import answer, one_result

def vllm_worker(mode, preset, batches, new):
    "vLLM's rows for one engine mode, in a fresh process (nothing has touched CUDA before the engine)."
    import torch
    from _common import preset_model
    from mathworklog.data import load_gsm8k, render_prompt
    from mathworklog.generation import VLLMGenerator
    tok, path = preset_model(preset)
    prompts = [render_prompt(tok, q["question"]) for q in load_gsm8k("test", n=max(batches), preset=preset)]
    g = VLLMGenerator(path, tok, dtype="bfloat16", gpu_memory_utilization=0.5, max_model_len=2048)
    g.generate(prompts[:8], n=1, temperature=1.0, max_new_tokens=16, seed=0)                          # warm-up
    out = {}
    try: out["max_num_seqs"] = g.llm.llm_engine.vllm_config.scheduler_config.max_num_seqs
    except Exception: pass
    # seeded (a seed per request, as the chapters call it: vLLM then draws each sequence's noise with its own generator,
    # one kernel per sequence per step) and unseeded (one draw for the whole batch)
    for tag, seed in (("", lambda r: r), ("_unseeded", lambda r: None)):
        for B in batches:
            best = min((g.generate(prompts[:B], n=1, temperature=1.0, max_new_tokens=new, seed=seed(r))
                        for r in range(2)), key=lambda x: x.seconds)
            out[f"batch_{B}{tag}"] = dict(tok_s=best.tokens_per_s, tokens=best.n_tokens, s=best.seconds)
        best = min((g.generate(prompts[:16], n=8, temperature=1.0, max_new_tokens=new, seed=seed(r))
                    for r in range(2)), key=lambda x: x.seconds)
        out[f"16x8{tag}"] = dict(tok_s=best.tokens_per_s, tokens=best.n_tokens, s=best.seconds)
        print(f"{mode}{tag}: " + ", ".join(f"{k} {v['tok_s']:.0f} tok/s" for k, v in out.items()
                                          if isinstance(v, dict)), flush=True)
    if mode == "in_process":                             # where the time goes: GPU kernels against the wall clock
        from torch.profiler import profile, ProfilerActivity
        B = min(batches)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            r = g.generate(prompts[:B], n=1, temperature=1.0, max_new_tokens=64, seed=0)
            wall = time.perf_counter() - t0
        kernel_s = sum(e.self_device_time_total for e in prof.key_averages()
                       if getattr(e, "self_device_time_total", 0) > 0) / 1e6
        top_cpu = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:8]
        out["profile"] = dict(batch=B, new_tokens=64, wall_ms_per_step=1e3 * wall / 64,
                              gpu_kernel_ms_per_step=1e3 * kernel_s / 64, gpu_busy_share=kernel_s / wall,
                              top_cpu=[(e.key[:70], round(e.self_cpu_time_total / 1e3, 1)) for e in top_cpu])
    g.close()
    return out

if __name__ == "__main__" and "--vllm-worker" in sys.argv:    # a fresh process per vLLM engine mode, CUDA untouched
    mode = sys.argv[sys.argv.index("--vllm-worker") + 1]
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if mode == "in_process" else "1"
    # nothing has touched CUDA yet, and this script is not import-safe
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "fork"
    arg = lambda name: sys.argv[sys.argv.index(name) + 1]
    answer(vllm_worker, mode, arg("--preset"), json.loads(arg("--batches")), int(arg("--new")))
    sys.exit(0)
import torch
from transformers import AutoModelForCausalLM
from _common import args, device, preset_model, sync, timed, save
from mathworklog.data import load_gsm8k, render_prompt
from mathworklog.generation import HFGenerator, stop_ids, vllm_available

a = args(__doc__, batches=dict(type=int, nargs="+", default=[64, 512]), new=dict(type=int, default=256),
         greedy_tokens=dict(type=int, default=64), profile_steps=dict(type=int, default=16),
         vllm_only=dict(action="store_true", help="only the vLLM rows; the HF rows (for the ratios) from --hf-from"),
         hf_from=dict(default=None, help="a rollout_throughput.json whose HF rows the vLLM rows are compared with"))
dev = device()
tok, path = preset_model(a.preset)
tok.padding_side = "left"
load = lambda dtype: AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(dev).eval()
model = None if a.vllm_only else load(torch.bfloat16 if dev == "cuda" else torch.float32)
prompts = [render_prompt(tok, q["question"]) for q in load_gsm8k("test", n=max(a.batches), preset=a.preset)]
stops = torch.tensor(stop_ids(tok) + [tok.pad_token_id], device=dev)

def plain(m, enc, new, sample=True):
    kw = dict(do_sample=True, temperature=1.0, top_k=0, top_p=1.0) if sample else dict(do_sample=False)
    with torch.inference_mode():
        return m.generate(**enc, max_new_tokens=new, eos_token_id=stop_ids(tok), pad_token_id=tok.pad_token_id, **kw)

def n_tokens(out, plen): return int((~torch.isin(out[:, plen:], stops)).sum())
def encode(B): return tok(prompts[:B], return_tensors="pt", padding=True, add_special_tokens=False).to(dev)

def profile(fast, enc, steps):
    "Wall time per decode step against the GPU kernel time inside it, and the kernels that take longest."
    from torch.profiler import profile as prof, ProfilerActivity
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    with prof(activities=acts) as p:
        sync()
        t0 = time.perf_counter()
        fast._generate(enc, 1, 1.0, steps)
        sync()
        wall = time.perf_counter() - t0
    ev = [e for e in p.key_averages() if getattr(e, "device_time_total", 0) > 0] if dev == "cuda" else []
    kernel_us = sum(e.self_device_time_total for e in ev)
    top = sorted(ev, key=lambda e: -e.self_device_time_total)[:8]
    return dict(wall_ms_per_step=1e3 * wall / steps, gpu_kernel_ms_per_step=kernel_us / 1e3 / steps,
                top_kernels=[(e.key[:80], round(e.self_device_time_total / 1e3 / steps, 3), e.count) for e in top])

res = {}
if a.vllm_only:                                                  # the HF rows of an earlier run (said so in the output)
    prev = json.loads(open(a.hf_from).read()) if a.hf_from else {}
    res = {k: v for k, v in prev.items() if k.startswith("batch_")}
    res["hf_rows_from"] = f"{a.hf_from} (not re-measured in this run)" if a.hf_from else None
for B in ([] if a.vllm_only else a.batches):
    enc = encode(B)
    plen = enc["input_ids"].shape[1]
    fast = HFGenerator(model, tok, batch_size=B, fast=True)
    plain(model, enc, 8)                                                        # warm-up
    sync()
    t0 = time.perf_counter()
    fast._generate(enc, 1, 1.0, a.new)
    sync()
    compile_s = time.perf_counter() - t0
    tp, op = timed(lambda: plain(model, enc, a.new))
    tf, of = timed(lambda: fast._generate(enc, 1, 1.0, a.new))
    r = dict(prompt_tokens=plen, plain_tok_s=n_tokens(op, plen) / tp, fast_tok_s=n_tokens(of, plen) / tf,
             plain_s=tp, fast_s=tf, first_fast_call_s=compile_s, tokens=n_tokens(of, plen))
    r["ratio"] = r["fast_tok_s"] / r["plain_tok_s"]
    if a.profile_steps: r["profile"] = profile(fast, enc, a.profile_steps)
    res[f"batch_{B}"] = r
    print(f"batch {B}: plain {r['plain_tok_s']:.0f} tok/s, fast {r['fast_tok_s']:.0f} tok/s, ratio {r['ratio']:.2f}x"
          + (f"; fast step {r['profile']['wall_ms_per_step']:.2f} ms wall, "
             f"{r['profile']['gpu_kernel_ms_per_step']:.2f} ms on the GPU"
             if a.profile_steps else ""), flush=True)

# greedy: identical outputs? fp32 shows whether the algorithm is the same; bf16 adds the kernels' rounding
B = min(a.batches)
enc = encode(B)
for name, m in ([] if a.vllm_only else [("fp32", load(torch.float32)), ("bf16", model)] if dev == "cuda"
                else [("fp32", model)]):
    g_plain = plain(m, enc, a.greedy_tokens, sample=False)
    g_fast = HFGenerator(m, tok, batch_size=B, fast=True)._generate(enc, 1, 0.0, a.greedy_tokens)
    same = [torch.equal(x, y) for x, y in zip(g_plain, g_fast)]
    res[f"greedy_identical_{name}"] = sum(same) / len(same)
    print(f"greedy outputs identical ({name}) for {sum(same)}/{len(same)} prompts, {a.greedy_tokens} tokens",
          flush=True)
    del m
save(a, "rollout_throughput", res, quiet=True)                 # the HF rows, before vLLM's
if dev == "cuda" and vllm_available():
    import vllm
    del model
    torch.cuda.empty_cache()
    for mode in ("in_process", "own_process"):
        r = res[f"vllm_{mode}"] = one_result([sys.executable, __file__, "--vllm-worker", mode, "--preset", a.preset,
                                              "--batches", json.dumps(a.batches), "--new", str(a.new)], limit=900)
        if "error" in r:
            print(f"vLLM {mode} failed ({r['error']}):", r["log_tail"][-1500:])
            continue
        for B in a.batches:
            for tag in ("", "_unseeded"):
                if "fast_tok_s" in res.get(f"batch_{B}", {}) and f"batch_{B}{tag}" in r:
                    r[f"batch_{B}{tag}"]["vs_fast"] = r[f"batch_{B}{tag}"]["tok_s"] / res[f"batch_{B}"]["fast_tok_s"]
        save(a, "rollout_throughput", res, quiet=True)
        print(f"vLLM {vllm.__version__} {mode}: "
              + ", ".join(f"{k} {v['tok_s']:.0f} tok/s" for k, v in r.items() if isinstance(v, dict) and "tok_s" in v)
              + (f"; profile at batch {r['profile']['batch']}: {r['profile']['wall_ms_per_step']:.2f} ms/step wall, "
                 f"{r['profile']['gpu_kernel_ms_per_step']:.2f} ms on the GPU" if "profile" in r else ""), flush=True)
    res["vllm_version"] = vllm.__version__
save(a, "rollout_throughput", res)
