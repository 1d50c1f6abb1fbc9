"""The training chapters under `accelerate launch` with two processes (CPU, gloo): the same launch and gather code a
two-GPU box runs. Same global batch -> same first-step loss; rewards gathered from both; one writer; checkpoints
load."""
import pandas as pd
from transformers import AutoModelForCausalLM
from mathworklog.models import load_tokenizer, model_path
from mathworklog.procs import launch
from mathworklog.runs import new_run
from mathworklog.data import load_gsm8k, prepare, preset_tokenizer
from mathworklog.runs import read_metrics

def first_batch_losses(base, recs, tok, batch: int = 4) -> dict:
    """In one process: the loss of SFT's first global batch of `batch` examples, and of each half of it (what each of
    two processes sees under the same global batch), before any update."""
    import tempfile, torch
    from trl import SFTTrainer
    from mathworklog.sft import SFTSettings, sft_config, sft_dataset
    m = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32, attn_implementation="eager")
    with tempfile.TemporaryDirectory() as d:
        tr = SFTTrainer(model=m, args=sft_config(d, SFTSettings(steps=2, lr=1e-3, batch=batch)),
                        train_dataset=sft_dataset(recs), processing_class=tok)
        b = next(iter(tr.get_train_dataloader()))
        def loss(lo, hi):
            with torch.no_grad(): return float(tr.compute_loss(tr.model, {k: v[lo:hi] for k, v in b.items()}))
        return dict(whole=loss(0, batch), rank0=loss(0, batch // 2), rank1=loss(batch // 2, batch))

def test_sft_two_processes_match_one(tmp_path):
    """Two processes under the same global batch as one. The Trainer logs the main process's loss for a step, the token
    mean over *its* half of the batch, so the two-process first-step loss is not the one-process loss of the whole
    batch: measured on the first global batch of 4, the halves lie 0.5% (GSM8K) and 0.8% (the bundled problems) from
    the whole, which is why a fixed tolerance against the whole failed on one data source and not the other. One
    process computes each half's loss on the same weights; the two-process run must give rank 0's half to float
    precision (relative 1e-5: the same sums in another order), and nothing outside the halves' range."""
    tok = preset_tokenizer("tiny")
    base = model_path("tiny", tok, "tiny")
    recs = prepare(load_gsm8k("train", n=8))
    one = first_batch_losses(base, recs, tok)
    run = new_run("sft", "tiny", root=tmp_path)
    two = launch("mathworklog.sft:train_sft", dict(model_path=base, records=recs, run_dir=str(run.path),
                 settings=dict(steps=2, lr=1e-3, batch=2, eval_n=4)), num_processes=2)["first_loss"]
    assert abs(two - one["rank0"]) <= 1e-5 * one["rank0"], (two, one)
    lo, hi = min(one["rank0"], one["rank1"]), max(one["rank0"], one["rank1"])
    assert lo * (1 - 1e-5) <= two <= hi * (1 + 1e-5), (two, one)      # within the halves, to the same precision
    run1 = new_run("sft", "tiny", root=tmp_path)
    whole = launch("mathworklog.sft:train_sft", dict(model_path=base, records=recs, run_dir=str(run1.path),
                   settings=dict(steps=2, lr=1e-3, batch=4, eval_n=4)), num_processes=1)["first_loss"]
    assert abs(whole - one["whole"]) <= 1e-5 * one["whole"], (whole, one)        # one process logs the whole batch
    # the two-process output loads in one process
    AutoModelForCausalLM.from_pretrained(str(run.path / "model"))

def test_grpo_two_processes_gather_and_one_writer(tmp_path):
    tok = preset_tokenizer("tiny")
    base = model_path("tiny", tok, "tiny")
    recs = prepare(load_gsm8k("train", n=8))
    run = new_run("grpo", "tiny", root=tmp_path)
    r = launch("mathworklog.grpo:train_grpo", dict(model_path=base, records=recs, run_dir=str(run.path), steps=2,
               prompts_per_step=2, num_generations=4, max_completion_length=8, lora_r=4, save_steps=1), num_processes=2)
    assert r["steps"] == 2
    ro = pd.read_parquet(run.path / "rollouts.parquet")
    assert len(ro) == 2 * 2 * 4                                               # both processes' completions, once each
    m = read_metrics(run.path)
    assert m[m["reward"].notna()].step.tolist() == [1, 2]                     # one writer: no duplicated lines
    from peft import PeftModel
    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base),
                              str(run.path / "checkpoints" / "checkpoint-2"))
