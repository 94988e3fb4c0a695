#!/usr/bin/env bash
# The GPU benchmarks in one call (at most ~9.5 minutes on an H200; 5.5 on 2026-12-04), for the device machine when one is
# lent: per attack and precision img/s and the fraction of the matmul peak for deit-small (random
# weights, generated 224 px images), the Table E estimate from those measured rates, the cascade
# against AutoAttack's own run_standard_evaluation on the same images, then deit-small's PGD
# throughput per precision and its efficiency table.  Paste the output into benchmarks/RESULTS.md
# with the date and the device.
#
#   bash benchmarks/gpu.sh            (uses .venv/bin/python if present, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv || true
echo "== roofline: deit-small, per attack and precision, and the Table E estimate"
timeout 240 "$PY" benchmarks/roofline.py --device cuda --model deit-small --n 256 --estimate || echo "roofline: exit $?"
echo "== cascade vs AutoAttack standard (digits demo, 100 images)"
timeout 120 "$PY" benchmarks/cascade_vs_autoattack.py --device cuda --repeats 1 || echo "cascade: exit $?"
echo "== deit-small / deit-small-elliptical PGD-20 per precision"
timeout 200 "$PY" benchmarks/gpu_throughput.py --device cuda "$@" || echo "throughput: exit $?"
