"""Convergence curves: how many examples an attack leaves robust along its iterations or queries,
seen in the forward passes the attack makes anyway (no pass of its own).

Semantics (running best): the curve at position ``t`` of the attack's budget counts the examples that
no point the attack evaluated up to ``t`` fooled (top-1 no longer the label, as the records judge
it).  Position 0 is the attack's starting point (the clean image, or its random start); an attack
whose class sets ``curve_axis`` says how the positions count (``iterations``: gradient or SPSA
steps, APGD's counted over its restarts and targets; ``queries``: Square's model queries) and which
setting sets their number (``curve_setting``).  An attack tells its observation through
:meth:`robeval.attacks.base.Attack.saw`; attacks from AutoAttack's code are watched through
:class:`Watched`, a thin wrapper around the model their code calls.

The end of the budget also counts the records' own pass on the returned points, so the curve's last
point is the number of examples robust in the records *and* never fooled on the way.  For APGD,
SPSA (with ``keep_best``, its default) and Square, which return a fooling point whenever they found
one, that is the records' robust count; PGD and SPSA without ``keep_best`` (the authors' procedure,
under ``nielsen2024``) return their last iterate, so their curve may end below their records by the
examples an earlier iterate fooled and the last one did not.  The positions are integers: with a budget under
20 some points share a position (PGD with 5 steps: points 16 to 19 are all step 4).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

ITERATIONS, QUERIES = "iterations", "queries"
CURVE_POINTS = 20  # a curve's points after its start: every 5% of the budget (so its last tenth is 2 points)


def grid(budget: int) -> list[int]:
    """The positions a curve is kept at: the start, then every ``1 / CURVE_POINTS`` of ``budget``."""
    return [j * budget // CURVE_POINTS for j in range(CURVE_POINTS + 1)]


class Fooling:
    """One attack call's observation: per row, the first position at which a point it evaluated fooled
    the row (inf: none did)."""

    def __init__(self, n: int, device: torch.device) -> None:
        self.first = torch.full((n,), math.inf, dtype=torch.float64, device=device)

    @classmethod
    def joined(cls, parts: list[Fooling]) -> Fooling:
        """The observations of consecutive calls (a batch split in halves) as one, rows in order."""
        out = cls(0, parts[0].first.device)
        out.first = torch.cat([p.first for p in parts])
        return out

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

    def robust_at(self, positions: list[int]) -> list[int]:
        """Rows not fooled by any point up to each of ``positions``."""
        return [int((self.first > p).sum()) for p in positions]


def robust_along(observed: list[Fooling], budget: int, robust: torch.Tensor) -> list[int] | None:
    """Examples robust at each :func:`grid` position of ``budget``: the observations of an attack's
    calls joined, then the returned points, ``robust`` as the records judge them, seen last (at the
    end of the budget).  None when the observations do not cover the rows (a call was not watched)."""
    if not observed or sum(len(f.first) for f in observed) != len(robust):
        return None
    seen = Fooling.joined(observed)
    seen.mark(budget, ~robust)
    return seen.robust_at(grid(budget))


class Watched:
    """``model`` as a library attack's code calls it: ``hear(call index, inputs, logits)`` after each
    call, the call itself unchanged."""

    def __init__(self, model: Callable[[torch.Tensor], torch.Tensor], hear: Callable) -> None:
        self.model, self.hear, self.calls = model, hear, 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(x)
        self.hear(self.calls, x, out)
        self.calls += 1
        return out
