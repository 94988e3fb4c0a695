"""FLOPs count attention: every attention kind against a hand count of its matrix products, and
DeiT's totals against the published 9.2 GFLOPs (deit-small)."""

from __future__ import annotations

import pytest
import timm
import torch

from robeval.evaluation.profiling import count_flops, flops_per_image
from robeval.models.attention.kinds import ATTENTION_KINDS, fit_sequence_length, layer_class

N, C, H = 17, 48, 3  # tokens, width, heads: small, and N != C so that no term can stand in for another


def linear(n_in: int, n_out: int, tokens: int = N) -> int:
    return 2 * tokens * n_in * n_out


ATTENTION = 2 * N * N * C  # Q K^T (or A V) over all heads: 2 * heads * N * N * d, with heads * d = C

# Per kind: the FLOPs of one layer on [1, N, C], written from its definition (2 per multiply-add).
HAND = {
    "elliptical": linear(C, 3 * C) + 2 * ATTENTION + linear(C, C),  # q scaled per channel: element-wise
    "optimised": linear(C, 2 * C) + 2 * ATTENTION + linear(C, C),  # no W^V: values are X
    "efficient": linear(C, C) + 2 * ATTENTION + linear(C, C),  # no W^V, no W^K
    "super": linear(C, C) + 2 * ATTENTION + linear(C, C) + 2 * N * N * C,  # plus W_A (N x N) @ X
    "rkde": linear(C, 3 * C) + 2 * ATTENTION + linear(C, C) + 2 * ATTENTION  # Gram of [k^, v] (2d features)
    + 1 * 2 * H * N * N,  # one reweighting iteration: Gram @ w per head
    "mom": linear(C, 3 * C) + 2 * ATTENTION + linear(C, C),  # the groups split the keys: same total
    "kde": linear(C, 3 * C) + 2 * ATTENTION + linear(C, C),
    "spkde": linear(C, 3 * C) + 2 * ATTENTION + linear(C, C) + 2 * ATTENTION + ATTENTION  # Grams of [k^, v], k^
    + 2 * 30 * 2 * N * N,  # two QPs, 30 solver steps of Gram @ y (Gram averaged over heads)
    "fourier": linear(C, 3 * C) + ATTENTION + linear(C, C),  # the sinc kernel is element-wise; A V only
    "rvt": linear(C, 3 * C) + 2 * ATTENTION + linear(C, C),
}


@pytest.mark.parametrize("name", list(ATTENTION_KINDS))
def test_every_attention_kind_counts_its_attention(name):
    assert name in HAND, f"attention kind {name} needs a hand count here"
    kind = ATTENTION_KINDS[name]
    layer = layer_class(kind)(C, num_heads=H, qkv_bias=True).eval()
    holder = torch.nn.Module()
    holder.layer = layer
    fit_sequence_length(holder, N)
    if name == "elliptical":  # the second layer of a model scales its query: give it a previous layer's values
        from robeval.models.attention.elliptical import ValueCarry

        layer.layer_index, layer.depth, layer.carry = 1, 2, ValueCarry()
        layer.carry.v = torch.rand(1, H, N, C // H)
    x = torch.rand(1, N, C)
    assert count_flops(lambda: layer(x)) == HAND[name]


def test_fused_standard_and_windowed_attention_are_counted():
    from timm.layers import Attention
    from timm.models.swin_transformer import WindowAttention

    standard = Attention(C, num_heads=H, qkv_bias=True).eval()
    assert count_flops(lambda: standard(torch.rand(1, N, C))) == linear(C, 3 * C) + 2 * ATTENTION + linear(C, C)
    windows, size = 4, 3  # four 3x3 windows of 9 tokens, each attending within itself
    swin = WindowAttention(C, num_heads=H, window_size=size, qkv_bias=True).eval()
    tokens = windows * size * size
    per_window = 2 * 2 * (size * size) ** 2 * C
    expected = linear(C, 3 * C, tokens) + windows * per_window + linear(C, C, tokens)
    assert count_flops(lambda: swin(torch.rand(windows, size * size, C))) == expected
    mask = torch.zeros(windows, size * size, size * size)  # the shifted blocks' mask changes nothing counted
    assert count_flops(lambda: swin(torch.rand(windows, size * size, C), mask=mask)) == expected


def test_deit_totals_include_attention():
    tiny = flops_per_image(timm.create_model("deit_tiny_patch16_224").eval(), (3, 224, 224), torch.device("cpu"))
    small = flops_per_image(timm.create_model("deit_small_patch16_224").eval(), (3, 224, 224), torch.device("cpu"))
    assert tiny == pytest.approx(2.507e9, rel=1e-3)  # 2.150e9 without attention's Q K^T and A V
    assert small == pytest.approx(9.2e9, rel=2e-3)  # the published DeiT-S figure
