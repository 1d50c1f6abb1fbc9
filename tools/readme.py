"""Write README.md from nbs/index.ipynb (markdown as is, code cells as fenced blocks), or --check that it is current.
nbdev-readme does the same through Quarto; this keeps the test command free of a Quarto install."""
import json, sys
from pathlib import Path
root = Path(__file__).resolve().parent.parent
def render() -> str:
    nb = json.loads((root/"nbs"/"index.ipynb").read_text())
    parts = []
    for c in nb["cells"]:
        src = "".join(c["source"]).strip()
        if not src or src.startswith("#|"): continue
        parts.append(src if c["cell_type"] == "markdown" else f"```python\n{src}\n```")
    return "<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->\n\n" + "\n\n".join(parts) + "\n"
if __name__ == "__main__":
    out = render()
    if "--check" in sys.argv:
        if (root/"README.md").read_text() != out: sys.exit("README.md is stale: run `python tools/readme.py` and commit")
        print("README.md matches nbs/index.ipynb")
    else: (root/"README.md").write_text(out); print("wrote README.md")
