"""Swin Transformer (timm) and Swin with Optimised / Efficient / Super attention (Hosseini &
Hosseini 2024, the second paper's Swin-S benchmark).

``swin-tiny`` / ``swin-small`` are timm's ``swin_{tiny,small}_patch4_window7_224``.  The variants
replace every block's window attention by the variant's (:mod:`.attention.variants`) inside Swin's
windows; the relative-position bias table is kept (same name, same shape) and added to the scores.

**Super attention in windows** (no official definition exists; this is our decision).  ``W_A`` is
one ``A x A`` matrix per layer, ``A`` the window area (49 at window 7), shared by all windows and
heads, mixing the tokens *of a window*: values = ``W_A X_window``.  The relative-position bias stays
on the scores only (it describes query-key offsets, W_A already has a weight per token pair).  In a
shifted-window block Swin's mask keeps tokens of different image regions (brought together by the
cyclic shift) from attending to each other; ``W_A`` must not mix them either, so in each window it
is multiplied by that window's region indicator (1 where the mask is 0): a token's value mixes only
tokens that its own attention may see.  ``W_A`` starts as the identity (an untrained Super layer is
an Efficient one).  ``tests/test_swin.py`` checks that a token in one region leaves every output of
another region of the same window unchanged.

Parameter counts against the paper's: docs/models.md, section The model list.  ``--adaptive`` does not
apply (no data-dependent weight).
"""

from __future__ import annotations

from typing import Any, Optional

import timm
import torch
from timm.layers import to_2tuple, trunc_normal_
from timm.models.swin_transformer import SwinTransformer, WindowAttention, get_relative_position_index
from torch import nn

from .attention.kinds import ATTENTION_KINDS
from .attention.variants import VARIANTS, SliceAttention, SuperAttention
from .catalog import DIGITS_CFG
from .wrapper import set_config

DIGITS_SWIN: dict[str, Any] = dict(
    img_size=8,
    patch_size=1,
    in_chans=1,
    num_classes=10,
    embed_dim=24,
    depths=(2, 2),
    num_heads=(3, 6),
    window_size=4,
    mlp_ratio=2.0,
)  # an 8x8 token grid in 4x4 windows (shifted by 2), then 4x4 in one


class _Windowed(SliceAttention):
    """Swin's window machinery around a slice attention: relative-position bias and shifted-window mask
    (mixed in before each variant: ``WindowOptimisedAttention(_Windowed, OptimisedAttention)``)."""

    relative_position_index: torch.Tensor

    def init_window(self, window_size) -> None:
        self.window_size = to_2tuple(window_size)
        win_h, win_w = self.window_size
        self.window_area = win_h * win_w
        table = torch.zeros((2 * win_h - 1) * (2 * win_w - 1), self.num_heads, device=self.proj.weight.device)
        self.relative_position_bias_table = nn.Parameter(trunc_normal_(table, std=0.02))
        self.register_buffer(
            "relative_position_index", get_relative_position_index(win_h, win_w, device=table.device), persistent=False
        )
        if isinstance(self, SuperAttention):
            self.set_seq_len(self.window_area)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:  # type: ignore[override]  # timm's window call
        """``x`` ``[images x windows, A, C]``; ``mask`` ``[windows, A, A]`` (0 / -100) in shifted blocks."""
        n = x.shape[1]
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(n, n, -1)
        scores_mask = bias.permute(2, 0, 1).unsqueeze(0)  # [1, heads, A, A]
        if mask is None:
            return self.attend(x, scores_mask)
        windows = mask.shape[0]
        shifted = mask.view(1, windows, 1, n, n).expand(x.shape[0] // windows, -1, self.num_heads, -1, -1)
        scores_mask = scores_mask + shifted.reshape(-1, self.num_heads, n, n)
        return self.attend(x, scores_mask, regions=(mask == 0).to(x.dtype))


WINDOW_VARIANTS: dict[str, type[nn.Module]] = {
    kind: type(f"Window{layer.__name__}", (_Windowed, layer), {"__doc__": f"{layer.__name__} inside Swin's windows."})
    for kind, layer in VARIANTS.items()
}


def swin_with_attention(net: SwinTransformer, kind: str) -> SwinTransformer:
    """Replace every block's ``WindowAttention`` of ``net`` by the ``kind`` variant (random weights)."""
    ATTENTION_KINDS.require(kind)
    blocks: list[Any] = [m for m in net.modules() if isinstance(getattr(m, "attn", None), WindowAttention)]
    for block in blocks:  # in the network's order: seeded random weights are those of the nested stage/block loop
        old = block.attn
        layer: Any = WINDOW_VARIANTS[kind](old.dim, old.num_heads, qkv_bias=old.qkv.bias is not None)
        layer.init_window(old.window_size)
        block.attn = layer
    return net


def swin_network(arch: str, kind: Optional[str] = None) -> nn.Module:
    """timm's Swin ``arch`` (random weights), with attention ``kind`` in its windows if given."""
    net = timm.create_model(arch, pretrained=False)
    return net if kind is None else swin_with_attention(net, kind)  # type: ignore[arg-type]  # a SwinTransformer


def digits_swin(kind: Optional[str] = None, drop_path_rate: float = 0.0) -> nn.Module:
    """An untrained digits Swin (:data:`DIGITS_SWIN`), with attention ``kind`` in its windows if given."""
    net = SwinTransformer(**DIGITS_SWIN, drop_path_rate=drop_path_rate)
    if kind is not None:
        swin_with_attention(net, kind)
    return set_config(net, DIGITS_CFG)
