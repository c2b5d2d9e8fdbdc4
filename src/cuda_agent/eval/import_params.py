"""Renamed parameters: a ModelNew whose state_dict keys differ from the reference Model's (issue 29 item 3).

The judge builds the reference, copies its `state_dict` into ModelNew with `strict=True`, and so needs the
same keys. Published kernels often rename (`self.ln.weight` becomes `self.weight`); KernelBench itself
only seeds both models alike, so they pass there. Where the mapping is unambiguous -- the keys the two
share map to themselves, and the rest pair up in order with equal shapes -- the importer writes it into
model_new.py as a `load_state_dict` override that renames the reference's keys before loading. Otherwise
nothing is added and the reason lists the keys that do not match.
"""

from __future__ import annotations

import ast

Entries = list[tuple[str, tuple[int, ...]]]


def rename_map(reference: Entries, candidate: Entries) -> tuple[dict[str, str] | None, str]:
    """({reference key: ModelNew key}, "") when the keys can be paired (empty when they already match), or
    (None, the reason naming the keys that do not match)."""
    ref_keys, new_keys = dict(reference), dict(candidate)
    missing = [(k, s) for k, s in reference if k not in new_keys]
    extra = [(k, s) for k, s in candidate if k not in ref_keys]
    shared_shapes = [k for k in ref_keys if k in new_keys and ref_keys[k] != new_keys[k]]
    if shared_shapes:
        return None, "ModelNew's state_dict has other shapes than Model's for " + ", ".join(
            f"{k} {_shape(new_keys[k])} (Model: {_shape(ref_keys[k])})" for k in shared_shapes[:6])  # fmt: skip
    if not missing and not extra:
        return {}, ""
    if len(missing) == len(extra) and all(a[1] == b[1] for a, b in zip(missing, extra, strict=True)):
        return {a[0]: b[0] for a, b in zip(missing, extra, strict=True)}, ""
    return None, ("ModelNew's state_dict keys do not match Model's and cannot be paired by shape in order: "
                  f"Model only has {_listed(missing)}; ModelNew only has {_listed(extra)}")  # fmt: skip


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _listed(entries: Entries) -> str:
    if not entries:
        return "nothing"
    shown = ", ".join(f"{k} {_shape(s)}" for k, s in entries[:8])
    return shown + (f" and {len(entries) - 8} more" if len(entries) > 8 else "")


def with_renaming(source: str, tree: ast.Module, mapping: dict[str, str]) -> str:
    """`source` with a `load_state_dict` method appended to ModelNew's class body that renames the
    reference's keys by `mapping` in the dict it is given (the judge's static checks allow no attribute
    writes on other objects, so no copy carrying `_metadata`; the targets are keys the reference lacks, so
    no rename overwrites another) and loads it as Module.load_state_dict does."""
    model_new = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    if any(isinstance(n, ast.FunctionDef) and n.name == "load_state_dict" for n in model_new.body):
        raise ValueError("ModelNew defines load_state_dict itself")
    indent = " " * model_new.body[0].col_offset
    pairs = "".join(f"{indent * 3}{k!r}: {v!r},\n" for k, v in mapping.items())
    method = (
        f"\n{indent}def load_state_dict(self, state_dict, *args, **kwargs):\n"
        f'{indent * 2}"""Added by `cuda-agent import kernelbench`: ModelNew names these parameters differently\n'
        f"{indent * 2}from the reference Model (same shapes, same order), so the reference's keys are renamed\n"
        f'{indent * 2}before loading."""\n'
        f"{indent * 2}renamed_keys = {{\n{pairs}{indent * 2}}}\n"
        f"{indent * 2}for old, new in renamed_keys.items():\n"
        f"{indent * 3}if old in state_dict and new not in state_dict:\n"
        f"{indent * 4}state_dict[new] = state_dict.pop(old)\n"
        f"{indent * 2}return super().load_state_dict(state_dict, *args, **kwargs)\n"
    )
    lines = source.splitlines(keepends=True)
    end = model_new.end_lineno or len(lines)
    if lines and not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    return "".join(lines[:end]) + method + "".join(lines[end:])
