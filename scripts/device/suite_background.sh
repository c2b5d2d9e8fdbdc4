#!/usr/bin/env bash
# The whole adversarial suite and the examples in one judge process on one GPU, across device calls of
# < 10 min: PART=start launches scripts/gpu_suite.py in its own session (it outlives the call while the
# machine is held) and waits; PART=wait waits for it to end. Both copy the verdicts so far to $OUT.
#   OUT=/tmp/o PART=start WAIT_S=540 bash scripts/device/suite_background.sh
# GPUS=2 (an nvidia-h200-x2 machine): one judge process per GPU, about half the wall time (the whole suite
# is ~26 min on one H200: 81 distinct tasks cold). WARM_BESIDE=1: issue 34's warm-up beside timing.
# FIRST="folders": those cases judged first, then the rest (their verdicts joined by --earlier).
# COMPILE_BUILDS=1: one torch.compile build per cold task's baseline instead of three (see gpu_suite.py).
# CODE=<tar>: judge with the tree of `git archive -o .cache/suite_code.tar <commit>` (carried), so that a
# suite begun in one session by that commit's judge can be finished in another with EARLIER= its verdicts
# (gpu_suite.py joins only verdicts of the same judge code).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
S=/tmp/suite-bg
if [ "${PART:-start}" = start ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | sed 's/^/already on the GPU: /'
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
  mkdir -p $S
  extra=(); [ "${WARM_BESIDE:-0}" = 1 ] && extra=(--warm-beside-timing)
  [ -n "${COMPILE_BUILDS:-}" ] && extra+=(--compile-builds "$COMPILE_BUILDS")
  [ -n "${LANE_DEPTH:-}" ] && extra+=(--lane-depth "$LANE_DEPTH")  # LANE_DEPTH=2: two judgments per GPU
  [ "${LANE_PREEMPT:-0}" = 1 ] && extra+=(--lane-preempt)  # with LANE_DEPTH=2: timings freeze the other's readers
  # FIRST="case folders": judged before the rest (when a session cannot wait for the whole suite)
  export FIRST="${FIRST:-}" GPUS="${GPUS:-1}"
  # EARLIER="files": verdicts.jsonl of parts judged before (by this judge code), not judged again
  export EARLIER="${EARLIER:-}"
  if [ -n "${CODE:-}" ]; then
    EARLIER=$(for f in $EARLIER; do realpath "$f"; done | tr '\n' ' ')
    rm -rf /tmp/suite-code && mkdir -p /tmp/suite-code && tar -xf "$CODE" -C /tmp/suite-code || exit 1
    cd /tmp/suite-code && echo "judging with the code of $CODE"
  fi
  setsid nohup bash -c 'set -u; earlier=($EARLIER)
    if [ -n "${FIRST:-}" ]; then
      python3 scripts/gpu_suite.py --gpus "${GPUS:-1}" "$@" --out '$S'/first $FIRST
      earlier+=('$S'/first/verdicts.jsonl)
    fi
    python3 scripts/gpu_suite.py --gpus "${GPUS:-1}" "$@" --out '$S' examples tests/adversarial \
      ${earlier[0]+--earlier "${earlier[@]}"}' \
    _ "${extra[@]}" > $S/suite.log 2>&1 < /dev/null &
fi
end=$((SECONDS + ${WAIT_S:-540}))
while [ $SECONDS -lt $end ] && pgrep -f scripts/gpu_suite.py > /dev/null; do sleep 5; done
cp $S/verdicts.jsonl $S/suite.log "$OUT/" 2>/dev/null; cp $S/first/verdicts.jsonl "$OUT/first.jsonl" 2>/dev/null
echo "judged so far: $(cat $S/first/verdicts.jsonl $S/verdicts.jsonl 2>/dev/null | wc -l); running: $(pgrep -fc scripts/gpu_suite.py)"
grep -c "^\[gpu[0-9]*\] BAD" $S/suite.log; grep "^\[gpu[0-9]*\] BAD\|judged on" $S/suite.log | cut -c1-200
