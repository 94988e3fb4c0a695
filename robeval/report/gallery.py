"""The gallery: stored adversarial examples of a run crafted again from their seeds
(robeval.results.recrafting) and drawn here, each regenerated record checked against the stored one.
``robeval examples`` is its command and the HTML report calls :func:`gallery`: docs/results.md, "Seeing
adversarial examples again", says what the figure shows, docs/python.md, "Lower-level readers", how to
call it.  :func:`robeval.results.recrafting.plan_recrafting` does the cheap part alone (one-line
:class:`~robeval.errors.UserError` otherwise), :func:`draw_gallery` crafts and draws.

Sized for a paper: 8 pt panel titles, grey images in grey, small images upscaled with nearest-neighbour
pixels.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, fields
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..core.atomic_files import atomic_write  # noqa: E402
from ..data.labels import LabelSpace, imagenet_wnids  # noqa: E402
from ..evaluation.regenerate import Crafted  # noqa: E402
from ..results.recrafting import Recrafted, RecraftPlan, plan_recrafting, recraft  # noqa: E402
from ..store import Store  # noqa: E402
from .naming import attack_title  # noqa: E402
from .style import LITERAL_TEXT  # noqa: E402


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
    """Craft again and draw stored examples of run ``run_id`` (docs/results.md, "Seeing adversarial examples again").

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


PANEL = 1.3  # inches per image panel
TITLE_ROOM = 0.45  # inches above each panel for its two title lines
MIN_WIDTH = 5.0  # inches: room for the figure's title when one model is drawn
RIGHT, WRONG = "#1b7f3b", "#c0262d"
NAME_CHARS = 18  # class names longer than this are cut (ImageNet's run long)
RC = {**LITERAL_TEXT, "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "figure.titlesize": 10}


def class_names(space: LabelSpace) -> dict[int, str]:
    """Class index -> a short name: ImageNet's descriptions (timm's) where the labels are ImageNet
    wnids, else the label space's own names (CIFAR's classes, the digits, folder names)."""
    wnids = imagenet_wnids()
    if wnids is not None and space.num_classes == len(wnids) and set(space.mapping) <= set(wnids):
        from timm.data import ImageNetInfo

        info = ImageNetInfo("imagenet-1k")
        return {i: info.index_to_description(i).split(",")[0] for i in range(len(wnids))}
    return {index: str(name) for name, index in space.mapping.items()}


def _name(names: dict[int, str], index: int) -> str:
    name = names.get(int(index), f"class {int(index)}")
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def draw(gallery: Recrafted, names: dict[int, str]):
    """The figure of crafted examples (a :class:`~robeval.report.gallery.Gallery`), classes named by ``names``."""
    plan, examples = gallery.plan, gallery.examples
    rows, columns = len(examples), 3 * len(plan.models)
    sep = "\n" if len(plan.models) == 1 else "; "  # one model's figure is narrow: the title takes three lines
    with plt.rc_context(RC):  # type: ignore[arg-type]  # its texts literal: model, class and attack names, the run id
        size = (max(PANEL * columns + 0.4, MIN_WIDTH), (PANEL + TITLE_ROOM) * rows + 0.8)
        fig = plt.figure(figsize=size, layout="constrained", dpi=100)
        fig.suptitle(
            f"{attack_title(plan.attack)} at eps {plan.eps} ({plan.run.config['norm']}), run {plan.run.run_id}\n"
            f"clean | adversarial | perturbation (amplified){sep}predictions green if right, red if wrong"
        )
        parts = np.atleast_1d(fig.subfigures(1, len(plan.models), wspace=0.04))  # type: ignore[arg-type]
        for part, model in zip(parts, plan.models):
            part.suptitle(model, fontweight="bold")
            axes = part.subplots(rows, 3, squeeze=False)
            for row, example in zip(axes, examples):
                _draw_row(row, gallery.crafted[(model, example)], plan.attack, names, label=model == plan.models[0])
    return fig


def _draw_row(axes, crafted: Crafted, attack: str, names: dict[int, str], label: bool) -> None:
    record = crafted.record
    true = int(record["label"])
    _image(axes[0], crafted.clean)
    _title(axes[0], f"clean\n→ {_name(names, crafted.clean_pred)}", crafted.clean_pred == true)
    _image(axes[1], crafted.adversarial)
    adv = int(record["adv_pred"])
    _title(axes[1], f"{attack_title(attack)}\n→ {_name(names, adv)}", adv == true)
    _perturbation(axes[2], crafted.adversarial - crafted.clean, record)
    if label:
        axes[0].set_ylabel(f"#{crafted.example}\ntrue: {_name(names, true)}")


def _image(ax, image: np.ndarray) -> None:
    """A [C, H, W] image: grey ones in the grey colormap, every pixel a square (nearest)."""
    if image.shape[0] == 1:
        ax.imshow(image[0], cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    else:
        ax.imshow(np.clip(image.transpose(1, 2, 0), 0.0, 1.0), interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])


def _title(ax, text: str, right: bool) -> None:
    ax.set_title(text, color=RIGHT if right else WRONG, linespacing=1.1)


def _perturbation(ax, delta: np.ndarray, record: dict) -> None:
    """The perturbation around mid-grey, scaled so its largest entry reaches black or white."""
    largest = float(np.abs(delta).max())
    gain = 0.5 / largest if largest > 0 else 0.0
    _image(ax, 0.5 + delta * gain)
    linf, l2 = float(record["linf"]), float(record["l2"])
    amplified = f"×{gain:.0f}" if largest > 0 else "(none)"
    ax.set_title(f"perturbation {amplified}\nL∞ {linf * 255:.1f}/255, L2 {l2:.2f}", linespacing=1.1)
