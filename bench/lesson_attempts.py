"""Lessons that do not hold at the tiny scale, tried again with one thing set the way the worklog's own runs had it.
Each variant runs against the row's own settings in the same run, from the same start, scored on the same held-out
questions:

- `fix_pays` (chapter 10: fixed fp32 > unpatched fp32). Chapter 07's unpatched fp32 row (i7yh9cby's part) and
  chapter 08's fixed one (ss5zdsm3's part), both from chapter 06's fp32 OPD model, each `--steps` long. The rows
  take the preset's `row_steps` (30 on tiny); the worklog's two runs went 200 steps. Reported: each run's held-out
  exact (greedy, served by its vLLM copy) and the trainer's own; the paired difference fixed − unpatched with its 95%
  interval; and the unpatched run's IS ratio and probe mismatch over its first and last tenth of steps.
- `plateau_schedule` (chapter 10: plateau_entropy, plateau_zero_signal). Chapter 09's plateau run twice: with TRL's
  linear decay to 0 (the row's own) and with a constant lr. The worklog stopped its plateau run near step 200 of a run
  planned for about 800, so its lr had barely decayed. Reported: entropy and zero-signal share over the first and last
  fifth of steps (`stats.window_diff`), and held-out exact paired, constant − linear.

The script reads chapter 06's runs (`MATHWORKLOG_RUNS`; with none there, chapters 02-06 run first, as a chapter's own
`upstream="run"` does) and adds its runs beside them, each through `grpo.run_row` (a process of its own), two at a
time. It prints each attempt's variant/baseline ratios and saves <out>/lesson_attempts.json."""
import os, sys
from concurrent.futures import ThreadPoolExecutor
from _common import args, save

ATTEMPTS = ("fix_pays", "plateau_schedule")


def variants(attempt: str, P, steps: int, plateau_steps: int|None) -> list[tuple]:
    "(name, warm-up label, rollout, settings over the row's) of `attempt`, its baseline first."
    if attempt == "fix_pays":
        return [("unpatched", "opd", "vllm_fp32_unpatched", dict(steps=steps)),
                ("fixed", "opd", "vllm_fp32_fixed", dict(steps=steps))]
    plateau = dict(steps=plateau_steps or P.grpo_steps, save_steps=P.save_every)
    return [("linear", "opd_bf16", "vllm_fp32_fixed", plateau),
            ("constant", "opd_bf16", "vllm_fp32_fixed", plateau | dict(lr_schedule="constant"))]


def one_run(attempt, name, warm_label, rollout, over, ctx) -> dict:
    "One variant through `grpo.run_row`: its summary, held-out answers and per-step series."
    from mathworklog.grpo import row_settings, run_row
    from mathworklog.presample import load_rl_set
    from mathworklog.runs import labelled_run, read_metrics
    from mathworklog.results import heldout_scores
    P, train, heldout, buffer = ctx
    warm = labelled_run("opd", warm_label, P.name, made_by="06_opd")
    rl = load_rl_set(warm, train, min_n=P.grpo_prompts)
    S = row_settings(P, rollout, buffer, **over)
    run, s = run_row(f"attempt_{attempt}_{name}", str(warm.path/"model"), rl, heldout, S, P.name, parents=[warm.id])
    m = read_metrics(run.path)
    m = m[m["reward"].notna()].reset_index(drop=True)
    cols = ["entropy", "zero_signal/total", "sampling/importance_sampling_ratio/mean", "sync/mismatch"]
    return dict(run_id=run.id, start=warm.id, rollout=rollout, settings=over, steps=s["steps"], seconds=s["seconds"],
                heldout_exact=s["heldout_exact"], heldout_exact_start=s["heldout_exact_start"],
                policy_exact=s["policy_exact"], n_rl=len(rl), scores=heldout_scores(run),
                series={c: m[c].tolist() for c in cols if c in m})


def window(xs: list, frac: float) -> dict:
    "`stats.window_diff` over the first and last `frac` of a series (at least 3 steps each)."
    from mathworklog.stats import window_diff
    xs = [x for x in xs if x == x]
    return window_diff(xs, max(3, int(len(xs) * frac))) if len(xs) >= 6 else {}


def summarize(attempt: str, runs: dict) -> dict:
    "The variant against the baseline: held-out exact paired, and the series each attempt is about."
    from mathworklog.stats import aligned, compare
    (b, base), (v, var) = list(runs.items())
    t = compare(*aligned(var["scores"], base["scores"]), direction=">")
    out = dict(paired=f"{v} − {b}", diff_points=t["diff_points"], ci_low=t["ci_low"], ci_high=t["ci_high"],
               p_value=t["p_value"], n=t["n"], exact_ratio=var["heldout_exact"] / max(base["heldout_exact"], 1e-9))
    keys = ({"sampling/importance_sampling_ratio/mean": 0.1, "sync/mismatch": 0.1} if attempt == "fix_pays" else
            {"entropy": 0.2, "zero_signal/total": 0.2})
    out["series"] = {name: {k: window(r["series"].get(k, []), f) for k, f in keys.items()} for name, r in runs.items()}
    return out


def main():
    a = args(__doc__.split("\n")[0], attempts=dict(default=",".join(ATTEMPTS), help="comma-separated: " +
                                                   ", ".join(ATTEMPTS)),
             steps=dict(type=int, default=100, help="fix_pays: each run's steps (the worklog's: 200)"),
             **{"plateau-steps": dict(type=int, default=None, help="plateau_schedule: steps (default: the preset's)")},
             upstream=dict(default="run", help="chapter 06's runs missing: 'run' chapters 02-06 first, or 'error'"))
    from mathworklog.chain import ensure_upstream
    from mathworklog.data import load_gsm8k, prepare, preset_tokenizer
    from mathworklog.models import model_from
    from mathworklog.settings import get_preset, seed_everything
    from mathworklog.weights import bf16_bytes
    todo = [x for x in a.attempts.split(",") if x]
    bad = [x for x in todo if x not in ATTEMPTS]
    if bad: sys.exit(f"unknown attempt(s) {bad}: choose from {ATTEMPTS}")
    ensure_upstream("07_grpo", a.preset, a.upstream)
    P, tok = get_preset(a.preset), preset_tokenizer(a.preset)
    seed_everything(0)
    ctx = (P, prepare(load_gsm8k("train", n=P.n_train, preset=a.preset)),
           prepare(load_gsm8k("test", n=P.n_test, preset=a.preset)),
           bf16_bytes(model_from(P.model, tok, a.preset)) if a.preset == "tiny" else None)
    jobs = [(att, *v) for att in todo for v in variants(att, P, a.steps, a.plateau_steps)]
    with ThreadPoolExecutor(2) as ex:                    # each run is a process of its own: two at a time
        done = list(ex.map(lambda j: one_run(*j, ctx), jobs))
    result = dict(steps=a.steps, plateau_steps=a.plateau_steps or P.grpo_steps, runs_root=os.environ.get(
        "MATHWORKLOG_RUNS", ""), attempts={})
    for att in todo:
        runs = {j[1]: r for j, r in zip(jobs, done) if j[0] == att}
        s = summarize(att, runs)
        for r in runs.values(): r.pop("scores")
        result["attempts"][att] = dict(runs=runs, **s)
        print(f"{att}: {s['paired']} held-out exact {s['diff_points']:+.2f} points, 95% CI [{s['ci_low']:+.2f}, "
              f"{s['ci_high']:+.2f}], n={s['n']}; ratio {s['exact_ratio']:.3f}")
    save(a, "lesson_attempts", dict(lesson_attempts=result), quiet=True)


if __name__ == "__main__":
    main()
