"""Time ModelNew against eager PyTorch and torch.compile, as the final judgment will. Fixed infrastructure.

Run from the workspace root: python3 -m utils.profiling
"""

from utils import outside_environment

try:
    from cuda_agent.workspace.commands import profiling_main
except ModuleNotFoundError as error:
    raise outside_environment("profiling", error) from None

if __name__ == "__main__":
    raise SystemExit(profiling_main())
