"""Check ModelNew against model.py on fresh random inputs (atol = rtol = 1e-2). Fixed infrastructure.

Run from the workspace root: python3 -m utils.verification
"""

from utils import outside_environment

try:
    from cuda_agent.workspace.commands import verification_main
except ModuleNotFoundError as error:
    raise outside_environment("verification", error) from None

if __name__ == "__main__":
    raise SystemExit(verification_main())
