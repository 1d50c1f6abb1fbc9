"""Write README.md from nbs/index.ipynb, or --check that it is current. Markdown cells go in as they are; a code cell
goes in as a fenced block, unless it starts with `#| echo: false`, in which case only what it displayed as markdown
(`display(Markdown(...))`, read from the committed outputs) goes in. So the README's measured figures are the
outputs of code that read them from bench/ JSON, never typed. nbdev-readme does the same through Quarto; this keeps
the test command free of a Quarto install."""
import json, sys
from pathlib import Path
root = Path(__file__).resolve().parent.parent

def render() -> str:
    nb = json.loads((root/"nbs"/"index.ipynb").read_text())
    parts = []
    for c in nb["cells"]:
        src = "".join(c["source"]).strip()
        if not src: continue
        if c["cell_type"] == "markdown":
            parts.append(src)
            continue
        if src.startswith("#| echo: false"):
            for o in c.get("outputs", []):
                md = o.get("data", {}).get("text/markdown")
                if md: parts.append("".join(md).strip())
            continue
        if src.startswith("#|"): continue
        parts.append(f"```python\n{src}\n```")
    return ("<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->\n\n"
            + "\n\n".join(parts) + "\n")

if __name__ == "__main__":
    out = render()
    if "--check" in sys.argv:
        if (root/"README.md").read_text() != out:
            sys.exit("README.md is stale: run `python tools/readme.py` and commit")
        print("README.md matches nbs/index.ipynb")
    else:
        (root/"README.md").write_text(out)
        print("wrote README.md")
