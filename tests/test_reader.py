"""The reader's path (issue 41): the committed chapters put the story before the library, a chapter run alone runs or
names what it needs, and nothing prints a figure it could not compute. These read the committed notebooks, which are
the last worklog run's record; `test_notebooks.py` checks the same things on the main job's fresh outputs."""
import json, os, re, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = [p for p in sorted((ROOT/"nbs").glob("[0-9][0-9]_*.ipynb")) if "02" <= p.name < "11"]
LIBRARY = re.compile(r"^\s*#\s*\|\s*(export|exporti|hide)\b", re.M)


def is_evidence(cell) -> bool:
    "A code cell that shows a run: a table (an HTML table) or a figure (a PNG) among its outputs."
    return any("image/png" in o.get("data", {}) or "<table" in "".join(o.get("data", {}).get("text/html", ""))
               for o in cell.get("outputs", []))


def library_cells_before_evidence(nb: Path) -> int|None:
    "How many of the library's cells (`#| export` or `#| hide`) come before the first table or plot; None: none."
    n = 0
    for c in json.loads(nb.read_text())["cells"]:
        if c["cell_type"] != "code": continue
        if is_evidence(c): return n
        n += bool(LIBRARY.search("".join(c["source"])))
    return None


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.stem)
def test_the_story_comes_before_the_library(nb):
    "A reader meets the question, the experiment and the evidence first: at most 5 library cells before it."
    n = library_cells_before_evidence(nb)
    assert n is not None, f"{nb.stem}: no table or figure in its committed outputs"
    assert n <= 5, f"{nb.stem}: {n} library cells before its first table or figure"


def test_the_evidence_check_can_fail(tmp_path):
    "The count is real: a notebook whose six exported cells come before its first table is caught."
    cells = [dict(cell_type="code", source=f"#| export\ndef f{i}(): pass", outputs=[]) for i in range(6)]
    cells.append(dict(cell_type="code", source="df", outputs=[dict(output_type="execute_result",
                                                                   data={"text/html": "<table></table>"})]))
    (tmp_path/"x.ipynb").write_text(json.dumps(dict(cells=cells)))
    assert library_cells_before_evidence(tmp_path/"x.ipynb") == 6


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.stem)
def test_no_figure_that_could_not_be_computed(nb):
    "No committed output prints a figure it could not compute ('nan%', 'nan points', 'None%')."
    text = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                     + "".join(o.get("data", {}).get("text/plain", ""))
                     for c in json.loads(nb.read_text())["cells"] for o in c.get("outputs", []))
    assert not re.search(r"\b(nan|None)\s?(%|points|pp)\b", text), re.findall(r".{40}\b(?:nan|None)\s?%.{20}", text)


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_can_run_alone(nb):
    "Every chapter has the `upstream` parameter and calls `chain.ensure_upstream` before its story reads other runs."
    cells = json.loads(nb.read_text())["cells"]
    params = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    src = "".join("".join(c["source"]) for c in cells)
    from mathworklog.settings import CHAPTER_NEEDS
    if nb.stem in CHAPTER_NEEDS:
        assert "upstream" in "".join(params["source"]), nb.stem
        assert f'ensure_upstream("{nb.stem}"' in src, nb.stem


def test_a_chapter_run_alone_names_what_it_needs(tmp_path):
    """`papermill nbs/07_grpo.ipynb` on a fresh copy with no runs and `-p upstream error`: it stops at once with the
    library's error, which names the chapters to run first and the command that runs them."""
    sys.path.insert(0, str(ROOT/"tests"))
    from main_job import fresh_copy, fresh_env
    repo = fresh_copy(tmp_path)
    p = subprocess.run([sys.executable, "-m", "papermill", "nbs/07_grpo.ipynb", str(tmp_path/"out.ipynb"), "-p",
                        "preset", "tiny", "-p", "upstream", "error", "--cwd", "nbs"], cwd=repo,
                       env=fresh_env(repo, tmp_path), capture_output=True, text=True, timeout=600)
    assert p.returncode != 0
    assert "MissingResourceError" in p.stderr and "04_presample" in p.stderr and "--only" in p.stderr, p.stderr[-2000:]
