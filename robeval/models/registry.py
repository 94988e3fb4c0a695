"""Registry of model names -> builders (after timm's ``@register_model``), with every fact about each.

A builder is ``builder(**options) -> nn.Module``: a randomly initialised network that expects
*normalized* input and carries a timm-style ``pretrained_cfg`` (mean, std, input size, ...).  Where
its weights come from is data on the registration (:class:`~.weights.Weights`), read by one loader.
Adding a model = writing one builder and decorating it; nothing else changes.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ..errors import UserError
from ..registry import Registry
from .weights import Weights

Builder = Callable[..., nn.Module]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str
    builder: Builder
    weights: Weights  # where weights come from when no --checkpoint is given
    options: dict[str, Any] = field(default_factory=dict)  # option name -> default value
    description: str = ""
    adaptive: dict[str, Any] | None = None  # options that let attacks see through a data-dependent weight

    @property
    def has_default_weights(self) -> bool:
        return self.weights.exists

    @property
    def is_adaptive(self) -> bool:
        """Whether ``--adaptive`` evaluates this model a second time with ``adaptive`` options."""
        return bool(self.adaptive)


MODELS: Registry[ModelSpec] = Registry("model", "robeval models")
PREFIXES: Registry[Callable[[str], ModelSpec]] = Registry("model name prefix")


def register_model(
    name: str,
    *,
    family: str,
    weights: Weights,
    options: dict[str, Any] | None = None,
    adaptive: dict[str, Any] | None = None,
    description: str = "",
) -> Callable[[Builder], Builder]:
    """Decorator registering ``builder`` under ``name``.

    ``options`` (name -> default) are the keywords the builder accepts; when not given they are read
    from the builder's signature.  ``adaptive`` names the options with which attacks see through a
    data-dependent attention weight (``--adaptive`` evaluates the model again with them)."""

    def decorate(builder: Builder) -> Builder:
        opts = dict(options) if options is not None else signature_options(builder)
        unknown = sorted(set(adaptive or {}) - set(opts))
        if unknown:
            raise ValueError(f"model {name!r}: adaptive option {unknown[0]!r} is not one of its options")
        MODELS.add(
            name, ModelSpec(name, family, builder, weights, opts, description, dict(adaptive) if adaptive else None)
        )
        return builder

    return decorate


def signature_options(builder: Builder) -> dict[str, Any]:
    """The keyword parameters of ``builder``, with their defaults."""
    params = inspect.signature(builder).parameters.values()
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def register_prefix(prefix: str) -> Callable[[Callable[[str], ModelSpec]], Callable[[str], ModelSpec]]:
    """Register a resolver for names like ``timm:<arch>`` that are not listed one by one."""

    def decorate(resolver: Callable[[str], ModelSpec]) -> Callable[[str], ModelSpec]:
        return PREFIXES.add(prefix, resolver)

    return decorate


def list_models() -> list[ModelSpec]:
    return list(MODELS.values())


def get_spec(name: str) -> ModelSpec:
    """The spec for ``name``; a :class:`UserError` with close suggestions when unknown."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix in PREFIXES:
        return PREFIXES[prefix](rest)
    return MODELS.get(name)


def expand_model_patterns(patterns: list[str]) -> list[str]:
    """Expand glob patterns (``digits-*``) against registered names, keeping order, no duplicates."""
    names: list[str] = []
    for pattern in patterns:
        if any(ch in pattern for ch in "*?[") and ":" not in pattern:
            matched = [n for n in MODELS if fnmatch.fnmatchcase(n, pattern)]
            if not matched:
                raise UserError(f"model pattern {pattern!r} matches no registered model")
        else:
            matched = [pattern]
        names.extend(n for n in matched if n not in names)
    return names
