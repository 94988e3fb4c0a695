"""``robeval run``: its options are the run options of robeval.options (declared once there, with
their help), plus where results go and how many processes run; it starts local workers (``--nproc N``,
kept in hand as docs/distributed.md says) or evaluates, then prints the tables."""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import tempfile
import time
import typing
from dataclasses import Field
from pathlib import Path
from typing import Any, Optional

import typer
from typer.models import ArgumentInfo

from ..core.defaults import DEFAULT_STORE, DIGITS
from ..core.errors import StoreFull, UserError
from ..core.machine import child_pids, cores, memory_available
from ..options import EvalConfig, option_fields
from .app import INVOKED, WholeOption, app, drop_option, report_interrupt, resumable, resume_command, say, show

# What only the command line has: where results go, resuming, local workers, progress bars.
COMMAND_OPTIONS = {
    "out": (Optional[Path], typer.Option(None, help="Output folder (default results/<run id>).")),
    "store": (Path, typer.Option(DEFAULT_STORE, help="Results store (SQLite); every finished batch lands there.")),
    "resume": (
        Optional[str],
        typer.Option(
            None,
            "--resume",
            metavar="[RUN_ID]",
            help="Continue an interrupted run (the newest unfinished one with the same options, or RUN_ID).",
        ),
    ),
    "nproc": (
        int,
        WholeOption(1, "--nproc", help="Local worker processes (started through torchrun; gloo on CPU, nccl on GPUs)."),
    ),
    "quiet": (bool, typer.Option(False, "--quiet", "-q", help="No progress bars.")),
}


def option_parameter(f: Field, types: dict[str, Any], defaults: dict[str, Any]) -> inspect.Parameter:
    """The Typer option of a run option, from its declaration (flags, help, the form the command line
    gives); ``defaults`` overrides the default a command shows (reproduce: the table's own)."""
    meta = f.metadata
    flags = meta["flags"] or (f"--{f.name.replace('_', '-')}",)
    kind = meta["cli_type"] or types[f.name]
    default = defaults.get(f.name, meta["cli_default"])
    declared = WholeOption if kind in (int, Optional[int]) else typer.Option
    return inspect.Parameter(
        f.name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=declared(default, *flags, help=meta["help"])
    )


def command_signature(
    run_options: list[Field], command_options: dict[str, tuple[Any, Any]], defaults: dict[str, Any] | None = None
) -> inspect.Signature:
    """A command's parameters: the ``run_options`` of robeval.options (``defaults``: the command's own), then
    the options only the command has; a command that takes an argument (reproduce) lists its own first."""
    types = typing.get_type_hints(EvalConfig)
    run = [option_parameter(f, types, defaults or {}) for f in run_options]
    own = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=kind, default=default)
        if isinstance(default, ArgumentInfo)
        else inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
        for name, (kind, default) in command_options.items()
    ]
    return inspect.Signature([*own, *run] if own[0].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD else [*run, *own])


def run(**values: Any) -> None:
    """Run the attack suite (and/or a distribution shift) and write results.csv, results.md and run.json."""
    from ..evaluation.config import at_least, make_config

    out, store, resume, nproc, quiet = (values.pop(name) for name in COMMAND_OPTIONS)
    options: dict[str, Any] = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
    at_least("--nproc", nproc, 1)
    config = make_config(**options)  # once, torch-free: a wrong option answers before torch loads
    _start(nproc, values["device"], store, values["trust_checkpoint"])
    from ..api import evaluate_run

    try:
        with resumable(store):
            result = evaluate_run(config, out=out or Path("results") / "{run_id}", store=store, resume=resume,
                                  progress=not quiet)  # fmt: skip
    except StoreFull as exc:  # one line: what happened, that the run is kept, how to go on
        run_id = getattr(exc, "run_id", None)
        raise UserError(
            f"{exc}; run {run_id} is interrupted: free space, then resume with: {resume_command(INVOKED, str(run_id))}"
        ) from None
    if result.info.get("rank", 0) == 0:  # a worker of --nproc leaves the tables to rank 0
        _report(result, store, demo=values["data"] == DIGITS and values["n_examples"] is None)


run.__signature__ = command_signature(option_fields(), COMMAND_OPTIONS)  # type: ignore[attr-defined]
app.command("run")(run)


def _start(nproc: int, device: str, store: Path, trust_checkpoint: bool) -> None:
    """What comes before the run: local workers (--nproc; the store shown writable before any starts: in this
    process the run's own check does it), the --trust-checkpoint warning."""
    from ..evaluation.distributed import launched_by_torchrun
    from ..store.files import check_writable_store

    if nproc > 1 and not launched_by_torchrun():
        check_writable_store(store)
        raise typer.Exit(run_local_workers(nproc, INVOKED, device, store))
    if trust_checkpoint:
        say("warning: --trust-checkpoint unpickles checkpoints fully; a malicious file can run code on this machine",
            err=True)  # fmt: skip


def run_local_workers(nproc: int, argv: list[str], device: str, store: Path) -> int:
    """``--nproc N``: the workers through torchrun (:func:`launch`); on Ctrl-C or SIGTERM every worker
    is stopped, the run marked interrupted and its resume command printed.  Returns the exit code."""
    from .app import Terminated

    check_nproc(nproc, device)
    code, run_id, signum = launch(nproc, argv)
    if signum is None:
        return code
    if run_id is not None:
        from ..store import Store

        db = Store(store)
        try:
            if db.run(run_id)["status"] == "running":  # rank 0 was killed before it could say so
                db.release(run_id, status="interrupted")
        finally:
            db.close()  # the store file left whole (Store.fold_journal)
    stop = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    stop.run_id = run_id  # type: ignore[attr-defined]
    return report_interrupt(stop, store)


WORKER_MEMORY_BYTES = 1.2 * 2**30  # torch's runtime alone is 0.7-1.2 GB per process (benchmarks/memory.py)
STOP_GRACE_SECONDS = 20.0  # after the signal, workers that have not stopped by then are killed


def check_nproc(nproc: int, device: str) -> None:
    """One line when the machine cannot hold ``nproc`` workers (each needs a core or a GPU, and memory)."""
    import torch

    gpus = torch.cuda.device_count() if device != "cpu" else 0
    have, what = (gpus, "GPUs") if gpus else (cores(), "CPU cores")
    if nproc > have:
        raise UserError(
            f"--nproc {nproc}: this machine has {have} {what} and each worker needs one of its own; "
            f"use --nproc {have} or fewer"
        )
    free = memory_available()
    if free is not None and nproc * WORKER_MEMORY_BYTES > free:
        raise UserError(
            f"--nproc {nproc}: {nproc} workers need about {nproc * WORKER_MEMORY_BYTES / 2**30:.1f} GB "
            f"but {free / 2**30:.1f} GB of memory is free; use fewer workers"
        )


def stop_workers(torchrun: subprocess.Popen, signalled: list[float]) -> int:
    """Wait for torchrun; after a signal, forward SIGTERM to its workers and kill what outlives the grace."""
    forwarded = False
    while True:
        try:
            return torchrun.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        if signalled and not forwarded:
            for pid in child_pids(torchrun.pid):
                os.kill(pid, signal.SIGTERM)
            forwarded = True
        if signalled and time.monotonic() - signalled[0] > STOP_GRACE_SECONDS:
            os.killpg(torchrun.pid, signal.SIGKILL)


def launch(nproc: int, argv: list[str]) -> tuple[int, str | None, int | None]:
    """Run the workers; returns torchrun's exit code, the run rank 0 announced, and the signal received."""
    from ..evaluation.distributed import LAUNCH_STATE

    descriptor, name = tempfile.mkstemp(prefix="robeval-launch-")
    os.close(descriptor)  # torchrun's rank 0 writes the file by its name
    state = Path(name)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", "-m", "robeval",
           *drop_option(argv, "--nproc", takes_value=True)]  # fmt: skip
    received: list[int] = []
    signalled: list[float] = []

    def on_signal(signum, frame) -> None:
        received.append(signum)
        signalled.append(time.monotonic())

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        env = {"OMP_NUM_THREADS": "1", **os.environ, LAUNCH_STATE: str(state)}  # torchrun's default, without its banner
        torchrun = subprocess.Popen(cmd, env=env, start_new_session=True)  # its agent never sees a signal: no traceback
        code = stop_workers(torchrun, signalled)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    announced = state.read_text().strip() or None
    state.unlink(missing_ok=True)
    return code, announced, received[0] if received else None


def _report(result, store: Path, demo: bool) -> None:
    """The tables, the checks and where everything went (the files are written by the API)."""
    from ..report.bests import mark_bests
    from ..report.checklist import diagnostic_lines
    from ..report.paper import paper_document
    from ..report.terminal import passes_lines

    paths = result.files
    show(paper_document(mark_bests(result.summary, result.records)))  # results.md's marks
    for line in diagnostic_lines(result.info, result.summary) + passes_lines(result.info.get("passes_per_image", {})):
        say(line)  # skipped files, stopped models, flags, adaptive gaps; the run's cost
    say(f"Run {result.run_id} stored in {store}. Wrote {paths['csv']}, {paths['md']} and {paths['json']} "
        f"({result.info['seconds']:.0f} s).")  # fmt: skip
    if result.status != "finished":  # a model stopped: the files hold what the others gave
        stopped = ", ".join(result.info.get("failed_models", {}))
        say(f"error: run {result.run_id} is incomplete: stopped {stopped} (see above); its tables say so", err=True)
        raise typer.Exit(1)
    if demo:
        say("Scale up: --n-examples 449 (whole digits test split); on ImageNet: robeval run --model deit-small --model "
            "deit-small-elliptical --checkpoint deit-small-elliptical=ckpt.pth --data /data/imagenet/val --n-examples "
            "5000 --eps 3/255")  # fmt: skip
