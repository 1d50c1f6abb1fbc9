"""Tests that need vLLM itself, on a GPU box (`bash bench/gpu_run.sh vllm-tests`); skipped where vLLM is not installed.

They run on the Qwen2.5-0.5B-shaped random model (`model_path("shaped")`) over the real tokenizer, each engine
in-process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`, what TRL's colocate mode does) and closed before the next starts.
Measured figures (greedy agreement, log-prob gaps) are printed and, when `$VLLM_TEST_REPORT` names a file, merged
into it as JSON; assertions are on behaviour and tolerances, never on time."""
import json, os
import pytest, torch
vllm = pytest.importorskip("vllm")
pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not torch.cuda.is_available(), reason="vLLM's engine needs a GPU")]

from mathworklog.models import load_tokenizer, model_path
from mathworklog.data import load_gsm8k, prepare, render_prompt
from mathworklog.engines import HFGenerator, VLLMGenerator, stop_ids

def report(**kw):
    "Print measured figures and merge them into $VLLM_TEST_REPORT."
    print(json.dumps(kw))
    p = os.environ.get("VLLM_TEST_REPORT")
    if p:
        d = json.loads(open(p).read()) if os.path.exists(p) else {}
        d.update(kw); open(p, "w").write(json.dumps(d, indent=2))

@pytest.fixture(scope="module")
def tok(): return load_tokenizer(preset="gpu")           # Qwen2.5's: the fallback BPE is refused here

@pytest.fixture(scope="module")
def shaped(tok): return model_path("shaped", tok, "gpu")

@pytest.fixture(scope="module")
def prompts(tok): return [render_prompt(tok, r["question"]) for r in load_gsm8k("test", n=32, preset="gpu")]

def engine(path, tok, dtype="float32", **kw):
    return VLLMGenerator(path, tok, dtype=dtype, gpu_memory_utilization=0.25, enforce_eager=True, in_process=True,
                         max_model_len=1024, **kw)

def test_vllm_generator_samples_stops_and_keeps_order(shaped, tok, prompts):
    with engine(shaped, tok, dtype="bfloat16", request_seeds=True) as g:
        out = g.generate(prompts, n=3, temperature=1.0, max_new_tokens=48, seed=0)
        assert [len(t) for t in out.texts] == [3] * len(prompts)
        assert out.n_tokens > 0 and out.tokens_per_s > 0
        again = g.generate(prompts, n=3, temperature=1.0, max_new_tokens=48, seed=0)
        assert again.texts == out.texts                                  # per-prompt seeds: reproducible
        rev = g.generate(prompts[::-1], n=1, temperature=0.0, max_new_tokens=24)
        fwd = g.generate(prompts, n=1, temperature=0.0, max_new_tokens=24)
        assert rev.texts[::-1] == fwd.texts                                # outputs come back in prompt order
        # stop at <|im_end|>: a prompt that ends with an assistant turn whose first token we force is not possible on a
        # random model, so check that nothing after a stop id is ever returned: ask for ids and look
        from vllm import SamplingParams
        ids = tok(prompts[:8], add_special_tokens=False)["input_ids"]
        im_end = tok.convert_tokens_to_ids("<|im_end|>")
        r = g.llm.generate([{"prompt_token_ids": x} for x in ids], SamplingParams(n=4, temperature=1.0, max_tokens=64, seed=1,
                           stop_token_ids=[im_end], detokenize=False, logit_bias={im_end: 8.0}), use_tqdm=False)
        comps = [list(o.token_ids) for q in r for o in q.outputs]
        stopped = [c for c in comps if im_end in c]
        assert stopped and all(c.index(im_end) == len(c) - 1 for c in stopped)  # the stop token ends it
        report(vllm_generator=dict(stopped_early=len(stopped), of=len(comps)))

def test_vllm_greedy_equals_hf_generate_fp32(shaped, tok, prompts):
    from transformers import AutoModelForCausalLM
    hf_model = AutoModelForCausalLM.from_pretrained(shaped, dtype=torch.float32).cuda().eval()
    hf = HFGenerator(hf_model, tok, batch_size=32, fast=False).generate(prompts, n=1, temperature=0.0, max_new_tokens=32).texts
    del hf_model; torch.cuda.empty_cache()
    with engine(shaped, tok) as g: v = g.generate(prompts, n=1, temperature=0.0, max_new_tokens=32).texts
    same = sum(a == b for a, b in zip(hf, v)) / len(hf)
    report(greedy_identical_fp32=dict(share=same, prompts=len(hf), new_tokens=32))
    assert same >= 0.75, f"vLLM and HF greedy agree on only {same:.0%} of prompts in fp32"

def test_generator_pool_of_vllm_engines(shaped, tok, prompts):
    "Chapter 04's pool: two engines in two worker processes on the one GPU give one engine's greedy texts, in prompt order."
    from mathworklog.engines import GeneratorPool
    with engine(shaped, tok) as g: one = g.generate(prompts, n=1, temperature=0.0, max_new_tokens=24)
    with GeneratorPool(shaped, tok, "vllm", engines=2, dtype="float32", gpu_memory_utilization=0.5, enforce_eager=True,
                       max_model_len=1024) as pool:
        two = pool.generate(prompts, n=1, temperature=0.0, max_new_tokens=24)
        sampled = pool.generate(prompts, n=2, temperature=1.0, max_new_tokens=24)
    same = sum(a == b for a, b in zip(one.texts, two.texts)) / len(prompts)
    report(generator_pool=dict(engines=2, greedy_same_as_one_engine=same, prompts=len(prompts)))
    assert same >= 0.9 and [len(t) for t in sampled.texts] == [2] * len(prompts)

def test_vllm_copy_logprobs_match_hf(shaped, tok):
    from transformers import AutoModelForCausalLM
    from mathworklog.engines import VLLMCopy, token_logprobs
from mathworklog.weights import probe_batch
    ids, mask, keep = probe_batch(tok, prepare(load_gsm8k("test", n=8, preset="gpu")))
    gaps = {}
    for dtype in (torch.float32, torch.bfloat16):
        m = AutoModelForCausalLM.from_pretrained(shaped, dtype=dtype).cuda().eval()
        hf = token_logprobs(m, ids.cuda(), mask.cuda(), keep).cpu(); del m; torch.cuda.empty_cache()
        with engine(shaped, tok, dtype=str(dtype).removeprefix("torch.")) as g:
            v = VLLMCopy(g.llm).logprobs(ids, mask, keep)
        n = mask[:, -keep:].sum()
        gaps[str(dtype).removeprefix("torch.")] = dict(mean=float((hf - v).abs().sum() / n), max=float((hf - v).abs().max()))
    report(vllm_copy_logprob_gap=gaps)
    assert gaps["float32"]["mean"] < 1e-3 and gaps["bfloat16"]["mean"] < 5e-2

def test_vllm_pack_tensors_chunks_like_the_standin(shaped):
    """vLLM's `pack_tensors` chunks TRL's iterator exactly as the stand-in does, and vLLM's producer (CUDA side streams) ->
    `LoopbackGroup` -> consumer delivers the same chunks and bytes, unpatched and under the stream-ordered clone fix.
    (On 2026-12-04 this failed once on the box, in a run without the real tokenizer; the cause was not shown. Re-run with
    it, it passed: 0 of 290 tensors differed.)"""
    from mathworklog.weights import (patch_trl_lora_sync, receive, receive_through_vllm, standin_pack_tensors,
                                 lora_model, trl_named_params, vllm_pack_tensors)
    pm = lora_model(shaped, r=8, scale=0.02)
    for buf in (1 << 30, 300 << 20):
        a, wa = receive(trl_named_params(pm), buf, pack=standin_pack_tensors)
        b, wb = receive(trl_named_params(pm), buf, pack=vllm_pack_tensors)
        c, wc = receive_through_vllm(pm, buf)                    # vLLM's producer -> LoopbackGroup -> consumer, CUDA streams
        assert wa == wb == wc and list(a) == list(b) == list(c)
        differ = [n for n in a if not (torch.equal(a[n], b[n]) and torch.equal(a[n], c[n]))]
        assert not differ, f"{len(differ)} of {len(a)} tensors differ at a {buf >> 20} MiB buffer, e.g. {differ[:3]}"
        with patch_trl_lora_sync("clone"):
            a2, wa2 = receive(trl_named_params(pm), buf, pack=standin_pack_tensors)
            c2, wc2 = receive_through_vllm(pm, buf)
        assert wa2 == wc2 == wa and all(torch.equal(a2[n], c2[n]) for n in a2)
    report(pack_tensors=dict(chunks_1GiB=max(receive(trl_named_params(pm), 1 << 30)[1].values()) + 1, tensors=len(a)))

def test_sync_bug_in_a_real_engine(shaped, tok):
    "The reproduction end to end: TRL's generator through vLLM's transport into a real engine, read back from vLLM's weights."
    from mathworklog.weights import SyncPatch, patch_trl_lora_sync, lora_model
from mathworklog.engines import VLLMCopy
from mathworklog.sync import arrival_table
    pm = lora_model(shaped, r=8, scale=0.02)
    with engine(shaped, tok) as g:
        copy, rows = VLLMCopy(g.llm), {}
        for mode in (None, "clone", "out_of_place"):
            with (patch_trl_lora_sync(mode) if mode else SyncPatch(None)): copy.sync(pm)
            t = arrival_table(pm, copy.weights(), copy.where)
            rows[mode or "unpatched"] = dict(chunks=len(copy.chunks), stuck=int((t.fraction < 0.5).sum()), of=len(t),
                                             mean_fraction=float(t.fraction.mean()))
    report(sync_bug_real_engine_fp32=rows)
    assert rows["unpatched"]["chunks"] == 2 and rows["unpatched"]["stuck"] > 0
    assert rows["clone"]["stuck"] == rows["out_of_place"]["stuck"] == 0
    assert abs(rows["clone"]["mean_fraction"] - 1) < 1e-3

def test_grpo_colocate_two_steps(shaped, tmp_path):
    "Two GRPO steps with TRL's colocated vLLM engine, recorded like any run (run it last: TRL's colocate engine stays)."
    import pandas as pd
    from mathworklog.runs import read_metrics
from mathworklog.grpo import train_grpo
    recs = prepare(load_gsm8k("train", n=8, preset="gpu"))
    run_dir = tmp_path / "grpo-colocate"; run_dir.mkdir()
    r = train_grpo(model_path=shaped, records=recs, run_dir=str(run_dir), steps=2, prompts_per_step=2, num_generations=4,
                   max_completion_length=32, lora_r=8, rollout="colocate", save_steps=10**6, gpu_memory_utilization=0.25)
    assert r["steps"] == 2
    m = read_metrics(run_dir)
    assert {"sampling/sampling_logp_difference/mean", "sampling/importance_sampling_ratio/mean"} <= set(m.columns)
    assert len(pd.read_parquet(run_dir / "rollouts.parquet")) == 2 * 2 * 4
    report(grpo_colocate=dict(steps=2, logp_difference=m["sampling/sampling_logp_difference/mean"].dropna().tolist(),
                              is_ratio=m["sampling/importance_sampling_ratio/mean"].dropna().tolist()))
