"Shared set-up for the benchmarks: the preset's model over the real tokenizer, GSM8K prompts, timing, JSON output."
import argparse, json, os, statistics, time
from pathlib import Path
import torch

def args(desc, **extra):
    p = argparse.ArgumentParser(description=desc)
    p.add_argument("--preset", default="gpu", help="gpu: the Qwen2.5-0.5B-shaped random model; tiny: a CPU smoke run")
    p.add_argument("--out", default=os.environ.get("OUT", "bench/results"))
    for k, v in extra.items(): p.add_argument(f"--{k}", **v)
    return p.parse_args()

def device(): return "cuda" if torch.cuda.is_available() else "cpu"

def sync():
    if torch.cuda.is_available(): torch.cuda.synchronize()

def timed(fn, repeat=2):
    "Median wall time of `repeat` calls (after the caller's warm-up), synchronising the device around each."
    ts, out = [], None
    for _ in range(repeat):
        sync(); t0 = time.perf_counter(); out = fn(); sync(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out

def save(a, name, result, quiet=False):
    d = Path(a.out); d.mkdir(parents=True, exist_ok=True)
    result = dict(result, device=torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
                  torch=torch.__version__, preset=a.preset)
    from mathworklog.core import atomic_write_text
    atomic_write_text(d / f"{name}.json", json.dumps(result, indent=2, default=str))
    if not quiet: print(json.dumps(result, indent=2, default=str))
    return result
