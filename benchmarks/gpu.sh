#!/usr/bin/env bash
# The GPU figures of issue 53 in one call of at most 4 minutes, so that a lent machine's 15 minutes leave
# room for a second try: per attack (PGD-20, APGD-CE, APGD-T, FAB-T, Square, SPSA) and precision its
# img/s, the share of the measured matmul peak, the graphs torch.compile made (compile time counts in
# every time), the fp32 re-check's share of its time; the clean forward's img/s; the Table E estimate from
# those rates; the cascade against AutoAttack's own run_standard_evaluation on the same images.  Each part
# has its own time limit and prints as it goes, so a part cut off still leaves the others' figures.
#
# Without a CUDA device it is a dry run: the same scripts on the CPU at a toy size (deit-tiny, 2 images,
# fp32), the GPU parts (precisions, cascade on CUDA) skipped, to show that the call works before a GPU
# minute is spent.  Paste what it printed into benchmarks/RESULTS.md and docs/speed.md with the date and
# the device.
#
#   bash benchmarks/gpu.sh            (uses .venv/bin/python if present, else python3)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
START=$SECONDS
if nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv 2>/dev/null; then
    echo "== roofline: deit-small, six attacks x fp32/tf32/bf16, compile on (auto), and the Table E estimate"
    timeout 150 "$PY" benchmarks/roofline.py --device cuda --model deit-small --n 128 --estimate || echo "roofline: exit $?"
    echo "== cascade vs AutoAttack standard (digits demo, 100 images, CUDA)"
    timeout 75 "$PY" benchmarks/cascade_vs_autoattack.py --device cuda --repeats 1 || echo "cascade: exit $?"
else
    echo "no CUDA device: a dry run on the CPU at a toy size (the GPU parts skipped)"
    timeout 150 "$PY" benchmarks/roofline.py --device cpu --model deit-tiny --n 2 --precisions fp32 \
        --attacks pgd,apgd-ce,apgd-t,fab-t,square,spsa --matmul 512 --estimate || echo "roofline: exit $?"
    echo "== cascade vs AutoAttack standard: skipped (its CPU figures: benchmarks/cascade_vs_autoattack.py)"
fi
echo "gpu.sh: $((SECONDS - START)) s in all"
