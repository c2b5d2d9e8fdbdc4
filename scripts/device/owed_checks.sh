#!/usr/bin/env bash
# The GPU checks of work written without a GPU in sessions 17-18 (2026-12-06), in one device call of < 10 min:
#   OUT=$OUT bash scripts/device/owed_checks.sh            (no carry needed; KernelBench tasks only for part 4)
# 1. the weight pair end to end (tests/gpu/test_weight_pair_gpu.py: two class-4 cheats refused, the honest
#    re-laid weight accepted with the pair passed, and the cheats refused by the pair alone with a loose audit);
# 2. the suite case fixed after its H100 run (00_honest_running_mean_one_signed: scale per output);
# 3. the reference-group and fallback tests of tests/gpu/test_judge_gpu.py (the group test now uses
#    examples/wrong_result);
# 4. with .cache/kernelbench carried: the candidate worker's ModelNew path (build on the host's CPU, move to
#    the GPU, load the state dict) with and without initial draws (benchmarks/model_construction.py), for the
#    largest tasks.
# Each part has its own time limit, so one that hangs leaves the others their time; verdicts go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export CUDA_AGENT_RESULTS="$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "== 1. the weight pair"
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -s tests/gpu/test_weight_pair_gpu.py 2>&1 | tail -15
echo "== 2. 00_honest_running_mean_one_signed"
timeout 90 python3 scripts/gpu_suite.py tests/adversarial/00_honest_running_mean_one_signed --out "$OUT/suite" 2>&1 | tail -5
echo "== 3. reference groups and the fallback"
timeout 180 python3 -m pytest -q -m gpu -p no:cacheprovider -s tests/gpu/test_judge_gpu.py -k "group or fallback" 2>&1 | tail -12
if [ -d "${KB:-.cache/kernelbench}/level2" ]; then
  echo "== 4. ModelNew built, moved and loaded, with draws and without"
  timeout 150 python3 benchmarks/model_construction.py --tasks "${KB:-.cache/kernelbench}" --min-params 5e8 \
    --max-params 1.2e9 --reps 1 --device cuda --out "$OUT" 2>&1 | tail -9
fi
