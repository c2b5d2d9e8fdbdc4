#!/usr/bin/env bash
# Stage 4: agentic PPO. CudaAgentLoop runs whole episodes (our ten tools in a fresh workspace, up to
# 131,072 tokens), the judge's milestone reward ends each one; PPO with the critic pretrained in stage 3
# (GAE with gamma = lambda = 1: every token's return is the episode's reward), dynamic batch sizes and
# Ulysses sequence parallelism so one 131k-token episode fits, 150 steps.
#   cuda-agent train verl-data ops6k.parquet --format agent --out data/stage4 --val-size 64
#   ACTOR=ckpt/rft/huggingface CRITIC=ckpt/critic JUDGE_URL=http://judge-host:8765 NNODES=4 \
#       bash recipes/cuda_agent/stage4_agentic_ppo.sh
source "$(dirname "$0")/common.sh"
ACTOR=${ACTOR:?set ACTOR to the RFT model of stage 3 (a Hugging Face folder)}
CRITIC=${CRITIC:?set CRITIC to the value-pretrained critic of stage 3 (cuda-agent train value --out)}
DATA=${DATA:-data/stage4}
NNODES=${NNODES:-1}
NGPUS=${NGPUS:-8}
CONTEXT=${CONTEXT:-131072}      # tokens per episode: prompt + every turn and tool result
PROMPT_LEN=${PROMPT_LEN:-8192}  # the opening messages: SKILL.md, the environment, the task, the tool schemas
SP=${SP:-8}                     # Ulysses sequence parallel size: CONTEXT / SP tokens per GPU
TP=${TP:-8}
BATCH=${BATCH:-64}
STEPS=${STEPS:-150}
TOOL_FORMAT=${TOOL_FORMAT:-hermes}  # verl's tool parser for the model family (hermes: Qwen2.5/Qwen3)
AGENT_WORKERS=${AGENT_WORKERS:-8}
ppo_common stage4_agentic_ppo
run_module verl.trainer.main_ppo \
    algorithm.adv_estimator=gae \
    algorithm.gamma=1.0 \
    algorithm.lam=1.0 \
    algorithm.use_kl_in_reward=False \
    data.train_files="$DATA/train.parquet" \
    data.val_files="$DATA/val.parquet" \
    data.prompt_key=prompt \
    data.return_raw_chat=True \
    data.max_prompt_length="$PROMPT_LEN" \
    data.max_response_length=$((CONTEXT - PROMPT_LEN)) \
    data.train_batch_size="$BATCH" \
    data.filter_overlong_prompts=True \
    actor_rollout_ref.model.path="$ACTOR" \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size="$BATCH" \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$((CONTEXT / SP)) \
    actor_rollout_ref.actor.ulysses_sequence_parallel_size="$SP" \
    actor_rollout_ref.actor.clip_ratio=0.2 \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.mode=async \
    actor_rollout_ref.rollout.n=1 \
    actor_rollout_ref.rollout.tensor_model_parallel_size="$TP" \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.max_model_len="$CONTEXT" \
    actor_rollout_ref.rollout.multi_turn.enable=True \
    actor_rollout_ref.rollout.multi_turn.format="$TOOL_FORMAT" \
    actor_rollout_ref.rollout.agent.agent_loop_config_path="$AGENT_LOOP_CONFIG" \
    actor_rollout_ref.rollout.agent.default_agent_loop=cuda_agent \
    actor_rollout_ref.rollout.agent.num_workers="$AGENT_WORKERS" \
    critic.model.path="$CRITIC" \
    critic.model.use_remove_padding=True \
    critic.model.enable_gradient_checkpointing=True \
    critic.optim.lr=1e-5 \
    critic.ppo_max_token_len_per_gpu=$((CONTEXT / SP)) \
    critic.ulysses_sequence_parallel_size="$SP" \
    "${RAY_ENV[@]}" \
    "${PPO_COMMON[@]}" \
    trainer.total_training_steps="$STEPS" \
    trainer.critic_warmup=0 \
    trainer.nnodes="$NNODES" \
    trainer.n_gpus_per_node="$NGPUS" \
    trainer.logger='[console]' \
    trainer.project_name=cuda_agent \
    trainer.experiment_name=stage4_agentic_ppo \
    trainer.val_before_train=False \
    trainer.save_freq=10 \
    trainer.test_freq=10 \
    "$@"
