"""The registry of attention kinds, torch-free: a kind's facts (its options, which of them let attacks
see through a data-dependent weight, the paper, the package) are data, and its layer class and
configure function may be named by place (``robeval.models.attention.kernel:KDEAttention``), imported
when a network is built (:func:`robeval.models.attention.kinds.layer_class`).  robeval's own kinds are
registered in :mod:`robeval.models.catalog`; a plugin's when it is loaded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from ...core.registry import Registry


@dataclass(frozen=True)
class AttentionKind:
    name: str  # e.g. "kde"; models are deit-<size>-<name> and digits-deit-<name>
    layer: type | str  # the layer class, or its place "module:Class"
    what: str  # a phrase for the model description: "<arch> with <what> attention (<source>)"
    source: str
    options: dict[str, Any] = field(default_factory=dict)
    configure: Optional[Callable[..., Any] | str] = None  # configure(net, **options) on a built network (or its place)
    adaptive: Optional[dict[str, Any]] = None
    package: str = "robeval"  # the distribution that registers it (a plugin's)


ATTENTION_KINDS: Registry[AttentionKind] = Registry("attention kind", "robeval models")


def register_kind(kind: AttentionKind) -> AttentionKind:
    if kind.options and kind.configure is None:
        raise ValueError(f"attention kind {kind.name!r} has options but no configure function")
    return ATTENTION_KINDS.add(kind.name, kind)
