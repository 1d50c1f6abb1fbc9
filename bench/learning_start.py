"""The live sync experiment's start: a model of Qwen2.5-0.5B's architecture and size (so vLLM's 1 GiB chunks fall as in
the worklog: bf16 0.99 GB in one chunk, fp32 1.98 GB in two), trained from random initialisation on the rewritten
GSM8K training references through chapter 05's SFT path (`sft.train_sft`: TRL's SFTTrainer, completion-only loss, fp32
masters, bf16 autocast, NaN guard), until its greedy answers to 64 held-out test questions keep the format —
`format_check` ≥ 0.8 and mean `tag_check` ≥ 0.4 — or the time budget runs out. Seeded, so every session retrains
the same start (the box keeps nothing, and a 0.5B checkpoint is too large to bring back).
Writes learning_start.json (loss curve, held-out format and tag curve, seconds, whether the target was reached) to
--out, and the model to --model-out."""
import argparse, json, os, time
from pathlib import Path
import torch
from transformers import TrainerCallback

def heldout_format(model, tok, records, max_new_tokens, batch_size=64) -> dict:
    "Greedy answers to the held-out questions: mean format_check, tag_check and the four criteria's exact accuracy."
    from mathworklog.generation import HFGenerator
    from mathworklog.evaluate import evaluate_model
    from mathworklog.rewards import score_completions
    was = model.training
    model.eval()
    try:
        with torch.autocast("cuda", torch.bfloat16, enabled=torch.cuda.is_available()):
            df, table = evaluate_model(HFGenerator(model, tok, batch_size=batch_size, fast=False), tok, records, n=1,
                                       temperature=0.0, max_new_tokens=max_new_tokens)
    finally: model.train(was)
    s = score_completions(df.completion.tolist(), df.answer.tolist(), [r["steps"] for r in records])
    return dict(format_check=float(s.format_check.mean()), tag_check=float(s.tag_check.mean()), exact=table["exact"],
                strict=table["strict"], mean_reward=float(s.total.mean()), sample=df.completion.iloc[0][:300])

class FormatCurve(TrainerCallback):
    "Score the held-out format every `every` steps; stop when the target is reached or the time budget is spent."
    def __init__(self, tok, records, every, max_new_tokens, target=(0.8, 0.4), budget_s=None):
        self.tok, self.records, self.every, self.new, self.target, self.budget = (
            tok, records, every, max_new_tokens, target, budget_s)
        self.curve, self.losses, self.t0, self.reached = [], [], time.perf_counter(), None
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            self.losses.append(dict(step=state.global_step, loss=logs["loss"], grad_norm=logs.get("grad_norm")))
    def on_step_end(self, args, state, control, model=None, **kw):
        late = self.budget and time.perf_counter() - self.t0 > self.budget
        if state.global_step % self.every and not late: return
        r = heldout_format(model, self.tok, self.records, self.new) | dict(
            step=state.global_step, seconds=round(time.perf_counter() - self.t0, 1))
        self.curve.append(r)
        print({k: v for k, v in r.items() if k != "sample"}, flush=True)
        if r["format_check"] >= self.target[0] and r["tag_check"] >= self.target[1]: self.reached = state.global_step
        if self.reached or late: control.should_training_stop = True

def start_folder(preset) -> str:
    """The folder name the learning start of `preset` is saved under in the cache: the preset's `model` where that names
    a folder (gpu: 'learning-start', smoke: 'learning-start-smoke'), else 'learning-start-<preset>'."""
    from mathworklog.models import RANDOM_MODELS, SCALE_MODELS
    from mathworklog.settings import get_preset
    P = get_preset(preset)
    named = "/" not in P.model and P.model not in (*SCALE_MODELS, *RANDOM_MODELS)
    return P.model if named else f"learning-start-{P.name}"

def learning_start(out_dir, model_out, lr=3e-4, batch=32, max_steps=3000, every=150, budget_s=420, heldout=64,
                   max_new_tokens=320, seed=0, preset="gpu", n_train=None, eval_n=8):
    from mathworklog.data import load_gsm8k, prepare, preset_tokenizer, require_gsm8k
    from mathworklog.files import atomic_write_text, cache_dir
    from mathworklog.models import model_path
    from mathworklog.runs import new_run
    from mathworklog.settings import get_preset
    from mathworklog.sft import SFTSettings, train_sft
    model_out = Path(model_out) if model_out else cache_dir()/start_folder(preset)
    # the preset's tokenizer; over Qwen2.5's vocabulary (gpu, smoke) the start is the random model of the preset's shape
    tok = preset_tokenizer(preset)
    base = model_path("shaped" if get_preset(preset).real_tokenizer else get_preset(preset).model, tok, preset)
    train, test = (prepare(load_gsm8k("train", n=n_train, preset=preset)),
                   prepare(load_gsm8k("test", n=heldout, preset=preset)))
    run = new_run("learning_start", preset, base_model=base, data_source=require_gsm8k(preset),
                  params=dict(lr=lr, batch=batch, max_steps=max_steps, heldout=heldout, seed=seed))
    cb = FormatCurve(tok, test, every, max_new_tokens, budget_s=budget_s)
    t0 = time.perf_counter()
    res = train_sft(base, train, str(run.path), SFTSettings(steps=max_steps, lr=lr, batch=batch, seed=seed,
                                                            eval_n=eval_n), callbacks=[cb])
    secs = time.perf_counter() - t0
    out = dict(learning_start=dict(model=base, lr=lr, batch=batch, seed=seed, steps=res["steps"],
                                   seconds=round(secs, 1), reached_at_step=cb.reached,
                                   target=dict(format_check=0.8, tag_check=0.4),
                                   **({k: cb.curve[-1][k] for k in ("format_check", "tag_check", "exact",
                                                                    "mean_reward")} if cb.curve else {}),
                                   first_loss=res["first_loss"], last_loss=res["last_loss"], nan_step=res["nan_step"]),
               heldout_curve=cb.curve, loss_curve=cb.losses, run_id=run.id)
    if res.get("model_dir"):
        import shutil
        tmp = model_out.with_name(model_out.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(res["model_dir"], tmp)
        if model_out.exists(): shutil.rmtree(model_out)
        os.replace(tmp, model_out)               # never a half-copied start where model_path("learning-start") looks
        out["learning_start"]["model_dir"] = str(model_out)
    atomic_write_text(Path(out_dir)/"learning_start.json", json.dumps(out, indent=2))
    return out

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results"))
    ap.add_argument("--model-out", default=None, help="default: the cache folder where the preset's student is looked "
                    "for (`start_folder`; gpu: `models.model_path('learning-start')`, "
                    "$MATHWORKLOG_CACHE/learning-start)")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-steps", type=int, default=3000)
    ap.add_argument("--every", type=int, default=150)
    ap.add_argument("--budget-s", type=float, default=420)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--preset", default="gpu", help="gpu: the 0.5B shape; smoke: the same at TINY_DIMS on a CPU; tiny: "
                    "from the scale model")
    ap.add_argument("--n-train", type=int, default=None)
    ap.add_argument("--heldout", type=int, default=64)
    ap.add_argument("--max-new", type=int, default=320)
    ap.add_argument("--eval-n", type=int, default=8, help="SFT examples whose loss is scored before and after")
    a = ap.parse_args()
    r = learning_start(a.out, a.model_out, a.lr, a.batch, a.max_steps, a.every, a.budget_s, a.heldout, a.max_new,
                       a.seed, a.preset, a.n_train, a.eval_n)
    print(json.dumps(r["learning_start"], indent=2))
