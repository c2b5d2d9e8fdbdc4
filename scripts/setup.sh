#!/usr/bin/env bash
# Create .venv with cuda-agent and its dependencies. Idempotent: a second run only checks.
# Needs Python >= 3.10 and, to build kernels, nvcc (CUDA 12.x/13.x) on PATH or in CUDA_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.14.1}
if [ ! -x .venv/bin/python ]; then
    echo "[setup] creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    echo "[setup] installing $TORCH_SPEC (a CUDA build, several GB; no GPU needed to compile kernels)"
    .venv/bin/pip install -q --disable-pip-version-check "$TORCH_SPEC"
fi
echo "[setup] installing cuda-agent (editable) with dev extras"
.venv/bin/pip install -q --disable-pip-version-check -e ".[dev]"
if ! command -v nvcc >/dev/null 2>&1 && [ -z "${CUDA_HOME:-}" ]; then
    echo "[setup] warning: nvcc not found; kernel builds need the CUDA toolkit (set CUDA_HOME)" >&2
fi
echo "[setup] ready: .venv/bin/cuda-agent"
