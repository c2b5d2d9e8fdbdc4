"""Every stage of recipes/cuda_agent/ composes through verl's own Hydra config and validates with verl's
config classes; the stages that are not verl runs (2, 3b) produce commands our CLI accepts.

The overrides are the scripts' own (their dry run prints them one per line), so a script that drifts
from verl 0.9.1's schema fails here, not on a cluster.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from importlib.metadata import version
from pathlib import Path

import pytest
import tomllib

pytest.importorskip("verl.trainer", reason="needs verl: these tests run in .venv-verl (bash scripts/setup_verl.sh)")

from verl_helpers import RECIPE, ROOT, compose, recipe_lines

from cuda_agent.train.verl import (
    AGENT_LOOP_CONFIG,
    AGENT_NAME,
    REWARD_FUNCTION_NAME,
    SINGLE_TURN_NAME,
    VERL_VERSION,
)


def _validate_ppo(config) -> None:
    """What verl's main_ppo checks before it starts Ray, plus the dataclasses its workers build."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    assert need_critic(config), "PPO with GAE needs the critic"
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=True)
    algorithm = omega_conf_to_dataclass(config.algorithm)
    assert (algorithm.adv_estimator, algorithm.gamma, algorithm.lam) == ("gae", 1.0, 1.0)
    rollout = omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
    for model in (config.actor_rollout_ref.model, config.critic.model):  # loads the tokenizer and HF config
        assert omega_conf_to_dataclass(model).hf_config.model_type == "qwen2"
    return rollout


def test_stage1_single_turn_ppo_composes_and_its_reward_function_loads(tiny_model: Path) -> None:
    lines = recipe_lines("stage1_single_turn_ppo.sh", MODEL=str(tiny_model), NGPUS="8",
                         JUDGE_URL="http://judge:8765")  # fmt: skip
    assert lines[0] == "verl.trainer.main_ppo"
    config = compose("ppo_trainer", lines[1:])
    rollout = _validate_ppo(config)
    assert rollout.agent.default_agent_loop == SINGLE_TURN_NAME
    assert Path(rollout.agent.agent_loop_config_path) == AGENT_LOOP_CONFIG
    assert config.ray_kwargs.ray_init.runtime_env.env_vars.CUDA_AGENT_JUDGE_URL == "http://judge:8765"
    _check_unjudged_counting(config, "stage1_single_turn_ppo")

    # stage 1's loop, as verl's worker reads the YAML: verl's single-turn loop, scored in the loop
    from hydra.utils import get_class
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

    (entry,) = [e for e in OmegaConf.load(rollout.agent.agent_loop_config_path) if e.name == SINGLE_TURN_NAME]
    assert issubclass(get_class(entry._target_), SingleTurnAgentLoop)

    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls

    from cuda_agent.train.verl import reward

    assert resolve_reward_manager_cls(config).__name__ == "NaiveRewardManager"
    fn = get_custom_reward_fn(config)  # verl's loader: pkg:// path, the name, async wrapped
    assert fn.args[0] is getattr(reward, REWARD_FUNCTION_NAME)


def test_stage4_agentic_ppo_composes_with_the_papers_settings(tiny_model: Path) -> None:
    lines = recipe_lines("stage4_agentic_ppo.sh", ACTOR=str(tiny_model), CRITIC=str(tiny_model), NNODES="2",
                         JUDGE_URL="http://judge:8765")  # fmt: skip
    config = compose("ppo_trainer", lines[1:])
    rollout = _validate_ppo(config)
    assert config.trainer.total_training_steps == 150
    assert config.data.max_prompt_length + config.data.max_response_length == 131072
    assert rollout.max_model_len == 131072
    assert config.actor_rollout_ref.actor.use_dynamic_bsz and config.critic.use_dynamic_bsz
    assert config.actor_rollout_ref.actor.ulysses_sequence_parallel_size == 8
    assert config.critic.ulysses_sequence_parallel_size == 8
    assert config.actor_rollout_ref.actor.clip_ratio == 0.2
    assert config.critic.model.path == str(tiny_model)
    assert rollout.agent.default_agent_loop == AGENT_NAME
    assert Path(rollout.agent.agent_loop_config_path) == AGENT_LOOP_CONFIG

    # The agent-loop YAML as verl's worker reads it: our loop, registered under its agent name.
    from hydra.utils import get_class
    from omegaconf import OmegaConf

    entries = OmegaConf.load(rollout.agent.agent_loop_config_path)
    (entry,) = [e for e in entries if e.name == AGENT_NAME]
    cls = get_class(entry._target_)
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, _agent_loop_registry

    assert issubclass(cls, AgentLoopBase) and _agent_loop_registry[AGENT_NAME]["_target_"] == entry._target_
    assert int(entry.context_tokens) == 131072 and int(entry.max_output_chars) > 256
    _check_unjudged_counting(config, "stage4_agentic_ppo")


def _check_unjudged_counting(config, experiment: str) -> None:
    """What the policy wrote is dumped by default, and verl's v1 trainer (the default one) samples through
    our replay buffer, which adds the unjudged count to each step's metrics."""
    assert config.trainer.use_v1 and config.trainer.v1.trainer_mode == "sync"
    assert config.trainer.rollout_data_dir == f"rollouts/{experiment}"
    custom = config.trainer.v1.sampler.custom_sampler
    assert (custom.path, custom.name) == ("pkg://cuda_agent.train.verl.sampler", "JudgedReplayBuffer")
    if importlib.util.find_spec("transfer_queue") is None:  # verl[verl-core]; the v1 trainer needs it anyway
        return
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
    from verl.utils.import_utils import load_extern_object

    assert issubclass(load_extern_object(custom.path, custom.name), ReplayBuffer)


def test_ppo_stages_want_a_judge_pool_of_their_own_unless_told_local(tiny_model: Path) -> None:
    """By default stages 1 and 4 refuse to start without JUDGE_URL (a judge on the training GPUs contends
    with vLLM and the trainer); JUDGE_URL=local is the explicit choice, and hands no URL to the workers."""
    import os
    import subprocess
    import sys

    for script, env in (("stage1_single_turn_ppo.sh", {"MODEL": str(tiny_model)}),
                        ("stage4_agentic_ppo.sh", {"ACTOR": str(tiny_model), "CRITIC": str(tiny_model)})):  # fmt: skip
        full = {k: v for k, v in os.environ.items() if k != "JUDGE_URL"}
        full.update(CUDA_AGENT_DRY_RUN="1", PYTHON=sys.executable, **env)
        done = subprocess.run(["bash", str(RECIPE / script)], env=full, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "set JUDGE_URL to a judge server on GPUs of its own" in done.stderr, script
        local = recipe_lines(script, **env, JUDGE_URL="local")
        assert not any("CUDA_AGENT_JUDGE_URL" in line for line in local)
        pool = recipe_lines(script, **env, JUDGE_URL="http://judge:8765")
        assert "+ray_kwargs.ray_init.runtime_env.env_vars.CUDA_AGENT_JUDGE_URL=http://judge:8765" in pool


def test_rollout_correction_is_a_recipe_option_with_verls_names(tiny_model: Path) -> None:
    """Off by default (verl's default); the variables set verl 0.9.1's algorithm.rollout_correction keys,
    which its config class accepts and its correction helper applies to log-probabilities."""
    import torch
    from verl.protocol import DataProto
    from verl.trainer.config.algorithm import RolloutCorrectionConfig
    from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch
    from verl.utils.config import omega_conf_to_dataclass

    base = dict(ACTOR=str(tiny_model), CRITIC=str(tiny_model), JUDGE_URL="local")
    default = compose("ppo_trainer", recipe_lines("stage4_agentic_ppo.sh", **base)[1:])
    assert default.algorithm.rollout_correction.rollout_is is None and default.algorithm.rollout_correction.rollout_rs is None
    assert default.actor_rollout_ref.rollout.calculate_log_probs

    lines = recipe_lines("stage4_agentic_ppo.sh", **base, ROLLOUT_IS="token", ROLLOUT_IS_THRESHOLD="2.0",
                         ROLLOUT_RS="seq_mean_k3", ROLLOUT_RS_THRESHOLD="0.2")  # fmt: skip
    config = compose("ppo_trainer", lines[1:])
    _validate_ppo(config)
    omega_conf_to_dataclass(config.algorithm)
    correction = omega_conf_to_dataclass(config.algorithm.rollout_correction, RolloutCorrectionConfig)
    assert (correction.rollout_is, float(correction.rollout_is_threshold), correction.rollout_rs) == ("token", 2.0, "seq_mean_k3")
    assert not correction.bypass_mode

    # what verl's trainer does with it: IS weights clipped at the threshold, a sample whose log-probs drift rejected
    rollout = torch.tensor([[-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]])
    trainer = torch.tensor([[-1.0, -0.2, -1.0], [-1.0, -3.0, -4.0]])  # sample 1 drifted far from the engine
    batch = DataProto.from_dict(tensors={"old_log_probs": trainer, "rollout_log_probs": rollout,
                                         "response_mask": torch.ones(2, 3, dtype=torch.long)})  # fmt: skip
    out, metrics = compute_rollout_correction_and_add_to_batch(batch, config.algorithm.rollout_correction)
    weights = out.batch["rollout_is_weights"]
    assert weights.max().item() <= 2.0 + 1e-6 and weights[0, 1].item() == pytest.approx(2.0)
    assert out.batch["response_mask"][1].sum().item() == 0 and out.batch["response_mask"][0].sum().item() == 3
    assert any(k.startswith("rollout_corr/") for k in metrics)


def test_stage3a_sft_composes_and_verl_reads_part_1s_parquet(tiny_model: Path, tokenizer, tmp_path: Path) -> None:
    from verl.trainer.sft_trainer import create_sft_dataset
    from verl.utils.config import omega_conf_to_dataclass

    from cuda_agent.train.chat import training_messages
    from cuda_agent.train.rft_data import row, write_parquet

    record = {"task": {"name": "relu", "digest": "d"}, "reward": 2.0, "judge": {"status": "ok"},
              "exit": {"status": "finished"}, "turns": [{}, {}], "messages": [
                  {"role": "system", "content": "You write CUDA kernels."}, {"role": "user", "content": "Task relu."},
                  {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
                      "name": "Read", "arguments": '{"file_path": "model.py"}'}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "import torch"},
                  {"role": "assistant", "content": "Done."}]}  # fmt: skip
    data = tmp_path / "sft.parquet"
    write_parquet([row(record, training_messages(record["messages"]), "runs/relu", "k")], data)

    lines = recipe_lines("stage3a_rft_sft.sh", MODEL=str(tiny_model), SFT_DATA=str(data), OUT=str(tmp_path / "o"))
    assert lines[0] == "verl.trainer.sft_trainer"
    config = compose("sft_trainer_engine", lines[1:])
    for section in ("model", "engine", "optim", "checkpoint"):  # what verl's SFTTrainer builds first
        omega_conf_to_dataclass(config[section])
    assert "hf_model" in config.checkpoint.save_contents
    assert config.engine.ulysses_sequence_parallel_size == 8

    dataset = create_sft_dataset([str(data)], config.data, tokenizer, None)  # verl's own factory and class lookup
    item = dataset[0]
    trained = tokenizer.decode(item["input_ids"][item["loss_mask"].bool()])
    assert '{"name": "Read", "arguments": {"file_path": "model.py"}}' in trained and "Done." in trained
    assert "Task relu." not in trained and "import torch" not in trained, "only assistant tokens are trained on"


def test_stages_2_and_3b_are_commands_our_cli_accepts(tiny_model: Path) -> None:
    from cuda_agent.cli import build_parser

    serve, solve = recipe_lines("stage2_collect.sh", MODEL=str(tiny_model), TASKS="ops6k.parquet",
                                JUDGE_URL="http://judge:8765")  # fmt: skip
    serve = shlex.split(serve)
    assert serve[:3] == ["vllm", "serve", str(tiny_model)] and "--enable-auto-tool-choice" in serve
    args = build_parser().parse_args(shlex.split(solve)[1:])
    assert (args.model, args.base_url, args.judge_url) == ("policy", "http://127.0.0.1:8000/v1", "http://judge:8765")
    assert args.resume and args.tasks == ["ops6k.parquet"]

    (value,) = recipe_lines("stage3b_value.sh", MODEL=str(tiny_model))
    args = build_parser().parse_args(shlex.split(value)[1:])
    assert (args.stage, args.model, args.bf16, args.max_length) == ("value", str(tiny_model), True, 131072)


def test_verl_pins_agree_everywhere() -> None:
    """pyproject's `verl` extra, REQUIRED_VERL.txt and the installed verl name one version."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["verl"]
    required = [ln.strip() for ln in (RECIPE / "REQUIRED_VERL.txt").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]  # fmt: skip
    assert sorted(extra) == sorted(required)
    pinned = [re.fullmatch(r"verl==(\S+)", r) for r in required]
    assert [m.group(1) for m in pinned if m] == [VERL_VERSION] == [version("verl")]
    assert int(version("transformers").split(".")[1]) < 11 and version("transformers").startswith("5.")
