"""Transfer attacks: adversarial images crafted on a source model by a registered white-box attack,
then evaluated on each target model (docs/soundness.md, section "Transfer attacks").

The first target that needs an (attack, eps, examples) triple crafts it on the source and keeps the
images in a cache on disk; every other target of the run reads them back.  The source is the run's:
the evaluation loads it, builds the attacks with it (``source=``) and closes it at the end.  The
crafting call gets the same seed and example indices whichever target asks first, so the images
do not depend on the order of the targets.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from ..core.errors import UserError
from .autoattack import APGDCE
from .base import Attack
from .gradient import PGD
from .registry import create, registered_as


class SourceModel:
    """The source model of a run (loaded once) and the images crafted on it (on disk)."""

    def __init__(self, model: torch.nn.Module, label: str) -> None:
        self.model, self.label = model, label
        self.folder = Path(tempfile.mkdtemp(prefix="robeval-transfer-"))
        self.crafted = 0  # crafting calls made (benchmarks and tests read it)

    def craft(self, attack: Attack, base: str, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        crafting = (base, attack.eps, attack.norm, attack.seed, attack.examples, sorted(attack.settings.items()))
        key = hashlib.sha256(repr((*crafting, tuple(x.shape))).encode()).hexdigest()[:24]
        path = self.folder / f"{key}.pt"
        if path.exists():
            return torch.load(path, map_location=x.device, weights_only=True)  # a tensor we wrote; never unpickle code
        crafter = create(
            base, self.model, attack.eps, norm=attack.norm, seed=attack.seed, clip=attack.clip, **attack.settings
        )
        x_adv = crafter(x, y, examples=attack.examples)
        torch.save(x_adv.cpu(), path)
        self.crafted += 1
        return x_adv

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class TransferAttack(Attack):
    """Crafts on ``source`` (the run's :class:`SourceModel`) with the registered attack ``base``, under
    the same settings, seed and example indices."""

    base = ""

    def __init__(self, *args: Any, source: SourceModel | None = None, **settings: Any) -> None:
        super().__init__(*args, **settings)
        self.source = source

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.source is None:
            raise UserError(
                f"--attacks {self.name} needs --source-model NAME[=CHECKPOINT]: the model the images are crafted on"
            )
        return self.source.craft(self, self.base, x, y)


def register_transfer(base: type[Attack], name: str) -> type[TransferAttack]:
    """``transfer-<base>`` (registered as ``name``): ``base``'s images crafted on the source model and
    evaluated on each target, with ``base``'s defaults."""
    cls = type(f"Transfer{base.__name__}", (TransferAttack,), {"base": base.name})
    return registered_as(name)(cls)


TransferPGD = register_transfer(PGD, "transfer-pgd")
TransferAPGDCE = register_transfer(APGDCE, "transfer-apgd-ce")
