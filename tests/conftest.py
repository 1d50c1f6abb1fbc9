import os, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
# point at ../shared's copies when they exist (CI has them) unless MATHWORKLOG_NO_SHARED=1 (a fresh clone's view);
# otherwise the code falls back by itself
if os.environ.get("MATHWORKLOG_NO_SHARED") == "1": SHARED = ROOT / "no-shared"
if (SHARED / "qwen2.5-tokenizer").exists():
    os.environ.setdefault("MATHWORKLOG_TOKENIZER", str(SHARED / "qwen2.5-tokenizer"))
if (SHARED / "gsm8k").exists(): os.environ.setdefault("MATHWORKLOG_GSM8K", str(SHARED / "gsm8k"))
if "MATHWORKLOG_RUNS" not in os.environ:   # the tests' runs, in a folder of their own that goes when pytest exits
    _RUNS = tempfile.TemporaryDirectory(prefix="mwl-runs-")
    os.environ["MATHWORKLOG_RUNS"] = _RUNS.name
# see core.cpu_threads: 2 threads per process on 2 busy cores thrash
os.environ.setdefault("MATHWORKLOG_CPU_THREADS", "1")
from mathworklog.settings import cpu_threads
cpu_threads()
