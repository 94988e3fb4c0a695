"""What a results table shows, for a paper whose columns are few: top-1 alone, the attack columns chosen and
ordered, and the names the models are shown by (``robeval table --top1-only --attacks pgd,apgd-ce,any
--name digits-deit-diff=DiffAttn``; ``Run.table(top1_only=True, attacks=[...], names={...})``).
Every format renders the summary :meth:`TableOptions.applied` gives, so all show the same columns and names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ..core.defaults import STD
from ..core.errors import UserError
from ..core.printable import as_one, read_alike, refuse_hidden
from .naming import is_condition, ordered_attacks

TOPK = (("top1", "Top-1"), ("top5", "Top-5"))  # the summary's metric columns and their titles

Names = Mapping[str, str] | Sequence[str] | None  # {model: name}, or ["MODEL=NAME", ...] as --name gives them


@dataclass(frozen=True)
class TableOptions:
    top1_only: bool = False
    attacks: tuple[str, ...] = ()  # the attack columns in this order; (): the run's, in the suite's order
    names: tuple[tuple[str, str], ...] = ()  # (model, the name a table shows it by)
    bold: bool = True  # a column's best in bold where the claim test separates it (robeval.report.bests)

    @classmethod
    def of(
        cls,
        top1_only: bool = False,
        attacks: str | Sequence[str] | None = None,
        names: Names = None,
        bold: bool = True,
    ):
        """The options as given (``attacks`` a comma list or a sequence; ``names`` a mapping or
        ``MODEL=NAME`` strings), their syntax checked."""
        chosen = [a.strip() for a in (attacks.split(",") if isinstance(attacks, str) else attacks or [])]
        if any(not a for a in chosen) or len(set(chosen)) < len(chosen):
            raise UserError(f"--attacks {','.join(chosen)!r}: name each attack column once, comma-separated")
        return cls(bool(top1_only), tuple(chosen), tuple(_display_names(names).items()), bool(bold))

    @property
    def metrics(self) -> tuple[tuple[str, str], ...]:
        return TOPK[:1] if self.top1_only else TOPK

    def ordered(self, rows: pd.DataFrame) -> list[str]:
        """The attack columns of ``rows``, in the order asked (else the suite's)."""
        present = set(rows["attack"])
        return [a for a in self.attacks if a in present] if self.attacks else ordered_attacks(rows)

    def applied(self, summary: pd.DataFrame) -> pd.DataFrame:
        """``summary`` with only the attacks asked for (a shift's conditions stay: their tables are of
        their own), the models renamed, and without the metrics left out; one line for an attack or a
        model the run lacks."""
        out = summary
        if self.attacks:
            _check_known("--attacks", self.attacks, list(dict.fromkeys(summary["attack"])), "attack columns")
            out = out[out["attack"].isin(self.attacks) | is_condition(out)]
        if self.names:
            renamed = dict(self.names)
            models = list(dict.fromkeys(summary["model"]))
            _check_known("--name", list(renamed), models, "models")
            _check_unique([renamed.get(m, m) for m in models])
            out = out.assign(model=out["model"].map(lambda m: renamed.get(m, m)))
        dropped = [c for key, _ in TOPK[1:] if self.top1_only for c in (key, key + STD)]
        return out.drop(columns=dropped, errors="ignore")


def _display_names(names: Names) -> dict[str, str]:
    """``names`` as {model: display name}: ``MODEL=NAME`` strings split at the first ``=``."""
    if isinstance(names, Mapping):
        pairs = [(str(model).strip(), str(name).strip()) for model, name in names.items()]
    else:
        pairs = []
        for item in [names] if isinstance(names, str) else names or []:
            model, eq, name = str(item).partition("=")
            if not (eq and model.strip()):
                raise UserError(f"--name {item!r}: write MODEL=NAME (e.g. --name digits-deit-diff=DiffAttn)")
            pairs.append((model.strip(), name.strip()))
    out: dict[str, str] = {}
    for model, name in pairs:
        if not name:
            raise UserError(f"--name {model}=: give the name to show {model} by")
        if model in out:
            raise UserError(f"--name {model} is given twice ({out[model]!r}, {name!r})")
        refuse_hidden([name], "--name: the name", "the command line")
        out[model] = name
    return out


def _check_known(option: str, asked: Sequence[str], present: list[str], what: str) -> None:
    if (missing := next((a for a in asked if a not in present), None)) is not None:
        raise UserError(f"{option} {missing}: not one of the run's {what} ({', '.join(present)})")


def _check_unique(shown: list[str]) -> None:
    if (pair := read_alike(shown)) is not None:
        raise UserError(
            f"--name: two models would be shown as {as_one(*(shown[i] for i in pair))}; give each its own name"
        )
