"""`python -m cuda_agent ...`: the same command as `cuda-agent`, for environments without the script on PATH."""

import sys

from cuda_agent.cli import main

if __name__ == "__main__":
    sys.exit(main())
