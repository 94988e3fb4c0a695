"""Paper tables (docs/results.md, "``robeval table``"): one block per eps, then the minimum-norm block and
the shift tables, in any format of :data:`TABLE_FORMATS`: the drawing ones get these blocks, the data ones
the summary's values.  Every format renders the summary :meth:`TableOptions.applied` gives
(``--top1-only``, ``--attacks``, ``--name``), so all show the same columns and names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ..core.defaults import MEMBERS, STD, SUMMARY_COLUMNS
from ..core.errors import UserError
from ..core.printable import as_one, read_alike, refuse_hidden
from .bests import FOOTNOTE, NOT_SEPARATED, RECIPES_DIFFER, RECIPES_FOOTNOTE, SEPARATED, best_column, mark_bests
from .document import Document, Grid, Values
from .formats import Format, offered
from .grid import MARK, RECIPES_MARK, Measured
from .naming import attack_title, caption_parts, is_condition, ordered_attacks
from .shift_table import later_blocks, split

TABLE_FORMATS = ("md", "latex", "html", "csv", "json", "robustbench")  # html: robeval report's
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
            shown = [renamed.get(m, m) for m in models]
            if (pair := read_alike(shown)) is not None:
                twins = as_one(*(shown[i] for i in pair))
                raise UserError(f"--name: two models would be shown as {twins}; give each its own name")
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


def attack_grid(
    summary: pd.DataFrame, eps: str, options: TableOptions = TableOptions()
) -> tuple[pd.DataFrame, dict[str, set]]:
    """One eps block: rows = models, columns = (attack title, Top-1 / Top-5) (top-1 alone: the attack
    titles), and its marked cells by mark (robeval.report.bests, read from the summary's best columns):
    bold (:data:`SEPARATED`), footnoted (:data:`NOT_SEPARATED`), marked as a best of models trained apart
    (:data:`RECIPES_DIFFER`); none where the summary has no best columns, or ``options.bold`` is off."""
    sel = summary[summary["eps"] == eps]
    models, attacks, metrics = list(dict.fromkeys(sel["model"])), options.ordered(sel), options.metrics
    values = {(r["model"], r["attack"], m): Measured.of(r, m) for r in sel.to_dict("records") for m, _ in metrics}
    keys = [
        (a, m, (attack_title(a), title) if len(metrics) > 1 else attack_title(a))
        for a in attacks
        for m, title in metrics
    ]
    cells = [[values.get((model, a, m), "") for a, m, _ in keys] for model in models]
    marks = {
        (r["model"], r["attack"], m): r.get(best_column(m), "") for r in sel.to_dict("records") for m, _ in metrics
    }
    marks = marks if options.bold else {}
    marked = {
        mark: {(model, shown) for model in models for a, m, shown in keys if marks.get((model, a, m)) == mark}
        for mark in (SEPARATED, NOT_SEPARATED, RECIPES_DIFFER)
    }
    return pd.DataFrame(cells, index=models, columns=pd.Index([c for *_, c in keys])), marked


def members_part(rows: pd.DataFrame) -> list[str]:
    """What the cells are when a model has several members (mean ± sample std, and how many each): the
    caption's phrase, none when each has one."""
    if not any(c.endswith(STD) and rows[c].notna().any() for c in rows.columns):
        return []
    # a run with no model of several members has no member columns: its models are one member each
    per_model = dict(zip(rows["model"], rows[MEMBERS].fillna(1))) if MEMBERS in rows else {}
    counts = f" ({', '.join(f'{m}: {int(n)}' for m, n in per_model.items())})" if per_model else ""
    return [f"cells: mean ± sample std over each model's members (checkpoints, one per training seed){counts}"]


def paper_document(summary: pd.DataFrame, options: TableOptions = TableOptions()) -> Document:
    """Every block of the table: one per eps, the minimum-norm block, the shift tables; each caption
    says what its block measures (top-1 alone under ``--top1-only``) and what its cells are."""
    attacks, _ = split(summary)
    blocks: Document = []
    for eps in dict.fromkeys(attacks["eps"]):
        grid, marked = attack_grid(attacks, eps, options)
        parts = caption_parts(attacks, eps, top5=not options.top1_only)
        parts += [f"{MARK} {FOOTNOTE}"] if marked[NOT_SEPARATED] else []
        parts += [f"{RECIPES_MARK} {RECIPES_FOOTNOTE}"] if marked[RECIPES_DIFFER] else []
        parts += members_part(attacks[attacks["eps"] == eps])
        bold, noted, apart = (frozenset(marked[mark]) for mark in (SEPARATED, NOT_SEPARATED, RECIPES_DIFFER))
        blocks.append(Grid(grid, parts, bold=bold, noted=noted, apart=apart))
    return blocks + later_blocks(summary)


def summary_values(summary: pd.DataFrame, options: TableOptions = TableOptions()) -> Values:
    """The summary as the data formats write it: every column (each model's per-member values too, where
    the summary has them), the leading ones first; the attack rows in the order ``options`` asks."""
    ordered = [c for c in SUMMARY_COLUMNS if c in summary] + [c for c in summary.columns if c not in SUMMARY_COLUMNS]
    return Values(_attack_order(summary, options)[ordered])


def _attack_order(summary: pd.DataFrame, options: TableOptions) -> pd.DataFrame:
    """The rows with their attacks in the order asked for, eps and models in their order of appearance."""
    if not options.attacks:
        return summary
    rank = {a: i for i, a in enumerate(options.attacks)}
    keys = pd.DataFrame({c: pd.factorize(summary[c])[0] for c in ("eps", "model")})
    keys["attack"] = [rank.get(a, len(rank)) for a in summary["attack"]]
    return summary.iloc[keys.sort_values(["eps", "model", "attack"], kind="stable").index]


def render(
    summary: pd.DataFrame, fmt: str, options: TableOptions = TableOptions(), records: pd.DataFrame | None = None
) -> str:
    """``summary`` as format ``fmt``, showing what ``options`` ask (checked against it: one line for an
    attack or model it lacks, or for options given to a format whose layout is fixed); with the per-example
    ``records`` behind it, each column's best is bold where the claim test separates it (robeval.report.bests;
    without them, and in a data format, nothing is bold)."""
    table_format = checked_format(fmt, options)
    if table_format.values:
        return table_format.render([summary_values(options.applied(summary), options)])
    marked = mark_bests(summary, records) if records is not None else summary
    return table_format.render(paper_document(options.applied(marked), options))


def checked_format(fmt: str, options: TableOptions = TableOptions()) -> Format:
    """Format ``fmt``, refused in one line when a table has none such or when ``options`` ask what its fixed
    layout lacks."""
    table_format = offered(fmt, TABLE_FORMATS, "table format")
    if options != TableOptions() and table_format.fixed_layout:
        raise UserError(f"-f {fmt} has a fixed layout: --top1-only, --attacks, --name and --no-bold do not apply to it")
    return table_format
