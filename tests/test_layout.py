"""The library's layout holds: modules import only modules whose notebooks come before theirs (so there is no cycle and
no chapter imports a later chapter), the process module runs without site-packages, and the notebooks' code keeps the
house style (lines of at most 120 characters, no `;` statement chains)."""
import ast, io, json, re, subprocess, sys, tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def module_order() -> list[str]:
    "Exported modules in the order of their notebooks (nbs/ sorted by name): the order imports may point along."
    out = []
    for nb in sorted((ROOT/"nbs").glob("*.ipynb")):
        for c in json.loads(nb.read_text())["cells"]:
            if m := re.search(r"^#\| default_exp (\w+)", "".join(c["source"]), re.M): out.append(m.group(1))
    return out

def imports_of(mod: str) -> set[str]:
    "The mathworklog modules `mod` imports, at its top or inside a function."
    tree, out = ast.parse((ROOT/"mathworklog"/f"{mod}.py").read_text()), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            name = n.module or ""
            if n.level == 1: out.add(name.split(".")[0])
            elif name.startswith("mathworklog."): out.add(name.split(".")[1])
        elif isinstance(n, ast.Import):
            out |= {a.name.split(".")[1] for a in n.names if a.name.startswith("mathworklog.")}
    return out - {mod}

def test_imports_point_only_to_earlier_notebooks():
    order = module_order()
    assert order[:3] == ["settings", "files", "procs"], order
    upward = {m: sorted(d for d in imports_of(m) if d in order and order.index(d) > order.index(m)) for m in order}
    assert not any(upward.values()), {m: u for m, u in upward.items() if u}
    unknown = {m: sorted(imports_of(m) - set(order)) for m in order}
    assert not any(unknown.values()), unknown

def test_procs_runs_without_site_packages():
    "The watchdog runs procs.py by path under `python -I -S`: a third-party import at its top would break cleanup."
    code = "import runpy, sys; ns = runpy.run_path(sys.argv[1]); print('watchdog_main' in ns and 'OwnedProcess' in ns)"
    r = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(ROOT/"mathworklog"/"procs.py")],
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout.strip()) == (0, "True"), r.stderr

def style_problems(src: str) -> list[str]:
    "Lines over 120 characters and `;` chains in one code cell."
    out = [f"{len(l)} chars: {l[:60]}" for l in src.split("\n") if len(l) > 120]
    try: toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, IndentationError): return out
    ends = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER)
    return out + [f"';' chain on line {t.start[0]}" for k, t in enumerate(toks)
                  if t.type == tokenize.OP and t.string == ";" and k + 1 < len(toks) and toks[k + 1].type not in ends]

def test_notebook_code_style():
    bad = {}
    for nb in sorted((ROOT/"nbs").glob("*.ipynb")):
        for i, c in enumerate(json.loads(nb.read_text())["cells"]):
            if c["cell_type"] == "code" and (p := style_problems("".join(c["source"]))): bad[f"{nb.name}[{i}]"] = p
    assert not bad, bad


def test_papermill_reads_every_parameter():
    "papermill's own reader finds every name the `parameters` cell assigns (a comment line holding `=` hides one)."
    import papermill as pm
    for nb in sorted((ROOT / "nbs").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        params = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        if not params: continue
        src = "".join(params[0]["source"])
        assigned = [t.id for n in ast.parse(src).body if isinstance(n, ast.Assign) for t in n.targets]
        assert list(pm.inspect_notebook(str(nb))) == assigned, nb.name


def test_modules_stay_small():
    "Each module holds one idea: at most 500 lines (the generated `_modidx.py` aside)."
    big = {p.name: n for p in sorted((ROOT/"mathworklog").glob("*.py"))
           if p.name != "_modidx.py" and (n := len(p.read_text().splitlines())) > 500}
    assert not big, big


def test_functions_take_few_parameters():
    "No function of the package takes more than 8 parameters (`self` and `cls` not counted): pass a settings object."
    many = {}
    for p in sorted((ROOT/"mathworklog").glob("*.py")):
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = n.args
                k = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                k -= bool(a.args) and a.args[0].arg in ("self", "cls")
                if k > 8: many[f"{p.stem}.{n.name}"] = k
    assert not many, many


def test_no_private_name_crosses_modules():
    "A name starting with `_` is its module's own: no module imports one from another module of the package."
    bad = []
    for p in sorted((ROOT/"mathworklog").glob("*.py")):
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("mathworklog")):
                bad += [f"{p.stem}: {a.name} from {n.module}" for a in n.names if a.name.startswith("_")]
    assert not bad, bad


def test_notebooks_do_not_edit_sys_path():
    "Notebooks import the package and nothing around it: no `sys.path` edits (bench's readers live in `reports`)."
    bad = [f"{nb.name}[{i}]" for nb in sorted((ROOT/"nbs").glob("*.ipynb"))
           for i, c in enumerate(json.loads(nb.read_text())["cells"])
           if c["cell_type"] == "code" and re.search(r"sys\.path\.(insert|append)|sys\.path\s*[+]?=",
                                                     "".join(c["source"]))]
    assert not bad, bad


# The notebooks in the house style of fastcore's `01_basics`: every exported cell is followed by a sentence (markdown)
# or a test, never directly by another exported cell. The chapters join this list as they are restyled.
STYLED = sorted(p.stem for p in (ROOT/"nbs").glob("*.ipynb") if p.stem != "index")   # every notebook

def exported(cell) -> bool:
    "Whether a cell is exported to the package (`#| export` or `#| exports`)."
    return cell["cell_type"] == "code" and re.search(r"^#\|\s*exports?\b", "".join(cell["source"]), re.M) is not None

def test_exported_cells_are_followed_by_a_sentence_or_a_test():
    "After each exported cell comes a sentence on why or a test, not the next definition (fastcore: 15% do; here 0)."
    bad = {}
    for name in STYLED:
        cells = json.loads((ROOT/"nbs"/f"{name}.ipynb").read_text())["cells"]
        run = [i for i in range(len(cells) - 1) if exported(cells[i]) and exported(cells[i + 1])]
        if run: bad[name] = [cells[i]["source"][1][:60] if len(cells[i]["source"]) > 1 else i for i in run]
    assert not bad, bad


def test_no_black_style_exploded_calls():
    "fastai one-liners in the styled notebooks' code: no line that is only a closing `)` (black's exploded calls)."
    bad = [f"{name}[{i}]" for name in STYLED
           for i, c in enumerate(json.loads((ROOT/"nbs"/f"{name}.ipynb").read_text())["cells"])
           if c["cell_type"] == "code" and re.search(r"^\s*\)[)\]},]*\s*$", "".join(c["source"]), re.M)]
    assert not bad, bad
