"""Models from outside the registry: ``hf-hub:<owner>/<repo>`` (timm models on the Hugging Face hub).
RobustBench's names (``robustbench:<name>``) are robeval.robustbench_ext's.

They resolve lazily: nothing is downloaded until a model is built, and an offline machine gets a
one-line :class:`~robeval.errors.UserError` instead of network retries.
"""

from __future__ import annotations

from torch import nn

from ..core.errors import UserError
from .hub import hub_architecture
from .registry import ModelSpec
from .weights import timm_weights


def hf_hub_spec(repo: str) -> ModelSpec:
    """The spec of ``hf-hub:<repo>`` (registered as a prefix in :mod:`.catalog`)."""
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise UserError(f"hf-hub model names look like hf-hub:OWNER/REPO, not hf-hub:{repo}")
    name = f"hf-hub:{repo}"

    def build() -> nn.Module:
        return hub_architecture(name)

    return ModelSpec(
        name, "hf-hub", build, weights=timm_weights(name), description=f"timm model from the Hugging Face hub ({repo})"
    )
