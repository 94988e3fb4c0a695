"""Where a model's weights come from when no ``--checkpoint`` is given: data on its registration
(a timm or hub name, an embedded file, none), read by one loader.  Builders only build networks.

A source kind names its loader (:data:`WEIGHT_SOURCES`): ``timm`` (the Hugging Face hub through timm, or
its local cache), ``embedded`` (``robeval/zoo/<name>.safetensors``); robeval.robustbench_ext adds
``robustbench``.  Every loader returns a state dict, which is loaded strictly into the built network, and
the file it read it from (read once: robeval.models.checkpoint.open_checkpoint), if any.
Torch-free to import: a registration states its weights without loading torch (listings, checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

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
# source kind -> its loader (``loader(source) -> Loaded``), named by place and imported when weights are
# loaded (robeval.models.loading.load_default_weights); robeval.robustbench_ext adds ``robustbench``
WEIGHT_SOURCES: dict[str, str] = {
    "timm": "robeval.models.hub:pretrained_state",
    "embedded": "robeval.models.loading:embedded_state",
}
