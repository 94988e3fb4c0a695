"""Several members of one model, one per training seed, trained with one recipe: what ``robeval train-demo
--seeds 0-4 --out DIR/`` does, and why (REFERENCE.md 9, "Claims across training seeds"), each member's
file and what train-demo refuses to write: docs/models.md, section Several seeds.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.defaults import DEMO_RECIPE, Recipe
from ..core.errors import UserError
from ..zoo import zoo_path
from .recipes import robeval_recipe
from .training import WEIGHT_SUFFIXES, Progress, TrainingFailed, check_learned, save_demo, train_demo

TRAINED_BY = "robeval train-demo"


@dataclass(frozen=True)
class Member:
    """One seed's outcome: its file and clean accuracy, or why nothing was written for it."""

    seed: int
    path: Path
    accuracy: float | None = None  # top-1 on the digits test split (0-1); None: nothing written
    failure: str = ""


def file_stem(model: str) -> str:
    """``model`` as a file name: a registered name as it is, a reference to code (``./net.py:build``) with
    its path and punctuation turned into dashes (``net.py-build``)."""
    return re.sub(r"[^\w.-]+", "-", model.removeprefix("./")).strip("-.") or "model"


def member_paths(model: str, out: Path, seeds: list[int]) -> dict[int, Path]:
    """Seed -> the file its weights go to: ``out`` itself when it names a weights file (one seed only),
    else ``out/<model>-seed<N>.safetensors`` (``out`` a folder, made when missing)."""
    if out.suffix in WEIGHT_SUFFIXES and not out.is_dir():
        if len(seeds) > 1:
            raise UserError(
                f"--out {out}: {len(seeds)} seeds write one file each; name a folder (e.g. --out {out.with_suffix('')}/)"
            )
        return {seeds[0]: out}
    if out.suffix and not out.is_dir():
        raise UserError(f"--out {out}: name the weights file *{' or *'.join(WEIGHT_SUFFIXES)}, or a folder")
    return {seed: out / f"{file_stem(model)}-seed{seed}.safetensors" for seed in seeds}


def check_free(paths: list[Path], force: bool) -> None:
    """Every file to write is new, or ``force`` replaces it: checked before any training."""
    taken = [p for p in paths if p.exists()]
    if taken and not force:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise UserError(f"--out {taken[0]} exists{more}: pass --force to replace it")


def train_members(
    model: str,
    paths: dict[int, Path],
    recipe: Recipe = DEMO_RECIPE,
    progress: Callable[[int], Progress | None] = lambda seed: None,
) -> Iterator[Member]:
    """Train ``model`` once per seed of ``paths`` with ``recipe`` and write each member that learnt;
    yields each as it finishes.  A seed whose loss is not finite or that ends at chance writes nothing
    and the next one trains; a model that cannot be trained at all stops at the first seed (one line)."""
    for seed, path in paths.items():
        try:
            net, acc = train_demo(model, recipe.epochs, seed, lr=recipe.lr, progress=progress(seed))
            check_learned(model, acc)
        except TrainingFailed as failed:
            yield Member(seed, path, failure=str(failed))
            continue
        save_demo(net, acc, path, recipe_metadata(model, recipe, seed, TRAINED_BY))
        yield Member(seed, path, acc)


def recipe_metadata(model: str, recipe: Recipe, seed: int, trained_by: str) -> dict[str, str]:
    """What a weights file says of how it was made (safetensors metadata; the zoo's files too)."""
    return {
        "model": model,
        "epochs": str(recipe.epochs),
        "lr": str(recipe.lr),
        "stochastic_depth": str(recipe.stochastic_depth),
        "seed": str(seed),
        "trained_by": trained_by,
    }


def spread(members: list[Member]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (n - 1) of the written members' accuracies, in percent
    (no deviation for a single member)."""
    values = [100 * m.accuracy for m in members if m.accuracy is not None]
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None


def shipped_recipe(model: str) -> Recipe | None:
    """The recipe the shipped weights of ``model`` were trained with, as the zoo file's metadata records it
    (:func:`~.recipes.robeval_recipe`: the older files' too); None when ``model`` ships no weights."""
    from safetensors import safe_open

    path = zoo_path(model)
    if not path.is_file():
        return None
    with safe_open(str(path), "pt") as f:
        found = robeval_recipe(f.metadata() or {}) or {}
    depth = float(found.get("stochastic depth", "nan"))
    return Recipe(int(found.get("epochs", 0)), float(found.get("lr", DEMO_RECIPE.lr)), depth)


def recipe_note(model: str, recipe: Recipe) -> str:
    """One sentence: the recipe, and whether the shipped models (``model``'s own, else the demo's
    digits-deit and digits-deit-elliptical) were trained with it, so that nobody compares a model trained
    here with a shipped one trained otherwise."""
    said = f"recipe: {recipe.epochs} epochs at lr {recipe.lr:g}, stochastic depth {recipe.stochastic_depth:g} on timm blocks"
    shipped = shipped_recipe(model)
    if shipped is not None:
        same = shipped == recipe
        return f"{said}; the shipped {model} was trained {'with the same recipe' if same else _otherwise(shipped)}"
    if recipe == DEMO_RECIPE:
        return f"{said}, the recipe of the shipped digits-deit and digits-deit-elliptical"
    return (
        f"{said}, not the shipped models' ({DEMO_RECIPE.epochs} epochs at lr {DEMO_RECIPE.lr:g}): compare it with "
        "models trained the same way (train-demo --model digits-deit with the same --epochs and --lr), "
        "not with the shipped ones"
    )


def _otherwise(shipped: Recipe) -> str:
    return (
        f"otherwise ({shipped.epochs} epochs at lr {shipped.lr:g}, stochastic depth {shipped.stochastic_depth:g}): "
        "compare this one with models trained the same way, not with the shipped one"
    )
