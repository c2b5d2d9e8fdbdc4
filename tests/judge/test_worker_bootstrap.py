"""Workers run `python -I` (PYTHONPATH ignored): the path they put on sys.path must hold the package, or a
judge run from a checkout without `pip install` (PYTHONPATH=src, as on the GPU machines) cannot start one."""

import subprocess
import sys
from pathlib import Path

from cuda_agent.judge.common.channel import _bootstrap, package_root


def test_the_bootstrap_path_holds_the_cuda_agent_package() -> None:
    assert (Path(package_root()) / "cuda_agent" / "__init__.py").is_file()
    assert repr(package_root()) in _bootstrap("cuda_agent.judge.candidate.worker")


def test_a_worker_module_imports_from_the_bootstrap_path_alone(tmp_path: Path) -> None:
    """-I -S: no PYTHONPATH and no site-packages (so no editable install): only the bootstrap's path."""
    code = f"import sys; sys.path.insert(0, {package_root()!r}); import cuda_agent.judge.common.channel"
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
