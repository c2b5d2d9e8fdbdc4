"""Render a composition as a KernelBench-format task.

The output reads like a KernelBench level-1/2 problem: `class Model(nn.Module)` whose `__init__` takes the
sizes it needs, a `forward` that applies the ops in order, module-level size constants, `get_inputs()` and
`get_init_inputs()`. Sizes tied to the input (in_channels, normalized_shape) and free widths (out_channels)
become named constants passed through `get_init_inputs()`; everything else is a literal. The batch size
appears only in `get_inputs()`, which is what lets the execution filter rescale it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cuda_agent.synth.catalog import Arg, Catalog, OpEntry, Pattern, resolve_tensor_shape, tf_scaled_overrides
from cuda_agent.synth.compose import Composition

_DIM_NAMES: dict[int, tuple[str, ...]] = {
    1: ("batch_size",),
    2: ("batch_size", "features"),
    3: ("batch_size", "channels", "length"),
    4: ("batch_size", "channels", "height", "width"),
    5: ("batch_size", "channels", "depth", "height", "width"),
}


@dataclass(frozen=True)
class RenderedTask:
    """Task source plus the Ops-6K columns that describe it."""

    name: str
    code: str
    ops: tuple[str, ...]
    data_source: str


class _Names:
    """Allocates unique Python identifiers."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self.taken = set(taken or ())

    def new(self, base: str) -> str:
        base = re.sub(r"\W+", "_", base).strip("_").lower() or "v"
        if base[0].isdigit():
            base = "v_" + base
        name, i = base, 2
        while name in self.taken:
            name, i = f"{base}_{i}", i + 1
        self.taken.add(name)
        return name


def _short(entry: OpEntry) -> str:
    return entry.target.rsplit(".", 1)[-1]


def _callee(entry: OpEntry) -> str:
    if entry.target.startswith("torch.nn.functional."):
        return "F." + entry.target[len("torch.nn.functional.") :]
    if entry.target.startswith("torch.nn.") and entry.kind == "module":
        return "nn." + _short(entry)
    return entry.target


def _ctor_names(entry: OpEntry) -> list[str]:
    from cuda_agent.synth.catalog import _ctor_param_names, resolve_target

    try:
        return _ctor_param_names(resolve_target(entry.target))
    except Exception:
        return []


def render(composition: Composition, catalog: Catalog, *, name: str | None = None) -> RenderedTask:
    """KernelBench source for `composition` (entries looked up in `catalog`)."""
    entries = [catalog.get(s.entry) for s in composition.steps]
    if composition.bucket == "transformers":
        code = _render_transformers(composition, entries[0])
        data_source = "transformers"
    else:
        code = _render_chain(composition, entries)
        data_source = composition.bucket
    ops = tuple(composition.ops)
    task_name = name or "synth_" + "_".join(re.sub(r"\W+", "", o.rsplit(".", 1)[-1]) for o in ops)
    return RenderedTask(task_name, code, ops, data_source)


def _render_chain(comp: Composition, entries: list[OpEntry]) -> str:
    rank = len(comp.input_shape)
    dim_names = list(_DIM_NAMES.get(rank, ("batch_size", *[f"dim{i}" for i in range(1, rank)])))
    names = _Names({"x", "self", "torch", "nn", "F", "Model", "get_inputs", "get_init_inputs", *dim_names})
    constants: list[tuple[str, Any]] = list(zip(dim_names, comp.input_shape, strict=True))
    init_params: list[tuple[str, Any]] = []  # (name, value) passed through get_init_inputs
    init_lines: list[str] = []
    fwd_lines: list[str] = []
    extra_inputs: list[tuple[str, str]] = []  # (forward arg name, get_inputs expression)

    def size_constant(base: str, value: Any, tie: bool) -> str:
        """A named init parameter for `value`; a size tied to the input reuses the input-dim constant."""
        if tie and not isinstance(value, tuple):
            for n, v in constants[1 : len(dim_names)]:
                if v == value:
                    if all(p != n for p, _ in init_params):
                        init_params.append((n, v))
                    return n
        n = names.new(base)
        constants.append((n, value))
        init_params.append((n, value))
        return n

    for _i, (step, entry) in enumerate(zip(comp.steps, entries, strict=True)):
        pattern: Pattern = entry.patterns[step.pattern]
        widths = dict(step.widths)
        shape = step.in_shape
        out = f"[{pattern.out_index}]" if pattern.out_index is not None else ""
        short = _short(entry)
        if entry.kind == "module":
            var = names.new(short)
            pnames = _ctor_names(entry)
            ctor = []
            for j, a in enumerate(pattern.ctor):
                pname = a.name or (pnames[j] if j < len(pnames) else f"arg{j}")
                text = _ctor_arg(a, pname, shape, widths, size_constant)
                ctor.append(f"{a.name}={text}" if a.name else text)
            init_lines.append(f"self.{var} = {_callee(entry)}({', '.join(ctor)})")
            fwd_lines.append(f"x = self.{var}(x){out}")
            continue
        call_args = []
        for j, a in enumerate(pattern.args):
            if a.kind == "tensor":
                tshape = resolve_tensor_shape(a.value, shape, widths)
                batch_tied = [
                    k for k, s in enumerate(a.value) if s.startswith("d") and int(s[1:]) in step.batch_dims
                ]
                if batch_tied:
                    arg = names.new(f"{short}_{a.name or 'other'}")
                    dims = ["batch_size" if k in batch_tied else str(d) for k, d in enumerate(tshape)]
                    extra_inputs.append((arg, f"torch.randn({', '.join(dims)})"))
                    text = arg
                else:
                    var = names.new(f"{short}_{a.name or f'param{j}'}")
                    init_lines.append(f"self.{var} = nn.Parameter(torch.randn({_tuple_src(tshape)}))")
                    text = f"self.{var}"
            else:
                text = _plain_arg(a, shape, widths)
            call_args.append(f"{a.name}={text}" if a.name else text)
        if entry.kind == "method":
            fwd_lines.append(f"x = x.{short}({', '.join(call_args)}){out}")
        else:
            fwd_lines.append(f"x = {_callee(entry)}({', '.join(['x', *call_args])}){out}")

    doc = ", then ".join(comp.ops)
    init_sig = ", ".join(["self", *[n for n, _ in init_params]])
    fwd_sig = ", ".join(["self", "x", *[a for a, _ in extra_inputs]])
    lines = [
        "import torch",
        "import torch.nn as nn",
        "import torch.nn.functional as F",
        "",
        "",
        "class Model(nn.Module):",
        f'    """{doc}."""',
        "",
        f"    def __init__({init_sig}):",
        "        super().__init__()",
        *[f"        {line}" for line in init_lines],
        "",
        f"    def forward({fwd_sig}):",
        *[f"        {line}" for line in fwd_lines],
        "        return x",
        "",
        "",
        *[f"{n} = {_value_src(v)}" for n, v in constants],
        "",
        "",
        "def get_inputs():",
        f"    return [torch.randn({', '.join(dim_names)}){''.join(', ' + e for _, e in extra_inputs)}]",
        "",
        "",
        "def get_init_inputs():",
        f"    return [{', '.join(n for n, _ in init_params)}]",
        "",
    ]
    return "\n".join(lines)


def _tuple_src(t: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(v) for v in t) + ("," if len(t) == 1 else "") + ")"


def _value_src(v: Any) -> str:
    return _tuple_src(v) if isinstance(v, tuple) else repr(v)


def _plain_arg(a: Arg, shape: tuple[int, ...], widths: dict[str, int]) -> str:
    if a.kind == "lit":
        return a.value
    if a.kind == "dim":
        return str(shape[a.value])
    if a.kind == "dims":
        return _tuple_src(tuple(shape[j] for j in a.value))
    if a.kind == "width":
        return str(widths.get(a.value[0], a.value[1]))
    raise ValueError(a.kind)


def _ctor_arg(a: Arg, pname: str, shape: tuple[int, ...], widths: dict[str, int], size_constant: Any) -> str:
    if a.kind == "dim":
        return size_constant(pname, int(shape[a.value]), True)
    if a.kind == "dims":
        return size_constant(pname, tuple(int(shape[j]) for j in a.value), True)
    if a.kind == "width":
        return size_constant(pname, int(widths.get(a.value[0], a.value[1])), False)
    return _plain_arg(a, shape, widths)


def _render_transformers(comp: Composition, entry: OpEntry) -> str:
    extra = entry.extra
    hidden = comp.hidden or comp.input_shape[-1]
    overrides = tf_scaled_overrides(entry, hidden)
    overrides.pop("hidden_size", None)
    cfg_mod, cfg_cls = extra["config_cls"].rsplit(".", 1)
    layer_mod, layer_cls = entry.target.rsplit(".", 1)
    imports = [f"from {cfg_mod} import {cfg_cls}"]
    layer_imports = [layer_cls]
    if extra["call"] == "attention":
        rot_mod, rot_cls = extra["rotary"].rsplit(".", 1)
        if rot_mod == layer_mod:
            layer_imports.append(rot_cls)
        else:
            imports.append(f"from {rot_mod} import {rot_cls}")
    imports.append(f"from {layer_mod} import {', '.join(layer_imports)}")
    ctor = {"config": "config", "config_layer": "config, 0", "hidden": "hidden_size"}[extra["ctor"]]
    cfg_args = ", ".join(["hidden_size=hidden_size", *[f"{k}={v!r}" for k, v in overrides.items()]])
    init = [
        f"config = {cfg_cls}({cfg_args})",
        'config._attn_implementation = "eager"',
        f"self.layer = {layer_cls}({ctor})",
    ]
    if extra["call"] == "attention":
        init.append(f"self.rotary = {extra['rotary'].rsplit('.', 1)[1]}(config)")
        fwd = [
            "position_ids = torch.arange(x.shape[1], device=x.device).unsqueeze(0)",
            "position_embeddings = self.rotary(x, position_ids)",
            "out = self.layer(x, position_embeddings=position_embeddings, attention_mask=None)",
        ]
    else:
        fwd = ["out = self.layer(x)"]
    fwd.append("return out[0] if isinstance(out, tuple) else out")
    batch, seq, _ = comp.input_shape
    lines = [
        "import torch",
        "import torch.nn as nn",
        *imports,
        "",
        "",
        "class Model(nn.Module):",
        f'    """{entry.name} (transformers, {extra.get("family", "")}) with a scaled-down config."""',
        "",
        "    def __init__(self, hidden_size):",
        "        super().__init__()",
        *[f"        {line}" for line in init],
        "",
        "    def forward(self, x):",
        *[f"        {line}" for line in fwd],
        "",
        "",
        f"batch_size = {batch}",
        f"seq_len = {seq}",
        f"hidden_size = {hidden}",
        "",
        "",
        "def get_inputs():",
        "    return [torch.randn(batch_size, seq_len, hidden_size)]",
        "",
        "",
        "def get_init_inputs():",
        "    return [hidden_size]",
        "",
    ]
    return "\n".join(lines)
