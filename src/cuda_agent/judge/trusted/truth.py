"""Trusted side: the truth the precision audit compares against, made by promoting every op of the reference.

The old audit evaluated a float64 *copy* of the model (`model.to(float64)` on float64 inputs) and had
nothing where the model cast inside forward (`x.float()`, `dtype=torch.float32`: the copy came back in
float32) or failed in float64; the audit was then skipped, and TF32 passed for fp32 tasks. Here the
reference model itself runs under `TruthMode`, a dispatch mode that sees every ATen op and runs it on
float64 payloads (`tracked.Tracked`), whatever dtype the model's code asks for:

- floating inputs, parameters and buffers enter as float64 copies that still present their own dtype,
  so the model's code (dtype checks, autocast, `.half()`) runs as in the reference;
- casts and `dtype=` arguments naming float32 become float64; those naming fp16/bf16/fp8 (`.half()`,
  autocast, fake quantisation) round the value to that dtype and continue in float64, since that rounding
  is part of the task's meaning;
- integer and boolean tensors (indices, masks) are never promoted;
- each op's rule (truth_ops.py names the rule modules) also carries the variance of the error an honest
  computation of it in the task's precision can have, which is the audit's bound (precision.py).

Where the truth cannot be made at all (an op that reads raw bytes, an op with no float64 kernel), `outputs`
returns None and says why in `problem`; the judge then fails closed (docs/design/precision.md).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch._decomp import decomposition_table
from torch.utils._mode_utils import no_dispatch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from cuda_agent.judge.trusted import truth_rows
from cuda_agent.judge.trusted.tracked import Tracked, Untrackable, exact, payload
from cuda_agent.judge.trusted.truth_movement import copy_into, like_factory, movement, to_copy
from cuda_agent.judge.trusted.truth_ops import call_payload, nominal_dtypes
from cuda_agent.judge.trusted.truth_pointwise import generic, pointwise
from cuda_agent.judge.trusted.truth_recurrent import recurrent_layers_on_own_path
from cuda_agent.judge.trusted.truth_selection import decides, selection
from cuda_agent.judge.trusted.truth_sums import (
    attention,
    avg_pool,
    convolution,
    cumsum,
    matmul_family,
    reduction,
)

aten = torch.ops.aten

NAME = "float64 (promoted)"

# Which rule follows which op (by overload packet; `OVERLOAD_RULES` first, by overload), and why.
_MOVEMENT = (
    "clone", "cat", "stack", "constant_pad_nd", "flip", "roll", "repeat", "index_select", "gather", "take",
    "index", "embedding", "select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter",
    "index_put", "scatter", "masked_scatter", "index_fill", "tril", "triu", "_unsafe_view", "fill", "zero",
    "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d", "replication_pad2d",
    "replication_pad3d", "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
    "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d", "pixel_shuffle",
    "pixel_unshuffle", "channel_shuffle", "im2col", "col2im", "repeat_interleave", "diag_embed", "nonzero",
    "masked_select", "expand_copy", "permute_copy", "view_copy", "t_copy", "transpose_copy", "squeeze_copy",
    "unsqueeze_copy", "alias_copy", "detach_copy", "slice_copy", "select_copy", "split_with_sizes_copy",
    "split_copy", "unbind_copy", "narrow_copy", "diagonal_copy", "unfold_copy", "_reshape_copy", "copy",
    "lift_fresh_copy", "_reshape_alias_copy", "block_diag",
)  # fmt: skip
_LIKE = ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
         "new_zeros", "new_ones", "new_empty", "new_full", "new_empty_strided")  # fmt: skip
_SELECTION = ("amax", "amin", "argmax", "argmin", "sort", "topk", "kthvalue", "median", "mode",
              "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool3d",
              "max_pool1d", "max_pool2d", "max_pool3d")  # fmt: skip
_ATTENTION = ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
              "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu")  # fmt: skip
# Variance and standard deviation: two passes, as aten ops (PyTorch's decomposition goes to prims).
_MOMENTS = ("var", "var_mean", "std", "std_mean")
_SCALAR = ("_local_scalar_dense", "is_nonzero", "equal", "is_same_size", "_has_compatible_shallow_copy_type",
           "_fused_sdp_choice")  # fmt: skip

RULES: dict[str, Any] = {
    "_to_copy": to_copy,  # casts: fp16/bf16 kept as roundings, float32 promoted
    "copy_": copy_into,  # a copy into a lower-precision tensor is a cast
    **dict.fromkeys(("mm", "bmm", "mv", "dot", "vdot", "addmm", "baddbmm", "addmv", "addbmm", "addr"),
                    matmul_family),
    **dict.fromkeys(("convolution", "_convolution"), convolution),
    **dict.fromkeys(("sum", "mean"), reduction),  # accumulated sums
    "cumsum": cumsum,
    **dict.fromkeys(("avg_pool1d", "avg_pool2d", "avg_pool3d"), avg_pool),  # means over windows
    **dict.fromkeys(_SELECTION, selection),  # exact picks; indices are decisions
    **dict.fromkeys(_MOVEMENT, movement),  # data moves with its variance
    **dict.fromkeys(_LIKE, like_factory),  # new tensors that do not depend on the input's values
}
# max/min over everything or a dim select; max/min of two tensors (`other`) are pointwise.
OVERLOAD_RULES: dict[Any, Any] = {
    aten.max.default: selection, aten.max.dim: selection,
    aten.min.default: selection, aten.min.dim: selection,
}  # fmt: skip
# Ops whose result the truth cannot make in float64: the bytes of a tensor read as another dtype.
UNTRACKABLE = frozenset({aten.view.dtype, aten.set_.source_Storage, aten.set_.source_Tensor, aten.resize_.default})


@dataclass(frozen=True)
class Truth:
    """One output: its exact value (float64 for floating outputs), the standard error an honest
    computation in the task's precision can have (None: exact; +inf: unknowable, see truth_ops.py), and
    the reference's dtype."""

    value: torch.Tensor
    sigma: torch.Tensor | None
    dtype: torch.dtype
    rows: tuple[int, int] | None = None  # the block of the batch it covers (truth_rows.py); None: all of it
    # Whether the reference made a decision on its way (a comparison, an index, a rounding to an integer,
    # a pick, data-dependent control flow, an op with no rule): only then may a few elements flip beyond
    # the truth's own near-tie marking, so only then does the audit's trim reach any z (precision.py).
    decided: bool = True


class TruthMode(TorchDispatchMode):
    """Runs every ATen op on tracked payloads (module docstring). `unmodelled` collects the ops that got
    the generic rule."""

    def __init__(self, unmodelled: set[str]) -> None:
        super().__init__()
        self.unmodelled = unmodelled
        self.decisions: set[str] = set()  # ops that decided on floating values (`Truth.decided`)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        _refuse_complex(func, (args, kwargs))
        result = self.run(func, args, kwargs)
        if decides(func, (args, kwargs), result, _SELECTION):
            self.decisions.add(func.overloadpacket.__name__)
        return _refuse_complex(func, result)

    def run(self, func: Any, args: Any, kwargs: Any) -> Any:
        if func in UNTRACKABLE:
            raise Untrackable(f"the reference runs {func}, which reads a tensor's bytes as another dtype")
        name = func.overloadpacket.__name__
        rule = OVERLOAD_RULES.get(func) or RULES.get(name)
        if rule is None and torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd"):
            with self:
                return func.decompose(*args, **kwargs)
        flat, _ = tree_flatten((args, kwargs))
        if not any(isinstance(a, Tracked) for a in flat):
            return _fresh(func(*args, **kwargs))
        if not func._schema.is_mutable and any(_plain_float(a) for a in flat):
            # A floating tensor the truth has not seen (an attribute the model made in __init__, neither a
            # parameter nor a buffer): exact as it is, promoted like the others. Left in float32 it met a
            # float64 payload in a matmul and the truth failed ("double != float"), capping honest kernels.
            # An op that writes one keeps its own handling (in_place).
            args, kwargs = tree_map(lambda a: exact(a) if _plain_float(a) else a, (args, kwargs))
        if name in _SCALAR:
            return call_payload(func, args, kwargs)
        if name in _ATTENTION:
            return attention(self, func, args, kwargs)
        if name in _MOMENTS:
            return self.moments(func, args, kwargs)
        if rule is not None:
            return rule(func, args, kwargs)
        if torch.Tag.inplace_view in func.tags:
            return _inplace_view(func, args, kwargs)
        if func._schema.is_mutable:
            return self.in_place(func, args, kwargs)
        if func.is_view:
            return _view(func, args, kwargs)
        if torch.Tag.pointwise in func.tags:
            return pointwise(func, args, kwargs)
        if func in decomposition_table:
            with self:
                return decomposition_table[func](*args, **kwargs)
        self.unmodelled.add(str(func))
        return generic(func, args, kwargs)

    def moments(self, func: Any, args: Any, kwargs: Any) -> Any:
        """var/std (and with the mean): the mean, then the mean square of the deviations (two passes; a
        Welford or two-pass kernel is within this op's bound, a one-pass E[x^2] - E[x]^2 is not where the
        mean is large against the spread)."""
        names = [a.name for a in func._schema.arguments]
        given = dict(zip(names, args, strict=False)) | dict(kwargs)
        x = given["self"]
        dim = given.get("dim")
        dims = list(range(x.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
        correction = given.get("correction")
        if correction is None:
            correction = 1.0 if given.get("unbiased", True) else 0.0
        keepdim = bool(given.get("keepdim", False))
        count = math.prod(x.shape[d] for d in dims)
        with self:
            mean = x.mean(dim=dims, keepdim=True)
            deviation = x - mean
            var = (deviation * deviation).sum(dim=dims, keepdim=keepdim) / max(0.0, count - correction)
            result = var.sqrt() if func.overloadpacket.__name__.startswith("std") else var
            if func.overloadpacket.__name__.endswith("_mean"):
                return result, mean if keepdim else mean.squeeze(dims)
            return result

    def in_place(self, func: Any, args: Any, kwargs: Any) -> Any:
        """`x.op_(...)`: the functional op's result written into x (as `copy_`, a cast where x's dtype is
        lower than the result's)."""
        name = func.overloadpacket.__name__
        if not name.endswith("_") or "out" in kwargs:
            raise Untrackable(f"the reference runs {func}, an op writing into a tensor the truth does not follow")
        functional = getattr(getattr(aten, name[:-1], None), func._overloadname, None)
        if functional is None:
            raise Untrackable(f"the reference runs {func}, which has no functional form")
        result = self.run(functional, args, kwargs)
        return copy_into(aten.copy_.default, (args[0], result), {})


def _refuse_complex(func: Any, tree: Any) -> Any:
    """`tree` as it is, unless it holds a complex tensor: the payloads are real float64 (a float64 copy of a
    complex value keeps its real part only), so a truth made through one would be wrong, not merely
    unmodelled. No truth is made for such a task; the judgment fails closed (reward capped at 1)."""
    for t in tree_flatten(tree)[0]:
        if isinstance(t, torch.Tensor) and t.is_complex():
            raise Untrackable(f"the reference runs {func} on complex tensors, which the float64 truth does not follow")
    return tree


def _fresh(out: Any) -> Any:
    """Outputs of an op that saw no tracked tensor (a factory, a constant): exact, floating ones promoted."""
    flat, spec = tree_flatten(out)
    made = [exact(o) if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in flat]
    return tree_unflatten(made, spec)


def _inplace_view(func: Any, args: Any, kwargs: Any) -> Any:
    """squeeze_, unsqueeze_, transpose_, ...: the payload's view changed in place, and the tracked tensor's
    own sizes and strides with it (as torch.utils._python_dispatch does for wrapper subclasses)."""
    target = args[0]
    if not isinstance(target, Tracked):
        raise Untrackable(f"{func} on an untracked tensor with tracked arguments")
    func(target.value, *tree_map(payload, args[1:]), **tree_map(payload, kwargs))
    with no_dispatch():
        saved = torch._C._meta_in_tls_dispatch_include()
        torch._C._set_meta_in_tls_dispatch_include(True)
        try:
            func(*args, **kwargs)
        finally:
            torch._C._set_meta_in_tls_dispatch_include(saved)
    return target


def _view(func: Any, args: Any, kwargs: Any) -> Any:
    """A view of a tracked tensor: the same view of its payload, sharing its variance buffer."""
    base = next(a for a in tree_flatten((args, kwargs))[0] if isinstance(a, Tracked))
    out = func(*tree_map(payload, args), **tree_map(payload, kwargs))
    flat, spec = tree_flatten(out)
    dtypes = iter(nominal_dtypes(func, args, kwargs, out))
    made = [Tracked.view_of(o, next(dtypes), base) if isinstance(o, torch.Tensor) else o for o in flat]
    return tree_unflatten(made, spec)


def _plain_float(a: Any) -> bool:
    return isinstance(a, torch.Tensor) and not isinstance(a, Tracked) and a.is_floating_point()


class TruthModel:
    """The reference model evaluated under TruthMode, on its own parameters (promoted once, again when the
    model changes one in place): `outputs(inputs)` gives one Truth per output tensor, or None with
    `problem` saying why no truth could be made."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.problem = ""
        self.unmodelled: set[str] = set()
        self.rows: int | None = None  # rows of a block, where the whole batch's truth does not fit in memory
        self.planned = False  # `rows` planned from the first inputs' size and the GPU's free memory
        self.separable: bool | None = None  # whether a block's truth stands for its rows (known once confirmed)
        self._state: dict[str, tuple[torch.Tensor, int, Tracked, int]] = {}
        self.decisions: list[str] = []  # the ops that decided on floating values in the last evaluation

    @property
    def name(self) -> str:
        """What the verdict names as the truth it used."""
        name = NAME if self.rows is None else f"{NAME}, on blocks of {self.rows} rows of the batch"
        if self.unmodelled:
            return f"{name}; generic bound for {', '.join(sorted(self.unmodelled))}"
        return name

    def outputs(self, inputs: Any) -> list[Truth | None] | None:
        """The truth of the whole batch, or of a block of its rows where the whole does not fit in memory
        (truth_rows.py: the block halves on each out-of-memory error, and stays for the later calls)."""
        inputs = list(inputs)
        batch = self.plan(inputs)
        while True:
            rows = truth_rows.block(batch, self.rows) if batch and self.rows else None
            try:
                return self._outputs(truth_rows.slice_inputs(inputs, batch, rows) if rows else inputs, rows)
            except torch.OutOfMemoryError as exc:
                problem = f"OutOfMemoryError: {str(exc)[:200]}"
            except Exception as exc:
                if rows is None:
                    self.problem = f"{type(exc).__name__}: {str(exc)[:200]}"
                    return None
                self.separable, self.rows = False, None  # a block it cannot take (truth_rows.slice_inputs)
                continue
            torch.cuda.empty_cache()  # what the failed attempt cached is free for the next
            length = rows[1] - rows[0] if rows else batch
            if not batch or not length or length <= 1 or self.separable is False:
                self.problem = problem
                return None
            self.rows = length // 2

    def plan(self, inputs: list[Any]) -> int | None:
        """Plan `rows` once, from the first inputs' size and the GPU's free memory; the batch size."""
        batch = truth_rows.batch_size(inputs)
        free = truth_rows.free_gpu_bytes(inputs) if batch and not self.planned and self.separable is not False else None
        if free is not None:
            self.planned, self.rows = True, truth_rows.planned_rows(inputs, batch, free)
        return batch

    def confirm(self, truths: list[Truth | None] | None, outputs: list[torch.Tensor], tol: Any,
                inputs: Any) -> list[Truth | None] | None:  # fmt: skip
        """`truths` where they cover the whole batch, or where a block's agrees with the reference's own
        outputs on its rows (truth_rows.agrees). Where it does not (the batch's elements interact), blocks
        are off for this model and the whole batch's truth is made from `inputs` (as drawn): it may fit, the
        plan being an estimate; else None, with `problem` saying why."""
        if truths is None or not any(t is not None and t.rows is not None for t in truths):
            return truths
        problem = truth_rows.agrees(truths, outputs, tol)
        if problem is None:
            self.separable = True
            return truths
        self.separable, self.rows = False, None
        whole = self.outputs(inputs)
        if whole is None:
            self.problem = f"{problem}, and the float64 truth of the whole batch does not fit in memory ({self.problem})"
        return whole

    def _outputs(self, inputs: list[Any], rows: tuple[int, int] | None) -> list[Truth | None]:
        from cuda_agent.task import flatten_tensors

        state = self._tracked_state()
        args = tree_map(lambda x: exact(x) if isinstance(x, torch.Tensor) else x, inputs)
        kept = _plain_state(self.model)
        mode = TruthMode(self.unmodelled)
        try:
            with torch.no_grad(), recurrent_layers_on_own_path(self.model), mode:
                result = torch.func.functional_call(self.model, state, tuple(args))
        finally:
            _restore_plain_state(self.model, kept)
        self.decisions = sorted(mode.decisions)
        decided = bool(mode.decisions or self.unmodelled)
        made = [_truth(t) for t in flatten_tensors(result)]
        return [dataclasses.replace(t, rows=rows, decided=decided) if t is not None else t for t in made]

    def release(self) -> None:
        """Drop the promoted parameters (the next evaluation promotes them again) and the plan of rows: a
        probe made before the verification sets then holds no float64 copy of a large model beside the
        audits' input sets, and its plan, made while they held memory, does not bind the later evaluations."""
        self._state.clear()
        if self.separable is not False:
            self.planned, self.rows = False, None

    def _tracked_state(self) -> dict[str, Tracked]:
        """Parameters and buffers as tracked copies, kept while neither the reference's tensor nor the copy
        changed (version counters)."""
        state: dict[str, Tracked] = {}
        named = [*self.model.named_parameters(), *self.model.named_buffers()]
        for name, tensor in named:
            kept = self._state.get(name)
            if kept and kept[0] is tensor and kept[1] == tensor._version and kept[3] == kept[2].value._version:
                state[name] = kept[2]
                continue
            made = exact(tensor)
            self._state[name] = (tensor, tensor._version, made, made.value._version)
            state[name] = made
        return state


def _plain_state(model: torch.nn.Module) -> dict[tuple[int, str], Any]:
    """Plain attributes of every submodule that are tensors, lists, dicts or tuples (neither parameters
    nor buffers: functional_call does not swap them), recorded with their containers' contents. A forward
    that assigns one (an RNN keeping `self.hidden`) or appends to one (a list of past states) would
    otherwise leave tracked tensors in the reference model after the truth's evaluation, and its next
    plain forward fails."""
    return {(id(m), k): _record(v) for m in model.modules() for k, v in vars(m).items()
            if k not in _MODULE_INTERNALS and isinstance(v, (torch.Tensor, list, dict, tuple))}  # fmt: skip


def _restore_plain_state(model: torch.nn.Module, kept: dict[tuple[int, str], Any]) -> None:
    """Puts back what `_plain_state` saw, containers with their contents as they were (the same
    objects: other references to them see the restore too); an attribute holding a tensor of the truth's
    that the forward added is removed."""
    for m in model.modules():
        for k, v in list(vars(m).items()):
            if k in _MODULE_INTERNALS:
                continue
            record = kept.get((id(m), k))
            if record is not None:
                restored = _restore(record)
                if restored is not v:
                    setattr(m, k, restored)
            elif _holds_tracked(v):
                delattr(m, k)


# nn.Module's own tables (parameters, buffers, submodules: functional_call swaps and restores them; hooks)
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module()))
_DEPTH = 4  # containers deeper than this are not looked into (no model keeps tensors that deep)


def _holds_tracked(value: Any, depth: int = 0) -> bool:
    if isinstance(value, Tracked):
        return True
    if depth >= _DEPTH:
        return False
    if isinstance(value, (list, tuple)):
        return any(_holds_tracked(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_holds_tracked(v, depth + 1) for v in value.values())
    return False


def _record(value: Any, depth: int = 0) -> tuple[Any, Any]:
    """(the object, its contents recorded likewise) for lists, dicts and tuples; (the object, None) else."""
    if depth < _DEPTH and isinstance(value, (list, tuple)):
        return value, [_record(v, depth + 1) for v in value]
    if depth < _DEPTH and isinstance(value, dict):
        return value, {k: _record(v, depth + 1) for k, v in value.items()}
    return value, None


def _restore(record: tuple[Any, Any]) -> Any:
    value, contents = record
    if contents is None:
        return value
    if isinstance(value, list):
        value[:] = [_restore(r) for r in contents]
    elif isinstance(value, dict):
        value.clear()
        value.update({k: _restore(r) for k, r in contents.items()})
    elif isinstance(value, tuple):  # immutable itself; lists and dicts inside it are put back in place
        for r in contents:
            _restore(r)
    return value


def _truth(t: torch.Tensor) -> Truth | None:
    if isinstance(t, Tracked):
        var = t.var
        # the allowance needs a few digits: float32 halves what the worker keeps per verification set
        sigma = None if var is None else torch.sqrt(var.clamp(min=0)).float()
        return Truth(t.value.detach(), sigma, t.dtype)
    if t.is_floating_point():
        return Truth(t.detach().to(torch.float64), None, t.dtype)
    return Truth(t.detach(), None, t.dtype)

