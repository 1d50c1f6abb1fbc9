#!/usr/bin/env bash
# Set everything up and run the tests: notebooks and modules in sync, notebooks clean, nbdev-test, pytest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
t0=$(date +%s)
. tools/setup.sh
echo "setup: $(( $(date +%s) - t0 )) s"
# tests/test_pages.py opens the worklog's pages in Debian's chromium (120 MB to download, 420 MB installed): installed
# here when missing and apt is usable as root; without it that test skips and says so
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  t1=$(date +%s)
  apt_chromium() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null; }
  if apt_chromium || { apt-get update -q >/dev/null && apt_chromium; }; then echo "chromium: $(( $(date +%s) - t1 )) s"
  else echo "chromium could not be installed: tests/test_pages.py skips"; fi
fi
# the temporary folders this script makes (the tests' own, their runs, the main job's copy and runs: about 200 MB):
# removed when it passes, kept and named when it fails
scratch=()
# vLLM leaves the ZMQ sockets of every engine and its vllm_dist_* files in the temporary folder, and chromium its
# profile (24 sockets, 2 files and 2 folders a run): the tests' temporary folder is one of these, so they go with it.
# torch's compile cache stays where it was
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-${TMPDIR:-/tmp}/torchinductor_$(id -un)}
scratch+=("$(mktemp -d)"); export TMPDIR=${scratch[-1]}
if [ -z "${MATHWORKLOG_RUNS:-}" ]; then scratch+=("$(mktemp -d)"); export MATHWORKLOG_RUNS=${scratch[-1]}/runs; fi
# Everything here shares the cores, and a process on several OpenMP threads (torch's, vLLM's CPU engine's) spin-waits
# for a thread that is not running. In the main job beside the tests, chapter 05 (two torch threads) took 493 s against
# 55-80 s alone; 05 alone under two busy loops had not finished after 500 s, and took 108 s with waiting threads asleep
# (OMP_WAIT_POLICY=PASSIVE), its weights identical to the bit (one thread: 108 s, but other weights). A policy only:
# no result changes with it
export OMP_WAIT_POLICY=PASSIVE
# the main job as a fresh clone runs it (tests/main_job.py, what tests/test_notebooks.py asserts on) starts now, in its
# own session, so its 9 minutes overlap the checks and the other tests; it is stopped with this script however it ends
export MATHWORKLOG_TEST_MAIN_JOB=$(mktemp -d)
scratch+=("$MATHWORKLOG_TEST_MAIN_JOB")
setsid python tests/main_job.py "$MATHWORKLOG_TEST_MAIN_JOB" > "$MATHWORKLOG_TEST_MAIN_JOB/log" 2>&1 &
main_job=$!
finish() {
  local rc=$?
  kill -- -"$main_job" 2>/dev/null || true
  wait "$main_job" 2>/dev/null || true
  if [ "$rc" = 0 ]; then rm -rf "${scratch[@]}"; else echo "kept for a look: ${scratch[*]}"; fi
}
trap finish EXIT
echo "== the exported modules match the notebooks"
nbdev-export
git diff --exit-code --stat -- mathworklog || { echo "mathworklog/ is out of sync with nbs/: run nbdev-export and commit"; exit 1; }
echo "== the notebooks are clean"
nbdev-clean
git diff --exit-code --stat -- nbs || { echo "nbs/ is not clean: run nbdev-clean and commit"; exit 1; }
echo "== the README is generated from nbs/index.ipynb"
python tools/readme.py --check
echo "== nbdev-test (every notebook, preset tiny)"
nbdev-test --n-workers 2 --timing
echo "== pytest"
python -m pytest -q tests/ -m "not gpu and not bench" -p no:cacheprovider --durations=15 --ignore=tests/test_notebooks.py
# the slower smoke runs, marked bench (every bench script's --preset tiny run in tests/test_bench.py, the smoke preset's
# longer paths in tests/test_smoke_preset.py: worker processes and vLLM engines, 4-8 minutes on two busy cores): with
# MATHWORKLOG_TEST_BENCH=1, or on their own: pytest -m bench tests/test_bench.py tests/test_smoke_preset.py
if [ "${MATHWORKLOG_TEST_BENCH:-0}" = 1 ]; then
  echo "== pytest: the slower smoke runs ($(( $(date +%s) - t0 )) s so far)"
  python -m pytest -q tests/test_bench.py tests/test_smoke_preset.py -m bench -p no:cacheprovider --durations=12
fi
echo "== pytest: the main job's chapters (waits for it: $(( $(date +%s) - t0 )) s so far)"
python -m pytest -q tests/test_notebooks.py -p no:cacheprovider --durations=5
echo "total: $(( $(date +%s) - t0 )) s"
