"""The size of a perturbation, one function everywhere: the eps check of every attack, the records'
Linf / L2 columns, minimum-norm searches, FAB's within-eps test and the shifted images' distances."""

from __future__ import annotations

import torch


def perturbation_size(
    x_adv: torch.Tensor, x: torch.Tensor, norm: str, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """Per example ``||x_adv - x||`` in ``norm`` (Linf or L2), computed in ``dtype`` (float64 by default;
    FAB's test keeps AutoAttack's float32 so that its outcomes equal AutoAttack's own)."""
    delta = (x_adv - x).flatten(1).to(dtype)
    return delta.abs().amax(1) if norm == "Linf" else delta.norm(dim=1)


def perturbation_norms(x_adv: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per example the Linf and the L2 size of ``x_adv - x`` (float64): the records' two columns."""
    return perturbation_size(x_adv, x, "Linf"), perturbation_size(x_adv, x, "L2")
