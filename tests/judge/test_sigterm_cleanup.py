"""A judge ended by SIGTERM (`timeout`, a batch scheduler) kills its workers on the way out.

The default action ran no cleanup, and the pool's workers live in sessions of their own: on 2026-12-07 a
candidate left by a benchmark that `timeout` ended most likely kept an H100 busy under the next run. Real
processes here: a JudgeService with CPU-warmed workers in a child Python, ended by SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cuda_agent.judge.common.procs import exit_on_sigterm

ROOT = Path(__file__).parents[2]

JUDGE = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from cuda_agent.judge.common.procs import exit_on_sigterm
    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide import service as service_module
    from cuda_agent.judge.trusted.pool import WorkerPool

    def warm_without_gpu(self, worker, times=None):
        reply = worker.call("warm", 120, gpu=False)
        return None if reply.get("ok") else str(reply)

    service_module.require_gpu = lambda: None  # this machine has no GPU; the workers are real processes
    WorkerPool._warm = warm_without_gpu
    scratch = Path(sys.argv[1])
    exit_on_sigterm()  # as `cuda-agent judge` and the benchmarks do
    with service_module.JudgeService(JudgeConfig(scratch_dir=scratch), keep_warm=False) as service:
        pool = service.pools[0]
        spares = [pool._spares.queue[0].result(timeout=120), pool._spare_references[0].result(timeout=120)]
        print(json.dumps([slot.worker.pid for slot in spares]), flush=True)
        time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_judge_ended_by_sigterm_closes_its_workers(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CUDA_AGENT_CACHE": str(tmp_path / "cache"),
           "CUDA_AGENT_MACHINE_DIR": str(tmp_path / "machine")}  # fmt: skip
    judge = subprocess.Popen([sys.executable, "-c", JUDGE, str(tmp_path / "scratch")], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert judge.stdout is not None
        line = judge.stdout.readline()
        assert line, f"the judge did not start its workers: {judge.stderr.read() if judge.stderr else ''}"
        workers = json.loads(line)
        assert len(workers) == 2 and all(_alive(pid) for pid in workers)
        for pid in workers:  # stopped, as a timing leaves them: they cannot leave on their own end of file
            os.kill(pid, signal.SIGSTOP)
        judge.send_signal(signal.SIGTERM)
        assert judge.wait(timeout=60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in workers if _alive(pid)], "SIGTERM left the judge's workers running"
    finally:
        judge.kill()
        judge.wait()
        for pid in workers if "workers" in locals() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_the_cli_ends_judging_commands_through_their_cleanup_and_gives_the_handler_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`cuda-agent judge` (and the other commands that own their process) run with SIGTERM ending them
    through their cleanup; `serve` keeps uvicorn's shutdown and `train` its framework's signals; main()
    puts the process's handler back as it was (tests call it)."""
    from cuda_agent import cli
    from cuda_agent.commands import cache

    seen: list[object] = []
    monkeypatch.setattr(cache, "run", lambda args: seen.append(signal.getsignal(signal.SIGTERM)) or 0)
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        assert cli.main(["cache", "show"]) == 0
        assert seen and seen[0] is not signal.SIG_DFL, "the command ran with the default SIGTERM action"
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, "main() left its handler installed"
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert "judge" in cli.CLEAN_EXIT_ON_SIGTERM and not {"serve", "train"} & cli.CLEAN_EXIT_ON_SIGTERM


def test_sigterm_is_taken_over_only_where_nobody_else_handles_it() -> None:
    """A server (uvicorn) installs its own SIGTERM handler: the judge leaves it as it is; over the default
    action the judge's handler is installed, and the undo puts the default back."""
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        undo = exit_on_sigterm()
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        undo()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

        def servers_own(signum: int, frame: object) -> None:
            pass

        signal.signal(signal.SIGTERM, servers_own)
        exit_on_sigterm()()
        assert signal.getsignal(signal.SIGTERM) is servers_own
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("twice", [False, True])
def test_the_handler_ends_the_process_once_and_a_second_sigterm_takes_the_default(twice: bool) -> None:
    code = textwrap.dedent(
        f"""
        import os, signal, time
        from cuda_agent.judge.common.procs import exit_on_sigterm
        exit_on_sigterm()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            if {twice}:
                os.kill(os.getpid(), signal.SIGTERM)  # during the cleanup: the default action, at once
                time.sleep(5)
            print("cleaned up", flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    if twice:
        assert done.returncode == -signal.SIGTERM and "cleaned up" not in done.stdout
    else:
        assert done.returncode == 128 + signal.SIGTERM and "cleaned up" in done.stdout
