#!/usr/bin/env bash
# Issue 12 (H12s): the judge laid out by trust boundary, and timed rounds traced at random, on the GPU.
# Run from the repo root with PYTHONPATH=src (and /tmp/site); results under $OUT; about 5 min.
# 1. The layout's boundary, on the device's python: the candidate worker's import closure holds no
#    trusted/ or decide/ module (tests/judge/test_layout_boundary.py), and the traced-round CPU tests.
# 2. One `cuda-agent judge` process judges honest examples, a torch fallback, and four adversarial
#    cases that behave differently on timed calls (04_*): every verdict shows how many timed rounds
#    were traced (checks.traced_timed_rounds >= 1) and the timed coverage; honest ones must be ok.
#    04_profiler_state_detect_cpp reads the profiler's state and is EXPECTED to still get through
#    (the residual signal documented in docs/design/trust_boundary.md); it is listed for the record.
# 3. tests/gpu/test_judge_gpu.py: the end-to-end GPU tests of the judge (real candidate workers).
set -uo pipefail
OUT=${OUT:-/tmp/judge-layout-out}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src}
py=python3
start=$(date +%s)
timeout 120 $py -m pytest tests/judge/test_layout_boundary.py tests/judge/test_traced_rounds.py -q \
    -p no:cacheprovider 2>&1 | tail -3 | tee "$OUT/layout_tests.txt"
cases=(examples/elementwise_chain examples/layernorm examples/row_softmax examples/torch_fallback_forward)
for c in 04_cpp_counter_aten_after_verify 04_cpp_counter_nothing_after_verify 04_python_profiler_detect \
         04_profiler_state_detect_cpp; do
    [ -d "tests/adversarial/$c" ] && cases+=("tests/adversarial/$c")
done
timeout 240 $py -m cuda_agent judge "${cases[@]}" --json --out "$OUT/verdicts.jsonl" \
    >/dev/null 2>"$OUT/judge.stderr"
echo "judge rc=$? (0 expected), $(( $(date +%s) - start )) s"
$py - "$OUT/verdicts.jsonl" "${cases[@]}" <<'PY'
import json, sys
from pathlib import Path
lines = Path(sys.argv[1]).read_text().splitlines() if Path(sys.argv[1]).exists() else []
print(f"{'case':44s} {'expect':>6s} {'status':14s} {'rew':>4s} {'traced':>6s} {'cov_t':>6s} {'total_s':>7s}  reason")
for case, line in zip(sys.argv[2:], lines):
    v = json.loads(line)
    c = v.get("checks", {})
    exp = json.loads((Path(case) / "expected.json").read_text()) if (Path(case) / "expected.json").exists() else {}
    want = exp.get("expect") or exp.get("status") or "-"
    cov = (c.get("coverage_timed") or {}).get("share_in_submitted_kernels")
    print(f"{Path(case).name:44s} {str(want)[:6]:>6s} {v['status']:14s} {v['reward']:+4d} "
          f"{c.get('traced_timed_rounds', '-')!s:>6s} {cov if cov is None else round(cov, 2)!s:>6s} "
          f"{v.get('stage_seconds', {}).get('total', 0):7.1f}  {v['reason'][:100]}")
PY
tail -3 "$OUT/judge.stderr"
timeout 200 $py -m pytest tests/gpu/test_judge_gpu.py -q -p no:cacheprovider -x 2>&1 | tail -5 | tee "$OUT/gpu_tests.txt"
echo "total $(( $(date +%s) - start )) s"
