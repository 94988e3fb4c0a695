"""What robeval offers: ``robeval models``, ``robeval attacks`` and the efficiency table ``robeval profile``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..errors import UserError
from .app import _emit, app, console


@app.command("profile")
def profile_cmd(
    model: List[str] = typer.Option(..., "--model", "-m", help="Model names (repeatable); the first is the baseline."),
    batch_size: int = typer.Option(8, help="Images per pass."),
    device: str = typer.Option("cpu", help="cpu or cuda."),
    format: str = typer.Option("md", "--format", "-f", help="md or csv."),
    out: Optional[Path] = typer.Option(None, help="Write to FILE instead of printing."),
) -> None:
    """The efficiency table: parameters, FLOPs/image, forward and fwd+bwd throughput, peak memory."""
    from ..models import expand_model_patterns, get_spec
    from ..profiling import profile, to_markdown

    names = expand_model_patterns(list(model))
    for name in names:
        get_spec(name)
    if batch_size <= 0:
        raise UserError(f"--batch-size must be positive, got {batch_size}")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise UserError("--device cuda requested but no CUDA GPU is available")
    if format not in ("md", "csv"):
        raise UserError(f"unknown format {format!r}; choose md or csv")
    df = profile(names, batch_size=batch_size, device=device)
    _emit(to_markdown(df) if format == "md" else df.to_csv(index=False), out)


@app.command("models")
def models_cmd() -> None:
    """List the registered models: name, family, parameters, input size, where weights come from."""
    from ..models import count_parameters, list_models
    from ..models import build_network
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
    from ..attacks import list_attacks

    table = Table(title="robeval attacks (override settings with --set ATTACK.KEY=VALUE)")
    for col in ("name", "kind", "norms", "defaults", "implementation"):
        table.add_column(col)
    for spec in list_attacks():
        defaults = ", ".join(f"{k}={v}" for k, v in spec.defaults.items()) or "-"
        table.add_row(spec.name, spec.kind, ",".join(spec.norms), defaults, spec.implementation)
    console.print(table)
