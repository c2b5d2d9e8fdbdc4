"""Workspace commands (fixed infrastructure, do not edit): thin entry points into the cuda-agent judge."""
