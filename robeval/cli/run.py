"""``robeval run``: parse the options, start local workers or evaluate, print the tables."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from ..defaults import DEFAULT_EPS, DEFAULT_STORE
from ..errors import UserError
from .app import app, console, invoked_args
from .diagnostics import print_diagnostics


def split_checkpoints(items: list[str], models: list[str]) -> dict[str, str]:
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


def run_local_workers(nproc: int, argv: list[str], device: str, store: Path) -> int:
    """``--nproc N``: the workers through torchrun (:mod:`.launch`); on Ctrl-C or SIGTERM every worker
    is stopped, the run marked interrupted and its resume command printed.  Returns the exit code."""
    from .launch import check_nproc, launch

    check_nproc(nproc, device)
    code, run_id, signum = launch(nproc, argv)
    if signum is None:
        return code
    if run_id is not None:
        from ..store import Store

        db = Store(store)
        if db.run(run_id)["status"] == "running":  # rank 0 was killed before it could say so
            db.release(run_id, status="interrupted")
    stop = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    stop.run_id = run_id  # type: ignore[attr-defined]
    return report_interrupt(stop, store)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's stop, ``kill``): handled as Ctrl-C, so the run is kept resumable."""


STOPPING: list[int] = []  # the signal that asked this process to stop, once one did


def raise_terminated(signum, frame) -> None:
    STOPPING.append(signum)
    raise Terminated()


def under_launcher() -> bool:
    """A worker that ``robeval run --nproc`` started: its launcher reports an interruption, not it."""
    from ..robustbench_ext.distributed import LAUNCH_STATE, launched_by_torchrun

    return launched_by_torchrun() and LAUNCH_STATE in os.environ


RESUMABLE_COMMANDS = ("run", "reproduce")


def resume_command(argv: list[str], run_id: str) -> str:
    """The command line that continues run ``run_id``: the same options plus ``--resume RUN_ID``."""
    kept = drop_option(argv, "--resume", takes_value=True)
    if not kept or kept[0] not in RESUMABLE_COMMANDS:
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
    attacks: Optional[str] = typer.Option(None, help="Comma list of attacks, 'all' or 'none' (see `robeval attacks`). Default: all; with --shift: none."),
    source_model: Optional[str] = typer.Option(None, "--source-model", help="NAME[=CHECKPOINT]: the model transfer attacks (transfer-pgd, transfer-apgd-ce) craft their images on."),
    shift: Optional[str] = typer.Option(None, help="Distribution shift: corruptions (generated), imagenet-c (a pre-generated tree), imagenet-a or imagenet-r."),
    corruptions: Optional[str] = typer.Option(None, help="With --shift corruptions/imagenet-c: comma list, a family (noise, blur, weather, digital, extra), common (the 15, default) or all."),
    severities: Optional[str] = typer.Option(None, help="With --shift corruptions/imagenet-c: comma list of severities 1-5 (default all five)."),
    protocol: str = typer.Option("standard", help="standard (pixel space), aa-plus (AutoAttack's plus version: its six attacks unless --attacks) or nielsen2024 (paper reproduction only)."),
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
                                         help="Continue an interrupted run (the newest unfinished one with the same options, or RUN_ID)."),
    strict_data: bool = typer.Option(False, "--strict-data", help="Unreadable image files are an error (default: skipped and listed)."),
    class_map: Optional[Path] = typer.Option(None, help="FILE of 'FOLDER INDEX' lines (or JSON): the model class of each image folder, when the folders are no ImageNet wnids or a subset of the model's classes."),
    weights: str = typer.Option("default", help="default (checkpoint, timm hub or embedded zoo) or random (untrained: smoke tests; marked in every table)."),
    threads: Optional[int] = typer.Option(None, help="CPU threads (default: every core, fewer while other processes want cores; see README)."),
    trust_checkpoint: bool = typer.Option(False, "--trust-checkpoint", help="Allow full unpickling of checkpoints (runs code from the file!)."),
    adaptive: bool = typer.Option(False, "--adaptive", help="Also attack models with a data-dependent attention weight (elliptical, SPKDE) with gradients through it (white-box attacks)."),
    nproc: int = typer.Option(1, "--nproc", help="Local worker processes (started through torchrun; gloo on CPU, nccl on GPUs)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Run the attack suite (and/or a distribution shift) and write results.csv, results.md and run.json."""
    from .precheck import precheck_run

    precheck_run(dict(locals()))  # before torch loads: a typo answers at once
    from ..api import DEFAULT_MODELS, evaluate_full
    from ..attacks import parse_set_options
    from ..models import expand_model_patterns
    from ..robustbench_ext.distributed import shutdown
    from ..store import StoreFull

    models = expand_model_patterns(list(model) if model else DEFAULT_MODELS)
    ctx, db, reporter = _start(nproc, device, out, store, trust_checkpoint, quiet)
    try:
        result = evaluate_full(
            reporter=reporter, store=db, resume=resume,
            models=models, data=data, eps=eps, attacks=attacks, protocol=protocol, norm=norm, n_examples=n_examples,
            checkpoints=split_checkpoints(list(checkpoint or []), models), checkpoint_key=checkpoint_key,
            settings=parse_set_options(list(set_ or [])), seed=seed, batch_size=batch_size, device=device, workers=workers,
            strict_data=strict_data, trust_checkpoint=trust_checkpoint, adaptive=adaptive, amp=amp,
            channels_last=channels_last, ctx=ctx, subset=subset,
            subset_file=str(subset_file) if subset_file is not None else None,
            class_map=str(class_map) if class_map is not None else None, weights=weights, threads=threads,
            shift=shift, corruptions=corruptions, severities=severities, source_model=source_model,
            out=out or Path("results") / "{run_id}",
        )
    except KeyboardInterrupt as exc:
        raise typer.Exit(0 if under_launcher() else report_interrupt(exc, store)) from None
    except StoreFull as exc:  # one line: what happened, that the run is kept, how to go on
        run_id = getattr(exc, "run_id", None)
        raise UserError(f"{exc}; run {run_id} is interrupted: free space, then resume with: "
                        f"{resume_command(invoked_args(), run_id)}") from None
    shutdown(ctx)
    if ctx.is_main:
        _report(result, store, demo=data == "digits" and n_examples is None)


def _start(nproc: int, device: str, out: Optional[Path], store: Path, trust_checkpoint: bool, quiet: bool):
    """Workers launched (--nproc), this process's place among them, its output folder, store and
    progress reporter, the --trust-checkpoint warning and SIGTERM handling: what comes before the run."""
    from ..report.terminal import RichReporter
    from ..robustbench_ext.distributed import init_from_env, launched_by_torchrun
    from ..robustbench_ext.engine import NullReporter

    if nproc < 1:
        raise UserError(f"--nproc must be at least 1, got {nproc}")
    if nproc > 1 and not launched_by_torchrun():
        raise typer.Exit(run_local_workers(nproc, invoked_args(), device, store))
    ctx = init_from_env(device)
    db = store  # the API opens it (rank 0's, or a worker's own file next to it) once the options are checked
    if trust_checkpoint:
        Console(stderr=True).print("warning: --trust-checkpoint unpickles checkpoints fully; a malicious file can run "
                                   "code on this machine", markup=False)
    signal.signal(signal.SIGTERM, raise_terminated)
    return ctx, db, NullReporter() if quiet or not ctx.is_main else RichReporter()


def report_interrupt(exc: KeyboardInterrupt, store: Path) -> int:
    """Say what was kept and how to resume; the exit code (130 Ctrl-C, 143 SIGTERM)."""
    run_id = getattr(exc, "run_id", None)
    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    err = Console(stderr=True)
    err.print(f"{what}; finished batches are kept in {store}.", markup=False, soft_wrap=True)
    if run_id:
        err.print(f"resume with: {resume_command(invoked_args(), run_id)}", markup=False, soft_wrap=True)
    return 143 if isinstance(exc, Terminated) else 130


def _report(result, store: Path, demo: bool) -> None:
    """The tables, the checks and where everything went (the files are written by the API)."""
    from ..report.terminal import results_tables

    paths = result.files
    for table in results_tables(result.summary):
        console.print(table)
    print_diagnostics(result.run, result.summary)
    console.print(f"Run {result.run['run_id']} stored in {store}. Wrote {paths['csv']}, {paths['md']} and "
                  f"{paths['json']} ({result.run['seconds']:.0f} s).")
    if result.run["status"] != "finished":  # a model stopped: the files hold what the others gave
        stopped = ", ".join(result.run.get("failed_models", {}))
        Console(stderr=True).print(f"error: run {result.run['run_id']} is incomplete: stopped {stopped} (see above); "
                                   "its tables say so", markup=False, soft_wrap=True)
        raise typer.Exit(1)
    if demo:
        console.print("Scale up: --n-examples 449 (whole digits test split); on ImageNet: "
                      "robeval run --model deit-small --model deit-small-elliptical "
                      "--checkpoint deit-small-elliptical=ckpt.pth --data /data/imagenet/val --n-examples 5000 --eps 3/255")
