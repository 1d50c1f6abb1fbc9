"""Base-weight drift after 100 syncs (issue 14, item 4) on the Qwen2.5-0.5B shape: TRL's sync generator
(`_iter_named_params`, the real one from TRL) run 100 times over a LoRA model (r16, all linear layers, a non-zero
adapter), unpatched, with the clone fix (`patch_trl_lora_sync("clone")`, the worklog's) and out of place
(`patch_trl_lora_sync("out_of_place")`), in bf16 and in fp32. Unpatched and clone both merge and unmerge the trainer's
weights on every sync, so in bf16 each cycle rounds the base weights twice; out of place never writes them.
Drift = ||W_after - W_before|| / ||W_before|| over every base (non-LoRA) weight, in float64. The model is --model,
by default the learning start where one exists (`model_path("learning-start")`: the GPU box), else the random 0.5B shape
(rounding drift depends on the weights' magnitudes and the update's: the adapter's B is drawn at random and scaled so
that ||ΔW|| / ||W|| = --update-rel, 2e-3 by default, the size at which the worklog's bf16 merge kept 71% of the
update). Runs on the CPU or a GPU. Saves <out>/sync_leak.json."""
import math, time
import torch
from _common import args, save

@torch.no_grad()
def update_rel_norm(model) -> float:
    "||ΔW|| / ||W|| over the LoRA-adapted layers (ΔW = scaling · B A)."
    dn = wn = 0.0
    for mod in model.modules():
        if hasattr(mod, "lora_A") and "default" in mod.lora_A:
            d = (mod.lora_B["default"].weight.double() @ mod.lora_A["default"].weight.double()) * mod.scaling["default"]
            dn += float(d.norm() ** 2)
            wn += float(mod.base_layer.weight.detach().double().norm() ** 2)
    return math.sqrt(dn / wn)

def main():
    a = args(__doc__, syncs=dict(type=int, default=100), update_rel=dict(type=float, default=2e-3),
             dtypes=dict(nargs="+", default=["bfloat16", "float32"]), model=dict(default=None))
    from _common import preset_model
    from mathworklog.models import model_path
    from mathworklog.settings import MissingResourceError, cpu_threads
    from mathworklog.trace import sync_drift
    from mathworklog.weights import lora_model
    if not torch.cuda.is_available(): cpu_threads()
    path = a.model
    if path is None:
        try: path = model_path("learning-start", preset=a.preset) if a.preset == "gpu" else None
        except MissingResourceError: pass
    path = path or preset_model(a.preset)[1]
    rows = []
    for dt in a.dtypes:
        for mode in (None, "clone", "out_of_place"):
            m = lora_model(path, r=16, dtype=getattr(torch, dt))
            with torch.no_grad():                                  # ΔW is linear in B: one rescale hits the target
                f = a.update_rel / update_rel_norm(m)
                for n, p in m.named_parameters():
                    if "lora_B" in n: p.mul_(f)
            rel = update_rel_norm(m)
            t0 = time.perf_counter()
            drift = sync_drift(m, a.syncs, mode)
            secs = time.perf_counter() - t0
            rows.append(dict(dtype=dt, mode=mode or "unpatched", syncs=a.syncs, base_drift=drift, update_rel_norm=rel,
                             seconds_per_sync=round(secs / a.syncs, 3)))
            print(rows[-1], flush=True)
            del m
    by = {(r["dtype"], r["mode"]): r["base_drift"] for r in rows}
    res = dict(rows=rows, model=str(path).rsplit("/", 1)[-1], lora_r=16, update_rel_target=a.update_rel,
               note="100 passes of TRL 1.16's real _iter_named_params over a PEFT LoRA model; drift of the base "
                    "weights, float64")
    if ("bfloat16", "clone") in by and ("bfloat16", "out_of_place") in by:
        res["bf16_clone_vs_out_of_place"] = [by[("bfloat16", "clone")], by[("bfloat16", "out_of_place")]]
        print(f"bf16 drift after {a.syncs} syncs: clone fix {by[('bfloat16', 'clone')]:.3g}, "
              f"out of place {by[('bfloat16', 'out_of_place')]:.3g}")
    save(a, "sync_leak", res, quiet=True)

if __name__ == "__main__": main()
