"""Load a script of benchmarks/ as a module, so its decision logic can be tested on recorded figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(script: str) -> ModuleType:
    """benchmarks/<script>.py, imported once under the name `<script>_bench`."""
    name = f"{script}_bench"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module by name while the script runs
    spec.loader.exec_module(module)
    return module
