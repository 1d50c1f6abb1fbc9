"GRPO outside the notebook: recorded files, resume, and the server subprocess cleaned up when training fails."
import json, sys
from pathlib import Path
import pandas as pd
import pytest

from mathworklog.models import load_tokenizer, model_path
from mathworklog.runs import new_run
from mathworklog.procs import free_port
from mathworklog.data import load_gsm8k, prepare, preset_tokenizer
from mathworklog.rewards import REWARD_WEIGHTS
from mathworklog.grpo import train_grpo
from mathworklog.server import VLLMServer
from mathworklog.generation import choose_engine
from mathworklog.runs import read_metrics

STANDIN = [sys.executable, "-c", "import http.server,sys\nclass H(http.server.BaseHTTPRequestHandler):\n"
           " def do_GET(s): s.send_response(200); s.end_headers()\n def log_message(*a): pass\n"
           "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()"]

def test_server_cleaned_up_when_trainer_fails():
    port = free_port()
    srv = VLLMServer("unused", port=port, cmd=STANDIN + [str(port)], timeout=30)
    with pytest.raises(RuntimeError, match="trainer crashed"):
        with srv:
            assert free_port(port=port) is None                      # it really serves
            raise RuntimeError("trainer crashed")
    assert srv.proc.poll() is not None and free_port(port=port) == port
    assert srv.log_path.exists()                                       # kept after a failure, for a look
    srv.log_path.unlink()

def test_server_early_exit_is_a_clear_error():
    srv = VLLMServer("unused", port=free_port(), cmd=[sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"],
                     timeout=30)
    with pytest.raises(RuntimeError, match="exited with code 3"): srv.start()
    assert "boom" in srv.log_path.read_text()                          # the log the error names stays
    srv.log_path.unlink()

def test_rollout_mode_errors_never_hang():
    with pytest.raises(Exception, match="needs vLLM"): choose_engine("rollout", "server", n_gpus=2, has_vllm=False)
    with pytest.raises(RuntimeError, match="at least 2 GPUs"):
        choose_engine("rollout", "server", n_gpus=1, has_vllm=True)

def test_grpo_records_and_resumes(tmp_path):
    tok = preset_tokenizer("tiny")
    base = model_path("tiny", tok, "tiny")
    recs = prepare(load_gsm8k("train", n=4))
    run = new_run("grpo", "tiny", root=tmp_path)
    kw = dict(model_path=base, records=recs, run_dir=str(run.path), prompts_per_step=2, num_generations=2,
              max_completion_length=8, lora_r=4, save_steps=1)
    a = train_grpo(steps=2, **kw)
    assert a["steps"] == 2 and (run.path / "checkpoints" / "checkpoint-2" / "mathworklog_run.json").exists()
    assert json.loads(
        (run.path / "checkpoints" / "checkpoint-2" / "mathworklog_run.json").read_text())["run_id"] == run.id
    b = train_grpo(steps=3, resume=True, **kw)
    assert b["resumed_from"].endswith("checkpoint-2") and b["steps"] == 3
    m = read_metrics(run.path)
    train_rows = m[m["reward"].notna()]
    assert train_rows.step.tolist() == [1, 2, 3]                      # continued, not restarted, no duplicates
    r = pd.read_parquet(run.path / "rollouts.parquet")
    assert len(r) == 3 * 2 * 2 and sorted(r.step.unique()) == [1, 2, 3]  # one row per completion per step
    assert {"prompt", "completion", "advantage", "total", "run_id", *REWARD_WEIGHTS} <= set(r.columns)
    assert {"entropy", "grad_norm", "zero_signal/total", "frac_reward_zero_std"} <= set(m.columns)

def test_grpo_with_rollout_engine_evaluates_and_resumes(tmp_path):
    "The RolloutCopy path (what a GPU runs) on the CPU: training, evaluation on the copy, resume."
    tok = preset_tokenizer("tiny")
    recs = prepare(load_gsm8k("train", n=4))
    test = prepare(load_gsm8k("test", n=2))
    run = new_run("grpo", "tiny", root=tmp_path)
    kw = dict(model_path=model_path("tiny", tok, "tiny"), records=recs, run_dir=str(run.path), prompts_per_step=2,
              num_generations=2, max_completion_length=8, lora_r=4, save_steps=1, fast_generation=True,
              eval_records=test, eval_every=1, eval_k=2, eval_batch_size=4)
    a = train_grpo(steps=1, **kw)
    assert a["steps"] == 1 and a["final_eval"]["n_questions"] == 2
    assert (run.path / "eval" / "step-1.jsonl").exists() and (run.path / "eval" / "final-greedy.jsonl").exists()
    b = train_grpo(steps=2, resume=True, **{**kw, "eval_every": 0, "eval_records": None})
    assert b["resumed_from"].endswith("checkpoint-1") and b["steps"] == 2
    assert sorted(pd.read_parquet(run.path / "rollouts.parquet").step.unique()) == [1, 2]
