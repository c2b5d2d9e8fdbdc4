#!/usr/bin/env bash
# GPU check of issue 12's attribution/static side (H12c), in one go (about 5 minutes on one H200):
#  1. GPU tests: binary kernel names == profiler names; pitched copies reported as copies.
#  2. The new adversarial cases (cheats of classes 1-3 and the honest false-positive probes) plus an earlier
#     honest case, through scripts/gpu_suite.py (one judge process per GPU), verdicts in $OUT/suite.
# Run from the repo root:  OUT=/tmp/out bash scripts/device/judge_attr.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python}
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv | tee "$OUT/gpu.txt"
$PY -m pytest -q -x tests/gpu/test_attribution_gpu.py -s 2>&1 | tee "$OUT/attr_tests.log"
tests=${PIPESTATUS[0]}
CASES=(
  00_honest_cublas_gemv 00_honest_inc_kernel_body 00_honest_launch_bounds_before_type 00_honest_macro_kernel_name
  00_honest_memcpy2d_concat 00_honest_stream_from_pool 00_honest_warp_size_default_stream
  02_comment_named_kernels 02_kernels_in_aten_namespace
  04_cpp_counter_aten_after_verify 04_cpp_counter_nothing_after_verify 04_python_profiler_detect
  10_cpp_asm_label_python 10_dict_patch_opgate 10_frame_walk_sampler 10_pybind_alias_exec 10_type_setattr_event_timer
  00_honest_joined_side_stream
)
timeout 280 $PY scripts/gpu_suite.py --out "$OUT/suite" "${CASES[@]/#/tests/adversarial/}" 2>&1 | tee "$OUT/suite.log"
suite=${PIPESTATUS[0]}
echo "attribution tests exit $tests, suite exit $suite (0 = every case as expected)" | tee "$OUT/summary.txt"
[ "$tests" = 0 ] && [ "$suite" = 0 ]
