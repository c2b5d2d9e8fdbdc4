#!/usr/bin/env bash
# Issue 35's KernelBench degeneracy audit with the sign audit, finished across device calls: two H100
# calls of 2026-12-05 and one of 2026-12-06 (docs/data/kernelbench_degeneracy_h100_signs.json) audited 214
# of 250 tasks; Average_Pooling_2D's record is an out-of-memory error of the sign audit (fixed since). Each call
# audits it again once with --only (RERUN; error records name the raising frames), then resumes the
# rest (--resume keeps audited records, errors included, so reruns are joined with --merge, where later
# files win per task), and writes the joined records and table to $OUT.
#   run 1:   OUT=$OUT bash scripts/device/kernelbench_degeneracy_rest.sh     carry [".cache/kernelbench"]
#   then, here: mkdir -p .cache/kb_degeneracy && cp <files_at>/state/*.json .cache/kb_degeneracy/
#   run k:   the same command, carry [".cache/kernelbench", ".cache/kb_degeneracy"]; until it prints "all done"
#   at last: cp <files_at>/kb_degeneracy.json docs/data/kernelbench_degeneracy_h100_signs.json and
#            <files_at>/kernelbench_degeneracy.md over docs/kernelbench_degeneracy.md's table
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-out}; D=.cache/kb_degeneracy; mkdir -p "$OUT/state" "$D"
KB=${KB:-.cache/kernelbench}; DEVICE=${DEVICE:-cuda}
# A broken environment would be recorded as an error on every task, and --resume keeps errors: stop first.
python3 -c "import sys, torch; sys.exit(0 if sys.argv[1] != 'cuda' or torch.cuda.is_available() else 1)" "$DEVICE" 2>/dev/null \
  || { echo "python3 has no torch$([ "$DEVICE" = cuda ] && echo ' with a GPU'): nothing audited"; exit 3; }
[ -f "$D/kb_degeneracy.json" ] || cp docs/data/kernelbench_degeneracy_h100_signs.json "$D/kb_degeneracy.json"
# A rerun record that is still an error (the run before the fix) is audited again.
for task in ${RERUN:-45_Average_Pooling_2D}; do
  if [ ! -f "$D/rerun_$task.json" ] || grep -q '"status": *"error"' "$D/rerun_$task.json"; then
    python3 scripts/kernelbench_degeneracy.py "$KB" --device "$DEVICE" --only "$task" \
      --json "$D/rerun_$task.json" 2>&1 | tail -2
  fi
done
python3 scripts/kernelbench_degeneracy.py "$KB" --levels 1-3 --device "$DEVICE" --jobs "${JOBS:-4}" \
  --budget "${BUDGET:-420}" --resume "$D/kb_degeneracy.json" --json "$D/kb_degeneracy.json" 2>&1 | tail -3
python3 scripts/kernelbench_degeneracy.py --merge "$D/kb_degeneracy.json" "$D"/rerun_*.json \
  --json "$OUT/kb_degeneracy.json" --markdown "$OUT/kernelbench_degeneracy.md" 2>&1 | tail -2
cp "$D"/*.json "$OUT/state/"
python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['tasks']; print('all done' if all(r['status']!='skipped' for r in t) else str(sum(r['status']=='skipped' for r in t))+' tasks left')" "$OUT/kb_degeneracy.json"
