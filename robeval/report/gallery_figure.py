"""The gallery's figure: a row per example; for each model side by side its clean image, its
adversarial image and the perturbation (amplified to the full grey range, its Linf and L2 size
written), titled with the predicted classes (green: right, red: wrong) and the true class on the
left.  Sized for a paper: 8 pt panel titles, grey images in grey, small images upscaled with
nearest-neighbour pixels.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..data.labels import LabelSpace, imagenet_wnids  # noqa: E402
from ..evaluation.regenerate import Crafted  # noqa: E402
from ..results.recrafting import Recrafted  # noqa: E402
from .naming import attack_title  # noqa: E402
from .style import LITERAL_TEXT  # noqa: E402

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
