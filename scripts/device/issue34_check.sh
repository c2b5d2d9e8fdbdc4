#!/usr/bin/env bash
# The first GPU checks of the issue-34 changes that were written without a GPU (2026-12-04, session 2):
# protocol v7's pad release, the candidate spares, reference groups. One device call (< 10 min):
#   OUT=/tmp/o bash scripts/device/issue34_check.sh
# 1. the GPU tests of the release and of groups; 2. five cold runs of row_softmax with and without the
# release (the A/B: v6 flipped its reward 3,3,2,3,3 on 2026-12-04); then run judge_throughput --rl-shaped
# and the suite (suite_background.sh) in later calls.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
  "tests/gpu/test_timing_gpu.py::test_a_host_slower_than_at_warm_up_is_still_hidden_by_the_release" \
  "tests/gpu/test_timing_gpu.py::test_a_call_that_synchronises_inside_gets_no_release_and_no_stall" \
  "tests/gpu/test_timing_gpu.py::test_host_launch_overhead_is_hidden_up_to_the_pad" \
  "tests/gpu/test_judge_gpu.py::test_a_group_of_one_task_shares_one_reference_preparation" -s 2>&1 | tail -30
timeout 200 python3 benchmarks/compile_baseline_stability.py --runs 5 --pad-release on --json "$OUT/stability_v7.json" \
  examples/row_softmax 2>&1 | tail -9
timeout 200 python3 benchmarks/compile_baseline_stability.py --runs 5 --pad-release off \
  --json "$OUT/stability_v6.json" examples/row_softmax 2>&1 | tail -9
