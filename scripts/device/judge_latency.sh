#!/usr/bin/env bash
# Issue 12 "warm judge latency still at most 5 s median" on one H200, in one device call (<= 4 min):
#   1. the GPU tests of the latency work (tests/judge/test_kernel_trace.py: the profiler's raw Kineto events
#      give the same kernels and microseconds as torch's parsed events), ~20 s;
#   2. benchmarks/judge_throughput.py with reduced flags: no original path, no cold builds, no A/A, no
#      batch; each of the 4 honest examples judged cold once (baselines measured and cached), then
#      --warm-reps variants of each with one .cu changed, one at a time. It prints the warm latency
#      table, the per-stage medians (build, verify, timing with its parts timing_setup / timed_rounds /
#      traced_rounds / spot_checks / baseline_windows, and the counts of rounds, traced rounds and spot
#      checks), the worker round trips per command (checks.worker_calls: where a spot check's time goes)
#      and "PASS|FAIL: warm latency median X s (target <= 5 s)".
#   (Steps 3-4 ran two one-off diagnosis probes of the candidate's extra host time per call,
#   host_overhead_probe.py and profiler_state_probe.py; they answered their question (docs/design/timing.md)
#   and were removed in the issue-32 tidy: `git log --all -- scripts/device/host_overhead_probe.py`.)
# Run from the repo root:  PYTHONPATH=/tmp/site:src OUT=/some/dir bash scripts/device/judge_latency.sh
# Results: $OUT/latency/{pytest.log,throughput.log,judge_throughput.json,verdicts.jsonl,summary.txt}
# Needs only torch + nvcc (no wheels from .whl/). WARM_REPS (default 2) and BENCH_TIMEOUT (default 195 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="${PYTHONPATH:-/tmp/site:src}"
OUT="${OUT:-$(mktemp -d)}"
L="$OUT/latency"
mkdir -p "$L"
PY="${PYTHON:-python3}"
WORK="${WORK:-/tmp/hl_latency}"
rm -rf "$WORK" && mkdir -p "$WORK"
nvidia-smi --query-gpu=name,driver_version,memory.used,utilization.gpu --format=csv | tee "$L/gpu.log"

# 1. GPU tests (skipped, and said so, where pytest is missing)
if "$PY" -c "import pytest" 2>/dev/null; then
  timeout 60 "$PY" -m pytest -q -m gpu tests/judge/test_kernel_trace.py 2>&1 | tail -15 | tee "$L/pytest.log"
  echo "pytest exit ${PIPESTATUS[0]}" | tee -a "$L/pytest.log"
else  # the same check without pytest: raw Kineto events against torch's parsed events on real kernels
  timeout 60 "$PY" - <<'PYEOF' 2>&1 | tail -8 | tee "$L/pytest.log"
import torch
from torch.profiler import ProfilerActivity, profile
from cuda_agent.judge.candidate.kernel_trace import events_device_kernels, raw_device_kernels
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    y = torch.nn.functional.gelu(x) + 1
    z = torch.empty_like(y); z.copy_(y); z.zero_()
    torch.cuda.synchronize()
raw, parsed = raw_device_kernels(prof), events_device_kernels(prof)
ok = raw is not None and set(raw) == set(parsed) and all(abs(raw[k] - v) <= 1e-3 + 1e-6 * v for k, v in parsed.items())
print("raw", raw, "\nparsed", parsed)
print(("1 passed" if ok else "1 failed") + " (kernel trace raw vs parsed, without pytest)")
PYEOF
fi

# 2. the throughput benchmark's cold + warm phases (the judge's caches start empty under $WORK)
timeout "${BENCH_TIMEOUT:-195}" "$PY" benchmarks/judge_throughput.py --original-reps 0 --no-cold-build \
  --aa-reps 0 --batch 0 --warm-reps "${WARM_REPS:-2}" --out "$L" --cache-dir "$WORK/cache" 2>&1 | tee "$L/throughput.log"
rc=${PIPESTATUS[0]}
echo "judge_throughput exit $rc" | tee -a "$L/throughput.log"

{
  echo "== judge latency (issue 12) =="
  grep -E "^(PASS|FAIL|SKIP): warm" "$L/throughput.log" || echo "FAIL: no warm verdict line (benchmark exit $rc; see throughput.log)"
  sed -n '/^warm, median seconds per stage/,/^n spot_checks/p' "$L/throughput.log"
  sed -n '/^warm, worker round trips/,/^$/p' "$L/throughput.log"
  sed -n '/^warm, host clock per call/,/^$/p' "$L/throughput.log"
  grep -E "^  warm " "$L/throughput.log"
  grep -E "passed|failed|skipped|pytest" "$L/pytest.log" | tail -2
} | tee "$L/summary.txt"
rm -rf "$WORK"
