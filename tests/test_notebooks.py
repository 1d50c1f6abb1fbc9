"""The whole tiny worklog, run once as a fresh clone runs the README's main command (`mathworklog-worklog --preset
tiny`: every chapter executed headlessly by papermill) in a copy of the project with nothing beside it, and the
thresholds each chapter's phenomenon must reach, read from its runs' meta.json summaries; plus chapter 02 in this
checkout, with ../shared beside it where there is one, giving the same figures.

The tests fail when a chapter stops learning. Each reads only runs that its own fixture made, in a runs folder of its
own: none depends on another test's leftovers."""
import json, os, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
from mathworklog.settings import CHAPTERS
NBS = [ROOT / "nbs" / f"{c}.ipynb" for c in CHAPTERS]   # the chapters


@pytest.fixture(scope="session")
def tiny_worklog(tmp_path_factory):
    """The main job as a fresh clone runs it (`main_job.py`): started by tools/test.sh beside the other tests when
    `MATHWORKLOG_TEST_MAIN_JOB` names its folder, else run here. (runs folder, worklog run folder, its output)"""
    from types import SimpleNamespace
    from main_job import run_main_job, wait_for_main_job
    started = os.environ.get("MATHWORKLOG_TEST_MAIN_JOB")
    res = wait_for_main_job(started) if started else run_main_job(tmp_path_factory.mktemp("worklog"))
    runs = Path(res["runs"])
    wl = sorted(runs.glob("worklog-*"))
    return runs, (wl[-1] if wl else None), SimpleNamespace(**res)


def latest(runs: Path, chapter: str, label: str | None = None) -> dict:
    "The newest finished run of `chapter` under `runs` (with params label `label`): its meta.json."
    from mathworklog.runs import find_runs
    found = [r for r in find_runs(chapter, "tiny", root=runs, status="done")
             if label is None or r.meta.get("params", {}).get("label") == label]
    assert found, f"no finished {chapter} run{' labelled ' + label if label else ''} under {runs}"
    return found[-1].meta


@pytest.mark.parametrize("nb", NBS, ids=[p.stem for p in NBS])
def test_chapter_runs_clean(nb, tiny_worklog):
    "Every chapter executes end to end, and its saved notebook holds no error output."
    runs, wl, p = tiny_worklog
    assert wl is not None, p.stderr[-3000:]
    out = wl / nb.name
    assert out.exists(), f"{nb.stem} did not run: {p.stderr[-3000:]}"
    cells = json.loads(out.read_text())["cells"]
    errors = [o for c in cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, errors[0].get("evalue")


def test_main_job_time_is_recorded(tiny_worklog):
    runs, wl, p = tiny_worklog
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads((wl / "meta.json").read_text())["results"]
    assert set(res["seconds"]) == {nb.stem for nb in NBS}
    assert (wl / "pages" / "index.html").exists()


def test_02_baseline_right_math_wrong_place(tiny_worklog):
    s = latest(tiny_worklog[0], "baseline")["summary"]
    assert s["lenient"] >= 0.2 and s["exact"] <= 0.05, s
    assert 0 <= s["solution_block"] <= 1, s


def test_04_presample_has_all_three_buckets(tiny_worklog):
    from mathworklog.runs import find_runs
    base = [r for r in find_runs("presample", "tiny", root=tiny_worklog[0], status="done")
            if not r.meta.get("params", {}).get("label")]                    # 04's own, not 07's presample_strong
    assert base, "no presample of the base student"
    s = base[-1].meta["summary"]
    strict = s["buckets"]["strict"]
    assert all(v > 0 for v in strict.values()) and len(strict) == 3, strict
    assert 0 < s["strict0_lenient_right"] <= 1, s


def test_05_sft_teaches_the_format_and_the_answers(tiny_worklog):
    s = latest(tiny_worklog[0], "sft", "sft")["summary"]
    assert s["heldout_format_after"] >= 0.9, s
    assert s["heldout_exact_after"] - s["heldout_exact_before"] >= 0.10, s


def test_06_opd_raises_exact_and_measures_the_format_slip(tiny_worklog):
    s = latest(tiny_worklog[0], "opd", "opd")["summary"]           # from the base student (09 makes opd2)
    assert s["heldout_exact_after"] > s["student_start_exact"], s
    assert {"heldout_format_before", "heldout_format_after"} <= set(s), s
    assert s["kl_after"] < s["kl_before"], s


def chapter_findings(tiny_worklog, chapter: str) -> dict:
    "The findings a chapter wrote into its runs' meta.json, by key (`results.chapter_findings`)."
    from mathworklog.results import chapter_findings as found
    runs, wl, _ = tiny_worklog
    return {f.key: f for f in found("tiny", wl.name, runs) if f.chapter == chapter}


def test_07_through_unpatched_vllm_flat_without_it_learns(tiny_worklog):
    """Through unpatched bf16 vLLM the served model stays flat while the importance-sampling ratio falls; from the
    same SFT start without vLLM it learns: each a paired or windowed comparison with its 95% interval (chapter 07)."""
    f = chapter_findings(tiny_worklog, "07_grpo")
    for key in ("grpo_sft_vllm_flat", "grpo_is_ratio_falls", "grpo_bf16_mismatch_grows", "grpo_no_vllm_learns",
                "grpo_no_vllm_beats_vllm", "attempt1_ratio_near_one", "grpo_strong_base_learns"):
        assert key in f and f[key].verdict == "holds", f.get(key)
    v = latest(tiny_worklog[0], "grpo", "results_sft")["summary"]
    assert v["scored"] == "final-greedy-vllm" and v["is_ratio_last"] < v["is_ratio_first"], v


def test_08_live_sync_separates(tiny_worklog):
    """Unpatched, vLLM's copy falls behind (probe ≥ 3x its start); the fixes and full fine-tuning keep up (the probe
    at the last step ≤ 0.1 of the trainer's drift by then)."""
    from mathworklog.sync import LIVE_GROWTH, LIVE_LAG
    s = latest(tiny_worklog[0], "sync")["summary"]
    growth = {k.removeprefix("probe_growth_"): v for k, v in s.items() if k.startswith("probe_growth_")}
    lag = {k.removeprefix("probe_lag_"): v for k, v in s.items() if k.startswith("probe_lag_")}
    assert len(growth) == len(lag) == 6, s
    for arm, g in growth.items():
        if arm.endswith("_unpatched"): assert g >= LIVE_GROWTH["drifts"], (arm, g)
        else: assert lag[arm] <= LIVE_LAG, (arm, lag[arm])
    assert s["full_ft_moved"] > 100 * s["full_ft_mismatch_last"], s      # full fine-tuning moved, and vLLM kept up


def test_09_averaging_and_opd_round_two(tiny_worklog):
    """The plateau's checkpoints average to a slightly smaller update pointing the same way (the worklog: 0.89 of
    the last checkpoint's norm, cosine 0.96), both presamples are kept with their RL sets, and OPD round two lowers
    the student-teacher divergence on the questions it trains on."""
    runs = tiny_worklog[0]
    avg = latest(runs, "averaging", "presample_averaged")["summary"]
    assert 0 < avg["rel_norm"] < 1.5 and avg["cosine"] > 0.5, avg
    assert avg["n_average"] >= 2 and avg["n_rl"] > 0, avg
    for label in ("presample_averaged", "presample_opd2"):
        from mathworklog.runs import find_runs
        r = [r for r in find_runs("averaging", "tiny", root=runs, status="done")
             if r.meta["params"].get("label") == label][-1]
        assert (r.path / "presample.parquet").exists(), label
    o = latest(runs, "opd", "opd2")["summary"]
    assert o["kl_after"] < o["kl_before"] and o["n_opd"] > 0, o


def test_worklog_columns_come_from_the_table(tiny_worklog):
    from mathworklog.worklog import worklog_columns_ok
    wl = tiny_worklog[1]
    bad = {nb.name: worklog_columns_ok(wl / nb.name) for nb in NBS if (wl / nb.name).exists()}
    assert not any(bad.values()), {k: v for k, v in bad.items() if v}


def test_shared_beside_gives_the_same_numbers(tiny_worklog, tmp_path):
    """The tiny preset reads nothing from ../shared: chapter 02 run in this checkout, with ../shared beside it and the
    variables pointing at it (as in CI), gives exactly the figures of the main job's fresh copy, which had neither."""
    env = dict(os.environ, MATHWORKLOG_RUNS=str(tmp_path / "runs"))
    code = ("import papermill as pm, sys\n"
            "pm.execute_notebook(sys.argv[1], sys.argv[2], parameters=dict(preset='tiny'), cwd=sys.argv[3],\n"
            "                    kernel_name='python3', progress_bar=False, log_output=False)")
    nb = ROOT / "nbs" / "02_baseline.ipynb"
    p = subprocess.run([sys.executable, "-c", code, str(nb), str(tmp_path / nb.name), str(nb.parent)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    here, fresh = latest(tmp_path / "runs", "baseline"), latest(tiny_worklog[0], "baseline")
    assert here["data_source"] == fresh["data_source"] == "world"
    keys = ("lenient", "strict", "format", "exact", "solution_block", "n_questions")
    assert {k: here["summary"][k] for k in keys} == {k: fresh["summary"][k] for k in keys}


# --- the worklog's results table (issue 39), read from the worklog run's meta.json as chapter 10 wrote it -------------
# The lessons the scale model does not show, each measured (the closing note and chapter 10 give the figures). They are
# expected failures, not skipped: the test still runs, checks that the verdict agrees with the interval, and reports
# XPASS the day a lesson holds. Never move a lesson here to make the suite pass without a measurement that says so.
NOT_AT_THIS_SCALE = {
    "fix_pays": "the unpatched fp32 sync leaves vLLM's copy within a fraction of a point of the trainer's own model "
                "here (chapter 10's stale-cost table), so the fix has little to win back; at GRPO lr 2e-3 it held "
                "with one seed and not with another (both figures in the closing notes of issue 39)",
    "average_repres": "RL from the average on its re-presampled questions ends within noise of the "
                      "200-step plateau run",
    "last_is_best": "OPD round two's RL ends within noise of the best earlier student row, not above it",
    "plateau_entropy": "over the plateau run's 200 steps the entropy moves by about 0.01 nats/token, inside its noise",
    "plateau_zero_signal": "over the plateau run's 200 steps the zero-signal share rises (its interval excludes 0) but "
                           "does not double: 'partly'",
    # steps of two runs, compared unpaired (findings.handover_finding): the plateau's last 30 steps against the
    # re-presampled run's first 30, -7.9 points [-16.7, +0.8] (Intel Xeon, 2026-12-07). Until then chapter 10 paired
    # step i of one run with step i of the other, a test these windows do not allow, and chapter 09 read windows of 20
    # steps (-11.9 [-21.9, -1.9]): the verdict rests on the window, so it is not claimed
    "repres_zero_signal": "re-presampling drops the zero-signal share by about 8 points, but over windows of 30 steps "
                          "of two runs the interval reaches past 0",
}


def worklog_meta(tiny_worklog) -> dict:
    runs, wl, p = tiny_worklog
    assert wl is not None and (wl / "meta.json").exists(), p.stderr[-3000:]
    return json.loads((wl / "meta.json").read_text())


def test_results_table_has_every_row_scored_on_one_split(tiny_worklog):
    "Eleven rows in the worklog's order, each a real run scored greedily on the same ≥ 1,000 held-out questions."
    from mathworklog.results import ROWS
    rows = worklog_meta(tiny_worklog).get("rows") or []
    assert [r["key"] for r in rows] == [r.key for r in ROWS]
    for r in rows:
        assert r["run_id"] and r["heldout_exact"] is not None, r
        assert 0 <= r["heldout_exact"] <= 100 and r["n_heldout"] >= 1000 and r["steps"] > 0, r   # in points
    assert len({r["n_heldout"] for r in rows}) == 1, rows                     # one split for every row


def test_lessons_verdicts_follow_their_intervals(tiny_worklog):
    "Every lesson has its paired difference and 95% interval, and 'holds' exactly when the interval says so."
    lessons = worklog_meta(tiny_worklog).get("lessons") or []
    assert len(lessons) >= 7, lessons
    for l in lessons:
        if l["verdict"] == "not run": continue
        assert l["ci_low"] <= l["ci_high"], l
        if l.get("diff_points") is not None and l["holds"]: assert not (l["ci_low"] <= 0 <= l["ci_high"]), l


LESSON_KEYS = ["sft_before_rl", "opd_beats_sft", "no_vllm_learns", "fix_pays", "average_repres", "last_is_best",
               "stronger_base_wins", "plateau_entropy", "plateau_zero_signal", "opd2_learnable", "repres_zero_signal"]


@pytest.mark.parametrize("key", LESSON_KEYS)
def test_lesson_holds(key, tiny_worklog):
    "Each of the worklog's lessons, in the worklog's direction, with an interval that excludes 0."
    lessons = {l["lesson"]: l for l in worklog_meta(tiny_worklog).get("lessons") or []}
    assert key in lessons, sorted(lessons)
    l = lessons[key]
    if not l["holds"] and key in NOT_AT_THIS_SCALE: pytest.xfail(f"{l['verdict']} here: {NOT_AT_THIS_SCALE[key]}")
    assert l["holds"], l


def shown_text(nb: Path) -> str:
    "Everything an executed notebook shows a reader: its markdown cells and its cells' markdown and text outputs."
    if not nb.exists(): return ""
    out = []
    for c in json.loads(nb.read_text())["cells"]:
        if c["cell_type"] == "markdown": out.append("".join(c["source"]))
        for o in c.get("outputs", []):
            for mime in ("text/markdown", "text/plain"):
                v = o.get("data", {}).get(mime)
                if v: out.append("".join(v) if isinstance(v, list) else v)
            if o.get("output_type") == "stream": out.append("".join(o.get("text", "")))
    return "\n".join(out)


def test_findings_that_do_not_hold_are_said(tiny_worklog):
    """Every finding a chapter wrote that does not hold (or holds partly) is said in that chapter's executed notebook,
    in the words `findings.say` gives it, computed from the run."""
    from mathworklog.findings import say
    from mathworklog.results import chapter_findings as found
    runs, wl, p = tiny_worklog
    missing = [(f.chapter, f.key) for f in found("tiny", wl.name, runs)
               if f.verdict != "holds" and say(f) not in shown_text(wl / f"{f.chapter}.ipynb")]
    assert not missing, missing
