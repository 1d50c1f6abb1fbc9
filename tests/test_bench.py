"How bench/report.py reads the bench scripts' JSON (bench/ owns those files; the library never reads them)."
import json, sys
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
        "grpo_step_md", "rollout_throughput_md", "presample_full_md", "vllm_tests_md", "learning_start_md",
        "live_sync_md", "grpo_learns_md", "stream_race_md", "vllm_engines_md", "logprob_memory_md", "cpu_engines_md"]
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
