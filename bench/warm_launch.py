"""A GRPO row launched as the chapters launch it (`procs.launch(..., apart=True, log=...)`), from a fresh interpreter
and from a warm launcher, alternately, in the same run: wall time of each launch, whether both give the same result
(start, served and policy exact, step losses), and the ratio fresh / warm. The first warm launch starts its launcher
(the imports a fresh launch pays each time) and is reported apart. Prints the ratio and saves
bench/results/warm_launch.json (or $OUT)."""
import json, os, shutil, statistics, tempfile, time
from pathlib import Path
from _common import args, preset_model, save

a = args(__doc__, steps=dict(type=int, default=3, help="GRPO steps of the row"),
         repeat=dict(type=int, default=2, help="launches of each kind after the launcher's start"),
         questions=dict(type=int, default=64, help="held-out questions evaluated at the start and the end"))
from mathworklog.data import load_gsm8k, prepare
from mathworklog.grpo import row_settings
from mathworklog.procs import launch
from mathworklog.settings import get_preset

P = get_preset(a.preset)
tok, start = preset_model(a.preset)
S = row_settings(P, "vllm_bf16_unpatched", steps=a.steps, prompts_per_step=2, num_generations=4)
records, heldout = (prepare(load_gsm8k(s, n=n, preset=a.preset)) for s, n in (("train", 32), ("test", a.questions)))
work = Path(tempfile.mkdtemp(prefix="warm-launch-"))

def row(warm: bool) -> dict:
    "One launch of the row: its wall time and what it gave."
    rd = Path(tempfile.mkdtemp(dir=work))
    t0 = time.perf_counter()
    res = launch("mathworklog.grpo:train_grpo", dict(model_path=str(start), records=records, run_dir=str(rd),
                 settings=S.to_dict(), eval_records=heldout), apart=True, log=str(rd/"train.log"), warm=warm)
    wall = time.perf_counter() - t0
    steps = map(json.loads, (rd/"metrics.jsonl").read_text().splitlines())
    exact = lambda k: (res.get(k) or {}).get("exact")
    gave = dict(start=exact("start_eval"), served=exact("final_eval_vllm"), policy=exact("final_eval"),
                losses=[round(m["loss"], 6) for m in steps if "loss" in m])
    return dict(wall_s=round(wall, 2), train_s=res["seconds"], gave=gave)

try:
    first_warm = row(True)                              # the launcher starts: its imports are paid here, once
    runs = {"fresh": [], "warm": []}
    for _ in range(a.repeat):                           # alternated, so that a slow spell of the machine hits both
        for kind in ("fresh", "warm"): runs[kind].append(row(kind == "warm"))
finally: shutil.rmtree(work, ignore_errors=True)        # the rows' run folders
med = {k: statistics.median(r["wall_s"] for r in v) for k, v in runs.items()}
gave = [r["gave"] for v in runs.values() for r in v] + [first_warm["gave"]]
out = dict(shape=dict(steps=a.steps, prompts=2, gens=4, heldout=a.questions), cores=os.cpu_count(),
           first_warm=first_warm, runs=runs, median_wall_s=med, same_result=all(g == gave[0] for g in gave),
           fresh_over_warm=round(med["fresh"] / med["warm"], 2),
           saved_per_launch_s=round(med["fresh"] - med["warm"], 2))
save(a, "warm_launch", out, quiet=True)
print(f"a row launched fresh: {med['fresh']:.1f} s, warm: {med['warm']:.1f} s (x{out['fresh_over_warm']}, "
      f"{out['saved_per_launch_s']:.1f} s a launch); the launcher's first launch {first_warm['wall_s']:.1f} s; "
      f"same result: {out['same_result']}")
