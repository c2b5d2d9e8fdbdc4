"""The single-turn format: the prompt, the parser's every bad case (a reason, never an exception), and the
reward function judging a real workspace through the judge it is given."""

from __future__ import annotations

import pytest
from train_helpers import MODEL_NEW, RELU_TASK

from cuda_agent.agent.judging import LocalJudge
from cuda_agent.task import load_task
from cuda_agent.train.single_turn import (
    MAX_FILE_BYTES,
    BadResponse,
    parse_response,
    single_turn_messages,
    single_turn_reward,
)

GOOD = f"""Here is my solution.

```python model_new.py
{MODEL_NEW}```

```cuda kernels/relu.cu
__global__ void relu_kernel() {{}}
```

````cpp kernels/relu_binding.cpp
// a ``` inside a longer fence is content
````
"""


@pytest.fixture
def task():
    return load_task(RELU_TASK, name="relu")


def test_prompt_holds_the_rules_and_the_reference(task) -> None:
    system, user = single_turn_messages(task)
    assert system["role"] == "system" and "kernels/<name>_binding.cpp" in system["content"]
    assert "REGISTER_BINDING" in system["content"]  # SKILL.md's rules travel with the format
    assert user["role"] == "user" and "torch.relu(x)" in user["content"]


def test_good_response_parses() -> None:
    files = parse_response(GOOD)
    assert not isinstance(files, BadResponse), files
    assert list(files) == ["model_new.py", "kernels/relu.cu", "kernels/relu_binding.cpp"]
    assert files["model_new.py"] == MODEL_NEW
    assert "``` inside" in files["kernels/relu_binding.cpp"]
    assert parse_response(GOOD.encode()) == files


BLOCK = "```python model_new.py\nx = 1\n```\n"


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("I think you should use a grid-stride loop.", "no fenced code blocks"),
        ("```python\nx = 1\n```\n", "names no file"),
        (BLOCK + "```bash utils/compile.sh\necho hi\n```\n", "not an allowed file"),
        (BLOCK + "```python setup.py\nx\n```\n", "not an allowed file"),
        (BLOCK + "```cuda kernels/sub/x.cu\nx\n```\n", "not an allowed file"),
        (BLOCK + "```cuda kernels/x.cuh\nx\n```\n", "not an allowed file"),
        (BLOCK + "```cuda kernels/../model.py\nx\n```\n", "'..'"),
        (BLOCK + "```cuda /etc/passwd\nx\n```\n", "absolute"),
        (BLOCK + BLOCK, "appears twice"),
        (BLOCK + "```cuda kernels/big.cu\n" + "x" * (MAX_FILE_BYTES + 1) + "\n```\n", "the limit is"),
        (BLOCK + "```cuda kernels/open.cu\nnever closed\n", "never closed"),
        ("```cuda kernels/a.cu\nx\n```\n", "no model_new.py"),
        (b"```python model_new.py\n\xff\xfe\n```\n", "not UTF-8"),
        ("```python model_new.py\n\udc80\n```\n", "lone surrogates"),
        (b"x" * (3 * 1024 * 1024), "at most"),
        (None, "not text"),
    ],
)
def test_bad_responses_get_a_reason(response, reason) -> None:
    parsed = parse_response(response)
    assert isinstance(parsed, BadResponse) and reason in parsed.reason, parsed


def test_reward_of_a_bad_response_is_minus_one_without_judging(task, tmp_path) -> None:
    reward, outcome = single_turn_reward(task, "no code here", LocalJudge(), workdir=tmp_path)
    assert reward == -1 and outcome.status == "bad_response" and "no fenced code blocks" in outcome.reason
    assert list(tmp_path.iterdir()) == []  # nothing was laid out


def test_reward_judges_the_files_in_a_fresh_workspace(task, tmp_path) -> None:
    reward, outcome = single_turn_reward(task, GOOD, LocalJudge(), workdir=tmp_path, keep=True)
    (root,) = tmp_path.iterdir()
    ws = root / "workspace"
    assert (ws / "model_new.py").read_text() == MODEL_NEW and (ws / "kernels" / "relu.cu").is_file()
    assert (ws / "model.py").read_text() == RELU_TASK
    # The judge's word is the reward: a real verdict on a GPU, "unavailable" (no reward) on a CPU machine.
    assert outcome.status != "bad_response"
    assert reward == outcome.reward
    single_turn_reward(task, GOOD, LocalJudge(), workdir=tmp_path / "gone")
    assert not any((tmp_path / "gone").iterdir())


@pytest.mark.gpu
@pytest.mark.slow
def test_a_correct_single_turn_response_earns_a_reward(task, tmp_path) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from test_agent_episode import BINDING, KERNEL_FIXED
    from test_agent_episode import MODEL_NEW as EPISODE_MODEL_NEW

    response = (f"```python model_new.py\n{EPISODE_MODEL_NEW}```\n\n```cuda kernels/relu.cu\n{KERNEL_FIXED}```\n\n"
                f"```cpp kernels/relu_binding.cpp\n{BINDING}```\n")  # fmt: skip
    reward, outcome = single_turn_reward(task, response, LocalJudge(), workdir=tmp_path)
    assert outcome.status == "ok", outcome.reason
    assert reward is not None and reward >= 1
