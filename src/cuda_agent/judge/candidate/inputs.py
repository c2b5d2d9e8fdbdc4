"""Task inputs drawn from a seed on the GPU, identically in the reference and the candidate worker.

Moving inputs between the workers as files cost seconds per judgment (a 128 MB task wrote and read
five input sets and 512 MB of timing sets). Instead both workers run the task's own `get_inputs()` after
seeding every generator a task may use from the same secret seed, on the same GPU and torch build, which
gives bit-identical tensors in milliseconds.

This gives the candidate nothing new: it sees its inputs either way, and a candidate that tampers with
its own draw only computes on inputs the reference did not (its outputs are compared against the
reference's outputs for the true inputs). Each worker reports a fingerprint of what it drew; when they
differ (a task whose `get_inputs()` reads a clock or an unseeded generator), the judge falls back to
files written by the reference for that judgment.

What a seed may reveal (docs/design/trust_boundary.md): every seed is an independent secret
(`secrets.randbits`), used for one input set only, and the candidate worker receives it only when that
set is due: a verification set's seed with its call, a timed call's seed with the round it belongs to.
So a seed tells the candidate nothing beyond the content it is about to be given anyway; in particular
nothing of later rounds, of the baselines' sets, or of which timed calls the parent will check. A timed
call's seed arrives with the command that times its round, and its inputs are drawn inside that round
(candidate/sampler.py), so they never exist in the candidate's process before the parent's clock starts. After
each draw the generators are reseeded from the OS (`scrub_generators`), so torch's RNG state in the
candidate's process never holds a seed for longer than the draw.

Input transforms (issue 35): an input that barely changes the output at the task's own magnitudes (a
term scaled by 1e-6, a scalar loss whose value concentrates) could be ignored by a kernel within the
tolerance. The reference worker's input audit (trusted/input_audit.py) then chooses, per input position, a
scale and a range of per-draw factors; both workers apply them here, to every draw (verification, warm-up
and timed calls alike), so no call looks different from another. The factor of one draw follows from its
seed (`draw_factor`), which both workers hold.

Signs (trusted/sign_audit.py): an input drawn all of one sign (`torch.rand`) makes every partial sum of a
long reduction grow, so an honest fp32 accumulation may err by as much as a product rounded to TF32 or
bf16, and the precision audit cannot tell them apart. Where the reference's audit found the task defined
on both signs, chosen positions get a random sign per element and a power-of-two factor (`mix_signs`),
in both workers and every draw, after the transforms. Multiplying by +-2^-j is exact, so it commutes with
the rounding probe below.

The rounding probe (common/rounding_probe.py) then sets a few low mantissa bits of every generic float32
and float64 value, in both workers and in every draw: rounding such a value to TF32, fp16 or bf16 always
errs the same way, so a kernel that lowers its operands' precision shows a bias the precision audit sees
however long the reduction.

Outliers (trusted/outlier_audit.py): a global loss or norm over a very large input (KernelBench's MSELoss
reduces 2^30 elements to one) could be computed from a sample of the elements: the sample's error falls
like 1/sqrt(pN) while the honest allowance of a sum over the whole tensor grows like sqrt(N), so from about
64M elements a kernel reading 1/64 of the data passed. Where the reference's audit found such an input,
three elements of it, at positions drawn from a hash of the seed, are set to a power of two times a factor
from 1 to 1.875 (keeping their signs) chosen so that each moves the output by at least 1/64
(`plant_outliers`), in both workers and every draw. A kernel
that skips an element misses a term the size of the whole sample's allowance many times over; one that
scales up a sample of a fixed share counts an odd number of outliers the share's inverse times.

Trust boundary: in the reference worker the draw is a fact (the expected outputs are computed on it); in
the candidate worker it is a convenience whose result the candidate may change at will, and doing so only
makes it compute on inputs the reference did not.
"""

from __future__ import annotations

import hashlib
import random
import secrets
import sys
from types import ModuleType
from typing import Any

import torch

from cuda_agent.judge.common import rounding_probe

CHUNKS = 256
# (scale, low, high): the input is multiplied by scale * f, f log-uniform in [low, high] for each draw.
InputTransform = tuple[float, float, float]
IDENTITY: InputTransform = (1.0, 1.0, 1.0)
# Input position -> the power-of-two factor its random signs come with (trusted/sign_audit.py).
Signs = dict[int, float]
# Input position -> the power-of-two magnitude its outliers are set to (trusted/outlier_audit.py).
Outliers = dict[int, float]
OUTLIERS_PER_INPUT = 3  # odd: a sample scaled up by a whole share's inverse cannot count them right


def seed_everything(seed: int) -> None:
    """Seed torch (CPU and every GPU), Python's `random` and, if a task imported it, numpy.

    The generators are seeded directly, as `torch.manual_seed` does, without its walk over every backend
    (~70 us a call, twice a draw): a timed call's draw runs inside the round, under a spin of the GPU
    as long as its host time (candidate/sampler.py), so each microsecond of it is paid on every call."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        for generator in torch.cuda.default_generators:
            generator.manual_seed(seed)
    else:
        torch.cuda.manual_seed_all(seed)  # queued until CUDA starts, as torch.manual_seed does
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


def scrub_generators() -> None:
    """Reseed every generator from the OS: the state after a draw must not keep its seed recoverable."""
    seed_everything(secrets.randbits(62))


def to_cuda(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.cuda()
    if isinstance(value, list | tuple):
        return type(value)(to_cuda(v) for v in value)
    return value


def draw_inputs(
    module: ModuleType, seed: int, device: str = "cuda", transforms: list[InputTransform] | None = None,
    signs: Signs | None = None, outliers: Outliers | None = None,
) -> Any:
    """The task's inputs for `seed`, drawn on the GPU: `torch.randn(...)` in get_inputs() then runs on
    the device (milliseconds) instead of the CPU (about 0.4 s per 128 MB on the H200 host). Anything but
    a list or tuple comes back as it is, for `task.check_inputs` to name. `transforms` (one per input
    position, from the reference's input audit) scale floating-point inputs, `signs` (the sign audit's)
    give chosen ones random signs and `outliers` (the outlier audit's) scale a few of their elements up, the
    same way in both workers."""
    seed_everything(seed)
    try:
        with torch.device(device):
            inputs = module.get_inputs()
    finally:
        scrub_generators()
    if not isinstance(inputs, list | tuple):
        return inputs
    drawn = [to_cuda(x) for x in inputs] if device == "cuda" else list(inputs)
    drawn = apply_transforms(drawn, seed, transforms) if transforms else drawn
    drawn = mix_signs(drawn, seed, signs) if signs else drawn
    drawn = plant_outliers(drawn, seed, outliers) if outliers else drawn
    return rounding_probe.settle_all(drawn)  # lowered precision then errs one way (common/rounding_probe.py)


def draw_factor(seed: int, position: int, transform: InputTransform) -> float:
    """The factor input `position` of the draw `seed` is multiplied by: scale times a log-uniform value in
    [low, high] taken from a hash of the seed (not from torch's generators, whose stream is the task's)."""
    scale, low, high = (float(v) for v in transform)
    if low == high:
        return scale * low
    digest = hashlib.sha256(f"{seed}:{position}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return scale * low * (high / low) ** fraction


def apply_transforms(inputs: list[Any], seed: int, transforms: list[InputTransform]) -> list[Any]:
    """Each floating-point tensor input multiplied by its draw's factor, out of place (get_inputs() may
    hand out the same tensor on every draw); other inputs and identity transforms are left as they are."""
    out = list(inputs)
    for position, transform in enumerate(transforms[: len(out)]):
        value = out[position]
        if tuple(float(v) for v in transform) == IDENTITY or not isinstance(value, torch.Tensor):
            continue
        if value.is_floating_point():
            out[position] = value * draw_factor(seed, position, transform)
    return out


def mixable(value: Any) -> bool:
    """A tensor random signs can be given to: floating point with elements."""
    return isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel() > 0


def sign_generator(seed: int, position: int, device: torch.device) -> torch.Generator:
    """The generator of input `position`'s signs in the draw `seed`: seeded from a hash of both (not from
    the task's generators, whose stream get_inputs() owns), so both workers make the same signs."""
    digest = hashlib.sha256(f"signs:{seed}:{position}".encode()).digest()
    generator = torch.Generator(device=device)
    generator.manual_seed(int.from_bytes(digest[:8], "big") >> 1)
    return generator


# Elements per step of `mix_signs`: its temporaries stay small beside a KernelBench input of 16 GiB.
SIGN_CHUNK = 1 << 24


def mix_signs(inputs: list[Any], seed: int, signs: Signs) -> list[Any]:
    """Each chosen floating tensor multiplied, element by element, by +-factor with random signs, out of
    place and in its own layout (strides kept: a kernel may be written for the task's layout).

    Memory: one new tensor of the input's size and chunk-sized temporaries. The whole-tensor form held
    four input-sized tensors at once (signs, two steps of their arithmetic, the product) and ran an 80 GB
    H100 out of memory on KernelBench's Average_Pooling_2D, whose input alone is 16 GiB (2026-12-06)."""
    out = list(inputs)
    for position, factor in signs.items():
        if position >= len(out) or not mixable(out[position]):
            continue
        value = out[position]
        generator = sign_generator(seed, position, value.device)
        order = _memory_order(value)
        if not value.permute(order).is_contiguous():  # overlapping or gapped (an expanded input): as a whole
            flips = torch.empty_like(value).random_(0, 2, generator=generator)
            out[position] = value * (flips * (2.0 * factor) - factor)
            continue
        mixed = torch.empty_like(value)  # a dense layout's strides, so the same order walks its memory
        source, target = value.permute(order).view(-1), mixed.permute(order).view(-1)
        for start in range(0, source.numel(), SIGN_CHUNK):
            part = source[start : start + SIGN_CHUNK]
            flips = torch.empty_like(part).random_(0, 2, generator=generator)
            torch.mul(part, flips.mul_(2.0 * factor).sub_(factor), out=target[start : start + SIGN_CHUNK])
        out[position] = mixed
    return out


def outlier_positions(seed: int, position: int, numel: int) -> list[int]:
    """The flat logical indices of input `position`'s outliers in the draw `seed`: distinct, from a hash of
    both (not from the task's generators), so both workers plant the same ones."""
    count = min(OUTLIERS_PER_INPUT, numel)
    chosen: list[int] = []
    attempt = 0
    while len(chosen) < count:
        digest = hashlib.sha256(f"outliers:{seed}:{position}:{attempt}".encode()).digest()
        index = int.from_bytes(digest[:8], "big") % numel
        if index not in chosen:
            chosen.append(index)
        attempt += 1
    return chosen


def outlier_factors(seed: int, position: int, count: int) -> list[float]:
    """Each outlier's magnitude over the audit's: 1 + k/8 (k from 0 to 7, from a hash of the draw), so the
    largest element of a draw, or the share of a norm its outliers make, differs from draw to draw (a fixed
    magnitude would make x / max|x| the same multiple of x on every draw: a degenerate task), exactly
    representable in every floating dtype the judge meets (three mantissa bits)."""
    digest = hashlib.sha256(f"outlier factors:{seed}:{position}".encode()).digest()
    return [1 + (digest[i] % 8) / 8 for i in range(count)]


def plant_outliers(inputs: list[Any], seed: int, outliers: Outliers, spread: bool = True) -> list[Any]:
    """Each chosen floating tensor with its outliers set to the chosen magnitude (times its factor from
    `outlier_factors` where `spread`: the audit searches with the factors off, each at least 1), each
    keeping its sign, out of place (get_inputs() may hand out the same tensor on every draw) and in its own
    layout. Set, not scaled: an outlier drawn near zero would carry nothing. The rounding probe then sets
    their low bits as any value's. Memory: one new tensor of the input's size."""
    out = list(inputs)
    for position, magnitude in outliers.items():
        if position >= len(out) or not mixable(out[position]):
            continue
        planted = out[position].clone()  # preserve_format: a dense layout keeps its strides
        flats = outlier_positions(seed, position, planted.numel())
        factors = outlier_factors(seed, position, len(flats)) if spread else [1.0] * len(flats)
        for flat, factor in zip(flats, factors, strict=True):
            index = _unravel(flat, planted.shape)
            # on the device, without reading the value back: a timed call's draw runs inside its round
            planted[index] = torch.where(planted[index] < 0, -magnitude * factor, magnitude * factor)
        out[position] = planted
    return out


def _unravel(flat: int, shape: torch.Size) -> tuple[int, ...]:
    """The logical index of element `flat` of a tensor of `shape` (row-major)."""
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


def _memory_order(t: torch.Tensor) -> list[int]:
    """`t`'s dimensions from the largest stride to the smallest: permuted so, a tensor whose elements fill
    a block without gaps or overlaps (any permutation of a contiguous layout) is contiguous."""
    return sorted(range(t.dim()), key=lambda d: t.stride(d), reverse=True)


def fingerprint(values: list[Any]) -> str:
    """A digest of an input set: layout of every tensor, an on-GPU checksum of its bytes, and the
    non-tensor items. It detects inputs that a seed does not reproduce; it is not a defence against a
    candidate (which can report anything and only ever hurts itself by doing so)."""
    digest = hashlib.sha256()
    for item in _leaves(values):
        if isinstance(item, torch.Tensor):
            t = item.detach()
            digest.update(repr((str(t.dtype), tuple(t.shape), t.stride(), str(t.device.type))).encode())
            digest.update(repr(_checksum(t)).encode())
        else:
            digest.update(repr((type(item).__name__, item)).encode())
    return digest.hexdigest()


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


def _checksum(t: torch.Tensor) -> list[int]:
    """Sums of the tensor's bytes, as 32-bit words, over 256 consecutive chunks and the tail, computed
    on its own device in one pass (integer sums are exact, so the same bytes give the same numbers, and
    chunking makes the sums depend on where values sit)."""
    if t.numel() == 0:
        return []
    flat = t.contiguous().reshape(-1).view(torch.uint8)
    words = flat.view(torch.int32) if flat.numel() % 4 == 0 else flat.to(torch.int32)
    body = words.numel() - words.numel() % CHUNKS
    sums = words[:body].view(CHUNKS, -1).sum(dim=1, dtype=torch.int64) if body else words[:0]
    return [*sums.tolist(), int(words[body:].sum(dtype=torch.int64))]
