#!/usr/bin/env python
"""Benchmark 1: the cost of elliptical attention.

deit-tiny-elliptical against deit-tiny, forward+backward at 224x224, batch 8, CPU (target: at most
1.10x), and against a naive elliptical attention that forms diag(M) and multiplies Q diag(M) K^T
explicitly, without fused attention (robeval should be faster).

    .venv/bin/python benchmarks/elliptical_overhead.py [--batch 8] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import timm
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved  # noqa: E402

from robeval.models import build_network  # noqa: E402
from robeval.models.attention.elliptical import EllipticalAttention, elliptical_scale, make_elliptical  # noqa: E402


class NaiveEllipticalAttention(EllipticalAttention):
    """The formula written out: scores = Q diag(m) K^T / sqrt(D) with an explicit D x D matrix."""

    def forward(self, x, attn_mask=None, is_causal=False):
        B, N, _ = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        carry = self.carry
        if self.layer_index > 0 and carry.v is not None:
            with torch.no_grad():
                M = torch.diag_embed(elliptical_scale(v, carry.v))
            scores = (q @ M @ k.transpose(-2, -1)) * self.scale
        else:
            scores = (q @ k.transpose(-2, -1)) * self.scale
        carry.v = None if self.layer_index >= self.depth - 1 else v
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, N, self.attn_dim)
        return self.proj(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    nets = {"deit-tiny": build_network("deit-tiny").eval(), "deit-tiny-elliptical": build_network("deit-tiny-elliptical").eval()}
    naive = make_elliptical(timm.create_model("deit_tiny_patch16_224", attn_layer=NaiveEllipticalAttention)).eval()
    naive.load_state_dict(nets["deit-tiny"].state_dict())
    nets["naive diag(M) elliptical"] = naive
    x = torch.rand(args.batch, 3, 224, 224)

    def fwd_bwd(net):
        def step():
            xg = x.clone().requires_grad_(True)
            net(xg).logsumexp(1).sum().backward()
            net.zero_grad(set_to_none=True)
        return step

    times = interleaved({name: fwd_bwd(net) for name, net in nets.items()}, repeats=args.repeats)
    print(f"forward+backward, batch {args.batch}, 224x224, CPU, {args.threads} threads, median of {args.repeats}")
    for name, t in times.items():
        print(f"  {name:28s} {t * 1000:8.1f} ms   {args.batch / t:6.1f} img/s")
    print(f"  elliptical / deit-tiny:            {times['deit-tiny-elliptical'] / times['deit-tiny']:.3f}x  (target <= 1.10x)")
    print(f"  naive diag(M) / robeval elliptical: {times['naive diag(M) elliptical'] / times['deit-tiny-elliptical']:.3f}x  (> 1 = robeval faster)")


if __name__ == "__main__":
    main()
