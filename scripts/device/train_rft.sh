#!/usr/bin/env bash
# The RFT loop, end to end on one GPU (about 8.5 minutes on an H200, one device call): 44 scripted episodes
# whose tools run for real, each distinct final submission judged once for real -> `cuda-agent train
# rft-data` -> `train sft` on a tiny offline model -> `transformers serve` -> `cuda-agent solve` -> the
# judge's reward; the untrained model as baseline; `train value` on the rewarded and failed mix, held
# out by episode, the critic started from the fine-tuned actor; the critic reloaded with
# AutoModelForTokenClassification.
# Run from the repo root. Results in $OUT: summary.json (every figure and `done_when`), summary.txt (the
# table printed at the end), sft_loss.png, value_loss.png, the served trajectories, one log per stage,
# and the critic's data for a CPU post-mortem: value.parquet, value_trajectories.tar.gz (< 8 MB in all).
#
# Needs on the device, beyond torch/transformers/accelerate/pyarrow: trl, datasets (+ dill, multiprocess)
# and transformers' serving extras (fastapi, uvicorn, starlette, pydantic, openai, rich and their deps).
# Carry them as wheels in .whl/ (the list is printed below when one is missing).
set -uo pipefail
OUT=${OUT:-/tmp/train_rft_out}
mkdir -p "$OUT"
. "$(dirname "$0")/wheels.sh"  # .whl/ -> /tmp/site on PYTHONPATH
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
missing=$(python3 - <<'PY'
import importlib.util
need = ["trl", "datasets", "dill", "multiprocess", "fastapi", "uvicorn", "starlette", "pydantic", "openai", "rich",
        "pyarrow", "matplotlib", "accelerate"]
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
PY
)
if [ -n "$missing" ]; then
    echo "missing Python packages: $missing (carry their wheels in .whl/)" | tee "$OUT/missing.txt"
    exit 3
fi
python3 -c "import torch, transformers, trl; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, torch.cuda.get_device_name(0))"
python3 scripts/device/train_rft.py --out "$OUT" "$@" 2>&1 | tee "$OUT/train_rft.log"
exit "${PIPESTATUS[0]}"
