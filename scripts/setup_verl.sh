#!/usr/bin/env bash
# Create .venv-verl: verl 0.9.1 with its pins, beside (never inside) the project's .venv.
# Idempotent: a second run only checks. Why a second venv: verl 0.9.1 pins transformers<5.11 while our
# dev extras (TRL 1.16) want a newer one, so the two cannot share an environment.
# Installs torch (TORCH_SPEC, default torch==2.14.1), cuda-agent editable with its `verl` extra only
# (recipes/cuda_agent/REQUIRED_VERL.txt holds the same pins) and what tests/verl needs (pytest, httpx,
# prometheus-client for the judge server). No rollout engine (vLLM/SGLang): the CPU tests compose verl's
# configs and drive CudaAgentLoop through verl's agent-loop API with a scripted token server.
# uv (installed into the venv from PyPI) does the installing: it resolves and unpacks in parallel and
# reuses its cache, which makes this about 1 minute instead of about 7 with pip; the indexes, links and
# constraints of pip's own configuration are handed to it. CUDA_AGENT_VERL_PIP=1 uses plain pip.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-verl
PYTHON=${PYTHON_VERL:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
TORCH_SPEC=${TORCH_SPEC:-torch==2.14.1}
PINS=recipes/cuda_agent/REQUIRED_VERL.txt
if [ ! -x "$VENV/bin/python" ]; then
    echo "[setup-verl] creating $VENV with $($PYTHON --version)"
    "$PYTHON" -m venv "$VENV"
fi
# The stamp records what was installed: pyproject.toml (the `verl` extra), the recipe's pins, the torch spec.
STAMP=$VENV/.cuda-agent-verl-installed
WANT="$(cksum < pyproject.toml) $(cksum < "$PINS") $TORCH_SPEC $(pwd)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && "$VENV/bin/python" -c \
    "import cuda_agent, importlib.util as u, sys; sys.exit(u.find_spec('verl') is None or u.find_spec('torch') is None)" \
    2>/dev/null; then
    echo "[setup-verl] verl and cuda-agent already installed (pins unchanged)"
    exit 0
fi
rm -f "$STAMP"
REQUIREMENTS=("$TORCH_SPEC" -e ".[verl]" -r "$PINS" pytest httpx prometheus-client)
quiet() { grep -v "is ignored: it is neither a file nor a directory" || true; }  # pip's noise about local indexes
if [ -z "${CUDA_AGENT_VERL_PIP:-}" ] && { [ -x "$VENV/bin/uv" ] || "$VENV/bin/pip" install -q uv 2>&1 | quiet; } \
    && [ -x "$VENV/bin/uv" ]; then
    ARGS=()
    for url in $("$VENV/bin/pip" config get global.extra-index-url 2>/dev/null || true) ${PIP_EXTRA_INDEX_URL:-}; do
        ARGS+=(--extra-index-url "$url")
    done
    for link in $("$VENV/bin/pip" config get global.find-links 2>/dev/null || true) ${PIP_FIND_LINKS:-}; do
        ARGS+=(--find-links "$link")
    done
    for file in $("$VENV/bin/pip" config get global.constraint 2>/dev/null || true) ${PIP_CONSTRAINT:-}; do
        [ -f "$file" ] && ARGS+=(--constraint "$file")
    done
    # Local mirrors hold some versions and PyPI others: let uv pick the best match across all of them.
    [ ${#ARGS[@]} -gt 0 ] && ARGS+=(--index-strategy unsafe-best-match)
    echo "[setup-verl] installing $TORCH_SPEC, cuda-agent[verl] (editable) and verl's pins with uv"
    "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" "${ARGS[@]}" "${REQUIREMENTS[@]}"
else
    echo "[setup-verl] installing $TORCH_SPEC, cuda-agent[verl] (editable) and verl's pins with pip"
    "$VENV/bin/pip" install -q --disable-pip-version-check "${REQUIREMENTS[@]}" 2>&1 | quiet
fi
"$VENV/bin/python" -c "import importlib.metadata as m; v = m.version('verl'); assert v == '0.9.1', v"
echo "$WANT" > "$STAMP"
echo "[setup-verl] ready: $VENV/bin/python -m pytest tests/verl"
