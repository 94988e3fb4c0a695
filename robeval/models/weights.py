"""Where a model's weights come from when no ``--checkpoint`` is given: data on its registration
(a timm or hub name, an embedded file, none), read by one loader.  Builders only build networks.

A source kind is a registration too: ``timm`` (the Hugging Face hub through timm, or its local
cache), ``embedded`` (``robeval/zoo/<name>.safetensors``); robeval.robustbench_ext adds
``robustbench``.  Every loader returns a state dict, which is loaded strictly into the built network, and
the file it read it from (read once: robeval.models.checkpoint.open_checkpoint), if any.
Torch-free to import: a registration states its weights without loading torch (listings, checks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.errors import UserError
from ..core.registry import Registry
from ..zoo import zoo_path

if TYPE_CHECKING:
    import torch
    from torch import nn

    from .checkpoint import OpenedCheckpoint


@dataclass(frozen=True)
class Weights:
    kind: str  # a registered source kind, or "none" (users bring a checkpoint)
    source: str = ""  # what the kind reads: a timm/hub name, an embedded model's name, a RobustBench entry
    note: str = ""  # said after the source in listings ("ImageNet-1k", "the authors' releases load strictly")

    @property
    def exists(self) -> bool:
        return self.kind != "none"

    def describe(self) -> str:
        where = {
            "timm": f"timm hub: {self.source}",
            "embedded": f"embedded: robeval/zoo/{self.source}.safetensors",
            "none": "none public: --checkpoint",
        }.get(self.kind, f"{self.kind}: {self.source}")
        return where + (f" ({self.note})" if self.note else "")


NO_WEIGHTS = Weights("none")


def timm_weights(name: str, note: str = "") -> Weights:
    return Weights("timm", name, note)


def embedded_weights(name: str) -> Weights:
    return Weights("embedded", name)


Loaded = tuple[dict[str, "torch.Tensor"], "OpenedCheckpoint | None"]  # state dict, the file it came from
Loader = Callable[[str], Loaded]
WEIGHT_SOURCES: Registry[Loader] = Registry("weight source")


def _timm(name: str) -> Loaded:
    from .hub import timm_pretrained

    return timm_pretrained(name).state_dict(), None


def _embedded(name: str) -> Loaded:
    from .checkpoint import open_checkpoint

    path = zoo_path(name)
    if not path.exists():
        raise UserError(f"embedded checkpoint {path.name} is missing; run scripts/train_demo_models.py {name}")
    opened = open_checkpoint(path)
    return dict(opened.state), opened


WEIGHT_SOURCES.add("timm", _timm)
WEIGHT_SOURCES.add("embedded", _embedded)


def load_default_weights(net: nn.Module, name: str, weights: Weights) -> OpenedCheckpoint | None:
    """Load ``weights`` into ``net`` (model ``name``) strictly; returns the file they came from, if any."""
    from .checkpoint import load_state_dict_strict

    if not weights.exists:
        raise UserError(f"{name} has no public weights; pass --checkpoint {name}=PATH")
    state, opened = WEIGHT_SOURCES.require(weights.kind)(weights.source)
    load_state_dict_strict(net, state, name, f"{weights.describe()}")
    return opened
