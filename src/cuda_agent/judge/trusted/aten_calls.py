"""Which PyTorch operators a submission's C++ calls, read from what the linker binds (trusted side).

Every ATen function and Tensor method a binding can call from C++ -- `at::mm`, `torch::softmax`, `x.sum()`,
`at::_softmax` -- is an inline wrapper around `at::_ops::<op>::call` (or `::redispatch`), exported by
libtorch. So a submission object that calls an operator imports that symbol, however the source spelled
the call and whatever dispatch keys it excluded around it (an `ExcludeDispatchKeyGuard` hides the call
from the in-process op gate, not from the linker). Allowed are the op gate's own exceptions: allocation,
views, metadata and fills (`opgate.ALLOWED_OPS`), and the view-like composites (`COMPOSITE_VIEWS`:
`reshape`, `flatten`, `narrow`, `contiguous`...). Those have no kernel of their own: each is a
CompositeImplicitAutograd function that runs as the ops it is made of, views where the tensor allows one
(`reshape` of a contiguous tensor is a `view`) and otherwise a `clone` into fresh memory, which the op gate
names and whose ATen copy kernel the coverage gate counts as foreign. So the honest case costs nothing and
the copy is seen where it happens (tests/judge/test_library_and_binding_rules.py checks both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# at::_ops::<struct>::call / ::redispatch, mangled: _ZN2at4_ops<len><struct>4call... or ...10redispatch...
_OPS_SYMBOL = re.compile(r"^_ZN2at4_ops(\d+)")
_ENTRY_POINTS = ("4callE", "10redispatchE")
# Kept in step with candidate/opgate.py's ALLOWED_OPS (a test checks it).
ALLOWED = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_", "zeros", "zeros_like",
     "new_zeros", "zero_", "fill_", "view", "_unsafe_view", "_reshape_alias", "as_strided", "permute", "transpose",
     "t", "unsqueeze", "squeeze", "expand", "slice", "select", "split", "split_with_sizes", "unbind", "detach",
     "alias", "diagonal", "unfold", "view_as_real", "view_as_complex", "lift_fresh", "movedim", "record_stream",
     "is_same_size", "sym_size", "is_set_to", "is_pinned", "is_distributed"}
)  # fmt: skip
# View-like ops without a kernel of their own (CompositeImplicitAutograd: they dispatch as the views, or the
# clone, they are made of; a test checks every overload), for bindings that reshape their arguments.
COMPOSITE_VIEWS = frozenset(
    {"contiguous", "reshape", "reshape_as", "view_as", "flatten", "unflatten", "ravel", "narrow", "expand_as",
     "broadcast_to", "chunk", "unsafe_chunk", "tensor_split", "movedim", "moveaxis", "swapaxes", "swapdims",
     "atleast_1d", "atleast_2d", "atleast_3d"}
)  # fmt: skip
# Overloads of the allowed ops are structs named op_overload (empty.memory_format -> empty_memory_format,
# fill_.Scalar -> fill__Scalar); an op whose name merely starts like an allowed one and names a copy, a scatter
# or a gradient (select_scatter, view_copy, squeeze_copy_dim, unfold_backward) is a different, computing op.
_COMPUTING_WORDS = frozenset({"copy", "scatter", "backward"})
# Running operators by name through the dispatcher (c10::Dispatcher::findSchema..., OperatorHandle) bypasses
# the at::_ops entry points; a binding has no business there either.
_DISPATCHER_SYMBOL = re.compile(r"^_ZN(?:K)?3c10(?:10Dispatcher|14OperatorHandle|13TypedOperatorHandle)")


def operator_structs(symbols: Iterable[str]) -> set[str]:
    """The `at::_ops` structs (operator + overload, e.g. `mm`, `_softmax`, `empty_memory_format`) whose
    entry points the symbols name."""
    found = set()
    for symbol in symbols:
        match = _OPS_SYMBOL.match(symbol)
        if not match:
            continue
        length, start = int(match.group(1)), match.end()
        struct, rest = symbol[start : start + length], symbol[start + length :]
        if len(struct) == length and rest.startswith(_ENTRY_POINTS):
            found.add(struct)
    return found


def is_allowed(struct: str) -> bool:
    """An allowed op, or an overload of one (`empty_memory_format`, `transpose_int`, `select_int`)."""
    allowed = ALLOWED | COMPOSITE_VIEWS
    if struct in allowed:
        return True
    for op in allowed:
        overload = struct[len(op) + 1 :] if struct.startswith(op + "_") else ""
        if overload[:1].isalpha() and not _COMPUTING_WORDS & set(overload.split("_")):
            return True
    return False


def forbidden_operators(symbols: Iterable[str]) -> list[str]:
    """PyTorch compute operators the symbols call (sorted), e.g. ['_softmax', 'mm'], and 'the dispatcher'
    when they reach operators by name through c10::Dispatcher."""
    symbols = list(symbols)
    found = sorted(s for s in operator_structs(symbols) if not is_allowed(s))
    if any(_DISPATCHER_SYMBOL.match(s) for s in symbols):
        found.append("the dispatcher")
    return found
