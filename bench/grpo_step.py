"""GRPO step time by rollout path, each in a fresh process, all in one run, LoRA r16, gradient checkpointing on a GPU:

- `trl_default`: TRL's default HF path (the training model samples itself: unmerged adapter, dynamic cache);
- `vllm_colocate`: TRL's own colocated vLLM engine (`vllm_mode="colocate"`), built as `grpo.train_grpo` builds it:
  inside `weights.colocated_vllm(dtype)` (on the CPU: vLLM's CPU backend, eager, a fixed KV cache), and on the CPU
  with `weights.patch_trl_reload_sync` (TRL's sync loads through vLLM's `reload_weights`); TRL syncs the merged LoRA
  weights before every step and computes the trainer's log-probs of vLLM's samples for its importance sampling;
- `mathworklog`: the library's `copies.RolloutCopy` (`fast_generation=True`): a second HF copy refreshed in place from
  the merged weights before each rollout, sampling through `generation.fast_decode` (one compiled forward a token);
  `mathworklog:bf16:decoder=hf` samples through `generate` instead (`fast_generate`, the path before 2026-12-06).

Precision `fp32`: everything in fp32, the CPU chapters' own setting (precision 'auto' is fp32 there). `bf16`: bf16
autocast over fp32 master weights in the trainer, the rollout copy and the vLLM engine in bf16. On a GPU the rollout
side is bf16 in both (the library's `RolloutCopy` default there, and the engine of earlier H200 runs).

The shape is 16 prompts x 8 completions x 256 tokens on the gpu preset and the preset's own GRPO step elsewhere (tiny:
8 x 8 x 64). Each step is split into generation (TRL's `_generate`, the weight sync included, also given alone),
log-probs (the trainer's no-grad scoring of the samples: TRL does it for vLLM's importance sampling only, and the
library's rows take them from the loss's forward instead: 0 with `:is_from_loss=true`), rewards and
training (the rest: the loss's forward, backward and the optimizer). Step 1 holds warm-up and compilation: medians are
over the later steps. The sampler/trainer log-prob gap (mean |log p_trainer - log p_sampler| per sampled token): TRL's
own `sampling/sampling_logp_difference/mean` for vLLM; for the `RolloutCopy`, the same measure on 8 prompts it samples
after training; none for TRL's default path (the trainer samples itself). Ratios are against `trl_default` of the
same precision, measured in the same run (`--rounds` > 1 repeats the set, in reverse order every other round, so a
neighbour's load falls on every variant; each ratio is also given round by round). Wall seconds and this process's CPU
seconds (`*_cpu`: all its threads, vLLM's in-process engine included) are both kept: on a shared machine a neighbour's
load stretches the wall clock, not the CPU time (`thread_cpu_s` shows which threads spent it: on a CPU every variant
runs in its python thread alone, vLLM's in-process engine included). Saves <out>/grpo_step.json after every variant
(default out: bench/cpu on a CPU), with the library versions, the thread count, the load average around every variant
and its peak memory (on a GPU: allocated; on a CPU: the worker's peak resident memory)."""
import os, statistics, sys, tempfile, time
from pathlib import Path
from _common import answer, args, one_result, preset_model, save, sync

VARIANTS = ["trl_default:bf16", "vllm_colocate:bf16", "mathworklog:bf16",
            "trl_default:fp32", "vllm_colocate:fp32", "mathworklog:fp32"]
GPU_SHAPE = dict(prompts=16, gens=8, new=256)


COPY_KEYS = ("decoder", "attention")   # keys for the RolloutCopy, not GRPOConfig: decoder=hf is the old path
TRAINER_KEYS = ("is_from_loss",)       # trainer attributes: vllm_colocate:fp32:is_from_loss=true as chapter 07 runs


def trainer_overrides(v: str) -> dict:
    """A variant's own GRPOConfig changes, a speed-up under test against the plain variant in the same run:
    `KIND:PREC:key=value+key=value` (values read as JSON where they parse: `gradient_checkpointing=false`); the keys
    in COPY_KEYS go to the `RolloutCopy` instead (`mathworklog:bf16:decoder=hf`), those in TRAINER_KEYS are set on the
    trainer (`vllm_colocate` keeps TRL's own no-grad pass for the importance-sampling ratio; with `:is_from_loss=true`
    the ratio comes from the loss's forward, as in the library's rows: `isratio.ISFromLoss`), and `base_dtype` to the
    loader (`mathworklog:bf16:base_dtype=bfloat16`: the base weights in bf16, as the library's
    GRPOSettings(weights="bf16") loads them, so autocast stops casting them every step; the default is fp32)."""
    import json
    parts = v.split(":")
    if len(parts) < 3 or not parts[2]: return {}
    out = {}
    for kv in parts[2].split("+"):
        if "=" not in kv: raise ValueError(f"variant {v!r}: {kv!r} is not key=value")
        k, x = kv.split("=", 1)
        try: out[k] = json.loads(x)
        except json.JSONDecodeError: out[k] = x
    return out


def step_shape(a, P, gpu: bool) -> dict:
    "The step's prompts x completions x tokens: the command line's, else 16 x 8 x 256 on a GPU, else the preset's."
    base = GPU_SHAPE if gpu else dict(prompts=P.grpo_prompts, gens=P.num_generations, new=P.grpo_tokens)
    return {k: getattr(a, k) or v for k, v in base.items()}


def clocks() -> tuple:
    "(wall seconds, this process's CPU seconds, all threads): a neighbour's load stretches the first, not the second."
    return time.perf_counter(), time.process_time()


def timer(obj, name, store, when=lambda: True):
    """Wrap `obj.name` so that each call's (wall, CPU) seconds (device synchronised) are appended to `store` when
    `when()` holds."""
    f = getattr(obj, name)
    def wrapped(*x, **k):
        if not when(): return f(*x, **k)
        from torch.profiler import record_function
        sync()
        t0 = clocks()
        with record_function(f"phase::{name}"):          # a named range in a --profile-step trace (free otherwise)
            out = f(*x, **k)
        sync()
        store.append(tuple(b - a for a, b in zip(t0, clocks())))
        return out
    setattr(obj, name, wrapped)


def logprob_gap(tr, tok, recs, prec, n=8):
    "Mean and max |log p_trainer - log p_copy| per sampled token, over `n` prompts the `RolloutCopy` samples."
    import torch
    from mathworklog.data import render_prompt
    from mathworklog.generation import token_logprobs
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
    with torch.autocast(eng.device.type, torch.bfloat16, enabled=prec == "bf16"):
        trainer_lp = token_logprobs(m, x, mask, K)
    d = (trainer_lp.float() - eng.logprobs(x, mask, K).float())[keep].abs()
    return dict(mean=float(d.mean()), max=float(d.max()), tokens=int(d.numel()),
                source="RolloutCopy's samples of 8 prompts after training, scored by both")


def step_clock():
    "A TrainerCallback timing each optimizer step (generation included: TRL generates inside the step)."
    from transformers import TrainerCallback
    class Clock(TrainerCallback):
        def __init__(self): self.t, self.steps = None, []
        def on_step_begin(self, *x, **k):
            sync()
            self.t = clocks()
        def on_step_end(self, *x, **k):
            sync()
            self.steps.append(tuple(b - a for a, b in zip(self.t, clocks())))
    return Clock()


def step_profiler(step: int, out_path: Path, store: dict):
    """A TrainerCallback that runs `torch.profiler` (CPU and CUDA) over optimizer step `step` (1-based) alone and
    summarises it into `store`: each timed phase's range (generation, log-probs, rewards; the rest is training), the
    device time by kernel family, and the top operators by self device time; the full table goes to `out_path`."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    from transformers import TrainerCallback
    class Prof(TrainerCallback):
        prof = None
        def on_step_begin(self, args, state, *x, **k):
            if state.global_step + 1 != step: return
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
            sync()
            self.t0, self.prof = time.perf_counter(), profile(activities=acts)
            self.prof.__enter__()
        def on_step_end(self, args, state, *x, **k):
            if self.prof is None: return
            sync()
            wall = time.perf_counter() - self.t0
            self.prof.__exit__(None, None, None)
            store.update(profile_summary(self.prof, wall, step))
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(self.prof.key_averages().table(
                sort_by="self_device_time_total" if torch.cuda.is_available() else "self_cpu_time_total", row_limit=60))
            self.prof = None
    return Prof()


KERNEL_FAMILIES = [("gemm", ("gemm", "cutlass", "nvjet", "sm90_xmma", "cublas", "matmul")),
                   ("attention", ("flash", "fmha", "attn", "sdpa")),
                   ("softmax/log-softmax/cross-entropy", ("softmax", "nll", "cross_entropy", "logsumexp")),
                   ("reductions", ("reduce", "sum_", "mean", "norm")),
                   ("copies/casts", ("copy", "cast", "memcpy", "memset", "cat", "fill")),
                   ("optimizer (foreach/fused)", ("foreach", "multi_tensor", "adam"))]


def profile_summary(prof, wall: float, step: int) -> dict:
    "The profiled step: phases (CPU range, device time inside it), device time by kernel family, the top operators."
    dev = lambda e: getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0) or 0
    dev_total = lambda e: getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0) or 0
    ev = prof.key_averages()
    phases = {e.key.split("::", 1)[1]: dict(cpu_range_s=e.cpu_time_total / 1e6, device_s=dev_total(e) / 1e6,
                                            calls=e.count) for e in ev if e.key.startswith("phase::")}
    events = prof.events()
    kernels = [(e.name, e.device_time) for e in events if str(getattr(e, "device_type", "")).endswith("CUDA")]
    if not kernels:                     # older layouts: the kernels hang off the CPU operators that launched them
        kernels = [(k.name, k.duration) for e in events for k in getattr(e, "kernels", [])]
    fam, busy = {}, sum(d for _, d in kernels) / 1e6
    for name, d in kernels:
        n = name.lower()
        f = next((f for f, keys in KERNEL_FAMILIES if any(x in n for x in keys)), "other")
        fam[f] = fam.get(f, 0.0) + d / 1e6
    top = sorted(ev, key=dev, reverse=True)[:25]
    return dict(step=step, wall_s=wall, gpu_busy_s=busy, gpu_busy_share=busy / wall if wall else None,
                kernels=len(kernels), phases=phases,
                kernel_families_s=dict(sorted(fam.items(), key=lambda kv: -kv[1])),
                top_ops=[dict(op=e.key[:120], self_device_s=dev(e) / 1e6, self_cpu_s=e.self_cpu_time_total / 1e6,
                              calls=e.count) for e in top])


def build_trainer(kind, prec, path, tok, ds, shape, out_dir, gpu, extra=None):
    """The variant's trainer, built as `grpo.build_grpo_trainer` builds one (minus its NaN guard and evaluation, which
    would sit inside the measured step): the colocate engine inside `colocated_vllm`, the copy attached after."""
    import torch
    from transformers import AutoModelForCausalLM
    from mathworklog.grpo import GRPOSettings, attach_rollout_copy, grpo_config, recording_trainer_class
    from mathworklog.rewards import REWARD_FUNCS
    from mathworklog.settings import lora_config, torch_dtype
    from mathworklog.weights import SyncPatch, colocated_vllm
    colocate = kind == "vllm_colocate"
    rollout_dtype = "bfloat16" if gpu or prec == "bf16" else "float32"
    gs = GRPOSettings(steps=shape["steps"], prompts_per_step=shape["prompts"], num_generations=shape["gens"],
                      max_completion_length=shape["new"], precision=prec, save_steps=10**6,
                      rollout="colocate" if colocate else "hf", gpu_memory_utilization=0.3)
    # bf16 autocast by the precision on every device (the library's flags allow it only on a GPU; on a CPU
    # transformers wants use_cpu for it), vLLM's context at 1,024 tokens, gradient checkpointing on a GPU
    over = (dict(bf16=prec == "bf16", gradient_checkpointing=gpu) | (dict(use_cpu=True) if not gpu else {})
            | (dict(vllm_max_model_length=1024) if colocate else {}) | (extra or {}))
    copy_kw = {k: over.pop(k) for k in COPY_KEYS if k in over}
    attrs = dict(is_from_loss=False) | {k: over.pop(k) for k in TRAINER_KEYS if k in over}   # TRL's own pass
    base_dtype = torch_dtype(over.pop("base_dtype", "fp32"))
    cfg = grpo_config(out_dir, gs, **over)
    with colocated_vllm(rollout_dtype) if colocate else SyncPatch(None):
        tr = recording_trainer_class()(model=AutoModelForCausalLM.from_pretrained(path, dtype=base_dtype),
                                       reward_funcs=REWARD_FUNCS, args=cfg, train_dataset=ds, processing_class=tok,
                                       peft_config=lora_config(16))
    if kind == "mathworklog": attach_rollout_copy(tr, getattr(torch, rollout_dtype), **copy_kw)
    for k, x in attrs.items(): setattr(tr, k, x)
    return tr, rollout_dtype


def run_variant(v, a):
    "One variant in this process: its steps timed and split, the log-prob gap, peak memory on a GPU."
    import torch
    from datasets import Dataset
    from mathworklog.data import load_gsm8k, prepare
    from mathworklog.settings import cpu_threads, dtype_name, get_preset, on_gpu
    from mathworklog.weights import SyncPatch, patch_trl_reload_sync
    kind, prec = v.split(":")[:2]
    extra = trainer_overrides(v)
    gpu, P = on_gpu(), get_preset(a.preset)
    threads = cpu_threads() if not gpu else None
    tok, path = preset_model(a.preset)
    shape = step_shape(a, P, gpu) | dict(steps=a.steps)
    recs = prepare(load_gsm8k("train", n=shape["prompts"] * a.steps, preset=a.preset))
    ds = Dataset.from_list([dict(prompt=r["prompt"], answer=r["answer"], steps=r["steps"]) for r in recs])
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        if gpu: torch.cuda.reset_peak_memory_stats()
        tr, rollout_dtype = build_trainer(kind, prec, path, tok, ds, shape, d, gpu, extra)
        # the CPU backend's layers load only through reload_weights: train_grpo patches TRL's sync the same way
        with patch_trl_reload_sync() if kind == "vllm_colocate" and not gpu else SyncPatch(None):
            clock, gen, lps, rew, syncs = step_clock(), [], [], [], []
            tr.add_callback(clock)
            prof = {}
            if a.profile_step:
                tag = v.replace(':', '_').replace('+', '_')
                tr.add_callback(step_profiler(a.profile_step, Path(a.out)/f"grpo_step_profile.{tag}.txt", prof))
            timer(tr, "_generate", gen)
            timer(tr, "_get_per_token_logps_and_entropies", lps, when=lambda: not torch.is_grad_enabled())
            timer(tr, "_calculate_rewards", rew)
            if tr.rollouts is not None: timer(tr.rollouts, "sync", syncs)
            if kind == "vllm_colocate": timer(tr.vllm_generation, "sync_weights", syncs)   # the patched one
            graphs0 = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
            tr.train()
            graphs = int(torch._dynamo.utils.counters["stats"]["unique_graphs"]) - graphs0
        gap = logprob_gap(tr, tok, recs, prec) if tr.rollouts is not None else None
        if kind == "vllm_colocate":
            diffs = [h["sampling/sampling_logp_difference/mean"] for h in tr.state.log_history
                     if "sampling/sampling_logp_difference/mean" in h]
            ratio = [h["sampling/importance_sampling_ratio/mean"] for h in tr.state.log_history
                     if "sampling/importance_sampling_ratio/mean" in h]
            gap = dict(mean=statistics.median(diffs), per_step=diffs, is_ratio_per_step=ratio,
                       source="TRL's sampling/sampling_logp_difference/mean (median over the steps)")
    n = len(clock.steps)
    # log-probs are scored once a step (vLLM only), syncs once a step (the RolloutCopy's once more for the gap): the
    # first n of each
    out = dict(parts(clock.steps, gen, lps[:n], rew, syncs[:n], 0), **{f"{k}_cpu": v for k, v in parts(
        clock.steps, gen, lps[:n], rew, syncs[:n], 1).items()})
    return dict(out, first_step_s=clock.steps[0][0],
                peak_gib=torch.cuda.max_memory_allocated() / 2**30 if gpu else peak_rss_gib(),
                peak_what="GPU memory allocated" if gpu else "the worker's peak resident memory",
                all_steps_s=[w for w, _ in clock.steps], all_steps_cpu_s=[c for _, c in clock.steps],
                all_generation_s=[w for w, _ in gen], all_logprobs_s=[w for w, _ in lps],
                all_sync_s=[w for w, _ in syncs],
                tokens_per_step=shape["prompts"] * shape["gens"] * shape["new"],
                generation_tok_s=shape["prompts"] * shape["gens"] * shape["new"] / out["generation_s"],
                compiled_graphs=graphs, trainer_overrides=extra,
                trainable_dtypes=sorted({str(p.dtype) for p in tr.model.parameters() if p.requires_grad}),
                trainer_precision=("bf16 autocast" if prec == "bf16" else "fp32") + ", " + dtype_name(next(
                    p.dtype for p in tr.model.parameters() if not p.requires_grad)) + " base weights",
                rollout_dtype=(f"{rollout_dtype} (vLLM)" if kind == "vllm_colocate" else
                               f"{rollout_dtype} (RolloutCopy, decoder {tr.rollouts.decoder}, "
                               f"attention {tr.rollouts.attention})"
                               if kind == "mathworklog" else "the training model's"),
                logprob_mismatch=gap, profile=prof or None, threads=threads, thread_cpu_s=thread_cpu(),
                load_average_before=load0, load_average_after=os.getloadavg()[0])


def parts(steps, gen, lps, rew, syncs, i: int) -> dict:
    """Medians over the steps after the first (step 1 holds compilation and warm-up) of clock `i` (0: wall, 1: CPU):
    the step, generation (the sync inside it also alone), log-probs, rewards, and training (the rest)."""
    med = lambda xs: statistics.median(x[i] for x in xs[1:]) if len(xs) > 1 else None
    step, g, r, lp = med(steps), med(gen), med(rew), med(lps) if lps else 0.0
    return dict(step_s=step, generation_s=g, sync_s=med(syncs) if syncs else None, logprobs_s=lp, rewards_s=r,
                training_s=step - g - lp - r)


def thread_cpu() -> dict:
    "CPU seconds of this process's threads by name (Linux: /proc/self/task), largest first; {} elsewhere."
    out, tick = {}, os.sysconf("SC_CLK_TCK")
    for t in Path("/proc/self/task").glob("*"):
        try: stat = (t/"stat").read_text()
        except OSError: continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        out[name] = out.get(name, 0) + (int(rest[11]) + int(rest[12])) / tick      # utime + stime
    return dict(sorted(((k, round(v, 2)) for k, v in out.items() if v), key=lambda kv: -kv[1]))


def peak_rss_gib() -> float:
    "This process's peak resident memory in GiB (Linux reports kilobytes)."
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def worker_argv(a, v) -> list:
    "The command that runs variant `v` in a fresh process."
    return [sys.executable, __file__, "--preset", a.preset, "--out", a.out, "--steps", a.steps, "--worker", v,
            *[x for k in ("prompts", "gens", "new", "profile_step") if getattr(a, k)
              for x in (f"--{k.replace('_', '-')}", getattr(a, k))]]


def median_of_rounds(runs: list) -> dict:
    "One variant over several rounds: the first round's record, its timings the medians over every round's steps."
    out = dict(runs[0])
    if len(runs) == 1: return out
    for k in ("step_s", "generation_s", "logprobs_s", "rewards_s", "training_s", "sync_s"):
        for k in (k, f"{k}_cpu"):
            xs = [r[k] for r in runs if r.get(k) is not None]
            out[k] = statistics.median(xs) if xs else None
    out["rounds_step_s"], out["rounds_step_s_cpu"] = [r["step_s"] for r in runs], [r["step_s_cpu"] for r in runs]
    out["generation_tok_s"] = out["tokens_per_step"] / out["generation_s"]
    return out


def ratios(res: dict, variants: list) -> dict:
    """Each variant's speed-up over `trl_default` of its precision (the baseline's step time / its own), by wall clock
    and by CPU time; by wall clock also round by round (the six back to back), with the median of those; and the fastest
    variant by each clock."""
    wall, cpu, rounds = {}, {}, {}
    for v in variants:
        b, r = res.get(f"trl_default:{v.split(':')[1]}", {}), res.get(v, {})   # KIND:PREC[:overrides]
        if not (b.get("step_s") and r.get("step_s")): continue
        wall[v], cpu[v] = b["step_s"] / r["step_s"], b["step_s_cpu"] / r["step_s_cpu"]
        rounds[v] = [x / y for x, y in zip(b.get("rounds_step_s") or [b["step_s"]],
                                           r.get("rounds_step_s") or [r["step_s"]])]
    done = [v for v in variants if (res.get(v) or {}).get("step_s")]
    fastest = lambda k: min(done, key=lambda v: res[v][k]) if done else None
    return dict(speedup_vs_trl_default=wall, speedup_cpu_vs_trl_default=cpu, speedup_by_round=rounds,
                speedup_median_of_rounds={v: statistics.median(x) for v, x in rounds.items()},
                fastest=fastest("step_s"), fastest_cpu=fastest("step_s_cpu"))


def main():
    a = args(__doc__, steps=dict(type=int, default=5), new=dict(type=int, default=None),
             prompts=dict(type=int, default=None), gens=dict(type=int, default=None),
             variants=dict(nargs="+", default=VARIANTS), rounds=dict(type=int, default=1),
             **{"profile-step": dict(type=int, default=0, help="profile this step (1-based) of each variant with "
                                     "torch.profiler: <out>/grpo_step_profile.<variant>.txt and the result's "
                                     "'profile'")},
             worker=dict(default=None, help="run one variant in this process and send its result to the parent"))
    if a.worker:
        answer(run_variant, a.worker, a)
        return
    from mathworklog.files import library_versions
    from mathworklog.generation import vllm_available
    from mathworklog.settings import get_preset, on_gpu
    gpu = on_gpu()
    if a.out == "bench/results" and not gpu: a.out = str(os.path.join(os.path.dirname(__file__), "cpu"))
    res = dict(versions=library_versions(), shape=step_shape(a, get_preset(a.preset), gpu) | dict(steps=a.steps),
               cores=os.cpu_count(), rounds=a.rounds, load_average_at_start=os.getloadavg()[0])
    variants = [v for v in a.variants if not v.startswith("vllm_colocate") or vllm_available()]
    res["not_run"] = {v: "vLLM is not installed" for v in a.variants if v not in variants}
    runs = {v: [] for v in variants}
    for i in range(a.rounds):
        for v in variants if i % 2 == 0 else variants[::-1]:
            r = one_result(worker_argv(a, v), limit=1200)                  # a fresh process per variant
            if "error" in r:
                print(v, "failed:", r["error"], r["log_tail"][-2000:], flush=True)
                res[v] = r
                continue
            runs[v].append(r)
            res[v] = median_of_rounds(runs[v])
            res |= ratios(res, variants)
            save(a, "grpo_step", res, quiet=True)                       # after every variant: a cut-off run keeps it
            print(v, {k: round(x, 3) for k, x in r.items() if isinstance(x, float) and not k.startswith("load")},
                  "gap", (r["logprob_mismatch"] or {}).get("mean"), flush=True)
    res |= ratios(res, variants)
    res["load_average_at_end"] = os.getloadavg()[0]
    for v, x in res["speedup_vs_trl_default"].items():
        print(f"{v}: {res[v]['step_s']:.3f} s/step ({x:.2f}x TRL's default path; by round "
              f"{res['speedup_median_of_rounds'][v]:.2f}x), CPU {res[v]['step_s_cpu']:.3f} s/step "
              f"({res['speedup_cpu_vs_trl_default'][v]:.2f}x)")
    print("fastest:", res["fastest"], "by CPU time:", res["fastest_cpu"])
    save(a, "grpo_step", res, quiet=True)


if __name__ == "__main__": main()
