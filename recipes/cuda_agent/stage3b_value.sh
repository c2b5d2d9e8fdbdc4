#!/usr/bin/env bash
# Stage 3b: value pretraining, so stage 4's PPO starts with a critic that already knows what a good session
# looks like: a token-level critic (AutoModelForTokenClassification, num_labels=1: what verl's
# critic.model.path loads) trained to predict the episode's milestone reward at every assistant token, on
# successful AND failed trajectories. Part 1's `cuda-agent train value` (HF Trainer; `accelerate launch`
# for several GPUs). The online alternative is verl's own: stage 4 with trainer.critic_warmup=K (K steps
# of critic updates with the actor frozen) and CRITIC=ACTOR, at the price of K steps of rollouts.
#   cuda-agent train rft-data runs/ --out value.parquet --min-reward -1 --any-exit
#   MODEL=checkpoints/cuda_agent/stage3a_rft/global_step_100/huggingface bash recipes/cuda_agent/stage3b_value.sh
source "$(dirname "$0")/common.sh"
MODEL=${MODEL:?set MODEL to the RFT model of stage 3a (its huggingface folder)}
VALUE_DATA=${VALUE_DATA:-value.parquet}
OUT=${OUT:-checkpoints/cuda_agent/stage3b_critic}
CUDA_AGENT=${CUDA_AGENT:-cuda-agent}
run_command "$CUDA_AGENT" train value --data "$VALUE_DATA" --model "$MODEL" --out "$OUT" \
    --max-length "${MAX_LENGTH:-131072}" --epochs "${EPOCHS:-2}" --bf16 --gradient-checkpointing "$@"
