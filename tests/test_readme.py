"""The README's measured figures are the committed outputs of index.ipynb's `#| echo: false` cells: they must equal
what those cells compute now from bench/."""
import ast, json, os
from pathlib import Path
from IPython.display import Markdown

ROOT = Path(__file__).resolve().parent.parent

def test_index_outputs_match_bench_json():
    nb = json.loads((ROOT/"nbs"/"index.ipynb").read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).startswith("#| echo: false")]
    assert cells, "index.ipynb has no echo:false cells"
    ns, cwd = {}, os.getcwd()
    os.chdir(ROOT/"nbs")                                   # the cells read ../bench/… as the notebook does
    try:
        for c in cells:
            tree = ast.parse("".join(c["source"]))            # run the cell, keep its last expression's value
            last = tree.body.pop()
            assert isinstance(last, ast.Expr), "an echo:false cell of index.ipynb must end on what it shows"
            exec(compile(tree, "index.ipynb", "exec"), ns)
            now = eval(compile(ast.Expression(last.value), "index.ipynb", "eval"), ns)
            stored = "".join(next(o["data"]["text/markdown"] for o in c["outputs"]
                                  if "text/markdown" in o.get("data", {})))
            assert isinstance(now, Markdown) and now.data.strip() == stored.strip(), \
                ("index.ipynb's outputs are stale against bench/: re-execute nbs/index.ipynb, "
                 "then python tools/readme.py")
    finally: os.chdir(cwd)
