#!/usr/bin/env bash
# The first GPU checks of work written without a GPU (2026-12-04, sessions 3 and 4), in two device calls:
#   OUT=/tmp/o PART=test bash scripts/device/unrun_checks.sh, then PART=kb   (carry .cache/kernelbench: KernelBench's level folders)
# 1. issue 29's memory plan: every example judged with no reference output kept (each set's made again from
#    its seed) must get its expected verdict; 2. the judge's preparation, baseline warm-up and rounds (fewer calls
#    a round where one call's inputs and output are large: decide/round_size.py) of KernelBench tasks that ran
#    out of memory on 2026-12-03 and of the largest one (L1Norm, 16 GiB a call), on the whole H200 and capped at
#    80 GB (an H100).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
# PART=test (the GPU test, <= 5 min), PART=kb (the KernelBench tasks, <= 8 min), or both in one call (default;
# may not fit the device's 10 minutes: the test judges every example cold, then row_softmax twice).
PART=${PART:-all}
if [ "$PART" != kb ]; then
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -s \
    "tests/gpu/test_judge_gpu.py::test_every_example_gets_its_expected_verdict_with_no_reference_output_kept" 2>&1 | tail -20
fi
[ "$PART" = test ] && exit 0
KB=${KB:-.cache/kernelbench}
# At most 75 s a task, so that PART=kb stays under the device's 10 minutes (6 x 75 s).
for only in Softsign InstanceNorm ScaledDotProduct Max_Pooling_1D L1Norm_; do
  timeout 75 python3 scripts/kernelbench_memory.py "$KB" --levels 1 --only "$only" --timeout 70 \
    --json "$OUT/kb_memory_$only.json" 2>&1 | tail -3
done
timeout 75 python3 scripts/kernelbench_memory.py "$KB" --levels 1 --only L1Norm_ --memory-gb 80 --timeout 70 \
  --json "$OUT/kb_memory_80gb_L1Norm.json" 2>&1 | tail -3
