"""Keep a chapter executed on the GPU box (bench/gpu_run.sh's `nb:` items, papermill) as evidence in
bench/<box>/notebooks/: its engine and progress logs stripped from the cells (stderr streams, vLLM/TRL log lines and
progress bars in stdout, progress widgets), its tables, figures and printed results kept, and a first markdown cell that
says where and how it ran (the device, the date, the library versions of the run's versions.txt, the preset, the
parameters, the wall seconds, the exit code and the peak GPU memory of gpu_run.sh's summary line).

Usage: python tools/gpu_notebook.py EXECUTED.ipynb OUT.ipynb --versions versions.txt \
--summary "02_baseline rc=0 75 s peak-GPU 1 MiB"
"""
import argparse, json, re
from pathlib import Path

LOG_LINE = re.compile(r"^\s*(\(EngineCore[^)]*\)\s*)?(INFO|WARNING|WARN|DEBUG|ERROR)\b|^\s*\[rank\d|^\s*\S*\s*\d+%\|"
                      r"|Loading safetensors|Capturing CUDA graph|it/s\]|s/it\]|^\s*\[W\d{3,}|^\s*\[\w+ \d\d:\d\d:\d\d"
                      r"|^\s*\(EngineCore|^\s*\(Worker|NCCL INFO|^\s*warnings\.warn|Warning: ")
WIDGET = "application/vnd.jupyter.widget-view+json"


def clean_outputs(outputs: list, stats: dict) -> list:
    "A cell's outputs without stderr, log lines, progress bars and widgets."
    out = []
    for o in outputs:
        if o.get("output_type") == "stream":
            if o.get("name") == "stderr":
                stats["stderr"] += 1
                continue
            text = "".join(o.get("text", ""))
            keep = [l for l in re.split(r"(?<=\n)", text.replace("\r", "\n")) if l.strip() and not LOG_LINE.search(l)]
            stats["log_lines"] += sum(1 for l in text.replace("\r", "\n").splitlines() if l.strip()) - len(keep)
            if keep: out.append(dict(o, text=keep))
            continue
        if o.get("output_type") in ("display_data", "execute_result") \
                and set(o.get("data", {})) <= {WIDGET, "text/plain"} and WIDGET in o.get("data", {}):
            stats["widgets"] += 1
            continue
        out.append(o)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("executed"); p.add_argument("out")
    p.add_argument("--versions", required=True, help="gpu_run.sh's versions.txt of that call")
    p.add_argument("--summary", required=True, help="gpu_run.sh's summary line of the item")
    p.add_argument("--device", default=None, help="where it ran (default: the GPU that versions.txt names)")
    p.add_argument("--note", default="", help="a sentence more for the first cell")
    a = p.parse_args()
    nb = json.loads(Path(a.executed).read_text())
    pm = nb.get("metadata", {}).get("papermill", {})
    stats = dict(stderr=0, log_lines=0, widgets=0)
    for c in nb["cells"]:
        if c["cell_type"] == "code": c["outputs"] = clean_outputs(c.get("outputs", []), stats)
    versions = Path(a.versions).read_text().strip()
    gpu = re.search(r"(NVIDIA .+|no GPU)$", versions)
    device = a.device or (f"one {gpu.group(1)}" if gpu else "a device versions.txt does not name")
    params = pm.get("parameters", {})
    m = re.search(r"rc=(\d+) (\d+) s peak-GPU (\S+) MiB", a.summary)
    rc, secs, peak = m.groups() if m else ("?", "?", "?")
    stem = Path(pm.get("input_path", a.executed)).stem
    lines = [f"**Where this ran.** `{stem}` on {device}, {str(pm.get('start_time', '?'))[:10]}, through papermill "
             f"(`bash bench/gpu_run.sh nb:{stem}:…`), preset `{params.get('preset', '?')}` from the learning start.",
             "",
             f"- versions (the box's `versions.txt`): {versions}",
             f"- parameters: " + ", ".join(f"`{k}={v!r}`" for k, v in params.items()),
             f"- exit code {rc}; {secs} s wall for the whole notebook (papermill's own count: "
             f"{pm.get('duration', 0):.1f} s); peak GPU memory {peak} MiB (nvidia-smi, sampled every 0.5 s)",
             f"- engine and progress logs taken out of the cells: {stats['stderr']} stderr outputs, "
             f"{stats['log_lines']} log lines in stdout, {stats['widgets']} progress widgets (`tools/gpu_notebook.py`)"]
    if a.note: lines += ["", a.note]
    nb["cells"].insert(0, dict(cell_type="markdown", id="where-it-ran", metadata={}, source="\n".join(lines)))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    print(f"{a.out}: {stats}")


if __name__ == "__main__": main()
