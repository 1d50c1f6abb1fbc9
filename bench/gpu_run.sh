#!/usr/bin/env bash
# One device run on the lent H200 (no hub, no registry): install the carried wheels, point at the carried tokenizer and
# GSM8K, then run `bench` (the benchmarks in $BENCHES) or `notebooks` (the chapters in $NBS with papermill, preset gpu),
# each under a time limit, stopping before $DEADLINE seconds so that what ran comes back. Peak GPU memory per item is
# sampled with nvidia-smi every 0.5 s.
# Prepare once, here: ../shared/tools/gpu-wheels (fills .whl/; add the fastcore wheel the same way), and
#   mkdir -p .gpu && cp -r ../shared/data/qwen2.5-tokenizer .gpu/tokenizer && cp -r ../shared/data/gsm8k .gpu/gsm8k
#   (both folders are listed in .git/info/exclude, never committed).
# Usage (device tool, carry [".whl", ".gpu"]):  bash bench/gpu_run.sh bench|notebooks
set -o pipefail
FINAL=${OUT:-/tmp/out}; OUT=/tmp/work; mkdir -p "$OUT" "$FINAL"; T0=$(date +%s); DEADLINE=${DEADLINE:-560}
trap 'tar czf "$FINAL/$1.tgz" -C "$OUT" . ; cp "$OUT"/*.txt "$OUT"/*.json "$FINAL"/ 2>/dev/null' EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter
export MATHWORKLOG_TOKENIZER=$PWD/.gpu/tokenizer MATHWORKLOG_GSM8K=$PWD/.gpu/gsm8k MATHWORKLOG_RUNS=/tmp/runs \
       MATHWORKLOG_CACHE=/tmp/mwl-cache PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
python3 -c "import torch, transformers, trl, peft, datasets; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__, torch.cuda.get_device_name())" | tee "$OUT/versions.txt"

# run NAME LIMIT CMD...: the command under a limit, its output in NAME.log, a line with rc, seconds and peak GPU memory
run() {
  local name=$1 limit=$2; shift 2
  local left=$(( DEADLINE - ($(date +%s) - T0) )); [ $left -lt 30 ] && { echo "$name skipped (deadline)" | tee -a "$OUT/summary.txt"; return; }
  [ $limit -gt $left ] && limit=$left
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$OUT/$name.mem" 2>/dev/null & local smi=$!
  local t=$(date +%s); timeout $limit "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  kill $smi 2>/dev/null; local peak=$(sort -n "$OUT/$name.mem" 2>/dev/null | tail -1)
  echo "$name rc=$rc $(( $(date +%s) - t )) s peak-GPU ${peak:-?} MiB" | tee -a "$OUT/summary.txt"
  [ $rc -ne 0 ] && grep -v "Warning\|warnings.warn" "$OUT/$name.log" | tail -15
}
case "$1" in
  bench)
    cd bench
    for b in ${BENCHES:-logprob_memory rollout_throughput grpo_step}; do
      run $b ${BENCH_TIMEOUT:-300} python3 $b.py --preset gpu --out "$OUT" ${BENCH_ARGS:-}
      grep -v "Warning\|warnings.warn" "$OUT/$b.log" | grep "^batch\|^greedy\|s/step\|^trl_default\|^mathworklog\|peak_gib" | cut -c1-400
    done ;;
  notebooks)
    for nb in ${NBS:-02_baseline 03_rewards 04_presample 05_sft 06_opd 07_grpo 08_sync_bug 09_checkpoint_averaging 10_results}; do
      run $nb ${NB_TIMEOUT:-300} python3 -m papermill -k python3 --cwd nbs nbs/$nb.ipynb "$OUT/$nb.gpu.ipynb" -p preset gpu $EXTRA
    done ;;
esac
nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$OUT/summary.txt"
