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
- `last_run_length` (chapter 10: last_is_best). Chapter 09's last run (RL from the OPD round two model on its own
  presample's learnable questions) at the row's `row_steps` and at the plateau run's length (`--plateau-steps`). The
  rows take 30 steps on tiny, while the plateau row they are compared with takes 200; the worklog's last run went 400
  steps, its best at step 200. Reported: held-out exact paired, long − row, and last_is_best recomputed with the long
  run in the last row's place (against the best other student row of the same worklog run).

The script reads chapter 06's runs, and 09's for `last_run_length` (`MATHWORKLOG_RUNS`; with none there, the chapters
before run first, as a chapter's own `upstream="run"` does) and adds its runs beside them, each through
`grpo.run_row` (a process of its own), two at a time. It prints each attempt's variant/baseline ratios and saves
<out>/lesson_attempts.json."""
import os, sys
from concurrent.futures import ThreadPoolExecutor
from _common import args, save

ATTEMPTS = ("fix_pays", "plateau_schedule", "last_run_length")
# the runs the attempts start from or take their RL set from: (chapter, label, the notebook that makes it)
OPD, OPD_BF16 = ("opd", "opd", "06_opd"), ("opd", "opd_bf16", "06_opd")
OPD2 = ("opd", "opd2", "09_checkpoint_averaging")
PRESAMPLE2 = ("averaging", "presample_opd2", "09_checkpoint_averaging")


def variants(attempt: str, P, steps: int, plateau_steps: int|None) -> list[tuple]:
    """(name, start, RL set, rollout, settings over the row's) of `attempt`, its baseline first; a start or RL set is
    (chapter, label, the notebook that makes it), the RL set None where the start run holds it."""
    plateau = dict(steps=plateau_steps or P.grpo_steps, save_steps=P.save_every)
    if attempt == "fix_pays":
        return [("unpatched", OPD, None, "vllm_fp32_unpatched", dict(steps=steps)),
                ("fixed", OPD, None, "vllm_fp32_fixed", dict(steps=steps))]
    if attempt == "last_run_length":
        return [("row", OPD2, PRESAMPLE2, "vllm_fp32_fixed", dict(steps=P.row_steps or P.grpo_steps)),
                ("plateau_length", OPD2, PRESAMPLE2, "vllm_fp32_fixed", dict(steps=plateau["steps"]))]
    return [("linear", OPD_BF16, None, "vllm_fp32_fixed", plateau),
            ("constant", OPD_BF16, None, "vllm_fp32_fixed", plateau | dict(lr_schedule="constant"))]


def one_run(attempt, name, start, rl_from, rollout, over, ctx) -> dict:
    "One variant through `grpo.run_row`: its summary, held-out answers and per-step series."
    from mathworklog.grpo import row_settings, run_row
    from mathworklog.presample import load_rl_set
    from mathworklog.runs import labelled_run, read_metrics
    from mathworklog.results import heldout_scores
    P, train, heldout, buffer = ctx
    warm = labelled_run(start[0], start[1], P.name, made_by=start[2])
    rl_run = labelled_run(rl_from[0], rl_from[1], P.name, made_by=rl_from[2]) if rl_from else warm
    rl = load_rl_set(rl_run, train, min_n=P.grpo_prompts)
    S = row_settings(P, rollout, buffer, **over)
    run, s = run_row(f"attempt_{attempt}_{name}", str(warm.path/"model"), rl, heldout, S, P.name,
                     parents=[warm.id] + ([rl_run.id] if rl_from else []))
    m = read_metrics(run.path)
    m = m[m["reward"].notna()].reset_index(drop=True)
    cols = ["entropy", "zero_signal/total", "sampling/importance_sampling_ratio/mean", "sync/mismatch"]
    return dict(run_id=run.id, start=warm.id, preset=P.name, worklog_run=warm.meta.get("worklog_run"), rollout=rollout,
                settings=over, steps=s["steps"], seconds=s["seconds"],
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
    if attempt == "last_run_length": out["last_is_best"] = {n: last_is_best(r) for n, r in runs.items()}
    return out


def last_is_best(r: dict) -> dict:
    """Chapter 10's last_is_best with the run `r` in the last row's place: against the best other student row of the
    worklog run its start came from."""
    from mathworklog.results import LESSONS, ROWS, heldout_scores, labelled, lesson_finding
    scores = {x.key: heldout_scores(run) for x in ROWS if x.key != "results_opd2" and
              (run := labelled(x.key, r["preset"], r["worklog_run"]))} | {"results_opd2": r["scores"]}
    f = lesson_finding(next(x for x in LESSONS if x.key == "last_is_best"), scores)
    return dict(ours=f.ours, verdict=f.verdict) | {k: f.test.get(k) for k in ("diff_points", "ci_low", "ci_high", "n")}


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
    ensure_upstream("10_results" if "last_run_length" in todo else "07_grpo", a.preset, a.upstream)
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
        for n, b in s.get("last_is_best", {}).items(): print(f"{att}: last_is_best with the {n} run: {b['ours']}")
        for r in runs.values(): r.pop("scores")
        result["attempts"][att] = dict(runs=runs, **s)
        print(f"{att}: {s['paired']} held-out exact {s['diff_points']:+.2f} points, 95% CI [{s['ci_low']:+.2f}, "
              f"{s['ci_high']:+.2f}], n={s['n']}; ratio {s['exact_ratio']:.3f}")
    save(a, "lesson_attempts", dict(lesson_attempts=result), quiet=True)


if __name__ == "__main__":
    main()
