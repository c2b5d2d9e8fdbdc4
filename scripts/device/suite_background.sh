#!/usr/bin/env bash
# The whole adversarial suite and the examples in one judge process on one GPU, across device calls of
# < 10 min: PART=start launches scripts/gpu_suite.py in its own session (it outlives the call while the
# machine is held) and waits; PART=wait waits for it to end. Both copy the verdicts so far to $OUT.
#   OUT=/tmp/o PART=start WAIT_S=540 bash scripts/device/suite_background.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
S=/tmp/suite-bg
if [ "${PART:-start}" = start ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
  mkdir -p $S
  setsid nohup python3 scripts/gpu_suite.py --gpus 1 --out $S examples tests/adversarial > $S/suite.log 2>&1 < /dev/null &
fi
end=$((SECONDS + ${WAIT_S:-540}))
while [ $SECONDS -lt $end ] && pgrep -f scripts/gpu_suite.py > /dev/null; do sleep 5; done
cp $S/verdicts.jsonl $S/suite.log "$OUT/" 2>/dev/null
echo "judged so far: $(wc -l < $S/verdicts.jsonl); running: $(pgrep -fc scripts/gpu_suite.py)"
grep -c "^\[gpu0\] BAD" $S/suite.log; grep "^\[gpu0\] BAD\|judged on" $S/suite.log | cut -c1-200
