"""Shared set-up for the benchmarks: the preset's model over the real tokenizer, GSM8K prompts, timing, JSON output; and
the worker processes several benchmarks run their measurements in (a fresh process per variant, engine, arm or
configuration).

A worker is a command (usually the script itself with a worker flag) in its own process tree
(`mathworklog.procs.OwnedProcess`: the tree dies with this process, and `kill` stops all of it, vLLM's engine processes
included). It talks back through a pipe of its own (its descriptor in $BENCH_WORKER_FD) with
`mathworklog.pool.send_msg` (length-prefixed pickles, the protocol of `GeneratorPool`'s workers), so that nothing
it prints can garble a message; all it prints goes to its log. In the worker: `talk = worker_pipe()`, then
`tell(talk, kind, payload)`; or `answer(fn, *args)` for a worker with one result."""
import argparse, json, os, signal, statistics, subprocess, sys, tempfile, threading, time
from pathlib import Path


def args(desc, **extra):
    "The common command line (--preset, --out) and `extra`'s options, parsed."
    p = argparse.ArgumentParser(description=desc)
    p.add_argument("--preset", default="gpu", help="gpu: the Qwen2.5-0.5B-shaped random model; tiny: a CPU smoke run")
    p.add_argument("--out", default=os.environ.get("OUT", "bench/results"))
    for k, v in extra.items():
        p.add_argument(f"--{k}", **v)
    return p.parse_args()


def preset_model(preset: str) -> tuple:
    """(tokenizer, model folder) a benchmark of `preset` runs on: the preset's own student over the preset's tokenizer
    (`data.preset_tokenizer`: tiny reads the scale model's), except that a preset over Qwen2.5's vocabulary (gpu, full,
    smoke) measures its random model of the preset's shape ('shaped'), which needs no learning start."""
    from mathworklog.data import preset_tokenizer
    from mathworklog.models import model_path
    from mathworklog.settings import get_preset
    P, tok = get_preset(preset), preset_tokenizer(preset)
    return tok, model_path("shaped" if P.real_tokenizer else P.model, tok, preset)


def device():
    "cuda when a GPU is visible, else cpu."
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def sync():
    "Wait for the GPU's queued work (a no-op on the CPU)."
    import torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn, repeat=2):
    "Median wall time of `repeat` calls (after the caller's warm-up), synchronising the device around each."
    ts, out = [], None
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def save(a, name, result, quiet=False):
    "Write `result` with the device, torch version and preset to `<a.out>/<name>.json` (atomically); print it."
    import torch
    from mathworklog.files import atomic_write_text
    result = dict(result, device=torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
                  torch=torch.__version__, preset=a.preset)
    atomic_write_text(Path(a.out)/f"{name}.json", json.dumps(result, indent=2, default=str))
    if not quiet:
        print(json.dumps(result, indent=2, default=str))
    return result


# ---------------------------------------------------------------------------------------------------------------------
# The worker's side

WORKER_FD = "BENCH_WORKER_FD"


def worker_pipe():
    "In a worker: the pipe to the parent (its descriptor in $BENCH_WORKER_FD); the worker exits with its parent."
    from mathworklog.procs import die_with_parent
    fd = int(os.environ.pop(WORKER_FD))              # popped: the processes it starts are not workers of ours
    os.set_inheritable(fd, False)
    die_with_parent()
    return os.fdopen(fd, "wb")


def tell(talk, kind: str, payload):
    "Send the parent one `(kind, payload)` message."
    from mathworklog.pool import send_msg
    send_msg(talk, (kind, payload))


def answer(fn, *a):
    "In a worker: run `fn(*a)` and send its value as the one `result` message."
    talk = worker_pipe()
    tell(talk, "result", fn(*a))


# ---------------------------------------------------------------------------------------------------------------------
# The parent's side

LIVE = set()                                     # workers running now: killed with their trees when we are stopped
STOPPING = threading.Event()                     # set when we are stopped: no worker starts after that


class Worker:
    "`argv` in its own process tree; its messages collected as they come, its output in `log` (None: a temporary file)."
    def __init__(self, argv: list, log=None, env=None):
        "Start the worker (refused once we are stopping) and the thread that reads its messages."
        from mathworklog.procs import OwnedProcess
        if STOPPING.is_set():
            raise RuntimeError("stopping: no new worker")
        self.log = open(log, "w+b") if log else tempfile.TemporaryFile()
        self.messages, self.timed_out, self.killed_at, self.seconds = [], False, None, None
        self.t0 = time.perf_counter()
        r, w = os.pipe()
        try:
            self.owned = OwnedProcess([str(x) for x in argv], grace=0, stdin=subprocess.DEVNULL, stdout=self.log,
                                      stderr=subprocess.STDOUT, pass_fds=(w,),
                                      env=dict(env or os.environ, **{WORKER_FD: str(w)}))
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)                              # the worker holds the only writing end: EOF when its tree is gone
        self.pipe = os.fdopen(r, "rb")
        LIVE.add(self)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        "Collect the worker's messages until its pipe closes."
        from mathworklog.pool import recv_msg
        while (m := recv_msg(self.pipe)) is not None:
            self.messages.append(m)

    def wait(self, limit: float|None = None) -> "Worker":
        "Until the worker exits, or `limit` s at most: then its whole tree is killed (`timed_out`, `killed_at`)."
        try:
            self.owned.proc.wait(timeout=None if limit is None else max(limit, 1))
        except subprocess.TimeoutExpired:
            self.timed_out, self.killed_at = True, time.time()
        finally:
            self.kill()                          # also after a clean exit: nothing it started outlives it
        self.reader.join()
        self.pipe.close()
        self.seconds = round(time.perf_counter() - self.t0, 1)
        return self

    def kill(self):
        "Stop the worker's whole tree at once (SIGKILL)."
        self.owned.kill(0)
        LIVE.discard(self)

    @property
    def rc(self):
        "The worker's exit code (negative: the signal that ended it), None while it runs."
        return self.owned.proc.returncode

    def got(self, kind: str) -> list:
        "The payloads of the worker's `kind` messages, in order."
        return [p for k, p in self.messages if k == kind]

    def tail(self, n: int = 3000) -> str:
        "The last `n` characters of what the worker printed."
        self.log.flush()
        fd = self.log.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")[-n:]


def run_worker(argv: list, limit: float|None = None, log=None, env=None) -> Worker:
    "Run a worker to its end, or until `limit` s have passed (then its tree is killed)."
    return Worker(argv, log, env).wait(limit)


def one_result(argv: list, limit: float|None = None, log=None, env=None) -> dict:
    "A worker's one `result` (see `answer`); else `dict(error=why, log_tail=the last it printed)`."
    w = run_worker(argv, limit, log, env)
    got = w.got("result")
    if got and w.rc == 0:
        return got[-1]
    return dict(error=f"cut off at {limit:.0f} s" if w.timed_out else f"exit code {w.rc}", log_tail=w.tail())


def kill_workers_on_stop(*signals):
    "On `signals` (default TERM and INT): no new worker, every live worker's tree killed, exit 128 + the signal."
    for s in signals or (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, _stop)


def _stop(signum, frame):
    "The signal handler of `kill_workers_on_stop`."
    STOPPING.set()
    for w in list(LIVE):
        w.kill()
    sys.exit(128 + signum)
