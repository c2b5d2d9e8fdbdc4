"""tests/verl runs in .venv-verl (scripts/setup_verl.sh), where verl 0.9.1 is really installed; the main
environment has no verl, and every module here skips itself there (`pytest.importorskip`).

verl's wheel installs a top-level `tests` package, so nothing here imports `tests.*`: helpers live in
verl_helpers.py beside this file and are imported by that name (pytest puts this folder on sys.path).
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """The tiny offline model of train/tiny.py (its tokenizer and chat template are what matter here)."""
    from cuda_agent.train.tiny import TinySpec, build_tiny_model

    out = tmp_path_factory.mktemp("tiny") / "model"
    build_tiny_model(out, TinySpec(vocab_size=1024, hidden_size=64, layers=2, heads=2, kv_heads=1,
                                   intermediate_size=128, max_positions=32768))  # fmt: skip
    return out


@pytest.fixture(scope="session")
def tokenizer(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)
