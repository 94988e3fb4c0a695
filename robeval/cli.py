"""The ``robeval`` command: a thin Typer layer over the library (parse, call, print)."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from .errors import UserError

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Evaluate the adversarial robustness of vision transformers (DeiT, DeiT-Elliptical).")
console = Console()
if not console.is_terminal:  # piped to a file: do not squeeze tables into 80 columns
    console = Console(width=200)


def _split_checkpoints(items: list[str], models: list[str]) -> dict[str, str]:
    """``PATH`` (for a single model) or ``MODEL=PATH``, repeatable."""
    out: dict[str, str] = {}
    for item in items:
        name, eq, path = item.partition("=")
        if eq and name and not Path(item).exists():
            out[name.strip()] = path.strip()
        elif len(models) == 1:
            out[models[0]] = item
        else:
            raise UserError(f"--checkpoint {item!r}: with several models write MODEL=PATH")
    return out


@app.command()
def run(
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Model name (repeatable; glob patterns like 'digits-*'). Default: the two embedded digits models."),
    checkpoint: Optional[List[str]] = typer.Option(None, "--checkpoint", "-c", help="PATH, or MODEL=PATH (repeatable): .pth/.pt/.safetensors weights."),
    checkpoint_key: Optional[str] = typer.Option(None, help="Key holding the weights in a training checkpoint (model, model_ema, state_dict)."),
    data: str = typer.Option("digits", help="'digits' (embedded) or an ImageNet-style folder PATH/<wnid>/*.JPEG."),
    n_examples: Optional[int] = typer.Option(None, "--n-examples", "-n", help="Class-balanced subset size (digits default 100 of 449; folder default: all)."),
    eps: str = typer.Option("8/255", help="Budget(s): 3/255, 0.0118, or a comma list 1/255,2/255."),
    norm: str = typer.Option("Linf", help="Threat model norm: Linf or L2."),
    attacks: str = typer.Option("all", help="Comma list of attacks, or 'all' (see `robeval attacks`)."),
    protocol: str = typer.Option("standard", help="standard (pixel space) or nielsen2024 (paper reproduction only)."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override an attack setting: ATTACK.KEY=VALUE (repeatable)."),
    seed: int = typer.Option(0, help="Seed for every random choice; same seed, same per-example records."),
    batch_size: Optional[int] = typer.Option(None, help="Images per batch (digits 128, folders 64)."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N."),
    workers: int = typer.Option(0, help="DataLoader worker processes for image folders."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default results/<timestamp>)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Run the attack suite and write results.csv, results.md and run.json."""
    from .api import DEFAULT_MODELS, evaluate_full
    from .attacks import parse_set_options
    from .models import expand_model_patterns
    from .report.files import prepare_out_dir, write_run_files
    from .report.terminal import RichReporter, results_tables
    from .robustbench_ext.engine import NullReporter

    models = expand_model_patterns(list(model) if model else DEFAULT_MODELS)
    out_dir = out or Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S")
    prepare_out_dir(out_dir)
    result = evaluate_full(
        reporter=NullReporter() if quiet else RichReporter(), models=models, data=data, eps=eps, attacks=attacks,
        protocol=protocol, norm=norm, n_examples=n_examples, checkpoints=_split_checkpoints(list(checkpoint or []), models),
        checkpoint_key=checkpoint_key, settings=parse_set_options(list(set_ or [])), seed=seed, batch_size=batch_size,
        device=device, workers=workers,
    )
    paths = write_run_files(result, out_dir)
    for table in results_tables(result.summary):
        console.print(table)
    console.print(f"Wrote {paths['csv']}, {paths['md']} and {paths['json']} ({result.run['seconds']:.0f} s).")
    if data == "digits" and n_examples is None:
        console.print("Scale up: --n-examples 449 (whole digits test split); on ImageNet: "
                      "robeval run --model deit-small --model deit-small-elliptical "
                      "--checkpoint deit-small-elliptical=ckpt.pth --data /data/imagenet/val --n-examples 5000 --eps 3/255")


@app.command("models")
def models_cmd() -> None:
    """List the registered models: name, family, parameters, input size, where weights come from."""
    from .models import count_parameters, list_models
    from .models.registry import get_spec
    from .models import build_network
    import torch

    table = Table(title="robeval models (also: timm:<any timm architecture>)")
    for col in ("name", "family", "params", "input", "weights"):
        table.add_column(col)
    for spec in list_models():
        with torch.device("meta"):
            net = build_network(spec.name)
        size = "x".join(map(str, net.pretrained_cfg.get("input_size", ())))
        table.add_row(spec.name, spec.family, f"{count_parameters(spec.name) / 1e6:.2f}M", size, spec.weights)
    console.print(table)


@app.command("attacks")
def attacks_cmd() -> None:
    """List the attacks with their default settings and the implementation behind each."""
    from .attacks import list_attacks

    table = Table(title="robeval attacks (override settings with --set ATTACK.KEY=VALUE)")
    for col in ("name", "kind", "norms", "defaults", "implementation"):
        table.add_column(col)
    for spec in list_attacks():
        defaults = ", ".join(f"{k}={v}" for k, v in spec.defaults.items()) or "-"
        table.add_row(spec.name, spec.kind, ",".join(spec.norms), defaults, spec.implementation)
    console.print(table)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors print one line and exit with code 2."""
    import click

    err = Console(stderr=True)
    try:
        app(args=argv, standalone_mode=False)
    except UserError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except click.exceptions.Abort:
        err.print("aborted", markup=False)
        sys.exit(130)
    except click.exceptions.ClickException as exc:
        err.print(f"error: {exc.format_message()}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
