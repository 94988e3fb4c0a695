"""Elliptical attention against an explicit diag(M) computation, and weight compatibility with DeiT."""

from __future__ import annotations

import pytest
import torch
from timm.models.vision_transformer import VisionTransformer

import robeval
from robeval.models import build_network
from robeval.models.attention.elliptical import (
    EllipticalAttention,
    elliptical_scale,
    make_elliptical,
    set_elliptical_options,
)

ARCH = dict(img_size=32, patch_size=8, in_chans=3, num_classes=7, embed_dim=48, depth=4, num_heads=3)


def small_pair(seed: int = 0):
    torch.manual_seed(seed)
    plain = VisionTransformer(**ARCH).eval()
    ell = make_elliptical(VisionTransformer(**ARCH, attn_layer=EllipticalAttention)).eval()
    ell.load_state_dict(plain.state_dict(), strict=True)
    return plain, ell


def reference_forward(net, x, reduction="mean", delta=5.0):
    """The paper's formula written out: scores = q diag(m) k^T / sqrt(D), m from |v_l - v_{l-1}| / delta."""
    x = net.norm_pre(net._pos_embed(net.patch_embed(x)))
    v_prev = None
    for index, blk in enumerate(net.blocks):
        h = blk.norm1(x)
        B, N, C = h.shape
        heads = blk.attn.num_heads
        D = C // heads
        q, k, v = blk.attn.qkv(h).reshape(B, N, 3, heads, D).permute(2, 0, 3, 1, 4)
        if index == 0:
            scores = q @ k.transpose(-2, -1) * D ** -0.5
        else:
            diff = (v - v_prev).abs() / delta
            m = diff.mean(dim=2) if reduction == "mean" else diff.median(dim=2).values
            m = m / m.max(dim=-1, keepdim=True).values
            M = torch.diag_embed(m)  # [B, heads, D, D]
            scores = (q @ M @ k.transpose(-2, -1)) * D ** -0.5
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, N, C)
        x = x + blk.attn.proj(out)
        x = x + blk.mlp(blk.norm2(x))
        v_prev = v
    return net.forward_head(net.norm(x))


@pytest.mark.parametrize("reduction", ["mean", "median"])
def test_matches_explicit_diag_m(reduction):
    _, ell = small_pair()
    set_elliptical_options(ell, token_reduction=reduction)
    x = torch.randn(4, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(ell(x), reference_forward(ell, x, reduction), atol=1e-5, rtol=1e-5)


def test_median_differs_from_mean():
    _, ell = small_pair()
    x = torch.randn(4, 3, 32, 32)
    with torch.no_grad():
        mean_out = ell(x)
        set_elliptical_options(ell, token_reduction="median")
        median_out = ell(x)
    assert not torch.allclose(mean_out, median_out, atol=1e-4)


def test_m_of_ones_is_plain_deit(monkeypatch):
    plain, ell = small_pair()
    monkeypatch.setattr("robeval.models.attention.elliptical.elliptical_scale", lambda v, vp, r="mean": torch.ones(v.shape[0], v.shape[1], v.shape[3]))
    x = torch.randn(3, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(ell(x), plain(x), atol=1e-5)


def test_elliptical_changes_output_and_block0_is_standard():
    plain, ell = small_pair()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert not torch.allclose(ell(x), plain(x), atol=1e-4)
        h = plain.norm_pre(plain._pos_embed(plain.patch_embed(x)))
        assert torch.allclose(plain.blocks[0](h), ell.blocks[0](h), atol=1e-6)


def test_scale_max_is_one_and_zero_difference_is_guarded():
    v = torch.randn(2, 3, 5, 4)
    m = elliptical_scale(v, v + torch.randn_like(v))
    assert torch.allclose(m.amax(-1), torch.ones(2, 3))
    same = elliptical_scale(v, v.clone())
    assert torch.isfinite(same).all() and torch.equal(same, torch.ones_like(same))


def test_m_is_detached_unless_asked():
    _, ell = small_pair()
    x = torch.randn(2, 3, 32, 32, requires_grad=True)
    g_detached = torch.autograd.grad(ell(x).sum(), x)[0]
    set_elliptical_options(ell, grad_through_m=True)
    g_through = torch.autograd.grad(ell(x).sum(), x)[0]
    assert not torch.allclose(g_detached, g_through)


def test_no_extra_parameters_and_weights_load_both_ways(deit_tiny_state):
    ell = build_network("deit-tiny-elliptical")
    assert set(ell.state_dict()) == set(deit_tiny_state)
    ell.load_state_dict(deit_tiny_state, strict=True)
    plain = build_network("deit-tiny")
    plain.load_state_dict(ell.state_dict(), strict=True)
    x = torch.rand(1, 3, 224, 224)
    with torch.no_grad():
        out_ell, out_plain = ell.eval()(x), plain.eval()(x)
    assert out_ell.shape == (1, 1000) and not torch.allclose(out_ell, out_plain, atol=1e-4)


def test_load_model_normalizes_inside_and_takes_options(deit_tiny_ckpt):
    model = robeval.load_model("deit-tiny-elliptical", checkpoint=deit_tiny_ckpt, token_reduction="median")
    assert not model.training
    assert model.meta.options["token_reduction"] == "median"
    assert model.meta.checkpoint_sha256 and len(model.meta.checkpoint_sha256) == 64
    x = torch.rand(2, 3, 224, 224)
    with torch.no_grad():
        assert torch.allclose(model(x), model.net((x - model.mean) / model.std), atol=1e-6)
