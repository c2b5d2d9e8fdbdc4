#!/usr/bin/env bash
# Set up, then judge a bundled example. With a GPU: a full verdict (build, verify, time, reward).
# Without one: build the kernels with the judge's own build and say what a GPU would add.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
EXAMPLE=${1:-examples/elementwise_chain}
if .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    exec .venv/bin/cuda-agent judge "$EXAMPLE"
fi
echo "[quickstart] no CUDA GPU here: building $EXAMPLE only (verification and timing need a GPU)"
exec .venv/bin/cuda-agent judge "$EXAMPLE" --build-only
