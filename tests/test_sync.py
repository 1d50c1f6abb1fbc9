"""Chapter 08's reproduction on a real vLLM engine (the CPU backend here, a GPU where there is one): TRL's own
`_iter_named_params` → vLLM's packed producer → loopback group → packed consumer → the engine's layerwise
reload, with a buffer that chunks the tiny model the way vLLM's 1 GiB chunks Qwen2.5-0.5B (`trace.matching_buffer`).
Skipped where vLLM is not installed."""
import weakref
import pytest, torch
pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

from mathworklog import generation, trace
from mathworklog.data import load_gsm8k, prepare, preset_tokenizer
from mathworklog.models import model_path
from mathworklog.trace import engine_reproduction, engine_reproductions, matching_buffer
from mathworklog.weights import lora_model, probe_batch, trl_named_params


@pytest.fixture(scope="module")
def setup():
    tok = preset_tokenizer("tiny")
    path = model_path("tiny", tok, "tiny")
    probe = probe_batch(tok, prepare(load_gsm8k("test", n=8, preset="tiny")), max_tokens=32)
    return path, tok, probe, matching_buffer(trl_named_params(lora_model(path)))


def test_fp32_unpatched_leaves_the_last_chunk_at_base_and_the_fixes_send_the_merged_model(setup, monkeypatch):
    path, tok, probe, buf = setup
    engines, gone = [], []                    # whether the engine is collected when it is closed (chapter 08 starts a
    own_engine, own_release = trace.probe_engine, generation.release_vllm    # second one next: a GPU needs the memory)
    def probe_engine(*a, **kw):
        g = own_engine(*a, **kw)
        engines.append(weakref.ref(g.llm))
        return g
    def release_vllm():
        own_release()
        gone.append([e() is None for e in engines])
    monkeypatch.setattr(trace, "probe_engine", probe_engine)
    monkeypatch.setattr(generation, "release_vllm", release_vllm)
    rows, chunks = engine_reproduction(path, tok, torch.float32, buf, probe)
    assert gone == [[True]], gone
    r, c = rows.set_index("sync"), chunks.set_index(["sync", "chunk"])
    assert r.chunks.tolist() == [2, 2, 2]
    assert c.loc[("unpatched", 0), "fraction"] == pytest.approx(1, abs=1e-4)   # closed by the buffer: merged
    assert c.loc[("unpatched", 1), "fraction"] == pytest.approx(0, abs=1e-4)   # closed by the iterator's end: base
    assert c.loc[("unpatched", 1), "stuck"] == c.loc[("unpatched", 1), "lora_matrices"] > 0
    u = r.loc["unpatched"]
    assert min(u.vs_merged, u.vs_base) > 10 * u.floor                          # the engine holds neither model
    for fix in ("clone", "out_of_place"):
        f = r.loc[fix]
        assert f.stuck == 0 and c.loc[fix].fraction.tolist() == pytest.approx([1, 1], abs=1e-4)
        assert f.vs_merged <= 10 * f.floor + 1e-5 < f.vs_base / 10             # the merged model, to rounding


def test_bf16_is_one_chunk_and_unpatched_the_engine_keeps_the_base_model(setup, tmp_path):
    "In a child process, as on a GPU (`apart`): the engine's output goes to the log, its tables come back."
    path, tok, probe, buf = setup
    ids, mask, keep = probe                                  # the three tensors, as chapter 08 passes them, still work
    rows, chunks = engine_reproductions(path, tok, (torch.bfloat16,), buf, ids, mask, keep,
                                        modes=(None, "out_of_place"), apart=True, log=tmp_path/"engines.log")
    assert "Loading weights" in (tmp_path/"engines.log").read_text() and rows.dtype.tolist() == ["bfloat16"] * 2
    r = rows.set_index("sync")
    assert r.chunks.tolist() == [1, 1]
    u, f = r.loc["unpatched"], r.loc["out_of_place"]
    assert u.stuck == u.lora_matrices and abs(chunks.fraction.iloc[0]) < 1e-2  # none of the update arrives
    assert u.vs_base < u.vs_merged / 10
    assert f.stuck == 0 and f.vs_merged < f.vs_base / 10
