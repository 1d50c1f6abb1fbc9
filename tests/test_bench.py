"How bench/report.py reads the bench scripts' JSON (bench/ owns those files; the library never reads them)."
import json, os, subprocess, sys
import pytest
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]/"bench"
sys.path.insert(0, str(BENCH))
import report                                                      # noqa: E402  (bench/ is not a package)
from report import grpo_part_gaps, measured_markdown                              # noqa: E402


def _run(lr, rewards, **kw) -> dict:
    "A `grpo_learns` run of live_sync.json: 16 × 8 a step, constant entropy."
    return dict(lr=lr, steps=len(rewards), prompts=16, gens=8, reward=rewards, entropy=[2.0] * len(rewards)) | kw


def test_registry_names_every_bench_json_in_order():
    "One renderer per bench JSON, each with the script that writes it, in the order the README prints them."
    assert [fn.__name__ for _, _, fn in report.RENDERERS] == [
        "grpo_step_md", "grpo_decode_md", "grpo_base_dtype_md", "rollout_throughput_md", "presample_full_md",
        "vllm_tests_md", "learning_start_md", "live_sync_md", "grpo_learns_md", "stream_race_md", "vllm_engines_md",
        "logprob_memory_md", "cpu_engines_md"]
    for name, writer, fn in report.RENDERERS:
        assert name.endswith(".json") and writer.startswith("bench/") and fn.__doc__, (name, writer)


def test_cpu_engines_table_names_the_default():
    "The CPU engines' table renders from bench/cpu and names the engine that finished the warm-up epilogue first."
    md = measured_markdown(BENCH/"cpu")
    if not (BENCH/"cpu"/"cpu_engines.json").exists(): pytest.skip("bench/cpu/cpu_engines.json not written yet")
    assert "| vllm_cpu |" in md and "| hf_generate |" in md and "finished first with" in md


def test_measured_markdown_of_the_h200_runs():
    "The committed H200 figures render; a variant the run did not reach says so."
    md = measured_markdown(BENCH/"h200")
    assert "GRPO step" in md and "not measured" in md
    assert measured_markdown(BENCH/"no-such-folder") == ""                    # no JSON, no sections


def test_grpo_learns_read_against_their_control(tmp_path):
    "The GRPO-learns runs, each read against the control of its own cohort, step by step."
    runs = {"ctrl": _run(1e-9, [1.0] * 10 + [0.8] * 10),
            "a/3e-4": _run(3e-4, [1.0] * 10 + [1.1] * 10, heldout=dict(before=dict(format_check=0.5, exact=0.0),
                                                                       after=dict(format_check=0.75, exact=0.125))),
            # another session's cohort: read against its own control, not the first one
            "ctrl2": _run(1e-9, [2.0] * 20, seed=1, lr_schedule="constant"),
            "b/1e-3": _run(1e-3, [2.0] * 10 + [2.5] * 10, seed=1, lr_schedule="constant")}
    (tmp_path/"live_sync.json").write_text(json.dumps({"grpo_learns": runs}))
    md = measured_markdown(tmp_path)
    assert "lr 1e-09 (control): reward 1.000 → 0.800" in md, md
    assert "reward 1.000 → 1.100, minus the control +0.000 → +0.300" in md, md
    assert "every step after the first: +0.1579 ± 0.0" in md, md              # 9 steps at 0 and 10 at +0.3: 3/19
    assert "held-out greedy format_check 0.500 → 0.750, exact 0.000 → 0.125" in md, md
    assert "- constant lr, seed 1, 20 steps of 16 × 8:" in md, md
    assert "reward 2.000 → 2.500, minus the control +0.000 → +0.500" in md, md
    assert "rewards beyond" not in md, md                                     # no run kept the parts


def test_grpo_part_gaps_name_the_reward_that_moved():
    "Which reward moved, against the control: step_check by +1.2/11 a step, format_check not at all."
    c = dict(lr=1e-9, reward_step_check=[0.2] * 12, reward_format_check=[0.9, 1.0] * 6)
    r = dict(lr=1e-3, reward_step_check=[0.2] + [0.3, 0.32] * 5 + [0.3], reward_format_check=[0.9, 1.0] * 6)
    g = {p["reward"]: p for p in grpo_part_gaps({"c": c, "r": r})}
    assert abs(g["step_check"]["gap_mean"] - 1.2 / 11) < 1e-9 and g["step_check"]["gap_se"] > 0, g
    assert g["format_check"]["gap_mean"] == 0, g


def test_presample_rows_pool_unfinished_and_notebook(tmp_path):
    """A pool's row names its engines; an unfinished run its bound; a notebook run without tokens and absent rows are
    left out."""
    pool = dict(engines=4, questions=7473, samples_per_question=8, completed=False, tokens_per_s_upper_bound=104100)
    notebook = [dict(questions=7473, samples_per_question=8, seconds_with_scoring=72),              # no tokens: no row
                dict(questions=7473, samples_per_question=8, tokens=5_776_141, tokens_per_sample=97, engines=4,
                     generation_seconds=51.9, tokens_per_s=111_290)]
    (tmp_path/"presample_full.json").write_text(json.dumps({"presample_vllm_pool": pool,
                                                             "a_session": {"chapter04_notebook": notebook}}))
    md = measured_markdown(tmp_path)
    assert ("| 04: 7,473 × 8, chapter 04's notebook (the learning start: 97 tokens a sample) "
            "| vLLM × 4 engines | — "
            "| 5,776,141 | 51.9 | 111,290 |") in md, md
    assert md.count("chapter 04's notebook") == 1, md
    assert ("| 04: 7,473 × 8 | vLLM × 4 engines | not measured | not measured | not measured "
            "| did not finish: < 104,100 (run) |") in md, md
    assert "HF fast path" not in md, md


WORKER = '''import subprocess, sys, time
sys.path.insert(0, {bench!r})
from _common import tell, worker_pipe
talk = worker_pipe()
print("hello from the worker", flush=True)
if sys.argv[1] == "hang":                      # a grandchild, as vLLM's engine process: it must die with the worker
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    tell(talk, "start", dict(grandchild=child.pid))
    time.sleep(600)
tell(talk, "result", dict(ok=True, arg=sys.argv[1]))
'''


def test_worker_result_and_failure(tmp_path):
    "A worker's one result comes back over its pipe; a failing one gives its exit code and what it printed."
    from _common import one_result
    script = tmp_path/"worker.py"
    script.write_text(WORKER.format(bench=str(BENCH)))
    assert one_result([sys.executable, script, "ok"], limit=300) == dict(ok=True, arg="ok")
    bad = one_result([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], limit=300)
    assert bad["error"] == "exit code 3" and "boom" in bad["log_tail"], bad


def test_worker_cut_off_at_its_limit_dies_with_its_tree(tmp_path):
    "A worker past its limit is killed with all it started; what it sent before stays, and so does its log."
    import time
    from _common import Worker
    from mathworklog.procs import pid_alive
    script = tmp_path/"worker.py"
    script.write_text(WORKER.format(bench=str(BENCH)))
    w = Worker([sys.executable, script, "hang"], log=tmp_path/"worker.log")
    end = time.time() + 300
    while not w.got("start") and time.time() < end and w.owned.poll() is None:
        time.sleep(0.1)
    w.wait(limit=1)
    assert w.timed_out and w.killed_at and w.rc < 0, (w.rc, w.tail())
    grandchild = w.got("start")[0]["grandchild"]
    assert not pid_alive(w.owned.pid) and not pid_alive(grandchild)
    assert "hello from the worker" in (tmp_path/"worker.log").read_text()


# ---------------------------------------------------------------------------------------------------------------------
# Every bench script's --preset tiny run, on the CPU, small (issue 37, item 6): the JSON it writes, never its timings.
# Marked `bench` (worker processes, vLLM engines: 6-8 minutes in all on two busy cores); tools/test.sh runs them when
# MATHWORKLOG_TEST_BENCH=1, or `pytest -m bench tests/test_bench.py`.

def run_bench(script: str, out: Path, *argv, timeout: int = 600) -> dict:
    "Run `bench/<script>.py --preset tiny --out OUT ARGV` as gpu_run.sh runs it (from bench/); the JSON it wrote."
    import os, subprocess
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=f"{BENCH.parent}:{os.environ.get('PYTHONPATH', '')}")
    p = subprocess.run([sys.executable, f"{script}.py", "--preset", "tiny", "--out", str(out), *map(str, argv)],
                       cwd=BENCH, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-4000:])
    return {f.stem: json.loads(f.read_text()) for f in out.glob("*.json")}


def needs_vllm(test):
    "Marked `vllm`, and skipped where vLLM is not installed."
    import importlib.util
    return pytest.mark.vllm(pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                               reason="vLLM is not installed")(test))


@pytest.mark.bench
@needs_vllm
def test_grpo_step_tiny_three_paths(tmp_path):
    """The three rollout paths in one run: TRL's default, TRL + colocated vLLM (the CPU backend), the library's
    RolloutCopy; each step split, the sampler–trainer gap, the speed-up over TRL's default path of the same run."""
    g = run_bench("grpo_step", tmp_path, "--steps", 2, "--prompts", 2, "--gens", 2, "--new", 8, "--variants",
                  "trl_default:fp32", "vllm_colocate:fp32", "mathworklog:fp32")["grpo_step"]
    paths = ("trl_default:fp32", "vllm_colocate:fp32", "mathworklog:fp32")
    for v in paths:
        r = g[v]
        assert r["step_s"] > 0 and r["step_s_cpu"] > 0 and len(r["all_steps_s"]) == 2 and r["threads"] >= 1, (v, r)
        for c in ("", "_cpu"):                                          # the parts add up to the step, by each clock
            total = sum(r[f"{k}_s{c}"] for k in ("generation", "logprobs", "rewards", "training"))
            assert abs(total - r[f"step_s{c}"]) < 1e-9, (v, c, r)
    assert g["vllm_colocate:fp32"]["logprobs_s"] > 0 == g["mathworklog:fp32"]["logprobs_s"]    # vLLM's IS correction
    for v in paths[1:]:                                                     # fp32 sampler and trainer agree
        assert g[v]["logprob_mismatch"]["mean"] < 1e-3 and g[v]["sync_s"] is not None, g[v]
    assert g["trl_default:fp32"]["logprob_mismatch"] is None
    assert set(g["speedup_vs_trl_default"]) == set(g["speedup_cpu_vs_trl_default"]) == set(paths)
    assert g["speedup_vs_trl_default"]["trl_default:fp32"] == 1 and {g["fastest"], g["fastest_cpu"]} <= set(paths)
    assert g["shape"] == dict(prompts=2, gens=2, new=8, steps=2) and g["device"] == "cpu"
    row = next(l for l in report.grpo_step_md(g, tmp_path) if l.startswith("| vllm_colocate (fp32) |"))
    assert "not measured" not in row.split(" | ")[1], row                 # its s/step


@pytest.mark.bench
@needs_vllm
def test_cpu_engines_tiny(tmp_path):
    "HF generate, the fast path and vLLM's CPU backend at the tiny shapes, and the warm-up epilogue by each."
    c = run_bench("cpu_engines", tmp_path, "--questions", 4, "--repeat", 1, "--job-questions", 4)["cpu_engines"]
    assert set(c["engines"]) == {"hf_generate", "hf_fast", "vllm_cpu"} == set(c["warmup_job"])
    assert all(e[s]["tokens_per_s"] > 0 for e in c["engines"].values() for s in ("grpo", "presample"))
    assert c["fastest"]["warmup_job"] in c["engines"]


@pytest.mark.bench
@needs_vllm
def test_warm_launch_tiny(tmp_path):
    "A one-step row launched fresh and warm in one run: the same result each way, a time for each, and their ratio."
    w = run_bench("warm_launch", tmp_path, "--steps", 1, "--repeat", 1, "--questions", 8)["warm_launch"]
    assert w["same_result"] and w["first_warm"]["gave"]["losses"], w
    assert [len(w["runs"][k]) for k in ("fresh", "warm")] == [1, 1] and w["fresh_over_warm"] > 0, w
    assert w["shape"] == dict(steps=1, prompts=2, gens=4, heldout=8) and w["device"] == "cpu"


@pytest.mark.bench
def test_learning_start_tiny(tmp_path):
    "The learning start from the tiny preset's student (gpu's and smoke's: tests/test_smoke_preset.py)."
    import subprocess, os
    env = dict(os.environ, HF_HUB_OFFLINE="1", MATHWORKLOG_CACHE=str(tmp_path/"cache"))
    p = subprocess.run([sys.executable, "learning_start.py", "--preset", "tiny", "--out", str(tmp_path),
                        "--max-steps", "2", "--every", "2", "--batch", "2", "--heldout", "2", "--max-new", "8",
                        "--n-train", "8"],
                       cwd=BENCH, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    ls = json.loads((tmp_path/"learning_start.json").read_text())["learning_start"]
    assert ls["steps"] == 2 and Path(ls["model_dir"]) == tmp_path/"cache"/"learning-start-tiny", ls


@pytest.mark.bench
@needs_vllm
def test_live_sync_tiny(tmp_path):
    "One arm of chapter 08's live experiment from the tiny start, through TRL's colocated vLLM."
    lv = run_bench("live_sync", tmp_path, "--arms", "fp32_unpatched", "--steps", 2)["live_sync"]
    assert lv["arms"]["fp32_unpatched"]["steps"] == 2
    nt = lv["arms"]["fp32_unpatched"]["noise_table"]              # the trainer's log-probs, from the loss's forward
    assert (nt["first"]["step"], nt["last"]["step"]) == (1, 2) and nt["first"]["rows"], nt


@pytest.mark.bench
@needs_vllm
def test_lesson_attempts_tiny(tmp_path, monkeypatch):
    "Both attempts, a few steps each, after chapters 02-06 ran into a fresh runs folder; each variant by its baseline."
    monkeypatch.setenv("MATHWORKLOG_RUNS", str(tmp_path/"runs"))
    la = run_bench("lesson_attempts", tmp_path/"out", "--attempts", "fix_pays,plateau_schedule", "--steps", 6,
                   "--plateau-steps", 6, timeout=1500)
    att = la["lesson_attempts"]["lesson_attempts"]["attempts"]
    assert list(att) == ["fix_pays", "plateau_schedule"]
    assert list(att["fix_pays"]["runs"]) == ["unpatched", "fixed"]
    assert att["fix_pays"]["paired"] == "fixed − unpatched"
    assert {r["steps"] for r in att["fix_pays"]["runs"].values()} == {6}
    pl = att["plateau_schedule"]
    assert pl["runs"]["constant"]["settings"]["lr_schedule"] == "constant" and pl["runs"]["linear"]["steps"] == 6
    assert pl["n"] == 2000 and pl["ci_low"] <= pl["diff_points"] <= pl["ci_high"]
    ent = pl["series"]["constant"]["entropy"]
    assert ent["n"] == 3 and ent["ci_low"] <= ent["diff"] <= ent["ci_high"], ent
    fixed = att["fix_pays"]["series"]["fixed"]["sync/mismatch"]
    assert fixed["last"] < 1e-4, fixed                                    # the fix: the copies agree


@pytest.mark.bench
@needs_vllm
def test_lesson_attempt_last_run_reads_chapter_09s_runs(tmp_path, monkeypatch):
    """The last run's attempt: its start (the run labelled opd2) and its RL set (the averaging run labelled
    presample_opd2) come from two runs, here made from the student on 64 questions; a few steps each."""
    import shutil
    monkeypatch.setenv("MATHWORKLOG_RUNS", str(tmp_path/"runs"))
    import lesson_attempts as la
    from mathworklog.data import load_gsm8k, prepare, preset_tokenizer
    from mathworklog.models import model_path
    from mathworklog.presample import SampleSettings, load_rl_set, re_presample, save_rl_set
    from mathworklog.runs import new_run
    from mathworklog.settings import get_preset
    P, tok = get_preset("tiny"), preset_tokenizer("tiny")
    student, train = model_path(P.model, tok, P), prepare(load_gsm8k("train", n=P.n_train, preset="tiny"))
    opd2 = new_run("opd", "tiny", params=dict(label="opd2"))
    shutil.copytree(student, opd2.path/"model")
    opd2.update_meta(status="done")
    pre = new_run("averaging", "tiny", params=dict(label="presample_opd2"))
    save_rl_set(pre, re_presample(student, tok, train[:64], pre, SampleSettings.from_preset(P)))
    pre.update_meta(status="done")
    n_rl = len(load_rl_set(pre, train, min_n=P.grpo_prompts))                # a thin RL set is topped up
    jobs = la.variants("last_run_length", P, 0, 3)
    assert [(n, start[1], rl[1], over["steps"]) for n, start, rl, _, over in jobs] == [
        ("row", "opd2", "presample_opd2", P.row_steps), ("plateau_length", "opd2", "presample_opd2", 3)]
    heldout = prepare(load_gsm8k("test", n=200, preset="tiny"))
    runs = {n: la.one_run("last_run_length", n, start, rl, rollout, over | dict(steps=2 if n == "row" else 3),
                          (P, train, heldout, None)) for n, start, rl, rollout, over in jobs}
    assert {n: (r["steps"], r["start"], r["n_rl"]) for n, r in runs.items()} == {
        "row": (2, opd2.id, n_rl), "plateau_length": (3, opd2.id, n_rl)}
    s = la.summarize("last_run_length", runs)
    assert s["paired"] == "plateau_length − row" and s["n"] == 200 and s["ci_low"] <= s["diff_points"] <= s["ci_high"]
    assert {b["verdict"] for b in s["last_is_best"].values()} == {"not run"}    # no worklog run's rows beside them


@pytest.mark.bench
def test_logprob_memory_tiny(tmp_path):
    "Per-token log-probs with backward: every method that ran agrees with the full logits."
    m = run_bench("logprob_memory", tmp_path)["logprob_memory"]
    assert m["full_fp32_logits"]["logp_rel_err"] == 0 and m["trl_chunked_recompute"]["logp_rel_err"] < 1e-5
    assert all(r["grad_w_rel_err"] < 1e-4 for r in m.values() if isinstance(r, dict) and "grad_w_rel_err" in r)


@pytest.mark.bench
@needs_vllm
def test_presample_full_tiny(tmp_path):
    "Chapters 02 and 04's generation through vLLM and the HF fast path, each engine in a worker of its own."
    p = run_bench("presample_full", tmp_path, "--new", 8, "--questions", 4, "--test-questions", 4, "--hf-questions", 4,
                  "--budget", 400, "--hf-reserve", 150)["presample_full"]
    for k in ("baseline_vllm", "presample_vllm", "presample_hf", "baseline_hf"):
        assert p[k]["tokens"] > 0 and p[k]["questions"] == 4, (k, p.get(k))
    assert p["workers"]["vllm"]["rc"] == p["workers"]["hf"]["rc"] == 0


@pytest.mark.bench
def test_rollout_throughput_tiny(tmp_path):
    "Plain `generate` against the fast path; greedy outputs identical in fp32."
    t = run_bench("rollout_throughput", tmp_path, "--batches", 4, "--new", 8, "--greedy_tokens", 8,
                  "--profile_steps", 2)["rollout_throughput"]
    assert t["batch_4"]["plain_tok_s"] > 0 and t["batch_4"]["fast_tok_s"] > 0 and t["greedy_identical_fp32"] == 1.0


@pytest.mark.bench
@needs_vllm
def test_stream_race_tiny(tmp_path):
    "TRL's sync through vLLM's producer on the CPU (no streams, so no race): the fixes agree with unpatched TRL."
    rows = run_bench("stream_race", tmp_path, "--steps", 2, "--modes", "unpatched", "clone",
                     "out_of_place")["stream_race"]["rows"]
    by = {(r["mode"], r["step"]): r["trainer_drift"] for r in rows}
    assert len(by) == 6 and all(r["transport"] == "vllm" for r in rows)
    assert all(abs(by[("clone", s)] - by[("out_of_place", s)]) < 1e-5 for s in (1, 2)) and by[("clone", 2)] > 0


@pytest.mark.bench
def test_sync_leak_tiny(tmp_path):
    "TRL's sync leaves no drift out of place; the bf16 merge and unmerge round the base weights."
    s = run_bench("sync_leak", tmp_path, "--syncs", 2, "--dtypes", "bfloat16", "float32")["sync_leak"]
    by = {(r["dtype"], r["mode"]): r["base_drift"] for r in s["rows"]}
    assert by[("bfloat16", "out_of_place")] == by[("float32", "out_of_place")] == 0 < by[("bfloat16", "unpatched")]


@pytest.mark.bench
@needs_vllm
def test_vllm_engines_tiny(tmp_path):
    "A GeneratorPool of one vLLM engine (chapter 04's code path) samples the presample."
    e = run_bench("vllm_engines", tmp_path, "--configs", 1, "--questions", 4, "--k", 2, "--new", 8)["vllm_engines"]
    assert e["rows"][0]["tokens_per_s"] > 0 and e["rows"][0]["questions"] == 4 and e["preset"] == "tiny"


def test_grpo_step_cpu_table_renders():
    "The committed CPU GRPO step table: three paths, ratios against TRL's default path, the fastest named."
    f = BENCH/"cpu"/"grpo_step.json"
    if not f.exists(): pytest.skip("bench/cpu/grpo_step.json not written yet")
    md = measured_markdown(BENCH/"cpu")
    for v in ("trl_default", "vllm_colocate", "mathworklog"):
        assert f"| {v} (fp32) |" in md and f"| {v} (bf16) |" in md
    assert "× TRL default (CPU)" in md and "fastest `" in md


def test_grpo_step_variant_overrides():
    "A variant's GRPOConfig changes (a speed-up tried against its plain variant): JSON values, strings, a clear error."
    import grpo_step
    assert grpo_step.trainer_overrides("mathworklog:bf16") == {}
    assert grpo_step.trainer_overrides("mathworklog:bf16:gradient_checkpointing=false+per_device_train_batch_size=32"
                                       "+optim=adamw_torch_fused") == dict(
        gradient_checkpointing=False, per_device_train_batch_size=32, optim="adamw_torch_fused")
    with pytest.raises(ValueError, match="not key=value"): grpo_step.trainer_overrides("mathworklog:bf16:nogc")


def test_gpu_run_keeps_an_item_run_twice(tmp_path):
    "bench/gpu_run.sh runs an item a second time without losing the first run's files: they move to earlier-<ns>/."
    work, out = tmp_path/"work", tmp_path/"out"
    env = dict(os.environ, GPU_RUN_WORK=str(work), OUT=str(out), GPU_RUN_PRESET="tiny", DEADLINE="120",
               MATHWORKLOG_TOKENIZER=str(tmp_path), MATHWORKLOG_GSM8K=str(tmp_path))
    item = "nb:no_such_chapter@30"                   # papermill fails at once, after writing the item's log
    p = subprocess.run(["bash", "bench/gpu_run.sh", item, item], cwd=BENCH.parent, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    earlier = list(work.glob("earlier-*"))
    assert len(earlier) == 1 and (earlier[0]/"no_such_chapter.log").exists(), sorted(map(str, work.rglob("*")))
    assert (work/"no_such_chapter.log").exists()
    summary = (work/"summary.txt").read_text()
    assert summary.count("no_such_chapter rc=") == 2 and "the earlier run's files moved to earlier-" in summary


def _running(pid: int) -> bool:
    "The process `pid` exists and is not a zombie (one stopped but not yet waited for)."
    try: return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError: return False


def test_gpu_run_stops_what_an_item_leaves_running(tmp_path):
    """bench/gpu_run.sh stops the processes an item started and left running (a chapter's vLLM engine, cut off at its
    limit, held 43 GB of an H100), even ones in a session of their own, and says so in the summary."""
    work, out, pid, leave = tmp_path/"work", tmp_path/"out", tmp_path/"pid", tmp_path/"leave.sh"
    leave.write_text(f"setsid sleep 300 < /dev/null > /dev/null 2>&1 &\necho $! > {pid}\n")
    env = dict(os.environ, GPU_RUN_WORK=str(work), OUT=str(out), GPU_RUN_PRESET="tiny", DEADLINE="120",
               MATHWORKLOG_TOKENIZER=str(tmp_path), MATHWORKLOG_GSM8K=str(tmp_path))
    p = subprocess.run(["bash", "bench/gpu_run.sh", f"sh:bash,{leave}@30"], cwd=BENCH.parent, env=env,
                       capture_output=True, text=True, timeout=120)
    left = int(pid.read_text())
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        assert not _running(left), f"the item's sleep {left} is still running"
        summary = (work/"summary.txt").read_text()
        assert "sh: stopped 1 process(es) it left running" in summary and "sh rc=0" in summary, summary
    finally:
        if _running(left): os.kill(left, 9)

