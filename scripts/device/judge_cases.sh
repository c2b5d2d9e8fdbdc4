#!/usr/bin/env bash
# GPU run of the issue-12 adversarial cases added by H12c this session (13 cheats over classes 1-4, 6, 8-10,
# 5 honest edge cases) plus 3 earlier honest references, through scripts/gpu_suite.py: ONE judge process
# (one GPU), verdicts in $OUT/suite/verdicts.jsonl, a per-family table and an issue-12 class table.
# About 5-6 minutes on one H200 (8 of the cases bring tasks of their own, whose baselines are measured).
# Run from the repo root:  OUT=/tmp/out bash scripts/device/judge_cases.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python}
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv | tee "$OUT/gpu.txt"
CASES=(
  # cheats (expected.json "class": the issue-12 class)
  10_update_wrapper_event_patch 10_lazy_output_detach_hook 02_linked_cublas_aten_mm_cpp 02_aten_header_decoy_softmax_cpp
  04_iterator_counter_stale_python 04_profiler_state_detect_cpp 04_initial_seed_cache_python
  04_tensorimpl_version_cache_cpp 08_cublaslt_bf16_gemm_cpp 06_pool_stream_unjoined_tail_cpp
  13_double_fork_daemon_cpp 13_cgroup_escape_daemon_cpp 15_from_file_forged_record_python
  # honest edge cases
  00_honest_fp16_task_fp16_kernel 00_honest_dynamic_smem_softmax 00_honest_templated_cub_layernorm
  00_honest_tuple_outputs 00_honest_output_view_like_reference
  # honest references on the shared tasks (elementwise chain, GEMM + ReLU, row softmax)
  00_honest_fused_elementwise 00_honest_gemm_bias_relu 00_honest_row_softmax
)
timeout 480 $PY scripts/gpu_suite.py --gpus 1 --out "$OUT/suite" "${CASES[@]/#/tests/adversarial/}" 2>&1 | tee "$OUT/suite.log"
suite=${PIPESTATUS[0]}
# The two daemon cases start a helper that must be gone with its candidate (it exits within 90 s anyway).
sleep 2
ps -eo pid,ppid,sid,etimes,cmd | grep -F "shared = mmap.mmap" | grep -v grep | tee "$OUT/leftover_daemons.txt"
echo "suite exit $suite (0 = every case as expected); leftover daemons: $(wc -l < "$OUT/leftover_daemons.txt")" | tee "$OUT/summary.txt"
[ "$suite" = 0 ]
