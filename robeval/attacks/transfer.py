"""Transfer attacks: adversarial images crafted on a source model (``--source-model NAME[=CHECKPOINT]``)
by a registered white-box attack, then evaluated on each target model — the classic test for
gradient masking (a target whose transfer accuracy is below its white-box accuracy has gradients
that mislead white-box attacks).

A run crafts each batch once: the first target that needs a (attack, eps, examples) triple crafts it
on the source and keeps the images in a cache on disk; every other target of the run reads them
back, so N targets cost one crafting pass plus N evaluations (benchmarks/transfer.py).  The
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

from ..errors import UserError
from .autoattack import APGD_DEFAULTS
from .base import PER_EXAMPLE, Attack
from .registry import create, register_attack


class SourceModel:
    """The source model of a run (loaded once) and the images crafted on it (on disk)."""

    def __init__(self, model: torch.nn.Module, label: str) -> None:
        self.model, self.label = model, label
        self.folder = Path(tempfile.mkdtemp(prefix="robeval-transfer-"))
        self.crafted = 0  # crafting calls made (benchmarks and tests read it)

    def craft(self, attack: Attack, base: str, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        key = hashlib.sha256(repr((base, attack.eps, attack.norm, attack.seed, attack.examples,
                                   sorted(attack.settings.items()), tuple(x.shape))).encode()).hexdigest()[:24]
        path = self.folder / f"{key}.pt"
        if path.exists():
            return torch.load(path, map_location=x.device, weights_only=True)  # a tensor we wrote; never unpickle code
        crafter = create(base, self.model, attack.eps, norm=attack.norm, seed=attack.seed, clip=attack.clip,
                         **attack.settings)
        x_adv = crafter(x, y, examples=attack.examples)
        torch.save(x_adv.cpu(), path)
        self.crafted += 1
        return x_adv

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


_SOURCES: dict[Any, SourceModel] = {}


def source_model(spec: str, device: torch.device, trust_checkpoint: bool = False, pretrained: bool = True,
                 seed: int = 0) -> SourceModel:
    """The loaded source for ``NAME[=CHECKPOINT]`` on ``device`` (one per process and spec); with
    ``pretrained=False`` (``--weights random``) a network seeded by ``seed``, the same in every run."""
    key = (spec, str(device), pretrained)
    if key not in _SOURCES:
        from ..models import load_model

        name, _, checkpoint = spec.partition("=")
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = load_model(name, checkpoint=checkpoint or None, trust_checkpoint=trust_checkpoint, device=device,
                               pretrained=pretrained)
        _SOURCES[key] = SourceModel(model, spec)
    return _SOURCES[key]


def release_sources() -> None:
    """Drop the loaded sources and their crafted images (end of a run)."""
    for source in _SOURCES.values():
        source.close()
    _SOURCES.clear()


class TransferAttack(Attack):
    base = ""
    source: SourceModel | None = None  # set by the engine from --source-model

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.source is None:
            raise UserError(f"--attacks {self.name} needs --source-model NAME[=CHECKPOINT]: the model the images are crafted on")
        return self.source.craft(self, self.base, x, y)


@register_attack("transfer-pgd", title="Transfer PGD", norms=("Linf", "L2"), kind="transfer", in_suite=False,
                 implementation="robeval PGD on --source-model, evaluated on the target", randomness=PER_EXAMPLE,
                 defaults=dict(steps=20, rel_stepsize=0.25, random_start=True, eot_iter=1),
                 description="PGD crafted on the source model (--source-model), evaluated on each target")
class TransferPGD(TransferAttack):
    name = "transfer-pgd"
    base = "pgd"


@register_attack("transfer-apgd-ce", title="Transfer APGD-CE", norms=("Linf", "L2"), kind="transfer", in_suite=False,
                 implementation="AutoAttack APGD-CE on --source-model, evaluated on the target", randomness=PER_EXAMPLE,
                 defaults=APGD_DEFAULTS,
                 description="APGD-CE crafted on the source model (--source-model), evaluated on each target")
class TransferAPGDCE(TransferAttack):
    name = "transfer-apgd-ce"
    base = "apgd-ce"
