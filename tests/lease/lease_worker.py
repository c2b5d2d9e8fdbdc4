"""A process that takes a GPU lease, says so on stdout, holds it, and logs when (the lease tests' subject).

    python lease_worker.py MODE GPU HOLD LOG [TIMEOUT_S]

MODE is exclusive or shared; HOLD is seconds, or `until:PATH` (hold until PATH exists); the lock folder comes from $CUDA_AGENT_GPU_LEASE_DIR. One JSON line is
appended to LOG: {"pid", "mode", "asked", "start", "end", "waited_s"} (wall-clock seconds), or
{"pid", "mode", "timeout": message} with exit code 3 when the lease was not free in time.
"""

from __future__ import annotations

import json
import os
import sys
import time

from cuda_agent import gpu_lease


def main() -> int:
    mode, gpu, hold, log = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    timeout_s = float(sys.argv[5]) if len(sys.argv) > 5 else 30.0
    asked = time.time()
    print("asking", flush=True)
    try:
        lease = gpu_lease.acquire([gpu], mode, timeout_s=timeout_s)
    except gpu_lease.LeaseTimeout as exc:
        line = {"pid": os.getpid(), "mode": mode, "timeout": str(exc)}
        code = 3
    else:
        with lease:
            start = time.time()
            print("held", flush=True)
            if hold.startswith("until:"):  # hold until the test creates the file (at most a minute)
                deadline = time.monotonic() + 60
                while not os.path.exists(hold[len("until:") :]) and time.monotonic() < deadline:
                    time.sleep(0.01)
            else:
                time.sleep(float(hold))
            end = time.time()
        line = {"pid": os.getpid(), "mode": mode, "asked": asked, "start": start, "end": end,
                "waited_s": lease.waited_s}  # fmt: skip
        code = 0
    with open(log, "a") as handle:
        handle.write(json.dumps(line) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
