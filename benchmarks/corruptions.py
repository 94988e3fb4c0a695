#!/usr/bin/env python
"""A corruption run against the same number of clean forward passes (issue 15: at most 1.3x).

Contenders, run interleaved in one process (benchmarks/_timing.py):

* ``corruptions``: ``robeval run`` (library call) of ``--model`` (default deit-tiny; random weights, 224 px) on N generated
  images with ``--shift corruptions`` at one severity: the clean pass plus 15 corruptions, i.e.
  16 N forward passes, the corruptions made in the DataLoader workers;
* ``clean``: the same model on a folder holding the same N images 16 times (16 N clean forward
  passes, each image decoded as often as in the corruption run).

Both use the same worker count (``--workers``, default 1).  Prints the median per-repeat ratio.

    .venv/bin/python benchmarks/corruptions.py [--model deit-tiny] [--images 16] [--repeats 3] [--workers 1]
                                               [--severity 3] [--threads N]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from _data import make_folder
from _timing import interleaved_samples, paired_ratio

import robeval
from robeval.shifts.catalog import COMMON


def repeated_folder(source: Path, target: Path, times: int) -> None:
    """``source``'s images copied ``times`` times into ``target`` (same classes)."""
    for image in source.rglob("*.JPEG"):
        folder = target / image.parent.name
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(times):
            shutil.copy(image, folder / f"{k:02d}_{image.name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="deit-tiny")
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--severity", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="fix the model's threads (default: robeval's governor)")
    args = parser.parse_args()
    passes = len(COMMON) + 1
    with tempfile.TemporaryDirectory() as tmp:
        base, many = Path(tmp) / "base", Path(tmp) / "many"
        make_folder(base, args.images, classes=8)
        repeated_folder(base, many, passes)
        common = dict(models=args.model, weights="random", workers=args.workers, batch_size=16, threads=args.threads)
        contenders = {
            "corruptions": lambda: robeval.evaluate_full(data=str(base), shift="corruptions", severities=str(args.severity),
                                                         **common),
            "clean": lambda: robeval.evaluate_full(data=str(many), attacks="none", **common),
        }
        samples = interleaved_samples(contenders, repeats=args.repeats, warmup=1)
    ratio, low, high = paired_ratio(samples, "corruptions", "clean")
    print(f"{args.model} (random weights, 224 px), {args.images} images, workers {args.workers}: "
          f"{passes} x {args.images} forward passes each")
    for name, times in samples.items():
        print(f"  {name:12s} median {sorted(times)[len(times) // 2]:.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    print(f"corruption run / clean forward passes: {ratio:.2f}x (per-repeat range {low:.2f}-{high:.2f}; target <= 1.3x)")


if __name__ == "__main__":
    main()
