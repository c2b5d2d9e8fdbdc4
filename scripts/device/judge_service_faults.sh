#!/usr/bin/env bash
# Issue 30's GPU run: benchmarks/judge_service_faults.py with the real judge on this GPU (--examples:
# variants of the bundled examples, each really compiled), at counts one device call holds: N (24)
# submissions from CLIENTS (8) HTTP clients while the server is restarted gracefully once and killed -9
# once and SLOW (20) connections dribble headers; then every submission judged again in-process and
# compared. Pass: 0 lost, 0 duplicated, 0 judged twice, every verdict identical (exit 0).
#   OUT=$OUT bash scripts/device/judge_service_faults.sh          carry [".whl"]
# Needs the server's packages (fastapi, uvicorn, starlette, pydantic and theirs) as wheels in .whl/.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/judge_service_faults_out}
mkdir -p "$OUT"
. "$(dirname "$0")/wheels.sh"  # .whl/ -> /tmp/site on PYTHONPATH
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
missing=$(python3 -c "
import importlib.util
print(' '.join(n for n in ['fastapi', 'uvicorn', 'starlette', 'pydantic', 'httpx', 'prometheus_client'] if importlib.util.find_spec(n) is None))")
if [ -n "$missing" ]; then
    echo "missing Python packages: $missing (carry their wheels in .whl/)" | tee "$OUT/missing.txt"
    exit 3
fi
timeout "${BUDGET_S:-560}" python3 benchmarks/judge_service_faults.py --examples --n "${N:-24}" --clients "${CLIENTS:-8}" \
    --graceful "${GRACEFUL:-1}" --kills "${KILLS:-1}" --slow "${SLOW:-20}" --deadline-s "${DEADLINE_S:-330}" \
    --out "$OUT/faults" 2>&1 | tee "$OUT/judge_service_faults.log" | tail -40
exit "${PIPESTATUS[0]}"
