"""Registry of model names -> builders (after timm's ``@register_model``).

A builder is ``builder(pretrained: bool, **options) -> nn.Module`` returning a network that expects
*normalized* input and carries a timm-style ``pretrained_cfg`` (mean, std, input size, ...).
Adding a model = writing one builder and decorating it; nothing else changes.
"""

from __future__ import annotations

import fnmatch
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from torch import nn

from ..errors import UserError, lookup

Builder = Callable[..., nn.Module]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str
    builder: Builder
    weights: str  # where weights come from when no --checkpoint is given
    has_default_weights: bool = True
    options: dict[str, Any] = field(default_factory=dict)  # option name -> default value
    description: str = ""
    adaptive: dict[str, Any] | None = None  # options that let attacks see through a data-dependent weight

    @property
    def is_adaptive(self) -> bool:
        """Whether ``--adaptive`` evaluates this model a second time with ``adaptive`` options."""
        return bool(self.adaptive)


_REGISTRY: dict[str, ModelSpec] = {}
_PREFIX_RESOLVERS: dict[str, Callable[[str], ModelSpec]] = {}


def register_model(
    name: str,
    *,
    family: str,
    weights: str,
    has_default_weights: bool = True,
    options: dict[str, Any] | None = None,
    adaptive: dict[str, Any] | None = None,
    description: str = "",
) -> Callable[[Builder], Builder]:
    """Decorator registering ``builder`` under ``name``.

    ``options`` (name -> default) are the keywords the builder accepts; when not given they are read
    from the builder's signature.  ``adaptive`` names the options with which attacks see through a
    data-dependent attention weight (``--adaptive`` evaluates the model again with them)."""

    def decorate(builder: Builder) -> Builder:
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} registered twice")
        opts = dict(options) if options is not None else signature_options(builder)
        unknown = sorted(set(adaptive or {}) - set(opts))
        if unknown:
            raise ValueError(f"model {name!r}: adaptive option {unknown[0]!r} is not one of its options")
        _REGISTRY[name] = ModelSpec(name, family, builder, weights, has_default_weights, opts, description,
                                    dict(adaptive) if adaptive else None)
        return builder

    return decorate


def signature_options(builder: Builder) -> dict[str, Any]:
    """The keyword parameters of ``builder`` other than ``pretrained``, with their defaults."""
    params = inspect.signature(builder).parameters.values()
    return {p.name: p.default for p in params if p.name != "pretrained" and p.default is not inspect.Parameter.empty}


def register_prefix(prefix: str) -> Callable[[Callable[[str], ModelSpec]], Callable[[str], ModelSpec]]:
    """Register a resolver for names like ``timm:<arch>`` that are not listed one by one."""

    def decorate(resolver: Callable[[str], ModelSpec]) -> Callable[[str], ModelSpec]:
        _PREFIX_RESOLVERS[prefix] = resolver
        return resolver

    return decorate


def list_models() -> list[ModelSpec]:
    return list(_REGISTRY.values())


def get_spec(name: str) -> ModelSpec:
    """The spec for ``name``; a :class:`UserError` with close suggestions when unknown."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix in _PREFIX_RESOLVERS:
        return _PREFIX_RESOLVERS[prefix](rest)
    return lookup(_REGISTRY, name, "model", "robeval models")


def expand_model_patterns(patterns: list[str]) -> list[str]:
    """Expand glob patterns (``digits-*``) against registered names, keeping order, no duplicates."""
    names: list[str] = []
    for pattern in patterns:
        if any(ch in pattern for ch in "*?[") and ":" not in pattern:
            matched = [n for n in _REGISTRY if fnmatch.fnmatchcase(n, pattern)]
            if not matched:
                raise UserError(f"model pattern {pattern!r} matches no registered model")
        else:
            matched = [pattern]
        names.extend(n for n in matched if n not in names)
    return names
