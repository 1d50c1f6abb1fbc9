"""The training chapters under `accelerate launch` with two processes (CPU, gloo): the same launch and gather code a
two-GPU box runs. Same global batch -> same first-step loss; rewards gathered from both; one writer; checkpoints load."""
import pandas as pd
from transformers import AutoModelForCausalLM
from mathworklog.core import load_tokenizer, model_path, launch, new_run
from mathworklog.data import load_gsm8k, prepare, preset_tokenizer
from mathworklog.grpo import read_metrics

def test_sft_two_processes_match_one(tmp_path):
    tok = preset_tokenizer("tiny"); base = model_path("tiny", tok, "tiny"); recs = prepare(load_gsm8k("train", n=8))
    res = {}
    for n, per_device in ((1, 4), (2, 2)):                                   # global batch 4 either way
        run = new_run("sft", "tiny", root=tmp_path)
        res[n] = launch("mathworklog.sft:train_sft", dict(model_path=base, records=recs, run_dir=str(run.path), steps=2,
                        lr=1e-3, batch=per_device, eval_n=4), num_processes=n)
    assert abs(res[1]["first_loss"] - res[2]["first_loss"]) / res[1]["first_loss"] < 0.01
    AutoModelForCausalLM.from_pretrained(res[2]["model_dir"])               # the two-process output loads in one process

def test_grpo_two_processes_gather_and_one_writer(tmp_path):
    tok = preset_tokenizer("tiny"); base = model_path("tiny", tok, "tiny"); recs = prepare(load_gsm8k("train", n=8))
    run = new_run("grpo", "tiny", root=tmp_path)
    r = launch("mathworklog.grpo:train_grpo", dict(model_path=base, records=recs, run_dir=str(run.path), steps=2, prompts_per_step=2,
               num_generations=4, max_completion_length=8, lora_r=4, save_steps=1), num_processes=2)
    assert r["steps"] == 2
    ro = pd.read_parquet(run.path / "rollouts.parquet")
    assert len(ro) == 2 * 2 * 4                                               # both processes' completions, once each
    m = read_metrics(run.path)
    assert m[m["reward"].notna()].step.tolist() == [1, 2]                     # one writer: no duplicated lines
    from peft import PeftModel
    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), str(run.path / "checkpoints" / "checkpoint-2"))
