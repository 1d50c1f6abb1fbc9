"""A reproducible worklog that post-trains Qwen2.5-0.5B-Instruct on GSM8K in a strict tag format (SFT, OPD, GRPO with TRL + vLLM + LoRA), and the library it exports.

Modules:

- `mathworklog.averaging`: When RL plateaus: run it to its plateau with a checkpoint every few steps, average the checkpoints by their full LoRA updates, presample the average again, give the questions it still fails to a teacher, and run RL after each.
- `mathworklog.boundaries`: Every place the library reads from outside itself, what it expects there, and what happens when it is not so: a table, and `check_boundaries`, which looks at all of them on this machine.
- `mathworklog.chain`: Chapters read each other's runs. This runs a set of chapter notebooks through papermill in the order their reads allow, two at a time where they are independent, each in a process the caller owns; and it lets a chapter run alone by running, first, the chapters whose runs it needs.
- `mathworklog.check`: The check every GRPO + LoRA + vLLM-server user should run first: one LoRA update pushed through TRL's own client into a running server, and which tensors arrived (`mathworklog-check-sync`).
- `mathworklog.cli`: The package's commands: each asks first, in a fraction of a second, whether what it needs is here, and only then imports the library that does the work.
- `mathworklog.copies`: A second copy of a policy that samples while the policy trains, and follows each update: an HF model refreshed in place from the merged weights (`RolloutCopy`), or an in-process vLLM engine (`VLLMCopy`) refreshed through vLLM's own reload.
- `mathworklog.data`: GSM8K from a local copy, the hub or the bundled problems, or the tiny preset's world; the worklog's system prompt; and the one place that decides what number a completion gave.
- `mathworklog.evaluate`: Before training anything: the student's greedy answers to the test questions under the worklog's system prompt, graded by the four checks that training will reward.
- `mathworklog.findings`: What the worklog claimed, what this project measured, and whether the claim holds here: one record per claim, computed from a run, written into the run's `meta.json`, said in the chapter, and gathered into the table that opens the README, chapter 10 and the pages.
- `mathworklog.generation`: Prompts in, completions out: one `Generator` interface, implemented by transformers' `generate` (with a fast path) and by vLLM's offline engine, and one rule for which to use. `pool` builds them, one or many.
- `mathworklog.grpo`: The worklog's GRPO recipe on TRL's `GRPOTrainer` (LoRA, DAPO loss, seven rewards, vLLM or HF rollouts), and six rows of its final table run from their starts: through unpatched vLLM in bf16 and fp32, without vLLM, a stronger base.
- `mathworklog.models`: Tokenizers and models: the real ones when they are here, seeded stand-ins when they are not, and an error that says how to provide a missing one.
- `mathworklog.opd`: The student writes its own answers, the teacher scores every token of them, and the student moves toward the teacher under reverse KL, with TRL's `DistillationTrainer`; the teacher's padded vocabulary trimmed to the student's.
- `mathworklog.pool`: The door every chapter goes through to generate: `make_generator` builds one generator (HF or vLLM, by the one "auto" rule) or a pool of them in worker processes, and `generating` closes it after the block.
- `mathworklog.presample`: Every training question sampled k times before training starts, graded strictly and leniently: the questions GRPO can learn from, the ones it cannot, and the scare a strict count gave.
- `mathworklog.procs`: Child processes, and everything they start, that die with their owner; and `accelerate launch` for several processes.
- `mathworklog.reports`: How the bench scripts' JSON reads, for the README and the chapters: one renderer per JSON file, registered with the script that writes it, and `measured_markdown` joining them in order.
- `mathworklog.results`: Where the worklog's runs ended, in its final table, with the run of this project that plays each part beside it; each of its lessons as a paired comparison on the same held-out questions; and every chapter's claims, put to the test, in one table.
- `mathworklog.rewards`: The worklog's first run paid for correctness and format and did not move; its rollout table said why. Here the student's own rollouts tell the same story, and the partial rewards that followed, seven in all, with TRL's signature.
- `mathworklog.rollouts`: Rollout parts joined, later steps set aside on resume, the worklog's panels and the first-and-last summary: what the chapters, the results table and the tests read from a GRPO run folder, with no trainer loaded.
- `mathworklog.runner`: The whole worklog in one command: every chapter through papermill, two at a time where they do not read each other's runs, into one `worklog-…` run folder, then the executed chapters as HTML pages.
- `mathworklog.runs`: A run is a folder: never reused, everything inside carries its id, nothing inside is ever half-written. The trainer callbacks every chapter shares: metrics, the NaN guard, the run stamp, saving, checkpoints.
- `mathworklog.server`: A real `vllm serve` as a child process the library owns, on loopback, with the `gloo` weight transfer and the RL routes; what it serves, read back.
- `mathworklog.server_arms`: Chapter 08's live experiment in the worklog's own setup: an unmodified `GRPOTrainer(vllm_mode="server")` syncing into a real vLLM server through TRL's client, on a CPU as on two GPUs, with the one-sync trace read back from the server.
- `mathworklog.settings`: Presets as data, the chapter and engine names, checked parameters, the LoRA recipe, and the machine: device, precision, threads, seeds.
- `mathworklog.sft`: Supervised fine-tuning on the questions presampling took away from RL, their references rewritten into the tag format: eager attention, fp32 master weights, and a guard that stops at the first NaN.
- `mathworklog.stats`: Two runs scored on the same held-out questions: the difference in points with a 95% interval, paired question by question (a bootstrap over questions, and McNemar's exact test on the questions where they disagree).
- `mathworklog.sync`: GRPO from one start in six arms (fp32 and bf16 LoRA, unpatched and with each fix, and full fine-tuning), the probe after every sync, and the arms read side by side: what chapter 08 runs to watch the copies drift or keep up.
- `mathworklog.trace`: Follow one LoRA weight sync from TRL's own generator through vLLM's packed transport into a real vLLM engine: which tensors arrive merged and which arrive as base weights, which chunk goes stale, which layers get stuck for a given model, dtype and buffer, and what bf16 costs on the way.
- `mathworklog.training`: The one skeleton that SFT, OPD and GRPO share: the settings every trainer has, the TRL flags they all pass, the policy loaded in its stored precision, the callbacks every run carries, and the end of a run: the NaN check, the loss summary, the save.
- `mathworklog.transport`: The weight-transfer engine that lets a trainer on a CPU sync into vLLM's own server (a vLLM plugin, `gloo`), the small patch TRL's client needs for it, and the engine's own word on which weights it applies.
- `mathworklog.weights`: How TRL hands a LoRA policy's weights to vLLM, the transport vLLM receives them through, the fix for the bug in that handoff, and the probe that watches the two copies during training.
- `mathworklog.worklog`: The published worklog's figures in one table: run, what, value, unit, split, the line of the text it stands on, and whether this project reproduces it. The chapters' "worklog" columns come from here and nowhere else."""

__version__ = "0.1.0"
