#!/usr/bin/env bash
# Benchmark 5: deit-small clean and PGD throughput on a CUDA GPU, with and without --amp, on 512
# generated images.  Run wherever a GPU is available; paste the output into benchmarks/RESULTS.md
# with the date and the device.
#
#   bash benchmarks/gpu.sh            (uses .venv/bin/python if present, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
WORK=${WORK:-$(mktemp -d)}
"$PY" - "$WORK" <<'PYEOF'
import sys, time, json
from pathlib import Path
import numpy as np, torch, timm
from PIL import Image
work = Path(sys.argv[1]); data = work / "val"
rng = np.random.default_rng(0)
for i in range(512):
    d = data / f"n{i % 8:08d}"; d.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)).save(d / f"{i}.JPEG")
torch.manual_seed(0)
torch.save(timm.create_model("deit_small_patch16_224").state_dict(), work / "deit_small.pth")
print(json.dumps({"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA",
                  "torch": torch.__version__}))
PYEOF
"$PY" -m robeval profile -m deit-small -m deit-small-elliptical --device cuda --batch-size 128
for AMP in off bf16; do
  for ATTACK in pgd; do
    START=$(date +%s.%N)
    "$PY" -m robeval run -m deit-small --checkpoint "$WORK/deit_small.pth" --data "$WORK/val" --attacks "$ATTACK" \
        --eps 1/255 --batch-size 128 --device cuda --amp "$AMP" --quiet --store "$WORK/s.sqlite" --out "$WORK/out-$AMP" >/dev/null
    END=$(date +%s.%N)
    "$PY" - "$WORK/out-$AMP/run.json" "$AMP" "$START" "$END" <<'PYEOF'
import json, sys
run = json.load(open(sys.argv[1])); amp = sys.argv[2]; wall = float(sys.argv[4]) - float(sys.argv[3])
t = run["timings_seconds"]; n = run["data"]["n"]
for key, seconds in t.items():
    print(f"amp={amp:4s} {key:28s} {n / seconds:9.1f} img/s (attack incl. its final pass)")
print(f"amp={amp:4s} whole command {wall:.1f} s for {n} images")
PYEOF
  done
done
