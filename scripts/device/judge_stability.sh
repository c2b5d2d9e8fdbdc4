#!/usr/bin/env bash
# Issue 12's reproducibility figures (protocol v6 since issue 33) on one H200, in device calls of < 10 min:
#   PART=stability  benchmarks/compile_baseline_stability.py (3 examples x 5 cold judgments: compile spread
#                   <= 3%, one reward per example, A/A within 1 +/- 0.02; each row names the host clock's
#                   charges and the in/outside-loop split with the samples' skew), ~4 min; then the GPU
#                   tests of the timing protocol (tests/gpu/test_timing_gpu.py) and of the compile builds'
#                   private kernels (tests/judge/test_compile_builds.py, cuda), ~2-3 min.
#   PART=suite      scripts/gpu_suite.py: every adversarial and honest case in one judge process, ~7.5 min.
#   PART=probes     issue 33's A/B benchmarks: benchmarks/timing_round_redistribution.py (the burst under the
#                   median and the mean, honest spread and A/A under both) and timing_l2_staging.py (L2
#                   staged during the v5 and the v6 pad), ~1-2 min; each prints PASS/FAIL lines.
# Run from the repo root:  PART=stability OUT=/some/dir bash scripts/device/judge_stability.sh
# Results under $OUT/stability or $OUT/suite (logs, JSON, verdicts). Needs only torch + nvcc.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="${PYTHONPATH:-src}"
OUT="${OUT:-$(mktemp -d)}"
PY="${PYTHON:-python3}"
case "${PART:-stability}" in
  stability)
    D="$OUT/stability"; mkdir -p "$D"
    timeout "${BENCH_TIMEOUT:-330}" "$PY" benchmarks/compile_baseline_stability.py --json "$D/stability.json" \
      > "$D/stability.log" 2>&1
    echo "stability exit $?" >> "$D/stability.log"
    grep -E "run [0-9]|PASS|FAIL|%|exit" "$D/stability.log" | cut -c1-230
    timeout "${TEST_TIMEOUT:-200}" "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_timing_gpu.py \
      tests/judge/test_compile_builds.py > "$D/pytest.log" 2>&1
    echo "pytest exit $?" >> "$D/pytest.log"
    tail -15 "$D/pytest.log"
    ;;
  suite)
    D="$OUT/suite"; mkdir -p "$D"
    CUDA_AGENT_CACHE="${CUDA_AGENT_CACHE:-/tmp/judge_suite_cache}" timeout "${SUITE_TIMEOUT:-560}" \
      "$PY" scripts/gpu_suite.py --out "$D" > "$D/suite.log" 2>&1
    echo "suite exit $?" >> "$D/suite.log"
    grep -E "NOT AS EXPECTED|^all|^by class|exit" "$D/suite.log"
    ;;
  probes)
    D="$OUT/probes"; mkdir -p "$D"
    for probe in timing_round_redistribution timing_l2_staging; do
      timeout "${PROBE_TIMEOUT:-200}" "$PY" "benchmarks/$probe.py" --json "$D/$probe.json" > "$D/$probe.log" 2>&1
      echo "$probe exit $?" >> "$D/$probe.log"
      cat "$D/$probe.log"
    done
    ;;
  *) echo "PART must be stability, suite or probes" >&2; exit 2 ;;
esac
