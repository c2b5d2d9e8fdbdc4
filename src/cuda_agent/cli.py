"""The `cuda-agent` command: one entry point, one module per subcommand under `cuda_agent.commands`.

Each command module exposes `add_parser(subparsers)` and `run(args) -> int`; `main(argv)` is callable
from tests and returns the exit code instead of exiting.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Subcommand name -> module under cuda_agent.commands. Modules import lazily so that
# `cuda-agent --help` stays fast and a command's heavy dependencies load only when it runs.
COMMANDS: dict[str, str] = {
    "judge": "judge",
    "synth": "synth",
    "workspace": "workspace",
    "solve": "solve",
    "serve": "serve",
    "cache": "cache",
    "train": "train",
    "eval": "eval",
    "import": "importer",
}


def build_parser() -> argparse.ArgumentParser:
    from cuda_agent.commands.helptext import Parser

    parser = Parser(
        prog="cuda-agent",
        description="Build, judge and train agents that write CUDA kernels faster than torch.compile.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(f"cuda_agent.commands.{module_name}")
        module.add_parser(subparsers, name)
    return parser


def _version() -> str:
    """The installed distribution's version, or the package's own when run from a source tree."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cuda-agent")
    except PackageNotFoundError:
        from cuda_agent import __version__

        return __version__


# Commands that own their process end through their cleanup on SIGTERM (`timeout`, a scheduler): a judge's
# workers are killed rather than left on the GPU. Not `serve` (uvicorn's own shutdown; jobs resume after a
# restart) nor `train` (the training framework's signals).
CLEAN_EXIT_ON_SIGTERM = frozenset({"judge", "eval", "import", "solve", "synth", "workspace", "cache"})


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    undo = lambda: None  # noqa: E731
    if args.command in CLEAN_EXIT_ON_SIGTERM:
        from cuda_agent.judge.common.procs import exit_on_sigterm

        undo = exit_on_sigterm()
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        message = _missing_tool(e)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return EXIT_MISSING_TOOL
    finally:
        undo()  # main() is called from tests too: the process's handler goes back as it was


# The machine lacks something a command needs (nvcc, a C++ compiler, a GPU): a message, not a traceback.
EXIT_MISSING_TOOL = 3


def _missing_tool(error: BaseException) -> str | None:
    """The message for an error that means "install X", wherever in a command it surfaced, else None."""
    from cuda_agent.judge import JudgeUnavailable, ToolchainError

    seen: set[int] = set()
    while error is not None and id(error) not in seen:  # a worker's error may arrive wrapped
        seen.add(id(error))
        if isinstance(error, (ToolchainError, JudgeUnavailable)):
            return str(error)
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return None


if __name__ == "__main__":
    sys.exit(main())
