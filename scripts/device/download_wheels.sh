#!/usr/bin/env bash
# Run HERE (the CPU machine, which reaches the package index), not on the device: downloads into .whl/ the
# wheels the device image lacks, for its Python (3.12, manylinux x86_64), at the versions this checkout's
# .venv runs, so the device runs the code CI tested. Carry ".whl" to the device; wheels.sh installs them.
#   bash scripts/device/download_wheels.sh [server|train|all]     (default: all; about 6 MB / 12 MB)
# server: the judge server and its fault bench (issue 30; fastapi 0.165 also imports opentelemetry-api and
# rich, whose absence stopped the first device run). train: TRL, datasets and openai for the training runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
WHAT=${1:-all}
SERVER="fastapi uvicorn starlette pydantic pydantic_core annotated-types annotated-doc typing-inspection
typing_extensions anyio sniffio h11 httpx httpcore idna certifi prometheus_client click opentelemetry-api
rich pygments markdown-it-py mdurl"
TRAIN="trl datasets dill multiprocess xxhash openai jiter httpx2 httpcore2 truststore"
case "$WHAT" in
    server) names=$SERVER ;;
    train) names=$TRAIN ;;
    all) names="$SERVER $TRAIN" ;;
    *) echo "usage: $0 [server|train|all]" >&2; exit 2 ;;
esac
pins=()
for name in $names; do
    version=$(.venv/bin/python -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)
    if [ -z "$version" ]; then
        echo "$name is not installed in .venv (run scripts/setup.sh first)" >&2
        exit 3
    fi
    pins+=("$name==$version")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "${pins[@]}" 2> >(grep -v "^WARNING: Location" >&2)
echo "$(ls .whl/*.whl | wc -l) wheels, $(du -sh .whl | cut -f1) in .whl/: carry [\".whl\"] on the device call"
