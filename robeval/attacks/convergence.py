"""Convergence curves: how many examples an attack leaves robust along its iterations or queries,
seen in the forward passes the attack makes anyway (no pass of its own).  What a point counts (a
running best; the last point includes the records' own pass) and why PGD's curve may end below its
records: docs/soundness.md, section "Did the attack converge?".

An attack whose class sets ``curve_axis`` says how the positions count (``iterations`` or
``queries``) and which setting sets their number (``curve_setting``).  The caller wraps the model in
a :class:`CurveWatch`; where every call is the next iteration (PGD; ``every`` passes per iteration
under EOT) the positions are read from outside, and an attack whose calls mix its iterations with
other passes marks them (``marks_positions``) with :func:`reading_at`, Square with :func:`queries`
then :func:`fell`.  On a model that is not watched these are no-ops.  The positions are integers:
with a budget under 20 some points share a position (PGD with 5 steps: points 16 to 19 are all step 4).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from .registry import CURVE_POINTS


def grid(budget: int) -> list[int]:
    """The positions a curve is kept at: the start, then every ``1 / CURVE_POINTS`` of ``budget``."""
    return [j * budget // CURVE_POINTS for j in range(CURVE_POINTS + 1)]


class Fooling:
    """One attack call's observation: per row, the first position at which a point it evaluated fooled
    the row (inf: none did)."""

    def __init__(self, n: int, device: torch.device) -> None:
        self.first = torch.full((n,), math.inf, dtype=torch.float64, device=device)

    def see(self, position: float, logits: torch.Tensor, y: torch.Tensor, rows: torch.Tensor | None = None) -> None:
        """The logits of the points at ``position`` for the call's ``rows`` (all rows when None)."""
        self.mark(position, logits.detach().argmax(1) != y, rows)

    def mark(self, position: float, fooled: torch.Tensor, rows: torch.Tensor | None = None) -> None:
        """Rows (of ``rows``) that ``fooled`` says a point at ``position`` fooled."""
        fooled = fooled.to(self.first.device)
        idx = fooled.nonzero().squeeze(1) if rows is None else rows.to(self.first.device)[fooled]
        self.first[idx] = self.first[idx].clamp(max=position)

    def fell(self, rows: torch.Tensor, positions: list[float]) -> None:
        """``rows`` were fooled, at ``positions`` in some order (an attack whose passes tell how many
        rows were still robust at each query, not which): the counts along the curve are exact."""
        at = torch.tensor(positions[: len(rows)], dtype=torch.float64, device=self.first.device)
        at = torch.cat([at, at.new_full((len(rows) - len(at),), positions[-1] if positions else 0.0)])
        self.first[rows] = torch.minimum(self.first[rows], at)


def robust_along(observed: list[Fooling], budget: int, robust: torch.Tensor) -> list[int] | None:
    """Examples robust at each :func:`grid` position of ``budget``: the observations of an attack's
    calls joined, then the returned points, ``robust`` as the records judge them, seen last (at the
    end of the budget).  None when the observations do not cover the rows (a call was not watched)."""
    if not observed or sum(len(f.first) for f in observed) != len(robust):
        return None
    seen = Fooling(0, observed[0].first.device)  # the calls (a batch split in halves) as one, rows in order
    seen.first = torch.cat([f.first for f in observed])
    seen.mark(budget, ~robust)
    return [int((seen.first > p).sum()) for p in grid(budget)]  # rows no point up to p fooled


class CurveWatch(nn.Module):
    """``model`` as an attack with a convergence curve crafts on: during each :meth:`reading` (one
    attack call on labels ``y``) the logits of its forward calls tell a :class:`Fooling`.  Unless the
    attack ``marked`` its positions, call ``c`` is position ``c // every`` for every row (the last of
    each ``every`` passes: EOT's, as APGD's own robust accuracy reads it)."""

    def __init__(self, model: nn.Module, every: int = 1, marked: bool = False) -> None:
        super().__init__()
        self.model, self.every, self.marked = model, max(1, every), marked
        self.fooling: Fooling | None = None
        self.y = torch.empty(0)
        self.stretch: tuple[int, torch.Tensor | None] | None = None  # (offset, rows) of the calls now read
        self.sizes: list[int] | None = None  # while counting queries: each call's rows
        self.calls = 0

    @classmethod
    def for_attack(cls, model: nn.Module, attack: type, settings: dict) -> CurveWatch:
        """The watch an attack of class ``attack`` with ``settings`` crafts on (EOT's passes per iteration)."""
        return cls(model, settings.get("eot_iter", 1), getattr(attack, "marks_positions", False))

    @contextmanager
    def reading(self, y: torch.Tensor) -> Iterator[Fooling]:
        self.fooling, self.y, self.calls = Fooling(len(y), y.device), y, 0
        self.stretch = None if self.marked else (0, None)
        try:
            yield self.fooling
        finally:
            self.fooling, self.stretch, self.sizes = None, None, None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(x)
        if self.sizes is not None:
            self.sizes.append(len(x))
        elif self.stretch is not None and self.fooling is not None:
            offset, rows = self.stretch
            if (self.calls + 1) % self.every == 0:
                y = self.y if rows is None else self.y[rows]
                self.fooling.see(offset + self.calls // self.every, out[: len(y)], y, rows)
            self.calls += 1
        return out


def is_watched(model: object) -> bool:
    """Whether ``model`` reads a convergence curve (an attack that skips evaluating its iterates then
    evaluates them: SPSA's authors' procedure)."""
    return isinstance(model, CurveWatch) and model.fooling is not None


@contextmanager
def reading_at(model: object, position: int, rows: torch.Tensor | None = None) -> Iterator[None]:
    """The forward calls of ``model`` in the block evaluate points of ``rows`` (None: every row; a call's
    first rows when it has more) at ``position``, the next ones at ``position + 1``, ... (one per
    ``every`` calls).  Nothing unless ``model`` is watched."""
    if not is_watched(model):
        yield
        return
    assert isinstance(model, CurveWatch)
    model.stretch, model.calls = (position, rows), 0
    try:
        yield
    finally:
        model.stretch = None


@contextmanager
def queries(model: object) -> Iterator[list[int]]:
    """The rows of each forward call of ``model`` in the block, listed (empty unless ``model`` is watched)."""
    sizes: list[int] = []
    if not is_watched(model):
        yield sizes
        return
    assert isinstance(model, CurveWatch)
    model.sizes = sizes
    try:
        yield sizes
    finally:
        model.sizes = None


def fell(model: object, rows: torch.Tensor, sizes: list[int], offset: int) -> None:
    """A watched stretch of queries (:func:`queries`) fooled ``rows``: query ``k`` (position ``offset + k``)
    was sent the ``sizes[k - 1]`` rows still robust before it, so ``sizes[k - 1] - sizes[k]`` fell at it
    (``sizes`` ends with the rows robust after the stretch)."""
    if not is_watched(model):
        return
    assert isinstance(model, CurveWatch) and model.fooling is not None
    counts = [max(0, a - b) for a, b in zip(sizes, sizes[1:])]
    model.fooling.fell(rows, [float(offset + k + 1) for k, n in enumerate(counts) for _ in range(n)])


@contextmanager
def reading(model: object, y: torch.Tensor) -> Iterator[Fooling | None]:
    """One attack call on labels ``y`` read by ``model`` when it is a :class:`CurveWatch` (None otherwise)."""
    if not isinstance(model, CurveWatch):
        yield None
        return
    with model.reading(y) as fooling:
        yield fooling
