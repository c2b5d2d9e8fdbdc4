"""Workspace commands (fixed infrastructure, do not edit): thin entry points into the cuda-agent judge."""

import sys


def outside_environment(command: str, error: ModuleNotFoundError) -> SystemExit:
    """The one line for a command run by a Python that lacks cuda-agent (exit 3: the machine lacks
    something), instead of a ModuleNotFoundError traceback."""
    print(f"error: {sys.executable} cannot import {error.name}: run `python3 -m utils.{command}` in cuda-agent's "
          "environment (source .venv/bin/activate in the cuda-agent checkout first)", file=sys.stderr)
    return SystemExit(3)
