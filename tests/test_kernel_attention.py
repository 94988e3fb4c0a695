"""The Elliptical authors' kernel baselines (KDE, SPKDE, FourierFormer, RVT-style DeiT): formulas,
the SPKDE solver, per-image independence, gradients attacks see, and checkpoints in their layout."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.optimize import minimize

import robeval
from robeval.core.errors import UserError
from robeval.models import build_network, count_parameters, get_spec
from robeval.models.attention.kernel import (
    FourierAttention,
    KDEAttention,
    MaskedKeyNormAttention,
    project_to_simplex,
    spkde_weights,
)
from robeval.models.attention.robust import gaussian_gram

DIM, HEADS, TOKENS = 24, 2, 9


def qkv_of(layer, x):
    q, k, v = layer.qkv(x).reshape(x.shape[0], x.shape[1], 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4).unbind(0)
    return q, k, v


def finish(layer, out):
    return layer.proj(out.transpose(1, 2).reshape(out.shape[0], out.shape[2], DIM))


def test_kde_is_a_gaussian_kernel_on_normalised_keys():
    torch.manual_seed(0)
    layer, x = KDEAttention(DIM, HEADS, qkv_bias=True).eval(), torch.randn(2, TOKENS, DIM)
    q, k, v = qkv_of(layer, x)
    kn = k / k.norm(dim=-1, keepdim=True)
    scores = -(q.unsqueeze(-2) - kn.unsqueeze(-3)).pow(2).sum(-1) * (DIM // HEADS) ** -0.5
    torch.testing.assert_close(layer(x), finish(layer, scores.softmax(-1) @ v), atol=1e-5, rtol=1e-5)


def test_fourier_is_the_product_of_sinc_kernels():
    torch.manual_seed(0)
    layer, x = FourierAttention(DIM, HEADS, qkv_bias=True).eval(), torch.randn(2, TOKENS, DIM) * 0.3
    with torch.no_grad():
        layer.paramR.fill_(0.7)
    q, k, v = qkv_of(layer, x)
    r = 0.7 * (q.unsqueeze(-2) - k.unsqueeze(-3))
    y = (torch.sin(r) / r).prod(-1)
    a = y ** 4 / ((y ** 4).sum(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(layer(x), finish(layer, a @ v), atol=1e-5, rtol=1e-4)
    x.requires_grad_(True)
    layer(x).sum().backward()  # a zero difference (sinc(0) = 1) has a finite derivative
    assert torch.isfinite(x.grad).all() and torch.isfinite(layer.paramR.grad).all()


def test_rvt_style_gates_the_scaled_logits_of_normalised_keys():
    torch.manual_seed(0)
    layer = MaskedKeyNormAttention(DIM, HEADS, qkv_bias=True).eval()
    layer.set_seq_len(TOKENS)
    with torch.no_grad():
        layer.att_mask.normal_()
    x = torch.randn(2, TOKENS, DIM)
    q, k, v = qkv_of(layer, x)
    logits = q @ F.normalize(k, dim=-1).transpose(-2, -1) * (DIM // HEADS) ** -0.5 * torch.sigmoid(layer.att_mask)
    torch.testing.assert_close(layer(x), finish(layer, logits.softmax(-1) @ v), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="built for 9 tokens, got 10"):
        layer(torch.randn(1, TOKENS + 1, DIM))


def test_simplex_projection_and_the_spkde_solver_against_scipy():
    torch.manual_seed(0)
    y = torch.randn(5, 7) * 2
    p = project_to_simplex(y)
    assert (p >= 0).all() and torch.allclose(p.sum(-1), torch.ones(5))
    assert torch.equal(project_to_simplex(p), p) or torch.allclose(project_to_simplex(p), p, atol=1e-6)
    z = torch.randn(3, 12, 6, dtype=torch.float64)
    gram = gaussian_gram(z, math.sqrt(6))
    beta = 1 / 0.9
    ours = spkde_weights(gram, beta, 300)
    for g, a in zip(gram.numpy(), ours.numpy()):
        def objective(w, g=g):
            return 0.5 * w @ g @ w - beta / len(w) * g.sum(1) @ w
        ref = minimize(objective, np.full(len(g), 1 / len(g)), method="SLSQP", bounds=[(0, 1)] * len(g),
                       constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}], options={"ftol": 1e-14, "maxiter": 500})
        assert objective(a) <= ref.fun + 1e-7  # the solver reaches the QP's optimum
        assert np.abs(a - ref.x).max() < 1e-3


def test_spkde_outputs_do_not_depend_on_the_batch_and_adaptive_sees_through_the_weights():
    torch.manual_seed(0)
    net = build_network("digits-deit-spkde").eval()
    x = torch.rand(6, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(net(x[:2]), net(x)[:2], atol=1e-5, rtol=1e-5)  # per-image QPs, not per batch

    def input_grad(model):
        xi = x.clone().requires_grad_(True)
        F.cross_entropy(model(xi), torch.arange(6)).backward()
        return xi.grad

    plain = input_grad(net)
    adaptive = build_network("digits-deit-spkde", grad_through_weights=True).eval()
    adaptive.load_state_dict(net.state_dict())
    with torch.no_grad():
        assert torch.equal(adaptive(x), net(x))  # same function, other gradient
    grad = input_grad(adaptive)
    assert torch.isfinite(grad).all() and not torch.allclose(grad, plain)
    assert get_spec("deit-tiny-spkde").adaptive == {"grad_through_weights": True}
    assert all(get_spec(f"deit-tiny-{k}").adaptive is None for k in ("kde", "fourier", "rvt"))


def authors_layout(extra: str | None, shape: tuple[int, ...] = ()) -> dict[str, torch.Tensor]:
    """A checkpoint in the authors' layout: timm's DeiT-tiny keys plus each block's own attention parameter."""
    sd = {k: torch.randn_like(v) * 0.02 for k, v in build_network("deit-tiny").state_dict().items()}
    if extra:
        sd.update({f"blocks.{i}.attn.{extra}": torch.rand(shape) for i in range(12)})
    return sd


@pytest.mark.parametrize("name, extra, shape", [
    ("deit-tiny-kde", None, ()), ("deit-tiny-spkde", None, ()),
    ("deit-tiny-fourier", "paramR", (1,)), ("deit-tiny-rvt", "att_mask", (3, 197, 197)),
])
def test_checkpoints_in_the_authors_layout_load_strictly(name, extra, shape, tmp_path):
    sd = authors_layout(extra, shape)
    assert count_parameters(name) == sum(v.numel() for v in sd.values())  # deit-tiny's 5,717,416 + the extras
    path = tmp_path / f"{name}.pth"
    torch.save({"model": sd, "epoch": 299}, path)
    model = robeval.load_model(name, checkpoint=path)
    if extra:
        assert torch.equal(model.net.state_dict()[f"blocks.11.attn.{extra}"], sd[f"blocks.11.attn.{extra}"])
    with torch.no_grad():
        out = model(torch.rand(1, 3, 224, 224))
    assert out.shape == (1, 1000) and torch.isfinite(out).all()
    other = "deit-tiny-kde" if extra else "deit-tiny-rvt"
    with pytest.raises(UserError, match=f"does not fit {other}"):
        robeval.load_model(other, checkpoint=path)
