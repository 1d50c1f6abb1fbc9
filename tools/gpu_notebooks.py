"""Keep chapters executed on the lent GPU box as evidence: python tools/gpu_notebooks.py RESULTS_DIR [DEVICE_LINE]

RESULTS_DIR is what `bench/gpu_run.sh` left (its archive unpacked): the executed notebooks `NAME.gpu.ipynb`, their
`NAME.log`, the `summary.txt` line of each and `versions.txt`. Each notebook is copied to
`bench/h200/notebooks/NAME.vllm.gpu.ipynb` with a first cell that says where and when it ran (the device, the library
versions, the papermill parameters, its exit code, seconds and peak GPU memory from the summary), and with the engines'
log lines (stderr streams) moved out of the cells into `bench/h200/notebooks/NAME.stderr.txt` — nothing is dropped.
A notebook whose run failed is kept too: its first cell says so."""
import json, re, sys
from datetime import date
from pathlib import Path

root = Path(__file__).resolve().parent.parent


def summary_line(results: Path, name: str) -> str:
    "The summary's line for item `name` (rc, seconds, peak GPU memory), or '' when it has none."
    s = results/"summary.txt"
    lines = s.read_text().splitlines() if s.exists() else []
    return next((x for x in lines if x.startswith(f"{name} rc=")), "")


def keep(nb_path: Path, results: Path, dest: Path, device: str, day: str) -> Path:
    "Copy one executed notebook to `dest` with its where-it-ran cell and its stderr moved beside it."
    nb = json.loads(nb_path.read_text())
    name = nb_path.name.split(".")[0]
    params = nb.get("metadata", {}).get("papermill", {}).get("parameters", {})
    versions = (results/"versions.txt").read_text().strip() if (results/"versions.txt").exists() else "versions unknown"
    line = summary_line(results, name) or f"{name}: no summary line"
    errs = []
    for c in nb["cells"]:
        outs = c.get("outputs", [])
        errs += ["".join(o.get("text", "")) for o in outs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
        c["outputs"] = [o for o in outs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    failed = any(o.get("output_type") == "error" for c in nb["cells"] for o in c.get("outputs", []))
    head = (f"**Ran on {device}, {day}**, through papermill with the `gpu` preset "
            f"(parameters: {', '.join(f'`{k}={v!r}`' for k, v in params.items())}). {versions}. "
            f"Run: `{line}`." + (" **The run stopped with an error: see its last cell.**" if failed else "")
            + (f" The engines' log lines are in `{name}.stderr.txt` beside this notebook." if errs else ""))
    nb["cells"].insert(0, dict(cell_type="markdown", id="ranon", metadata={}, source=head))
    dest.mkdir(parents=True, exist_ok=True)
    out = dest/f"{name}.vllm.gpu.ipynb"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(out)
    if errs: (dest/f"{name}.stderr.txt").write_text("".join(errs))
    return out


def main(results: str, device: str = "one NVIDIA H200 (the lent box)"):
    results = Path(results)
    for p in sorted(results.glob("*.gpu.ipynb")):
        print(keep(p, results, root/"bench/h200/notebooks", device, date.today().isoformat()))


if __name__ == "__main__": main(*sys.argv[1:])
