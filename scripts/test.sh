#!/usr/bin/env bash
# The project's test command: set up, lint, then every test (GPU tests are skipped without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests benchmarks scripts
exec .venv/bin/python -m pytest "$@"
