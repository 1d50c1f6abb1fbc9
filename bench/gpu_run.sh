#!/usr/bin/env bash
# One device run on the lent H200 (no hub, no registry), after `. .v3/box.sh` (or `. /tmp/dl/box.sh` on a warm box) has
# installed vLLM 0.26 and the wheels the box lacks into /tmp/site (../shared/tools/gpu-vllm builds .v1 .v2 .v3, carried
# one per call) and pointed MATHWORKLOG_TOKENIZER / MATHWORKLOG_GSM8K at the carried .gpu/tokenizer and .gpu/gsm8k.
# Prepare once, here:  ../shared/tools/gpu-vllm
#                      mkdir -p .gpu && cp -r ../shared/data/qwen2.5-tokenizer .gpu/tokenizer && cp -r ../shared/data/gsm8k .gpu/gsm8k
#                      (.v1 .v2 .v3 .gpu are listed in .git/info/exclude, never committed)
# Usage:  bash bench/gpu_run.sh ITEM [ITEM ...]   — items run in order, each under a time limit, stopping before
# $DEADLINE seconds so that what ran comes back; peak GPU memory per item is sampled with nvidia-smi every 0.5 s.
# Items: vllm-tests | bench:NAME[:ARGS] | nb:NOTEBOOK[:k=v,k=v] | presample-full[:ARGS] | sync-repro | live-sync[:ARMS[:ARGS]] | sh:CMD
# | server-mode[:ARMS[:ARGS]], each optionally followed by @SECONDS (its time limit); ARGS and ARMS are comma-separated.
# server-mode (2 GPUs: an nvidia-h100-x2 or h200-x2 call) is the worklog's own setup: vLLM's server on GPU 1 with the NCCL
# weight-transfer engine, an unmodified GRPOTrainer(vllm_mode="server") under `accelerate launch` on GPU 0, chapter 08's
# arms through it (bench/server_mode.py, server_arms.server_live_sync; learning start first, as for live-sync), e.g.
#   server-mode:fp32_unpatched,fp32_patched,bf16_unpatched,bf16_out_of_place,fp32_full_ft:--steps,30@560
# Carry .gpu in every call (tokenizer and GSM8K; the script refuses to run without them).
# A call whose answer says warm: false ran on a fresh box (the last went back after 30 s idle): /tmp/site and the
# learning start are gone there, so carry .v1, .v2, .v3 again (three calls) before any vLLM item.
# The gpu preset's student is the learning start (the model folder "learning-start", which bench/learning_start.py
# builds into $MATHWORKLOG_CACHE): on a fresh box run bench:learning_start first
# (about 4 minutes; TRL alone suffices, so it can run in the call that carries .v1 with .whlmin/ installed).
# live-sync: six arms side by side ran out of GPU memory on one H200 (143 GB peak; an fp32 LoRA arm holds ~40 GB): run
# three at a time, one wave per call (250-355 s each), e.g.  live-sync:fp32_unpatched,fp32_patched,bf16_unpatched:--parallel,3,--stagger,4@380
# Does GRPO from the learning start raise the reward? Runs sample the same prompts in the same order, so read each against
# a control at lr 1e-9 of the same seed and schedule (report.grpo_learns_rows pairs them; runs are named ARM · SCHEDULE · seed N):
#   live-sync:bf16_out_of_place/1e-9,bf16_out_of_place/1e-3,bf16_out_of_place/3e-3:--parallel,3,--key,grpo_learns,--prompts,16,--steps,50,--lr-schedule,constant,--heldout,64,--seed,1@545
# (478 s on 2026-12-04, ninth session: lr 1e-3 +0.028 +- 0.010 a step over the control, step_check +0.054, held-out mean reward
# 1.169 -> 1.323; lr 3e-3 collapsed. The eighth session ran seed 0 with the default linear decay: 1e-3 +0.019 +- 0.008.)
# Next: another seed at constant 1e-3 (and 2e-3), or more steps; merge the runs into bench/h200/live_sync.json by hand.
# The full vLLM presample through 4 engines (the pool fixes their KV caches and starts them together):
#   presample-full:--engines,vllm,--vllm-engines,4@450   (225 s on 2026-12-04: start 80.7 s, 7,473 x 8 x 256 in 107.9 s = 141,683 tok/s)
# The HF fast path on a subset, TRL only (fits a call with .whlmin/):  presample-full:--engines,hf,--hf-questions,512@205   (140 s)
# Chapter 04 itself at that size (its parameters: k=8; the pool's default KV share):
#   nb:04_presample:backend=vllm,workers=4,n_questions=7473,k=8,max_new_tokens=256@480
#   (174 s on 2026-12-05, fourth session: 7,473 x 8 in 63.4 s, 105,181 tok/s)
# Chapters 07 and 08 read 06's runs (05's and 06's on the gpu preset): on a fresh box they run 04, 05 and 06 first
# (ensure_upstream), which did not fit the time left in a call on 2026-12-06: run nb:04_presample, nb:05_sft and
# nb:06_opd as items before them, one or two a call (05 reads 04's presample: without it 05 runs 04 inside its own
# limit; 83 s and 210 s on the H200 of 2026-12-03, 179 s for 05 with bf16_run=False on the H100 of 2026-12-06, 07 then
# 135 s), or pass upstream=error to 07 and 08 to fail
# at once. 07 takes `experiments` (labels of GRPO_RUNS), not a rollout choice: an item splits its arguments at commas, so
# name several runs with spaces, quoted: "nb:07_grpo:experiments=results_sft results_no_vllm".
# Micro-batches without gradient checkpointing (GRPOSettings.micro_batch; as GRPOConfig keys in a variant), one item:
#   "bench:grpo_step:--steps,4,--variants,mathworklog:bf16:base_dtype=bfloat16,mathworklog:bf16:base_dtype=bfloat16+gradient_checkpointing=false+per_device_train_batch_size=64+gradient_accumulation_steps=2+steps_per_generation=2@300"
#   (246 s for three variants on the H100 of 2026-12-06, ninth session: step 2.48 -> 2.05 s, training 1.40 -> 1.03 s,
#   peak 11.5 -> 50.5 GiB: bench/h100/grpo_step_microbatch.json). Next: profile that variant (--profile-step,3), and
#   the grpo_learns control comparison with it, before the gpu preset takes it by default.
# bench:grpo_step:--profile-step,N profiles step N of every variant, and a profiled step is slow (TRL's default path:
# minutes): on 2026-12-05 eight profiled variants under 575 s finished one. Profile one variant per item, alone, and time
# the paths in an item without the profile. A variant KIND:PREC:key=value+key=value tries GRPOConfig changes against
# the plain variant in the same run (e.g. mathworklog:bf16:gradient_checkpointing=false).
#   (169 s on 2026-12-04, tenth session, after the learning start: the presample 53 s, 5.78M tokens at 111,290 tok/s)
# bench:stream_race (TRL only, no vLLM needed: fits the .v1 call) checks that the sync fixes no longer race the optimizer.
# bench:vllm_engines:--configs,1,4 times the presample through engines.GeneratorPool (N engines on the one GPU).
# Each item's command sees its limit in $ITEM_LIMIT. Everything an item prints goes to $OUT/<item>.log; results (JSON, executed notebooks) to $OUT; a summary last.
# GPU_RUN_PRESET (default gpu) is the preset every item runs with: tests/test_smoke_preset.py runs this script on a CPU with
# GPU_RUN_PRESET=smoke (gpu's code path at tiny dims) and the learning start item, so that the runner and the gpu preset's
# student cannot rot between leases; every bench script's own --preset tiny run is in tests/test_bench.py (marked bench).
set -o pipefail
FINAL=${OUT:-/tmp/out}; W=${GPU_RUN_WORK:-/tmp/work}; mkdir -p "$W" "$FINAL"; T0=$(date +%s); DEADLINE=${DEADLINE:-570}
PRESET=${GPU_RUN_PRESET:-gpu}
smi() { command -v nvidia-smi >/dev/null 2>&1 || return 0; nvidia-smi "$@"; }   # a CPU machine (the smoke preset) has none
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd); cd "$root"
export MATHWORKLOG_RUNS=${MATHWORKLOG_RUNS:-/tmp/runs} MATHWORKLOG_CACHE=${MATHWORKLOG_CACHE:-/tmp/mwl-cache} PYTHONUNBUFFERED=1 \
       NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 \
       VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_NO_USAGE_STATS=1 PYTHONPATH=${PYTHONPATH:-}:$root
finish() {                      # at most 8 files come back: one archive of everything, and the summary beside it
  cp "$W/summary.txt" "$FINAL"/ 2>/dev/null
  tar czf "$FINAL/results-$(date +%H%M%S).tgz" -C "$W" --exclude='*.mem' . 2>/dev/null
}
trap finish EXIT
python3 -c "
import importlib, importlib.util, torch
v = {m: getattr(importlib.import_module(m), '__version__', '?') if importlib.util.find_spec(m) else 'absent' for m in ('torch', 'transformers', 'trl', 'peft', 'datasets', 'vllm')}
print(' '.join(f'{k} {x}' for k, x in v.items()), torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')" 2>&1 | tail -1 | tee "$W/versions.txt"
grep -q "trl [0-9]" "$W/versions.txt" || { echo "the box lacks TRL: source .v3/box.sh (or /tmp/dl/box.sh) first, or install .whlmin/ (TRL, datasets)"; exit 1; }
# the gpu preset reads Qwen2.5's tokenizer and GSM8K from the carried .gpu/ (box.sh exports the two variables when it is
# there). A call that does not carry .gpu would fall back to the 4,096-token BPE and the bundled problems: on 2026-12-04
# two GRPO runs from the learning start did exactly that (reward 0.03, entropy 10 at step 1). Refuse instead.
for v in MATHWORKLOG_TOKENIZER MATHWORKLOG_GSM8K; do
  [ -d "${!v:-/nonexistent}" ] || { echo "$v is not a folder here (${!v:-unset}): carry .gpu in every call, also after the install (carry [\".gpu\"])" | tee -a "$W/summary.txt"; exit 1; }
done

# run NAME LIMIT CMD...: the command under a limit, its output in NAME.log, a summary line with rc, seconds and peak GPU memory
# keep_earlier NAME: an item run again in this work folder (a second bench:grpo_step, a chapter re-run) would write over
# the first one's log and results ($W/NAME.*, also under NAME with _ for -): they move to $W/earlier-<ns>/ first
keep_earlier() {
  local n f=() d="$W/earlier-$(date +%s%N)"
  for n in "$1" "${1//-/_}"; do f+=("$W/$n".*); done
  f=($(for x in "${f[@]}"; do [ -e "$x" ] && echo "$x"; done | sort -u))
  [ ${#f[@]} -eq 0 ] && return 0
  mkdir -p "$d" && mv "${f[@]}" "$d"/
  echo "$1: the earlier run's files moved to $(basename "$d")/" | tee -a "$W/summary.txt"
}
# reap TAG NAME: stop every process an item left behind (found by the MWL_ITEM=TAG its environment inherited). `timeout`
# stops the item's own process only: on 2026-12-06 a chapter cut off at its limit left its papermill kernel's vLLM
# EngineCore running, holding 43 GB of the H100, and the next two chapters could not start vLLM
reap() {
  local p left=()
  for p in /proc/[0-9]*; do grep -qsz "^MWL_ITEM=$1\$" "$p/environ" 2>/dev/null && left+=("${p#/proc/}"); done
  [ ${#left[@]} -eq 0 ] && return 0
  kill -TERM "${left[@]}" 2>/dev/null; sleep 3; kill -KILL "${left[@]}" 2>/dev/null
  echo "$2: stopped ${#left[@]} process(es) it left running" | tee -a "$W/summary.txt"
}
run() {
  local name=$1 limit=$2; shift 2
  keep_earlier "$name"
  local left=$(( DEADLINE - ($(date +%s) - T0) )); [ $left -lt 20 ] && { echo "$name skipped (deadline)" | tee -a "$W/summary.txt"; return; }
  [ $limit -gt $left ] && limit=$left
  smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$W/$name.mem" 2>/dev/null & local sampler=$!
  local tag="$$-$(date +%s%N)"
  local t=$(date +%s); MWL_ITEM=$tag ITEM_LIMIT=$limit timeout -k 10 $limit "$@" > "$W/$name.log" 2>&1; local rc=$?
  reap "$tag" "$name"
  kill $sampler 2>/dev/null; local peak=$(sort -n "$W/$name.mem" 2>/dev/null | tail -1)
  echo "$name rc=$rc $(( $(date +%s) - t )) s peak-GPU ${peak:-?} MiB" | tee -a "$W/summary.txt"
  [ $rc -ne 0 ] && grep -v "Warning\|warnings.warn\|^\s*$" "$W/$name.log" | tail -12
  return 0
}
# an item that needs vLLM on a box without it would pass as "skipped" (pytest) or fail late: say so and go on to the next item
need_vllm() { grep -q "vllm [0-9]" "$W/versions.txt" && return 0
  echo "$1 skipped: vLLM is not installed on this box (a fresh box after warm: false? carry .v1, .v2, .v3 again)" | tee -a "$W/summary.txt"; return 1; }
for item in "$@"; do
  LIMIT=; [[ "$item" == *@* ]] && { LIMIT=${item##*@}; item=${item%@*}; }        # item@SECONDS: this item's time limit
  kind=${item%%:*}; rest=${item#"$kind"}; rest=${rest#:}              # KIND[:WHAT[:ARGS]]; presample-full takes the whole rest as its
  what=${rest%%:*}; args=${rest#"$what"}; args=${args#:}            # arguments (it had joined WHAT and ARGS with a space, cutting a JSON
  # value at its colon). Arguments are comma-separated, so a JSON value can hold one key only, and no "@" (the time limit).
  case "$kind" in
    vllm-tests)
      need_vllm vllm-tests || continue
      run vllm-tests ${LIMIT:-420} env VLLM_TEST_REPORT="$W/vllm_tests.json" python3 -m pytest -q -rA -p no:cacheprovider tests/test_vllm.py
      { grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|error" "$W/vllm-tests.log" | tail -15; cat "$W/versions.txt"; } > "$W/vllm_tests.txt"
      tail -3 "$W/vllm_tests.txt" ;;
    bench)
      run "$what" ${LIMIT:-400} bash -c "cd bench && python3 $what.py --preset $PRESET --out $W ${args//,/ }"
      grep -v "Warning\|warnings.warn" "$W/$what.log" | grep -E "tok/s|s/step|greedy|failed|x$|^vLLM" | cut -c1-300 ;;
    nb)
      params=(); IFS=, read -ra kv <<< "$args"; for p in "${kv[@]}"; do [ -n "$p" ] && params+=(-p "${p%%=*}" "${p#*=}"); done
      run "$what" ${LIMIT:-300} python3 -m papermill -k python3 --cwd nbs "nbs/$what.ipynb" "$W/$what.$PRESET.ipynb" -p preset "$PRESET" "${params[@]}"
      grep -E "^preset=|Error|error" "$W/$what.log" | head -5 ;;
    presample-full)
      [[ "$rest" == *vllm* ]] && { need_vllm presample-full || continue; }
      run presample-full ${LIMIT:-300} python3 bench/presample_full.py --preset "$PRESET" --out "$W" --from-runs "$MATHWORKLOG_RUNS" ${rest//,/ }
      grep -E "^(presample|baseline)|tasks done" "$W/presample-full.log" | cut -c1-400 ;;
    sync-repro)
      run sync-repro ${LIMIT:-200} python3 tools/repro_trl_lora_sync.py --model "$(cd bench && python3 -c "from _common import preset_model; print(preset_model('$PRESET')[1])")" ;;
    live-sync)
      need_vllm live-sync || continue
      run live-sync ${LIMIT:-560} python3 bench/live_sync.py --preset "$PRESET" --out "$W" ${what:+--arms ${what//,/ }} ${args//,/ } ;;
    server-mode)
      need_vllm server-mode || continue
      [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ] || { echo "server-mode skipped: it needs 2 GPUs (one for the server)" | tee -a "$W/summary.txt"; continue; }
      run server-mode ${LIMIT:-560} env CUDA_VISIBLE_DEVICES=0 python3 -m accelerate.commands.launch --num_processes 1 \
        --num_machines 1 --mixed_precision no --dynamo_backend no bench/server_mode.py --preset "$PRESET" --out "$W" --server-gpu 1 \
        ${what:+--arms ${what//,/ }} ${args//,/ } --deadline $(( ${LIMIT:-560} - 60 ))
      grep -E "^ *(arm|fp32|bf16)|ratio|Error" "$W/server-mode.log" | cut -c1-300 ;;
    sh)   # any command on the box under the same limit (its words comma-separated), e.g. sh:nvidia-smi
      run sh ${LIMIT:-60} ${rest//,/ } ;;
    *) echo "unknown item $item" ;;
  esac
done
smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$W/summary.txt"
