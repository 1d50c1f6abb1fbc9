"""GRPO step time on one GPU, 16 prompts x 8 completions x 256 tokens, LoRA r16, split into generation, reward scoring
and training: TRL's default HF path (dynamic cache, unmerged adapter, fp32 sampling) against mathworklog's fast rollouts
(`grpo.fast_rollouts`: compiled static cache, merged adapter, prompts padded to 64),
bf16 autocast and fp32, all in the same run; gradient checkpointing on in every variant.
Saves bench/results/grpo_step.json (or $OUT)."""
import statistics, tempfile, time
import torch
from transformers import AutoModelForCausalLM, TrainerCallback
from _common import args, device, sync, save
from mathworklog.core import load_tokenizer, model_path
from mathworklog.data import load_gsm8k, prepare
from mathworklog.rewards import REWARD_FUNCS
from mathworklog.grpo import grpo_config, lora_config, _make_recording_trainer
from datasets import Dataset

a = args(__doc__, steps=dict(type=int, default=4), new=dict(type=int, default=256), prompts=dict(type=int, default=16),
         variants=dict(nargs="+", default=["trl_default:bf16", "mathworklog:bf16", "trl_default:fp32", "mathworklog:fp32"]))
tok = load_tokenizer(); gpu = a.preset == "gpu"
path = model_path("shaped" if gpu else "tiny", tok, a.preset)
recs = prepare(load_gsm8k("train", n=a.prompts * a.steps))
ds = Dataset.from_list([dict(prompt=r["prompt"], answer=r["answer"], steps=r["steps"]) for r in recs])

class Clock(TrainerCallback):
    def __init__(self): self.t, self.steps = None, []
    def on_step_begin(self, *x, **k): sync(); self.t = time.perf_counter()
    def on_step_end(self, *x, **k): sync(); self.steps.append(time.perf_counter() - self.t)

def timer(obj, name, store):
    f = getattr(obj, name)
    def wrapped(*x, **k):
        sync(); t0 = time.perf_counter(); out = f(*x, **k); sync(); store.append(time.perf_counter() - t0); return out
    setattr(obj, name, wrapped)

res = {}
for v in a.variants:
    kind, prec = v.split(":")
    ours = kind == "mathworklog"
    with tempfile.TemporaryDirectory() as d:
        cfg = grpo_config(d, a.steps, a.prompts, 8, a.new, precision=prec, save_steps=10**6,
                          gradient_checkpointing=gpu)
        torch.cuda.empty_cache() if gpu else None
        if gpu: torch.cuda.reset_peak_memory_stats()
        T = _make_recording_trainer(); clock = Clock()
        tr = T(model=AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), reward_funcs=REWARD_FUNCS, args=cfg,
               train_dataset=ds, processing_class=tok, peft_config=lora_config(16), callbacks=[clock], fast_generation=ours and gpu)
        gen, rew = [], []; graphs0 = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
        timer(tr, "_generate", gen); timer(tr, "_calculate_rewards", rew)
        tr.train()
    s = slice(1, None)                                   # step 1 holds compilation and warm-up: report the median of the rest
    step, g, r = statistics.median(clock.steps[s]), statistics.median(gen[s]), statistics.median(rew[s])
    res[v] = dict(step_s=step, generation_s=g, rewards_s=r, training_s=step - g - r, first_step_s=clock.steps[0],
                  peak_gib=torch.cuda.max_memory_allocated() / 2**30 if gpu else None, all_steps_s=clock.steps,
                  all_generation_s=gen, tokens_per_step=a.prompts * 8 * a.new, generation_tok_s=a.prompts * 8 * a.new / g,
                  compiled_graphs=int(torch._dynamo.utils.counters["stats"]["unique_graphs"]) - graphs0)
    print(v, {k: (round(x, 2) if isinstance(x, float) else x) for k, x in res[v].items() if not k.startswith("all_")}, flush=True)
for prec in ("bf16", "fp32"):
    b, o = res.get(f"trl_default:{prec}"), res.get(f"mathworklog:{prec}")
    if b and o: res[f"ratio_{prec}"] = b["step_s"] / o["step_s"]; print(f"{prec}: TRL default {b['step_s']:.2f} s/step, mathworklog {o['step_s']:.2f} s/step, {res[f'ratio_{prec}']:.2f}x")
save(a, "grpo_step", res)
