"""``robeval train-demo``: a digits version of a model trained with the demo models' recipe
(robeval.models.training), so that a new attention goes through every attack, table, check and the
report in minutes, before any GPU time is spent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ..core.defaults import DEMO_RECIPE, Recipe
from ..core.errors import UserError
from ..core.seeds import check_seed, parse_seeds
from ..core.threads import set_threads
from ..report.escaping import TerminalConsole
from .app import DecimalOption, WholeOption, app, say

if TYPE_CHECKING:
    from rich.progress import TaskID

    from ..models.seed_training import Member

SEEDS_HELP = (
    "Several seeds, one member each, trained with one recipe: a range 0-4, a comma list 0,2,5, or both; prints "
    "each one's clean accuracy and their mean +- sample std. --out names a folder."
)


@app.command("train-demo")
def train_demo_cmd(
    model: str = typer.Option(
        ..., "--model", "-m", help="A digits-sized model: digits-deit-<kind>, a plugin's, or PATH.py:CALLABLE."
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        help="The weights file to write (.safetensors, .pth or .pt), or a folder: one file per seed, "
        "FOLDER/<model>-seed<N>.safetensors (a quoted glob picks them up).",
    ),
    seed: Optional[int] = WholeOption(
        None, help="Seed of the initial weights, the data order and the augmentation (default 0)."
    ),
    seeds: Optional[str] = typer.Option(None, "--seeds", metavar="LIST", help=SEEDS_HELP),
    epochs: int = WholeOption(
        DEMO_RECIPE.epochs,
        help="Epochs over the digits training split (the shipped digits-deit and digits-deit-elliptical: "
        f"{DEMO_RECIPE.epochs} at --lr {DEMO_RECIPE.lr:g}; fewer are for a first look, compared only with "
        "models trained the same way).",
    ),
    lr: float = DecimalOption(DEMO_RECIPE.lr, help="AdamW's peak learning rate (warm-up, then cosine decay)."),
    threads: int = WholeOption(1, help="CPU threads (1 is fastest for these tiny models on a busy machine)."),
    force: bool = typer.Option(False, "--force", help="Replace files of --out that exist."),
) -> None:
    """Train MODEL's digits version on the digits training split with the demo models' recipe
    (deterministic from --seed) and write its weights to --out, which `robeval run --checkpoint
    MODEL=FILE` loads; prints the clean accuracy it reached on the digits test split (what `robeval run`
    measures with those weights) and whether the shipped models were trained the same way.  --seeds
    trains several members, one file each.  A seed whose loss stops being finite, or that ends under
    twice chance accuracy, writes nothing."""
    from ..report.files import prepare_out_dir

    if seed is not None and seeds is not None:
        raise UserError("give --seed N (one model) or --seeds LIST (several), not both")
    chosen = parse_seeds(seeds) if seeds is not None else [check_seed(0 if seed is None else seed)]
    set_threads(threads)
    from ..models.seed_training import check_free, member_paths
    from ..models.training import check_recipe

    check_recipe(epochs, lr)
    paths = member_paths(model, out, chosen)
    check_free(list(paths.values()), force)
    for folder in dict.fromkeys(p.parent for p in paths.values()):
        prepare_out_dir(folder)  # writable, before the minutes of training
    recipe = Recipe(epochs, lr, DEMO_RECIPE.stochastic_depth)
    _train(model, paths, recipe)


def _train(model: str, paths: dict[int, Path], recipe: Recipe) -> None:
    """Train and write each seed's member, printing each as it is done, then the spread; a seed that
    failed is said in its line, and the command ends in one error line naming them."""
    from ..models.seed_training import recipe_note, train_members

    several = len(paths) > 1
    say(recipe_note(model, recipe))
    members = []
    with _bars(model, list(paths), recipe.epochs) as progress_of:
        for member in train_members(model, paths, recipe, progress_of):
            if member.accuracy is None and not several:
                raise UserError(member.failure)
            members.append(member)
            say(_member_line(model, member, recipe, several))
    if several:
        _spread(model, members)


def _spread(model: str, members: list[Member]) -> None:
    """The mean +- sample std of the members written, the glob that names them, and one error line for
    the seeds that wrote nothing."""
    from ..models.seed_training import file_stem, spread

    written = [m for m in members if m.accuracy is not None]
    if len(written) > 1:
        mean, std = spread(written)
        files = written[0].path.parent / f"{file_stem(model)}-seed*.safetensors"
        say(f"{model}: clean accuracy {mean:.2f} ± {std:.2f}% over {len(written)} seeds (mean ± sample std); "
             f"the files: '{files}'")  # fmt: skip
    failed = [str(m.seed) for m in members if m.accuracy is None]
    if failed:
        raise UserError(
            f"seed{'s' if len(failed) > 1 else ''} {', '.join(failed)} of {model} wrote nothing (why: in its line "
            f"above); {'the other seeds are written' if written else 'no seed learnt'}"
        )


def _member_line(model: str, member: Member, recipe: Recipe, several: bool) -> str:
    who = f"{model} seed {member.seed}" if several else model
    if member.accuracy is None:
        return f"{who}: {member.failure}"
    line = (
        f"{who}: clean accuracy {100 * member.accuracy:.2f}% on the digits test split (449 images) after "
        f"{recipe.epochs} epochs; wrote {member.path}."
    )
    return line if several else f"{line} Evaluate it: robeval run --model {model} --checkpoint {model}={member.path}"


@contextmanager
def _bars(model: str, seeds: list[int], epochs: int) -> Iterator[Callable[[int], Callable[[int, int, float], None]]]:
    """Training's progress, as ``robeval run`` shows an attack's: on a terminal a rich bar per seed over its
    epochs with the last batch's loss (and one over every seed's epochs when there are several), on stderr;
    elsewhere (a log, a pipe) a line at every tenth of a seed's epochs, with the seeds' lines on stdout
    (stderr holds nothing but an error's one line).  Yields ``progress_of(seed)``, the training's progress
    callback for that seed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    err = TerminalConsole(stderr=True)
    bars = Progress(
        TextColumn("train {task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
        TextColumn("epochs"), TextColumn("{task.fields[loss]}", markup=False), TimeRemainingColumn(),
        console=err, transient=False, disable=not err.is_terminal,
    )  # fmt: skip
    if err.is_terminal:
        bars.start()
    try:
        several = len(seeds) > 1
        overall = bars.add_task(f"{model}: {len(seeds)} seeds", total=epochs * len(seeds), loss="") if several else None
        shown: list[TaskID] = []  # the bar of the seed in training

        def progress_of(seed: int) -> Callable[[int, int, float], None]:
            name = f"{model} seed {seed}" if several else model
            for task in shown:
                bars.remove_task(task)
            shown[:] = [bars.add_task(name, total=epochs, loss="loss -")]

            def update(done: int, epochs: int, loss: float) -> None:
                bars.update(shown[0], completed=done, loss=f"loss {loss:.3f}")
                if overall is not None:
                    bars.update(overall, completed=seeds.index(seed) * epochs + done)
                if bars.disable and (done == epochs or done % max(1, epochs // 10) == 0):
                    say(f"train {name}: epoch {done}/{epochs}, loss {loss:.3f}")

            return update

        yield progress_of
    finally:  # started only on a terminal: some rich releases print an empty line on stderr stopping a bar never started
        if bars.live.is_started:
            bars.stop()
