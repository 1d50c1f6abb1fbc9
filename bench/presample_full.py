"""Chapters 02 and 04 at the worklog's size, by engine: greedy evaluation of all 1,319 test questions and presampling of
all 7,473 training questions x 8 samples at temperature 1, through vLLM and through chapter 02's HF fast path
(reused static cache, grouped-query decoding, CUDA graphs), both bf16, on the Qwen2.5-0.5B-shaped random model.
A random model never stops early, so every sample runs to the cap (256 new tokens by default): the figure that
matters is sampled tokens per second. The vLLM rows can be read from the runs the chapters' notebooks wrote
(`--from-runs`, so the full presample is not sampled twice in one lease); the HF fast path presamples a subset
(`--hf-questions`) and is reported at its measured rate. Each engine runs in its own process.
Saves bench/results/presample_full.json (or $OUT)."""
import json, os, subprocess, sys, time
from pathlib import Path

def worker(engine, task, n, k, new):
    "One engine, one task, in this process; prints the timing."
    import torch
    from mathworklog.core import load_tokenizer, model_path
    from mathworklog.data import load_gsm8k, prepare, render_prompt
    from mathworklog.evaluate import make_generator
    tok = load_tokenizer(); path = model_path("shaped", tok, "gpu")
    recs = prepare(load_gsm8k("test" if task == "baseline" else "train", n=n or None))
    prompts = [render_prompt(tok, r["question"]) for r in recs]
    g = make_generator(path, tok, engine, batch_size=512 if task == "presample" else 256, dtype="bfloat16")
    if engine == "hf":                                          # compile the batch shape the task uses before timing
        g.generate(prompts[:g.batch_size // (k if task == "presample" else 1)], n=k if task == "presample" else 1,
                   temperature=1.0 if task == "presample" else 0.0, max_new_tokens=new, seed=0)
    else: g.generate(prompts[:8], n=2, temperature=1.0, max_new_tokens=16, seed=0)          # warm-up
    t0 = time.perf_counter()
    out = g.generate(prompts, n=k if task == "presample" else 1, temperature=1.0 if task == "presample" else 0.0,
                     max_new_tokens=new, seed=0)
    secs = time.perf_counter() - t0
    print("PRESAMPLE_RESULT " + json.dumps(dict(engine=type(g).__name__, task=task, questions=len(prompts), samples_per_question=k if task == "presample" else 1,
                                                max_new_tokens=new, tokens=out.n_tokens, seconds=secs, tokens_per_s=out.n_tokens / secs)))

def from_run(runs, chapter, backend="VLLMGenerator"):
    "The newest run of `chapter` (gpu preset) whose generator was vLLM: its tokens, seconds and tokens/s."
    cands = []
    for m in Path(runs).glob(f"{chapter}-*/meta.json"):
        meta = json.loads(m.read_text())
        if meta.get("preset") != "gpu": continue
        info = m.parent/("presample.json" if chapter == "presample" else "eval/greedy.table.json")
        if not info.exists(): continue
        t = json.loads(info.read_text())
        if chapter == "presample" and t.get("backend") != backend: continue
        if chapter == "baseline" and meta.get("params", {}).get("backend") != "vllm": continue
        cands.append((meta["created_at"], dict(engine=backend, task=chapter, run_id=meta["run_id"], questions=t.get("n_questions"),
                                               samples_per_question=t.get("k", 1), tokens=t["tokens"], seconds=t["seconds"],
                                               tokens_per_s=t["tokens_per_s"], source="the chapter's own run (notebook)")))
    return sorted(cands)[-1][1] if cands else None

if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default=os.environ.get("OUT", "bench/results")); p.add_argument("--new", type=int, default=256)
    p.add_argument("--from-runs", default=None, help="read the vLLM rows from these chapter runs instead of sampling again")
    p.add_argument("--hf-questions", type=int, default=1024); p.add_argument("--worker", nargs=5, default=None)
    a = p.parse_args()
    if a.worker:
        e, t, n, k, new = a.worker; worker(e, t, int(n), int(k), int(new)); sys.exit(0)
    res = {}
    jobs = [("vllm", "baseline", 0, 1), ("hf", "baseline", 0, 1), ("vllm", "presample", 0, 8), ("hf", "presample", a.hf_questions, 8)]
    for engine, task, n, k in jobs:
        key = f"{task}_{engine}"
        if engine == "vllm" and a.from_runs and (r := from_run(a.from_runs, task)): res[key] = r; print(key, r, flush=True); continue
        pr = subprocess.run([sys.executable, __file__, "--worker", engine, task, str(n), str(k), str(a.new)], capture_output=True, text=True, timeout=1500)
        line = [l for l in pr.stdout.splitlines() if l.startswith("PRESAMPLE_RESULT ")]
        res[key] = json.loads(line[0].split(" ", 1)[1]) if line and pr.returncode == 0 else dict(error=(pr.stderr or pr.stdout)[-2000:])
        print(key, res[key] if "error" not in res[key] else res[key]["error"][-800:], flush=True)
    for task in ("baseline", "presample"):
        v, h = res.get(f"{task}_vllm", {}), res.get(f"{task}_hf", {})
        if "tokens_per_s" in v and "tokens_per_s" in h:
            res[f"{task}_vllm_over_hf"] = v["tokens_per_s"] / h["tokens_per_s"]
            print(f"{task}: vLLM {v['tokens_per_s']:.0f} tok/s, HF fast path {h['tokens_per_s']:.0f} tok/s: vLLM {res[f'{task}_vllm_over_hf']:.2f}x")
    if "tokens_per_s" in res.get("presample_hf", {}):
        h = res["presample_hf"]; res["presample_hf"]["full_size_seconds_at_this_rate"] = 7473 * 8 * a.new / h["tokens_per_s"]
    import torch, importlib.metadata as md
    res.update(device=torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu", goal_tokens_per_s=100_000,
               versions={n: md.version(n) for n in ("torch", "transformers", "vllm") if __import__("importlib").util.find_spec(n)})
    Path(a.out).mkdir(parents=True, exist_ok=True); (Path(a.out)/"presample_full.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))
