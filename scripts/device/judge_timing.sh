#!/usr/bin/env bash
# Issue 12, timing and process side, on the GPU (about 6 minutes on one H200). From the repo root, with
# PYTHONPATH containing src (and /tmp/site for the carried wheels); results under $OUT:
#   1. GPU tests of the timing protocol and the freeze (tests/gpu/test_timing_gpu.py, test_freeze.py)
#   2. the new adversarial cases (classes 8, 9, 10) and the honest cases they are measured against
#   3. benchmarks/compile_baseline_stability.py: 3 examples judged cold 5 times each
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src}
PY=${PYTHON:-python3}
status=0
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; ls /sys/fs/cgroup | head -5;
  $PY -c "import torch; print('torch', torch.__version__, torch.version.cuda)"; } > "$OUT/env.txt" 2>&1

echo "== 1. GPU tests (timing protocol, freeze, cache authentication)"
timeout 150 $PY -m pytest -q -p no:cacheprovider tests/gpu/test_timing_gpu.py tests/judge/test_freeze.py \
  tests/judge/test_baseline_cache_auth.py tests/judge/test_timing_policy.py 2>&1 | tee "$OUT/pytest.txt" | tail -25
[ "${PIPESTATUS[0]}" = 0 ] || status=1

echo "== 2. adversarial cases (new: 06_side_stream_under_flush 06_tail_within_slack 13_setsid_gpu_spinner 15_*)"
A=tests/adversarial
timeout 200 $PY scripts/gpu_suite.py --out "$OUT/suite" $A/00_honest_fused_elementwise $A/00_honest_joined_side_stream \
  $A/06_side_stream_under_flush $A/06_tail_within_slack $A/06_side_stream_python $A/13_setsid_gpu_spinner \
  $A/16_spinner_subprocess $A/15_poison_baseline_cache $A/15_forge_signed_cache_record \
  $A/15_replay_other_task_record 2>&1 | tee "$OUT/suite.txt" | tail -30
[ "${PIPESTATUS[0]}" = 0 ] || status=1

echo "== 3. compile-baseline stability: 3 examples x 5 cold judgments"
timeout 300 $PY benchmarks/compile_baseline_stability.py --runs 5 --json "$OUT/stability.json" \
  examples/layernorm examples/row_softmax examples/elementwise_chain 2>&1 | tee "$OUT/stability.txt" | tail -30
[ "${PIPESTATUS[0]}" = 0 ] || status=1
exit $status
