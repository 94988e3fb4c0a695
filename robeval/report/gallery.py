"""The gallery: stored adversarial examples of a run crafted again from their seeds
(robeval.results.recrafting) and drawn here (clean | adversarial | amplified perturbation, for each
chosen model side by side), each regenerated record checked against the stored one.  ``robeval
examples`` is its command; the HTML report calls :func:`gallery`::

    from robeval.report.gallery import gallery

    g = gallery("results/robeval.sqlite", run_id, models=["deit-small", "deit-small-elliptical"],
                attack="pgd", eps="8/255", select="A-fooled,B-robust", max_examples=6)
    g.png()        # PNG bytes (g.svg(): an SVG string; g.write(path): either, by suffix)
    g.checks       # one Check per drawn (model, example): .equal, .differences, .line()
    g.report()     # the lines robeval examples prints ("all N regenerated predictions equal ...")

:func:`robeval.results.recrafting.plan_recrafting` does the cheap part alone (the run, models, attack,
eps and examples checked: one-line :class:`~robeval.errors.UserError` otherwise), :func:`draw_gallery`
crafts and draws.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, fields
from pathlib import Path

from ..core.atomic_files import atomic_write
from ..results.recrafting import Recrafted, RecraftPlan, plan_recrafting, recraft
from ..store import Store
from .gallery_figure import class_names, draw


@dataclass
class Gallery(Recrafted):
    """Crafted examples (:class:`~robeval.results.recrafting.Recrafted`) and their figure."""

    class_name: dict[int, str]  # class index -> name, for the classes the figure names

    def report(self) -> list[str]:
        """What was crafted, and a line per regenerated record that differs (or one saying none does)."""
        plan, chosen = self.plan, self.plan.selection
        more = f" ({chosen.matched} matched; --max draws more)" if chosen.matched > len(chosen.examples) else ""
        lines = [
            f"Re-crafted {plan.attack} at eps {plan.eps} on batch{'es' if len(self.batches) > 1 else ''} "
            f"{', '.join(map(str, self.batches))} of run {plan.run.run_id} (batch size {self.batch_size}: each "
            f"example inside its own batch) for {', '.join(plan.models)}; drawing {len(self.examples)} examples "
            f"{chosen.how}{more}"
        ]
        equal = f"all {len(self.checks)} regenerated predictions equal the stored records"
        return lines + ([c.line() for c in self.mismatches] or [equal])

    def figure(self):
        """The matplotlib figure (the caller closes it: ``matplotlib.pyplot.close(fig)``)."""
        return draw(self, self.class_name)

    def png(self, dpi: int = 200) -> bytes:
        return self._saved("png", dpi).getvalue()

    def svg(self) -> str:
        return self._saved("svg").getvalue().decode("utf-8")

    def write(self, path: Path) -> Path:
        """The figure to ``path``: SVG when it ends in .svg, else PNG (written whole or not at all)."""
        return atomic_write(path, self.svg() if Path(path).suffix.lower() == ".svg" else self.png())

    def _saved(self, fmt: str, dpi: int = 200) -> io.BytesIO:
        import matplotlib.pyplot as plt  # after gallery_figure chose the Agg backend

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
    listed = ",".join(map(str, examples)) if isinstance(examples, list) else examples
    return draw_gallery(plan_recrafting(store, run_id, models, attack, eps, select, listed, max_examples, **options))


def draw_gallery(plan: RecraftPlan) -> Gallery:
    """Craft the plan's examples again, check them against their records, and draw them."""
    recrafted = recraft(plan)
    crafted = {f.name: getattr(recrafted, f.name) for f in fields(Recrafted)}
    return Gallery(**crafted, class_name=class_names(recrafted.label_space))
