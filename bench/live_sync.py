"""The worklog's central experiment, live (chapter 08), on the command line: a thin wrapper around
`mathworklog.sync.live_arm`. GRPO from the learning start (`bench/learning_start.py`; `--preset tiny`: the tiny preset's
start, as chapter 08 takes it) with the seven rewards and TRL's colocated vLLM engine, where only the *transport* of
TRL's weight sync is replaced by what `trl vllm-serve` receives: TRL's real `_iter_named_params` → vLLM's
`packed_nccl_broadcast_producer` → `weights.LoopbackGroup` → vLLM's `packed_nccl_broadcast_consumer` → the engine
(`weights.use_server_transport`). One arm per `sync.LIVE_ARMS` entry (fp32 / bf16, unpatched / clone fix / out of
place, and full fine-tuning as the control), each from the same start in a fresh process (`_common.one_result`), several
at once with --parallel. Per step it keeps TRL's own `sampling/sampling_logp_difference/mean` and
`sampling/importance_sampling_ratio/mean`, the fixed-token probe (trainer vs vLLM, and each one's drift from the start),
reward, entropy and zero-signal share (`sync.LIVE_LOG_KEYS`). The settings not given on the command line are
`sync.live_settings(--preset)`'s. Arms merge into --out/live_sync.json (existing arms of earlier sessions are kept
unless run again)."""
import argparse, json, os, sys, time
from pathlib import Path
from _common import STOPPING, answer, kill_workers_on_stop, one_result

def arm_spec(spec: str) -> tuple[str, float|None]:
    "`ARM` or `ARM/LR` -> (arm, its own learning rate or None); an unknown arm is refused here, before any model loads."
    from mathworklog.sync import LIVE_ARMS
    arm, _, lr = spec.partition("/")
    if arm not in LIVE_ARMS: sys.exit(f"unknown arm {arm!r}: one of {', '.join(LIVE_ARMS)}, optionally ARM/LR")
    return arm, float(lr) if lr else None

def arm_environment():
    "An arm's process, before anything is imported: vLLM's engine in-process, no shared compile cache, fewer fragments."
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    # arms compile side by side: none reads or writes a shared cache
    os.environ.setdefault("VLLM_DISABLE_COMPILE_CACHE", "1")
    # neighbours' peaks come and go: fragment less
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

def heldout_callback(tok, records, max_new_tokens):
    "A TrainerCallback that answers held-out test questions greedily before and after training (`.result`)."
    from transformers import TrainerCallback
    from learning_start import heldout_format
    class HeldOut(TrainerCallback):
        def __init__(self): self.result = {}
        def on_train_begin(self, args, state, control, model=None, **kw):
            self.result["before"] = heldout_format(model, tok, records, max_new_tokens)
        def on_train_end(self, args, state, control, model=None, **kw):
            self.result["after"] = heldout_format(model, tok, records, max_new_tokens)
    return HeldOut()

def settings(a):
    "The run's `sync.LiveSettings`: the preset's, with what the command line gives."
    from mathworklog.sync import live_settings
    kw = dict(steps=a.steps, prompts=a.prompts, gens=a.gens, max_new_tokens=a.new, lr=a.lr, full_lr=a.full_lr,
              lr_schedule=a.lr_schedule, seed=a.seed, gpu_memory_utilization=a.gpu_mem,
              buffer_size_bytes=a.buffer_mib << 20 if a.buffer_mib else a.buffer_bytes,
              kv_cache_gib=None if a.kv_cache_gib == 0 else a.kv_cache_gib)
    return live_settings(a.preset, **{k: v for k, v in kw.items() if v is not None})

def arm_worker(arm, a):
    "One arm, trained from the start in this process (`sync.live_arm`): its series, held-out figures, noise tables."
    from mathworklog.data import load_gsm8k, prepare
    from mathworklog.models import model_tokenizer
    from mathworklog.sync import live_arm, live_records
    arm, lr = arm_spec(arm)
    s = settings(a)
    if lr: s = type(s).of(s, lr=lr, full_lr=lr)                # ARM/LR: the arm's own learning rate
    tok = model_tokenizer(a.start)                              # the start's own tokenizer, saved with it
    records, probe = live_records(a.preset, s)
    held = (heldout_callback(tok, prepare(load_gsm8k("test", n=a.heldout, preset=a.preset)), s.max_new_tokens)
            if a.heldout else None)
    out = live_arm(arm, a.start, s, tok, records, probe, callbacks=[held] if held else [], deadline=a.deadline)
    if held:
        keep = ("format_check", "tag_check", "exact", "strict", "mean_reward")
        out["heldout"] = {k: {m: v[m] for m in keep} for k, v in held.result.items()}
    return out

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--preset", default="gpu",
                    help="gpu: the H200 experiment (the learning start, the 0.5B shape); tiny: chapter 08's CPU run")
    ap.add_argument("--start", default=None, help="default: `trace.start_model(preset)`, the preset's student "
                    "(gpu: the learning start)")
    ap.add_argument("--arms", nargs="+", default=None,
                    help="arm names from sync.LIVE_ARMS, each optionally ARM/LR (its own learning rate)")
    ap.add_argument("--key", default="arms",
                    help="where in live_sync.json the arms go: `arms` (the experiment chapter 08 plots) or e.g. "
                    "`grpo_learns` (longer runs that ask whether GRPO from the learning start raises the reward: "
                    "every arm samples the same prompts in the same order, so include a control at lr 1e-9, e.g. "
                    "bf16_out_of_place/1e-9, and read the others against it)")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--prompts", type=int, default=None)
    ap.add_argument("--gens", type=int, default=None)
    ap.add_argument("--new", type=int, default=None)
    # LoRA lr: the worklog's is 3e-5, but on the learning start 30 steps at 3e-5 moved nothing (H200, 2026-12-04: reward
    # 1.37 -> 1.31 over the first/last 10 steps, TRL's log-prob difference unpatched minus patched +0.00044 at step 30,
    # 6% of the bf16 floor); 1e-4 is the next session's setting, so that the policy moves within the steps a lease holds
    # (the gpu preset's: `sync.LiveSettings`'s defaults, lr 1e-4 and full fine-tuning 1e-6)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--full-lr", type=float, default=None)
    ap.add_argument("--heldout", type=int, default=0,
                    help="score N held-out test questions greedily before and after training (0: no)")
    ap.add_argument("--lr-schedule", default=None, choices=["linear", "constant"],
                    help="TRL's default decays the lr linearly to 0 over the run (the arms so far); constant keeps the "
                    "peak throughout")
    ap.add_argument("--gpu-mem", type=float, default=None)
    ap.add_argument("--buffer-mib", type=int, default=None,
                    help="vLLM's packed buffer (default: 1024 on gpu, else --buffer-bytes)")
    ap.add_argument("--buffer-bytes", type=int, default=None,
                    help="default off gpu: `sync.matching_buffer` of the start")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results"))
    ap.add_argument("--worker", default=None)
    ap.add_argument("--deadline", type=float, default=None)
    ap.add_argument("--parallel", type=int, default=1,
                    help="arms at once on the GPU (each its own process and vLLM engine; on one H200 six at once "
                    "peaked at 143 GB and two ran out of memory — an fp32 LoRA arm holds ~40 GB — so use 3 or 4)")
    ap.add_argument("--kv-cache-gib", type=float, default=None,
                    help="vLLM's KV cache per arm on a GPU, fixed (default 4; 0: profile)")
    ap.add_argument("--stagger", type=float, default=0, help="seconds between the streams' starts")
    a = ap.parse_args()
    if a.worker:
        arm_environment()
        answer(arm_worker, a.worker, a)
        sys.exit(0)
    from mathworklog.files import atomic_write_text
    from mathworklog.settings import MissingResourceError
    from mathworklog.sync import LIVE_ARMS
    from mathworklog.trace import matching_buffer, start_model
    try: a.start = a.start or start_model(a.preset)      # the preset's student: gpu's is the learning start
    except MissingResourceError as e: sys.exit(str(e))
    # chunk the start as vLLM's 1 GiB chunks the 0.5B
    if a.preset != "gpu" and not (a.buffer_mib or a.buffer_bytes):
        from transformers import AutoModelForCausalLM
        a.buffer_bytes = matching_buffer(AutoModelForCausalLM.from_pretrained(a.start).named_parameters())
    if not (Path(a.start)/"config.json").exists(): sys.exit(f"no model at {a.start}")
    dest = Path(a.out)/"live_sync.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    res = json.loads(dest.read_text()) if dest.exists() else {}
    res.setdefault(a.key, {})
    ls = Path(a.out)/"learning_start.json"
    if ls.exists(): res["learning_start"] = json.loads(ls.read_text())["learning_start"]
    import threading
    arms = a.arms or list(LIVE_ARMS)
    for arm in arms:                                  # checked here, not after a worker has loaded the model
        if arm_spec(arm)[1] is not None and a.key == "arms":
            sys.exit(f"{arm}: an arm at its own learning rate goes under another --key (e.g. grpo_learns), not `arms`, "
                     "whose arms chapter 08 compares at the same settings")
    limit = float(os.environ.get("ITEM_LIMIT", 0) or 0)
    deadline = time.time() + limit - 45 if limit else None          # leave time to report and save
    lock = threading.Lock()
    def stream(todo):
        for arm in todo:
            if STOPPING.is_set() or (deadline and time.time() > deadline - 60):
                print(arm, "not started (time)", flush=True)
                return
            argv = [sys.executable, __file__, "--worker", arm] + [
                x for k, v in vars(a).items() if k not in ("worker", "arms", "parallel", "deadline", "key")
                and v is not None for x in (f"--{k.replace('_', '-')}", str(v))]
            if deadline: argv += ["--deadline", str(deadline)]
            log = Path(a.out)/f"live-sync-{arm.replace('/', '-lr')}.log"
            s = one_result(argv, log=log)                 # the arm in its own process tree, its output in `log`
            if "error" in s:
                print(arm, f"failed ({s['error']}); the last of {log.name}:", s["log_tail"][-2500:], flush=True)
                return                                    # this stream stops
            with lock:
                # outside `arms`, runs of several sessions sit side by side: the name says the schedule and the seed,
                # and report.grpo_learns_rows reads each run against the control of its own schedule and seed
                res[a.key][arm if a.key == "arms" else f"{arm} · {s['lr_schedule']} · seed {s['seed']}"] = s
                atomic_write_text(dest, json.dumps(res, indent=2))   # after every arm
            print(f"{arm}: {s['steps']} steps in {s['seconds']} s, {s['chunks']} chunk(s); "
                  f"logp diff {s['sampling_logp_difference'][:1]} → "
                  f"{s['sampling_logp_difference'][-1:]}, IS ratio → {s['importance_sampling_ratio'][-1:]}, "
                  f"probe → {s['probe_mismatch'][-1:]}, "
                  f"reward {s['reward'][:1]} → {s['reward'][-1:]}", flush=True)
    import signal
    kill_workers_on_stop(signal.SIGTERM)     # the running arms' trees are killed with us
    threads = [threading.Thread(target=stream, args=(arms[i::a.parallel],)) for i in range(a.parallel)]
    for i, t in enumerate(threads):
        t.start()
        time.sleep(a.stagger if i < len(threads) - 1 else 0)
    for t in threads: t.join()
