"""Check ModelNew against model.py on fresh random inputs (atol = rtol = 1e-2). Fixed infrastructure.

Run from the workspace root: python3 -m utils.verification
"""

from cuda_agent.workspace.commands import verification_main

if __name__ == "__main__":
    raise SystemExit(verification_main())
