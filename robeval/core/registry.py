"""The one registry type: named entries of one kind (models, attacks, protocols, attention kinds,
shifts, data sources, paper tables), each registered once and looked up with the one-line error every
registry gives for an unknown name (with the closest names suggested)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

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
