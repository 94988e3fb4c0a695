"""``robeval examples``: stored adversarial examples of a run crafted again from their seeds, checked
against their records (robeval.results.recrafting) and drawn (robeval.report.gallery)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..core.defaults import DEFAULT_STORE
from ..core.errors import UserError
from .app import WholeOption, app, say
from .results import NAMED_CODE_HELP

FIGURE_SUFFIXES = (".png", ".svg")


@app.command("examples")
def examples_cmd(
    run_id: str = typer.Argument(..., help="Run id (`robeval runs` lists them)."),
    model: Optional[list[str]] = typer.Option(
        None,
        "--model",
        "-m",
        help="A model of the run to draw (repeatable; side by side in this order; default every model). "
        "In --select, A and B are the first and second. " + NAMED_CODE_HELP,
    ),
    attack: str = typer.Option(..., "--attack", "-a", help="The attack of the run whose images to craft again."),
    eps: Optional[str] = typer.Option(None, help="An eps of the run (default: its only one)."),
    select: Optional[str] = typer.Option(
        None,
        "--select",
        help="Conditions on the examples' records, comma-separated, each MODEL-fooled (right on the clean image, "
        "wrong under the attack) or MODEL-robust (right under the attack); MODEL: a model of the run, or A/B. "
        'E.g. "A-fooled,B-robust". Default: where the drawn models disagree first.',
    ),
    examples: Optional[str] = typer.Option(None, "--examples", help="Example indices instead (3,17,42)."),
    max_examples: int = WholeOption(8, "--max", help="At most this many examples (rows)."),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="The figure: PNG, or SVG when it ends in .svg (default results/examples-RUN-ATTACK.png).",
    ),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N."),
    data_dir: str = typer.Option("./data", help="Where --data cifar10/cifar100/mnist of the run are read."),
    trust_checkpoint: bool = typer.Option(False, help="Allow full unpickling of the run's checkpoints."),
    threads: Optional[int] = WholeOption(
        None, help="CPU threads (default: as many as the run used; another count may round differently)."
    ),
) -> None:
    """Craft stored adversarial examples again from their seeds (per-example attacks: exactly), check
    each prediction and perturbation norm against its stored record, and draw clean | adversarial |
    perturbation for each model side by side.  Exit 1 when a regenerated record differs."""
    from ..report.files import check_out_file
    from ..report.gallery import draw_gallery
    from ..results.recrafting import plan_recrafting

    out = out or Path("results") / f"examples-{run_id}-{attack}.png"
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise UserError(f"--out {out}: the figure is written as .png or .svg")
    options = dict(device=device, data_dir=data_dir, trust_checkpoint=trust_checkpoint, threads=threads)
    plan = plan_recrafting(store, run_id, model, attack, eps, select, examples, max_examples, **options)
    check_out_file(out)  # before minutes of crafting
    shown = draw_gallery(plan)
    for line in shown.report():
        say(line)
    shown.write(out)
    rows, models = len(shown.examples), len(plan.models)
    say(f"Wrote {out} ({rows} example{'s' * (rows != 1)} x {models} model{'s' * (models != 1)})")
    if shown.mismatches:
        raise typer.Exit(1)
