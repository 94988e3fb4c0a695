"""RVT (Mao et al., CVPR 2022): the authors' parameter counts, FLOPs and checkpoint key names."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import robeval
from robeval.core.errors import UserError
from robeval.models import build_network, count_parameters

# What the authors' robust_models.py builds (parameters; multiply-adds at 224 px, their README: 1.3 / 4.7 / 17.7 G)
REFERENCE = {
    "rvt-tiny": (8_646_376, 1.28), "rvt-tiny-plus": (10_951_336, 1.28),
    "rvt-small": (22_148_392, 4.65), "rvt-small-plus": (23_300_872, 4.65),
    "rvt-base": (86_223_784, 17.49), "rvt-base-plus": (88_528_744, 17.49),
}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_parameters_and_flops_equal_the_authors_definition(name):
    params, gmacs = REFERENCE[name]
    assert count_parameters(name) == params
    net = build_network(name).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = net(torch.rand(1, 3, 224, 224))
    assert out.shape == (1, 1000)
    assert abs(counter.get_total_flops() / 2e9 - gmacs) < 0.01


def authors_state_dict(width: int, depth: int, heads: int, masked: int, classes: int = 1000) -> dict[str, torch.Tensor]:
    """A single-stage RVT checkpoint written from the architecture description alone (not from our modules)."""
    sd: dict[str, torch.Tensor] = {}

    def bn(prefix: str, n: int) -> None:
        for part in ("weight", "bias", "running_mean", "running_var"):
            sd[f"{prefix}.{part}"] = torch.rand(n)
        sd[f"{prefix}.num_batches_tracked"] = torch.tensor(0)

    sd["patch_embed.proj.0.weight"], sd["patch_embed.proj.0.bias"] = torch.rand(32, 3, 7, 7), torch.rand(32)
    bn("patch_embed.proj.1", 32)
    sd["patch_embed.proj.3.weight"], sd["patch_embed.proj.3.bias"] = torch.rand(width, 32, 4, 4), torch.rand(width)
    hidden = 4 * width
    for b in range(depth):
        p = f"transformers.0.blocks.{b}"
        sd[f"{p}.norm1.weight"], sd[f"{p}.norm1.bias"] = torch.ones(width), torch.zeros(width)
        if b < masked:
            sd[f"{p}.attn.att_mask"] = torch.rand(heads, 196, 196)
        sd[f"{p}.attn.qkv.weight"], sd[f"{p}.attn.qkv.bias"] = torch.rand(3 * width, width) * 0.01, torch.rand(3 * width)
        sd[f"{p}.attn.proj.weight"], sd[f"{p}.attn.proj.bias"] = torch.rand(width, width) * 0.01, torch.rand(width)
        sd[f"{p}.norm2.weight"], sd[f"{p}.norm2.bias"] = torch.ones(width), torch.zeros(width)
        sd[f"{p}.mlp.fc1.weight"], sd[f"{p}.mlp.fc1.bias"] = torch.rand(hidden, width, 1, 1) * 0.01, torch.rand(hidden)
        bn(f"{p}.mlp.bn1", hidden)
        sd[f"{p}.mlp.dwconv.weight"], sd[f"{p}.mlp.dwconv.bias"] = torch.rand(hidden, 1, 3, 3), torch.rand(hidden)
        bn(f"{p}.mlp.bn2", hidden)
        sd[f"{p}.mlp.fc2.weight"], sd[f"{p}.mlp.fc2.bias"] = torch.rand(width, hidden, 1, 1) * 0.01, torch.rand(width)
        bn(f"{p}.mlp.bn3", width)
    sd["norm.weight"], sd["norm.bias"] = torch.ones(width), torch.zeros(width)
    sd["head.weight"], sd["head.bias"] = torch.rand(classes, width), torch.rand(classes)
    return sd


def test_a_checkpoint_in_the_authors_layout_loads_strictly(tmp_path):
    sd = authors_state_dict(width=384, depth=12, heads=6, masked=5)
    assert len(sd) == 366  # the authors' rvt_small_plus state dict, BatchNorm buffers included
    path = tmp_path / "rvt_small_plus.pth"
    torch.save({"model": sd, "epoch": 299, "args": None}, path)
    model = robeval.load_model("rvt-small-plus", checkpoint=path)
    assert torch.equal(model.net.state_dict()["transformers.0.blocks.4.attn.att_mask"], sd["transformers.0.blocks.4.attn.att_mask"])
    with torch.no_grad():
        assert torch.isfinite(model(torch.rand(2, 3, 224, 224))).all()
    with pytest.raises(UserError, match="does not fit rvt-small"):
        robeval.load_model("rvt-small", checkpoint=path)  # masks the plain model does not have
    twelve = authors_state_dict(width=768, depth=12, heads=12, masked=12)
    for b in range(12):  # RVT-B blocks use the plain MLP
        for part in ("bn1", "dwconv", "bn2", "bn3"):
            for key in [k for k in twelve if k.startswith(f"transformers.0.blocks.{b}.mlp.{part}")]:
                del twelve[key]
        twelve[f"transformers.0.blocks.{b}.mlp.fc1.weight"] = torch.rand(3072, 768) * 0.01
        twelve[f"transformers.0.blocks.{b}.mlp.fc2.weight"] = torch.rand(768, 3072) * 0.01
    torch.save({"model": twelve}, tmp_path / "rvt_base_plus_12.pth")
    robeval.load_model("rvt-base-plus", checkpoint=tmp_path / "rvt_base_plus_12.pth", masked_block=12)  # the paper's 91.8M
