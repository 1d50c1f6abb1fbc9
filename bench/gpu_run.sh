#!/usr/bin/env bash
# One device run on the lent H200 (no hub, no registry): install the carried wheels, point at the carried tokenizer and
# GSM8K, then run `bench` (the three benchmarks) or `notebooks` (every chapter with papermill, preset gpu).
# Prepare once, here: ../shared/tools/gpu-wheels (fills .whl/; add fastcore and liger-kernel wheels the same way), and
#   mkdir -p .gpu && cp -r ../shared/data/qwen2.5-tokenizer .gpu/tokenizer && cp -r ../shared/data/gsm8k .gpu/gsm8k
#   (both folders are listed in .git/info/exclude, never committed).
# Usage (device tool, carry [".whl", ".gpu"]):  bash bench/gpu_run.sh bench|notebooks
set -o pipefail
FINAL=${OUT:-/tmp/out}; OUT=/tmp/work; mkdir -p "$OUT" "$FINAL"
trap 'tar czf "$FINAL/$1.tgz" -C "$OUT" . ; cp "$OUT"/*.txt "$FINAL"/ 2>/dev/null' EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter
export MATHWORKLOG_TOKENIZER=$PWD/.gpu/tokenizer MATHWORKLOG_GSM8K=$PWD/.gpu/gsm8k MATHWORKLOG_RUNS=/tmp/runs \
       MATHWORKLOG_CACHE=/tmp/mwl-cache PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
python3 -c "import torch, transformers, trl, peft, datasets; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__, torch.cuda.get_device_name())" | tee "$OUT/versions.txt"
case "$1" in
  bench)
    cd bench
    for b in ${BENCHES:-logprob_memory rollout_throughput grpo_step}; do
      echo "== $b"; timeout ${BENCH_TIMEOUT:-200} python3 $b.py --preset gpu --out "$OUT" 2>&1 | grep -v "Warning\|warnings.warn" | tee "$OUT/$b.log" | tail -15
    done ;;
  notebooks)
    for nb in ${NBS:-02_baseline 03_rewards 04_presample 05_sft 06_opd 07_grpo 08_sync_bug 09_checkpoint_averaging 10_results}; do
      t0=$(date +%s)
      python3 -m papermill -k python3 --cwd nbs nbs/$nb.ipynb "$OUT/$nb.gpu.ipynb" -p preset gpu $EXTRA > "$OUT/$nb.log" 2>&1
      rc=$?; echo "$nb rc=$rc $(( $(date +%s) - t0 )) s peak-GPU n/a" | tee -a "$OUT/notebooks.txt"
      [ $rc -ne 0 ] && tail -20 "$OUT/$nb.log"
    done
    nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$OUT/notebooks.txt" ;;
esac
