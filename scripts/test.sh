#!/usr/bin/env bash
# The project's test command: set up, lint, then every test (GPU tests are skipped without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests benchmarks scripts
# verl (recipes/cuda_agent/, tests/verl/): its own environment, since verl 0.9.1 pins transformers<5.11
# (scripts/setup_verl.sh, ~1-2 min the first time). Runs with the full suite, i.e. without arguments;
# CUDA_AGENT_SKIP_VERL=1 leaves it out. The main run below skips tests/verl (no verl in .venv).
if [ $# -eq 0 ] && [ -z "${CUDA_AGENT_SKIP_VERL:-}" ]; then
    bash scripts/setup_verl.sh
    .venv-verl/bin/python -m pytest tests/verl
fi
exec .venv/bin/python -m pytest "$@"
