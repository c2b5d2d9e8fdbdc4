#!/usr/bin/env bash
# The judge server on the H200 (issue 15 Done-when), ended by BUDGET_S whatever happens (default 450 s;
# 540 with PHASE=local, 420 with PHASE=service):
#   1. the wheels the server needs are importable (else: exit 2 naming the missing ones);
#   2. benchmarks/judge_service.py: 60 judgments (12 bundled examples + 3 honest adversarial cases of one
#      task, 5 tasks) through `cuda-agent serve` from 8 concurrent HTTP clients vs a fresh local
#      JudgeService.judge_many in the same run, both warm after one priming pass that measures each task's
#      baselines once: verdicts/hour both ways and the ratio (>= 0.90), p50/p99 latency, status/reward
#      agreement, every honest case ok, A/A of row_softmax under load (1 +/- 0.02), the server's /metrics
#      against the verdicts (what tests/service/test_server_gpu.py checked, folded in here).
# Device time at this morning's judge speed (fresh machine; H200 figures of 2026-12-01): start-up and
# imports ~10 s; priming ~90 s (PCH and first builds ~35 s, 5 cold tasks ~55 s of GPU lane); idle A/A
# ~20 s; each run of 60 ~4.4 s per judgment of GPU lane (ok 5-8 s; a failure that reaches the GPU ~4 s,
# the time one spare candidate worker takes to warm) = ~265 s; server start ~10 s; so ~650 s in all: more
# than one 600 s command. Hence PHASE:
#   PHASE=all      everything in one command (fits BUDGET_S=450 only once a GPU judgment costs <= ~2.3 s;
#                  otherwise the service run is not started, the JSON says so, and the local run is kept
#                  in $STATE, so a following PHASE=service command finishes the comparison);
#   PHASE=local    priming + idle A/A + local run (~6.5 min), kept in $STATE for:
#   PHASE=service  the service run against them (~5 min), same machine and judge cache, next command.
# The judge cache is the judge's default (~/.cache/cuda-agent) unless CUDA_AGENT_CACHE says otherwise:
# shared with the other device scripts of the session (PCH, objects, baselines), never under $OUT (the
# PCH alone is ~570 MB).
# Run from the repo root: PYTHONPATH=/tmp/site:src OUT=/some/dir [PHASE=...] bash scripts/device/judge_service.sh
# Results: $OUT/judge_service/{judge_service.json,verdicts.jsonl,server.log}, $OUT/*.log
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="${PYTHONPATH:-/tmp/site:src}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
N="${N:-60}"
PHASE="${PHASE:-all}"
case "$PHASE" in all) default_budget=450 ;; local) default_budget=540 ;; service) default_budget=420 ;;
  *) echo "PHASE must be all, local or service (not $PHASE)" >&2; exit 2 ;; esac
BUDGET_S="${BUDGET_S:-$default_budget}"
STATE="${STATE:-/tmp/judge-service-state}"
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

# The benchmark stops by its deadline and writes its JSON; the timeout is the backstop.
timeout --kill-after=15 "$BUDGET_S" "$PY" benchmarks/judge_service.py --n "$N" --clients 8 --phase "$PHASE" \
    --state "$STATE" --deadline-s $((BUDGET_S - 30)) --out "$OUT/judge_service" \
    2> >(tee "$OUT/judge_service.progress.log" >&2) | tee "$OUT/judge_service.log"
rc=${PIPESTATUS[0]}
[ "$PHASE" = service ] && cp "$STATE/local_state.json" "$OUT/judge_service/" 2>/dev/null
echo "judge_service.py exit code $rc (PHASE=$PHASE)"
exit "$rc"
