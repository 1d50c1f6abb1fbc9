"""tools/setup.sh installs with uv, told pip's configuration by tools/uv_args.py: that translation, checked here (the
install itself runs at the start of every test command from a clean clone)."""
import subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT/"tools"))
from uv_args import uv_args   # noqa: E402


def test_uv_args_translates_pip_config():
    "Indexes split on spaces, files and variables read once each, no-index as a switch, unknown keys left out."
    cfg = ("global.extra-index-url='file:///a/simple file:///b/simple'\n:env:.find-links='/opt/wheels'\n"
           "global.find-links='/opt/wheels'\nglobal.constraint='/etc/c.txt'\nglobal.timeout='180'\n"
           "global.index-url='https://mirror/simple'\nglobal.no-index='false'\n")
    assert uv_args(cfg) == ["--extra-index-url", "file:///a/simple", "--extra-index-url", "file:///b/simple",
                            "--find-links", "/opt/wheels", "--constraint", "/etc/c.txt",
                            "--index-url", "https://mirror/simple"]
    assert uv_args("global.no-index='true'\n:env:.no-index='1'") == ["--no-index"]
    assert uv_args("") == []


def test_uv_args_reads_this_machines_pip():
    "The script runs here and prints flags, each followed by its value (no-index alone)."
    out = subprocess.run([sys.executable, str(ROOT/"tools"/"uv_args.py")], capture_output=True, text=True, check=True)
    args, i = out.stdout.splitlines(), 0
    while i < len(args):
        assert args[i].startswith("--"), args
        i += 1 if args[i] == "--no-index" else 2
