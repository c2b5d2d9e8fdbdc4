#!/usr/bin/env bash
# Issue 34's depth-2 lane (JudgeConfig.lane_depth, trusted/lane_share.py) on one GPU, in two device calls of
# < 10 min on one warm machine (the second within 30 s of the first):
#   OUT=$OUT PART=a bash scripts/device/lane_depth.sh   the examples judged two per GPU (tests/gpu/
#                                                       test_lane_depth_gpu.py), then judge_throughput at depth 2
#   OUT=$OUT PART=b bash scripts/device/lane_depth.sh   judge_throughput at depth 1, the baseline on this machine
# The two throughput runs are the A/B: verdicts/hour, lane stages, GPU idle share, A/A and every reward. The
# whole suite at depth 2 (suite_background.sh with LANE_DEPTH=2) comes before depth 2 is ever a default.
# TP_ARGS adds judge_throughput options to both, e.g. "--warm-beside-timing on" or "--rl-shaped --groups 4"
# (first measured 2026-12-07 on an H100: 1,297 -> 1,482 verdicts/hour, docs/design/throughput.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log --oneline -1 2>/dev/null | cut -c1-70
throughput() {  # $1: the lane depth
  echo "== judge_throughput, batch 32, lane depth $1"
  timeout "${TP_S:-300}" python3 benchmarks/judge_throughput.py --original-reps 0 --warm-reps 2 --aa-reps 3 \
    --batch 32 --no-cold-build --lane-depth "$1" ${TP_ARGS:-} --out "$OUT/tp_$1" 2>&1 \
    | grep -E "^lane|^note|^candidate worker|^GPU idle|^A/A|^latency|^throughput|^(PASS|FAIL)|Traceback|Error" | cut -c1-400
}
if [ "${PART:-a}" = a ]; then
  echo "== the examples, two judgments per GPU"
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -s tests/gpu/test_lane_depth_gpu.py 2>&1 | tail -24
  throughput 2
else
  throughput 1
fi
