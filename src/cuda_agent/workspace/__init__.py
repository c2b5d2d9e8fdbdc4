"""The agent's workspace: a folder in the original CUDA-Agent layout, made from a task."""

from cuda_agent.workspace.files import INFRASTRUCTURE_FILES, PROTECTED_PATHS, TEMPLATE_DIR, template_path
from cuda_agent.workspace.materialize import materialize

__all__ = ["INFRASTRUCTURE_FILES", "PROTECTED_PATHS", "TEMPLATE_DIR", "materialize", "template_path"]
