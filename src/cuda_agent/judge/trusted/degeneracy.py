"""The degeneracy audit: trivial answers that pass the comparison on every input set.

A task whose output a trivial stand-in matches on every input set cannot tell a kernel that does the
work from one that does not; the judgment then ends with `task_error` (the task is unusable, not the
candidate wrong) instead of rewarding the stand-in. The stand-ins, with why each is trivial and the
margin it must pass by, are the table `STAND_INS`.

Three rules keep the audit from refusing honest tasks (issue 35, class 6):
- **One stand-in for the whole judgment.** What a stand-in fits to the answer (a constant, a polynomial's
  coefficients) it fits on the first input set and applies unchanged to the others: a candidate cannot
  know the answer of a set it has not computed. Refitted on each set, the polynomial "passed" a global
  abs-max normalisation, `x / max|x|`, which is linear in x on every set but with a coefficient only the
  reduction over all of x gives.
- **A clear margin for approximations.** Answers that need no work (zeros, a constant, an input returned,
  one slice repeated) make the task degenerate when they pass at the judge's own tolerance: a candidate
  returning one would be rewarded for nothing. (A margin there would let the uniform 1/32768 through on
  a softmax over 32768 standard-normal logits: its largest error is 0.43 of the tolerance, and it passes
  on every set.) The polynomial still reads every input and writes every output, so it only shows that
  the task cannot tell right from trivial when it passes with its error below a quarter of the tolerance
  everywhere: the task's nonlinearity is then invisible at the tolerance. MinGPT's tanh GELU on inputs
  in [0, 1) (KernelBench level1/88) is matched by a quadratic with 0.47 of the tolerance to spare, not a
  clear margin: a task to judge kernels on, where a candidate returning the quadratic is refused by the
  precision audit (its error against a float64 evaluation is far above the reference's).
- **Inputs as drawn.** The audit compares with copies of the inputs taken before the reference runs
  (`snapshot`): a forward that updates an input in place and returns it made the input, read after the
  forward, equal the output ("input 0 returned as it is").

Trust boundary: runs in the reference worker only (never candidate code), on the reference's outputs and
the inputs the judge drew; `scripts/kernelbench_degeneracy.py` runs the same audit over KernelBench
(`audit_task`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from cuda_agent.judge.trusted.compare import Tolerance, passes_with

# A task running only these (and allocation, views) is a polynomial of its inputs: a fitted polynomial
# is then the task itself, not a trivial answer (`low_order` off).
POLYNOMIAL_OPS = frozenset({"mul", "add", "sub", "rsub", "neg", "clone", "copy_", "_to_copy", "contiguous"})


@dataclass(frozen=True)
class StandIn:
    """A trivial answer: `margin` is how many times tighter than the judge's tolerance it must pass."""

    name: str
    margin: float
    why: str


STAND_INS: dict[str, StandIn] = {
    s.name: s
    for s in (
        StandIn("zeros", 1.0, "no work at all"),
        StandIn("constant", 1.0, "no work: one value (the first set's mean, else its median) everywhere"),
        StandIn("slice", 1.0, "a fraction of the work: the output's first slice along a dimension, repeated"),
        StandIn("input", 1.0, "no work: an input (as drawn, before the reference ran) returned as it is"),
        StandIn(
            "sample", 1.0,
            "half the work: the reference on every 2nd index along one dimension of an input that no few "
            "elements move (sample_standin.py), within the tolerance and the precision audit's bound",
        ),
        StandIn(
            "polynomial", 4.0,
            "a cheaper formula, not no work: a quadratic of one input with coefficients fitted on the first "
            "set; degenerate only when its error stays below a quarter of the tolerance",
        ),
    )
}  # fmt: skip


def snapshot(inputs: Sequence[Any]) -> list[Any]:
    """Copies of an input set's tensors, taken before the reference runs (it may update inputs in place)."""
    return [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]


CHUNK = 1 << 24  # elements per step of the polynomial's sums and evaluation: float64 temporaries stay small


@dataclass(frozen=True)
class Polynomial:
    """c0 + c1 z + c2 z^2 + ... with z = x / scale."""

    coefficients: tuple[float, ...]
    scale: float

    def __call__(self, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The polynomial of every element of `x`, as `dtype` (computed in float64, CHUNK at a time)."""
        flat = x.reshape(-1)
        out = torch.empty(flat.shape, dtype=dtype, device=x.device)
        for start in range(0, flat.numel(), CHUNK):
            z = flat[start : start + CHUNK].double() / self.scale
            value = torch.zeros_like(z)
            for c in reversed(self.coefficients):  # Horner
                value = value * z + c
            out[start : start + CHUNK] = value
        return out.reshape(x.shape)


def fit_polynomial(x: torch.Tensor, y: torch.Tensor, degree: int) -> Polynomial | None:
    """The least-squares polynomial of `x` (elementwise, one set of coefficients) closest to `y`, from
    the normal equations: power sums on the tensors' device, CHUNK elements at a time, and only a tiny
    system solved on the CPU."""
    xf, yf = x.reshape(-1), y.reshape(-1)

    def chunks() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for i in range(0, xf.numel(), CHUNK):
            yield xf[i : i + CHUNK].double(), yf[i : i + CHUNK].double()

    scale, count = 0.0, 0
    for xs, ys in chunks():
        keep = torch.isfinite(xs) & torch.isfinite(ys)
        count += int(keep.sum())
        if bool(keep.any()):
            scale = max(scale, float(xs[keep].abs().max()))
    if count <= degree + 1:
        return None
    scale = scale or 1.0
    sums, rhs = [0.0] * (2 * degree + 1), [0.0] * (degree + 1)
    for xs, ys in chunks():
        keep = torch.isfinite(xs) & torch.isfinite(ys)
        z, t = xs[keep] / scale, ys[keep]
        power = torch.ones_like(z)
        for p in range(2 * degree + 1):
            sums[p] += float(power.sum())
            if p <= degree:
                rhs[p] += float((t * power).sum())
            power = power * z
    gram = torch.tensor([[sums[i + j] for j in range(degree + 1)] for i in range(degree + 1)], dtype=torch.float64)
    solution = torch.linalg.lstsq(gram, torch.tensor(rhs, dtype=torch.float64).unsqueeze(1)).solution
    return Polynomial(tuple(solution.flatten().tolist()), scale)


MEDIAN_SAMPLE = 1 << 24  # elements the median is taken over (an even stride through the output)


def _finite_chunks(t: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """`t` flattened, CHUNK elements at a time as float64, each with its mask of finite values: sums over
    the finite elements without a boolean index or a float64 copy of the whole tensor."""
    flat = t.detach().reshape(-1)
    for start in range(0, flat.numel(), CHUNK):
        part = flat[start : start + CHUNK].double()
        yield part, torch.isfinite(part)


def _constants(ref: torch.Tensor) -> tuple[float, ...]:
    """The mean and the median of the finite elements: the mean summed in float64 CHUNK at a time, the
    median over an even stride of at most MEDIAN_SAMPLE elements. The whole-tensor median sorted a float64
    copy with its indices: 13 times an 8 GiB output, over an H200's memory (KernelBench's L1Norm)."""
    flat = ref.reshape(-1)
    total, count = 0.0, 0
    for part, finite in _finite_chunks(ref):
        total += float(torch.where(finite, part, 0.0).sum())
        count += int(finite.sum())
    if not count:
        return ()
    sample = flat[:: max(1, flat.numel() // MEDIAN_SAMPLE)].double()
    sample = sample[torch.isfinite(sample)]
    median = float(sample.median()) if sample.numel() else total / count
    return total / count, median


class Audit:
    """The degeneracy audit over a judgment's input sets: `add` each set's outputs and inputs (as drawn),
    then `always` names the stand-ins that passed on every set."""

    def __init__(self, tol: Tolerance) -> None:
        self.tol = tol
        self.sets = 0
        self._fits: dict[tuple[int, str], Any] = {}  # (output, stand-in) -> what the first set fitted
        self._always: set[str] | None = None

    def _passes(self, kind: str, ref: torch.Tensor, fake: torch.Tensor) -> bool:
        margin = STAND_INS[kind].margin
        return passes_with(ref, fake, Tolerance(self.tol.atol / margin, self.tol.rtol / margin))

    def _fit(self, key: tuple[int, str], make: Any) -> Any:
        if key not in self._fits:
            self._fits[key] = make()
        return self._fits[key]

    def add(self, outputs: Sequence[torch.Tensor], inputs: Sequence[Any] = (), low_order: bool = True,
            also: Sequence[str] = ()) -> list[str]:  # fmt: skip
        """The stand-ins that pass on this set (`low_order`: try the polynomial; off for tasks that are
        themselves polynomial in their inputs, where the fit is the task, not a trivial answer; `also`:
        stand-ins the caller found passing, such as the reference on a sample, sample_standin.py)."""
        found: set[str] = set(also)
        for k, ref in enumerate(outputs):
            prefix = f"output {k}: " if len(outputs) > 1 else ""
            found |= {prefix + name for name in self._output(k, ref, inputs, low_order)}
        self.sets += 1
        self._always = found if self._always is None else self._always & found
        return sorted(found)

    def always(self) -> list[str]:
        return sorted(self._always or ())

    def _output(self, k: int, ref: torch.Tensor, inputs: Sequence[Any], low_order: bool) -> list[str]:
        if ref.numel() == 0:
            return ["empty output"]
        passing = []
        if self._passes("zeros", ref, ref.new_zeros(()).expand_as(ref)):  # expanded: no output-sized copies
            passing.append("all zeros")
        if ref.is_floating_point():
            mean_median = self._fit((k, "constant"), lambda: _constants(ref))
            for label, value in zip(("the constant mean", "the constant"), mean_median, strict=False):
                if self._passes("constant", ref, ref.new_full((), value).expand_as(ref)):
                    passing.append(f"{label} {value:.4g}")
                    break
        for dim, size in enumerate(ref.shape):
            if size > 1 and self._passes("slice", ref, ref.narrow(dim, 0, 1).expand_as(ref)):
                passing.append(f"its first slice along dim {dim} repeated")
                break
        for j, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor) or x.numel() != ref.numel() or x.device != ref.device:
                continue
            same = x.reshape(ref.shape)
            comparable = x.dtype == ref.dtype or (x.is_floating_point() and ref.is_floating_point())
            if comparable and self._passes("input", ref, same.to(ref.dtype)):
                passing.append(f"input {j} returned as it is")
                continue
            if low_order and ref.is_floating_point() and x.is_floating_point():
                fit = self._fit((k, f"polynomial {j}"), lambda same=same: fit_polynomial(same, ref, degree=2))
                if fit is not None and self._passes("polynomial", ref, fit(same, ref.dtype)):
                    passing.append(f"a quadratic polynomial of input {j}")
        return passing


def degenerate_baselines(
    ref: torch.Tensor, tol: Tolerance, inputs: Sequence[Any] = (), low_order: bool = True
) -> list[str]:
    """The stand-ins that pass for one output on one input set (a one-set `Audit`)."""
    return Audit(tol).add([ref], inputs, low_order)


def _spec(t: torch.Tensor) -> dict[str, Any]:
    """Shape, dtype and, for a float output, the largest and the mean magnitude of its finite values."""
    spec: dict[str, Any] = {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
    if not t.is_floating_point() or not t.numel():
        return spec
    # Chunk by chunk, without a boolean index: a mask's indices on a 4-d output take 32 bytes an element
    # (56 GiB on KernelBench's 7 GiB norms, out of memory on an 80 GB card).
    largest, total, count = 0.0, 0.0, 0
    for part, finite in _finite_chunks(t):
        magnitude = torch.where(finite, part.abs(), 0.0)
        largest, total, count = max(largest, float(magnitude.max())), total + float(magnitude.sum()), count + int(finite.sum())
    if count:
        spec["max_abs"], spec["mean_abs"] = largest, total / count
    return spec


@dataclass
class TaskAudit:
    """What `audit_task` found for one task."""

    degenerate: list[str]  # stand-ins that passed on every set
    per_set: list[list[str]]  # stand-ins that passed on each set
    outputs: list[dict[str, Any]]  # shape, dtype and magnitude (first set) of each output
    ops: list[str]  # the reference's ATen ops
    low_order: bool
    input_bytes: int
    seconds: float
    parameter_audit: dict[str, Any] = field(default_factory=dict)
    sign_audit: dict[str, Any] = field(default_factory=dict)
    outlier_audit: dict[str, Any] = field(default_factory=dict)


def audit_task(module: ModuleType, name: str, seeds: Sequence[int], tol: Tolerance, device: str = "cuda",
               init_seed: int = 0, signs: bool = True) -> TaskAudit:  # fmt: skip
    """The reference worker's degeneracy audit on a task module, the judge's way (`prepare`): the model
    built from `init_seed`, its constant state varied and every parameter made to matter, inputs of one
    sign given random signs where the task is defined on both (`signs`: sign_audit.py, as the judge does
    with its precision audit on), a global loss's outliers planted (outlier_audit.py), each input set drawn
    from its seed on `device`, copied before the forward, and audited with the same `Audit`; where the
    outlier audit left an input without outliers, the sample stand-in too, against the float64 truth as
    the judge makes it (sample_standin.py)."""
    from cuda_agent.judge.candidate.inputs import draw_inputs, mix_signs
    from cuda_agent.judge.candidate.opgate import ALLOWED_OPS, OpGate
    from cuda_agent.judge.trusted import outlier_audit, precision_bound, sample_standin, sign_audit
    from cuda_agent.judge.trusted.audit import make_parameters_matter, vary_constant_state
    from cuda_agent.judge.trusted.truth import TruthModel
    from cuda_agent.task import build_model, check_inputs, flatten_tensors, tensor_bytes

    began = time.monotonic()
    torch.manual_seed(init_seed)
    model, _ = build_model(module, name)
    vary_constant_state(model)
    model = model.to(device).eval()
    first = check_inputs(draw_inputs(module, seeds[0], device=device), name)
    parameter_audit = make_parameters_matter(model, first, tol)
    found = sign_audit.SignAudit()
    if signs and len(seeds) > 1:
        second = check_inputs(draw_inputs(module, seeds[1], device=device), name)
        found = sign_audit.choose(model, first, second, tol, seed=seeds[0] + 1)
        first = mix_signs(first, seeds[0], found.signs) if found.signs else first
        del second
    planted = outlier_audit.audit(model, lambda: draw_inputs(module, seeds[0], device=device, signs=found.signs), tol,
                                  first=first)  # fmt: skip
    if planted.planted:  # drawn again, as the judge draws it (the outliers before the rounding probe's bits)
        first = check_inputs(draw_inputs(module, seeds[0], device=device, signs=found.signs,
                                         outliers=planted.outliers), name)  # fmt: skip
    input_bytes = tensor_bytes(first)
    samples = sample_standin.samplings(first, planted.refused)  # with the truth the judge would make
    exact = TruthModel(model) if samples else None
    audit = Audit(tol)
    recorder = OpGate(poison=False)
    per_set, specs, low_order = [], [], True
    for index, seed in enumerate(seeds):  # one set at a time (the judge holds all five: same answers)
        inputs = first if index == 0 else check_inputs(draw_inputs(module, seed, device=device, signs=found.signs,
                                                                      outliers=planted.outliers), name)
        first = []  # set 0 is dropped with its turn
        pristine = snapshot(inputs)
        with torch.no_grad(), recorder if index == 0 else contextlib.nullcontext():
            outputs = [t.detach() for t in flatten_tensors(model(*inputs))]
        if not outputs:
            raise ValueError("Model.forward returned no tensors")
        if index == 0:
            specs = [_spec(t) for t in outputs]
        low_order = not set(recorder.seen) <= (POLYNOMIAL_OPS | ALLOWED_OPS)
        truths = exact.confirm(exact.outputs(pristine), outputs, tol, pristine) if exact else None
        sampled = sample_standin.passing(model, pristine, outputs, truths, tol, precision_bound.DEFAULT_K, samples)
        per_set.append(audit.add(outputs, pristine, low_order, also=sampled))
        del pristine, outputs, inputs, truths
    return TaskAudit(
        degenerate=audit.always(), per_set=per_set, outputs=specs, ops=sorted(recorder.seen), low_order=low_order,
        input_bytes=input_bytes, seconds=time.monotonic() - began, parameter_audit=parameter_audit,
        sign_audit=found.report(), outlier_audit=planted.report(),
    )  # fmt: skip
