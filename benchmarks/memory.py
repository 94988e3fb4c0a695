#!/usr/bin/env python
"""Benchmark 4: peak memory is bounded by the batch, not the data set.

Writes 2,000 generated 224x224 JPEGs into an ImageFolder (10 classes), then runs
``robeval run -m deit-tiny --attacks fgsm`` over all of them in a child process (random deit-tiny
weights from a local checkpoint; nothing downloads) and prints the child's peak resident memory
(target: at most 2 GB), together with the peak of the same command on 200 images: streaming means
the two are about equal.  It also prints the peak of a process that only imports robeval, torch and
timm -- the fixed runtime every run pays before it touches an image (with the CUDA build of torch,
its libraries alone are ~0.25 GB of resident pages) -- so the rest is what the batch costs.

Without ``--batch-size`` the command uses robeval's default for image folders on this device (16 on
a CPU, where larger batches are no faster).

    .venv/bin/python benchmarks/memory.py [--images 2000] [--batch-size B] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import make_folder, random_checkpoint  # noqa: E402


def peak_of(cmd: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of a child process, measured with wait4's rusage."""
    tick = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = __import__("os").wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{proc.stderr.read()}")
    return time.perf_counter() - tick, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--batch-size", type=int, default=None, help="default: robeval's (activations of the backward pass scale with it)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="robeval-mem-"))
    data = work / "val"
    if not data.exists():
        make_folder(data, args.images)
    ckpt = random_checkpoint(work / "deit_tiny_random.pth", "deit_tiny_patch16_224")
    base = [sys.executable, "-m", "robeval", "run", "-m", "deit-tiny", "--checkpoint", str(ckpt), "--data", str(data),
            "--attacks", "fgsm", "--eps", "1/255", "--quiet", "--store", str(work / "s.sqlite")]
    if args.batch_size is not None:
        base += ["--batch-size", str(args.batch_size)]
    _, torch_peak = peak_of([sys.executable, "-c", "import torch"])
    _, runtime_peak = peak_of([sys.executable, "-c", "import robeval.cli, robeval.evaluation.engine, torch, timm"])
    small_t, small_peak = peak_of(base + ["--n-examples", str(args.images // 10), "--out", str(work / "small")])
    full_t, full_peak = peak_of(base + ["--n-examples", str(args.images), "--out", str(work / "full")])
    batch = args.batch_size or "default (16 on CPU)"
    print(f"deit-tiny + FGSM over an ImageFolder of 224x224 JPEGs, batch {batch}")
    print(f"  fixed runtime (import robeval, torch, timm): peak RSS {runtime_peak:7.0f} MB, of which import torch {torch_peak:.0f} MB")
    print(f"  {args.images // 10:5d} images: {small_t:7.1f} s   peak RSS {small_peak:7.0f} MB")
    print(f"  {args.images:5d} images: {full_t:7.1f} s   peak RSS {full_peak:7.0f} MB   (target <= 2048 MB)")
    print(f"  peak ratio ({args.images} / {args.images // 10} images): {full_peak / small_peak:.2f}x")


if __name__ == "__main__":
    main()
