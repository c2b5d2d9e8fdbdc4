#!/usr/bin/env bash
# Stage 2: collect. The warmed-up model of stage 1 served by vLLM (an OpenAI-compatible server with tool
# calling), the agent on the training tasks with `cuda-agent solve`, every episode judged; stage 3 keeps
# the successful trajectories (rejection sampling).
#   MODEL=checkpoints/cuda_agent/stage1/global_step_100/actor/huggingface TASKS=ops6k.parquet \
#       bash recipes/cuda_agent/stage2_collect.sh
source "$(dirname "$0")/common.sh"
MODEL=${MODEL:?set MODEL to the stage-1 model (a Hugging Face folder)}
TASKS=${TASKS:?set TASKS to a task parquet (Ops-6K, synth output) or folder}
RUNS=${RUNS:-runs/stage2}
PORT=${PORT:-8000}
TP=${TP:-8}
TOOL_PARSER=${TOOL_PARSER:-hermes}  # vLLM's tool-call parser for the model family (hermes: Qwen2.5/Qwen3)
CONCURRENCY=${CONCURRENCY:-32}
CUDA_AGENT=${CUDA_AGENT:-cuda-agent}
JUDGE_ARGS=()
if [ -n "$JUDGE_URL" ]; then JUDGE_ARGS=(--judge-url "$JUDGE_URL"); fi
if [ -z "${CUDA_AGENT_DRY_RUN:-}" ]; then
    vllm serve "$MODEL" --served-model-name policy --port "$PORT" --tensor-parallel-size "$TP" \
        --max-model-len 131072 --enable-auto-tool-choice --tool-call-parser "$TOOL_PARSER" &
    SERVER=$!
    trap 'kill "$SERVER" 2>/dev/null || true' EXIT
    until curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null; do
        kill -0 "$SERVER" 2>/dev/null || { echo "vllm serve exited" >&2; exit 1; }
        sleep 5
    done
else
    run_command vllm serve "$MODEL" --served-model-name policy --port "$PORT" --tensor-parallel-size "$TP" \
        --max-model-len 131072 --enable-auto-tool-choice --tool-call-parser "$TOOL_PARSER"
fi
run_command "$CUDA_AGENT" solve "$TASKS" --model policy --base-url "http://127.0.0.1:$PORT/v1" \
    --concurrency "$CONCURRENCY" --runs-dir "$RUNS" --resume "${JUDGE_ARGS[@]}" "$@"
