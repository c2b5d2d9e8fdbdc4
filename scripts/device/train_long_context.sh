#!/usr/bin/env bash
# Issue 31's training figures on one GPU: benchmarks/train_long_context.py (SFT with TRL and value
# pretraining on random Qwen3-0.6B- and Qwen3-1.7B-sized models carrying Qwen3's chat template: 20 steps
# at 32,768 tokens each, then the longest context that fits), tokens/s, peak memory, loss curves.
# Run from the repo root; MODELS and PROBE narrow it to fit one 10-minute device call, e.g.
#   OUT=$OUT MODELS=qwen3-0.6b bash scripts/device/train_long_context.sh
#   OUT=$OUT MODELS=qwen3-1.7b bash scripts/device/train_long_context.sh   (PROBE=262144 alone: a call of its own)
# Results in $OUT: train_long_context.json, train_long_context_loss.png, the log.
# Needs trl and datasets (+ dill, multiprocess) as wheels in .whl/ (carry .whl; the list is printed when
# one is missing).
set -uo pipefail
OUT=${OUT:-/tmp/train_long_context_out}
mkdir -p "$OUT"
. "$(dirname "$0")/wheels.sh"  # .whl/ -> /tmp/site on PYTHONPATH
export PYTHONPATH=$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
missing=$(python3 -c "
import importlib
names = ['trl', 'datasets', 'pyarrow', 'matplotlib', 'accelerate']
print(' '.join(n for n in names if importlib.util.find_spec(n) is None))")
if [ -n "$missing" ]; then
    echo "missing Python packages: $missing (carry their wheels in .whl/)" | tee "$OUT/missing.txt"
    exit 3
fi
python3 -c "import torch, transformers, trl; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, torch.cuda.get_device_name(0))"
python3 benchmarks/train_long_context.py --out "$OUT" --models "${MODELS:-qwen3-0.6b,qwen3-1.7b}" \
    ${PROBE:+--probe "$PROBE"} --timeout "${RUN_TIMEOUT:-240}" 2>&1 | tee "$OUT/train_long_context.log"
exit "${PIPESTATUS[0]}"
