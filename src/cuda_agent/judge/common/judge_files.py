"""Where the candidate worker finds the judge's files when its sandbox hides the folder they are in.

The judge writes a judgment's task file, state and input files under its scratch root (/dev/shm by
default) and tells the worker their paths. A sandbox with private places (trusted/sandbox.py) covers
every world-writable folder with a fresh tmpfs, /dev/shm included, so in the candidate's mount namespace
those paths lead into its own empty tmpfs; the scratch root is reachable there read-only at another
path, named by `JUDGE_FILES_ENV` as a JSON pair [scratch root, where it is seen]. `judge_file` maps a
path of a file the judge wrote to the path the worker can open (never the worker's own folder, which is
kept at its own path). No fact depends on it: a worker that reads the
wrong file only computes on other inputs than those it is compared on.
"""

from __future__ import annotations

import json
import os

JUDGE_FILES_ENV = "CUDA_AGENT_JUDGE_FILES"
# The weight pair's second point (trusted/response_probe.py), a state_dict for the candidate's second
# ModelNew: written by the reference, put in the candidate's folder by the judge just before its call.
VARIANT_FILE = "variant_state.pt"


def judge_file(path: str) -> str:
    """`path` as this process sees it (unchanged where no sandbox moved the judge's scratch root)."""
    pair = os.environ.get(JUDGE_FILES_ENV)
    if not pair:
        return path
    scratch, seen_at = json.loads(pair)
    if path == scratch or path.startswith(scratch.rstrip("/") + "/"):
        return seen_at + path[len(scratch.rstrip("/")) :]
    return path
