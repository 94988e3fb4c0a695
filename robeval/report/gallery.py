"""The gallery: stored adversarial examples of a run crafted again from their seeds and drawn
(clean | adversarial | amplified perturbation, for each chosen model side by side), each
regenerated record checked against the stored one.  ``robeval examples`` is its command; the HTML
report calls :func:`gallery`::

    from robeval.report.gallery import gallery

    g = gallery("results/robeval.sqlite", run_id, models=["deit-small", "deit-small-elliptical"],
                attack="pgd", eps="8/255", select="A-fooled,B-robust", max_examples=6)
    g.png()        # PNG bytes (g.svg(): an SVG string; g.write(path): either, by suffix)
    g.checks       # one Check per drawn (model, example): .equal, .differences, .line()
    g.report()     # the lines robeval examples prints ("all N regenerated predictions equal ...")

:func:`plan_gallery` does the cheap part alone (the run, models, attack, eps and examples checked:
one-line :class:`~robeval.errors.UserError` otherwise), :func:`render` the crafting.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..atomic_files import atomic_write
from ..eps import find_budget
from ..errors import UserError
from ..evaluation.config import model_order
from ..evaluation.regenerate import Check, Crafted, Request, check, refusal, regenerate
from ..results.runs import StoredRun, load_run
from ..results.selection import Selection, select_examples
from ..results.store import Store, existing_store

FORMATS = (".png", ".svg")


@dataclass
class GalleryPlan:
    """A gallery checked and chosen, not yet crafted."""

    run: StoredRun
    models: list[str]
    attack: str
    eps: str
    records: pd.DataFrame  # every model's records under (attack, eps)
    selection: Selection
    options: dict = field(default_factory=dict)  # device, data_dir, trust_checkpoint

    def request(self) -> Request:
        """What :func:`~robeval.evaluation.regenerate.regenerate` crafts: the wanted examples by stored
        batch, on as many CPU threads as the run used unless told otherwise."""
        rows = self.records[self.records["example"].isin(self.selection.examples)]
        batches: dict[int, list[int]] = {}
        for b, example in sorted(set(zip(rows["batch"].astype(int), rows["example"].astype(int)))):
            batches.setdefault(b, []).append(example)
        return Request(
            self.run.config,
            self.run.info,
            self.run.info.get("data", {}).get("identity"),
            self.models,
            self.attack,
            self.eps,
            batches,
            **{"threads": self.run.info.get("threads"), **{k: v for k, v in self.options.items() if v is not None}},
        )


@dataclass
class Gallery:
    """The crafted examples of a :class:`GalleryPlan`, their checks, and their figure."""

    plan: GalleryPlan
    crafted: dict[tuple[str, int], Crafted]  # (model, example) -> its images and regenerated record
    checks: list[Check]
    class_name: dict[int, str]  # class index -> name, for the classes the figure names
    batches: list[int]
    batch_size: int

    @property
    def examples(self) -> list[int]:
        return [e for e in self.plan.selection.examples if all((m, e) in self.crafted for m in self.plan.models)]

    @property
    def mismatches(self) -> list[Check]:
        return [c for c in self.checks if not c.equal]

    def report(self) -> list[str]:
        """What was crafted, and a line per regenerated record that differs (or one saying none does)."""
        plan = self.plan
        lines = [
            f"Re-crafted {plan.attack} at eps {plan.eps} on batch{'es' if len(self.batches) > 1 else ''} "
            f"{', '.join(map(str, self.batches))} of run {plan.run.run_id} (batch size {self.batch_size}: each "
            f"example inside its own batch) for {', '.join(plan.models)}; drawing {len(self.examples)} examples "
            f"{plan.selection.how}"
            + (
                f" ({plan.selection.matched} matched; --max draws more)"
                if plan.selection.matched > len(plan.selection.examples)
                else ""
            )
        ]
        if self.mismatches:
            return lines + [c.line() for c in self.mismatches]
        return lines + [f"all {len(self.checks)} regenerated predictions equal the stored records"]

    def figure(self):
        """The matplotlib figure (the caller closes it: ``matplotlib.pyplot.close(fig)``)."""
        from .gallery_figure import draw

        return draw(self)

    def png(self, dpi: int = 200) -> bytes:
        return self._saved("png", dpi).getvalue()

    def svg(self) -> str:
        return self._saved("svg").getvalue().decode("utf-8")

    def write(self, path: Path) -> Path:
        """The figure to ``path``: SVG when it ends in .svg, else PNG (written whole or not at all)."""
        return atomic_write(path, self.svg() if Path(path).suffix.lower() == ".svg" else self.png())

    def _saved(self, fmt: str, dpi: int = 200) -> io.BytesIO:
        import matplotlib.pyplot as plt

        fig, buffer = self.figure(), io.BytesIO()
        try:
            fig.savefig(buffer, format=fmt, dpi=dpi)
        finally:
            plt.close(fig)
        return buffer


def gallery(
    store: str | Path | Store,
    run_id: str,
    models: list[str] | None = None,
    attack: str = "pgd",
    eps: str | None = None,
    select: str | None = None,
    examples: str | list[int] | None = None,
    max_examples: int = 8,
    **options,
) -> Gallery:
    """Craft again and draw stored examples of run ``run_id`` (see the module docstring).

    ``models``: models of the run (default: all of them), drawn side by side, ``A``/``B`` in ``select``;
    ``eps``: one of the run's (default: its only one); ``select``: ``"A-fooled,B-robust"``-style
    conditions, or ``examples``: explicit indices; default the examples where the models disagree;
    at most ``max_examples``.  ``options``: ``device`` ("auto"), ``data_dir`` ("./data",
    where cifar10/cifar100/mnist are read), ``trust_checkpoint`` (False), ``threads`` (the run's)."""
    if isinstance(examples, list):
        examples = ",".join(map(str, examples))
    return render(plan_gallery(store, run_id, models, attack, eps, select, examples, max_examples, **options))


def plan_gallery(
    store: str | Path | Store,
    run_id: str,
    models: list[str] | None,
    attack: str,
    eps: str | None,
    select: str | None,
    examples: str | None,
    max_examples: int,
    **options,
) -> GalleryPlan:
    """The gallery's run, models, attack, eps and examples, checked; nothing is crafted yet."""
    with existing_store(store) as db:
        run = load_run(db, run_id)
    reason = refusal(attack, run.config)
    if reason is not None:
        raise UserError(reason)
    if attack not in run.config["attacks"]:
        raise UserError(f"run {run_id} has no attack {attack!r} (its attacks: {', '.join(run.config['attacks'])})")
    eps_text = _run_eps(run, eps)
    records = run.records[(run.records["attack"] == attack) & (run.records["eps"] == eps_text)]
    drawn = _run_models(run, records, models, attack, eps_text)
    selection = select_examples(records, drawn, select, examples, max_examples)
    return GalleryPlan(run, drawn, attack, eps_text, records, selection, options)


def render(plan: GalleryPlan) -> Gallery:
    """Craft the plan's examples again (the engine, from their seeds) and check each against its record."""
    regeneration = regenerate(plan.request())
    stored = plan.records.set_index(["model", "example"])
    crafted = {(c.model, c.example): c for c in regeneration.crafted}
    checks = [check(c, stored.loc[(c.model, c.example)].to_dict()) for c in regeneration.crafted]
    from .gallery_figure import class_names

    return Gallery(
        plan, crafted, checks, class_names(regeneration.label_space), regeneration.batches, regeneration.batch_size
    )


def _run_eps(run: StoredRun, eps: str | None) -> str:
    """The run's eps named by ``eps`` (as written, or the same value), or its only one."""
    stored = list(run.config["eps"])
    if eps is None:
        if len(stored) > 1:
            raise UserError(f"run {run.run_id} has several eps ({', '.join(stored)}); choose one with --eps")
        return stored[0]
    found = find_budget(stored, eps, run.config["norm"])
    if found is None:
        raise UserError(f"run {run.run_id} has no eps {eps} (its eps: {', '.join(stored)})")
    return found


def _run_models(run: StoredRun, records: pd.DataFrame, models: list[str] | None, attack: str, eps: str) -> list[str]:
    """The models to draw: named ones of the run (default every one that has records under the attack)."""
    have = set(records["model"])
    known = [m for m in model_order(run.config["models"]) if m in have]
    for model in models or []:
        if model not in have:
            raise UserError(
                f"run {run.run_id} has no records of model {model!r} under {attack} at eps {eps} "
                f"(its models: {', '.join(known)})"
            )
    chosen = list(dict.fromkeys(models)) if models else known
    if not chosen:
        raise UserError(f"run {run.run_id} has no records under {attack} at eps {eps}")
    return chosen
