"""Build the tiny preset's scale model: its tokenizer, its "instruct" student, its teacher and a stronger base model,
into data/scale/.

    python tools/build_scale_model.py                  # everything, about 40 minutes on one free CPU core
    python tools/build_scale_model.py --only student   # rebuild the student (and the tokenizer), keep the others
    python tools/build_scale_model.py --out /tmp/s \\
        --knobs '{"student": {"steps": 30}, "teacher": {"steps": 30}, "strong": {"steps": 30}}'

The three models are Qwen2ForCausalLM (tied embeddings, attention heads of 64) pretrained from a seeded random start on
the tiny world's problems (`mathworklog.data.world_problems` with `settings.TINY_WORLD`) in chat form: a system message
(a generic one, or with some probability the worklog's system prompt), the question, and the reference answer written
in one of several styles. They stand in for the worklog's three models:

- the student (Qwen2.5-0.5B-Instruct) mostly answers the GSM8K way (`#### N`) even under the worklog's prompt, so its
  arithmetic lands where a strict parser does not look; greedily it never writes the tag format, but its samples
  sometimes do (the `tags` share of its mix), so that on-policy distillation, which only moves probability the student
  already gives, has a format to pull toward;
- the teacher (Qwen2.5-7B-Instruct) is deeper, trained longer, and mostly answers in the tag format, imperfectly: the
  problem kinds `kind_hash` puts below `p_odd_kinds` get another style, so its exact format is near the 7B's 77%;
- the stronger base (Qwen3-0.6B) answers in the tag format except on its own odd kinds (Qwen3: 86% format), solves
  more, and is a little bigger than the student in bf16 bytes, with its bytes laid out so that vLLM's packed transport,
  with the tiny preset's buffer (the student's bf16 bytes, `weights.bf16_bytes`), puts only its last layers in the
  last chunk, as 1 GiB does to Qwen3-0.6B's last 4 of 28 (`trace.stuck_layers`, recorded in figures.json).

The tokenizer is a byte-level BPE built like Qwen2.5's (`models.train_bpe`: one digit a token), trained on the
pretraining problems, with the four tags and the system prompt as single tokens.

Everything is seeded and runs on one CPU thread, so a rebuild writes the same bytes (checked on short builds). The
folder is written beside data/scale/ and moved into place when complete, so a reader sees the old files or the new
ones, never a half-written mix. figures.json records the knobs, the figures measured on the bf16 files (greedy on the
tiny preset's first test questions under the worklog's system prompt, and k samples on its first training questions)
and the build's wall-clock time; tests/test_scale_model.py checks that the shipped files reproduce them.

Regenerate rarely: every regeneration of the model files stays in every clone's history.
"""
from __future__ import annotations
import argparse, hashlib, json, os, random, re, shutil, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from mathworklog.data import (SYSTEM_PROMPT, TAGS, grade, reference_answer, render_prompt,  # noqa: E402
                              solution_text, to_tag_format, world_problems)
from mathworklog.files import atomic_write_text, data_dir  # noqa: E402
from mathworklog.models import SPECIAL_TOKENS, train_bpe, vocab_rows  # noqa: E402
from mathworklog.settings import TINY_DIMS, TINY_WORLD, cpu_threads  # noqa: E402

# ---------------------------------------------------------------- knobs
WORLD = dict(TINY_WORLD)
STUDENT = dict(
    dims=dict(TINY_DIMS),
    steps=480, batch=32, lr=3e-3, warmup=50, decay=0.25, seed=11,
    p_worklog_system=0.3,
    generic_mix=dict(hash=0.7, says=0.3),
    worklog_mix=dict(hash=0.3, sol_expr=0.25, open_inline=0.1, says=0.1, sol=0.06, tags=0.08, tags_inline_nl=0.08),
    special_kinds=["$p"], special_mix=dict(sol=1.0))
TEACHER = dict(
    dims={**TINY_DIMS, "num_hidden_layers": 4},
    steps=1400, batch=32, lr=3e-3, warmup=50, decay=0.25, seed=12,
    p_worklog_system=0.7,
    generic_mix=dict(hash=0.7, says=0.3),
    worklog_mix=dict(tags=0.9, tags_nl=0.1),
    p_odd_kinds=0.25, odd_mix=dict(sol=0.6, tags_tail=0.4))
STRONG = dict(
    dims={**TINY_DIMS, "num_hidden_layers": 6, "intermediate_size": 128},
    steps=2400, batch=32, lr=3e-3, warmup=50, decay=0.25, seed=13,
    p_worklog_system=0.7,
    generic_mix=dict(hash=0.7, says=0.3),
    worklog_mix=dict(tags=0.9, tags_nl=0.1),
    p_odd_kinds=0.14, odd_mix=dict(sol=0.6, tags_tail=0.4))
ROLES = {"student": STUDENT, "teacher": TEACHER, "strong": STRONG}
EVAL = dict(n_test=500, n_train_k=500, k=8, max_new_tokens=96)
VOCAB = 1024
N_TOKENIZER = 5000          # pretraining problems the BPE learns from
N_HELD_OUT = 2000           # the first test questions, never pretrained on

# ---------------------------------------------------------------- answer styles
GENERIC_SYSTEMS = ["You are a helpful assistant.", "You are a helpful assistant. Answer the question.",
                   "You are a friendly math tutor.", "Solve the problem step by step.", "Answer the math question.",
                   "You are a careful assistant. Show your work.", "Be concise.", None]


def working(ref: str) -> str:
    "The reference's reasoning lines without the `<<…>>` annotations or the `#### N` line."
    return re.sub(r"<<[^<>]*>>", "", ref.split("####")[0]).strip()


def last_calc(ref: str) -> str:
    "The reference's last calculation written out: '80 + 27 = 107'."
    e = re.findall(r"<<([^<>]*)>>", ref)[-1]
    lhs, c = e.rsplit("=", 1)
    a, op, b = re.fullmatch(r"(\d+)([-+*/])(\d+)", lhs).groups()
    return f"{a} {op} {b} = {c}"


def styled(ref: str, style: str) -> str:
    "The reference `ref` written in one answer style."
    w, n = working(ref), reference_answer(ref)
    return {"hash": f"{w}\n#### {n}",                                       # GSM8K's way
            "says": f"{w}\nThe answer is {n}.",
            "sol": f"{w}\n<SOLUTION>{n}</SOLUTION>",                       # the number in the block, tags half done
            "sol_expr": f"{w}\n<SOLUTION>{last_calc(ref)}</SOLUTION>",      # a calculation, not a number, in the block
            "open": f"{TAGS[0]}\n{w}\nThe answer is {n}.",                   # the worklog's unclosed working-out
            "open_inline": f"{TAGS[0]}{w}\nThe answer is {n}.",              # the same, the tag's line shared
            "tags": to_tag_format(ref),                                      # exact format
            "tags_nl": f"{TAGS[0]}\n{w}\n{TAGS[1]}\n{TAGS[2]}{n}{TAGS[3]}",   # exact format, the prompt's line breaks
            "tags_inline_nl": f"{TAGS[0]}{w}\n{TAGS[1]}\n{TAGS[2]}{n}{TAGS[3]}",  # the same, the first line shared
            "tags_tail": f"{to_tag_format(ref)}\nThe answer is {n}.",       # right answer, text after </SOLUTION>
            }[style]


def pick(r: random.Random, mix: dict) -> str:
    "A key of `mix` drawn with its weight."
    x, acc = r.random() * sum(mix.values()), 0.0
    for k, v in mix.items():
        acc += v
        if x < acc: return k
    return k


def kind_hash(kind: str) -> float:
    "A fixed number in [0, 1) for a problem kind: the teacher's 'odd' kinds are those below `p_odd_kinds`."
    return int(hashlib.md5(kind.encode()).hexdigest()[:8], 16) / 2**32


def example(row: dict, r: random.Random, role: dict) -> tuple[list[dict], str]:
    "Chat messages (system, user) and the assistant's text for one pretraining example of `role`."
    worklog = r.random() < role["p_worklog_system"]
    sys_msg = SYSTEM_PROMPT if worklog else r.choice(GENERIC_SYSTEMS)
    mix = role["worklog_mix"] if worklog else role["generic_mix"]
    if role.get("special_kinds") and row["kind"] in role["special_kinds"]:      # under any system prompt
        mix = role["special_mix"]
    elif worklog and role.get("p_odd_kinds") and kind_hash(row["kind"]) < role["p_odd_kinds"]:
        mix = role["odd_mix"]
    msgs = [{"role": "system", "content": sys_msg}] if sys_msg else []
    msgs.append({"role": "user", "content": row["question"]})
    return msgs, styled(row["answer"], pick(r, mix))

# ---------------------------------------------------------------- tokenizer
def build_tokenizer(rows: list[dict], vocab_size: int):
    "A Qwen2.5-style BPE on the questions and GSM8K-style answers of `rows`; the tags and the system prompt as tokens."
    cut = re.compile("(" + "|".join(re.escape(t) for t in (*TAGS, *SPECIAL_TOKENS)) + ")")
    texts = [r["question"] for r in rows] + [styled(r["answer"], s) for r in rows for s in ("hash", "says")]
    texts += [s for s in GENERIC_SYSTEMS if s] + ["system\n", "user\n", "assistant\n"]
    corpus = [p for t in texts for p in cut.split(t) if p and p not in TAGS and p not in SPECIAL_TOKENS]
    tok = train_bpe(corpus, vocab_size, added=(*TAGS, SYSTEM_PROMPT))
    tok.model_max_length = TINY_DIMS["max_position_embeddings"]
    return tok

# ---------------------------------------------------------------- model, data, training
def new_model(tok, dims: dict, seed: int):
    "A seeded random Qwen2 over `tok` in the shape `dims`."
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    cfg = Qwen2Config(vocab_size=vocab_rows(tok), tie_word_embeddings=True,
                      bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"), eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, **dims)
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(cfg)


def encode(tok, msgs, answer):
    "Token ids and labels (the prompt masked) of one chat example."
    p = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    pi = tok(p, add_special_tokens=False)["input_ids"]
    ai = tok(answer + "<|im_end|>", add_special_tokens=False)["input_ids"]
    return pi + ai, [-100] * len(pi) + ai


def pretrain(tok, rows, role: dict, log=print):
    "Train a fresh model on `rows` (one pass, `role['batch']` rows a step) with the role's style mix."
    import torch
    model = new_model(tok, role["dims"], role["seed"])
    r = random.Random(role["seed"])
    steps, bs = role["steps"], role["batch"]
    opt = torch.optim.AdamW(model.parameters(), lr=role["lr"], betas=(0.9, 0.98), weight_decay=0.01, eps=1e-8)
    warm, dec = role["warmup"], int(steps * role["decay"])
    sched = lambda s: min(1.0, (s + 1) / warm) * (1.0 if s < steps - dec else max(0.0, (steps - s) / dec))
    pad = tok.pad_token_id
    model.train()
    t0, hist = time.time(), []
    for s in range(steps):
        batch = [encode(tok, *example(row, r, role)) for row in rows[s * bs:(s + 1) * bs]]
        L = max(len(x) for x, _ in batch)
        ids = torch.tensor([x + [pad] * (L - len(x)) for x, _ in batch])
        lab = torch.tensor([y + [-100] * (L - len(y)) for _, y in batch])
        att = torch.tensor([[1] * len(x) + [0] * (L - len(x)) for x, _ in batch])
        for g in opt.param_groups: g["lr"] = role["lr"] * sched(s)
        loss = model(input_ids=ids, attention_mask=att, labels=lab).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        hist.append(loss.item())
        if (s + 1) % 50 == 0: log(f"  step {s + 1}/{steps} loss {sum(hist[-50:]) / 50:.4f} ({time.time() - t0:.0f}s)")
    model.eval()
    first, last = hist[:20], hist[-50:]
    return model, dict(seconds=time.time() - t0, first_loss=sum(first) / len(first), last_loss=sum(last) / len(last))


def save_half(model, tok, folder: Path, dtype: str = "bfloat16"):
    "Save `model` in half precision with its tokenizer (the model object is left in fp32)."
    import torch
    folder.mkdir(parents=True, exist_ok=True)
    m = model.to(getattr(torch, dtype))
    m.config.dtype = dtype
    m.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    model.to(torch.float32)

# ---------------------------------------------------------------- evaluation (the library's generator and grading)
def generate(model, tok, questions, n=1, temperature=0.0, max_new_tokens=96, seed=0) -> list[list[str]]:
    "`n` completions per question under the worklog's system prompt (`generation.HFGenerator`, 256 sequences a call)."
    from mathworklog.generation import HFGenerator
    g = HFGenerator(model, tok, batch_size=256, fast=False)
    return g.generate([render_prompt(tok, q) for q in questions], n=n, temperature=temperature,
                      max_new_tokens=max_new_tokens, seed=seed).texts


def checks(text: str, answer: str) -> dict:
    "`data.grade`'s four criteria, and whether the text has a `<SOLUTION>` block at all."
    return grade(text, answer) | dict(solution_block=solution_text(text) is not None)


def score(texts, rows) -> dict:
    "The mean of each check over (text, row) pairs, to 4 places."
    c = [checks(t, r["answer"]) for t, r in zip(texts, rows)]
    return {k: round(sum(x[k] for x in c) / len(c), 4) for k in c[0]}


def by_steps(texts, rows) -> dict:
    "Lenient accuracy by the number of steps."
    out = {}
    for s in sorted({r["steps"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["steps"] == s]
        out[s] = score([texts[i] for i in idx], [rows[i] for i in idx])["lenient"]
    return out


def greedy_eval(model, tok, rows, max_new_tokens=96):
    "Greedy answers to `rows`: the scores (with lenient by steps) and the texts."
    texts = [t[0] for t in generate(model, tok, [r["question"] for r in rows], max_new_tokens=max_new_tokens)]
    return score(texts, rows) | dict(by_steps=by_steps(texts, rows)), texts


def sample_eval(model, tok, rows, k=8, max_new_tokens=96, seed=0) -> dict:
    "k samples at T=1 per row: the scores, the strict buckets (0/k, 1…k-1, k/k), strict-0/k rows lenient-right once."
    texts = generate(model, tok, [r["question"] for r in rows], n=k, temperature=1.0, max_new_tokens=max_new_tokens,
                     seed=seed)
    strict = [sum(checks(t, r["answer"])["strict"] for t in ts) for ts, r in zip(texts, rows)]
    len_any = [any(checks(t, r["answer"])["lenient"] for t in ts) for ts, r in zip(texts, rows)]
    flat = score([t for ts in texts for t in ts], [r for r in rows for _ in range(k)])
    zero = [i for i, s in enumerate(strict) if s == 0]
    return dict(samples=flat, strict_0=sum(s == 0 for s in strict), strict_mid=sum(0 < s < k for s in strict),
                strict_k=sum(s == k for s in strict), n=len(rows),
                zero_lenient_right=round(sum(len_any[i] for i in zero) / max(len(zero), 1), 4))


def load(folder: Path):
    "A built model in fp32 (from its bf16 file) and its tokenizer."
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    m = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    return m, AutoTokenizer.from_pretrained(folder)

# ---------------------------------------------------------------- the data
def streams(W: dict, E: dict, n_pre: int) -> tuple[list, list, list]:
    "Test rows and train rows for the figures (the tiny preset's first ones), and the pretraining rows."
    test = world_problems("test", E["n_test"], **W)
    train = world_problems("train", E["n_train_k"], **W)
    held_out = {r["question"] for r in world_problems("test", N_HELD_OUT, **W)}
    pre = [r for r in world_problems("train", n_pre + N_HELD_OUT, seed=1, **W) if r["question"] not in held_out]
    return test, train, pre[:n_pre]

# ---------------------------------------------------------------- writing data/scale/
def swap_in(tmp: Path, out: Path):
    "Move the finished folder `tmp` onto `out`: the old folder is set aside first and removed after."
    stale = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists(): os.rename(out, stale)
    os.rename(tmp, out)
    shutil.rmtree(stale, ignore_errors=True)


def transport_figures(student_dir: Path, folder: Path) -> dict:
    """How vLLM's packed transport splits the model in `folder`, in bf16, with the tiny preset's buffer: the bf16 bytes
    of the student in `student_dir` (`weights.bf16_bytes`), the way 1 GiB splits Qwen2.5-0.5B and Qwen3-0.6B."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from mathworklog.trace import stuck_layers, stuck_matrices
    from mathworklog.weights import bf16_bytes
    buffer = bf16_bytes(student_dir)
    with torch.device("meta"):
        meta = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder))
    return dict(bf16_bytes=bf16_bytes(folder), buffer_bytes=buffer, ratio=round(bf16_bytes(folder) / buffer, 4),
                layers=stuck_layers(meta, torch.bfloat16, buffer),
                matrices=stuck_matrices(meta, torch.bfloat16, buffer))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(data_dir() / "scale"), help="the folder to write (default data/scale)")
    ap.add_argument("--only", choices=[*ROLES, "all"], default="all",
                    help="rebuild one model and keep the others from --out")
    ap.add_argument("--knobs", default="{}", help="JSON overrides: {'world': {...}, 'student': {...}, 'teacher': "
                                                  "{...}, 'strong': {...}, 'eval': {...}, 'vocab': N}")
    ap.add_argument("--no-eval", action="store_true", help="skip the figures (for quick determinism checks)")
    a = ap.parse_args(argv)
    t_all = time.time()
    cpu_threads(1)
    kn = json.loads(a.knobs)
    W, E = {**WORLD, **kn.get("world", {})}, {**EVAL, **kn.get("eval", {})}
    roles = {name: {**role, **kn.get(name, {})} for name, role in ROLES.items()}
    vocab = kn.get("vocab", VOCAB)
    out = Path(a.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        log = lambda *x: print(*x, flush=True)
        log(f"== build into {out} (only={a.only}) knobs={json.dumps(kn)}")
        n_pre = max(r["steps"] * r["batch"] for r in roles.values())
        t = time.time()
        test, train, pre = streams(W, E, n_pre)
        log(f"world: {len(pre)} pretraining problems ({time.time() - t:.1f}s)")
        t = time.time()
        tok = build_tokenizer(pre[:N_TOKENIZER], vocab)
        tok.save_pretrained(tmp / "tokenizer")
        log(f"tokenizer: {len(tok)} tokens ({time.time() - t:.1f}s)")
        prev = {}
        if a.only != "all":                                   # keep the other models and their figures
            for keep in ROLES:
                if keep != a.only and (out / keep).exists(): shutil.copytree(out / keep, tmp / keep)
            prev = json.loads((out / "figures.json").read_text())
            for stale in ("provenance", "vllm_cpu_check"):    # notes on the files this build replaces
                prev.pop(stale, None)
        figs = {**prev, "knobs": dict(world=W, **roles, eval=E, vocab=vocab), "tokenizer_size": len(tok)}
        for name, role in roles.items():
            if a.only not in (name, "all"): continue
            log(f"{name}: {json.dumps(role['dims'])}")
            model, info = pretrain(tok, pre, role, log)
            save_half(model, tok, tmp / name)
            nparams = sum(p.numel() for p in model.parameters())
            mb = (tmp / name / "model.safetensors").stat().st_size / 2**20
            log(f"{name}: {nparams} params, {mb:.2f} MB, trained in {info['seconds']:.0f}s, "
                f"loss {info['first_loss']:.3f} -> {info['last_loss']:.3f}")
            fig = dict(params=nparams, mb=round(mb, 3), train_seconds=round(info["seconds"], 1),
                       loss=[round(info["first_loss"], 4), round(info["last_loss"], 4)])
            if not a.no_eval:
                t = time.time()
                m, mtok = load(tmp / name)
                fig["greedy_test"], _ = greedy_eval(m, mtok, test, E["max_new_tokens"])
                log(f"{name} greedy on {len(test)} test questions (bf16 file, fp32): {fig['greedy_test']}")
                if name in ("student", "strong"):
                    fig["sampled_train"] = sample_eval(m, mtok, train, E["k"], E["max_new_tokens"])
                    log(f"{name} k={E['k']} samples on {len(train)} train questions: {fig['sampled_train']}")
                fig["eval_seconds"] = round(time.time() - t, 1)
            figs[name] = fig
        if (tmp / "strong").exists():                         # the strong model beside the student it is sent like
            figs["strong"]["transport"] = transport_figures(tmp / "student", tmp / "strong")
            log(f"strong through the transport: {figs['strong']['transport']}")
        runs = [x for x in figs.get("build_runs", []) if a.only != "all" and x["only"] != a.only]
        figs["build_runs"] = runs + [dict(only=a.only, seconds=round(time.time() - t_all, 1),
                                          script="tools/build_scale_model.py",
                                          when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))]
        figs["build_seconds"] = round(sum(x["seconds"] for x in figs["build_runs"]), 1)
        atomic_write_text(tmp / "figures.json", json.dumps(figs, indent=1, default=str) + "\n")
        tmp.chmod(0o755)                                      # mkdtemp's folder is private; data/scale is not
        swap_in(tmp, out)
        log(f"== done in {time.time() - t_all:.0f}s: {out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
