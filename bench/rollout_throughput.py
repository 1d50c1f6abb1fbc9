"""Rollout throughput of mathworklog's generation path (HFGenerator, fast=True: static KV cache compiled with CUDA graphs)
against plain `model.generate`, measured in the same run, at batch 64 and 512, sampling, stopping at <|im_end|>; and
whether greedy outputs are identical. Prints the ratios and saves bench/results/rollout_throughput.json (or $OUT)."""
import torch
from transformers import AutoModelForCausalLM
from _common import args, device, sync, timed, save
from mathworklog.core import load_tokenizer, model_path
from mathworklog.data import load_gsm8k, render_prompt
from mathworklog.evaluate import HFGenerator, stop_ids

a = args(__doc__, batches=dict(type=int, nargs="+", default=[64, 512]), new=dict(type=int, default=256))
dev = device(); tok = load_tokenizer()
path = model_path("shaped" if a.preset == "gpu" else "tiny", tok, a.preset)
model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16 if dev == "cuda" else torch.float32).to(dev).eval()
qs = load_gsm8k("test", n=max(a.batches))
prompts = [render_prompt(tok, q["question"]) for q in qs]
stops = torch.tensor(stop_ids(tok) + [tok.pad_token_id], device=dev)

def plain(enc, new, sample=True):
    kw = dict(do_sample=True, temperature=1.0, top_k=0, top_p=1.0) if sample else dict(do_sample=False)
    with torch.inference_mode():
        return model.generate(**enc, max_new_tokens=new, eos_token_id=stop_ids(tok), pad_token_id=tok.pad_token_id, **kw)

def n_tokens(out, plen): return int((~torch.isin(out[:, plen:], stops)).sum())

res = {}
for B in a.batches:
    tok.padding_side = "left"
    enc = tok(prompts[:B], return_tensors="pt", padding=True, add_special_tokens=False).to(dev)
    plen = enc["input_ids"].shape[1]
    fast = HFGenerator(model, tok, batch_size=B, fast=True)
    plain(enc, 8)                                                               # warm-up
    sync(); import time; t0 = time.perf_counter(); fast._generate(enc, 1, 1.0, a.new); sync(); compile_s = time.perf_counter() - t0
    tp, op = timed(lambda: plain(enc, a.new)); tf, of = timed(lambda: fast._generate(enc, 1, 1.0, a.new))
    r = dict(prompt_tokens=plen, plain_tok_s=n_tokens(op, plen) / tp, fast_tok_s=n_tokens(of, plen) / tf,
             plain_s=tp, fast_s=tf, first_fast_call_s=compile_s)
    r["ratio"] = r["fast_tok_s"] / r["plain_tok_s"]; res[f"batch_{B}"] = r
    print(f"batch {B}: plain {r['plain_tok_s']:.0f} tok/s, fast {r['fast_tok_s']:.0f} tok/s, ratio {r['ratio']:.2f}x", flush=True)

# greedy: identical outputs?
B = min(a.batches); enc = tok(prompts[:B], return_tensors="pt", padding=True, add_special_tokens=False).to(dev)
g_plain = plain(enc, 64, sample=False); g_fast = HFGenerator(model, tok, batch_size=B, fast=True)._generate(enc, 1, 0.0, 64)
same = [torch.equal(x, y) for x, y in zip(g_plain, g_fast)]
res["greedy_identical"] = sum(same) / len(same)
print(f"greedy outputs identical for {sum(same)}/{len(same)} prompts", flush=True)
save(a, "rollout_throughput", res)
