"Every chapter notebook, executed headlessly by papermill with preset='tiny', as a user's GPU CI would run it."
import os, sys
from pathlib import Path
import pytest
NBS = sorted(p for p in (Path(__file__).resolve().parent.parent / "nbs").glob("[0-9][0-9]_*.ipynb"))

@pytest.mark.parametrize("nb", NBS, ids=[p.stem for p in NBS])
def test_papermill_tiny(nb, tmp_path):
    import papermill as pm
    pm.execute_notebook(str(nb), str(tmp_path / nb.name), parameters=dict(preset="tiny"), cwd=str(nb.parent),
                        kernel_name="python3", progress_bar=False, log_output=False)
    assert (tmp_path / nb.name).exists()


def test_tiny_worklog_learns():
    "The runs the chapters above left (same $MATHWORKLOG_RUNS): SFT teaches the format, the buckets move, GRPO's reward rises."
    from mathworklog.core import get_preset, latest_run
    k = get_preset("tiny").k; mid = f"1…{k-1}"
    sft = latest_run("sft", "tiny")
    assert sft is not None, "no SFT run of preset tiny: this test reads the runs test_papermill_tiny leaves; run the whole file"
    s = sft.meta["summary"]
    assert s["heldout_format_before"] <= 0.1 and s["heldout_format_after"] >= 0.8, s      # SFT teaches the format, held out
    assert s["loss_last"] < s["loss_first"] / 2, s
    before, after = s["buckets_before"]["strict"], s["buckets_after"]["strict"]
    assert before[f"0/{k}"] == s["n_train"] and after[mid] > 0, (before, after)           # questions leave 0/k after SFT
    assert s["n_rl"] > 0
    g = latest_run("grpo", "tiny").meta["summary"]
    assert g["reward_last"] > g["reward_first"], g                                       # GRPO learns
    assert {"entropy_first", "entropy_last", "zero_signal_first", "zero_signal_last"} <= set(g), g
