"""What every attack shares: the call shape, seeding, the threat-model box, and small tensor helpers.

An attack is an object called as ``attack(x, y) -> x_adv`` on tensors in the attacked input space
([0,1] pixels under the ``standard`` protocol).  ``clip`` is the valid input box (``None`` = no
box, as in the ``nielsen2024`` protocol's own attacks).  Each call runs inside its own forked RNG,
seeded from ``seed``, so no attack (AutoAttack's code reseeds the global RNG) leaks randomness
into another.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..attack_settings import apply_settings
from ..core.seeds import derive_seed

Box = Optional[tuple[float, float]]


@contextmanager
def seeded_rng(seed: int, device: torch.device) -> Iterator[None]:
    """Run a block with the global CPU (and current CUDA) RNG seeded, restoring it afterwards."""
    devices = (
        [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    )
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)  # every device's generator, CUDA's included
        yield


@contextmanager
def frozen_weights(model: object) -> Iterator[None]:
    """A block in which no parameter of ``model`` requires a gradient, each restored afterwards: an attack
    needs input gradients only, and a user's module handed to :func:`robeval.attacks.create` has trainable
    parameters (FAB's ``.backward()`` would fill their ``.grad``, and every pass would build a graph through
    the weights).  The engine's models are frozen already; this holds for every caller."""
    trainable = [p for p in model.parameters() if p.requires_grad] if isinstance(model, nn.Module) else []
    for parameter in trainable:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter in trainable:
            parameter.requires_grad_(True)


class Attack:
    """Base class: subclasses set ``name`` and implement :meth:`perturb`."""

    name: str = "attack"  # set by its registration
    defaults: dict[str, Any] = {}  # every setting with its default (robeval.attack_settings gives their meaning)
    examples: list[int] | None = None  # the data-set index of each row, during a call that names them
    # True for attacks from AutoAttack's code: called with the run seed and no examples they draw exactly
    # as AutoAttack does (--cascade uses that to give AutoAttack's own robust examples)
    library_draws: bool = False
    # Convergence curves (robeval.attacks.convergence): the axis its budget counts along (None: no
    # curve), the setting that sets the budget's length, and whether it marks which of its forward
    # calls are at which position (False: every call is the next iteration)
    curve_axis: str | None = None
    curve_setting: str = ""
    marks_positions: bool = False

    def __init__(
        self, model: nn.Module, eps: float, norm: str = "Linf", seed: int = 0, clip: Box = (0.0, 1.0), **settings: Any
    ) -> None:
        self.model, self.eps, self.norm, self.seed, self.clip = model, float(eps), norm, int(seed), clip
        self.settings = apply_settings(self.name, self.defaults, settings)  # known keys, types, limits
        for key, value in self.settings.items():
            setattr(self, key, value)

    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, seed: int | None = None, examples: Sequence[int] | None = None
    ) -> torch.Tensor:
        """``examples`` (each row's index in the data set) makes the random draws of attacks whose
        spec says ``PER_EXAMPLE`` depend on the example alone, not on the batch it sits in."""
        with self.drawing(x, seed, examples):
            return self.perturb(x.detach(), y.detach()).detach()

    @contextmanager
    def drawing(self, x: torch.Tensor, seed: int | None, examples: Sequence[int] | None) -> Iterator[None]:
        """A call's block: inside the attack's forked RNG seeded by ``seed``, with gradients on, the model's
        weights frozen and the rows' example indices set."""
        self.examples = None if examples is None else [int(e) for e in examples]
        try:
            seeded = seeded_rng(self.seed if seed is None else int(seed), x.device)
            with seeded, torch.enable_grad(), frozen_weights(self.model):
                yield
        finally:
            self.examples = None

    def curve_budget(self) -> int:
        """The positions a call's curve spans along ``curve_axis`` (0 = its start)."""
        raise NotImplementedError

    def example_generators(self, device: torch.device, *salt: Any, rows: Sequence[int] | None = None) -> list | None:
        """One generator per example (of ``rows``, positions in the batch), seeded by (run seed, attack,
        eps, example index, ``salt``); None when the call named no examples (then the forked global RNG)."""
        if self.examples is None:
            return None
        chosen = self.examples if rows is None else [self.examples[int(r)] for r in rows]
        gens = []
        for example in chosen:
            gen = torch.Generator(device=device)
            gen.manual_seed(derive_seed(self.seed, self.name, repr(self.eps), example, *salt))
            gens.append(gen)
        return gens

    def draw(self, x: torch.Tensor, kind: str, *salt: Any, rows: Sequence[int] | None = None) -> torch.Tensor:
        """A tensor like ``x`` of ``uniform`` [0,1) or ``normal`` draws, row by row from the examples'
        own generators when the call named them."""
        sample = torch.rand if kind == "uniform" else torch.randn
        gens = self.example_generators(x.device, *salt, rows=rows)
        if gens is None:
            return sample(x.shape, device=x.device, dtype=x.dtype)
        return torch.stack([sample(x.shape[1:], generator=g, device=x.device, dtype=x.dtype) for g in gens])

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def budget(self) -> float | None:
        """At most how many forward passes per example a call spends (progress inside a batch); None
        for attacks quick enough to report only when they finish."""
        return None

    # -- helpers shared by the attacks written here ------------------------------------------
    def clamp_box(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.clip is None else x.clamp(*self.clip)

    def project(self, x_adv: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Project onto the eps ball around ``x`` (in ``self.norm``), then into the box."""
        delta = x_adv - x
        if self.norm == "Linf":
            delta = delta.clamp(-self.eps, self.eps)
        else:
            norms = delta.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (x.dim() - 1))
            delta = delta * torch.clamp(self.eps / norms, max=1.0)
        return self.clamp_box(x + delta)

    def random_init(self, x: torch.Tensor) -> torch.Tensor:
        """A uniform start in the Linf ball, or a random direction at a uniform radius for L2."""
        if self.norm == "Linf":
            noise = (2 * self.draw(x, "uniform", "start") - 1) * self.eps
        else:
            direction = self.draw(x, "normal", "start")
            direction = direction / direction.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (x.dim() - 1))
            radius = self.draw(x.flatten(1)[:, :1], "uniform", "radius").view(-1, *[1] * (x.dim() - 1))
            noise = direction * radius * self.eps
        return self.clamp_box(x + noise)

    def steepest_step(self, grad: torch.Tensor, size: float) -> torch.Tensor:
        """The norm's steepest-ascent direction scaled to ``size`` (sign for Linf, unit for L2)."""
        if self.norm == "Linf":
            return size * grad.sign()
        norms = grad.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (grad.dim() - 1))
        return size * grad / norms


def margin(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``z_y - max_{j != y} z_j`` per example: positive while ``y`` is still the top-1 class."""
    true = logits.gather(1, y[:, None]).squeeze(1)
    others = logits.scatter(1, y[:, None], float("-inf")).amax(dim=1)
    return true - others


def ce_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, y, reduction="sum")
