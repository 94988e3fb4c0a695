"""ImageNet-A / ImageNet-R's view of a 1000-class model: only the logits of the data set's 200 classes
compete (the others masked), labels kept in ImageNet-1k numbering."""

from __future__ import annotations

import torch
from torch import nn

from .catalog import class_set

MASKED_LOGIT = -1e4  # the logit of a class outside a 200-class set: below any real logit, finite in fp16


class RestrictedLogits(nn.Module):
    """A 1000-class model seen through a 200-class set: the other logits are set to
    :data:`MASKED_LOGIT`, so top-1/top-5 (and every attack's loss) range over the set only — what
    indexing the 200 logits gives, with labels kept in ImageNet-1k numbering."""

    def __init__(self, model: nn.Module, shift: str) -> None:
        super().__init__()
        from ..data.labels import imagenet_wnids

        position = {w: i for i, w in enumerate(imagenet_wnids() or [])}
        self.model = model
        self.keep: torch.Tensor
        self.register_buffer(
            "keep", torch.tensor([position[w] for w in class_set(shift)], dtype=torch.long), persistent=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.model(x)
        out = torch.full_like(logits, MASKED_LOGIT)
        return out.index_copy(1, self.keep.to(logits.device), logits.index_select(1, self.keep.to(logits.device)))
