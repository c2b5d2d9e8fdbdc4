"""The workspace boundary: every way out is refused, with a message that says what to do instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuda_agent.agent.tools import ToolError, ToolRefused, Workspace
from cuda_agent.workspace import PROTECTED_PATHS


@pytest.fixture
def ws(workspace: Path) -> Workspace:
    return Workspace.at(workspace, "/workspace")


def test_relative_and_both_absolute_forms_resolve_to_the_real_file(ws: Workspace) -> None:
    real = ws.root / "model_new.py"
    assert ws.resolve("model_new.py") == real
    assert ws.resolve("/workspace/model_new.py") == real
    assert ws.resolve(str(real)) == real
    assert ws.resolve("kernels/../model_new.py") == real
    assert ws.display(real) == "/workspace/model_new.py"
    assert ws.display(ws.root) == "/workspace"


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.txt", "kernels/../../x", "/workspace/../etc", "~/x"])
def test_paths_outside_the_workspace_are_refused(ws: Workspace, path: str) -> None:
    with pytest.raises(ToolRefused, match="outside the workspace /workspace"):
        ws.resolve(path)


def test_a_symlink_to_a_file_outside_is_refused(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    os.symlink(secret, ws.root / "kernels" / "link.txt")
    with pytest.raises(ToolRefused, match=r"symlink .* outside the workspace"):
        ws.resolve("kernels/link.txt")


def test_a_symlinked_folder_pointing_outside_is_refused_for_new_files_too(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ws.root / "escape")
    with pytest.raises(ToolRefused, match="symlink"):
        ws.resolve("escape/new.cu", write=True)


def test_a_symlink_inside_the_workspace_is_followed(ws: Workspace) -> None:
    os.symlink(ws.root / "model_new.py", ws.root / "kernels" / "alias.py")
    assert ws.resolve("kernels/alias.py", write=True) == ws.root / "model_new.py"


@pytest.mark.parametrize("entry", PROTECTED_PATHS)
def test_every_protected_path_is_refused_for_writing_but_readable(ws: Workspace, entry: str) -> None:
    target = entry.strip("/")
    if (ws.root / target).is_dir():
        target += "/compile.sh"
    assert ws.resolve(target) == ws.root / target
    with pytest.raises(ToolRefused, match="is protected") as info:
        ws.resolve(target, write=True)
    assert "model_new.py and kernels/" in str(info.value)


def test_new_files_inside_a_protected_folder_are_refused(ws: Workspace) -> None:
    with pytest.raises(ToolRefused, match=r"utils/new\.py is protected: it is inside utils/"):
        ws.resolve("utils/new.py", write=True)


def test_a_symlink_onto_a_protected_file_is_refused_for_writing(ws: Workspace) -> None:
    os.symlink(ws.root / "model.py", ws.root / "kernels" / "sneaky.py")
    with pytest.raises(ToolRefused, match=r"model\.py is protected"):
        ws.resolve("kernels/sneaky.py", write=True)


def test_protected_names_elsewhere_are_not_protected(ws: Workspace) -> None:
    assert ws.resolve("kernels/model.py", write=True) == ws.root / "kernels" / "model.py"
    assert ws.resolve("utils_extra.py", write=True) == ws.root / "utils_extra.py"


@pytest.mark.parametrize("path", ["", "   ", "a\x00b"])
def test_empty_or_nul_paths_are_errors(ws: Workspace, path: str) -> None:
    with pytest.raises(ToolError):
        ws.resolve(path)


def test_without_a_display_root_the_real_path_is_shown(workspace: Path) -> None:
    ws = Workspace.at(workspace)
    assert ws.display_root == str(workspace.resolve())
    assert ws.display(ws.root / "kernels") == f"{workspace.resolve()}/kernels"
