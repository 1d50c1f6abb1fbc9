"""GRPO step time on one GPU, 16 prompts x 8 completions x 256 tokens, LoRA r16, split into generation, reward scoring
and training: TRL's default HF path (the training model itself: fp32 weights, unmerged adapter, dynamic cache, no
compilation) against mathworklog's `grpo.RolloutCopy` (a bf16 copy synced with the merged weights after every step,
sampling through chapter 02's fast path), bf16 autocast and fp32 training, all in the same run; gradient
checkpointing on in every variant. With vLLM installed a third path joins: `vllm_colocate`, TRL's own colocated vLLM
engine (bf16, LoRA synced by TRL after every step). For the engine it reports how far the copy's per-token log-probs
of its own samples are from the trainer's (the sampler/trainer mismatch); for vLLM, TRL's own
`sampling/sampling_logp_difference/mean`. Each variant runs in a fresh process (vLLM's engine and compiled graphs
do not leak from one into the next). Saves bench/results/grpo_step.json (or $OUT) with the library versions."""
import statistics, sys, tempfile, time
import torch
from transformers import AutoModelForCausalLM, TrainerCallback
from _common import answer, args, one_result, save, sync
from datasets import Dataset
from mathworklog.data import load_gsm8k, prepare, render_prompt
from mathworklog.generation import dtype_view, token_logprobs, vllm_available
from mathworklog.files import library_versions
from mathworklog.grpo import GRPOSettings, grpo_config, recording_trainer_class
from mathworklog.models import load_tokenizer, model_path
from mathworklog.rewards import REWARD_FUNCS
from mathworklog.settings import lora_config

a = args(__doc__, steps=dict(type=int, default=4), new=dict(type=int, default=256), prompts=dict(type=int, default=16),
         variants=dict(nargs="+", default=["trl_default:bf16", "vllm_colocate:bf16", "mathworklog:bf16",
                                           "trl_default:fp32", "vllm_colocate:fp32", "mathworklog:fp32"]),
         worker=dict(default=None, help="run one variant in this process and send its result to the parent"))
tok = load_tokenizer(preset=a.preset)
gpu = a.preset == "gpu"
path = model_path("shaped" if gpu else "tiny", tok, a.preset)
recs = prepare(load_gsm8k("train", n=a.prompts * a.steps, preset=a.preset))
ds = Dataset.from_list([dict(prompt=r["prompt"], answer=r["answer"], steps=r["steps"]) for r in recs])

class Clock(TrainerCallback):
    def __init__(self): self.t, self.steps = None, []
    def on_step_begin(self, *x, **k):
        sync()
        self.t = time.perf_counter()
    def on_step_end(self, *x, **k):
        sync()
        self.steps.append(time.perf_counter() - self.t)

def timer(obj, name, store):
    f = getattr(obj, name)
    def wrapped(*x, **k):
        sync()
        t0 = time.perf_counter()
        out = f(*x, **k)
        sync()
        store.append(time.perf_counter() - t0)
        return out
    setattr(obj, name, wrapped)

def logprob_mismatch(tr, prec, n=8):
    "Mean and max |log p_trainer - log p_copy| per sampled token, over n prompts sampled from the copy."
    eng, m = tr.rollouts, tr.accelerator.unwrap_model(tr.model)
    ids = [tok(render_prompt(tok, r["question"]), add_special_tokens=False)["input_ids"] for r in recs[:n]]
    eng.sync()
    comp = eng.rollout(tr, ids)
    seqs = [p + c for p, c in zip(ids, comp)]
    L, K = max(map(len, seqs)), max(map(len, comp))
    x = torch.tensor([[tok.pad_token_id] * (L - len(s)) + s for s in seqs], device=eng.device)
    mask = torch.tensor([[0] * (L - len(s)) + [1] * len(s) for s in seqs], device=eng.device)
    keep = torch.zeros(len(seqs), K, dtype=torch.bool, device=eng.device)   # the completion tokens among the last K
    for i, c in enumerate(comp): keep[i, K - len(c):] = True
    with torch.autocast("cuda", torch.bfloat16, enabled=prec == "bf16" and gpu):
        trainer_lp = token_logprobs(m, x, mask, K)
    d = (trainer_lp.float() - eng.logprobs(x, mask, K).float())[keep].abs()
    return dict(mean=float(d.mean()), max=float(d.max()), tokens=int(d.numel()))

def run_variant(v):
    kind, prec = v.split(":")
    ours, colocate = kind == "mathworklog", kind == "vllm_colocate"
    # TRL's engine samples in the dtype config.json records
    src = dtype_view(path, "bfloat16") if colocate else path
    gs = GRPOSettings(steps=a.steps, prompts_per_step=a.prompts, num_generations=8, max_completion_length=a.new,
                      precision=prec, save_steps=10**6, rollout="colocate" if colocate else "hf",
                      gpu_memory_utilization=0.3)
    # Built by hand, not with grpo.build_grpo_trainer, which cannot give this trainer: its config takes no TRL overrides
    # (vLLM's 1,024-token context for the colocate variants; gradient checkpointing by preset, not by visible GPU), and
    # the NaN guard it always installs checks the weights in every step, inside the step time this script measures.
    with tempfile.TemporaryDirectory() as d:
        cfg = grpo_config(d, gs, gradient_checkpointing=gpu, **(dict(vllm_max_model_length=1024) if colocate else {}))
        if gpu: torch.cuda.reset_peak_memory_stats()
        T = recording_trainer_class()
        clock = Clock()
        tr = T(model=AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32), reward_funcs=REWARD_FUNCS,
               args=cfg, train_dataset=ds, processing_class=tok, peft_config=lora_config(16), callbacks=[clock],
               fast_generation=ours)
        gen, rew = [], []
        graphs0 = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
        timer(tr, "_generate", gen)
        timer(tr, "_calculate_rewards", rew)
        tr.train()
        mismatch = logprob_mismatch(tr, prec) if tr.rollouts is not None else None
        if colocate:
            diffs = [h["sampling/sampling_logp_difference/mean"] for h in tr.state.log_history
                     if "sampling/sampling_logp_difference/mean" in h]
            mismatch = dict(mean=statistics.median(diffs), per_step=diffs,
                            source="TRL sampling/sampling_logp_difference/mean")
    # step 1 holds compilation and warm-up: report the median of the rest
    s = slice(1, None)
    step, g, r = statistics.median(clock.steps[s]), statistics.median(gen[s]), statistics.median(rew[s])
    return dict(step_s=step, generation_s=g, rewards_s=r, training_s=step - g - r, first_step_s=clock.steps[0],
                peak_gib=torch.cuda.max_memory_allocated() / 2**30 if gpu else None, all_steps_s=clock.steps,
                all_generation_s=gen, tokens_per_step=a.prompts * 8 * a.new, generation_tok_s=a.prompts * 8 * a.new / g,
                compiled_graphs=int(torch._dynamo.utils.counters["stats"]["unique_graphs"]) - graphs0,
                rollout_dtype=("bfloat16 (vLLM)" if colocate else str(tr.rollouts.dtype) if tr.rollouts is not None
                               else "float32 (training model)"),
                logprob_mismatch=mismatch)

if a.worker:
    answer(run_variant, a.worker)
    sys.exit(0)

res = {"versions": library_versions()}
for v in a.variants:
    if v.startswith("vllm_colocate") and not (gpu and vllm_available()):
        print(f"{v}: skipped (needs vLLM and a GPU)")
        continue
    argv = [sys.executable, __file__, "--preset", a.preset, "--out", a.out, "--steps", str(a.steps),
            "--new", str(a.new), "--prompts", str(a.prompts), "--worker", v]
    res[v] = one_result(argv, limit=1200)                         # a fresh process per variant
    if "error" in res[v]:
        print(v, "failed:", res[v]["error"], res[v]["log_tail"][-1500:], flush=True)
        continue
    # after every variant, so a cut-off run keeps what it measured
    save(a, "grpo_step", res, quiet=True)
    print(v, {k: (round(x, 3) if isinstance(x, float) else x) for k, x in res[v].items()
              if not k.startswith("all_") and k != "logprob_mismatch"},
          "mismatch", (res[v]["logprob_mismatch"] or {}).get("mean"), flush=True)
for prec in ("bf16", "fp32"):
    b, o, v = (res.get(f"{k}:{prec}", {}) for k in ("trl_default", "mathworklog", "vllm_colocate"))
    if "step_s" in b and "step_s" in o:
        res[f"ratio_{prec}"] = b["step_s"] / o["step_s"]
        print(f"{prec}: TRL default {b['step_s']:.2f} s/step, mathworklog {o['step_s']:.2f} s/step "
              f"({res[f'ratio_{prec}']:.2f}x)"
              + (f", TRL + vLLM colocate {v['step_s']:.2f} s/step "
                 f"(mathworklog {v['step_s'] / o['step_s']:.2f}x faster)" if "step_s" in v else ""))
save(a, "grpo_step", res)
