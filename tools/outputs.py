"""Copy the outputs of executed chapter notebooks (a worklog run folder, papermill's output) back onto the source
notebooks in nbs/, cell by cell id, leaving every source cell's text untouched; then run `nbdev-clean`.
Usage: python tools/outputs.py runs/worklog-<id>  — how the committed notebooks get outputs from a real run. Any
executed notebook in that folder whose name is a notebook in nbs/ is copied (papermill 10_results and index into it as
well)."""
import json, sys
from pathlib import Path
root = Path(__file__).resolve().parent.parent
def main(run_dir):
    for done in sorted(Path(run_dir).glob("*.ipynb")):
        src_p = root/"nbs"/done.name
        if not src_p.exists(): continue
        src, ran = json.loads(src_p.read_text()), json.loads(done.read_text())
        by_id = {c.get("id"): c for c in ran["cells"] if c["cell_type"] == "code"}
        n = 0
        for c in src["cells"]:
            r = by_id.get(c.get("id"))
            if c["cell_type"] == "code" and r is not None and "".join(r["source"]) == "".join(c["source"]):
                c["outputs"], c["execution_count"] = r.get("outputs", []), r.get("execution_count")
                n += 1
        src_p.write_text(json.dumps(src, indent=1, ensure_ascii=False) + "\n")
        print(f"{done.name}: outputs of {n} cells")
if __name__ == "__main__": main(sys.argv[1])
