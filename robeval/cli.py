"""The ``robeval`` command: a thin Typer layer over the library (parse, call, print)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from .errors import UserError
from .api import DEFAULT_EPS
from .store import DEFAULT_STORE, Store

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


def drop_option(argv: list[str], name: str, takes_value: bool) -> list[str]:
    """``argv`` without ``name`` (``--name VALUE``, ``--name=VALUE`` or a bare ``--name``)."""
    kept: list[str] = []
    skip_next = False
    for i, arg in enumerate(argv):
        if skip_next:
            skip_next = False
            continue
        if arg == name:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            skip_next = takes_value and nxt is not None and not nxt.startswith("-")
            continue
        if arg.startswith(name + "="):
            continue
        kept.append(arg)
    return kept


def launch_local_workers(nproc: int, argv: list[str]) -> int:
    """Start ``nproc`` local workers of the same command through torchrun; returns its exit code."""
    import subprocess

    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           "-m", "robeval", *drop_option(argv, "--nproc", takes_value=True)]
    return subprocess.call(cmd)


def resume_command(argv: list[str], run_id: str) -> str:
    """The command line that continues run ``run_id``: the same options plus ``--resume RUN_ID``."""
    kept = drop_option(argv, "--resume", takes_value=True)
    if not kept or kept[0] != "run":
        kept.insert(0, "run")
    return shlex.join(["robeval", *kept, "--resume", run_id])


@app.command()
def run(
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Model name (repeatable; glob patterns like 'digits-*'). Default: the two embedded digits models."),
    checkpoint: Optional[List[str]] = typer.Option(None, "--checkpoint", "-c", help="PATH, or MODEL=PATH (repeatable): .pth/.pt/.safetensors weights."),
    checkpoint_key: Optional[str] = typer.Option(None, help="Key holding the weights in a training checkpoint (model, model_ema, state_dict)."),
    data: str = typer.Option("digits", help="'digits' (embedded) or an ImageNet-style folder PATH/<wnid>/*.JPEG."),
    n_examples: Optional[int] = typer.Option(None, "--n-examples", "-n", help="Class-balanced subset size (digits default 100 of 449; folder default: all); with --subset a prefix of the list."),
    subset: Optional[str] = typer.Option(None, help="robustbench-5000: RobustBench's fixed ImageNet list (from the installed robustbench package)."),
    subset_file: Optional[Path] = typer.Option(None, help="A file listing images (paths relative to --data), one per line."),
    eps: str = typer.Option(DEFAULT_EPS, help="Budget(s): 3/255, 0.0118, or a comma list 1/255,2/255."),
    norm: str = typer.Option("Linf", help="Threat model norm: Linf or L2."),
    attacks: str = typer.Option("all", help="Comma list of attacks, or 'all' (see `robeval attacks`)."),
    protocol: str = typer.Option("standard", help="standard (pixel space) or nielsen2024 (paper reproduction only)."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override an attack setting: ATTACK.KEY=VALUE (repeatable)."),
    seed: int = typer.Option(0, help="Seed for every random choice; same seed, same per-example records."),
    batch_size: Optional[int] = typer.Option(None, help="Images per batch (digits 128; image folders 64 on a GPU, 16 on a CPU)."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N."),
    workers: Optional[int] = typer.Option(None, help="DataLoader worker processes (default: 0 for digits, up to 8 for folders)."),
    amp: str = typer.Option("off", help="Autocast the model: off, bf16 or fp16 (fp16 on GPU only)."),
    channels_last: bool = typer.Option(False, "--channels-last", help="Channels-last memory format for model and images."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default results/<run id>)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store (SQLite); every finished batch lands there."),
    resume: Optional[str] = typer.Option(None, "--resume", metavar="[RUN_ID]",
                                         help="Continue an interrupted run (the newest unfinished one, or RUN_ID)."),
    strict_data: bool = typer.Option(False, "--strict-data", help="Unreadable image files are an error (default: skipped and listed)."),
    trust_checkpoint: bool = typer.Option(False, "--trust-checkpoint", help="Allow full unpickling of checkpoints (runs code from the file!)."),
    adaptive: bool = typer.Option(False, "--adaptive", help="Also attack elliptical models with gradients through M (white-box attacks)."),
    nproc: int = typer.Option(1, "--nproc", help="Local worker processes (started through torchrun; gloo on CPU, nccl on GPUs)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Run the attack suite and write results.csv, results.md and run.json."""
    from .api import DEFAULT_MODELS, evaluate_full
    from .attacks import parse_set_options
    from .models import expand_model_patterns
    from .report.files import prepare_out_dir, write_run_files
    from .report.terminal import RichReporter, results_tables
    from .robustbench_ext.engine import NullReporter

    from .robustbench_ext.distributed import init_from_env, launched_by_torchrun, shutdown

    if nproc < 1:
        raise UserError(f"--nproc must be at least 1, got {nproc}")
    if nproc > 1 and not launched_by_torchrun():
        raise typer.Exit(launch_local_workers(nproc, sys.argv[1:]))
    models = expand_model_patterns(list(model) if model else DEFAULT_MODELS)
    ctx = init_from_env(device)
    if not ctx.is_main:
        quiet = True
    if out is not None and ctx.is_main:
        prepare_out_dir(out)
    db = Store(store) if ctx.is_main else store  # workers open their own file next to the store
    if trust_checkpoint:
        Console(stderr=True).print("warning: --trust-checkpoint unpickles checkpoints fully; a malicious file can run "
                                   "code on this machine", markup=False)
    try:
        result = evaluate_full(
            reporter=NullReporter() if quiet else RichReporter(), store=db, resume=resume, models=models, data=data,
            eps=eps, attacks=attacks, protocol=protocol, norm=norm, n_examples=n_examples,
            checkpoints=_split_checkpoints(list(checkpoint or []), models), checkpoint_key=checkpoint_key,
            settings=parse_set_options(list(set_ or [])), seed=seed, batch_size=batch_size, device=device, workers=workers,
            strict_data=strict_data, trust_checkpoint=trust_checkpoint, adaptive=adaptive, amp=amp,
            channels_last=channels_last, ctx=ctx, subset=subset,
            subset_file=str(subset_file) if subset_file is not None else None,
        )
    except KeyboardInterrupt as exc:
        run_id = getattr(exc, "run_id", None)
        Console(stderr=True).print(f"interrupted; finished batches are kept in {store}.", markup=False, soft_wrap=True)
        if run_id:
            Console(stderr=True).print(f"resume with: {resume_command(sys.argv[1:], run_id)}", markup=False, soft_wrap=True)
        raise typer.Exit(130)
    shutdown(ctx)
    if not ctx.is_main:
        return
    out_dir = out or Path("results") / result.run["run_id"]
    paths = write_run_files(result, prepare_out_dir(out_dir))
    for table in results_tables(result.summary):
        console.print(table)
    print_diagnostics(result.run, result.summary)
    console.print(f"Run {result.run['run_id']} stored in {store}. Wrote {paths['csv']}, {paths['md']} and "
                  f"{paths['json']} ({result.run['seconds']:.0f} s).")
    if data == "digits" and n_examples is None:
        console.print("Scale up: --n-examples 449 (whole digits test split); on ImageNet: "
                      "robeval run --model deit-small --model deit-small-elliptical "
                      "--checkpoint deit-small-elliptical=ckpt.pth --data /data/imagenet/val --n-examples 5000 --eps 3/255")


@app.command("profile")
def profile_cmd(
    model: List[str] = typer.Option(..., "--model", "-m", help="Model names (repeatable); the first is the baseline."),
    batch_size: int = typer.Option(8, help="Images per pass."),
    device: str = typer.Option("cpu", help="cpu or cuda."),
    format: str = typer.Option("md", "--format", "-f", help="md or csv."),
    out: Optional[Path] = typer.Option(None, help="Write to FILE instead of printing."),
) -> None:
    """The efficiency table: parameters, FLOPs/image, forward and fwd+bwd throughput, peak memory."""
    from .models import expand_model_patterns, get_spec
    from .profiling import profile, to_markdown

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


def print_diagnostics(run: dict, summary) -> None:
    """Skipped files, stopped models, soundness flags and adaptive gaps: printed under every table."""
    from .robustbench_ext.checks import adaptive_gaps

    skipped = run.get("skipped_files", [])
    if skipped:
        shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        console.print(f"Skipped {len(skipped)} unreadable image file(s): {shown} (listed in run.json)", markup=False)
    for model, message in run.get("failed_models", {}).items():
        console.print(f"Stopped model {model}: {message}", markup=False)
    gaps = adaptive_gaps(summary)
    if not gaps.empty:
        console.print("Adaptive attack (gradients through M) vs default:", markup=False)
        for r in gaps.itertuples():
            console.print(f"  {r.model} eps {r.eps} {r.attack}: top-1 {r.top1_default:.2f} -> {r.top1_adaptive:.2f} "
                          f"(gap {r.gap:+.2f})", markup=False)
    flags = run.get("flags", [])
    if flags:
        console.print(f"Soundness checks: {len(flags)} flag(s)", markup=False)
        for f in flags:
            console.print(f"  [{f['check']}] {f['model']}: {f['message']} — {f['advice']}", markup=False, soft_wrap=True)
    else:
        console.print("Soundness checks: no flags (randomness, softmax outputs, zero gradients, black-box vs "
                      "white-box, eps monotonicity" + (", adaptive gap" if not gaps.empty else "") + ")", markup=False)


@app.command("check")
def check_cmd(
    run_id: Optional[str] = typer.Argument(None, help="Run id (default: the newest finished run)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
) -> None:
    """Run the soundness checks on a stored run and print the flags."""
    from .report.runs import resolve_runs
    from .robustbench_ext.checks import all_flags, as_dicts

    if not store.exists():
        raise UserError(f"results store not found: {store}")
    run = resolve_runs(Store(store), [run_id] if run_id else [])[0]
    flags = all_flags(run.summary, run.info.get("model_checks", {}))
    console.print(f"Run {run.run_id} ({run.protocol}):", markup=False)
    print_diagnostics({**run.info, "flags": as_dicts(flags)}, run.summary)


def _emit(text: str, out: Optional[Path]) -> None:
    """Print ``text``, or write it atomically to ``out``."""
    if out is None:
        print(text, end="" if text.endswith("\n") else "\n")
        return
    from .report.files import atomic_write, prepare_out_dir

    prepare_out_dir(out.parent if str(out.parent) else Path("."))
    atomic_write(out, text)
    console.print(f"Wrote {out}")


@app.command("runs")
def runs_cmd(store: Path = typer.Option(DEFAULT_STORE, help="Results store.")) -> None:
    """List stored runs with status, progress (finished/total units) and age."""
    from datetime import datetime, timezone

    if not store.exists():
        raise UserError(f"results store not found: {store}")
    df = Store(store).runs()
    table = Table(title=f"runs in {store}")
    for col in ("run", "status", "progress", "age", "protocol", "models", "eps", "attacks"):
        table.add_column(col)
    now = datetime.now(timezone.utc)
    for r in df.itertuples():
        import json

        cfg = json.loads(r.config)
        age = now - datetime.fromisoformat(r.created)
        minutes = int(age.total_seconds() // 60)
        age_text = f"{minutes // 1440}d" if minutes >= 1440 else f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"
        table.add_row(r.id, r.status, f"{r.done_units}/{r.total_units}", age_text, r.protocol, ", ".join(cfg["models"]),
                      ",".join(cfg["eps"]), ",".join(cfg["attacks"]))
    console.print(table)


@app.command("table")
def table_cmd(
    run_ids: Optional[List[str]] = typer.Argument(None, help="Run ids (default: the newest finished run)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    format: str = typer.Option("md", "--format", "-f", help="md, csv, latex or json."),
    out: Optional[Path] = typer.Option(None, help="Write to FILE instead of printing."),
) -> None:
    """Generate the paper table (models x attacks, Top-1/Top-5, best in bold) from stored runs."""
    from .report.paper import render
    from .report.runs import combine, resolve_runs

    if not store.exists():
        raise UserError(f"results store not found: {store}")
    _emit(render(combine(resolve_runs(Store(store), list(run_ids or []))), format), out)


@app.command("compare")
def compare_cmd(
    a: str = typer.Argument(..., help="Model A: NAME (newest run that evaluated it) or RUN_ID:NAME."),
    b: str = typer.Argument(..., help="Model B, likewise."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    format: str = typer.Option("md", "--format", "-f", help="md, csv or json."),
    seed: int = typer.Option(0, help="Seed of the bootstrap."),
    out: Optional[Path] = typer.Option(None, help="Write to FILE instead of printing."),
) -> None:
    """Paired comparison of two models on the same examples: differences, bootstrap CI, McNemar p."""
    from .report.compare import compare, to_markdown

    if not store.exists():
        raise UserError(f"results store not found: {store}")
    result = compare(Store(store), a, b, seed=seed)
    renderers = {"md": to_markdown, "csv": lambda r: r.to_csv(index=False),
                 "json": lambda r: r.to_json(orient="records", indent=2) + "\n"}
    if format not in renderers:
        raise UserError(f"unknown format {format!r}; choose md, csv or json")
    _emit(renderers[format](result), out)


@app.command("plot")
def plot_cmd(
    run_ids: Optional[List[str]] = typer.Argument(None, help="Run ids (default: the newest finished run)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    out: Path = typer.Option(Path("results") / "plots", help="Folder for the PNG and SVG files."),
) -> None:
    """Plot robust accuracy against eps (panel per attack) and a bar chart per eps."""
    from .report.files import prepare_out_dir
    from .report.plots import make_plots
    from .report.runs import combine, resolve_runs

    if not store.exists():
        raise UserError(f"results store not found: {store}")
    summary = combine(resolve_runs(Store(store), list(run_ids or [])))
    paths = make_plots(summary, prepare_out_dir(out))
    console.print(f"Wrote {len(paths)} files to {out}: " + ", ".join(p.name for p in paths))


def _optional_resume_value(argv: list[str]) -> list[str]:
    """``--resume`` alone means ``--resume latest`` (the newest unfinished run)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--resume" and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out.insert(i + 1, "latest")
            break
    return out


def _click_exceptions():
    try:  # typer >= 0.20 vendors click
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - older typer uses click itself
        from click import exceptions
    return exceptions


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors print one line and exit with code 2."""
    exceptions = _click_exceptions()
    err = Console(stderr=True)
    args = _optional_resume_value(sys.argv[1:] if argv is None else argv)
    try:
        code = app(args=args, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except UserError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Abort:
        err.print("aborted", markup=False)
        sys.exit(130)
    except exceptions.NoArgsIsHelpError as exc:
        print(exc.format_message())
        sys.exit(0)
    except exceptions.ClickException as exc:
        err.print(f"error: {exc.format_message()}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
