"""The tiny preset's scale model (issues 31 and 39): the world it was pretrained on, and the shipped files in
data/scale/.

The shipped student, teacher and stronger base must reproduce the figures their build recorded in
data/scale/figures.json: greedy answers (HF `generate`, fp32 weights loaded from the bf16 files, one thread) to the tiny
preset's first 500 test questions under the worklog's system prompt, graded by the library (`evaluate.evaluate_model`,
`data.grade`). The tolerance is zero: the same questions, the same weights and greedy decoding give the same answers,
and every figure is compared as a count of questions. A CPU whose fp32 arithmetic rounds differently could flip a near
tie; if that ever happens the failure names the criterion and both counts. The stronger base's chunking under vLLM's
packed transport (the tiny preset's buffer: the student's bf16 bytes) is recomputed from its config by
`trace.stuck_layers`. About 20 s on one core.
"""
import hashlib, json, os, subprocess, sys
from pathlib import Path
import pytest

from mathworklog.data import (SYSTEM_PROMPT, TAGS, load_gsm8k, prepare, preset_tokenizer, require_gsm8k, solution_text,
                              world_problems)
from mathworklog.models import SCALE_MODELS, load_model, model_path, scale_dir, scale_tokenizer, train_bpe
from mathworklog.settings import PRESETS, TINY_DIMS, TINY_WORLD

ROOT = Path(__file__).resolve().parent.parent
FIGURES = json.loads((ROOT/"data"/"scale"/"figures.json").read_text())
MODELS = ("student", "teacher", "strong")
assert tuple(SCALE_MODELS.values()) == MODELS                       # tiny, tiny-teacher, tiny-strong
LAYERS = {"student": 2, "teacher": 4, "strong": 6}
# sha256 (first 16 hex digits) of json.dumps of the world's first 1,000 train and test problems with TINY_WORLD: the
# data stream the shipped models were pretrained and measured on. A change to the generator that moves these hashes
# makes data/scale/ stale: rebuild it with tools/build_scale_model.py (and update the hashes) in the same change.
WORLD_SHA = {"train": "4899fcba58ce7ed0", "test": "f5b36038052177a6"}

def sha(rows) -> str: return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]

# ---------------------------------------------------------------- the world

def test_world_is_the_one_the_models_were_built_on():
    knobs = FIGURES["knobs"]["world"]
    assert {**knobs, "steps": tuple(knobs["steps"])} == TINY_WORLD == PRESETS["tiny"].world
    assert {s: sha(world_problems(s, 1000)) for s in WORLD_SHA} == WORLD_SHA

def test_world_is_deterministic_across_processes():
    "Another interpreter, another hash seed: the same problems (nothing depends on set order or the process)."
    code = ("import hashlib, json; from mathworklog.data import world_problems\n"
            "print(hashlib.sha256(json.dumps(world_problems('test', 300, seed=3)).encode()).hexdigest()[:16])")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == sha(world_problems("test", 300, seed=3))

def test_tiny_preset_reads_the_world_everywhere(monkeypatch):
    "With or without a GSM8K copy on the machine, the tiny preset's questions are the world's, recorded as 'world'."
    rows = load_gsm8k("test", n=20, preset="tiny")
    monkeypatch.delenv("MATHWORKLOG_GSM8K", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_gsm8k("test", n=20, preset="tiny") == rows == world_problems("test", 20)
    assert require_gsm8k("tiny") == "world"

def test_build_script_knobs_are_the_recorded_ones():
    "tools/build_scale_model.py, as committed, would rebuild these files: its knobs are the ones figures.json records."
    import importlib.util
    spec = importlib.util.spec_from_file_location("build_scale_model", ROOT/"tools"/"build_scale_model.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    rec = FIGURES["knobs"]
    assert (tool.EVAL, tool.VOCAB, tool.WORLD) == (rec["eval"], rec["vocab"], TINY_WORLD)
    assert list(tool.ROLES) == list(MODELS)
    for name, role in tool.ROLES.items():
        assert {k: v for k, v in role.items() if k != "dims"} == {k: v for k, v in rec[name].items() if k != "dims"}
        assert rec[name]["dims"].items() <= role["dims"].items(), name      # the file records the ones that vary

# ---------------------------------------------------------------- the shipped files

def test_sizes_and_half_precision():
    total = sum(f.stat().st_size for f in (ROOT/"data"/"scale").rglob("*") if f.is_file())
    assert total <= 20 * 2**20, f"data/scale is {total / 2**20:.1f} MB (at most 20 MB)"
    for name in MODELS:
        f = scale_dir(name)/"model.safetensors"
        header = json.loads(f.read_bytes()[8:8 + int.from_bytes(f.read_bytes()[:8], "little")])
        assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"BF16"}, name
        assert abs(f.stat().st_size / 2**20 - FIGURES[name]["mb"]) < 0.01

def test_shapes_match_the_preset():
    """The student is TINY_DIMS over the preset's vocabulary; the teacher is the same with four layers; the stronger
    base has six layers with a narrow MLP (most of its bytes before its last layer, as
    `test_strong_model_only_last_layers_stuck` checks)."""
    from transformers import AutoConfig
    want = {k: v for k, v in TINY_DIMS.items() if k != "rope_theta"}
    for name, layers in LAYERS.items():
        cfg = AutoConfig.from_pretrained(scale_dir(name))
        mlp = {"intermediate_size": 128} if name == "strong" else {}
        assert {k: getattr(cfg, k) for k in want} == want | {"num_hidden_layers": layers} | mlp, name
        assert cfg.architectures == ["Qwen2ForCausalLM"] and cfg.tie_word_embeddings, name
        head = cfg.hidden_size // cfg.num_attention_heads             # 64, as Qwen2.5-0.5B's (vLLM's CPU kernel)
        assert (cfg.vocab_size, head, cfg.rope_parameters["rope_theta"]) == (1024, 64, TINY_DIMS["rope_theta"])
    assert PRESETS["tiny"].vocab_size == len(scale_tokenizer()) == 1024

def test_tokenizer_digits_tags_and_prompt():
    tok = preset_tokenizer("tiny")
    assert [len(tok(t)["input_ids"]) for t in TAGS] == [1, 1, 1, 1]
    assert len(tok(SYSTEM_PROMPT)["input_ids"]) == 1
    for text in ["1080 + 27 = 1107", "$1,234.56", "9876543210"] + [p["answer"] for p in world_problems("train", 200)]:
        toks = tok.tokenize(text)
        assert all(len(t) == 1 for t in toks if any(c.isdigit() for c in t)), toks   # one digit a token
        assert tok.decode(tok(text)["input_ids"]) == text
    for name in MODELS:                                      # each model folder carries the same tokenizer
        assert (scale_dir(name)/"tokenizer.json").read_bytes() == (scale_dir("tokenizer")/"tokenizer.json").read_bytes()

def test_models_load_in_fp32_for_training():
    import torch
    m = load_model(model_path("tiny", preset_tokenizer("tiny")), dtype=torch.float32, device="cpu")
    assert {p.dtype for p in m.parameters()} == {torch.float32}
    assert sum(p.numel() for p in m.parameters()) == FIGURES["student"]["params"]
    with pytest.raises(ValueError, match="preset_tokenizer"):      # another tokenizer's ids would be noise to it
        model_path("tiny", train_bpe(["12 apples and 3 pears"] * 8, 300))

# ---------------------------------------------------------------- the figures

@pytest.fixture(scope="module")
def greedy():
    "Greedy answers of the shipped models (by their `SCALE_MODELS` names) to the first `n_test` test questions, graded."
    import torch
    from mathworklog.generation import HFGenerator
    from mathworklog.evaluate import evaluate_model
    tok = preset_tokenizer("tiny")
    recs = prepare(load_gsm8k("test", n=FIGURES["knobs"]["eval"]["n_test"], preset="tiny"))
    out = {}
    for spec, name in SCALE_MODELS.items():
        m = load_model(model_path(spec, tok), dtype=torch.float32, device="cpu").eval()
        df, table = evaluate_model(HFGenerator(m, tok, batch_size=256), tok, recs, n=1, temperature=0.0,
                                   max_new_tokens=FIGURES["knobs"]["eval"]["max_new_tokens"])
        df["solution_block"] = df.completion.map(lambda t: solution_text(t) is not None)
        df["n_steps"] = df.idx.map({r["idx"]: r["n_steps"] for r in recs})
        out[name] = df
    return out

@pytest.mark.parametrize("name", MODELS)
def test_shipped_models_reproduce_their_figures(greedy, name):
    df, fig = greedy[name], FIGURES[name]["greedy_test"]
    n = len(df)
    got = {c: int(df[c].sum()) for c in ("lenient", "strict", "format", "exact", "solution_block")}
    want = {c: round(fig[c] * n) for c in got}
    assert got == want, f"{name}: questions right per criterion, measured {got}, recorded {want} (of {n})"
    by = df.groupby("n_steps").lenient.mean().round(4).to_dict()
    assert {str(k): v for k, v in by.items()} == {str(k): v for k, v in fig["by_steps"].items()}

def test_baseline_is_the_worklogs_first_finding(greedy):
    """The student does some of the math and writes it where a strict parser does not look (lenient 30–40%, format and
    exact near 0); the teacher solves at least twice as many (issue 39) and writes the exact tag format about as often
    as the worklog's 7B (77%)."""
    s, t = greedy["student"], greedy["teacher"]
    assert 0.30 <= s.lenient.mean() <= 0.40 and s.format.mean() <= 0.02 and s.exact.mean() <= 0.02
    assert t.lenient.mean() >= 2 * s.lenient.mean()
    assert 0.72 <= t.format.mean() <= 0.82 and t.exact.mean() < t.strict.mean()

def test_strong_model_is_qwen3s_stand_in(greedy):
    """The stronger base writes the format most of the time (Qwen3-0.6B: 86%) and solves far more than the student: the
    student family's best run in the research prototype (issue 39) stays near 0.33 exact; this one starts above 0.5."""
    s, b = greedy["student"], greedy["strong"]
    assert 0.80 <= b.format.mean() <= 0.92
    assert b.lenient.mean() >= 1.5 * s.lenient.mean() and b.exact.mean() >= 0.5

def test_strong_model_only_last_layers_stuck():
    """Sent through vLLM's packed transport in bf16 with the tiny preset's buffer (the student's bf16 bytes), the
    stronger base falls into two chunks, and the last chunk (the one the unpatched LoRA sync leaves at the base
    weights) holds only its last layer and the tail of the one before, as 1 GiB leaves Qwen3-0.6B's last 4 of 28: it is
    a bit bigger than the student, with most of its bytes before its last layer. Recomputed from the shipped config."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from mathworklog.trace import stuck_layers, stuck_matrices
    from mathworklog.weights import bf16_bytes
    buffer = bf16_bytes(scale_dir("student"))
    with torch.device("meta"):
        meta = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(scale_dir("strong")))
    size = bf16_bytes(scale_dir("strong"))
    got = dict(bf16_bytes=size, buffer_bytes=buffer, ratio=round(size / buffer, 4),
               layers=stuck_layers(meta, torch.bfloat16, buffer),
               matrices=stuck_matrices(meta, torch.bfloat16, buffer))
    assert got == FIGURES["strong"]["transport"]
    L, n = got["layers"], meta.config.num_hidden_layers
    assert 1 < got["ratio"] < 1.5 and L["chunks"] == 2 and not L["everything_stuck"]
    assert L["stuck_layers"] == f"{n - 1}–{n - 1}" and L["partly_stuck"] == str(n - 2)
    assert 0 < got["matrices"]["stale"] <= got["matrices"]["matrices"] // 4
