"""A worker for tests/test_reliability.py's launch() test: it starts a helper in its own session (as torchrun's workers
do), records its pids, and on SIGTERM records whether the launch's arguments file still existed; then it waits."""
import json, os, signal, subprocess, sys, time

def wait(out: str, secs: float = 120):
    args = sys.argv[2]                                   # mathworklog-launch module:function args.json result.json
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    def on_term(*a):
        with open(f"{out}/term.json", "w") as f: json.dump(dict(pid=os.getpid(), args_exists=os.path.exists(args)), f)
        os._exit(0)
    signal.signal(signal.SIGTERM, on_term)
    with open(f"{out}/pid.json.tmp", "w") as f:
        json.dump(dict(pid=os.getpid(), ppid=os.getppid(), helper=helper.pid, args=args), f)
    os.replace(f"{out}/pid.json.tmp", f"{out}/pid.json")
    time.sleep(secs)
    return {}
