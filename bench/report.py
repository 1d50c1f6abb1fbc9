"""How the bench scripts' JSON reads: one renderer per JSON, registered with the script that writes it. The renderers
live in the package (`mathworklog.reports`, notebook 01h_reports), so that the README and the chapters read the same
figures the same way without reaching into bench/; this file keeps the command line and the old import path.

    python bench/report.py [folder]      # the markdown of every bench JSON in folder (default bench/h200)"""
import sys
from mathworklog.reports import *                                                    # noqa: F401,F403
from mathworklog.reports import RENDERERS, grpo_controls, grpo_learns_rows, grpo_part_gaps, measured_markdown  # noqa

if __name__ == "__main__": print(measured_markdown(sys.argv[1] if len(sys.argv) > 1 else "bench/h200"))
