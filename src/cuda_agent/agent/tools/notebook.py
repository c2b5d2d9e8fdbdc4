"""NotebookEdit: replace, insert or delete one cell of a Jupyter notebook in the workspace.

Editing notebooks as raw JSON with Edit is error-prone (escaped newlines, source as a list of lines),
so cells are addressed by id, or by position as `cell-N`/`N` for notebooks without ids. New cells get a
deterministic id derived from their content, so replaying an episode writes the same notebook.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from cuda_agent.agent.tools.base import Tool, ToolError, ToolResult, obj
from cuda_agent.agent.tools.context import ToolContext
from cuda_agent.agent.tools.files import read_text, write_text

_INDEX_ID = re.compile(r"^(?:cell-)?(\d+)$")


def _source_lines(source: str) -> list[str]:
    return source.splitlines(keepends=True)


def _new_cell(cell_type: str, source: str, with_id: bool, taken: set[str], position: int) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {}, "source": _source_lines(source)}
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    if with_id:
        seed = f"{position}\x00{cell_type}\x00{source}".encode()
        digest = hashlib.sha256(seed).hexdigest()
        cell_id = digest[:8]
        n = 8
        while cell_id in taken:
            n += 1
            cell_id = digest[:n]
        cell["id"] = cell_id
    return cell


class NotebookEdit(Tool):
    name = "NotebookEdit"
    description = (
        "Edit one cell of a Jupyter notebook (.ipynb) in the workspace. edit_mode `replace` (default) "
        "replaces the source of the cell `cell_id` (and its type if `cell_type` is given); `insert` adds a "
        "new cell of `cell_type` after `cell_id` (at the start when cell_id is omitted); `delete` removes "
        "the cell. Cells are named by their id (Read shows them) or by position as cell-N."
    )
    parameters = obj(
        {
            "notebook_path": {"type": "string", "description": "Path of the .ipynb file."},
            "cell_id": {"type": "string", "description": "Id of the cell (or cell-N for the N-th, from 0)."},
            "new_source": {"type": "string", "description": "The new source of the cell."},
            "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "Type of the cell."},
            "edit_mode": {
                "type": "string",
                "enum": ["replace", "insert", "delete"],
                "description": "What to do (default replace).",
            },
        },
        ["notebook_path", "new_source"],
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        path = ws.resolve(args["notebook_path"], write=True)
        shown = ws.display(path)
        if path.suffix != ".ipynb":
            raise ToolError(f"{shown} is not a notebook (.ipynb); use Edit or Write for other files.")
        try:
            notebook = json.loads(read_text(path, shown, ws))
            cells = notebook["cells"]
            if not isinstance(cells, list):
                raise TypeError
        except (ValueError, KeyError, TypeError) as e:
            raise ToolError(f"{shown} is not a valid notebook (JSON with a `cells` list).") from e
        mode = args.get("edit_mode", "replace")
        cell_id = args.get("cell_id")
        cell_type = args.get("cell_type")
        source = args["new_source"]

        if mode == "insert":
            if cell_type is None:
                raise ToolError("cell_type (code or markdown) is required to insert a cell.")
            position = 0 if cell_id is None else self._find(cells, cell_id, shown) + 1
            with_id = any("id" in c for c in cells) or self._format(notebook) >= (4, 5)
            taken = {str(c.get("id")) for c in cells}
            cell = _new_cell(cell_type, source, with_id, taken, position)
            cells.insert(position, cell)
            message = f"Inserted a {cell_type} cell at position {position} of {shown}"
            message += f" (id {cell['id']})." if "id" in cell else "."
        else:
            if cell_id is None:
                raise ToolError(f"cell_id is required to {mode} a cell.")
            index = self._find(cells, cell_id, shown)
            if mode == "delete":
                del cells[index]
                message = f"Deleted cell {cell_id} of {shown}; {len(cells)} cell(s) remain."
            else:
                cell = cells[index]
                cell["source"] = _source_lines(source)
                if cell_type is not None and cell_type != cell.get("cell_type"):
                    cell["cell_type"] = cell_type
                    if cell_type == "code":
                        cell["execution_count"] = None
                        cell["outputs"] = []
                    else:
                        cell.pop("execution_count", None)
                        cell.pop("outputs", None)
                elif cell.get("cell_type") == "code":
                    cell["execution_count"] = None
                    cell["outputs"] = []  # stale outputs of the old source would mislead
                message = f"Replaced the source of cell {cell_id} of {shown}."
        write_text(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", shown)
        return ToolResult(message, meta={"cells": len(cells), "edit_mode": mode})

    @staticmethod
    def _find(cells: list[dict[str, Any]], cell_id: str, shown: str) -> int:
        for index, cell in enumerate(cells):
            if isinstance(cell, dict) and cell.get("id") == cell_id:
                return index
        match = _INDEX_ID.match(cell_id.strip())
        if match and int(match.group(1)) < len(cells):
            return int(match.group(1))
        ids = [str(c.get("id", f"cell-{i}")) for i, c in enumerate(cells)]
        listed = ", ".join(ids[:20]) + (" ..." if len(ids) > 20 else "")
        raise ToolError(f"No cell {cell_id!r} in {shown}; its cells are: {listed or 'none'}.")

    @staticmethod
    def _format(notebook: dict[str, Any]) -> tuple[int, int]:
        return (int(notebook.get("nbformat", 4)), int(notebook.get("nbformat_minor", 0)))
