"""How the bench scripts' JSON reads, for the README and the chapters: the library never reads these files (bench/ owns
them). One renderer per JSON, registered with the script that writes it; `measured_markdown` joins them in order."""
import functools, json, math, re, statistics
from pathlib import Path

# ---------------------------------------------------------------------------------------------------------------------
# Small helpers shared by the renderers

def _num(v, fmt="{:,.0f}"):
    "`v` formatted, or 'not measured' when the JSON has no such figure."
    return "not measured" if v is None else fmt.format(v)


def _mean(xs):
    "The mean of `xs`, None when it is empty."
    return sum(xs) / len(xs) if xs else None


def _present(xs) -> list:
    "The values of a per-step series that were logged (steps a run missed are None)."
    return [x for x in xs or [] if x is not None]


def _at(s: dict, key: str, i: int):
    "Entry `i` of the series `key` of run `s`, None when the run has no such series."
    return (s.get(key) or [None])[i]


def _row(*cells) -> str:
    "A Markdown table row."
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _rule(n: int) -> str:
    "The line under a Markdown table header of `n` columns."
    return "|---" * n + "|"


# ---------------------------------------------------------------------------------------------------------------------
# GRPO runs of live_sync.json's `grpo_learns`, read against their control (chapter 07 tabulates these too)

def _cohort(s: dict) -> str:
    "Runs that sample the same prompts in the same order: same seed, batch, length, lr schedule (TRL's: linear)."
    return (f"{s.get('lr_schedule', 'linear')} lr, seed {s.get('seed', 0)}, {s.get('steps')} steps of "
            f"{s.get('prompts', '?')} × {s.get('gens', '?')}")


def grpo_controls(runs: dict) -> dict:
    """The control of each cohort (`_cohort`): its first run at lr ≤ 1e-8, sampling like the others but learning
    nothing."""
    out = {}
    for n, s in runs.items():
        if (s.get("lr") or 1) <= 1e-8:
            out.setdefault(_cohort(s), n)
    return out


def _paired_gap(a: list, b: list) -> dict:
    """Step-by-step difference of two runs' series (steps either run missed left out): means over the first and last 10
    steps, and the mean ± standard error over every step after the first (step 1 samples before any update)."""
    paired = [(i, x - y) for i, (x, y) in enumerate(zip(a or [], b or [])) if x is not None and y is not None]
    gap, after = [g for _, g in paired], [g for i, g in paired if i > 0]
    enough = len(after) > 2
    return dict(gap_first10=_mean(gap[:10]), gap_last10=_mean(gap[-10:]), gap_mean=_mean(after) if enough else None,
                gap_se=statistics.stdev(after) / len(after) ** 0.5 if enough else None)


def grpo_part_gaps(runs: dict) -> list[dict]:
    """Which of the seven rewards moved: for every run that kept them per step (`reward_<name>`, unweighted), each one's
    gap to its cohort's control (`_paired_gap`: mean ± s.e. over the steps after the first), with the control's
    mean."""
    ctrls, rows = grpo_controls(runs), []
    for n, s in runs.items():
        ctrl = ctrls.get(_cohort(s))
        if ctrl is None or ctrl == n:
            continue
        c = runs[ctrl]
        for k in (k for k in s if k.startswith("reward_") and k in c):
            g = _paired_gap(s[k], c[k])
            rows.append(dict(run=n, lr=s.get("lr"), reward=k.removeprefix("reward_"),
                             control_mean=_mean(_present(c[k])), gap_mean=g["gap_mean"], gap_se=g["gap_se"]))
    return rows


def grpo_learns_rows(runs: dict) -> list[dict]:
    """`live_sync.json`'s `grpo_learns` runs, one dict each: reward and entropy over the first and last 10 steps, and
    the reward's gap to the control of its cohort (the run at lr ≤ 1e-8 with the same seed, batch and schedule, which
    samples the same prompts in the same order), paired by step; `gap_mean` ± `gap_se` over every step after the first
    (step 1 samples before any update). Runs of several sessions sit side by side, each read against its own control.
    Chapter 07 tabulates it, `measured_markdown` writes it out."""
    ctrls, rows = grpo_controls(runs), []
    for n, s in runs.items():
        r, ent, ctrl = _present(s.get("reward")), _present(s.get("entropy")), ctrls.get(_cohort(s))
        row = dict(run=n, lr=s.get("lr", float("nan")), cohort=_cohort(s), steps=s.get("steps"),
                   prompts=s.get("prompts", "?"), gens=s.get("gens", "?"), control=n == ctrl,
                   reward_first10=_mean(r[:10]), reward_last10=_mean(r[-10:]), entropy_first10=_mean(ent[:10]),
                   entropy_last10=_mean(ent[-10:]), zero_signal=_mean(_present(s.get("zero_signal"))),
                   trainer_drift_last=(_present(s.get("trainer_drift")) or [None])[-1])
        if ctrl is not None and n != ctrl:
            row.update(_paired_gap(s.get("reward"), runs[ctrl].get("reward")))
        for when, v in (s.get("heldout") or {}).items():        # greedy answers to held-out questions (--heldout)
            row |= {f"heldout_{m}_{when}": v.get(m) for m in HELDOUT}
        rows.append(row)
    return rows


HELDOUT = ("format_check", "exact", "mean_reward")          # the held-out greedy figures a run may carry (--heldout)

# ---------------------------------------------------------------------------------------------------------------------
# The renderers: one per bench JSON, in the order `measured_markdown` prints them

RENDERERS = []                                    # (JSON file name, the bench script that writes it, its renderer)


def _register(json_name: str, writer: str, render):
    "Append `render` to `RENDERERS` as the renderer of `json_name`, which `writer` writes; return it unchanged."
    RENDERERS.append((json_name, writer, render))
    return render


def renders(json_name: str, writer: str):
    "A decorator: register the function as the renderer of `json_name` (written by `writer`), after those before it."
    return functools.partial(_register, json_name, writer)


GRPO_PATHS = ("trl_default", "vllm_colocate", "mathworklog")      # grpo_step.py's paths, the baseline first


def _speedup(g: dict, v: str, p: str, clock: str = ""):
    """Variant `v:p`'s speed-up over TRL's default path of its precision, as the run recorded it (measured in the same
    run; `clock` '_cpu': by CPU time; an older JSON holds only `ratio_<p>`, mathworklog's); None where it recorded none."""
    if "speedup_vs_trl_default" in g:
        return g.get(f"speedup{clock}_vs_trl_default", {}).get(f"{v}:{p}")
    if clock: return None
    return 1.0 if v == "trl_default" and g.get(f"ratio_{p}") else g.get(f"ratio_{p}") if v == "mathworklog" else None


def _gen_cell(r: dict) -> str:
    "Generation seconds, with the weight sync inside them when the run timed it."
    g = _num(r.get("generation_s"), "{:.2f}")
    return g + (f" (sync {r['sync_s']:.3f})" if r.get("sync_s") is not None else "")


def _gap_cell(r: dict) -> str:
    "The sampler–trainer log-prob gap, nats per sampled token (fp32 paths agree to 1e-7)."
    gap = (r.get("logprob_mismatch") or {}).get("mean")
    return _num(gap, "{:.1e}") if gap is not None and gap < 1e-3 else _num(gap, "{:.4f}")


def _cpu_line(g: dict, sh: dict) -> str:
    "Where a CPU run ran: cores, threads, steps, rounds, load, and the fastest path by each clock."
    first = next((r for r in g.values() if isinstance(r, dict) and "threads" in r), {})
    rounds = g.get("rounds", 1)
    return (f"On the CPU ({g.get('cores', '?')} cores, {_num(first.get('threads'))} torch thread(s), preset "
            f"`{g.get('preset')}`, {sh.get('steps', '?')} steps a variant in a fresh process, step 1 left out"
            + (f", {rounds} rounds in alternating order, medians" if rounds > 1 else "") + "; load average "
            f"{_num(g.get('load_average_at_start'), '{:.1f}')} at the start, "
            f"{_num(g.get('load_average_at_end'), '{:.1f}')} at the end; CPU s: the worker's CPU time, all its threads; "
            f"peak GiB: its resident memory): fastest `{g.get('fastest')}` by the wall clock, "
            f"`{g.get('fastest_cpu')}` by CPU time.")


@renders("grpo_step.json", "bench/grpo_step.py")
def grpo_step_md(g: dict, folder: Path) -> list[str]:
    """GRPO step time by rollout path and precision: s/step by the wall clock and by CPU time, each with its speed-up over
    TRL's default path of the same run, the step's parts, peak memory, the sampler–trainer log-prob gap; on a CPU, where
    it ran and which path was fastest."""
    sh = g.get("shape") or dict(prompts=16, gens=8, new=256)
    cpu = any("step_s_cpu" in r for r in g.values() if isinstance(r, dict))     # the parts by CPU time where kept
    c = "_cpu" if cpu else ""
    out = [_row(f"GRPO step, {sh['prompts']} × {sh['gens']} × {sh['new']}, LoRA r16", "s/step", "× TRL default",
                "CPU s/step", "× TRL default (CPU)", "generation (sync)" + (", CPU s" if cpu else ""), "log-probs",
                "training", "peak GiB", "sampler–trainer log-prob gap"), _rule(10)]
    for v in GRPO_PATHS:
        for p in ("bf16", "fp32"):
            r = g.get(f"{v}:{p}", {})
            parts = {k.removesuffix(c): x for k, x in r.items() if k.endswith(c)} if r else {}
            out.append(_row(f"{v} ({p})", _num(r.get("step_s"), "{:.2f}"), _num(_speedup(g, v, p), "{:.2f}×"),
                            _num(r.get("step_s_cpu"), "{:.2f}"), _num(_speedup(g, v, p, "_cpu"), "{:.2f}×"),
                            _gen_cell(parts), _num(parts.get("logprobs_s"), "{:.2f}"),
                            _num(parts.get("training_s"), "{:.2f}"), _num(r.get("peak_gib"), "{:.1f}"), _gap_cell(r)))
    return out + (["", _cpu_line(g, sh)] if g.get("device") == "cpu" else []) + [""]


@renders("rollout_throughput.json", "bench/rollout_throughput.py")
def rollout_throughput_md(t: dict, folder: Path) -> list[str]:
    "Rollout tokens/s: plain `generate` against the fast path by batch, then vLLM's rows by engine mode."
    out = [_row("rollouts, 256 sampled tokens, bf16", "plain `generate` tok/s", "fast path tok/s", "ratio"), _rule(4)]
    for b in ("batch_64", "batch_512"):
        r = t.get(b, {})
        out.append(_row(b.replace("_", " "), _num(r.get("plain_tok_s")), _num(r.get("fast_tok_s")),
                        _num(r.get("ratio"), "{:.1f}×")))
    for m in ("vllm_in_process", "vllm_own_process"):
        r = t.get(m) or {}
        rates = ", ".join(f"{k.replace('_', ' ')} {_num(v.get('tok_s'))}" for k, v in r.items()
                          if isinstance(v, dict) and "tok_s" in v)
        name = m.removeprefix("vllm_").replace("_", " ")
        out.append(f"| vLLM, engine {name} | | {rates}" + (" | |" if r else "not measured | |"))
    return out + [""]


PRESAMPLE_ROWS = (("baseline_vllm", "02: 1,319 × greedy"), ("baseline_vllm_pool", "02: 1,319 × greedy"),
                  ("baseline_hf", "02: 1,319 × greedy"), ("presample_vllm", "04: 7,473 × 8"),
                  ("presample_vllm_pool", "04: 7,473 × 8"), ("presample_hf", "04: 7,473 × 8 (subset)"))


def _unfinished(r: dict) -> str:
    "A run that did not finish: the upper bounds on its rate that the JSON records (per engine mode), else just that."
    b = {k.replace("_", " "): v["tokens_per_s_upper_bound"] for k, v in r.items()
         if isinstance(v, dict) and v.get("tokens_per_s_upper_bound") and k != "second_session"}
    if r.get("tokens_per_s_upper_bound"):
        b["run"] = r["tokens_per_s_upper_bound"]
    return "did not finish" + (": " + ", ".join(f"< {_num(v)} ({k})" for k, v in b.items()) if b else "")


def _presample_row(key: str, label: str, r: dict) -> str:
    "One engine's row of presample_full.json: the size that ran (where the JSON says), start, tokens, seconds, tok/s."
    if r.get("questions"):
        full = 1319 if key.startswith("baseline") else 7473
        label = (f"{label.split(':')[0]}: {r['questions']:,} × {r.get('samples_per_question', 1)}"
                 + (" (subset)" if r["questions"] < full else ""))
    many = f" × {r['engines']} engines" if (r.get("engines") or 1) > 1 else ""
    rate = _num(r.get("tokens_per_s")) if r.get("completed", True) else _unfinished(r)
    return _row(label, "vLLM" + many if "vllm" in key else "HF fast path", _num(r.get("engine_start_s"), "{:.1f}"),
                _num(r.get("tokens")), _num(r.get("seconds"), "{:.1f}"), rate)


def _notebook_row(r: dict) -> str:
    "Chapter 04's own notebook run at the worklog's size (papermill on the box)."
    return _row(f"04: {r['questions']:,} × {r['samples_per_question']}, chapter 04's notebook (the learning start: "
                f"{r['tokens_per_sample']} tokens a sample)", f"vLLM × {r['engines']} engines", "—",
                _num(r["tokens"]), _num(r["generation_seconds"], "{:.1f}"), _num(r["tokens_per_s"]))


@renders("presample_full.json", "bench/presample_full.py")
def presample_full_md(p: dict, folder: Path) -> list[str]:
    "Chapters 02 and 04 at the worklog's size, by engine, then chapter 04's notebook runs that sampled."
    out = [_row("chapters at the worklog's size", "engine", "start s", "tokens", "seconds", "tok/s"), _rule(6)]
    out += [_presample_row(k, label, p[k]) for k, label in PRESAMPLE_ROWS if p.get(k)]
    sessions = [v for v in p.values() if isinstance(v, dict) and v.get("chapter04_notebook")]
    out += [_notebook_row(r) for s in sessions for r in s["chapter04_notebook"] if r.get("tokens")]
    return out + [""]


def _pytest_summary(folder: Path) -> str|None:
    "The newest pytest summary line of vllm_tests.txt (the first in the file), None without one."
    f = folder/"vllm_tests.txt"
    lines = f.read_text().splitlines() if f.exists() else []
    return next((l for l in lines if re.match(r"\d+ (passed|failed)", l)), None)


@renders("vllm_tests.json", "bench/gpu_run.sh vllm-tests (tests/test_vllm.py, VLLM_TEST_REPORT)")
def vllm_tests_md(v: dict, folder: Path) -> list[str]:
    "tests/test_vllm.py's figures: greedy agreement, the log-prob gap to HF, the sync bug in a real engine."
    s, line = v.get("sync_bug_real_engine_fp32", {}), _pytest_summary(folder)
    gap = v.get("vllm_copy_logprob_gap", {})
    stuck = {k: s.get(k, {}).get("stuck", "?") for k in ("unpatched", "clone", "out_of_place")}
    fp32, bf16 = (gap.get(k, {}).get("mean", math.nan) for k in ("float32", "bfloat16"))
    return ["vLLM tests on the box" + (f" (`tests/test_vllm.py`, pytest: {line})" if line else "")
            + f": greedy vLLM = HF `generate` (fp32) for {v.get('greedy_identical_fp32', {}).get('share', 0):.0%} of "
            f"prompts; teacher-forced log-prob gap vLLM vs HF {fp32:.1e} (fp32), {bf16:.1e} (bf16) per token; the sync "
            f"bug in a real engine (fp32, 1 GiB buffer): {stuck['unpatched']} of "
            f"{s.get('unpatched', {}).get('of', '?')} LoRA matrices arrive as base weights unpatched, "
            f"{stuck['clone']} with the clone fix, {stuck['out_of_place']} out of place.", ""]


@renders("learning_start.json", "bench/learning_start.py")
def learning_start_md(j: dict, folder: Path) -> list[str]:
    "The gpu preset's student: its SFT loss, the held-out format curve, and whether it reached the target."
    ls = j.get("learning_start")
    if not ls:
        return []
    curve = j.get("heldout_curve") or []
    return [f"Learning start (the gpu preset's student): the 0.5B shape from random init through chapter 05's SFT, "
            f"lr {ls['lr']:g}, batch {ls['batch']}: loss {ls['first_loss']:.2f} → {ls['last_loss']:.2f}; held-out "
            f"greedy `format_check` (64 test questions) " + " → ".join(f"{c['format_check']:.2f}" for c in curve)
            + " at steps " + ", ".join(str(c["step"]) for c in curve)
            + f"; `tag_check` {ls.get('tag_check', math.nan):.2f}; {ls['steps']} steps in {ls['seconds']:.0f} s"
            + (" (target 0.8 / 0.4 reached)." if ls.get("reached_at_step") else " (target not reached)."), ""]


def _at4(s: dict, key: str, i: int) -> str:
    "Entry `i` of run `s`'s series `key` to four decimals ('not measured' without one)."
    return _num(_at(s, key, i), "{:.4f}")


def _arm_row(arm: str, s: dict) -> str:
    "One arm of the live sync experiment: step 1 → largest → last of TRL's gap, the probe, the drifts, the reward."
    from mathworklog.sync import suspect
    diff, r = _present(s.get("sampling_logp_difference")), _present(s.get("reward"))
    return _row(arm, s["steps"], f"{s.get('lr', math.nan):g}",
                f"{_at4(s, 'sampling_logp_difference', 0)} → {_num(max(diff, default=None), '{:.4f}')} → "
                f"{_at4(s, 'sampling_logp_difference', -1)}", _num(_at(s, "importance_sampling_ratio", -1), "{:.3f}"),
                f"{_at4(s, 'probe_mismatch', 0)} → {_at4(s, 'probe_mismatch', -1)}", _at4(s, "trainer_drift", -1),
                _at4(s, "vllm_drift", -1), f"{_num(_mean(r[:10]), '{:.3f}')} → {_num(_mean(r[-10:]), '{:.3f}')}",
                "suspect" if suspect(s) else "")


@renders("live_sync.json", "bench/live_sync.py (its `arms`)")
def live_sync_md(live: dict, folder: Path) -> list[str]:
    "The live sync experiment's arms (`sync.LIVE_ARMS`) side by side; the arms without series named."
    from mathworklog.sync import LIVE_ARMS
    lv = live.get("arms") or {}
    if not lv:
        return []
    ran = [a for a in LIVE_ARMS if (lv.get(a) or {}).get("steps")]
    out = ["Live sync experiment (`bench/live_sync.py`, GRPO through TRL's colocated vLLM from the learning start; "
           "step 1 → largest → last; suspect: the run's own note says its trainer stopped learning):", "",
           "| arm | steps | lr | TRL log-prob difference | IS ratio, last | probe: trainer vs vLLM "
           "| trainer drift, last | vLLM drift, last | reward, first 10 → last 10 | |", _rule(10)]
    out += [_arm_row(a, lv[a]) for a in ran]
    if len(ran) < len(LIVE_ARMS):
        out.append("No series (see the JSON's note): " + ", ".join(a for a in LIVE_ARMS if a not in ran) + ".")
    return out + [""]


def _learns_line(r: dict) -> str:
    "One GRPO run against its control: reward, the gap by step, held-out greedy figures, entropy."
    line = (f"  - lr {r['lr']:g}{' (control)' if r['control'] else ''}: "
            f"reward {_num(r['reward_first10'], '{:.3f}')} → {_num(r['reward_last10'], '{:.3f}')}")
    if "gap_first10" in r:
        line += f", minus the control {_num(r['gap_first10'], '{:+.3f}')} → {_num(r['gap_last10'], '{:+.3f}')}"
    if r.get("gap_mean") is not None:
        line += f" (every step after the first: {r['gap_mean']:+.4f} ± {r['gap_se']:.4f}, mean ± standard error)"
    ho = [m for m in HELDOUT if None not in (r.get(f"heldout_{m}_before"), r.get(f"heldout_{m}_after"))]
    if ho:
        line += "; held-out greedy " + ", ".join(f"{m} {r[f'heldout_{m}_before']:.3f} → {r[f'heldout_{m}_after']:.3f}"
                                                 for m in ho)
    return line + f"; entropy {_num(r['entropy_first10'], '{:.2f}')} → {_num(r['entropy_last10'], '{:.2f}')}"


def _moved_line(parts: list[dict]) -> str:
    "The rewards of one run (kept per step since the ninth session) that moved beyond 2 standard errors of the control."
    moved = sorted((p for p in parts if p["gap_se"] and abs(p["gap_mean"]) > 2 * p["gap_se"]),
                   key=lambda p: -abs(p["gap_mean"]))
    return ("    - rewards beyond 2 standard errors of the control: "
            + (", ".join(f"{p['reward']} {p['gap_mean']:+.4f} ± {p['gap_se']:.4f}" for p in moved) or "none"))


@renders("live_sync.json", "bench/live_sync.py --key grpo_learns")
def grpo_learns_md(live: dict, folder: Path) -> list[str]:
    "Longer GRPO runs from the learning start, one list per cohort, its control first (a control at lr ≤ 1e-8)."
    runs = live.get("grpo_learns") or {}
    gl = grpo_learns_rows(runs)
    if not gl:
        return []
    out = ["GRPO from the learning start (`bench/live_sync.py --key grpo_learns`), mean of the first 10 steps → the "
           "last 10" + (" (and minus the control, which samples the same prompts with lr ≤ 1e-8, step by step)"
              if any(r["control"] for r in gl) else "") + ":", ""]
    parts = grpo_part_gaps(runs)
    for c in dict.fromkeys(r["cohort"] for r in gl):              # one list per cohort (seed, batch, schedule)
        out.append(f"- {c}:")
        for r in sorted((r for r in gl if r["cohort"] == c), key=lambda r: (not r["control"], r["lr"])):
            mine = [p for p in parts if p["run"] == r["run"]]
            out += [_learns_line(r)] + ([_moved_line(mine)] if mine else [])
    return out + [""]


def _still_steps(xs: list) -> int:
    "How many steps a drift series did not move (relative change below 1e-6)."
    return sum(abs(b - a) < 1e-6 * max(abs(a), 1e-12) for a, b in zip(xs, xs[1:]))


def _drift_run(rows: list[dict], how: str) -> str|None:
    "One stream-race run in words: each mode's trainer drift at steps 1, 2 and the last; None for a run without rows."
    by = {}
    for r in rows:
        by.setdefault(r["mode"], []).append(r["trainer_drift"])
    if not by:
        return None
    path = "through vLLM" if rows[0].get("transport") == "vllm" else "through the loop written out"
    return how + f"{path}: " + "; ".join(f"{m} {xs[0]:.3f}, {xs[1]:.3f} … {xs[-1]:.3f}"
                                        + (f" (still for {_still_steps(xs)} steps)" if _still_steps(xs) else "")
                                        for m, xs in by.items() if len(xs) > 1)


@renders("stream_race.json", "bench/stream_race.py")
def stream_race_md(sr: dict, folder: Path) -> list[str]:
    "Does TRL's sync race the optimizer: each run's trainer drift by mode (through vLLM, then the loop written out)."
    if not sr.get("rows"):
        return []
    A, bf16_steps = sr.get("args", {}), (sr.get("bf16_args") or {}).get("steps", "?")
    kinds = ((sr["rows"], ""), (sr.get("mimic_rows") or [], ""),
             (sr.get("bf16_mimic_rows") or [], f"in bf16, {bf16_steps} steps, "))
    runs = [r for r in (_drift_run(rows, how) for rows, how in kinds) if r is not None]
    return [f"Stream race (`bench/stream_race.py`: the 0.5B shape, {A.get('dtype')}, AdamW lr {A.get('lr')}, TRL's "
            f"sync driven through vLLM's producer's side streams right after every `optimizer.step()`; trainer drift "
            f"at steps 1, 2 … {A.get('steps')}): " + ". ".join(r[0].upper() + r[1:] for r in runs) + ".", ""]


@renders("vllm_engines.json", "bench/vllm_engines.py")
def vllm_engines_md(e: dict, folder: Path) -> list[str]:
    "Tokens/s of N vLLM engines side by side on one GPU, and the configurations that failed."
    ok = [r for r in e.get("rows") or [] if "tokens_per_s" in r]
    if not ok:
        return []
    rates = ", ".join(f"{r['engines']} engine{'s' if r['engines'] > 1 else ''} {_num(r['tokens_per_s'])} tok/s"
                      + (f" ({r['over_first']:.2f}×)" if r.get("over_first") else "") for r in ok)
    failed = "".join(f"; {r['config']} engines: {r['error'].split(' (')[0]}" for r in e["rows"] if "error" in r)
    return [f"vLLM engines side by side on one GPU (`bench/vllm_engines.py`, presample {ok[0]['questions']:,} × "
            f"{ok[0]['k']} × {ok[0]['max_new_tokens']} tokens): " + rates + failed + ".", ""]


@renders("logprob_memory.json", "bench/logprob_memory.py")
def logprob_memory_md(m: dict, folder: Path) -> list[str]:
    "Peak memory of per-token log-probs with backward: full fp32 logits against TRL's chunked kernel."
    return [f"Per-token log-probs + backward, 8 × 2,048 tokens × 151,936 rows: full fp32 logits "
            f"{_num(m.get('full_fp32_logits', {}).get('peak_gib'), '{:.1f}')} GiB peak, TRL's chunked kernel "
            f"{_num(m.get('trl_chunked_recompute', {}).get('peak_gib'), '{:.2f}')} GiB."]


@renders("cpu_engines.json", "bench/cpu_engines.py")
def cpu_engines_md(c: dict, folder: Path) -> list[str]:
    "CPU generation by engine at the tiny worklog's shapes, and the warm-up epilogue that decides the CPU default."
    eng, job = c.get("engines", {}), c.get("warmup_job", {})
    shapes = [s for s in ("grpo", "presample") if any(s in e for e in eng.values())]
    head = [f"{s}: {(next(iter(eng.values()))[s]['samples'])} samples × ≤ "
            f"{next(iter(eng.values()))[s]['max_new_tokens']}"
            f" tokens, tok/s" for s in shapes]
    out = [f"CPU generation, preset `{c.get('preset')}`, {c.get('threads')} torch thread(s), vLLM "
           f"{c.get('versions', {}).get('vllm', '?')} (`import vllm` {_num(c.get('vllm_import_s'), '{:.1f}')} s; load "
           f"average {_num(c.get('load_average_at_start'), '{:.1f}')} at the start):", "",
           _row("engine", "start s", *head, "warm-up epilogue s"), _rule(3 + len(shapes))]
    for name, e in eng.items():
        cells = [f"{_num(e[s]['tokens_per_s'])} ({e[s].get('vs_hf_generate', 1):.2f}×)" for s in shapes]
        out.append(_row(name, _num(e.get("start_s"), "{:.1f}"), *cells,
                        _num(job.get(name, {}).get("seconds"), "{:.1f}")))
    fastest = c.get("fastest", {}).get("warmup_job")
    return out + ["", f"The warm-up epilogue (start, the test questions greedy and sampled, every training question "
                      f"presampled k times) finished first with `{fastest}`: the CPU default for evaluation and "
                      f"presampling.", ""]


# ---------------------------------------------------------------------------------------------------------------------

def _load(folder: Path, name: str) -> dict:
    "A bench JSON of `folder`, {} when the run did not write it."
    f = folder/name
    return json.loads(f.read_text()) if f.exists() else {}


def measured_markdown(folder="bench/h200") -> str:
    "Markdown of the GPU benchmarks in `folder`: every registered renderer whose JSON is there, in `RENDERERS` order."
    d, out = Path(folder), []
    for name, _, render in RENDERERS:
        data = _load(d, name)
        if data:
            out += render(data, d)
    return "\n".join(out)
