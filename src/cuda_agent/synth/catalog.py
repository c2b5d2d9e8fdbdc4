"""The operator catalog: every operator the composer may use, crawled from the installed libraries.

Nothing is hand-listed. Three crawlers feed it:

* PyTorch's own operator test database (`common_methods_invocations.op_db`) gives, for ~700 `torch`
  functions and tensor methods, sample inputs that are known to be valid;
* the module test database (`common_modules.module_db`) does the same for `torch.nn` classes, and the
  remaining `torch.nn` classes that build without arguments are probed on a few standard shapes;
* `transformers` modeling files are scanned for normalisation, MLP, attention and rotary-embedding classes,
  built from a small config of their own family.

A sample is only a single point, so each one is *generalised* into a `Pattern`: arguments that equal an
input dimension are tied to that dimension, integers that scale exactly one output dimension become free
"widths" (out_channels, out_features), and everything else stays a literal. The pattern is then probed
on a fresh, differently-shaped input; only patterns that still run are kept, which throws away samples
with shape-dependent literals. The same probe tells whether the op is random (two unseeded calls differ)
and whether it produces NaN on normal inputs. The crawl takes tens of seconds, so the result is cached on
disk as JSON, keyed by the library versions and the crawl options, and memoised in-process.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import json
import math
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CATALOG_FORMAT = 3
FLOAT_DTYPES = ("float32", "float16", "bfloat16")

# Heads of op names that produce non-tensor-flow results or need inputs we cannot synthesise generically.
# These are not an op list: they prune whole namespaces before probing, to keep the crawl fast.
_SKIP_PREFIXES = ("_", "native_", "sparse", "to_sparse", "nn.functional.ctc", "fft.", "linalg.")
_SKIP_WORDS = (
    "_like",
    "new_",
    "empty",
    "zeros",
    "ones",
    "full",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "ops.",
    "as_strided",
    "resize",
)

_MAX_SAMPLES_PER_OP = 6
_MAX_PATTERNS_PER_OP = 4
_MAX_TIE_COMBOS = 8
_MAX_PROBE_NUMEL = 4096


@dataclass(frozen=True)
class Arg:
    """One argument of a call, in a form that can be re-instantiated for any input shape.

    kind: `lit` (value: Python source text), `dim` (value: input dim index), `dims` (value: tuple of input
    dim indices), `width` (value: (key, default)), `tensor` (value: tuple of per-dim specs, each "1",
    "d<j>" tied to input dim j, or "w:<key>:<default>" a free width).
    """

    kind: str
    value: Any
    name: str | None = None


@dataclass(frozen=True)
class Pattern:
    """A way to call an op on an input of rank `rank`, proven to run on a fresh shape."""

    rank: int
    example_shape: tuple[int, ...]
    args: tuple[Arg, ...] = ()
    ctor: tuple[Arg, ...] = ()
    out_index: int | None = None
    meta_ok: bool = True
    nan_prone: bool = False
    same_shape: bool = False
    random: bool = False


@dataclass(frozen=True)
class OpEntry:
    """A catalog entry: what an op is, how to build and call it, and what it accepts.

    `name` is what goes in a task's `ops` list (e.g. `torch.relu`, `nn.Conv2d`, `LlamaRMSNorm`); `target`
    is the importable path; `kind` is `function`, `method`, `module` or `transformers`.
    For transformers entries `extra` holds the config class, config overrides, and call style.
    """

    name: str
    source: str
    kind: str
    target: str
    patterns: tuple[Pattern, ...]
    dtypes: tuple[str, ...] = ("float32",)
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(sorted({p.rank for p in self.patterns}))

    @property
    def random(self) -> bool:
        """Random under some crawled calling pattern (e.g. dropout with p > 0, or in training mode)."""
        return any(p.random for p in self.patterns)

    @property
    def always_random(self) -> bool:
        return bool(self.patterns) and all(p.random for p in self.patterns)


@dataclass(frozen=True)
class Catalog:
    """The crawled operators, plus the versions they were crawled from."""

    entries: tuple[OpEntry, ...]
    versions: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, name: str) -> OpEntry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(name)

    def select(self, *, source: str | None = None, random: bool | None = None) -> list[OpEntry]:
        return [
            e
            for e in self.entries
            if (source is None or e.source == source) and (random is None or e.random == random)
        ]

    def random_op_names(self) -> set[str]:
        """Short names (last dotted part) of ops that were random under every crawled pattern."""
        return {e.target.rsplit(".", 1)[-1] for e in self.entries if e.always_random}


# ----------------------------------------------------------------------------- literals and arguments


def literal_source(value: Any) -> str | None:
    """Python source for a literal argument, or None when it cannot be written as a literal."""
    import torch

    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.Size):
        value = tuple(value)
    if isinstance(value, tuple | list):
        parts = [literal_source(v) for v in value]
        if any(p is None for p in parts):
            return None
        if isinstance(value, list):
            return "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore[arg-type]
    return None


def eval_literal(source: str) -> Any:
    import torch

    return eval(source, {"torch": torch, "float": float, "__builtins__": {}})


def resolve_tensor_shape(
    spec: Sequence[str], shape: Sequence[int], widths: dict[str, int]
) -> tuple[int, ...]:
    out = []
    for s in spec:
        if s == "1":
            out.append(1)
        elif s.startswith("d"):
            out.append(int(shape[int(s[1:])]))
        else:
            _, key, default = s.split(":")
            out.append(int(widths.get(key, int(default))))
    return tuple(out)


def resolve_arg(arg: Arg, shape: Sequence[int], widths: dict[str, int]) -> Any:
    """The concrete value of a non-tensor argument for an input of `shape`."""
    if arg.kind == "lit":
        return eval_literal(arg.value)
    if arg.kind == "dim":
        return int(shape[arg.value])
    if arg.kind == "dims":
        return tuple(int(shape[j]) for j in arg.value)
    if arg.kind == "width":
        key, default = arg.value
        return int(widths.get(key, default))
    raise ValueError(f"resolve_arg: {arg.kind} needs a tensor")


def width_keys(pattern: Pattern) -> dict[str, int]:
    """Free widths of a pattern and their crawled defaults."""
    keys: dict[str, int] = {}
    for arg in (*pattern.ctor, *pattern.args):
        if arg.kind == "width":
            keys[arg.value[0]] = int(arg.value[1])
        elif arg.kind == "tensor":
            for s in arg.value:
                if s.startswith("w:"):
                    _, key, default = s.split(":")
                    keys[key] = int(default)
    return keys


# ----------------------------------------------------------------------------- instantiation


def resolve_target(target: str) -> Any:
    """Import `a.b.c` as attribute c of module a.b (walking down attributes as needed)."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for p in parts[cut:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(target)


def build_call(
    entry: OpEntry,
    pattern: Pattern,
    shape: Sequence[int],
    *,
    widths: dict[str, int] | None = None,
    device: Any = "cpu",
    dtype: Any = None,
    hidden: int | None = None,
) -> Callable[[Any], Any]:
    """A callable `f(x)` that applies `entry` (as `pattern` says) to an input of `shape` on `device`.

    Tensor arguments are drawn with `torch.randn`, modules are constructed on `device`; this is what the
    crawl probes and what the composer runs on the meta device to check shapes.
    """
    import torch

    widths = widths or {}
    dtype = dtype or torch.float32

    def tensor_of(arg: Arg) -> Any:
        return torch.randn(resolve_tensor_shape(arg.value, shape, widths), device=device, dtype=dtype)

    def values(args: Iterable[Arg]) -> tuple[list[Any], dict[str, Any]]:
        pos: list[Any] = []
        kw: dict[str, Any] = {}
        for a in args:
            v = tensor_of(a) if a.kind == "tensor" else resolve_arg(a, shape, widths)
            if a.name is None:
                pos.append(v)
            else:
                kw[a.name] = v
        return pos, kw

    def pick(out: Any) -> Any:
        return out[pattern.out_index] if pattern.out_index is not None else out

    if entry.kind == "transformers":
        return _build_transformers_call(entry, shape, device=device, dtype=dtype, hidden=hidden)
    if entry.kind == "module":
        cls = resolve_target(entry.target)
        pos, kw = values(pattern.ctor)
        with torch.device(device):
            module = cls(*pos, **kw)
        module = module.to(dtype=dtype)
        return lambda x: pick(module(x))
    pos, kw = values(pattern.args)
    if entry.kind == "method":
        name = entry.target.rsplit(".", 1)[-1]
        return lambda x: pick(getattr(x, name)(*pos, **kw))
    fn = resolve_target(entry.target)
    return lambda x: pick(fn(x, *pos, **kw))


# ----------------------------------------------------------------------------- probing


def _probe_shape(shape: Sequence[int], salt: int = 0) -> tuple[int, ...]:
    """A differently-sized shape of the same rank: ones stay ones, other dims grow and become distinct."""
    out = []
    for i, d in enumerate(shape):
        out.append(1 if d == 1 else int(d) + 1 + i + salt)
    return tuple(out)


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return x if isinstance(x, tuple) else (x,)


def _float_tensor(x: Any) -> bool:
    import torch

    return isinstance(x, torch.Tensor) and x.dtype.is_floating_point and not x.is_sparse


def _output_index(out: Any) -> int | str | None:
    """None for a plain float tensor, 0 for a tuple led by one, "bad" otherwise."""
    if _float_tensor(out):
        return None
    if isinstance(out, tuple | list) and out and _float_tensor(out[0]):
        return 0
    return "bad"


def _same(a: Any, b: Any) -> bool:
    import torch

    return a.shape == b.shape and bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)))


@dataclass
class _ProbeResult:
    ok: bool
    identity: bool = False
    random: bool = False
    nan_prone: bool = False
    out_index: int | None = None
    meta_ok: bool = False
    same_shape: bool = False
    out_shape: tuple[int, ...] = ()


def probe(
    entry: OpEntry, pattern: Pattern, shape: Sequence[int], widths: dict[str, int] | None = None
) -> _ProbeResult:
    """Run `entry` on a real CPU input of `shape` (and on meta), and report what the op is like."""
    import torch

    try:
        torch.manual_seed(0)
        x = torch.randn(tuple(shape))
        f = build_call(entry, pattern, shape, widths=widths)
        out1 = f(x)
        idx = _output_index(out1) if pattern.out_index is None else pattern.out_index
        if idx == "bad":
            return _ProbeResult(False)
        y1 = out1 if idx is None else out1[idx]
        if not _float_tensor(y1) or y1.dtype != torch.float32 or y1.dim() == 0 or y1.numel() == 0:
            return _ProbeResult(False)
        finite = torch.isfinite(y1)
        if not bool(finite.any()):
            return _ProbeResult(False)
        y2 = f(x)
        y2 = y2 if idx is None else y2[idx]
        random = not _same(y1, y2)
        if not random:
            # A module may draw its randomness at construction time only; rebuild with another seed.
            torch.manual_seed(1)
            g = build_call(entry, pattern, shape, widths=widths)
            y3 = g(x)
            y3 = y3 if idx is None else y3[idx]
            torch.manual_seed(1)
            h = build_call(entry, pattern, shape, widths=widths)
            y4 = h(x)
            y4 = y4 if idx is None else y4[idx]
            random = not _same(y3, y4)
    except Exception:
        return _ProbeResult(False)
    meta_ok = False
    try:
        fm = build_call(entry, pattern, shape, widths=widths, device="meta")
        om = fm(torch.empty(tuple(shape), device="meta"))
        om = om if idx is None else om[idx]
        meta_ok = tuple(om.shape) == tuple(y1.shape) and om.dtype == y1.dtype
    except Exception:
        meta_ok = False
    return _ProbeResult(
        ok=True,
        identity=tuple(y1.shape) == tuple(x.shape) and _same(y1, x),
        random=random,
        nan_prone=not bool(finite.all()),
        out_index=idx,  # type: ignore[arg-type]
        meta_ok=meta_ok,
        same_shape=tuple(y1.shape) == tuple(shape),
        out_shape=tuple(y1.shape),
    )


def _generalise(
    entry: OpEntry,
    candidates: Iterable[Pattern],
    fresh_shapes: Callable[[tuple[int, ...]], list[tuple[int, ...]]] | None = None,
) -> Pattern | None:
    """The first candidate that runs on its sample shape and on two fresh shapes, with what it learned."""
    for n, cand in enumerate(candidates):
        if n >= _MAX_TIE_COMBOS:
            break
        if math.prod(cand.example_shape) > _MAX_PROBE_NUMEL:
            continue
        first = probe(entry, cand, cand.example_shape)
        if not first.ok or first.identity:
            continue
        shapes = (
            fresh_shapes(cand.example_shape)
            if fresh_shapes is not None
            else [_probe_shape(cand.example_shape, salt) for salt in (0, 3)]
        )
        fresh = [probe(entry, cand, shape) for shape in shapes]
        if not all(r.ok for r in fresh):
            continue
        pattern = Pattern(
            rank=cand.rank,
            example_shape=cand.example_shape,
            args=cand.args,
            ctor=cand.ctor,
            out_index=first.out_index,
            meta_ok=first.meta_ok and all(r.meta_ok for r in fresh),
            nan_prone=first.nan_prone or any(r.nan_prone for r in fresh),
            same_shape=first.same_shape,
            random=first.random or any(r.random for r in fresh),
        )
        return pattern
    return None


def _tie_options(value: int, shape: Sequence[int], *, allow_batch: bool) -> list[str]:
    """Ways a size seen in a sample may relate to the input: tied to a dim of equal size, or free."""
    opts = [f"d{j}" for j, d in enumerate(shape) if d == value and (allow_batch or j > 0)]
    return opts


def _combos(options: list[list[Any]]) -> Iterator[tuple[Any, ...]]:
    """Cartesian product, capped: enough to resolve ambiguous ties in small samples."""
    import itertools

    for i, combo in enumerate(itertools.product(*options)):
        if i >= _MAX_TIE_COMBOS:
            return
        yield combo


# ----------------------------------------------------------------------------- torch functions (op_db)


def _resolve_function(name: str) -> tuple[str, str] | None:
    """(kind, target) for an op_db name: a `torch.*` function if there is one, else a Tensor method."""
    import torch

    obj: Any = torch
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is not None and callable(obj) and not inspect.isclass(obj):
        return "function", "torch." + name
    if "." not in name and callable(getattr(torch.Tensor, name, None)):
        return "method", "torch.Tensor." + name
    return None


def _display_name(kind: str, target: str) -> str:
    if kind == "method":
        return "Tensor." + target.rsplit(".", 1)[-1]
    if target.startswith("torch.nn.functional."):
        return "F." + target[len("torch.nn.functional.") :]
    if target.startswith("torch.nn."):
        return "nn." + target.rsplit(".", 1)[-1]
    return target


def _function_candidates(sample: Any) -> list[Pattern]:
    """Generalisation candidates for one op_db SampleInput (empty when it cannot be generalised)."""
    import torch

    x = sample.input
    if not _float_tensor(x) or x.dtype != torch.float32 or x.dim() == 0 or x.numel() == 0:
        return []
    if any(d == 0 for d in x.shape):
        return []
    shape = tuple(int(d) for d in x.shape)
    fixed: list[tuple[str | None, Any]] = [(None, a) for a in sample.args]
    fixed += list(sample.kwargs.items())
    options: list[list[Arg]] = []
    for name, value in fixed:
        if isinstance(value, torch.Tensor):
            if not _float_tensor(value) or value.dtype != torch.float32 or value.numel() == 0:
                return []
            per_dim: list[list[str]] = []
            for k, d in enumerate(value.shape):
                d = int(d)
                if d == 1:
                    per_dim.append(["1"])
                else:
                    per_dim.append(
                        [
                            *_tie_options(d, shape, allow_batch=True),
                            f"w:{name or 'arg'}{len(options)}_{k}:{d}",
                        ]
                    )
            options.append([Arg("tensor", tuple(c), name) for c in _combos(per_dim)])
        else:
            src = literal_source(value)
            if src is None:
                return []
            options.append([Arg("lit", src, name)])
    return [Pattern(rank=len(shape), example_shape=shape, args=tuple(combo)) for combo in _combos(options)]


def crawl_functions(include: Callable[[str], bool] | None = None) -> list[OpEntry]:
    """Crawl `torch` functions and tensor methods from PyTorch's operator test database."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db

    entries: dict[str, OpEntry] = {}
    for op in op_db:
        if (
            op.name.startswith(_SKIP_PREFIXES)
            or op.name.endswith("_")
            or any(w in op.name for w in _SKIP_WORDS)
        ):
            continue
        resolved = _resolve_function(op.name)
        if resolved is None:
            continue
        kind, target = resolved
        display = _display_name(kind, target)
        if include is not None and not include(display):
            continue
        try:
            supported = op.supported_dtypes("cuda")
        except Exception:
            supported = set()
        dtypes = tuple(d for d in FLOAT_DTYPES if getattr(torch, d) in supported) or ("float32",)
        if "float32" not in dtypes:
            continue
        entry = entries.get(display) or OpEntry(display, "torch", kind, target, (), dtypes)
        patterns = list(entry.patterns)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                samples = op.sample_inputs("cpu", torch.float32, requires_grad=False)
                for i, sample in enumerate(samples):
                    if i >= _MAX_SAMPLES_PER_OP or len(patterns) >= _MAX_PATTERNS_PER_OP:
                        break
                    pattern = _generalise(entry, _function_candidates(sample))
                    if pattern is None:
                        continue
                    if all((p.rank, p.args) != (pattern.rank, pattern.args) for p in patterns):
                        patterns.append(pattern)
        except Exception:
            pass
        if patterns:
            entries[display] = OpEntry(display, "torch", kind, target, tuple(patterns), dtypes)
    return list(entries.values())


# ----------------------------------------------------------------------------- torch.nn modules


def _ctor_param_names(cls: type) -> list[str]:
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _is_width(entry: OpEntry, base: Pattern, index: int, value: int) -> bool:
    """An int ctor arg is a width when scaling it scales exactly one output dim by the same factor."""
    ref = probe(entry, base, base.example_shape)
    if not ref.ok:
        return False
    trial_ctor = list(base.ctor)
    a = trial_ctor[index]
    trial_ctor[index] = Arg("lit", repr(value * 3), a.name)
    trial = Pattern(base.rank, base.example_shape, base.args, tuple(trial_ctor), base.out_index)
    got = probe(entry, trial, base.example_shape)
    if not got.ok or len(got.out_shape) != len(ref.out_shape):
        return False
    changed = [(o, n) for o, n in zip(ref.out_shape, got.out_shape, strict=True) if o != n]
    return len(changed) == 1 and changed[0][1] == changed[0][0] * 3


def _module_candidates(
    entry: OpEntry, cls: type, ctor_args: Sequence[Any], ctor_kwargs: dict[str, Any], x: Any
) -> list[Pattern]:
    import torch

    if not _float_tensor(x) or x.dtype != torch.float32 or x.dim() < 2 or any(d == 0 for d in x.shape):
        return []
    shape = tuple(int(d) for d in x.shape)
    names = _ctor_param_names(cls)
    raw: list[tuple[str | None, str | None, Any]] = []  # (keyword, param name, value)
    for i, v in enumerate(ctor_args):
        raw.append((None, names[i] if i < len(names) else f"arg{i}", v))
    raw += [(k, k, v) for k, v in ctor_kwargs.items()]
    options: list[list[Arg]] = []
    int_slots: list[int] = []
    for slot, (kw, _pname, v) in enumerate(raw):
        src = literal_source(v)
        if src is None:
            return []
        opts = [Arg("lit", src, kw)]
        if isinstance(v, int) and not isinstance(v, bool) and v > 1:
            opts = [Arg("dim", int(o[1:]), kw) for o in _tie_options(v, shape, allow_batch=False)] + opts
            int_slots.append(slot)
        elif isinstance(v, tuple | list) and v and all(isinstance(e, int) for e in v):
            k = len(v)
            if k <= len(shape) - 1 and tuple(shape[-k:]) == tuple(v):
                opts = [Arg("dims", tuple(range(len(shape) - k, len(shape))), kw), *opts]
        options.append(opts)
    cands = [Pattern(rank=len(shape), example_shape=shape, ctor=tuple(c)) for c in _combos(options)]
    # Turn untied ints that behave like output sizes into free widths (on the first candidate that runs).
    out: list[Pattern] = []
    for cand in cands:
        ctor = list(cand.ctor)
        for slot in int_slots:
            a = ctor[slot]
            if a.kind == "lit" and _is_width(entry, cand, slot, int(eval_literal(a.value))):
                ctor[slot] = Arg("width", (raw[slot][1] or f"arg{slot}", int(eval_literal(a.value))), a.name)
        out.append(Pattern(cand.rank, cand.example_shape, cand.args, tuple(ctor)))
    return out


def crawl_modules(include: Callable[[str], bool] | None = None) -> list[OpEntry]:
    """Crawl `torch.nn` module classes: module_db samples, then classes that build without arguments."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_modules import module_db

    entries: dict[str, OpEntry] = {}
    for info in module_db:
        cls = info.module_cls
        if "Lazy" in cls.__name__ or cls.__name__.endswith("Loss"):
            continue
        target = f"torch.nn.{cls.__name__}"
        display = f"nn.{cls.__name__}"
        if include is not None and not include(display):
            continue
        entry = OpEntry(display, "torch", "module", target, ())
        patterns: list[Pattern] = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inputs = info.module_inputs_func(
                    info, device="cpu", dtype=torch.float32, requires_grad=False, training=True
                )
        except Exception:
            continue
        for i, mi in enumerate(inputs):
            if i >= 3 * _MAX_SAMPLES_PER_OP or len(patterns) >= _MAX_PATTERNS_PER_OP:
                break
            fwd = mi.forward_input
            if fwd is None or len(fwd.args) != 1 or fwd.kwargs:
                continue
            ci = mi.constructor_input
            try:
                pattern = _generalise(entry, _module_candidates(entry, cls, ci.args, ci.kwargs, fwd.args[0]))
            except Exception:
                pattern = None
            if pattern is None:
                continue
            if all((p.rank, p.ctor) != (pattern.rank, pattern.ctor) for p in patterns):
                patterns.append(pattern)
        if patterns:
            entries[display] = OpEntry(display, "torch", "module", target, tuple(patterns), FLOAT_DTYPES)

    # torch.nn classes absent from module_db: those that build with no arguments (activations, Flatten,
    # Dropout, ...) are probed on one standard shape per rank.
    base_shapes = [(4, 6), (4, 6, 10), (4, 6, 10, 12), (4, 6, 8, 10, 12)]
    for name in sorted(dir(torch.nn)):
        cls = getattr(torch.nn, name)
        display = f"nn.{name}"
        if display in entries or not inspect.isclass(cls) or not issubclass(cls, torch.nn.Module):
            continue
        if "Lazy" in name or name.endswith("Loss") or cls.__module__.startswith("torch.nn.modules.container"):
            continue
        if name in ("Module", "Identity") or (include is not None and not include(display)):
            continue
        try:
            cls()
        except Exception:
            continue
        entry = OpEntry(display, "torch", "module", f"torch.nn.{name}", ())
        patterns = []
        for shape in base_shapes:
            pattern = _generalise(entry, [Pattern(rank=len(shape), example_shape=shape)])
            if pattern is not None:
                patterns.append(pattern)
        if patterns:
            entries[display] = OpEntry(
                display, "torch", "module", entry.target, tuple(patterns), FLOAT_DTYPES
            )
    return list(entries.values())


# ----------------------------------------------------------------------------- transformers layers

_TF_SUFFIXES = ("RMSNorm", "LayerNorm", "MLP", "Attention", "RotaryEmbedding")
_TF_PROBE = {"hidden": 64, "heads": 4, "kv_heads": 2, "seq": 8, "batch": 2}


def tf_config_overrides(config_cls: type, hidden: int, heads: int, kv_heads: int) -> dict[str, Any]:
    """Config fields for a small (or scaled) layer, keeping only fields the family's config has.

    Dropout is zeroed so that the layer is deterministic; one hidden layer keeps the config small.
    """
    base = config_cls()
    wanted: dict[str, Any] = {
        "hidden_size": hidden,
        "intermediate_size": hidden * 2,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": hidden // heads,
        "num_hidden_layers": 1,
        "max_position_embeddings": 4096,
    }
    out = {k: v for k, v in wanted.items() if hasattr(base, k)}
    for k in dir(base):
        if "dropout" in k and not k.startswith("_") and isinstance(getattr(base, k, None), float):
            out[k] = 0.0
    return out


def _tf_make_config(config_target: str, overrides: dict[str, Any]) -> Any:
    cfg = resolve_target(config_target)(**overrides)
    with contextlib.suppress(Exception):
        cfg._attn_implementation = "eager"
    return cfg


def _build_transformers_call(
    entry: OpEntry, shape: Sequence[int], *, device: Any, dtype: Any, hidden: int | None
) -> Callable[[Any], Any]:
    import torch

    extra = entry.extra
    overrides = dict(extra["config"])
    if hidden is not None and hidden != overrides.get("hidden_size"):
        overrides = tf_scaled_overrides(entry, hidden)
    cfg = _tf_make_config(extra["config_cls"], overrides)
    cls = resolve_target(entry.target)
    style = extra["ctor"]
    with torch.device(device):
        if style == "config":
            layer = cls(cfg)
        elif style == "config_layer":
            layer = cls(cfg, 0)
        else:
            layer = cls(cfg.hidden_size)
        layer = layer.to(dtype=dtype)
        rotary = None
        if extra["call"] == "attention":
            rotary = resolve_target(extra["rotary"])(cfg).to(dtype=dtype)

    def call(x: Any) -> Any:
        if rotary is None:
            out = layer(x)
        else:
            pos = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
            cos_sin = rotary(x, pos)
            out = layer(x, position_embeddings=cos_sin, attention_mask=None)
        return out[0] if isinstance(out, tuple) else out

    return call


def tf_scaled_overrides(entry: OpEntry, hidden: int) -> dict[str, Any]:
    """Config overrides for `entry` scaled to `hidden` (head_dim kept at 64 where the config has heads)."""
    cfg_cls = resolve_target(entry.extra["config_cls"])
    heads = max(1, hidden // 64)
    return tf_config_overrides(cfg_cls, hidden, heads, max(1, heads // 2))


def _tf_fresh_shapes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Fresh shapes for a transformers layer: batch and sequence change, hidden stays the config's."""
    b, s, h = shape
    return [(b + 1, s * 2 + 1, h), (b * 2 + 1, s + 3, h)]


def _tf_families() -> list[str]:
    import pkgutil

    import transformers.models as models

    return sorted(m.name for m in pkgutil.iter_modules(models.__path__) if m.ispkg)


def crawl_transformers(
    families: Sequence[str] | None = None, max_families: int | None = None
) -> list[OpEntry]:
    """Crawl `transformers` modeling files for single-tensor layers (norms, MLPs, attention)."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return []
    import torch

    names = list(families) if families is not None else _tf_families()
    if max_families is not None:
        names = names[:max_families]
    entries: list[OpEntry] = []
    for fam in names:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = importlib.import_module(f"transformers.models.{fam}.modeling_{fam}")
        except Exception:
            continue
        config_cls = None
        for obj in vars(mod).values():
            if (
                inspect.isclass(obj)
                and obj.__module__ == mod.__name__
                and inspect.isclass(getattr(obj, "config_class", None))
            ):
                config_cls = obj.config_class
                break
        if config_cls is None or not inspect.isclass(config_cls):
            continue
        config_target = f"{config_cls.__module__}.{config_cls.__name__}"
        try:
            overrides = tf_config_overrides(
                config_cls, _TF_PROBE["hidden"], _TF_PROBE["heads"], _TF_PROBE["kv_heads"]
            )
            _tf_make_config(config_target, overrides)
        except Exception:
            continue
        local = {
            n: c
            for n, c in vars(mod).items()
            if inspect.isclass(c) and c.__module__ == mod.__name__ and issubclass(c, torch.nn.Module)
        }
        rotary = next((f"{mod.__name__}.{n}" for n in local if n.endswith("RotaryEmbedding")), None)
        for n, _c in sorted(local.items()):
            suffix = next((s for s in _TF_SUFFIXES if n.endswith(s)), None)
            if suffix is None or suffix == "RotaryEmbedding" or "Vision" in n or "Cross" in n:
                continue
            call = "attention" if suffix == "Attention" else "plain"
            if call == "attention" and rotary is None:
                continue
            shape = (_TF_PROBE["batch"], _TF_PROBE["seq"], _TF_PROBE["hidden"])
            for ctor in ("config", "config_layer", "hidden"):
                extra = {
                    "config_cls": config_target,
                    "config": overrides,
                    "ctor": ctor,
                    "call": call,
                    "rotary": rotary,
                    "family": fam,
                }
                entry = OpEntry(
                    n, "transformers", "transformers", f"{mod.__name__}.{n}", (), ("float32",), extra
                )
                pattern = _generalise(entry, [Pattern(rank=3, example_shape=shape)], _tf_fresh_shapes)
                if pattern is None:
                    continue
                if not pattern.same_shape:
                    break
                entries.append(
                    OpEntry(
                        n,
                        "transformers",
                        "transformers",
                        entry.target,
                        (pattern,),
                        ("float32", "bfloat16"),
                        extra,
                    )
                )
                break
    return entries


# ----------------------------------------------------------------------------- cache and entry point


@dataclass(frozen=True)
class CrawlOptions:
    """What to crawl. `include` keeps only the named ops (display names); None keeps everything."""

    functions: bool = True
    modules: bool = True
    transformers: bool = True
    include: tuple[str, ...] | None = None
    transformers_families: tuple[str, ...] | None = None
    max_transformers_families: int | None = 40

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True, default=str).encode()).hexdigest()[:16]


def _versions() -> dict[str, str]:
    import torch

    v = {"torch": torch.__version__, "format": str(CATALOG_FORMAT)}
    try:
        import transformers

        v["transformers"] = transformers.__version__
    except ImportError:
        v["transformers"] = "none"
    return v


def default_cache_dir() -> Path:
    """`synth/` under the cache root every part of cuda-agent uses: $CUDA_AGENT_CACHE, else
    ~/.cache/cuda-agent (the judge's cache_root, spelt the same way)."""
    root = os.environ.get("CUDA_AGENT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "cuda-agent")
    return Path(root) / "synth"


def crawl(options: CrawlOptions = CrawlOptions()) -> Catalog:
    """Crawl the installed libraries now (tens of seconds); see `load_catalog` for the cached version.

    Probes run on tiny tensors, where intra-op threads only add overhead (3x on two cores), so the crawl
    runs single-threaded.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _crawl(options)
    finally:
        torch.set_num_threads(threads)


def _crawl(options: CrawlOptions) -> Catalog:
    include_set = set(options.include) if options.include is not None else None
    include = (lambda n: n in include_set) if include_set is not None else None
    entries: list[OpEntry] = []
    if options.functions:
        entries += crawl_functions(include)
    if options.modules:
        entries += crawl_modules(include)
    if options.transformers:
        tf = crawl_transformers(options.transformers_families, options.max_transformers_families)
        # Families named explicitly are wanted whole; otherwise `include` applies to layers too.
        entries += [e for e in tf if include is None or options.transformers_families or include(e.name)]
    return Catalog(tuple(entries), _versions())


def _arg_from_json(d: dict[str, Any]) -> Arg:
    v = d["value"]
    if d["kind"] in ("dims", "tensor", "width"):
        v = tuple(v)
    return Arg(d["kind"], v, d.get("name"))


def catalog_to_json(catalog: Catalog) -> dict[str, Any]:
    return {"versions": catalog.versions, "entries": [asdict(e) for e in catalog.entries]}


def catalog_from_json(data: dict[str, Any]) -> Catalog:
    entries = []
    for e in data["entries"]:
        pats = tuple(
            Pattern(
                rank=p["rank"],
                example_shape=tuple(p["example_shape"]),
                args=tuple(_arg_from_json(a) for a in p["args"]),
                ctor=tuple(_arg_from_json(a) for a in p["ctor"]),
                out_index=p["out_index"],
                meta_ok=p["meta_ok"],
                nan_prone=p["nan_prone"],
                same_shape=p["same_shape"],
                random=p["random"],
            )
            for p in e["patterns"]
        )
        entries.append(
            OpEntry(e["name"], e["source"], e["kind"], e["target"], pats, tuple(e["dtypes"]), e["extra"])
        )
    return Catalog(tuple(entries), data.get("versions", {}))


_MEMO: dict[tuple[str, str], Catalog] = {}


def load_catalog(
    options: CrawlOptions = CrawlOptions(), *, cache_dir: Path | str | None = None, refresh: bool = False
) -> Catalog:
    """The catalog for `options`, from memory, else from the on-disk cache, else crawled (and cached)."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    versions = _versions()
    vkey = re.sub(r"[^A-Za-z0-9.]+", "_", "-".join(f"{k}{v}" for k, v in sorted(versions.items())))
    path = cache / f"catalog-{vkey}-{options.key()}.json"
    memo_key = (str(path), options.key())
    if not refresh and memo_key in _MEMO:
        return _MEMO[memo_key]
    catalog = None
    if not refresh and path.is_file():
        with contextlib.suppress(Exception):
            catalog = catalog_from_json(json.loads(path.read_text()))
    if catalog is None:
        catalog = crawl(options)
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(catalog_to_json(catalog)))
        tmp.replace(path)
    _MEMO[memo_key] = catalog
    return catalog
