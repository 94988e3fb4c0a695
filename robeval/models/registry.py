"""Registry of model names -> builders (after timm's ``@register_model``), with every fact about each.

A builder is ``builder(**options) -> nn.Module``: a randomly initialised network that expects
*normalized* input.  What a network takes and gives (input size, classes, mean/std, interpolation,
crop: :class:`~robeval.model_config.ModelConfig`) and how many parameters it has are data on the
registration, as timm's pretrained configs are, so listings and checks read them without building a
network; where its weights come from is data too (:class:`~.weights.Weights`), read by one loader.

Torch-free: robeval's own registrations (:mod:`.catalog`) name their builders by place
(:class:`Lazy`: ``robeval.models.hub:timm_network`` with its arguments), imported when a network is
first built, so the command line lists and checks model names before torch loads.  A model defined in
Python registers its builder itself (``@register_model``).

The attention kinds (:class:`AttentionKind`, :data:`ATTENTION_KINDS`) are registered here too, as data: a
kind's options, which of them let attacks see through a data-dependent weight, the paper, the package;
its layer class and configure function may be named by place (``robeval.models.attention.kernel:
KDEAttention``), imported when a network is built (:func:`robeval.models.attention.kinds.layer_class`).
robeval's own kinds are registered in :mod:`.catalog`; a plugin's when it is loaded.

Other names (prefixes, the user's code, installed plugins) resolve in :func:`.names.get_spec`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ..core.registry import Registry, placed
from ..model_config import ModelConfig
from .parameter_counts import PARAMETER_COUNTS
from .weights import Weights

if TYPE_CHECKING:
    from torch import nn

Builder = Callable[..., "nn.Module"]


@dataclass(frozen=True)
class Lazy:
    """A function named by its place, ``module:name``, called with ``arguments`` (and the caller's):
    a builder or resolver of a registration that is data, imported when first called."""

    target: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return placed(self.target)(*args, **{**self.arguments, **kwargs})


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str
    builder: Builder
    weights: Weights  # where weights come from when no --checkpoint is given
    options: dict[str, Any] = field(default_factory=dict)  # option name -> default value
    description: str = ""
    adaptive: dict[str, Any] | None = None  # options that let attacks see through a data-dependent weight
    config: ModelConfig | None = None  # its image facts; None: read from the built network (user code, hub)
    params: int | None = None  # parameters, as data (tests check it against a meta-device build)
    package: str = "robeval"  # the distribution that registers it (a plugin's, for robeval models)
    reference: str | None = None  # the user's code it is built by: PATH.py:CALLABLE or PKG.MODULE:CALLABLE
    attention: str | None = None  # the registered attention kind its layers are (robeval.models.attention)

    @property
    def has_default_weights(self) -> bool:
        return self.weights.exists

    @property
    def is_adaptive(self) -> bool:
        """Whether ``--adaptive`` evaluates this model a second time with ``adaptive`` options."""
        return bool(self.adaptive)


MODELS: Registry[ModelSpec] = Registry("model", "robeval models")
PREFIXES: Registry[Callable[[str], ModelSpec]] = Registry("model name prefix")
GIVEN = "module"  # the prefix of a module given from Python: module:<label>@<hash> (robeval.models.given)


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


def register_model(
    name: str,
    *,
    family: str,
    weights: Weights,
    config: ModelConfig,
    options: dict[str, Any] | None = None,
    adaptive: dict[str, Any] | None = None,
    description: str = "",
    package: str = "robeval",
) -> Callable[[Builder], Builder]:
    """Decorator registering ``builder`` under ``name`` (see :func:`add_model`); ``options`` not given
    are read from the builder's signature."""

    def decorate(builder: Builder) -> Builder:
        opts = dict(options) if options is not None else signature_options(builder)
        add_model(name, builder, family=family, weights=weights, config=config, options=opts, adaptive=adaptive,
                  description=description, package=package)  # fmt: skip
        return builder

    return decorate


def add_model(
    name: str,
    builder: Builder,
    *,
    family: str,
    weights: Weights,
    config: ModelConfig,
    options: dict[str, Any],
    adaptive: dict[str, Any] | None = None,
    description: str = "",
    package: str = "robeval",
    attention: str | None = None,
) -> ModelSpec:
    """Register a model: ``config``, what the network takes and gives (every field stated); ``options``
    (name -> default), the keywords the builder accepts; ``adaptive``, the options with which attacks see
    through a data-dependent attention weight (``--adaptive`` evaluates the model again with them);
    ``attention``, the registered attention kind its layers are, if one.  The
    parameter count is read from :data:`~.parameter_counts.PARAMETER_COUNTS` (a plugin's models have none there)."""
    unknown = sorted(set(adaptive or {}) - set(options))
    if unknown:
        raise ValueError(f"model {name!r}: adaptive option {unknown[0]!r} is not one of its options")
    spec = ModelSpec(
        name, family, builder, weights, dict(options), description, dict(adaptive) if adaptive else None, config,
        PARAMETER_COUNTS.get(name) if package == "robeval" else None, package, attention=attention,
    )  # fmt: skip
    return MODELS.add(name, spec)


def signature_options(builder: Builder) -> dict[str, Any]:
    """The keyword parameters of ``builder``, with their defaults."""
    params = inspect.signature(builder).parameters.values()
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
