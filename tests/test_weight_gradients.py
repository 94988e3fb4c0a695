"""No attack computes a parameter gradient (issue 53): every registered attack, through the engine, on a
model of the user's whose parameters require gradients when it is handed over (FAB calls ``.backward()``
on its loss, which would fill them); after the run no parameter has a ``.grad``, and no forward pass of
the run was made while a parameter required one (a graph through the weights)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import robeval
from robeval.attacks import create, list_attacks
from robeval.attacks.registry import SUITE
from robeval.data.digits import digits_split

from .conftest import FAST_SETTINGS


class Watched(nn.Module):
    """digits-deit's network, its parameters requiring gradients as a user's fresh module's do; every
    instance that makes a pass (robeval evaluates its own copy) is kept in :attr:`seen`, with the passes
    it made while a parameter required a gradient."""

    seen: list[Watched] = []

    def __init__(self) -> None:
        super().__init__()
        self.net = robeval.load_model("digits-deit").net
        self.net.requires_grad_(True)
        self.graphs_through_weights = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not any(s is self for s in Watched.seen):
            Watched.seen.append(self)
        self.graphs_through_weights += torch.is_grad_enabled() and any(p.requires_grad for p in self.parameters())
        return self.net(x)


@pytest.mark.parametrize("attack", [spec.name for spec in list_attacks()])
def test_no_attack_leaves_a_parameter_gradient_or_passes_through_trainable_weights(attack):
    Watched.seen.clear()
    module = Watched().eval()
    config = robeval.ModelConfig(input_size=(1, 8, 8), mean=(0.0,), std=(1.0,), num_classes=10)
    options = {"source_model": "digits-deit"} if get_kind(attack) == "transfer" else {}
    robeval.evaluate_full(models=[(module, config)], n_examples=4, attacks=attack, eps="8/255", threads=1,
                          settings={k: v for k, v in FAST_SETTINGS.items() if k == attack}, progress=False, **options)  # fmt: skip
    used = [m for m in Watched.seen if m is not module]  # the engine's copy (and the checks' passes on it)
    assert used and all(p.grad is None for m in used for p in m.parameters()), attack
    assert [m.graphs_through_weights for m in used] == [0] * len(used), attack


def get_kind(attack: str) -> str:
    return next(spec.kind for spec in list_attacks() if spec.name == attack)


@pytest.mark.parametrize("attack", SUITE)
def test_an_attack_made_by_create_leaves_the_weights_as_it_found_them(attack):
    """``robeval.attacks.create`` on a plain module whose parameters require gradients (issue 61): the call
    makes no pass through trainable weights, leaves no ``.grad`` and gives each parameter its
    ``requires_grad`` back; one parameter the user had frozen stays frozen."""
    module = Watched().eval()
    kept = next(module.parameters())
    kept.requires_grad_(False)
    x, y = (torch.from_numpy(a[:4]) for a in digits_split("test"))
    create(attack, module, eps=8 / 255, **FAST_SETTINGS.get(attack, {}))(x, y)
    assert module.graphs_through_weights == 0 and all(p.grad is None for p in module.parameters()), attack
    assert not kept.requires_grad and all(p.requires_grad for p in module.parameters() if p is not kept)
