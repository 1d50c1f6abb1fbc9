"""`report_to` reaches TRL: a GRPO run with report_to="trackio" leaves its loss and reward series in a local trackio
project (offline, no account), under the run's own id, beside the run folder's metrics.jsonl."""
import json, os, sqlite3, subprocess, sys, textwrap
from pathlib import Path
import pytest

pytest.importorskip("trackio", reason="trackio is not installed: pip install 'mathworklog[dev]'")

RUN = textwrap.dedent("""
    import sys
    from mathworklog.settings import cpu_threads
    from mathworklog.models import model_path
    from mathworklog.data import load_gsm8k, prepare, preset_tokenizer
    from mathworklog.runs import new_run
    from mathworklog.grpo import train_grpo
    cpu_threads(1)
    tok = preset_tokenizer("tiny")
    run = new_run("grpo", "tiny", root=sys.argv[1])
    r = train_grpo(model_path("tiny", tok, "tiny"), prepare(load_gsm8k("train", n=4, preset="tiny")), str(run.path),
                   steps=3, prompts_per_step=2, num_generations=2, max_completion_length=8, lora_r=4,
                   save_steps=10**6, rollout="hf", report_to="trackio")
    print("RUN", run.id, r["steps"])
""")


def test_grpo_metrics_land_in_a_local_trackio_project(tmp_path):
    env = dict(os.environ, TRACKIO_DIR=str(tmp_path / "trackio"), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", RUN, str(tmp_path / "runs")], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    run_id, steps = next(x.split()[1:] for x in out.stdout.splitlines() if x.startswith("RUN "))
    db = tmp_path / "trackio" / "mathworklog.db"                  # the project is named after the library
    assert db.exists(), list((tmp_path / "trackio").iterdir())
    rows = sqlite3.connect(db).execute("select step, metrics from metrics where run_name = ?", (run_id,)).fetchall()
    series = {}
    for step, m in rows:
        for k, v in json.loads(m).items(): series.setdefault(k, {})[step] = v
    assert len(series.get("train/loss", {})) == int(steps) == 3, sorted(series)
    assert len(series.get("train/reward", {})) == 3
    ours = [json.loads(x) for x in (tmp_path / "runs" / run_id / "metrics.jsonl").read_text().splitlines()]
    mine = {r["step"]: r["reward"] for r in ours if "reward" in r}
    assert all(abs(series["train/reward"][s] - mine[s]) < 1e-6 for s in mine)   # the same numbers on both sides
