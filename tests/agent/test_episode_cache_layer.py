"""An episode's shared judge cache layer is visible, read-only, to its Bash commands wherever it lives.

Under bubblewrap /tmp is private to the sandbox, so a layer kept under /tmp (`solve --cache-seed /tmp/...`,
the test run's warm root) was hidden: `utils/compile.sh` and every verification found no PCH there and
compiled their own into the workspace (two 25-35 s compiles of the judge's PCH in the scripted episode's
test, 2026-12-07). The sandbox now binds such a layer back read-only at its own path."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import needs_bwrap

from cuda_agent.agent.config import AgentConfig
from cuda_agent.agent.episode import open_workspace
from cuda_agent.agent.tools.sandbox import SandboxPolicy
from cuda_agent.task import load_task

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "examples" / "elementwise_chain" / "model.py"


@pytest.mark.parametrize("isolation", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_commands_read_a_layer_under_tmp_and_cannot_write_it(tmp_path: Path, isolation: str) -> None:
    assert str(tmp_path.resolve()).startswith("/tmp/"), "the case this test is about: a layer under /tmp"
    seed = tmp_path / "seed"
    (seed / "objects").mkdir(parents=True)
    (seed / "objects" / "entry.o").write_text("shared object\n")
    (seed / "objects" / "entry.o").chmod(0o444)
    config = AgentConfig(cache_seed_dir=str(seed), sandbox=SandboxPolicy(isolation=isolation))
    toolbox = open_workspace(load_task(TASK.read_text(), name="t"), tmp_path / "ws", config)
    try:
        read = toolbox.execute("Bash", {"command": 'cat "$CUDA_AGENT_SHARED_CACHE/objects/entry.o"'})
        assert read.status == "ok" and read.content.strip() == "shared object", read.content
        if isolation == "bwrap":  # root may write a 0444 file without a sandbox; the mount is what stops it
            write = toolbox.execute("Bash", {"command": 'echo forged > "$CUDA_AGENT_SHARED_CACHE/objects/new.o"'})
            assert write.status != "ok" or "Read-only file system" in write.content, write.content
            assert not (seed / "objects" / "new.o").exists()
    finally:
        toolbox.close()
