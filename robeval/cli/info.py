"""What robeval offers: ``robeval models``, ``robeval attacks`` and the efficiency table ``robeval profile``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..core.errors import UserError
from .app import WholeOption, app, emit, show


@app.command("profile")
def profile_cmd(
    model: list[str] = typer.Option(..., "--model", "-m", help="Model names (repeatable); the first is the baseline."),
    batch_size: int = WholeOption(8, help="Images per pass."),
    device: str = typer.Option("cpu", help="cpu or cuda."),
    repeats: int = WholeOption(5, help="Timed repeats per model, interleaved across models; the median is shown."),
    format: str = typer.Option("md", "--format", "-f", help="md or csv."),
    out: Optional[Path] = typer.Option(None, help="Write to FILE instead of printing."),
) -> None:
    """The efficiency table: parameters, FLOPs/image, forward and fwd+bwd throughput, peak memory."""
    from ..evaluation.plan import resolve_device
    from ..evaluation.profiling import profile
    from ..models import expand_model_patterns
    from ..models.admission import admit_model
    from ..report.formats import offered
    from ..report.profile_table import profile_document

    names = expand_model_patterns(list(model))
    for name in names:
        admit_model(name)  # as a run admits it: a plugin's network that does not build is one line
    if batch_size <= 0:
        raise UserError(f"--batch-size must be positive, got {batch_size}")
    if repeats <= 0:
        raise UserError(f"--repeats must be positive, got {repeats}")
    device = str(resolve_device(device))  # as a run reads --device: a missing GPU is one line
    written = offered(format, ("md", "csv"))
    if out is not None:
        from ..report.files import check_out_file

        check_out_file(out)  # before the minutes of profiling
    df = profile(names, batch_size=batch_size, device=device, repeats=repeats)
    emit(written.render(profile_document(df)), out)


def _settings(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "-"


MODELS_TITLE = (
    "robeval models (also: timm:<arch>, hf-hub:<owner>/<repo>, robustbench:<name>, and your own code: "
    "PATH.py:CALLABLE or PKG.MODULE:CALLABLE)"
)


@app.command("models")
def models_cmd() -> None:
    """List the models: name, family, parameters, input size, options, weights, what it is, and the
    package it comes from (robeval, or an installed plugin's)."""
    from ..models import list_models  # registrations as data: torch loads only for an installed plugin's
    from ..report.document import Table

    rows = []
    for m in list_models():
        options = _settings(m.options) + (f" ({_settings(m.adaptive)})" if m.adaptive else "")
        params = "-" if m.params is None else f"{m.params / 1e6:.2f}M"
        size = "x".join(map(str, m.config.input_size)) if m.config and m.config.input_size else "-"
        rows.append([m.name, m.family, params, size, options, m.weights.describe(), m.description, m.package])
    head = ("name", "family", "params", "input", "options (adaptive)", "weights", "description", "package")
    show([Table(head, rows, text_columns=range(len(head)), title=MODELS_TITLE)])


@app.command("attacks")
def attacks_cmd() -> None:
    """List the attacks: kind, norms, default settings, implementation and what each does."""
    from ..attacks import list_attacks  # registrations as data: no torch
    from ..report.document import Table

    head = ("name", "kind", "norms", "defaults", "implementation", "description")
    rows = [
        [a.name, a.kind, ",".join(a.norms), _settings(a.defaults), a.implementation, a.description]
        for a in list_attacks()
    ]
    title = "robeval attacks (override settings with --set ATTACK.KEY=VALUE)"
    show([Table(head, rows, text_columns=range(len(head)), title=title)])
