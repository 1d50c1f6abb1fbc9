"Tests that need vLLM itself: skipped where it is not installed (CI's CPU machines); run them on a GPU box."
import pytest, torch
vllm = pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

def test_vllm_pack_tensors_shows_the_bug_and_the_fix():
    "The sync-bug reproduction against vLLM's own pack_tensors instead of the stand-in."
    from mathworklog.core import load_tokenizer, model_path
    from mathworklog.sync import (tiny_lora_model, trl_named_params, receive, arrival_table, patch_trl_lora_sync,
                                  vllm_pack_tensors)
    pm = tiny_lora_model(model_path("tiny", load_tokenizer()))
    total = sum(t.numel() * t.element_size() for _, t in list(trl_named_params(pm)))
    un = arrival_table(pm, *receive(trl_named_params(pm), total // 3, pack=vllm_pack_tensors))
    assert (un[un.chunk == un.chunk.max()].fraction.abs() < 1e-6).all()
    with patch_trl_lora_sync():
        pa = arrival_table(pm, *receive(trl_named_params(pm), total // 3, pack=vllm_pack_tensors))
    assert ((pa.fraction - 1).abs() < 1e-4).all()

@pytest.mark.skipif(not torch.cuda.is_available(), reason="vLLM's LLM needs a GPU")
def test_vllm_generator_matches_interface():
    from mathworklog.core import load_tokenizer, model_path
    from mathworklog.evaluate import VLLMGenerator
    tok = load_tokenizer()
    g = VLLMGenerator(model_path("tiny", tok), tok, gpu_memory_utilization=0.2)
    out = g.generate(["<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"] * 2, n=3, temperature=1.0, max_new_tokens=8, seed=0)
    assert [len(t) for t in out.texts] == [3, 3]

@pytest.mark.skipif(not torch.cuda.is_available(), reason="vLLM's LLM needs a GPU")
def test_vllm_copy_matches_trainer_logprobs():
    "The probe's vLLM side: prompt log-probs of a freshly loaded model equal the HF model's, token for token."
    from vllm import LLM
    from transformers import AutoModelForCausalLM
    from mathworklog.core import load_tokenizer, model_path
    from mathworklog.data import load_gsm8k, prepare
    from mathworklog.sync import VLLMCopy, probe_batch, token_logprobs
    tok = load_tokenizer(); path = model_path("tiny", tok)
    ids, mask, keep = probe_batch(tok, prepare(load_gsm8k("test", n=8)), max_tokens=32)
    hf = token_logprobs(AutoModelForCausalLM.from_pretrained(path).cuda(), ids.cuda(), mask.cuda(), keep).cpu()
    v = VLLMCopy(LLM(model=path, dtype="float32", gpu_memory_utilization=0.2)).logprobs(ids, mask, keep)
    assert (hf - v).abs().mean() < 1e-3
