"""Defaults that the CLI needs before anything heavy (torch, timm) is imported, and the summary's
conventions: its leading columns, and the lists its cells hold (the record layout: robeval.core.records)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

DIGITS = "digits"  # the embedded demo data set
SPLITS = ("test", "train")  # --split of a published data set (cifar10, cifar100, mnist)
SELECTIONS = ("balanced", "first")  # --selection: class round-robin, or the first N (RobustBench's convention)
DEFAULT_MODELS = ["digits-deit", "digits-deit-elliptical"]
DEFAULT_EPS = "8/255"
# the embedded demo: 5 digits per class, sized so the demo run (seven attacks, two models) takes about a
# minute on 2 cores (100 took 151 s: docs/speed.md#the-demo-run); --n-examples 449 is the whole test split
DEFAULT_N_EXAMPLES = 50
DEFAULT_STORE = Path("results") / "robeval.sqlite"
RUN_ID_FIELD = "{run_id}"  # in an ``out`` path (run, reproduce): the run's id, known once the run is created


# The demo models' training recipe (robeval.models.training): one recipe for the shipped zoo's DeiT kinds
# (scripts/train_demo_zoo.py, train_demo_variants.py) and robeval train-demo's default, so that a model
# trained by train-demo and a shipped one differ only in their network (docs/models.md#one-recipe).
class Recipe(NamedTuple):
    epochs: int
    lr: float  # AdamW's peak learning rate (warm-up, then cosine decay)
    stochastic_depth: float  # drop-path rate of the last block (timm's linear schedule over the blocks)


DEMO_RECIPE = Recipe(epochs=300, lr=1e-3, stochastic_depth=0.1)

# The entry-point groups through which installed packages give models and attention kinds
# (robeval.models.names reads their names, robeval.models.plugins loads them).
PLUGIN_GROUPS = ("robeval.models", "robeval.attention")

RANDOM_WEIGHTS = "random weights (untrained)"  # the checkpoint cell of a model run with --weights random

# The two row names of a results table that are no attack: the clean images, and the worst case over
# the attacks (an example counts as robust only if every attack of the run failed on it).
CLEAN = "clean"
ANY = "any"
NOT_ATTACKS = (CLEAN, ANY)

# The leading columns of results.csv and of `robeval table -f csv` (the rest follow in summary order).
SUMMARY_COLUMNS = ["model", "checkpoint", "attack", "eps", "norm", "n", "top1", "top5"]
STD = "_std"  # a summary column <metric>_std: the sample std over a model's members (cells show mean ± std)
MEMBERS = "members"  # a summary column: how many members (checkpoints) a model's row averages


# Lists kept as values in a summary's cells: the attacks a worst case covers, the audit stages that
# escalated, the units not run, the parts of an audit's description.  A cell holds the tuple itself, so
# a reader takes its items as they are and never splits a text back into them; the text is made only where
# a file or a cell is written (``str``: results.csv's cells have always joined them so).
class Names(tuple[str, ...]):
    """Names, shown comma-joined (``fgsm,pgd``; empty: no text)."""

    separator = ","

    def __str__(self) -> str:
        return self.separator.join(map(str, self))


class Phrases(Names):
    """Phrases of one description, shown joined by ``"; "``."""

    separator = "; "


class Alternatives(Names):
    """Texts that differ between the parts of one thing (the recipes of a model's members), shown joined by
    ``" / "``."""

    separator = " / "


def names_in(value: Any) -> Names:
    """A cell's names: the tuple it holds, none for a missing cell (a combined table's row of a run
    without the column)."""
    return Names(value) if isinstance(value, tuple) else Names()
