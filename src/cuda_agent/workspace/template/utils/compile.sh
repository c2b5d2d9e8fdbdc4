#!/usr/bin/env bash
# Build kernels/ into ./cuda_extension.so with the judge's own build: the same flags and the same clean
# binding.cpp / binding_registry.h the final judgment uses. Fixed infrastructure: do not edit.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
# Outside cuda-agent's environment the next line would die with a ModuleNotFoundError traceback: say why.
if ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("cuda_agent") is None)' 2>/dev/null; then
    echo "error: $python cannot import cuda_agent: run this in cuda-agent's environment (source .venv/bin/activate in the cuda-agent checkout first, or PYTHON=/path/to/.venv/bin/python bash utils/compile.sh)" >&2
    exit 3
fi
exec "$python" -m cuda_agent.workspace.commands compile "$@"
