"""Which model names a run may give, judged without importing torch or any plugin: robeval's own
registrations (data), the names the installed plugins' entry points give (their names are data too:
a ``robeval.models`` entry point's name is the model's, a ``robeval.attention`` kind gives its family),
names with a resolver's prefix (``timm:``, ``hf-hub:``, ``robustbench:``, ``module:``: resolved when
the run is planned) and the user's own code (``PATH.py:CALLABLE``, its file checked).

A plugin's module is imported only when one of its models is built or everything is listed
(:mod:`.plugins`); :func:`get_spec` resolves a name to its spec (the user's code and a plugin's module
imported then)."""

from __future__ import annotations

import fnmatch
from functools import cache
from importlib import metadata

from ..core.defaults import PLUGIN_GROUPS
from ..core.errors import UserError, lookup
from ..references import PREFIX_NAMES, check_callable_named, check_reference_file, is_reference
from .catalog import family_names
from .registry import GIVEN, MODELS, PREFIXES, Lazy, ModelSpec

GLOB = "*?["
M = "robeval.models"


def package_of(entry: metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    return dist.name if dist is not None else "an unknown package"


@cache
def entry_points(group: str) -> dict[str, tuple[metadata.EntryPoint, ...]]:
    """The installed entry points of ``group`` by name (several under one name: a clash), read from the
    packages' metadata once per process (nothing imported: :mod:`.plugins` loads them)."""
    found: dict[str, list[metadata.EntryPoint]] = {}
    for entry in metadata.entry_points(group=group):
        same = found.setdefault(entry.name, [])
        if all(package_of(e) != package_of(entry) for e in same):  # one package installed twice on the path
            same.append(entry)
    return {name: tuple(entries) for name, entries in found.items()}


def plugin_names() -> list[str]:
    """The model names the installed plugins give, read from their entry points (nothing imported)."""
    models, kinds = (sorted(entry_points(group)) for group in PLUGIN_GROUPS)
    return [*models, *(name for kind in kinds for name in family_names(kind))]


def list_models() -> list[ModelSpec]:
    """Every registered model, the installed plugins' included (their modules imported now; none
    installed: nothing imported)."""
    if plugin_names():
        Lazy(f"{M}.plugins:load_all")()
    return list(MODELS.values())


def get_spec(name: str) -> ModelSpec:
    """The spec for ``name``: a registered model, a prefix's, the user's code or an installed plugin's
    (their modules imported now); a :class:`UserError` with close suggestions when unknown."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix in PREFIXES:
        return PREFIXES[prefix](rest)
    if name not in MODELS:
        if is_reference(name):
            return Lazy(f"{M}.user_code:reference_spec")(name)
        if name in plugin_names():
            return Lazy(f"{M}.plugins:resolve")(name)
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


def known_names() -> list[str]:
    """Every model name a run may give by name: registered ones (robeval's, or from Python), then plugins'."""
    return list(dict.fromkeys([*MODELS, *plugin_names()]))


def is_own_code(name: str) -> bool:
    """Whether ``name`` is a model of the user's code (a reference, or a module given from Python)."""
    return is_reference(name) or name.partition(":")[0] == GIVEN


def check_model_name(name: str) -> None:
    """One line for a model name no run could use: unknown (with the closest names), a pattern that
    matches none, a ``.py`` file without its callable, a reference to a file that does not exist."""
    if is_reference(name):
        check_reference_file(name)
    elif name.partition(":")[0] in PREFIX_NAMES and ":" in name:
        return
    elif any(ch in name for ch in GLOB):
        expand_model_patterns([name])
    else:
        check_callable_named(name)
        lookup(dict.fromkeys(known_names()), name, "model", "robeval models")


def expand_model_patterns(patterns: list[str]) -> list[str]:
    """Expand glob patterns (``digits-*``) against the known names, keeping order, no duplicates."""
    names: list[str] = []
    for pattern in patterns:
        if any(ch in pattern for ch in GLOB) and ":" not in pattern:
            matched = [n for n in known_names() if fnmatch.fnmatchcase(n, pattern)]
            if not matched:
                raise UserError(f"model pattern {pattern!r} matches no registered model")
        else:
            matched = [pattern]
        names.extend(n for n in matched if n not in names)
    return names


# Names that are not registered one by one: ``timm:``, ``hf-hub:`` and ``module:`` names (each module
# imported when such a name is first resolved).
PREFIXES.add("timm", Lazy(f"{M}.hub:timm_spec"))
PREFIXES.add("hf-hub", Lazy(f"{M}.hub:hf_hub_spec"))
PREFIXES.add(GIVEN, Lazy(f"{M}.user_code:module_spec"))
