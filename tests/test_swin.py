"""Swin with Optimised / Efficient / Super attention: parameter counts by the paper's formulas,
Super's W_A kept inside the shifted-window regions, timm checkpoints, and the digits demos."""

from __future__ import annotations

import pytest
import timm
import torch

import robeval
from robeval.core.errors import UserError
from robeval.models import build_network, count_parameters
from robeval.models.attention.variants import state_from_deit
from robeval.models.swin import digits_swin

# (embed dim, depths) of timm's swin_{tiny,small}_patch4_window7_224; 49 tokens per window
SWIN = {"tiny": (96, (2, 2, 6, 2)), "small": (96, (2, 2, 18, 2))}
AREA = 49


def attention_saving(kind: str, c: int) -> int:
    """Parameters a block's attention loses against Swin's (qkv and proj with biases): the formulas
    standard 4C^2, Optimised 3C^2, Efficient 2C^2, Super 2C^2 + A^2, with the matching biases."""
    return {"optimised": c * c + c, "efficient": 2 * c * c + 2 * c, "super": 2 * c * c + 2 * c - AREA * AREA}[kind]


@pytest.mark.parametrize("size", list(SWIN))
@pytest.mark.parametrize("kind", ["optimised", "efficient", "super"])
def test_parameter_counts_follow_the_formulas(size, kind):
    embed, depths = SWIN[size]
    saving = sum(depth * attention_saving(kind, embed * 2 ** stage) for stage, depth in enumerate(depths))
    assert count_parameters(f"swin-{size}-{kind}") == count_parameters(f"swin-{size}") - saving


def test_super_swin_small_has_the_papers_sixteen_percent_fewer_parameters():
    base, sup = count_parameters("swin-small"), count_parameters("swin-small-super")
    assert base == 49_606_258  # timm swin_small_patch4_window7_224 (49.6M)
    assert round(100 * (1 - sup / base)) == 16  # 15.7% by the formula; the paper reports 16%


def shifted_block_inputs():
    """The first shifted block of a digits Super Swin, a random W_A, and a window holding four regions."""
    torch.manual_seed(0)
    net = digits_swin("super").eval()
    block = net.layers[0].blocks[1]
    assert any(block.shift_size)
    attn, mask = block.attn, block.attn_mask  # mask [windows, A, A]: 0 inside a region, -100 across
    with torch.no_grad():
        attn.w_a.normal_()
    window = int(((mask != 0).sum((1, 2)) > 0).nonzero()[-1])
    region = torch.zeros(mask.shape[1], dtype=torch.long)  # label the tokens of that window by region
    for i in range(mask.shape[1]):
        same = (mask[window, i] == 0).nonzero().flatten()
        region[i] = int(same[0])
    x = torch.randn(mask.shape[0], mask.shape[1], attn.attn_dim)  # one image: batch axis = windows
    return attn, mask, window, region, x


def test_super_attention_never_mixes_tokens_that_the_shift_mask_separates():
    attn, mask, window, region, x = shifted_block_inputs()
    token = 0
    others = (region != region[token]).nonzero().flatten()
    assert len(others) > 0
    moved = x.clone()
    moved[window, token] += 5.0
    with torch.no_grad():
        before, after = attn(x, mask), attn(moved, mask)
    assert not torch.allclose(before[window, token], after[window, token])
    torch.testing.assert_close(after[window, others], before[window, others], atol=1e-5, rtol=0)
    # Without the region cut W_A would carry the change across regions: the cut is what isolates them.
    n = x.shape[1]
    bias = attn.relative_position_bias_table[attn.relative_position_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
    scores = bias.unsqueeze(0) + mask.unsqueeze(1)
    with torch.no_grad():
        leak = attn.attend(moved, scores)[window, others] - attn.attend(x, scores)[window, others]
    assert leak.abs().max() > 1e-3


def test_swin_checkpoints_load_strictly_and_convert_to_the_variants(tmp_path):
    torch.manual_seed(0)
    state = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False).state_dict()
    path = tmp_path / "swin_tiny.pth"
    torch.save({"model": state}, path)
    model = robeval.load_model("swin-tiny", checkpoint=path)
    with torch.no_grad():
        assert model(torch.rand(1, 3, 224, 224)).shape == (1, 1000)
    with pytest.raises(UserError, match="does not fit swin-tiny-super"):
        robeval.load_model("swin-tiny-super", checkpoint=path)
    variant = build_network("swin-tiny-super")
    converted = state_from_deit(state, variant)  # W^Q from qkv, W^V dropped, W_A from the variant
    torch.save({"model": converted}, tmp_path / "super.pth")
    loaded = robeval.load_model("swin-tiny-super", checkpoint=tmp_path / "super.pth")
    first = "layers.0.blocks.0.attn"
    assert torch.equal(loaded.net.state_dict()[f"{first}.q.weight"], state[f"{first}.qkv.weight"][:96])
    assert torch.equal(loaded.net.state_dict()[f"{first}.relative_position_bias_table"],
                       state[f"{first}.relative_position_bias_table"])
