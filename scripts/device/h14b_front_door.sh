#!/usr/bin/env bash
# Issue 14 items 2/4-8 (H14b) on a GPU machine, in one go (~3 min): run from the repo root.
#  1. a real full verdict of the bundled example, for docs/verdict.md ($OUT/verdict_elementwise_chain.json);
#  2. `solve --resume` judging an episode that was first recorded with no GPU visible (judge 'unavailable'),
#     against the scripted model server on 127.0.0.1 (needs the `openai` package);
#  3. the front-door tests (they must pass with a GPU visible too).
set -uo pipefail
export PYTHONPATH=src
OUT=${OUT:-/tmp/h14b_out}
mkdir -p "$OUT"
for mod in openai pytest pyarrow; do
    python3 -c "import $mod" 2>/dev/null || echo "MISSING python package: $mod (carry its wheel)" | tee -a "$OUT/summary.txt"
done
python3 -m cuda_agent --version | tee -a "$OUT/summary.txt"

timeout 300 python3 -m cuda_agent judge examples/elementwise_chain --json \
    > "$OUT/verdict_elementwise_chain.json" 2> "$OUT/judge.log"
echo "judge rc=$? (expect 0; status ok, reward >= 1)" | tee -a "$OUT/summary.txt"

timeout 300 python3 - > "$OUT/resume.log" 2>&1 <<'PY'
import json, os, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests/agent")
from scripted_llm import Reply, ScriptedLLM, call
task = Path("examples/elementwise_chain/model.py").resolve()
runs = Path(tempfile.mkdtemp()) / "runs"
script = [lambda r: Reply(tool_calls=[call("Bash", None, command="ls kernels")]), lambda r: Reply(content="Done.")]
with ScriptedLLM(script) as server:
    base = [sys.executable, "-m", "cuda_agent", "solve", str(task), "--model", "m", "--base-url", server.url,
            "--runs-dir", str(runs), "--quiet", "--isolation", "none"]
    first = subprocess.run(base, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True)
    rec = json.loads((runs / "model" / "trajectory.jsonl").read_text())
    print("first run rc", first.returncode, "judge", rec["judge"]["status"])
    second = subprocess.run([*base, "--resume"], capture_output=True, text=True)
    rec = json.loads((runs / "model" / "trajectory.jsonl").read_text())
    print(second.stderr[-2000:])
    print("resume rc", second.returncode, "judge", rec["judge"]["status"], "reward", rec["reward"])
    ok = rec["judge"]["status"] not in ("unavailable", "judge_error") and "never judged" in second.stderr
    print("RESUME JUDGED THE UNJUDGED EPISODE:", ok)
PY
echo "resume check rc=$? ($(grep 'RESUME JUDGED' "$OUT/resume.log"))" | tee -a "$OUT/summary.txt"

timeout 400 python3 -m pytest -q -p no:cacheprovider tests/agent/test_solve_front_door.py \
    tests/agent/test_sandbox_describes_itself.py tests/cli > "$OUT/pytest.log" 2>&1
echo "front-door tests rc=$? ($(tail -1 "$OUT/pytest.log"))" | tee -a "$OUT/summary.txt"
cat "$OUT/summary.txt"
