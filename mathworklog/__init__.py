"""A reproducible worklog that post-trains Qwen2.5-0.5B-Instruct on GSM8K in a strict tag format (SFT, OPD, GRPO with TRL + vLLM + LoRA), and the library it exports.

Modules:

- `mathworklog.data`: GSM8K from a local copy, the hub or the bundled problems; the tiny preset's generated world; the worklog's system prompt; and the one place that decides what number a completion gave.
- `mathworklog.engines`: The two things a chapter asks of a model besides training it: *generate* completions, and keep an *inference copy* in step with a policy under training. Written down as two protocols, implemented by HF `generate` (with a fast path) and by vLLM, and chosen by one rule.
- `mathworklog.evaluate`: Greedy answers to GSM8K's test questions, graded four ways: the right number anywhere, the right number inside `<SOLUTION>`, the exact tag format, and both.
- `mathworklog.models`: Tokenizers and models: the real ones when they are here, seeded stand-ins when they are not, and an error that says how to provide a missing one.
- `mathworklog.procs`: Child processes, and everything they start, that die with their owner; and `accelerate launch` for several processes.
- `mathworklog.runs`: A run is a folder: never reused, everything inside carries its id, nothing inside is ever half-written. The trainer callbacks every chapter shares: metrics, the NaN guard, the run stamp, saving, checkpoints.
- `mathworklog.settings`: Presets as data, the worklog's published figures, checked parameters, the LoRA recipe, and the machine: device, precision, threads, seeds.
- `mathworklog.sft`: Supervised fine-tuning on the questions presampling took away from RL, their references rewritten into the tag format: eager attention, fp32 master weights, and a guard that stops at the first NaN.
- `mathworklog.weights`: How TRL hands a LoRA policy's weights to vLLM, the transport vLLM receives them through, the fix for the bug in that handoff, and the probe that watches the two copies during training.
- `mathworklog.worklog`: The published worklog's figures in one table: run, what, value, unit, split, the line of the text it stands on, and whether this project reproduces it. The chapters' "worklog" columns come from here and nowhere else."""

__version__ = "0.1.0"
