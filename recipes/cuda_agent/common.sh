# Shared by the stage scripts (sourced, not run): paths, the Python that has verl, and dry runs.
# Every setting is an environment variable with a default; extra arguments to a stage script are passed
# to verl as Hydra overrides, after ours, so they win (e.g. `trainer.n_gpus_per_node=4`).
# CUDA_AGENT_DRY_RUN=1 prints what would run instead of running it: the module on the first line, then
# one Hydra override (or argument) per line. tests/verl/ composes exactly those lines with verl's configs.
set -euo pipefail
RECIPE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
# The agent-loop YAML and the reward function ship inside the cuda_agent package.
AGENT_LOOP_CONFIG=${AGENT_LOOP_CONFIG:-$("$PYTHON" -c "import cuda_agent.train.verl as v; print(v.AGENT_LOOP_CONFIG)")}
REWARD_FUNCTION=pkg://cuda_agent.train.verl.reward

# run_module MODULE ARGS...: python -m MODULE ARGS (torchrun for SFT), or print them under a dry run.
run_module() {
    local module=$1
    shift
    if [ -n "${CUDA_AGENT_DRY_RUN:-}" ]; then
        printf '%s\n' "$module" "$@"
        return 0
    fi
    if [ "$module" = verl.trainer.sft_trainer ]; then
        exec torchrun --standalone --nnodes=1 --nproc_per_node="${NGPUS:-8}" -m "$module" "$@"
    fi
    exec "$PYTHON" -m "$module" "$@"
}

# run_command COMMAND...: a plain command (vllm serve, cuda-agent), or printed under a dry run.
run_command() {
    if [ -n "${CUDA_AGENT_DRY_RUN:-}" ]; then
        printf '%q ' "$@"
        printf '\n'
        return 0
    fi
    "$@"
}

# The judge: JUDGE_URL names a judge server (`cuda-agent serve`, one per cluster or per node) on GPUs of
# its own, which stages 1 and 4 require by default; JUDGE_URL=local judges in every rollout/reward worker
# on its own node's GPUs instead, the GPUs vLLM and the trainer use (Ray leaves CUDA_VISIBLE_DEVICES as
# the node's in verl's GPU-less agent-loop workers): a judgment then contends with them, and a verdict
# contention can cause is masked as judge_error (train/unjudged.py), so fewer samples train.
# Ray hands these variables to every worker on every node (job runtime_env). The token is never put on a
# command line (verl prints its config): name a file holding it (on a filesystem all nodes see) in
# CUDA_AGENT_JUDGE_TOKEN_FILE.
JUDGE_URL=${JUDGE_URL:-}
JUDGE_FOR_RAY=$JUDGE_URL
if [ "$JUDGE_URL" = local ]; then JUDGE_FOR_RAY=; fi
RAY_ENV=()
for pair in "CUDA_AGENT_JUDGE_URL=$JUDGE_FOR_RAY" "CUDA_AGENT_JUDGE_TOKEN_FILE=${CUDA_AGENT_JUDGE_TOKEN_FILE:-}" \
            "CUDA_AGENT_JUDGE_TIMEOUT_S=${CUDA_AGENT_JUDGE_TIMEOUT_S:-}" \
            "CUDA_AGENT_FAILURE_REWARD=${CUDA_AGENT_FAILURE_REWARD:-}" \
            "CUDA_AGENT_ROLLOUT_DIR=${CUDA_AGENT_ROLLOUT_DIR:-}"; do
    if [ -n "${pair#*=}" ]; then RAY_ENV+=("+ray_kwargs.ray_init.runtime_env.env_vars.$pair"); fi
done

# Shared by stages 1 and 4 (verl's PPO trainer), set by each as `ppo_common EXPERIMENT`:
# - what the policy wrote, decoded, one JSONL file per step (verl's trainer.rollout_data_dir), on by
#   default (rollouts/EXPERIMENT) so a run can be read; ROLLOUT_DATA_DIR=null turns it off;
# - verl v1's replay buffer plus the count of samples without a verdict (masked out of the loss) in
#   every step's metrics: cuda_agent/unjudged_total, cuda_agent/unjudged_fraction, ... (train/verl/sampler.py);
# - rollout correction (verl 0.9.1's algorithm.rollout_correction, the variables named after its keys):
#   importance weights between the inference engine's log-probabilities (vLLM, bf16, the weights of the
#   last sync) and the trainer's, and optional rejection of samples whose ratio strays. Off by default
#   (verl's default: ROLLOUT_IS=null); ROLLOUT_IS=token ROLLOUT_IS_THRESHOLD=2.0 is truncated IS per
#   token, =sequence per sequence; ROLLOUT_RS=seq_mean_k3 ROLLOUT_RS_THRESHOLD=0.2 rejects; the
#   rollout_corr/* metrics (the log-prob gap) are logged whenever the rollout returns log-probabilities
#   (actor_rollout_ref.rollout.calculate_log_probs, on here). recipes/cuda_agent/README.md has the table.
ppo_common() {
    if [ -z "$JUDGE_URL" ]; then
        echo "set JUDGE_URL to a judge server on GPUs of its own (cuda-agent serve --gpus N; recipes/cuda_agent/README.md)," \
             "or JUDGE_URL=local to judge on the training GPUs (contention masks samples)" >&2
        exit 2
    fi
    PPO_COMMON=(
    "trainer.rollout_data_dir=${ROLLOUT_DATA_DIR:-rollouts/$1}"
    "trainer.v1.sampler.custom_sampler.path=pkg://cuda_agent.train.verl.sampler"
    "trainer.v1.sampler.custom_sampler.name=JudgedReplayBuffer"
    "actor_rollout_ref.rollout.calculate_log_probs=True"
    "algorithm.rollout_correction.rollout_is=${ROLLOUT_IS:-null}"
    "algorithm.rollout_correction.rollout_is_threshold=${ROLLOUT_IS_THRESHOLD:-2.0}"
    "algorithm.rollout_correction.rollout_is_batch_normalize=${ROLLOUT_IS_BATCH_NORMALIZE:-False}"
    "algorithm.rollout_correction.rollout_rs=${ROLLOUT_RS:-null}"
    "algorithm.rollout_correction.rollout_rs_threshold=${ROLLOUT_RS_THRESHOLD:-null}"
    "algorithm.rollout_correction.bypass_mode=${ROLLOUT_CORRECTION_BYPASS_MODE:-False}"
    )
}
