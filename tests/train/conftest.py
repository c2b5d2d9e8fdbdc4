"""Fixtures for the training tests: one tiny model built offline, and real trajectory records."""

from __future__ import annotations

from pathlib import Path

import pytest
from train_helpers import KERNEL, play


@pytest.fixture(scope="session")
def records(tmp_path_factory) -> dict[str, dict]:
    """A real finished episode and a second one with a different kernel, before any reward is set."""
    base = tmp_path_factory.mktemp("episodes")
    return {"a": play(base / "a", KERNEL), "b": play(base / "b", KERNEL.replace("0.0f", "0.f"))}


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny model (about 0.3M parameters) built offline the way users build theirs."""
    from cuda_agent.train.tiny import TinySpec, build_tiny_model

    out = tmp_path_factory.mktemp("tiny") / "model"
    build_tiny_model(out, TinySpec(vocab_size=1024, hidden_size=64, layers=2, heads=2, kv_heads=1,
                                   intermediate_size=128, max_positions=8192))
    return out
