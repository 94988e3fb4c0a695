#!/usr/bin/env python
"""Why image folders default to batch 16 on a CPU: speed and activation memory per batch size.

For deit-tiny at 224x224 (random weights, frozen like an evaluated model) it times one attack step
-- forward, then the gradient with respect to the input -- at several batch sizes, interleaved, and
prints images/s and the ratio to the largest batch.  It also sums the bytes of every tensor autograd
saves for that backward pass (``torch.autograd.graph.saved_tensors_hooks``): the activation memory
a gradient attack holds per image, independent of allocator noise.

    .venv/bin/python benchmarks/batch_size.py [--sizes 8,16,32,64] [--threads 2] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import timm
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_samples  # noqa: E402


def saved_bytes_per_image(net: torch.nn.Module, batch: int) -> float:
    """Bytes autograd keeps for the input-gradient pass, divided by the batch (shared storages counted once)."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return t

    x = torch.rand(batch, 3, 224, 224, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        net(x).logsumexp(1).sum()
    return sum(seen.values()) / batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="8,16,32,64")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    net = timm.create_model("deit_tiny_patch16_224").eval().requires_grad_(False)
    images = 2 * max(sizes)  # every contender processes the same number of images

    def step(batch: int):
        def run() -> None:
            for start in range(0, images, batch):
                x = torch.rand(batch, 3, 224, 224, requires_grad=True)
                torch.autograd.grad(net(x).logsumexp(1).sum(), x)
        return run

    samples = interleaved_samples({b: step(b) for b in sizes}, repeats=args.repeats)
    speed = {b: images / statistics.median(ts) for b, ts in samples.items()}
    largest = max(sizes)
    print(f"deit-tiny forward + input gradient, 224x224, {args.threads} threads, {images} images per timing, "
          f"median of {args.repeats}")
    print("  batch    img/s   vs batch %d   saved activations per image" % largest)
    for b in sizes:
        print(f"  {b:5d} {speed[b]:8.1f} {speed[b] / speed[largest]:11.2f}x {saved_bytes_per_image(net, b) / 2 ** 20:18.1f} MB")


if __name__ == "__main__":
    main()
