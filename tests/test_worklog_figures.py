"""The worklog's published figures (`mathworklog.worklog`): every value stands on its line of the published text, and no
chapter shows a "worklog" figure that the table does not hold."""
from pathlib import Path
import nbformat, pandas as pd, pytest
from mathworklog.worklog import (WORKLOG_FIGURES, WORKLOG_FILE, beside, numbers_in, source_problems,
                                 worklog_columns_ok, worklog_figure, worklog_path)

ROOT = Path(__file__).resolve().parent.parent
from mathworklog.settings import CHAPTERS as _NAMES
CHAPTERS = [ROOT / "nbs" / f"{c}.ipynb" for c in _NAMES]
NO_TEXT = "the published worklog is not here: set MATHWORKLOG_WORKLOG, or put it in ../shared/worklog/"


def test_every_value_stands_on_its_line():
    path = worklog_path()
    if path is None: pytest.skip(NO_TEXT)
    assert source_problems(path) == []


def test_the_line_check_catches_a_changed_figure(tmp_path):
    path = worklog_path()
    if path is None: pytest.skip(NO_TEXT)
    text = path.read_text(encoding="utf-8")
    assert "2,009 questions were 0/8" in text
    (tmp_path / WORKLOG_FILE).write_text(text.replace("2,009 questions were 0/8", "2,019 questions were 0/8"),
                                         encoding="utf-8")
    assert source_problems(tmp_path / WORKLOG_FILE) == ["presample_buckets_k8: 2,009 not on line 99"]


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_worklog_columns_come_from_the_table(nb):
    assert worklog_columns_ok(nb) == []


def executed(path: Path, *frames, html: bool = True) -> Path:
    "An executed notebook with one cell per frame, its output stored as Jupyter stores a DataFrame's."
    nb = nbformat.v4.new_notebook()
    for i, fr in enumerate(frames):
        data = {"text/plain": repr(fr)} | ({"text/html": fr.to_html()} if html else {})
        out = nbformat.v4.new_output("execute_result", data=data, execution_count=i + 1)
        nb.cells.append(nbformat.v4.new_code_cell("frame", outputs=[out], execution_count=i + 1))
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("html", [True, False], ids=["html", "plain"])
def test_checker_passes_tables_drawn_from_the_table(tmp_path, html):
    b = beside({"baseline_lenient": 38.2, "presample_buckets_k8": (1900, 90, 5483), "tokens per second": 1518.4},
               keys=["baseline_format", "baseline_qwen3"], label="measured (tiny)")
    own = pd.DataFrame({"this run": ["75% of groups; 33%"], "worklog": ["56% of groups; 85%"]}, index=["step_check"])
    assert worklog_columns_ok(executed(tmp_path / "good.ipynb", b, own, html=html)) == []


@pytest.mark.parametrize("html", [True, False], ids=["html", "plain"])
def test_checker_catches_a_typed_figure(tmp_path, html):
    qwen3 = WORKLOG_FIGURES["qwen3_first_prompt"].reproduced      # a figure's reason is a rendering of the table
    typed = pd.DataFrame({"measured": ["38.1%", "9%", "1"], "worklog": ["37.8%", "not published", qwen3]},
                         index=["lenient", "rollouts", "qwen3"])
    nb = executed(tmp_path / "typed.ipynb", beside({"baseline_lenient": 38.2}), typed, html=html)
    assert worklog_columns_ok(nb) == ["cell 1: 37.8%", "cell 1: not published"]


def test_checker_ignores_outputs_without_a_worklog_column(tmp_path):
    other = pd.DataFrame({"measured": ["37.8%"], "published": ["37.8%"]})
    assert worklog_columns_ok(executed(tmp_path / "other.ipynb", other)) == []


def test_the_table_is_consistent():
    assert len(WORKLOG_FIGURES) > 100
    assert all(f.reproduced is True or f.reproduced.strip() for f in WORKLOG_FIGURES.values())
    assert WORKLOG_FIGURES["opd_teacher"].split == "train"


def html_outputs(nb) -> str:
    "Every HTML output of notebook `nb`, joined."
    return "\n".join(o["data"]["text/html"] for c in nb.cells for o in c.get("outputs", [])
                     if "text/html" in o.get("data", {}))


@pytest.mark.parametrize("nb", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_worklog_figure_is_shown_or_explained(nb):
    """Each of a chapter's figures in the table stands in its committed outputs, as a row of a table: beside a measured
    one, or listed as not reproduced with its reason."""
    from mathworklog.worklog import worklog_table
    html = html_outputs(nbformat.read(nb, as_version=4))
    missing = [k for k in worklog_table(nb.stem).index if f">{k}<" not in html]
    assert not missing, f"{nb.name}: neither measured nor explained: {missing}"


def test_the_coverage_check_catches_a_missing_figure():
    from mathworklog.worklog import worklog_table
    k = worklog_table("02_baseline").index[0]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "execute_result", data={"text/html": "<table><tr><th>other</th></tr></table>"})])])
    assert f">{k}<" not in html_outputs(nb)
