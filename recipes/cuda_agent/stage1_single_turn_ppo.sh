#!/usr/bin/env bash
# Stage 1: single-turn PPO warm-up. One response per task holding every file (part 1's single-turn
# format), scored by the judge in CudaSingleTurnLoop (verl's single-turn loop plus our reward function:
# a response without a verdict is masked out of the loss); PPO with a critic (GAE).
#   cuda-agent train verl-data ops6k.parquet --format single_turn --out data/stage1 --val-size 64
#   JUDGE_URL=http://judge-host:8765 MODEL=Qwen/Qwen3-32B bash recipes/cuda_agent/stage1_single_turn_ppo.sh
source "$(dirname "$0")/common.sh"
MODEL=${MODEL:?set MODEL to the base model (a path or hub id)}
DATA=${DATA:-data/stage1}
NNODES=${NNODES:-1}
NGPUS=${NGPUS:-8}
PROMPT_LEN=${PROMPT_LEN:-8192}       # SKILL.md + format rules + the reference model.py
RESPONSE_LEN=${RESPONSE_LEN:-16384}  # one response with all the files
BATCH=${BATCH:-64}
STEPS=${STEPS:-100}
TP=${TP:-4}
ppo_common stage1_single_turn_ppo
run_module verl.trainer.main_ppo \
    algorithm.adv_estimator=gae \
    algorithm.gamma=1.0 \
    algorithm.lam=1.0 \
    algorithm.use_kl_in_reward=False \
    data.train_files="$DATA/train.parquet" \
    data.val_files="$DATA/val.parquet" \
    data.prompt_key=prompt \
    data.max_prompt_length="$PROMPT_LEN" \
    data.max_response_length="$RESPONSE_LEN" \
    data.train_batch_size="$BATCH" \
    data.filter_overlong_prompts=True \
    data.truncation=error \
    actor_rollout_ref.model.path="$MODEL" \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size="$BATCH" \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$((PROMPT_LEN + RESPONSE_LEN)) \
    actor_rollout_ref.actor.clip_ratio=0.2 \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.mode=async \
    actor_rollout_ref.rollout.n=1 \
    actor_rollout_ref.rollout.tensor_model_parallel_size="$TP" \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.agent.agent_loop_config_path="$AGENT_LOOP_CONFIG" \
    actor_rollout_ref.rollout.agent.default_agent_loop=cuda_agent_single_turn \
    critic.model.path="$MODEL" \
    critic.model.use_remove_padding=True \
    critic.model.enable_gradient_checkpointing=True \
    critic.optim.lr=1e-5 \
    critic.ppo_max_token_len_per_gpu=$((PROMPT_LEN + RESPONSE_LEN)) \
    reward.custom_reward_function.path="$REWARD_FUNCTION" \
    reward.custom_reward_function.name=compute_score \
    "${RAY_ENV[@]}" \
    "${PPO_COMMON[@]}" \
    trainer.total_training_steps="$STEPS" \
    trainer.nnodes="$NNODES" \
    trainer.n_gpus_per_node="$NGPUS" \
    trainer.logger='[console]' \
    trainer.project_name=cuda_agent \
    trainer.experiment_name=stage1_single_turn_ppo \
    trainer.val_before_train=False \
    trainer.save_freq=20 \
    trainer.test_freq=20 \
    "$@"
