"""Chapters 02 and 04 at the worklog's size, by engine: greedy evaluation of all 1,319 test questions and presampling of
all 7,473 training questions x 8 samples at temperature 1, through vLLM and through chapter 02's HF fast path
(reused static cache, grouped-query decoding, CUDA graphs), both bf16, on the Qwen2.5-0.5B-shaped random model.
A random model never stops early, so every sample runs to the cap (256 new tokens by default): the figure that
matters is sampled tokens per second.
Each engine runs in its own process (`_common.Worker`: one per engine, its tasks in order, a result message after each,
so a run cut off by its time budget keeps what it measured); the vLLM engine core runs in its own process too (vLLM's
default, spawned).
vLLM, in this order: chapter 02's greedy baseline, the full presample as chapter 04 calls it (one `generate` of all
59,784 samples drawn from the engine's seeded generator), and a subset with a seed per question (`request_seeds`: vLLM
0.26 then draws each seeded row's noise in a Python loop, one kernel per row per step). `--vllm-kw` (JSON) goes to
vLLM's `LLM`; by default CUDA graphs are captured up to 1,024 rows (vLLM's default stops at 512 while it schedules up
to 1,024 sequences at once on an H200). HF fast path: the presample
of a subset (`--hf-questions`, reported at its measured rate and extrapolated), then the baseline if time is left.
`--from-runs` reads the vLLM rows from the runs the chapters' notebooks wrote instead (so the full presample is not
sampled twice in one lease). Seconds are wall time around `generate` (tokenising and decoding included);
`engine_seconds` is the time inside the engine's own call. Saves bench/results/presample_full.json (or $OUT)."""
import json, math, os, sys, time
from pathlib import Path
from _common import kill_workers_on_stop, run_worker, tell, worker_pipe

def worker(engine, tasks, new, preset, vllm_kw=None, engines=1):
    "One engine (or a `GeneratorPool` of `engines`), its tasks in order, in this process; sends each task's timings."
    talk = worker_pipe()
    import torch
    from _common import preset_model
    from mathworklog.data import load_gsm8k, prepare, render_prompt
    from mathworklog.pool import make_generator
    engines = engines if engine == "vllm" else 1          # a pool is of vLLM engines only
    tok, path = preset_model(preset)
    t0 = time.perf_counter()
    g = make_generator(path, tok, engine, batch_size=512, dtype="bfloat16" if torch.cuda.is_available() else "float32",
                       workers=engines, **((vllm_kw or {}) if engine == "vllm" else {}))
    start = time.perf_counter() - t0
    info = dict(engine=type(g).__name__, backend=engine, engine_start_s=round(start, 1), engines=engines)
    if engine == "vllm":
        try:
            if engines == 1:
                sc = g.llm.llm_engine.vllm_config.scheduler_config
                info.update(in_process=g.in_process, max_num_seqs=sc.max_num_seqs,
                            max_num_batched_tokens=sc.max_num_batched_tokens,
                            mp_method=os.environ.get("VLLM_WORKER_MULTIPROC_METHOD"))
            info.update(vllm_kw=vllm_kw)
        except Exception as e: info["config_error"] = repr(e)[:200]
        t0 = time.perf_counter()
        g.generate(["Hello"] * 8 * engines, n=2, temperature=1.0, max_new_tokens=16, seed=0)          # warm-up
        info["warmup_s"] = round(time.perf_counter() - t0, 1)
    tell(talk, "info", info)
    for t in tasks:
        task, n, k = t["task"], t.get("n") or None, t["k"]
        if engine == "vllm" and engines == 1: g.request_seeds = t.get("request_seeds", False)
        recs = prepare(load_gsm8k("test" if task == "baseline" else "train", n=n, preset=preset))
        prompts = [render_prompt(tok, r["question"]) for r in recs]
        temp = 1.0 if task == "presample" else 0.0
        if engine == "hf":                                   # compile the batch shape (512 rows) before timing
            t0 = time.perf_counter()
            g.generate(prompts[:g.batch_size // k], n=k, temperature=temp, max_new_tokens=new, seed=0)
            compile_s = time.perf_counter() - t0
        if engine == "hf" and torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()   # not in vLLM's client process
        tell(talk, "start", dict(info, task=task, questions=len(prompts), samples_per_question=k, max_new_tokens=new,
                                 request_seeds=t.get("request_seeds", False), tokens_if_complete=len(prompts) * k * new,
                                 wall_clock=time.time()))                   # a cut-off run still bounds its rate
        t0 = time.perf_counter()
        out = g.generate(prompts, n=k, temperature=temp, max_new_tokens=new, seed=0)
        secs = time.perf_counter() - t0
        r = dict(info, task=task, questions=len(prompts), samples_per_question=k, max_new_tokens=new,
                 request_seeds=t.get("request_seeds", False),
                 greedy=temp == 0, tokens=out.n_tokens, seconds=round(secs, 2), engine_seconds=round(out.seconds, 2),
                 tokens_per_s=round(out.n_tokens / secs), engine_tokens_per_s=round(out.n_tokens / out.seconds))
        if engine == "hf":
            r.update(batch_rows=g.batch_size, first_batch_compile_s=round(compile_s, 1),
                     peak_gib=(round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available()
                               else None))
        tell(talk, "result", r)
    if hasattr(g, "close"): g.close()

def unfinished(messages, done: int, killed_at: float) -> dict | None:
    """The task that was sampling when its worker was killed (the first started and not done), with an upper bound on
    its rate."""
    started = [p for kind, p in messages if kind == "start"]
    if len(started) <= done: return None                 # killed before the next task began sampling: nothing to bound
    r = dict(started[done])
    s = killed_at - r.pop("wall_clock")
    return dict(r, completed=False, sampling_s_at_least=round(s, 1),
                tokens_per_s_upper_bound=math.ceil(r["tokens_if_complete"] / s),
                bounds_how="the task's tokens if complete / the seconds from its generate call to the kill")

def run_engine(engine, tasks, new, preset, limit, log, vllm_kw=None, engines=1):
    "An engine's worker (its whole tree, vLLM's engine processes included) for at most `limit` seconds; its results."
    w = run_worker([sys.executable, __file__, "--worker", engine, json.dumps(tasks), str(new), preset,
                    json.dumps(vllm_kw), str(engines)], limit, log)
    res = w.got("result")
    if w.timed_out and (cut := unfinished(w.messages, len(res), w.killed_at)): res.append(cut)
    info = w.got("info")
    return res, (info[0] if info else None), dict(rc=w.rc, seconds=w.seconds, timed_out=w.timed_out,
                                                    limit_s=round(limit), tail=None if w.rc == 0 else w.tail(1500))

def from_run(runs, chapter, backend="VLLMGenerator", preset="gpu"):
    "The newest run of `chapter` (of `preset`) whose generator was vLLM: its tokens, seconds and tokens/s."
    cands = []
    for m in Path(runs).glob(f"{chapter}-*/meta.json"):
        meta = json.loads(m.read_text())
        if meta.get("preset") != preset: continue
        info = m.parent/("presample.json" if chapter == "presample" else "eval/greedy.table.json")
        if not info.exists(): continue
        t = json.loads(info.read_text())
        if chapter == "presample" and t.get("backend") != backend: continue
        if chapter == "baseline" and meta.get("params", {}).get("backend") != "vllm": continue
        cands.append((meta["created_at"], dict(engine=backend, task=chapter, run_id=meta["run_id"],
                                               questions=t.get("n_questions"), samples_per_question=t.get("k", 1),
                                               tokens=t["tokens"], seconds=t["seconds"], tokens_per_s=t["tokens_per_s"],
                                               source="the chapter's own run (notebook)")))
    return sorted(cands)[-1][1] if cands else None

def key(r):
    # a GeneratorPool of vLLM engines is vLLM
    backend = r.get("backend") or ("vllm" if r["engine"] == "VLLMGenerator" else "hf")
    return f"{r['task']}_{backend}" + ("_request_seeds" if r.get("request_seeds") else "")

if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default=os.environ.get("OUT", "bench/results"))
    p.add_argument("--new", type=int, default=256)
    p.add_argument("--preset", default="gpu", help="gpu: the 0.5B shape; tiny: a CPU smoke run of the HF path")
    p.add_argument("--from-runs", default=None,
                   help="read the vLLM rows from these chapter runs instead of sampling again")
    p.add_argument("--questions", type=int, default=0, help="presample questions for vLLM (0: all 7,473)")
    p.add_argument("--test-questions", type=int, default=0, help="baseline questions (0: all 1,319)")
    p.add_argument("--hf-questions", type=int, default=1024)
    p.add_argument("--seeded-questions", type=int, default=1024, help="vLLM presample subset with a seed per question")
    p.add_argument("--vllm-kw", type=json.loads, default=None,
                   help='vLLM LLM arguments (JSON); default on a GPU: {"compilation_config": '
                        '{"max_cudagraph_capture_size": 1024}}, on a CPU none')
    p.add_argument("--budget", type=float,
                   default=float(os.environ["ITEM_LIMIT"]) - 20 if os.environ.get("ITEM_LIMIT") else 480,
                   help="seconds for all workers (default: gpu_run.sh's item limit less 20 s)")
    p.add_argument("--hf-reserve", type=float, default=130, help="seconds of the budget kept for the HF worker")
    p.add_argument("--engines", nargs="+", default=["vllm", "hf"])
    p.add_argument("--worker", nargs=6, default=None)
    p.add_argument("--vllm-engines", type=int, default=1,
                   help="vLLM engines side by side (engines.GeneratorPool; 4 ran 3.1x one on the H200). The pool fixes "
                   "each engine's KV cache (GeneratorPool.kv_share; --vllm-kw may set kv_cache_memory_bytes), so they "
                   "start together: 4 with 16 GiB each were ready in 89 s, cold")
    a = p.parse_args()
    if a.worker:
        e, tasks, new, preset, kw, n = a.worker
        worker(e, json.loads(tasks), int(new), preset, json.loads(kw), int(n))
        sys.exit(0)
    kill_workers_on_stop()                                       # TERM or INT: the running worker's tree dies with us
    from mathworklog.files import atomic_write_text
    from mathworklog.settings import on_gpu
    gpu = on_gpu()
    if a.vllm_kw is None: a.vllm_kw = {"compilation_config": {"max_cudagraph_capture_size": 1024}} if gpu else {}
    T0 = time.perf_counter()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res = dict(workers={}, goal_tokens_per_s=100_000)
    def save():
        atomic_write_text(out/"presample_full.json", json.dumps(res, indent=2))
    # the short tasks first: on the H200 the full vLLM presample ran past its limit in every lease so far
    # (the request-seeded task is left out for a pool, which has engine seeds only, and on a CPU, whose backend cannot
    # seed a request of n > 1)
    plan = dict(vllm=[dict(task="baseline", n=a.test_questions, k=1), dict(task="presample", n=a.questions, k=8),
                      dict(task="presample", n=a.seeded_questions, k=8,
                           request_seeds=True)][:2 if a.vllm_engines > 1 or not gpu else 3],
                hf=[dict(task="presample", n=a.hf_questions, k=8), dict(task="baseline", n=a.test_questions, k=1)])
    for engine in a.engines:
        tasks = plan[engine]
        if engine == "vllm" and a.from_runs:
            got = {t: r for t in ("presample", "baseline") if (r := from_run(a.from_runs, t, preset=a.preset))}
            for t, r in got.items(): res[f"{t}_vllm"] = r
            tasks = [t for t in tasks if t["task"] not in got or t.get("request_seeds")]
        left = a.budget - (time.perf_counter() - T0)
        limit = left - (a.hf_reserve if engine == "vllm" and "hf" in a.engines[a.engines.index(engine):] else 0)
        rows, info, proc = run_engine(engine, tasks, a.new, a.preset, limit, out/f"presample_{engine}.log", a.vllm_kw,
                                      a.vllm_engines)
        done = sum(r.get("completed", True) for r in rows)
        res["workers"][engine] = dict(proc, info=info, tasks=tasks, done=done)
        for r in rows:
            res[key(r)] = r
            print(key(r), r, flush=True)
        if done < len(tasks):
            print(f"{engine}: {done} of {len(tasks)} tasks done (rc {proc['rc']}, {proc['seconds']} s, "
                  f"{'cut off at its ' + str(proc['limit_s']) + ' s limit' if proc['timed_out'] else 'failed'})",
                  flush=True)
            if proc["tail"]: print(proc["tail"][-800:], flush=True)
        save()
    for task in ("baseline", "presample"):
        v, h = res.get(f"{task}_vllm", {}), res.get(f"{task}_hf", {})
        if "tokens_per_s" in v and "tokens_per_s" in h:
            res[f"{task}_vllm_over_hf"] = round(v["tokens_per_s"] / h["tokens_per_s"], 3)
            print(f"{task}: vLLM {v['tokens_per_s']:.0f} tok/s, HF fast path {h['tokens_per_s']:.0f} tok/s: "
                  f"vLLM {res[f'{task}_vllm_over_hf']:.2f}x")
    for k in ("presample_hf", "presample_vllm", "presample_vllm_request_seeds"):
        if "tokens_per_s" in res.get(k, {}):
            res[k]["full_size_seconds_at_this_rate"] = round(7473 * 8 * a.new / res[k]["tokens_per_s"], 1)
    if ("tokens_per_s" in res.get("presample_vllm", {})
            and "tokens_per_s" in res.get("presample_vllm_request_seeds", {})):
        res["presample_vllm_engine_seed_over_request_seeds"] = round(
            res["presample_vllm"]["tokens_per_s"] / res["presample_vllm_request_seeds"]["tokens_per_s"], 3)
    import torch, importlib.util, importlib.metadata as md
    res.update(device=torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu", preset=a.preset,
               versions={})
    for n in ("torch", "transformers", "vllm"):
        try: res["versions"][n] = md.version(n)
        except Exception: pass
    save()
    print(json.dumps({k: v for k, v in res.items() if k != "workers"}, indent=2))
