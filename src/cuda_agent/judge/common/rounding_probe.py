"""Inputs and weights whose low mantissa bits make any lowered precision round the same way: a bias the
precision audit sees at any reduction length.

Why. On inputs of one sign (KernelBench's `get_inputs()` draw with `torch.rand`, uniform on [0, 1)) a long
sum's honest fp32 error is a running sum's drift, u * sqrt(K / 3) of the result, which SKILL.md allows
(any summation order). Operands rounded to TF32, fp16 or bf16 err at random, about 2^-11 / sqrt(K) of
the result for TF32: below that allowance from K = 8192 on. So TF32 tensor cores, and bf16 ones from
about K = 32768, passed the precision audit on KernelBench's large-K matmuls (found by a white-box review,
2026-12-04), where they are 5-15x faster than fp32.

What. Every float32 value that is not already exact in bf16 (its low 16 mantissa bits are not all zero: a
generic value, not 1.0, 0.5, an integer or a bf16 number) gets the first bit below bf16's last kept bit
set, the first below TF32's (and fp16's), and the last. Rounding the value to bf16, TF32 or fp16, to
nearest, then always goes up in magnitude (by up to half the format's step: the dropped part is above one
half), and truncating always goes down. Every operand of a lowered-precision product then errs the same
way, so the error of a sum of K of them grows like K, not sqrt(K), and stands far outside the allowance.
float64 values get the same for rounding to float32 as well. Only bits are set: a value stays in its
binade (so [0, 1) stays [0, 1), a sign stays, a domain stays), moves by less than 2^-7 of itself, and
exact values (zeros, integers, one-hot masks, powers of two, infinities, NaN, subnormals) are left alone.

One bit per format, not two: a kernel that knows the bias can measure and remove it (per row of A and
column of B, the sum of its own rounding errors over the sum of the operands, O(MK + KN) work; a review
did, 2026-12-04). What is left is the spread of the rounding errors about their mean, and setting only
the half bit keeps that spread at half of plain rounding's (two bits kept a quarter: the corrected TF32
product then passed from K = 4096, where plain TF32 failed).

Where. Both workers apply it to every input set they draw (candidate/inputs.py, after the input audit's
transforms), and the perturbation applies it to every parameter it moves (trusted/perturb.py): the
reference, its float64 truth and the candidate all compute on the same values. An honest kernel in the
task's precision computes on them as on any others. What it does not catch (docs/design/precision.md): a
kernel that rounds its operands and then removes the bias it measured, where what is left is within a
plain running sum's allowance (long one-signed reductions); a lowered precision on intermediate values,
which the inputs' bits do not reach. Both compute as accurately as an honest fp32 running sum can, which
is the audit's criterion; the low-bit response check (trusted/response_probe.py: a pair of sets that differ
only in bits a lowered precision drops) sees the first.
"""

from __future__ import annotations

import torch

# dtype -> (integer view, bits set, low bits that are zero in a value left alone, exponent bits)
PATTERNS: dict[torch.dtype, tuple[torch.dtype, int, int, int]] = {
    # float32, 23 mantissa bits: bf16 keeps 7 (bit 15, its dropped half), TF32 and fp16 keep 10 (bit 12); bit 0
    # makes every dropped part strictly above one half (no ties to even)
    torch.float32: (torch.int32, (1 << 15) | (1 << 12) | 1, (1 << 16) - 1, 0x7F800000),
    # float64, 52 mantissa bits: bf16 keeps 7 (bit 44), TF32 and fp16 keep 10 (bit 41), float32 keeps 23 (bit 28)
    torch.float64: (
        torch.int64,
        (1 << 44) | (1 << 41) | (1 << 28) | 1,
        (1 << 29) - 1,
        0x7FF0000000000000,
    ),
}
CHUNK = 1 << 24  # elements per step: the masks made on the way stay small beside any input


def settle(t: torch.Tensor) -> torch.Tensor:
    """`t` with the probe's bits set on its generic values (the module's docstring), in place, its layout
    kept; other dtypes and empty tensors as they are, and so is a view whose elements share memory (an
    `expand`ed input: it cannot be written element by element)."""
    found = PATTERNS.get(t.dtype)
    if found is None or t.numel() == 0:
        return t
    if not t.is_contiguous():
        try:
            with torch.no_grad():
                t.copy_(settle(t.clone(memory_format=torch.contiguous_format)))
        except RuntimeError:  # internal overlap
            pass
        return t
    view, pattern, low, exponent = found
    ints = t.detach().view(view).reshape(-1)
    for start in range(0, ints.numel(), CHUNK):
        part = ints[start : start + CHUNK]
        power = part & exponent
        generic = ((part & low) != 0) & (power != 0) & (power != exponent)  # normal, finite, not bf16-exact
        part.bitwise_or_(generic.to(view) * pattern)
    return t


def settle_all(values: list) -> list:
    """Each floating tensor of an input set settled (the list's other items as they are)."""
    return [settle(v) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]
