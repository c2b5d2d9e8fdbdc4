#!/usr/bin/env bash
# Issue 34: the GPU measurement of session 24's two levers on the lane's waits, in one device call of < 10 min:
#   OUT=$OUT bash scripts/device/lane_waits.sh
# 1. benchmarks/warmup_beside_timing.py: which part of a spare worker's warm-up (import, CUDA context, CUPTI's
#    set-up, the first and a later traced session) disturbs another process's kernels, i.e. which parts must
#    stay out of a timed window and which could leave the quiet window (JudgeConfig.warm_beside_timing).
# 2. benchmarks/judge_throughput.py, warm and batch 32 with A/A: the lane's `quiet_wait` (warm-ups now share
#    the GPU with each other, timing alone: trusted/quiet_window.py) and `reference_wait` (two spare reference
#    workers), against session 23's H100 figures in docs/design/throughput.md (0.58 s a verdict of quiet_wait,
#    1,350 verdicts/hour, A/A 0.9994, idle 44.8%, warm median 2.63 s).
# 3. the MinGPTNewGelu degeneracy test at KernelBench's size (GPU-marked: 355 s on a CPU).
# Each part has its own time limit, so one that hangs leaves the others their time.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; git log --oneline -1 2>/dev/null
echo "== 1. warm-up beside timing"
timeout 150 python3 benchmarks/warmup_beside_timing.py --reps 5 --json "$OUT/warmup.json" 2>&1 | tail -22
echo "== 2. throughput, batch 32"
timeout "${TP_S:-330}" python3 benchmarks/judge_throughput.py --original-reps 0 --warm-reps 2 --aa-reps 3 \
  --batch 32 --no-cold-build --out "$OUT/tp" 2>&1 | tail -45
echo "== 3. MinGPTNewGelu at KernelBench's size"
timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider tests/judge/test_output_rules.py -k min_gpt 2>&1 | tail -4
