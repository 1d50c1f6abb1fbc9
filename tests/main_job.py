"""The README's main job as a fresh clone runs it: `mathworklog-worklog --preset tiny` in a copy of the project with
nothing beside it (no ../shared), the variables that point at ../shared unset and the hub offline, into a runs folder
of its own. `tests/test_notebooks.py` asserts each chapter's threshold on what it leaves.

`python tests/main_job.py DIR` runs it into DIR and writes DIR/result.json when it ends, however it ends. tools/test.sh
starts it that way in the background, so that the time it takes overlaps the other tests, and points
`MATHWORKLOG_TEST_MAIN_JOB` at DIR: the fixture then waits for that result instead of running the job a second time.
Without the variable the fixture runs the job itself."""
import json, os, shutil, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRESH_UNSET = ("MATHWORKLOG_GSM8K", "MATHWORKLOG_TOKENIZER", "MATHWORKLOG_MODEL_DIR", "MATHWORKLOG_ALLOW_BUNDLED",
               "MATHWORKLOG_CACHE")
TIMEOUT = 3600   # a guard against a job that hangs, not a time target: sharing 2 cores with the other tests, the job
                 # took longer than 30 minutes on 2026-12-05 (alone: 1,255 s), so the guard is one hour (CI allows 90)


def fresh_copy(dest: Path) -> Path:
    "The project's files as a clone has them (tracked, and untracked but not ignored) copied to `dest/repo`."
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    repo = dest / "repo"
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (repo / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, repo / f)
    return repo


def fresh_env(repo: Path, tmp: Path) -> dict:
    "A fresh clone's environment: the variables that point at ../shared unset, no hub, its own cache and runs."
    env = {k: v for k, v in os.environ.items() if k not in FRESH_UNSET}
    return env | {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(repo), "MATHWORKLOG_CACHE": str(tmp / "cache"),
                  "MATHWORKLOG_RUNS": str(tmp / "runs")}


def run_main_job(tmp: Path) -> dict:
    "Run the main job in a fresh copy under `tmp`; its result (returncode, stdout, stderr, runs) also in result.json."
    tmp = Path(tmp)
    res = dict(returncode=None, stdout="", stderr="", runs=str(tmp / "runs"))
    try:
        repo = fresh_copy(tmp)
        assert not (repo.parent / "shared").exists()
        p = subprocess.run([sys.executable, "-c", "from mathworklog.runner import worklog_main; worklog_main()",
                            "--preset", "tiny"], cwd=repo, env=fresh_env(repo, tmp), capture_output=True, text=True,
                           timeout=TIMEOUT)
        res |= dict(returncode=p.returncode, stdout=p.stdout, stderr=p.stderr)
    except BaseException as e:                    # an interrupt or a timeout still leaves a result to read
        res |= dict(returncode=-1, stderr=f"{type(e).__name__}: {e}")
        raise
    finally:
        part = tmp / "result.json.part"
        part.write_text(json.dumps(res))
        os.replace(part, tmp / "result.json")
    return res


def wait_for_main_job(tmp: Path, timeout: float = TIMEOUT + 60) -> dict:
    "The result of a main job started with `python tests/main_job.py tmp`, once it has ended."
    end, path = time.monotonic() + timeout, Path(tmp) / "result.json"
    while not path.exists():
        if time.monotonic() > end: raise TimeoutError(f"no {path} after {timeout} s: the main job did not end")
        time.sleep(2)
    return json.loads(path.read_text())


if __name__ == "__main__": sys.exit(0 if run_main_job(Path(sys.argv[1]))["returncode"] == 0 else 1)
