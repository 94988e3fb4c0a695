"""What the engine needs of the store it writes a run to, as a type: the results store
(:class:`robeval.results.store.Store`, a layer above) has these methods, and the engine is checked
against them without importing it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from ..results.records import Unit, UnitCurve


class RunStore(Protocol):
    """A results store the engine creates, resumes and fills a run in (robeval.results.store.Store)."""

    path: Path

    # runs: created, resumed (held by this process), described and let go
    def create_run(self, config: dict[str, Any], info: dict[str, Any], protocol: str) -> str: ...
    def ensure_run(self, run_id: str, config: dict[str, Any], protocol: str) -> None: ...
    def run(self, run_id: str) -> dict[str, Any]: ...
    def unfinished_runs(self) -> list[tuple[str, dict[str, Any]]]: ...
    def hold(self, run_id: str) -> None: ...
    def update_run(self, run_id: str, **fields: Any) -> None: ...
    def release(self, run_id: str, **fields: Any) -> None: ...

    # a distributed run's workers write files of their own, merged into the store
    def worker_path(self, rank: int) -> Path: ...
    def worker_paths(self) -> list[Path]: ...
    def merge_from(self, other: str | Path, run_id: str) -> int: ...

    # units: each finished one written with its records and curve (the resume point)
    def write_units(
        self,
        run_id: str,
        units: Iterable[tuple[Unit, float]],
        records: dict[str, list],
        curves: Iterable[tuple[Unit, UnitCurve]] = (),
    ) -> None: ...
    def done_units(self, run_id: str) -> set[Unit]: ...
