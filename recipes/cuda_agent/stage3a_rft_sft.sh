#!/usr/bin/env bash
# Stage 3a: RFT, supervised fine-tuning of the warmed-up actor on the kept trajectories of stage 2, with
# verl's multi-turn SFT trainer (loss on assistant tokens). It reads part 1's parquet as it is: the
# dataset class named below only decodes the `tools` column (JSON text) for the chat template.
#   cuda-agent train rft-data runs/ --out sft.parquet --min-reward 2 --per-task 4
#   MODEL=ckpt/stage1/huggingface SFT_DATA=sft.parquet bash recipes/cuda_agent/stage3a_rft_sft.sh
# The fine-tuned model is saved in Hugging Face form under OUT/global_step_<N>/huggingface: that folder
# is stage 3b's --model and stage 4's ACTOR. One GPU instead: `cuda-agent train sft` (TRL).
source "$(dirname "$0")/common.sh"
MODEL=${MODEL:?set MODEL to the stage-1 model (a Hugging Face folder)}
SFT_DATA=${SFT_DATA:-sft.parquet}
OUT=${OUT:-checkpoints/cuda_agent/stage3a_rft}
NGPUS=${NGPUS:-8}
MAX_LENGTH=${MAX_LENGTH:-131072}  # whole trajectories, as long as stage 4's context
SP=${SP:-8}
EPOCHS=${EPOCHS:-2}
run_module verl.trainer.sft_trainer \
    data.train_files="$SFT_DATA" \
    data.val_files=null \
    data.messages_key=messages \
    data.tools_key=tools \
    data.custom_cls.path=pkg://cuda_agent.train.verl.sft_dataset \
    data.custom_cls.name=RFTDataset \
    data.max_length="$MAX_LENGTH" \
    data.truncation=error \
    data.use_dynamic_bsz=True \
    data.max_token_len_per_gpu=$((MAX_LENGTH / SP)) \
    data.train_batch_size=32 \
    data.micro_batch_size_per_gpu=1 \
    model.path="$MODEL" \
    model.enable_gradient_checkpointing=True \
    model.use_remove_padding=True \
    engine.ulysses_sequence_parallel_size="$SP" \
    optim.lr=1e-5 \
    checkpoint.save_contents='[model,optimizer,extra,hf_model]' \
    trainer.default_local_dir="$OUT" \
    trainer.total_epochs="$EPOCHS" \
    trainer.n_gpus_per_node="$NGPUS" \
    trainer.logger='[console]' \
    trainer.project_name=cuda_agent \
    trainer.experiment_name=stage3a_rft \
    "$@"
