#!/usr/bin/env bash
# The project's test command: set up, lint, then every test (GPU tests are skipped without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests benchmarks scripts
# verl (recipes/cuda_agent/, tests/verl/): its own environment, since verl 0.9.1 pins transformers<5.11
# (scripts/setup_verl.sh, ~1-2 min the first time). Runs with the full suite, i.e. without arguments;
# CUDA_AGENT_SKIP_VERL=1 leaves it out. The main run below skips tests/verl (no verl in .venv).
# The verl part (mostly unpacking wheels and importing) runs beside the main suite, which waits on
# compilers and servers much of the time; its output comes after the main suite's (issue 32: <= 15 min).
verl_pid=""
verl_log=$(mktemp -t cuda-agent-verl-tests.XXXXXX)
if [ $# -eq 0 ] && [ -z "${CUDA_AGENT_SKIP_VERL:-}" ]; then
    (bash scripts/setup_verl.sh && .venv-verl/bin/python -m pytest tests/verl) > "$verl_log" 2>&1 &
    verl_pid=$!
    trap 'kill "$verl_pid" 2>/dev/null || true' INT TERM
    echo "[test] tests/verl runs beside the main suite; its output follows the main suite's"
fi
# The whole suite runs in two processes (pytest-xdist, each file's tests in one of them) where no GPU is
# visible: its tests wait on compilers, servers and subprocesses, and on the 2-core CI machine two
# processes took 11 min where one took 21 (2026-12-04). With a GPU, or for tests named on the command
# line, one process: GPU tests time kernels and must not share the GPU with another test.
# CUDA_AGENT_TEST_PROCESSES=1 runs the whole suite in one process.
parallel=()
processes=${CUDA_AGENT_TEST_PROCESSES:-2}
if [ $# -eq 0 ] && [ "$processes" -gt 1 ] && ! nvidia-smi -L >/dev/null 2>&1; then
    parallel=(-n "$processes" --dist loadfile)
    echo "[test] $processes test processes (no GPU visible; CUDA_AGENT_TEST_PROCESSES=1 for one)"
fi
# Tests marked `alone` time sleeps by the host's clock (the judge's timing stage against scripted workers):
# beside the other process's compilers they overslept and failed now and then (2026-12-07), so a parallel
# run leaves them out and runs them afterwards in one process, with nothing beside them (about 20 s).
selection=()
[ ${#parallel[@]} -gt 0 ] && selection=(-m "not alone")
status=0
.venv/bin/python -m pytest ${parallel[@]+"${parallel[@]}"} ${selection[@]+"${selection[@]}"} "$@" || status=$?
verl_status=0
[ -z "$verl_pid" ] || wait "$verl_pid" || verl_status=$?
if [ ${#selection[@]} -gt 0 ]; then
    echo "===== tests marked alone (the host's clock), run after the parallel suite ====="
    alone_status=0
    .venv/bin/python -m pytest -q -m alone || alone_status=$?
    [ "$status" -ne 0 ] || status=$alone_status
fi
if [ -n "$verl_pid" ]; then
    echo "===== tests/verl (.venv-verl), run beside the main suite ====="
    cat "$verl_log"
    if [ "$verl_status" -ne 0 ]; then
        echo "[test] tests/verl failed (exit $verl_status)"
        [ "$status" -ne 0 ] || status=$verl_status
    fi
fi
rm -f "$verl_log"
exit "$status"
