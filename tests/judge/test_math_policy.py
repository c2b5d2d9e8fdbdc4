"""common/math_policy.pin() in a process whose torch.backends flags are frozen: torch's test utilities
freeze them when imported (the synth catalog's operator database imports them), and pin() raised there, so
a reference preparation after a catalog crawl in the same process failed (seen when CI's tests ran two to a
process). It must set the judge's math anyway, and leave the flags frozen as it found them."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import torch
from cuda_agent.judge.common import math_policy

torch.backends.cudnn.allow_tf32 = True
torch.backends.disable_global_flags()  # what importing torch.testing._internal.common_utils does
try:
    torch.backends.cudnn.allow_tf32 = False
except RuntimeError:
    pass
else:
    raise SystemExit("the flags were not frozen: this test would show nothing")
math_policy.pin()
assert torch.backends.cudnn.allow_tf32 is False and torch.backends.cuda.matmul.allow_tf32 is False
assert torch.backends.flags_frozen()
print("pinned")
"""


def test_pin_sets_the_judges_math_where_torch_froze_its_flags() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "pinned", done.stdout + done.stderr
