"""timm's networks, and their weights and configurations from the Hugging Face hub; the names that
reach any of them: ``timm:<arch>`` (any timm architecture) and ``hf-hub:<owner>/<repo>`` (timm models on
the hub), registered as prefixes in :mod:`.names`.  RobustBench's names (``robustbench:<name>``) are
robeval.robustbench_ext's.

They resolve lazily: nothing is downloaded until a model is built.  One place for the offline case: a
machine without the hub uses timm's local cache only (no network retries) and an absent entry becomes a
one-line :class:`~robeval.errors.UserError`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial
from typing import Any

import timm
from torch import nn

from ..core.errors import UserError
from ..model_config import ModelConfig
from .registry import ModelSpec
from .weights import Loaded, timm_weights

HUB_HOST = ("huggingface.co", 443)


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face hub answers at all (so an offline machine fails fast, without retries)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    try:
        with socket.create_connection(HUB_HOST, timeout=timeout):
            return True
    except OSError:
        return False


@contextmanager
def hub_offline(offline: bool):
    """Make huggingface_hub use its local cache only (no retries against an unreachable network)."""
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - timm depends on it
        yield
        return
    saved = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = saved or offline
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved


def from_hub(make: Callable[[], Any], what: str, advice: str) -> Any:
    """``make()`` with the hub if it answers, else from the local cache; failures become one line."""
    online = hub_reachable()
    try:
        with hub_offline(not online):
            return make()
    except Exception as exc:  # network, hub or cache errors all mean: not available here
        reason = (
            "offline and not in the local cache"
            if not online
            else (str(exc).splitlines()[0][:120] or type(exc).__name__)
        )
        raise UserError(f"could not get {what} ({reason}){advice}") from None


def pretrained_state(arch: str) -> Loaded:
    """timm's pretrained weights of ``arch`` (the ``timm`` weight source: the hub, or its local cache), from no
    file of robeval's; otherwise a one-line error naming --checkpoint."""
    net = from_hub(
        lambda: timm.create_model(arch, pretrained=True),
        f"pretrained weights for timm model {arch!r}",
        "; pass --checkpoint PATH with a local .pth/.safetensors file",
    )
    return net.state_dict(), None


def timm_config(arch: str) -> ModelConfig | None:
    """timm's own facts for ``arch`` (its default pretrained config: data, nothing is built or downloaded);
    None for an architecture timm has no config for."""
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg(arch)
    if cfg is None:
        return None
    return ModelConfig.from_cfg(cfg.to_dict())


def timm_network(arch: str) -> nn.Module:
    """timm's ``arch``, randomly initialised (DeiT, distilled DeiT, ``timm:<arch>``)."""
    return timm.create_model(arch, pretrained=False)


def timm_spec(arch: str) -> ModelSpec:
    """The spec of ``timm:<arch>``: any timm architecture, its facts timm's pretrained config."""
    if arch not in timm.list_models():
        hint = timm.list_models(f"*{arch}*")[:3]
        extra = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise UserError(f"unknown timm architecture {arch!r}{extra}")
    build = partial(timm_network, arch)
    return ModelSpec(f"timm:{arch}", "timm", build, weights=timm_weights(arch), config=timm_config(arch))


def hf_hub_spec(repo: str) -> ModelSpec:
    """The spec of ``hf-hub:<repo>``: its network randomly initialised (timm still reads its config from the
    hub or its cache)."""
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise UserError(f"hf-hub model names look like hf-hub:OWNER/REPO, not hf-hub:{repo}")
    name = f"hf-hub:{repo}"
    build = partial(from_hub, partial(timm.create_model, name, pretrained=False), f"the configuration of {name!r}", "")
    return ModelSpec(
        name, "hf-hub", build, weights=timm_weights(name), description=f"timm model from the Hugging Face hub ({repo})"
    )
