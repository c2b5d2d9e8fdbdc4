#!/usr/bin/env bash
# Agentic GRPO on one GPU (about 5 minutes on an H200): a scripted relu episode judged for real ->
# `cuda-agent train rft-data` -> `train tiny-model` -> `train sft` (part 1's stages, as train_rft.sh runs
# them) -> `cuda-agent train grpo` for 3 optimiser steps, every rollout rewarded by the real judge on this
# GPU -> per-step reward mean, tool calls per rollout, loss, wall time, and a check that no judge process
# is left. Run from the repo root. Results in $OUT: summary.json, grpo_steps.jsonl, rollouts.jsonl,
# grpo_curve.png, sft_loss.png, one log per stage.
#
# Needs on the device, beyond torch/transformers/accelerate/pyarrow: trl and datasets (+ its dill,
# multiprocess, xxhash) and openai (solve plays the scripted episode through it). Carry them as wheels in .whl/ (the list is printed below when one is missing).
set -uo pipefail
OUT=${OUT:-/tmp/train_grpo_out}
mkdir -p "$OUT"
. "$(dirname "$0")/wheels.sh"  # .whl/ -> /tmp/site on PYTHONPATH
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false TRL_EXPERIMENTAL_SILENCE=1
missing=$(python3 - <<'PY'
import importlib
missing = []
for name in ["trl", "datasets", "pyarrow", "matplotlib", "accelerate", "openai"]:
    try:
        importlib.import_module(name)
    except ImportError as e:
        missing.append(f"{name} ({e})")
print(" ".join(missing))
PY
)
if [ -n "$missing" ]; then
    echo "missing Python packages: $missing (carry their wheels in .whl/)" | tee "$OUT/missing.txt"
    exit 3
fi
python3 -c "import torch, transformers, trl; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, torch.cuda.get_device_name(0))"
python3 scripts/device/train_grpo.py --out "$OUT" "$@" 2>&1 | tee "$OUT/train_grpo.log"
exit "${PIPESTATUS[0]}"
