"""Every chapter notebook, executed headlessly by papermill with preset='tiny', as a user's GPU CI would run it; and the
learning-critical chapters again on a copy of the project with nothing beside it, as a fresh clone runs them.

Each test reads only runs that its own fixture made, in a runs folder of its own: none depends on another test's
leftovers, and running one test alone runs what it needs."""
import os, shutil, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
NBS = [p for p in sorted((ROOT / "nbs").glob("[0-9][0-9]_*.ipynb")) if p.name >= "02"]   # the chapters
LEARNING = ("04_presample", "05_sft", "07_grpo")          # the chain that must learn: presample → SFT → GRPO
FRESH_UNSET = ("MATHWORKLOG_GSM8K", "MATHWORKLOG_TOKENIZER", "MATHWORKLOG_MODEL_DIR", "MATHWORKLOG_ALLOW_BUNDLED",
               "MATHWORKLOG_CACHE")

def execute(nbs: list, root: Path, runs: Path, out: Path, env: dict) -> dict:
    "Run `nbs` (stems) of the project at `root` in order with papermill in a child process: {stem: error or None}."
    out.mkdir(parents=True, exist_ok=True); errors = {}
    for stem in nbs:
        code = ("import papermill as pm, sys\n"
                "pm.execute_notebook(sys.argv[1], sys.argv[2], parameters=dict(preset='tiny'), cwd=sys.argv[3],\n"
                "                    kernel_name='python3', progress_bar=False, log_output=False)")
        nb = root / "nbs" / f"{stem}.ipynb"
        p = subprocess.run([sys.executable, "-c", code, str(nb), str(out / nb.name), str(nb.parent)], cwd=root,
                           env=env | {"MATHWORKLOG_RUNS": str(runs)}, capture_output=True, text=True)
        errors[stem] = None if p.returncode == 0 else p.stderr[-3000:]
    return errors

@pytest.fixture(scope="session")
def tiny_worklog(tmp_path_factory):
    "Every chapter of this checkout in order, into a runs folder of its own."
    base = tmp_path_factory.mktemp("worklog")
    errors = execute([nb.stem for nb in NBS], ROOT, base / "runs", base / "out", dict(os.environ))
    return base / "runs", errors

def fresh_copy(dest: Path) -> Path:
    "The project's files as a clone has them (tracked, and untracked but not ignored) copied to `dest/repo`: nothing beside it."
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    repo = dest / "repo"
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (repo / f).parent.mkdir(parents=True, exist_ok=True); shutil.copy2(ROOT / f, repo / f)
    return repo

@pytest.fixture(scope="session")
def fresh_clone_chapters(tmp_path_factory):
    "The learning chain in a copy of the project with no ../shared beside it, GSM8K and tokenizer variables unset, no hub."
    base = tmp_path_factory.mktemp("fresh")
    repo = fresh_copy(base)
    assert not (repo.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k not in FRESH_UNSET}
    env |= {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(repo), "MATHWORKLOG_CACHE": str(base / "cache")}
    errors = execute(list(LEARNING), repo, base / "runs", base / "out", env)
    return base / "runs", errors

def runs_of(root: Path, chapter: str):
    from mathworklog.runs import find_runs
    return find_runs(chapter, "tiny", root=root, status="done")

@pytest.mark.parametrize("nb", NBS, ids=[p.stem for p in NBS])
def test_papermill_tiny(nb, tiny_worklog):
    _, errors = tiny_worklog
    assert errors[nb.stem] is None, errors[nb.stem]

def check_learns(root: Path, sources: set):
    "SFT teaches the format on held-out questions, the buckets move, GRPO's reward rises: from the runs under `root`."
    from mathworklog.settings import get_preset
    sft, grpo = runs_of(root, "sft"), runs_of(root, "grpo")
    assert sft and grpo, f"no finished sft/grpo run under {root}"
    assert {r.meta["data_source"] for r in sft + grpo} <= sources, [r.meta["data_source"] for r in sft + grpo]
    k = get_preset("tiny").k; s = sft[-1].meta["summary"]
    assert s["heldout_format_before"] <= 0.1 and s["heldout_format_after"] >= 0.8, s      # SFT teaches the format, held out
    assert s["loss_last"] < s["loss_first"] / 2, s
    before, after = s["buckets_before"]["strict"], s["buckets_after"]["strict"]
    assert before[f"0/{k}"] == s["n_train"] and after[f"1…{k-1}"] > 0, (before, after)   # questions leave 0/k after SFT
    assert s["n_rl"] > 0
    g = grpo[-1].meta["summary"]
    assert g["reward_last"] > g["reward_first"], g                                       # GRPO learns
    assert {"entropy_first", "entropy_last", "zero_signal_first", "zero_signal_last"} <= set(g), g

def test_tiny_worklog_learns(tiny_worklog):
    "The whole tiny worklog of this checkout, with whatever GSM8K this machine has (CI: ../shared's)."
    runs, errors = tiny_worklog
    assert not any(errors[s] for s in LEARNING), {s: errors[s] for s in LEARNING}
    check_learns(runs, {"hub", "bundled", os.environ.get("MATHWORKLOG_GSM8K")})

def test_fresh_clone_learns(fresh_clone_chapters):
    "What a new user's first command runs, with nothing beside the clone: the bundled problems must teach the format."
    runs, errors = fresh_clone_chapters
    assert not any(errors.values()), errors
    check_learns(runs, {"bundled"})
