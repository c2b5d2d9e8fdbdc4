"""The composer: sample chains of 1-5 catalog operators, check them on the meta device, size them.

A composition is a chain `x -> op1 -> ... -> opk`: every op takes the running tensor as its main input, and
the op's other arguments come from its crawled pattern (literals, sizes tied to the running shape, free
widths, parameter tensors). Compatibility is checked by running the chain on meta tensors, which costs
microseconds and needs no GPU.

Sizes aim at the runtime band: the chain's eager time is estimated from its FLOPs and bytes moved (one
kernel per op, as in eager mode) and the batch size is set so that the estimate lands on `target_ms`.
The batch is the only knob the execution filter later rescales, so everything that depends on the batch
must be expressible through `batch_size`: the chain is propagated at two batch sizes, and a candidate
that would tie a constructor size to a batch-dependent dimension is refused.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cuda_agent.synth.catalog import Catalog, OpEntry, Pattern, build_call, width_keys

# Non-batch dimension sizes by input rank: what "typical" inputs of that rank look like.
_DIM_CHOICES: dict[int, list[list[int]]] = {
    2: [[256, 512, 1024, 2048, 4096, 8192]],
    3: [[16, 32, 64, 128, 256], [64, 128, 256, 512, 1024, 2048]],
    4: [[3, 8, 16, 32, 64, 128], [16, 32, 64, 128, 256], [16, 32, 64, 128, 256]],
    5: [[3, 8, 16, 32], [8, 16, 32, 64], [16, 32, 64], [16, 32, 64]],
}
_WIDTH_CHOICES = [16, 32, 64, 128, 256, 512, 1024]
_TF_HIDDEN = [512, 768, 1024, 2048]
_SLOW_META_S = 0.25
_TF_SEQ = [128, 256, 512, 1024]

_GROUPS = (
    ("torch.nn.functional.", "F"),
    ("torch.nn.", "nn"),
    ("torch.special.", "special"),
    ("torch.masked.", "masked"),
    ("torch.Tensor.", "Tensor"),
    ("torch.", "torch"),
)


def op_group(entry: OpEntry) -> str:
    """The namespace group used to weight sampling (so 30 special functions do not crowd out nn)."""
    if entry.source == "transformers":
        return "transformers"
    for prefix, group in _GROUPS:
        if entry.target.startswith(prefix):
            return group
    return "torch"


@dataclass(frozen=True)
class ComposeConfig:
    """How to compose and size tasks.

    The cost model is deliberately crude (roofline per op plus launch overhead): the execution filter
    measures the real time and rescales the batch, so the estimate only has to land near the band.
    """

    band_ms: tuple[float, float] = (1.0, 100.0)
    target_ms: float | None = None
    peak_tflops: float = 40.0
    peak_gbps: float = 2500.0
    launch_us: float = 6.0
    max_bytes: int = 6 << 30
    max_batch: int = 1 << 30
    min_batch: int = 2
    dtype: str = "float32"
    max_attempts: int = 60
    allow_nan_prone: bool = False
    group_weights: dict[str, float] = field(
        default_factory=lambda: {
            "nn": 0.35,
            "F": 0.25,
            "torch": 0.3,
            "special": 0.03,
            "masked": 0.02,
            "Tensor": 0.05,
        }
    )

    @property
    def target(self) -> float:
        lo, hi = self.band_ms
        return self.target_ms if self.target_ms is not None else lo * (hi / lo) ** 0.25

    @classmethod
    def for_cpu(cls, **overrides: Any) -> ComposeConfig:
        """Small sizes for CPU-only runs: shapes stay real but tensors stay in the megabytes."""
        base: dict[str, Any] = dict(
            band_ms=(0.01, 1e6),
            target_ms=2.0,
            peak_tflops=0.05,
            peak_gbps=5.0,
            max_bytes=32 << 20,
            max_batch=64,
        )
        base.update(overrides)
        return cls(**base)


@dataclass(frozen=True)
class Step:
    """One op of a chain: which entry and pattern, its chosen widths, and the shapes it sees."""

    entry: str
    pattern: int
    widths: tuple[tuple[str, int], ...]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    batch_dims: tuple[int, ...]  # dims of in_shape that are exactly the batch size


@dataclass(frozen=True)
class Composition:
    """A sized chain, ready to render."""

    bucket: str
    steps: tuple[Step, ...]
    input_shape: tuple[int, ...]
    batch: int
    est_ms: float
    seed: int
    dtype: str = "float32"
    hidden: int | None = None

    @property
    def ops(self) -> list[str]:
        return [s.entry for s in self.steps]


class ComposeError(RuntimeError):
    """No valid composition found within the attempt budget."""


def bucket_length(bucket: str) -> int:
    """Number of ops of a `torch#k` bucket (transformers buckets hold one layer)."""
    return int(bucket.split("#", 1)[1]) if bucket.startswith("torch#") else 1


class Composer:
    """Samples compositions from a catalog; `compose(bucket, seed)` is deterministic in `seed`."""

    def __init__(self, catalog: Catalog, config: ComposeConfig | None = None) -> None:
        self.catalog = catalog
        self.config = config or ComposeConfig()
        self._by_name = {e.name: e for e in catalog.entries}
        self._usable: dict[int, list[tuple[OpEntry, int]]] = {}
        self._slow: set[str] = set()
        self._grouped: dict[int, list[tuple[list[tuple[OpEntry, int]], float]]] = {}
        for e in catalog.entries:
            # An op random under any crawled pattern (dropout with p=0, rrelu in eval) is skipped: the
            # static filter denies such names wholesale, so composing with them only wastes attempts.
            if e.source != "torch" or self.config.dtype not in e.dtypes or e.random or _recurrent(e):
                continue
            for i, p in enumerate(e.patterns):
                if self._pattern_ok(p):
                    self._usable.setdefault(p.rank, []).append((e, i))
        self._tf = [e for e in catalog.select(source="transformers") if e.patterns and not e.random]
        self._first = [(e, i) for pool in self._usable.values() for e, i in pool]

    def _pattern_ok(self, p: Pattern) -> bool:
        return p.meta_ok and not p.random and (self.config.allow_nan_prone or not p.nan_prone)

    def _weight(self, entry: OpEntry, pool_groups: dict[str, int]) -> float:
        g = op_group(entry)
        return self.config.group_weights.get(g, 0.05) / max(1, pool_groups[g])

    def _pick(self, rng: random.Random, pool: list[tuple[OpEntry, int]]) -> list[tuple[OpEntry, int]]:
        """The pool in a weighted random order (Efraimidis-Spirakis keys), one pattern per entry."""
        grouped = self._grouped.get(id(pool))
        if grouped is None:
            by_entry: dict[str, list[tuple[OpEntry, int]]] = {}
            for e, i in pool:
                by_entry.setdefault(e.name, []).append((e, i))
            groups: dict[str, int] = {}
            for items in by_entry.values():
                g = op_group(items[0][0])
                groups[g] = groups.get(g, 0) + 1
            grouped = [(items, self._weight(items[0][0], groups)) for items in by_entry.values()]
            self._grouped[id(pool)] = grouped
        keyed = []
        for items, w in grouped:
            if w > 0 and items[0][0].name not in self._slow:
                e, i = items[rng.randrange(len(items))]
                keyed.append((rng.random() ** (1.0 / w), e, i))
        keyed.sort(key=lambda t: -t[0])
        return [(e, i) for _, e, i in keyed]

    # ------------------------------------------------------------------ propagation

    def _run_meta(
        self,
        entry: OpEntry,
        pattern: Pattern,
        shape: Sequence[int],
        widths: dict[str, int],
        hidden: int | None,
        flops: bool = False,
    ) -> tuple[tuple[int, ...], float]:
        """Output shape (and FLOPs if asked) of one op on the meta device; raises when the op refuses it."""
        import torch
        from torch.utils.flop_counter import FlopCounterMode

        if entry.name in self._slow:
            raise ValueError(f"{entry.name} is too slow to check on the meta device")
        dtype = getattr(torch, self.config.dtype)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = build_call(entry, pattern, shape, widths=widths, device="meta", dtype=dtype, hidden=hidden)
        x = torch.empty(tuple(shape), device="meta", dtype=dtype)
        counter = FlopCounterMode(display=False) if flops else None
        with warnings.catch_warnings(), counter if counter is not None else contextlib.nullcontext():
            warnings.simplefilter("ignore")
            y = f(x)
        if time.perf_counter() - start > _SLOW_META_S:
            self._slow.add(entry.name)
        if not isinstance(y, torch.Tensor) or y.dtype != dtype or y.dim() == 0 or y.numel() == 0:
            raise ValueError("op output is not a non-empty tensor of the task dtype")
        return tuple(int(d) for d in y.shape), float(
            counter.get_total_flops()
        ) if counter is not None else 0.0

    def _op_cost_ms(
        self, in_shape: Sequence[int], out_shape: Sequence[int], flops: float, extra_bytes: int
    ) -> float:
        c = self.config
        size = 2 if c.dtype in ("float16", "bfloat16") else 4
        nbytes = (math.prod(in_shape) + math.prod(out_shape)) * size + extra_bytes
        return max(nbytes / (c.peak_gbps * 1e9), flops / (c.peak_tflops * 1e12)) * 1e3 + c.launch_us * 1e-3

    @staticmethod
    def _param_bytes(pattern: Pattern, shape: Sequence[int], widths: dict[str, int]) -> int:
        from cuda_agent.synth.catalog import resolve_tensor_shape

        n = 0
        for a in pattern.args:
            if a.kind == "tensor":
                n += math.prod(resolve_tensor_shape(a.value, shape, widths))
        return n * 4

    @staticmethod
    def _refers_to_batch(pattern: Pattern, bdep: Sequence[bool], is_batch: Sequence[bool]) -> bool:
        """True when a size of this op would depend on the batch in a way `batch_size` cannot express."""
        for a in pattern.ctor:
            if (a.kind == "dim" and bdep[a.value]) or (a.kind == "dims" and any(bdep[j] for j in a.value)):
                return True
        for a in pattern.args:
            if a.kind == "tensor":
                for s in a.value:
                    if s.startswith("d") and bdep[int(s[1:])] and not is_batch[int(s[1:])]:
                        return True
        return False

    def _choose_widths(self, rng: random.Random, pattern: Pattern) -> dict[str, int]:
        return {k: rng.choice(_WIDTH_CHOICES) for k in width_keys(pattern)}

    def _input_shape(self, rng: random.Random, pattern: Pattern, batch: int) -> tuple[int, ...]:
        choices = _DIM_CHOICES.get(pattern.rank)
        shape = [batch]
        for j, d in enumerate(pattern.example_shape[1:]):
            if d == 1:
                shape.append(1)
            elif choices is None:
                shape.append(rng.choice([8, 16, 32]))
            else:
                shape.append(rng.choice(choices[min(j, len(choices) - 1)]))
        return tuple(shape)

    def _propagate(
        self,
        chain: Sequence[tuple[OpEntry, Pattern, dict[str, int]]],
        shape: tuple[int, ...],
        hidden: int | None,
        flops: bool = True,
    ) -> tuple[list[tuple[tuple[int, ...], tuple[int, ...]]], float, int]:
        """(in, out) shapes per op, estimated ms and peak bytes for the chain on an input of `shape`."""
        shapes = []
        total_ms = 0.0
        peak = 0
        cur = shape
        size = 2 if self.config.dtype in ("float16", "bfloat16") else 4
        for entry, pattern, widths in chain:
            out, n_flops = self._run_meta(entry, pattern, cur, widths, hidden, flops)
            pbytes = self._param_bytes(pattern, cur, widths)
            total_ms += self._op_cost_ms(cur, out, n_flops, pbytes)
            peak = max(peak, (math.prod(cur) + math.prod(out)) * size + pbytes)
            shapes.append((cur, out))
            cur = out
        return shapes, total_ms, peak

    # ------------------------------------------------------------------ composition

    def compose(self, bucket: str, seed: int) -> Composition:
        """A valid, sized composition for `bucket` (`torch#k` or `transformers`); deterministic in seed."""
        rng = random.Random(seed)
        for _ in range(self.config.max_attempts):
            try:
                comp = (
                    self._compose_transformers(rng, seed)
                    if bucket == "transformers"
                    else self._compose_chain(rng, bucket, seed)
                )
            except (
                ValueError,
                RuntimeError,
                TypeError,
                IndexError,
                KeyError,
                NotImplementedError,
                AssertionError,
            ):
                comp = None
            if comp is not None:
                return comp
        raise ComposeError(f"no valid composition for {bucket} after {self.config.max_attempts} attempts")

    def _compose_chain(self, rng: random.Random, bucket: str, seed: int) -> Composition | None:
        k = bucket_length(bucket)
        b1, b2 = 5, 7  # two small probe batches: dims that move with them are batch-dependent
        first_entry, first_idx = self._pick(rng, self._first)[0]
        first = first_entry.patterns[first_idx]
        shape1 = self._input_shape(rng, first, b1)
        shape2 = (b2, *shape1[1:])
        chain: list[tuple[OpEntry, Pattern, dict[str, int]]] = []
        cur1, cur2 = shape1, shape2
        for pos in range(k):
            bdep = [a != b for a, b in zip(cur1, cur2, strict=True)]
            is_batch = [a == b1 and b == b2 for a, b in zip(cur1, cur2, strict=True)]
            pool = (
                [(first_entry, first_idx)] if pos == 0 else self._pick(rng, self._usable.get(len(cur1), []))
            )
            picked = None
            for entry, idx in pool[:24]:
                pattern = entry.patterns[idx]
                if pattern.rank != len(cur1) or self._refers_to_batch(pattern, bdep, is_batch):
                    continue
                widths = self._choose_widths(rng, pattern)
                try:
                    out1, _ = self._run_meta(entry, pattern, cur1, widths, None)
                    out2, _ = self._run_meta(entry, pattern, cur2, widths, None)
                except Exception:
                    continue
                if len(out1) != len(out2) or any(d > 1 << 20 for d in out1):
                    continue
                picked = (entry, pattern, widths, out1, out2)
                break
            if picked is None:
                return None
            entry, pattern, widths, cur1, cur2 = picked
            chain.append((entry, pattern, widths))
        return self._size(bucket, seed, chain, shape1, None)

    def _size(
        self,
        bucket: str,
        seed: int,
        chain: Sequence[tuple[OpEntry, Pattern, dict[str, int]]],
        probe_shape: tuple[int, ...],
        hidden: int | None,
    ) -> Composition | None:
        """Pick the batch that puts the estimate on target (within the memory cap) and fix the shapes."""
        c = self.config
        b0 = probe_shape[0]
        _, est0, peak0 = self._propagate(chain, probe_shape, hidden)
        fixed_ms = len(chain) * c.launch_us * 1e-3
        per_row_ms = max((est0 - fixed_ms) / b0, 1e-9)
        per_row_bytes = max(peak0 / b0, 1.0)
        batch = int(max(c.target - fixed_ms, 0.0) / per_row_ms)
        batch = min(batch, int(c.max_bytes / per_row_bytes), c.max_batch)
        if batch < c.min_batch:
            if per_row_ms * c.min_batch > c.band_ms[1] or per_row_bytes * c.min_batch > c.max_bytes:
                return None
            batch = c.min_batch
        batch = _round_nice(batch)
        final_shape = (batch, *probe_shape[1:])
        shapes2, _, _ = self._propagate(chain, (batch + 1, *probe_shape[1:]), hidden, flops=False)
        shapes, _, peak = self._propagate(chain, final_shape, hidden, flops=False)
        est = fixed_ms + per_row_ms * batch
        if peak > c.max_bytes:
            return None
        steps = []
        for (entry, pattern, widths), (si, so), (si2, _) in zip(chain, shapes, shapes2, strict=True):
            bdims = tuple(
                j for j, (a, b) in enumerate(zip(si, si2, strict=True)) if a == batch and b == batch + 1
            )
            steps.append(
                Step(entry.name, entry.patterns.index(pattern), tuple(sorted(widths.items())), si, so, bdims)
            )
        return Composition(bucket, tuple(steps), final_shape, batch, est, seed, c.dtype, hidden)

    def _compose_transformers(self, rng: random.Random, seed: int) -> Composition | None:
        if not self._tf:
            raise ComposeError("the catalog has no transformers layers")
        entry = self._tf[rng.randrange(len(self._tf))]
        hidden = rng.choice(_TF_HIDDEN)
        seq = rng.choice(_TF_SEQ)
        chain = [(entry, entry.patterns[0], {})]
        return self._size("transformers", seed, chain, (4, seq, hidden), hidden)


def _recurrent(entry: OpEntry) -> bool:
    """Recurrent modules loop over time steps in Python on the meta device and do not size by batch."""
    if entry.kind != "module":
        return False
    try:
        import torch

        from cuda_agent.synth.catalog import resolve_target

        return issubclass(resolve_target(entry.target), torch.nn.RNNBase | torch.nn.RNNCellBase)
    except Exception:
        return True


def _round_nice(n: int) -> int:
    """Round to two significant binary digits (16, 24, 32, 48, ...): sizes people would write."""
    if n <= 4:
        return max(1, n)
    p = 1 << (n.bit_length() - 2)
    return (n // p) * p
