#!/usr/bin/env bash
# Benchmark 5: deit-small / deit-small-elliptical clean and PGD throughput on a CUDA GPU, with and
# without --amp, on 512 generated images; then the efficiency table on the GPU.  Run wherever a GPU is
# available; paste the output into benchmarks/RESULTS.md with the date and the device.
#
#   bash benchmarks/gpu.sh            (uses .venv/bin/python if present, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
exec "$PY" benchmarks/gpu_throughput.py --device cuda "$@"
