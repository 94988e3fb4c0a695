"""``robeval train-demo``: a digits version of a model trained with the demo models' recipe
(robeval.models.training), so that a new attention goes through every attack, table, check and the
report in minutes, before any GPU time is spent."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..defaults import TRAIN_DEMO_RECIPE
from ..errors import UserError
from .app import app, console

if TYPE_CHECKING:
    from rich.progress import TaskID

DEFAULT_EPOCHS, DEFAULT_LR = TRAIN_DEMO_RECIPE


@app.command("train-demo")
def train_demo_cmd(
    model: str = typer.Option(
        ..., "--model", "-m", help="A digits-sized model: digits-deit-<kind>, a plugin's, or PATH.py:CALLABLE."
    ),
    out: Path = typer.Option(..., "--out", help="The weights file to write (.safetensors, .pth or .pt)."),
    seed: int = typer.Option(0, help="Seed of the initial weights, the data order and the augmentation."),
    epochs: int = typer.Option(
        DEFAULT_EPOCHS, help="Epochs over the digits training split (the shipped models: 300 at --lr 1e-3)."
    ),
    lr: float = typer.Option(DEFAULT_LR, help="AdamW's peak learning rate (warm-up, then cosine decay)."),
    threads: int = typer.Option(1, help="CPU threads (1 is fastest for these tiny models on a busy machine)."),
    force: bool = typer.Option(False, "--force", help="Replace --out if it exists."),
) -> None:
    """Train MODEL's digits version on the digits training split (deterministic from --seed) and write
    its weights to --out, which `robeval run --checkpoint MODEL=FILE` loads; prints the clean accuracy
    it reached on the digits test split (what `robeval run` measures with those weights).  A training
    whose loss stops being finite, or that ends under twice chance accuracy, writes nothing."""
    from ..report.files import check_out_file
    from ..seeds import check_seed

    check_seed(seed)
    if threads < 1:
        raise UserError(f"--threads must be at least 1, got {threads}")
    check_out_file(out)  # before the minute of training
    if out.exists() and not force:
        raise UserError(f"--out {out} exists: pass --force to replace it")
    import torch

    from ..models.training import check_learned, check_weights_path, save_demo, train_demo

    check_weights_path(out)

    torch.set_num_threads(threads)
    with _bar(model) as progress:
        net, acc = train_demo(model, epochs, seed, lr=lr, progress=progress)
    check_learned(model, acc)  # before anything is written
    meta = {"model": model, "epochs": str(epochs), "lr": str(lr), "seed": str(seed), "trained_by": "robeval train-demo"}
    save_demo(net, acc, out, meta)
    console.print(
        f"{model}: clean accuracy {100 * acc:.2f}% on the digits test split (449 images) after {epochs} epochs; "
        f"wrote {out}. Evaluate it: robeval run --model {model} --checkpoint {model}={out}",
        markup=False,
        soft_wrap=True,
    )


class _bar:
    """A rich progress bar over the epochs (the last batch's loss beside it); a context manager whose
    value is the training's progress callback."""

    def __init__(self, model: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn(f"train {model}"), BarColumn(), MofNCompleteColumn(), TextColumn("epochs"),
            TextColumn("loss {task.fields[loss]}"), TimeRemainingColumn(), console=console, transient=True,
        )  # fmt: skip
        self.task: TaskID | None = None

    def __enter__(self):
        self.progress.start()
        return self.update

    def update(self, done: int, epochs: int, loss: float) -> None:
        if self.task is None:
            self.task = self.progress.add_task("train", total=epochs, loss="-")
        self.progress.update(self.task, completed=done, loss=f"{loss:.3f}")

    def __exit__(self, *exc) -> None:
        self.progress.stop()
