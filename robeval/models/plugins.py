"""Models and attention kinds from installed packages, through entry points (groups ``robeval.models`` and
``robeval.attention``: docs/models.md, section Your own model), read lazily, as pytest reads its plugins.

An entry point is loaded only when one of its models is asked for or everything is listed.  A plugin
that fails to import is one warning naming it (every other model still works); two packages giving
one name (or a package giving one of robeval's own) is one line naming both.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from importlib import metadata
from typing import Any

from torch import nn

from ..core.defaults import PLUGIN_GROUPS
from ..core.errors import USER_CODE_RAISES, PluginWarning, UserError, raised
from .attention.kinds import ATTENTION_KINDS, AttentionKind, layer_class, register_kind, takes_timm_calls
from .catalog import family_names, register_family
from .names import entry_points, package_of
from .registry import MODELS, ModelSpec
from .user_code import code_spec, describe

MODEL_GROUP, ATTENTION_GROUP = PLUGIN_GROUPS
_FAILED: dict[tuple[str, str], str] = {}  # (group, name) -> the one line said about it


def robevals_own(group: str, name: str) -> bool:
    """Whether robeval itself registers ``name`` (a model, or an attention kind)."""
    registry: Any = MODELS if group == MODEL_GROUP else ATTENTION_KINDS
    return name in registry and registry[name].package == "robeval"


def clash(group: str, name: str) -> str | None:
    """The line saying who gives ``name`` twice (two packages, or a package and robeval), or None."""
    packages = [package_of(e) for e in entry_points(group).get(name, ())]
    if robevals_own(group, name) and packages:
        packages = ["robeval", *packages]
    if len(packages) < 2:
        return None
    what = "model" if group == MODEL_GROUP else "attention kind"
    return f"{what} {name!r} is registered by two packages, {packages[0]} and {packages[1]}: uninstall one"


def load(group: str, name: str) -> tuple[metadata.EntryPoint, Any]:
    """The entry point ``name`` of ``group`` and its object; a UserError if it cannot be had."""
    problem = clash(group, name)
    if problem:
        raise UserError(problem)
    (entry,) = entry_points(group)[name]
    try:
        return entry, entry.load()
    except USER_CODE_RAISES as exc:  # the plugin's own code (a SystemExit in it included)
        raise UserError(
            f"plugin {package_of(entry)} ({group} entry point {name} = {entry.value}) failed to import: {raised(exc)}"
        ) from None


def _model_spec(name: str) -> ModelSpec:
    entry, target = load(MODEL_GROUP, name)
    spec = code_spec(name, entry.value, lambda: target, package_of(entry), describe(target))
    MODELS.add(name, spec)
    return spec


def as_kind(name: str, target: Any, package: str) -> AttentionKind:
    """A kind from an entry point's object: an AttentionKind (renamed to the entry point's name) or a layer class."""
    if isinstance(target, AttentionKind):
        return replace(target, name=name, package=package, layer=takes_timm_calls(layer_class(target)))
    if isinstance(target, type) and issubclass(target, nn.Module):
        return AttentionKind(name, takes_timm_calls(target), name, f"plugin {package}", package=package)
    raise UserError(
        f"attention kind {name} of {package} is a {type(target).__name__}: give an attention layer class "
        "(timm's Attention constructor and forward(x, attn_mask=None)) or a robeval AttentionKind"
    )


def _register_kind(kind_name: str) -> None:
    """The plugin kind ``kind_name`` and its family registered (once)."""
    if kind_name in ATTENTION_KINDS and not robevals_own(ATTENTION_GROUP, kind_name):
        return
    entry, target = load(ATTENTION_GROUP, kind_name)  # a clash with robeval's own kind is raised here
    package = package_of(entry)
    taken = [m for m in family_names(kind_name) if m in MODELS]
    if taken:
        raise UserError(
            f"attention kind {kind_name!r} of {package} would give {taken[0]}, a model robeval registers "
            "itself: name the kind otherwise"
        )
    try:
        kind = register_kind(as_kind(kind_name, target, package))
    except ValueError as exc:
        raise UserError(f"attention kind {kind_name} of {package}: {exc}") from None
    register_family(kind)


def kind_of(model_name: str) -> str | None:
    """The plugin kind a family name (``digits-deit-K``, ``deit-<size>-K``) belongs to, if any."""
    return next((k for k in entry_points(ATTENTION_GROUP) if model_name in family_names(k)), None)


def resolve(name: str) -> ModelSpec | None:
    """The plugin model ``name`` (registered now), or None when no plugin gives it."""
    if name in entry_points(MODEL_GROUP):
        return MODELS[name] if name in MODELS else _model_spec(name)
    kind = kind_of(name)
    if kind is None:
        return None
    _register_kind(kind)
    return MODELS.require(name)


def _warn_once(group: str, name: str, problem: str) -> None:
    if _FAILED.get((group, name)) != problem:
        _FAILED[(group, name)] = problem
        warnings.warn(f"{problem}; the other models work", PluginWarning, stacklevel=3)


def load_all() -> None:
    """Every plugin model and kind registered; a plugin that cannot be had is one warning."""
    for name in entry_points(MODEL_GROUP):
        try:
            if name not in MODELS or robevals_own(MODEL_GROUP, name):
                _model_spec(name)  # a clash with robeval's own model is raised here
        except UserError as exc:
            _warn_once(MODEL_GROUP, name, str(exc))
    for kind in entry_points(ATTENTION_GROUP):
        try:
            _register_kind(kind)
        except UserError as exc:
            _warn_once(ATTENTION_GROUP, kind, str(exc))
