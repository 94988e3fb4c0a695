#!/usr/bin/env python
"""Benchmark (scale-out): 2 torchrun workers with 1 thread each against 1 worker with 1 thread on the
digits demo suite (all seven attacks), side by side; prints the throughput ratio (target >= 1.7x).

    .venv/bin/python benchmarks/distributed_scaling.py [--n 128] [--batch-size 16]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], env: dict[str, str]) -> float:
    tick = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="robeval-scale-"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    base = [sys.executable, "-m", "robeval", "run", "-m", "digits-deit", "-n", str(args.n), "--batch-size",
            str(args.batch_size), "--quiet"]
    one = timed(base + ["--store", str(work / "one.sqlite"), "--out", str(work / "one")], env)
    two = timed(base + ["--nproc", "2", "--store", str(work / "two.sqlite"), "--out", str(work / "two")], env)
    print(f"digits-deit, seven attacks, {args.n} images in batches of {args.batch_size}, 1 thread per worker")
    print(f"  1 worker : {one:7.1f} s  {args.n / one:6.2f} img/s")
    print(f"  2 workers: {two:7.1f} s  {args.n / two:6.2f} img/s")
    print(f"  throughput ratio (2 workers / 1 worker): {one / two:.2f}x  (target >= 1.7x)")


if __name__ == "__main__":
    main()
