"""Registry of model names -> builders (after timm's ``@register_model``), with every fact about each.

A builder is ``builder(**options) -> nn.Module``: a randomly initialised network that expects
*normalized* input.  What a network takes and gives (input size, classes, mean/std, interpolation,
crop: :class:`~robeval.model_config.ModelConfig`) and how many parameters it has are data on the
registration, as timm's pretrained configs are, so listings and checks read them without building a
network; where its weights come from is data too (:class:`~.weights.Weights`), read by one loader.

Torch-free: robeval's own registrations (:mod:`.catalog`) name their builders by place
(:class:`Lazy`: ``robeval.models.deit:timm_network`` with its arguments), imported when a network is
first built, so the command line lists and checks model names before torch loads.  A model defined in
Python registers its builder itself (``@register_model``).

Names not registered one by one resolve through prefixes (``timm:<arch>``) and through extensions,
tried in turn when a name is not registered: installed plugins (:mod:`.plugins`) and the user's own
code (``PATH.py:CALLABLE``, ``PKG.MODULE:CALLABLE``; :mod:`.user_code`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import UserError
from ..core.lazy import placed
from ..core.registry import Registry
from ..model_config import ModelConfig
from ..references import check_callable_named, is_reference
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
class Extension:
    """Where names come from that are not registered at import: ``resolve(name)`` gives the spec (or
    None when the name is not its), ``load_all()`` registers everything it has (for listings)."""

    resolve: Callable[[str], ModelSpec | None]
    load_all: Callable[[], None]


EXTENSIONS: Registry[Extension] = Registry("model source")


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


def list_models() -> list[ModelSpec]:
    """Every registered model, the installed plugins' included (loaded now)."""
    for extension in EXTENSIONS.values():
        extension.load_all()
    return list(MODELS.values())


def get_spec(name: str) -> ModelSpec:
    """The spec for ``name``; a :class:`UserError` with close suggestions when unknown."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix in PREFIXES:
        return PREFIXES[prefix](rest)
    if name not in MODELS:
        for extension in EXTENSIONS.values():
            spec = extension.resolve(name)
            if spec is not None:
                return spec
        check_callable_named(name)
    return MODELS.require(name)


def registered_spec(name: str) -> ModelSpec | None:
    """The registration behind a stored run's model name, or None; found without importing any code of
    the user's (a name that is a ``PATH.py:CALLABLE`` reference has none): what readers of stored runs
    (tables, the report, the checklist) ask, so reading a run never runs code it names."""
    if is_reference(name):
        return None
    try:
        return get_spec(name)
    except UserError:
        return None
