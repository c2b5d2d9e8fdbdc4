"""The judge's precision policy for PyTorch's own kernels, in every worker: fp32 means fp32.

PyTorch lets cuDNN convolutions use TF32 by default (`torch.backends.cudnn.allow_tf32 = True`) and cuBLAS
reduce fp16/bf16 GEMMs in reduced precision, while its fp32 matmuls are IEEE by default. Left so, the
reference and both baselines of an fp32 convolution task would compute in TF32, and the precision audit
would either have to admit TF32 there (and not for matmuls) or refuse a candidate for computing what the
task says. One rule for matmuls and convolutions alike: no TF32, and fp32 accumulation for fp16/bf16
GEMMs, for the reference, the eager and torch.compile baselines, the truth (float64 anyway) and the
candidate's worker (whose own settings must then not change: candidate/worker.py). docs/design/precision.md.

Runs in the candidate worker too: it establishes no fact there, it only sets the defaults the candidate's
code finds.
"""

from __future__ import annotations

import contextlib
from typing import Any

# Named in the baseline cache's key (trusted/baselines.py): baselines timed under another policy (before
# 2026-12-03 cuDNN convolutions ran in TF32) are measured again.
POLICY = "no-tf32-matmul-conv;fp32-reductions"


def pin() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    with flags_settable(torch):
        torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False


def flags_settable(torch: Any) -> contextlib.AbstractContextManager:
    """Where torch.backends' flags are frozen, the door torch's own `flags()` context managers use.

    torch's test utilities freeze them for the whole process when imported (`torch.testing._internal.
    common_utils` calls `disable_global_flags()`): the synth catalog's operator database imports them, and so
    may a user's harness that runs the judge in-process. Pinning the judge's math is a deliberate setting for
    the process, not a test's stray change, so it is made through the same (private) door; where a torch
    lacks it, nothing is frozen there either."""
    door = getattr(torch.backends, "__allow_nonbracketed_mutation", None)
    return door() if torch.backends.flags_frozen() and door is not None else contextlib.nullcontext()
