"""Objects named by ``module:name`` and imported on first use: a registration that is data names its
class or function this way, and a package's attributes are read this way (PEP 562), so ``import robeval``
and a light command such as ``robeval --help`` start without torch while ``from robeval import evaluate``
still works.  Imports nothing of robeval's."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def placed(target: str, package: str | None = None) -> Any:
    """The object at ``module:name`` (its module imported now; a relative module is relative to
    ``package``; no ``:name``: the module itself): how a registration that is data names its class or
    function, read only when it is first used (as an entry point names its object)."""
    module, _, name = target.partition(":")
    imported = importlib.import_module(module, package)
    return getattr(imported, name) if name else imported


def lazy_attributes(package: str, places: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``places`` maps each name to ``".module:attribute"``
    (or ``".module"``, the module itself), imported when the name is first asked for."""

    def module_getattr(name: str) -> Any:
        if name not in places:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return placed(places[name], package)

    return module_getattr
