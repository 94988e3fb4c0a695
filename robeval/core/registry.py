"""The one registry type: named entries of one kind (models, attacks, protocols, attention kinds, shifts,
data sources, paper tables).  An entry that is data names its object by place, ``module:name``, imported on
first use (:func:`placed`), and a package's attributes are read the same way (PEP 562,
:func:`lazy_attributes`), so ``import robeval`` and ``robeval --help`` start without torch."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .errors import lookup

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """``registry.add(name, entry)`` once; ``registry.require(name)`` returns it or raises a
    :class:`~robeval.errors.UserError` (``get`` is Mapping's: ``None`` or a default for a missing name)."""

    def __init__(self, what: str, listed_by: str | None = None) -> None:
        self.what, self.listed_by = what, listed_by
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} registered twice")
        self._entries[name] = entry
        return entry

    def require(self, name: str) -> T:
        return lookup(self._entries, name, self.what, self.listed_by)

    def remove(self, name: str) -> None:
        """Take an entry out again (a test's temporary registration)."""
        del self._entries[name]

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


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
