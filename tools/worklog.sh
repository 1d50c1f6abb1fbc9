#!/usr/bin/env bash
# Set everything up and run the main job: the whole worklog, every chapter notebook executed by papermill with the
# given preset (default tiny) into runs/, ending with the results table. Usage: bash tools/worklog.sh [preset]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. tools/setup.sh
mathworklog-worklog --preset "${1:-tiny}"
