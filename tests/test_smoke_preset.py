"""The gpu and full presets' code paths on a CPU, at tiny size (issue 42, item 0): no GPU has been lent for rounds while
the layout changed under them. The `smoke` preset has gpu's switches (Qwen2.5's tokenizer and GSM8K's own files, a
student built as gpu builds its own: the learning start) at TINY_DIMS, and needs no GPU.

Covered: the real tokenizer ($MATHWORKLOG_TOKENIZER, which conftest points at ../shared when it is there) or the
offline fallback (only with MATHWORKLOG_ALLOW_BUNDLED=1); GSM8K from a folder ($MATHWORKLOG_GSM8K) or the bundled
problems (only with MATHWORKLOG_ALLOW_BUNDLED=1); the hub-style loaders with a hub id and no hub (the library's own
errors); the learning start, built by the box's runner `bench/gpu_run.sh` (GPU_RUN_PRESET=smoke) as on the H200; and
chapter 07's library path, `grpo.train_grpo` with `chapter_settings` of the smoke preset from that start, through TRL's
colocated vLLM engine (vLLM's CPU backend) and without it. The whole chapter 07 notebook is not run here: it runs seven
GRPO runs, each in a process of its own, plus a presample-sized control (minutes on two cores)."""
import json, math, os, subprocess, sys
from pathlib import Path
import pytest, torch

from mathworklog.data import GSM8K_SIZES, load_gsm8k, prepare, preset_tokenizer, render_prompt, require_gsm8k
from mathworklog.files import data_dir
from mathworklog.models import fallback_tokenizer, load_model, load_tokenizer, model_from, model_path, vocab_rows
from mathworklog.settings import PRESETS, TINY_DIMS, MissingResourceError, get_preset, require_gpu

ROOT = Path(__file__).resolve().parents[1]
GPU = torch.cuda.is_available()
HUB_ID = "Qwen/Qwen2.5-0.5B-Instruct"
SHARED_TOKENIZER = os.environ.get("MATHWORKLOG_TOKENIZER")   # ../shared's copy (conftest), else unset
SHARED_GSM8K = os.environ.get("MATHWORKLOG_GSM8K")


@pytest.fixture
def offline(monkeypatch):
    "No hub, nothing bundled allowed unless a test says so."
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("MATHWORKLOG_ALLOW_BUNDLED", raising=False)
    return monkeypatch


def test_smoke_preset_has_gpus_switches():
    "smoke reads what gpu reads (Qwen2.5's vocabulary, GSM8K, no world) at the tiny shape, and needs no GPU."
    S, G = get_preset("smoke"), get_preset("gpu")
    assert (S.real_tokenizer, S.vocab_size, S.world) == (G.real_tokenizer, G.vocab_size, G.world) == (True, None, None)
    assert not S.needs_gpu and S.tiny_dims == TINY_DIMS and S.model == "learning-start-smoke"
    require_gpu(S)                                                           # no error on a CPU
    if not GPU:
        for name in ("gpu", "full"):
            with pytest.raises(MissingResourceError, match="needs a CUDA GPU"): model_path("shaped", preset=name)


def test_real_tokenizer_or_the_fallback_only_when_allowed(offline):
    """Qwen2.5's tokenizer from $MATHWORKLOG_TOKENIZER; without it and without the hub, a refusal unless bundled is
    allowed."""
    if SHARED_TOKENIZER:
        tok = preset_tokenizer("smoke")
        assert vocab_rows(tok) == 151_936 and tok.eos_token == "<|im_end|>" and tok.padding_side == "left"
    offline.delenv("MATHWORKLOG_TOKENIZER", raising=False)
    with pytest.raises(MissingResourceError, match="MATHWORKLOG_ALLOW_BUNDLED=1"): preset_tokenizer("smoke")
    offline.setenv("MATHWORKLOG_ALLOW_BUNDLED", "1")
    tok = preset_tokenizer("smoke")
    assert len(tok) <= 4096 and tok.eos_token == "<|im_end|>"
    assert render_prompt(tok, "What is 2 + 3?").endswith("<|im_start|>assistant\n")


def test_gsm8k_from_a_folder_or_bundled_only_when_allowed(offline, tmp_path):
    "GSM8K's own files from $MATHWORKLOG_GSM8K; without them and without the hub, the bundled ones only when allowed."
    if SHARED_GSM8K:
        assert [len(load_gsm8k(s, preset="smoke")) for s in ("train", "test")] == list(GSM8K_SIZES.values())
    rows = [json.loads(l) for l in (data_dir()/"test.jsonl").read_text().splitlines()[:3]]
    for split in ("train", "test"):
        (tmp_path/f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    offline.setenv("MATHWORKLOG_GSM8K", str(tmp_path))
    assert require_gsm8k("smoke") == str(tmp_path) and len(prepare(load_gsm8k("test", preset="smoke"))) == 3
    offline.delenv("MATHWORKLOG_GSM8K")
    with pytest.raises(MissingResourceError, match="needs GSM8K"): load_gsm8k("test", n=2, preset="smoke")
    offline.setenv("MATHWORKLOG_ALLOW_BUNDLED", "1")
    assert require_gsm8k("smoke") == "bundled" and len(prepare(load_gsm8k("test", n=2, preset="smoke"))) == 2


def test_hub_ids_without_the_hub_fail_with_the_librarys_errors(offline, tmp_path):
    "A hub id while the hub is unreachable: each loader says what is missing and how to provide it."
    offline.setenv("MATHWORKLOG_CACHE", str(tmp_path))                    # no learning start built here
    for load in (lambda: model_path(HUB_ID, preset="smoke"), lambda: model_from(HUB_ID, preset="smoke"),
                 lambda: load_model(HUB_ID), lambda: model_path(get_preset("smoke").model, preset="smoke")):
        with pytest.raises(MissingResourceError, match="is not here.*hub is unreachable"): load()
    with pytest.raises(FileNotFoundError, match="is not a local folder, and the hub is unreachable"):
        load_tokenizer(HUB_ID)
    offline.setenv("MATHWORKLOG_ALLOW_CPU", "1")                         # past full's GPU check: the model is missing
    with pytest.raises(MissingResourceError, match="is not here"): model_path(PRESETS["full"].model, preset="full")


# ---------------------------------------------------------------------------------------------------------------------
# The learning start through the box's runner, then chapter 07's library path from it

LEARNING_START = ("bench:learning_start:--max-steps,2,--every,2,--batch,2,--heldout,2,--max-new,8,--n-train,4,"
                  "--eval-n,2@300")


def smoke_env(tmp: Path) -> dict:
    """The variables a smoke run reads: the real tokenizer and GSM8K where ../shared has them, else the fallback
    tokenizer's folder and the bundled problems' folder (gpu_run.sh wants both as folders); a cache and runs of its
    own."""
    env = dict(HF_HUB_OFFLINE="1", MATHWORKLOG_CACHE=str(tmp/"cache"), MATHWORKLOG_RUNS=str(tmp/"runs"),
               MATHWORKLOG_TOKENIZER=SHARED_TOKENIZER or fallback_tokenizer().name_or_path,
               MATHWORKLOG_GSM8K=SHARED_GSM8K or str(data_dir()))
    return env


@pytest.fixture(scope="module")
def smoke_start(tmp_path_factory):
    "`bash bench/gpu_run.sh bench:learning_start:…` with GPU_RUN_PRESET=smoke: (environment, work folder, its rc)."
    tmp = tmp_path_factory.mktemp("smoke")
    env = smoke_env(tmp)
    full = dict(os.environ, **env, GPU_RUN_PRESET="smoke", OUT=str(tmp/"out"), GPU_RUN_WORK=str(tmp/"work"),
                PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", DEADLINE="400")
    p = subprocess.run(["bash", "bench/gpu_run.sh", LEARNING_START], cwd=ROOT, env=full, capture_output=True,
                       text=True, timeout=600)
    return env, tmp/"work", p


def test_learning_start_through_the_box_runner(smoke_start):
    """gpu_run.sh runs the learning start as on the H200 (the gpu preset's student): a model over the preset's
    tokenizer at TINY_DIMS, saved where `model_path('learning-start-smoke')` looks."""
    env, work, p = smoke_start
    summary = (work/"summary.txt").read_text()
    assert p.returncode == 0 and "learning_start rc=0" in summary, (p.stdout[-3000:], p.stderr[-3000:])
    assert "trl 1." in (work/"versions.txt").read_text()
    ls = json.loads((work/"learning_start.json").read_text())["learning_start"]
    start = Path(env["MATHWORKLOG_CACHE"])/"learning-start-smoke"
    assert ls["steps"] == 2 and Path(ls["model_dir"]) == start and math.isfinite(ls["last_loss"]), ls
    cfg = json.loads((start/"config.json").read_text())
    assert {k: cfg[k] for k in ("hidden_size", "num_hidden_layers")} == {k: TINY_DIMS[k] for k in
                                                                         ("hidden_size", "num_hidden_layers")}
    assert cfg["vocab_size"] == vocab_rows(load_tokenizer(env["MATHWORKLOG_TOKENIZER"]))


@pytest.fixture
def smoke_world(smoke_start, monkeypatch):
    "This process reads what the runner wrote: the same tokenizer, GSM8K, cache and runs."
    env, _, p = smoke_start
    if p.returncode != 0:
        pytest.skip("the learning start did not build (see test_learning_start_through_the_box_runner)")
    for k, v in env.items(): monkeypatch.setenv(k, v)
    return env


@pytest.mark.vllm
def test_grpo_chapter_path_through_colocated_vllm(smoke_world, tmp_path):
    """Chapter 07's first story run on the smoke preset, from the learning start: TRL's colocated vLLM (the CPU
    backend), bf16 weights, the server's transport, no sync fix; evaluated through the engine before and after."""
    pytest.importorskip("vllm")
    from mathworklog.grpo import chapter_settings, train_grpo
    from mathworklog.runs import read_metrics
    from mathworklog.trace import start_model
    P = get_preset("smoke")
    base = start_model("smoke")
    assert Path(base).name == "learning-start-smoke"
    train, test = (prepare(load_gsm8k(s, n=n, preset="smoke")) for s, n in (("train", P.n_train), ("test", P.n_test)))
    s = chapter_settings("results_sft", P, None)
    r = train_grpo(model_path=base, records=train, run_dir=str(tmp_path/"grpo"), settings=s.to_dict(),
                   eval_records=test)
    assert (r["steps"], r["rollout"], r["sync_fix"]) == (P.row_steps, "colocate", False), r
    assert r["start_eval_vllm"]["n_questions"] == r["final_eval_vllm"]["n_questions"] == P.n_test
    # the policy itself, scored through the same engine after one sync with the fix (`grpo.policy_eval`)
    assert r["final_eval"]["n_questions"] == P.n_test and (tmp_path/"grpo"/"eval"/"final-greedy.jsonl").exists(), r
    m = read_metrics(tmp_path/"grpo")
    for k in ("sampling/sampling_logp_difference/mean", "sampling/importance_sampling_ratio/mean", "sync/mismatch"):
        assert m[k].notna().any(), (k, list(m.columns))


@pytest.mark.bench                  # the HF path of train_grpo runs on every commit in tests/test_grpo.py (tiny preset)
def test_grpo_chapter_path_without_vllm(smoke_world, tmp_path):
    "Chapter 07's run without vLLM on the smoke preset: the policy samples its own rollouts, scored at start and end."
    from mathworklog.grpo import chapter_settings, train_grpo
    from mathworklog.trace import start_model
    P = get_preset("smoke")
    train, test = (prepare(load_gsm8k(s, n=n, preset="smoke")) for s, n in (("train", P.n_train), ("test", P.n_test)))
    r = train_grpo(model_path=start_model("smoke"), records=train, run_dir=str(tmp_path/"grpo"),
                   settings=chapter_settings("results_no_vllm", P, None).to_dict(), eval_records=test)
    assert (r["steps"], r["rollout"]) == (P.row_steps, "hf") and r["final_eval"]["n_questions"] == P.n_test, r
    assert r["model_dir"] and any(Path(r["model_dir"]).iterdir()), r                 # the run saved its model/


@pytest.mark.bench
@pytest.mark.slow
@pytest.mark.vllm
def test_chapter_07_notebook_on_the_smoke_preset(smoke_world, tmp_path):
    """`papermill nbs/07_grpo.ipynb -p preset smoke` from the learning start: the whole chapter, its seven runs (the
    stronger base is not run: smoke names none), each in a process of its own (five through colocated vLLM), without
    an error."""
    pytest.importorskip("vllm")
    pytest.importorskip("papermill")
    out = tmp_path/"07_grpo.smoke.ipynb"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
    p = subprocess.run([sys.executable, "-m", "papermill", "-k", "python3", "--cwd", "nbs", "nbs/07_grpo.ipynb",
                        str(out), "-p", "preset", "smoke"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    cells = json.loads(out.read_text())["cells"]
    assert not [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    from mathworklog.runs import find_runs
    assert len(find_runs("grpo", "smoke")) >= 5
