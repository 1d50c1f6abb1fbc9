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
export MATHWORKLOG_RUNS=${MATHWORKLOG_RUNS:-$(mktemp -d)/runs}
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
python -m pytest -q tests/ -m "not gpu" -p no:cacheprovider --durations=15
echo "total: $(( $(date +%s) - t0 )) s"
