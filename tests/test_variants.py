"""Attention variants (Optimised / Efficient / Super), robust-attention baselines (RKDE, MoM), their
digits demos, and the ``hf-hub:`` / ``robustbench:`` name prefixes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from timm.models.vision_transformer import VisionTransformer

import robeval
from robeval.core.errors import UserError
from robeval.data.digits import digits_split
from robeval.models import build_network, count_parameters, get_spec, list_models
from robeval.models.attention.robust import MoMAttention, RKDEAttention, huber_rkde_weights, set_robust_options
from robeval.models.attention.variants import VARIANTS, SuperAttention, make_super, state_from_deit

ARCH = dict(img_size=32, patch_size=8, in_chans=3, num_classes=7, embed_dim=48, depth=3, num_heads=3)
SEQ = (32 // 8) ** 2 + 1  # 16 patches + class token
DIGITS_VARIANT_NAMES = [f"digits-deit-{k}" for k in ("optimised", "efficient", "super", "rkde", "mom")]


def expected_attention_params(kind: str, d: int, tokens: int, qkv_bias: bool, proj_bias: bool = True) -> int:
    """The paper's counts: Optimised 3 d^2, Efficient 2 d^2, Super 2 d^2 + tokens^2; plus the biases."""
    projections = {"optimised": 3, "efficient": 2, "super": 2}[kind]
    input_projections = projections - 1  # all but W^O
    count = projections * d * d + (input_projections * d if qkv_bias else 0) + (d if proj_bias else 0)
    return count + (tokens * tokens if kind == "super" else 0)


def variant_net(kind: str, **kwargs) -> VisionTransformer:
    net = VisionTransformer(**ARCH, attn_layer=VARIANTS[kind], **kwargs)
    return make_super(net) if kind == "super" else net


def paired(kind: str, seed: int = 0):
    """A plain ViT and the ``kind`` variant holding the same weights (W^Q, W^K, W^O, MLPs, ...)."""
    torch.manual_seed(seed)
    plain = VisionTransformer(**ARCH).eval()
    var = variant_net(kind).eval()
    var.load_state_dict(state_from_deit(plain.state_dict(), var), strict=True)
    return plain, var


@pytest.mark.parametrize("kind", list(VARIANTS))
@pytest.mark.parametrize("qkv_bias", [True, False])
def test_attention_parameter_counts_follow_the_formulas(kind, qkv_bias):
    net = variant_net(kind, qkv_bias=qkv_bias)
    for block in net.blocks:
        got = sum(p.numel() for p in block.attn.parameters())
        assert got == expected_attention_params(kind, ARCH["embed_dim"], SEQ, qkv_bias)


def test_deit_tiny_variant_counts_against_deit_tiny():
    d, layers, tokens = 192, 12, 197
    base = count_parameters("deit-tiny")
    standard = 4 * d * d + 3 * d + d  # timm qkv (with bias) + proj (with bias)
    for kind in VARIANTS:
        delta = layers * (expected_attention_params(kind, d, tokens, True) - standard)
        assert count_parameters(f"deit-tiny-{kind}") == base + delta
    assert count_parameters("deit-tiny-rkde") == count_parameters("deit-tiny-mom") == base


def reference_attention(attn, x: torch.Tensor, kind: str) -> torch.Tensor:
    """The paper's formulas, head by head, with explicit softmax."""
    B, N, d = x.shape
    h, dk = attn.num_heads, d // attn.num_heads
    if kind == "optimised":
        wq, wk = attn.qk.weight[:d], attn.qk.weight[d:]
        bq, bk = attn.qk.bias[:d], attn.qk.bias[d:]
    else:
        wq, bq = attn.q.weight, attn.q.bias
    heads = []
    for i in range(h):
        cols = slice(i * dk, (i + 1) * dk)
        xi = x[..., cols]
        qi = x @ wq[cols].T + bq[cols]
        ki = x @ wk[cols].T + bk[cols] if kind == "optimised" else xi
        vi = attn.w_a @ xi if kind == "super" else xi
        heads.append(torch.softmax(qi @ ki.transpose(-2, -1) / dk ** 0.5, dim=-1) @ vi)
    return attn.proj(torch.cat(heads, dim=-1))


@pytest.mark.parametrize("kind", list(VARIANTS))
def test_layers_compute_the_paper_formulas(kind):
    torch.manual_seed(1)
    net = variant_net(kind).eval()
    attn = net.blocks[0].attn
    if kind == "super":
        torch.nn.init.normal_(attn.w_a, std=0.3)  # not the identity, so W_A is really exercised
    x = torch.randn(2, SEQ, ARCH["embed_dim"])
    with torch.no_grad():
        assert torch.allclose(attn(x), reference_attention(attn, x, kind), atol=1e-5)


@pytest.mark.parametrize("kind", list(VARIANTS))
def test_variants_differ_from_deit_with_shared_weights(kind):
    plain, var = paired(kind)
    x = torch.randn(3, 3, 32, 32)
    with torch.no_grad():
        out_plain, out_var = plain(x), var(x)
    assert out_var.shape == out_plain.shape == (3, 7)
    assert not torch.allclose(out_var, out_plain, atol=1e-4)


def test_super_needs_its_sequence_length():
    net = VisionTransformer(**ARCH, attn_layer=SuperAttention).eval()
    with pytest.raises(RuntimeError, match="make_super"):
        net(torch.randn(1, 3, 32, 32))
    make_super(net)
    assert net.blocks[0].attn.seq_len == SEQ
    assert torch.equal(net.blocks[0].attn.w_a, torch.eye(SEQ))
    with pytest.raises(ValueError, match="tokens"):
        net.blocks[0].attn(torch.randn(1, SEQ + 1, ARCH["embed_dim"]))
    with torch.device("meta"):
        tiny = build_network("deit-tiny-super")
    assert {b.attn.seq_len for b in tiny.blocks} == {197}


@pytest.mark.parametrize("name", [f"deit-{s}-{k}" for s in ("tiny", "small") for k in VARIANTS] + ["deit-tiny-rkde", "deit-tiny-mom"])
def test_imagenet_sized_models_are_registered_without_weights(name):
    spec = get_spec(name)
    assert not spec.has_default_weights and spec.weights.describe() == "none public: --checkpoint"
    with pytest.raises(UserError, match="no public weights"):
        robeval.load_model(name)


@pytest.mark.parametrize("name", ["deit-tiny-optimised", "deit-tiny-efficient", "deit-tiny-super", "deit-tiny-rkde", "deit-tiny-mom"])
def test_deit_tiny_variants_forward_shape(name):
    with torch.device("meta"):  # shapes only: no memory, no compute
        net = build_network(name).eval()
        assert net(torch.empty(2, 3, 224, 224)).shape == (2, 1000)


def robust_pair(layer: type, seed: int = 0):
    torch.manual_seed(seed)
    plain = VisionTransformer(**ARCH).eval()
    robust = VisionTransformer(**ARCH, attn_layer=layer).eval()
    robust.load_state_dict(plain.state_dict(), strict=True)
    return plain, robust


def logits_as_plain(robust, plain, x, atol=1e-5, **options) -> bool:
    """Whether ``robust`` with its robust ``options`` set gives ``plain``'s logits on ``x`` (within ``atol``)."""
    set_robust_options(robust, **options)
    with torch.no_grad():
        return torch.allclose(robust(x), plain(x), atol=atol)


def test_mom_with_one_group_is_standard_attention_and_more_groups_differ():
    plain, mom = robust_pair(MoMAttention)
    x = torch.randn(3, 3, 32, 32)
    assert logits_as_plain(mom, plain, x, groups=1)
    assert not logits_as_plain(mom, plain, x, atol=1e-4, groups=3)


def test_mom_is_the_elementwise_median_of_group_outputs():
    _, mom = robust_pair(MoMAttention)
    attn = mom.blocks[0].attn
    attn.groups = 3
    x = torch.randn(2, SEQ, ARCH["embed_dim"])
    B, N, C = x.shape
    q, k, v = attn.qkv(x).reshape(B, N, 3, 3, C // 3).permute(2, 0, 3, 1, 4)
    outs = []
    for g in range(3):
        kg, vg = k[:, :, g::3], v[:, :, g::3]
        outs.append(torch.softmax(q @ kg.transpose(-2, -1) / (C // 3) ** 0.5, -1) @ vg)
    ref = attn.proj(torch.stack(outs).median(0).values.transpose(1, 2).reshape(B, N, C))
    with torch.no_grad():
        assert torch.allclose(attn(x), ref, atol=1e-5)


def test_rkde_without_reweighting_is_standard_attention():
    plain, rkde = robust_pair(RKDEAttention)
    x = torch.randn(3, 3, 32, 32)
    assert logits_as_plain(rkde, plain, x, iterations=0)
    assert logits_as_plain(rkde, plain, x, iterations=2, huber_threshold=float("inf"))
    assert logits_as_plain(rkde, plain, x, huber_threshold=1e9)  # finite but never reached: uniform weights
    assert not logits_as_plain(rkde, plain, x, atol=1e-4, iterations=1, huber_threshold=0.2)


def test_rkde_weights_downweight_an_outlier():
    torch.manual_seed(0)
    z = torch.randn(2, 20, 4) * 0.3
    z[:, 7] += 3.0  # one token far from the rest
    w = huber_rkde_weights(z, threshold=0.2, iterations=2, bandwidth=2.0)
    assert torch.allclose(w.sum(-1), torch.ones(2))
    assert (w.argmin(-1) == 7).all() and (w[:, 7] < 0.5 / 20).all()
    uniform = huber_rkde_weights(z, threshold=0.2, iterations=0, bandwidth=2.0)
    assert torch.allclose(uniform, torch.full_like(uniform, 1 / 20))


def test_rkde_gradients_flow_through_the_weights():
    _, rkde = robust_pair(RKDEAttention)
    x = torch.randn(2, 3, 32, 32, requires_grad=True)
    grad = torch.autograd.grad(rkde(x).sum(), x)[0]
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0


@pytest.mark.parametrize("name", ["deit-tiny-rkde", "deit-tiny-mom"])
def test_deit_tiny_weights_load_strictly(name, deit_tiny_state):
    with torch.device("meta"):
        net, plain = build_network(name), build_network("deit-tiny")
    assert set(net.state_dict()) == set(deit_tiny_state)
    net.load_state_dict(deit_tiny_state, strict=True, assign=True)
    plain.load_state_dict(net.state_dict(), strict=True, assign=True)
    assert torch.equal(plain.blocks[3].attn.qkv.weight, deit_tiny_state["blocks.3.attn.qkv.weight"])


def test_robust_models_take_options(deit_tiny_ckpt):
    model = robeval.load_model("deit-tiny-mom", checkpoint=deit_tiny_ckpt, groups=5)
    assert model.meta.options == {"groups": 5} and {b.attn.groups for b in model.net.blocks} == {5}
    with torch.device("meta"):
        rkde = build_network("deit-tiny-rkde", iterations=2, huber_threshold=0.5)
    assert {(b.attn.iterations, b.attn.huber_threshold) for b in rkde.blocks} == {(2, 0.5)}
    with pytest.raises(UserError, match="no option"):
        build_network("deit-tiny-mom", iterations=2)


def test_digits_models_keep_their_order():
    names = [s.name for s in list_models() if s.name.startswith("digits-")]
    assert names[:2] == ["digits-deit", "digits-deit-elliptical"]
    assert names[2:2 + len(DIGITS_VARIANT_NAMES)] == list(DIGITS_VARIANT_NAMES)  # then the other families


@pytest.fixture(scope="module")
def digits_test():
    images, labels = digits_split("test")
    return torch.from_numpy(images), torch.from_numpy(labels)


@pytest.mark.parametrize("name", DIGITS_VARIANT_NAMES)
def test_digits_variant_loads_embedded_checkpoint_and_is_accurate(name, digits_test):
    model = robeval.load_model(name)
    assert model.meta.checkpoint and model.meta.checkpoint.endswith(f"{name}.safetensors")
    assert len(model.meta.checkpoint_sha256) == 64
    assert Path(model.meta.checkpoint).stat().st_size < 2_000_000
    images, labels = digits_test
    with torch.inference_mode():
        acc = (model(images).argmax(1) == labels).float().mean().item()
    assert acc >= 0.95, f"{name}: {acc:.4f}"


def test_robustbench_without_the_package_is_a_user_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "robustbench", None)  # `import robustbench` now raises ImportError
    monkeypatch.setitem(sys.modules, "robustbench.utils", None)
    with pytest.raises(UserError, match=r"pip install 'robeval\[robustbench\]'"):
        robeval.load_model("robustbench:Salman2020Do_R18")


def test_hf_hub_offline_is_a_fast_user_error(monkeypatch):
    """Offline, the error comes without a look-up or a connection (what would make it slow)."""
    import socket

    tried = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: tried.append(a) or [])
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: tried.append(address))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="offline"):
        robeval.load_model("hf-hub:robeval-tests/no-such-model")
    with pytest.raises(UserError, match="offline"):
        build_network("hf-hub:robeval-tests/no-such-model")
    assert tried == []
    with pytest.raises(UserError, match="OWNER/REPO"):
        get_spec("hf-hub:no-slash")
