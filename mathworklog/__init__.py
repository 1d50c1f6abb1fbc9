"""A reproducible worklog that post-trains Qwen2.5-0.5B-Instruct on GSM8K in a strict tag format (SFT, OPD, GRPO with TRL + vLLM + LoRA), and the library it exports.

Modules:

- `mathworklog.averaging`: When RL plateaus: average the run's LoRA checkpoints by their full updates (the mean of B·A, never mean B × mean A), presample the average again, and give the questions it still fails to a teacher.
- `mathworklog.data`: GSM8K from a local copy, the hub or the bundled problems; the tiny preset's generated world; the worklog's system prompt; and the one place that decides what number a completion gave.
- `mathworklog.engines`: The two things a chapter asks of a model besides training it: *generate* completions, and keep an *inference copy* in step with a policy under training. Written down as two protocols, implemented by HF `generate` (with a fast path) and by vLLM, and chosen by one rule.
- `mathworklog.evaluate`: Before training anything: the student's greedy answers to the test questions under the worklog's system prompt, graded by the four checks that training will reward.
- `mathworklog.models`: Tokenizers and models: the real ones when they are here, seeded stand-ins when they are not, and an error that says how to provide a missing one.
- `mathworklog.opd`: The student writes its own answers, the teacher scores every token of them, and the student moves toward the teacher under reverse KL, with TRL's `DistillationTrainer`; the teacher's padded vocabulary trimmed to the student's.
- `mathworklog.presample`: Every training question sampled k times before training starts, graded strictly and leniently: the questions GRPO can learn from, the ones it cannot, and the scare a strict count gave.
- `mathworklog.procs`: Child processes, and everything they start, that die with their owner; and `accelerate launch` for several processes.
- `mathworklog.results`: Where the worklog's runs ended, in its final table, with the run of this project that plays each part beside it; every run's held-out figures, read only from what the runs wrote under `runs/`; and the runner that executes the whole worklog and renders it as pages.
- `mathworklog.rewards`: The worklog's first run paid for correctness and format and did not move; its rollout table said why. Here the student's own rollouts tell the same story, and the partial rewards that followed, seven in all, with TRL's signature.
- `mathworklog.runs`: A run is a folder: never reused, everything inside carries its id, nothing inside is ever half-written. The trainer callbacks every chapter shares: metrics, the NaN guard, the run stamp, saving, checkpoints.
- `mathworklog.server`: A real `vllm serve` as a child process the library owns, on loopback; the weight-transfer engine that lets a trainer on a CPU sync into it (a vLLM plugin) and the small patch TRL's client needs for that; the engine's own word on which weights it applies; and the check every GRPO + LoRA + vLLM-server user should run first.
- `mathworklog.server_arms`: Chapter 08's live experiment in the worklog's own setup: an unmodified `GRPOTrainer(vllm_mode="server")` syncing into a real vLLM server through TRL's client, on a CPU as on two GPUs, with the one-sync trace read back from the server.
- `mathworklog.settings`: Presets as data, the worklog's published figures, checked parameters, the LoRA recipe, and the machine: device, precision, threads, seeds.
- `mathworklog.sft`: Supervised fine-tuning on the questions presampling took away from RL, their references rewritten into the tag format: eager attention, fp32 master weights, and a guard that stops at the first NaN.
- `mathworklog.sync`: Chapter 07 ended on a mystery: GRPO through vLLM stays flat while the same GRPO without vLLM learns. Here full fine-tuning stays in sync where LoRA drifts, one sync is traced through TRL's and vLLM's own code into a real vLLM engine, the bug is fixed in one call, and a probe watches the two copies during training.
- `mathworklog.weights`: How TRL hands a LoRA policy's weights to vLLM, the transport vLLM receives them through, the fix for the bug in that handoff, and the probe that watches the two copies during training.
- `mathworklog.worklog`: The published worklog's figures in one table: run, what, value, unit, split, the line of the text it stands on, and whether this project reproduces it. The chapters' "worklog" columns come from here and nowhere else."""

__version__ = "0.1.0"
