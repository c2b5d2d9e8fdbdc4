#!/usr/bin/env bash
# Create .venv with cuda-agent and its dependencies. Idempotent: a second run only checks.
# Needs Python >= 3.10 and, to build kernels, nvcc (CUDA 12.x/13.x) on PATH or in CUDA_HOME.
# Installs bubblewrap (the agent's Bash sandbox) with apt-get when running as root and it is missing;
# set CUDA_AGENT_NO_APT=1 to skip that.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.14.1}
if [ ! -x .venv/bin/python ]; then
    echo "[setup] creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi
# find_spec, not import: importing torch takes seconds, and this runs before every test run.
if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)" 2>/dev/null; then
    echo "[setup] installing $TORCH_SPEC (a CUDA build, several GB; no GPU needed to compile kernels)"
    .venv/bin/pip install -q --disable-pip-version-check "$TORCH_SPEC"
fi
# The package is installed editable, so source edits need no reinstall: only a changed pyproject.toml
# (dependencies, entry points) or a venv that lost the package does. The stamp records what was installed.
STAMP=.venv/.cuda-agent-installed
WANT="$(cksum < pyproject.toml) $(pwd)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x .venv/bin/cuda-agent ] \
    && .venv/bin/python -c "import cuda_agent" 2>/dev/null; then  # the package's __init__ imports nothing heavy
    echo "[setup] cuda-agent already installed (editable; pyproject.toml unchanged)"
else
    echo "[setup] installing cuda-agent (editable) with dev extras"
    rm -f "$STAMP"
    .venv/bin/pip install -q --disable-pip-version-check -e ".[dev]"
    echo "$WANT" > "$STAMP"
fi
if ! command -v bwrap >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && [ -z "${CUDA_AGENT_NO_APT:-}" ] && command -v apt-get >/dev/null 2>&1; then
        echo "[setup] installing bubblewrap (the agent's Bash sandbox)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) >/dev/null 2>&1 \
            || echo "[setup] warning: bubblewrap could not be installed" >&2
    fi
    if ! command -v bwrap >/dev/null 2>&1; then
        echo "[setup] note: no bubblewrap: the agent's Bash runs unconfined (host /tmp, host files); install it" \
             "with 'sudo apt-get install bubblewrap' (or your distribution's package)" >&2
    fi
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -z "${CUDA_HOME:-}" ]; then
    echo "[setup] warning: nvcc not found; kernel builds need the CUDA toolkit (set CUDA_HOME)" >&2
fi
echo "[setup] ready: .venv/bin/cuda-agent (or 'source .venv/bin/activate' to put cuda-agent on PATH)"
