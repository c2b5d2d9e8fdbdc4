#!/usr/bin/env bash
# The judge server on the H200 (issue 15 Done-when), in one go (~6-8 min):
#   1. the wheels the server needs are importable (else: exit 2 naming the missing ones);
#   2. tests/service marked gpu: an honest example over HTTP agrees with the in-process judge;
#   3. benchmarks/judge_service.py: 60 judgments (bundled examples + honest adversarial cases) through
#      `cuda-agent serve` from 8 concurrent HTTP clients vs JudgeService.judge_many in the same run:
#      verdicts/hour both ways and the ratio (target >= 0.90), p50/p99 latency, status/reward agreement,
#      every honest case ok, A/A ratio of elementwise_chain under load (target within 1 +/- 0.02).
# Run from the repo root: PYTHONPATH=/tmp/site:src OUT=/some/dir bash scripts/device/judge_service.sh
# Results: $OUT/judge_service/{judge_service.json,verdicts.jsonl,server.log}, $OUT/*.log
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="${PYTHONPATH:-/tmp/site:src}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
N="${N:-60}"
PY="${PYTHON:-python3}"

"$PY" - <<'PYEOF' 2>&1 | tee "$OUT/wheels.log"
import importlib.util, sys
need = ["fastapi", "starlette", "pydantic", "pydantic_core", "uvicorn", "h11", "click", "anyio", "sniffio",
        "httpx", "httpcore", "certifi", "idna", "prometheus_client", "typing_extensions", "annotated_types"]
missing = [m for m in need if importlib.util.find_spec(m) is None]
print("missing wheels: " + " ".join(missing) if missing else "all server wheels importable")
sys.exit(1 if missing else 0)
PYEOF
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 2
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv | tee "$OUT/gpu.log"

export CUDA_AGENT_CACHE="${CUDA_AGENT_CACHE:-$OUT/cache}"  # one cache for the test and the benchmark
timeout 150 "$PY" -m pytest tests/service/test_server_gpu.py -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest_gpu.log"
timeout 480 "$PY" benchmarks/judge_service.py --n "$N" --clients 8 --aa-reps 5 --out "$OUT/judge_service" \
    2>"$OUT/judge_service.progress.log" | tee "$OUT/judge_service.log"
rc=${PIPESTATUS[0]}
tail -n 5 "$OUT/judge_service.progress.log"
echo "judge_service.py exit code $rc"
exit "$rc"
