#!/usr/bin/env bash
# Issue 12, verification side (H12a), on the GPU machine; run from the repo root, results under $OUT; ~4 min.
# 1. tests/gpu/test_judge_verify_gpu.py: one judge service judges the new cases of classes 4-7
#    (04_*_fresh, 05_*_view, 07_*_param, 08_*_prec), 08_fp16_operands_gemm and every honest case; each
#    must meet its expected.json for the right reason, honest ones with their audits recorded; plus the
#    reference worker's own audits (redraw of a timed call, precision, strides) on the GPU.
# 2. benchmarks/precision_audit.py: the table for K, honest ratios (from the verdicts of step 1) against
#    the ratios of emulated downgrades (fp16 / bf16 operands, TF32) of the same tasks.
# 3. The CPU tests of these parts.
set -uo pipefail
OUT=${OUT:-/tmp/judge-verify-out}
mkdir -p "$OUT"
export PYTHONPATH=src CUDA_AGENT_RESULTS="$OUT"
py=python3
start=$(date +%s)
timeout 300 $py -m pytest tests/gpu/test_judge_verify_gpu.py -q -s -p no:cacheprovider -x --no-header \
    >"$OUT/gpu_tests.txt" 2>&1
echo "GPU tests rc=$? (0 expected), $(( $(date +%s) - start )) s"
grep -E "^[0-9a-z_]+ +(ok|incorrect|rejected|runtime_error|task_error|timeout) " "$OUT/gpu_tests.txt" | \
    awk '{printf "  %-40s %-14s %s\n", $1, $2, $3}'
tail -15 "$OUT/gpu_tests.txt"
$py - "$OUT/judge_verify.json" <<'PY'
import json, sys
try:
    verdicts = json.load(open(sys.argv[1]))
except OSError:
    sys.exit("no verdicts written")
print(f"\n{'case':40s} {'status':14s} {'rew':>4s} {'prec ratio':>10s} {'checks':>6s}  reason")
for name, v in verdicts.items():
    c = v.get("checks", {})
    ratio = c.get("precision_error_ratio")
    print(f"{name:40s} {v['status']:14s} {v['reward']:+4d} {ratio if ratio is not None else '-':>10} "
          f"{c.get('timed_spot_checks', '-'):>6}  {v['reason'][:110]}")
PY
timeout 150 $py benchmarks/precision_audit.py --verdicts "$OUT/judge_verify.json" --out "$OUT/precision" \
    >"$OUT/precision.txt" 2>"$OUT/precision.stderr"
echo "precision table rc=$? (0: every honest ratio below K)"; cat "$OUT/precision.txt"; tail -3 "$OUT/precision.stderr"
timeout 120 $py -m pytest tests/judge/test_verification_audits.py tests/judge/test_timed_checks.py \
    tests/judge/test_verify_pipeline.py -q -p no:cacheprovider 2>&1 | tail -3 | tee "$OUT/cpu_tests.txt"
echo "total $(( $(date +%s) - start )) s"
