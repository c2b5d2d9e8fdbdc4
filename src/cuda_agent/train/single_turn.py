"""The single-turn format of the warm-up stage: one prompt, one response holding every file, one reward.

The prompt is the task's `model.py` plus the rules of the workspace's SKILL.md and the output format:
fenced code blocks whose info string ends with the file's path, e.g. ```` ```cuda kernels/relu.cu ````.
`parse_response` turns a response into {path: text} or a `BadResponse` with a reason; it never raises
on model output. `single_turn_reward(task, response, judge)` lays out a fresh workspace, writes the
files and asks the judge the caller passes (a local `JudgeService`-backed judge, later a remote pool):
reward -1 with the parser's reason for a bad response, the judge's reward otherwise (None when the
judge could not run: an infrastructure failure, not the policy's fault, so RL should skip the sample).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.agent.judging import Judge, JudgeOutcome
from cuda_agent.task import Task

MAX_FILE_BYTES = 256 * 1024
MAX_FILES = 16
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
BAD_RESPONSE = "bad_response"

_NAME = r"[A-Za-z0-9_]+"
ALLOWED = (
    re.compile(r"model_new\.py"),
    re.compile(rf"kernels/{_NAME}\.cu"),
    re.compile(rf"kernels/{_NAME}_binding\.cpp"),
    re.compile(rf"kernels/{_NAME}\.cpp"),
)
_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")

FORMAT_RULES = """\
# Output format

Answer with the complete files, each in its own fenced code block whose opening line names the file:

```python model_new.py
...
```

```cuda kernels/<name>.cu
...
```

```cpp kernels/<name>_binding.cpp
...
```

Allowed files: model_new.py, kernels/<name>.cu, kernels/<name>_binding.cpp and kernels/<name>.cpp
(<name>: letters, digits, underscores). Each file at most once, at most 256 KiB. Nothing else is read;
there is no compiler feedback, so get it right in one go.
"""


@dataclass(frozen=True)
class BadResponse:
    reason: str


def single_turn_messages(task: Task, skill: str | None = None) -> list[dict[str, str]]:
    """System (SKILL.md + the format) and user (the reference) messages for one-shot generation."""
    from cuda_agent.agent.prompts import FALLBACK_SKILL, SKILL_FILE
    from cuda_agent.workspace.files import TEMPLATE_DIR

    if skill is None:
        path = TEMPLATE_DIR / SKILL_FILE
        skill = path.read_text(encoding="utf-8") if path.is_file() else FALLBACK_SKILL
    user = (f"Task `{task.name}`: make this PyTorch model faster with custom CUDA kernels. The reference "
            f"model.py:\n\n```python\n{task.source.rstrip()}\n```\n\nReply with model_new.py and your kernels/ "
            "files in the output format.")  # fmt: skip
    return [{"role": "system", "content": f"{skill.rstrip()}\n\n{FORMAT_RULES}"}, {"role": "user", "content": user}]


def parse_response(response: str | bytes) -> dict[str, str] | BadResponse:
    """The files a response holds, or why it is unusable (never an exception for model output)."""
    if isinstance(response, bytes):
        if len(response) > MAX_RESPONSE_BYTES:
            return BadResponse(f"the response is {len(response)} bytes; at most {MAX_RESPONSE_BYTES} are read")
        try:
            response = response.decode("utf-8")
        except UnicodeDecodeError as e:
            return BadResponse(f"the response is not UTF-8 (byte {e.start})")
    if not isinstance(response, str):
        return BadResponse(f"the response is {type(response).__name__}, not text")
    try:
        size = len(response.encode("utf-8"))
    except UnicodeEncodeError:
        return BadResponse("the response is not valid UTF-8 text (it holds lone surrogates)")
    if size > MAX_RESPONSE_BYTES:
        return BadResponse(f"the response is {size} bytes; at most {MAX_RESPONSE_BYTES} are read")
    blocks = _blocks(response)
    if isinstance(blocks, BadResponse):
        return blocks
    if not blocks:
        return BadResponse("no fenced code blocks: put each file in ```lang path ... ``` blocks")
    files: dict[str, str] = {}
    for number, (info, body) in enumerate(blocks, 1):
        words = info.split()
        path = words[-1] if words and ("." in words[-1] or "/" in words[-1]) else ""  # a lone word is a language
        problem = _path_problem(path, number)
        if problem:
            return BadResponse(problem)
        if path in files:
            return BadResponse(f"{path} appears twice; give each file once")
        if len(body.encode("utf-8")) > MAX_FILE_BYTES:
            return BadResponse(f"{path} is {len(body.encode('utf-8'))} bytes; the limit is {MAX_FILE_BYTES}")
        files[path] = body
    if len(files) > MAX_FILES:
        return BadResponse(f"{len(files)} files; at most {MAX_FILES}")
    if "model_new.py" not in files:
        return BadResponse("no model_new.py block: ModelNew is what the judge runs")
    return files


def _blocks(text: str) -> list[tuple[str, str]] | BadResponse:
    blocks: list[tuple[str, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i].rstrip("\r"))
        if not match:
            i += 1
            continue
        fence, info = match["fence"], match["info"].strip()
        body: list[str] = []
        i += 1
        while i < len(lines) and not _closes(lines[i].rstrip("\r"), fence):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            return BadResponse(f"the code block opened with {fence}{info} is never closed")
        blocks.append((info, "\n".join(body) + "\n"))
        i += 1
    return blocks


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}


def _path_problem(path: str, number: int) -> str | None:
    if not path:
        return f"code block {number} names no file; open it with ```lang path"
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path):
        return f"{path}: absolute paths are not allowed; use model_new.py or kernels/<name>.cu"
    if ".." in path.replace("\\", "/").split("/"):
        return f"{path}: '..' is not allowed in paths"
    if not any(p.fullmatch(path) for p in ALLOWED):
        return (f"{path} is not an allowed file: only model_new.py, kernels/<name>.cu, kernels/<name>_binding.cpp "
                "and kernels/<name>.cpp")  # fmt: skip
    return None


def write_workspace(task: Task, files: dict[str, str], dest: Path) -> Path:
    """A fresh workspace for `task` holding the parsed files."""
    from cuda_agent.workspace import materialize

    root = materialize(task, dest, overwrite=True)
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def single_turn_reward(task: Task, response: str | bytes, judge: Judge, *, workdir: Path | None = None,
                       keep: bool = False) -> tuple[int | None, JudgeOutcome]:  # fmt: skip
    """(reward, outcome) of one response: -1 with the reason if it cannot be parsed, else the judge's word."""
    files = parse_response(response)
    if isinstance(files, BadResponse):
        return -1, JudgeOutcome(BAD_RESPONSE, -1, files.reason)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"single-turn-{task.name}-", dir=workdir))
    try:
        outcome = judge(write_workspace(task, files, root / "workspace"), task)
    finally:
        if not keep:
            _remove(root)
    return outcome.reward, outcome


def _remove(root: Path) -> None:
    """Delete a scratch workspace; materialize() leaves infrastructure read-only, so undo that first."""
    from cuda_agent.workspace.materialize import _make_writable

    _make_writable(root)
    shutil.rmtree(root, ignore_errors=True)
