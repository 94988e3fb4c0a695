"""The Typer application, its console and the entry point that turns user errors into one line; how a
command stops: Ctrl-C and SIGTERM keep a run resumable, and the user is told the exact command that
continues it (``robeval run`` and ``robeval reproduce`` alike)."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Optional

import typer

try:  # typer >= 0.20 vendors click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as click_exceptions  # type: ignore[no-redef]

from ..core.errors import OneLineWarning, UserError
from ..core.numbers import decimal_number, whole_number
from ..core.threads import configure_process, threads_from_argv
from ..report.escaping import TerminalConsole, terminal

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Evaluate the adversarial robustness of vision transformers (DeiT, DeiT-Elliptical).",
)
console = TerminalConsole()
if not console.is_terminal:  # piped to a file: do not squeeze tables into 80 columns
    console = TerminalConsole(width=200)
err_console = TerminalConsole(stderr=True)  # rich reads sys.stderr at each print: a redirection is followed


def _number_parser(read: Callable[[str], Any], default_type: type, what: str) -> Callable[[Any], Any]:
    """An option's text read as robeval reads every number (robeval.core.numbers: ASCII digits, a sign, for
    decimals a point and an exponent; typer's own reading takes ``1_0`` as 10 and ``5_0e-4`` as 0.005)."""

    def parse(value: Any) -> Any:
        if value is None or isinstance(value, default_type):  # a default
            return value
        number = read(str(value))
        if number is None:
            raise typer.BadParameter(f"{value!r} is not {what}")
        return number

    return parse


whole_option = _number_parser(whole_number, int, "a whole number (ASCII digits, an optional sign)")
decimal_option = _number_parser(decimal_number, float, "a decimal number (ASCII digits, a point, an exponent)")
WholeOption = partial(typer.Option, parser=whole_option)  # ``typer.Option`` of a whole number
DecimalOption = partial(typer.Option, parser=decimal_option)  # ``typer.Option`` of a decimal number


def say(text: str, err: bool = False) -> None:
    """The library's text as it is, on stdout or (``err``) stderr: no markup, no highlighting, no wrapping
    (a piped output is the text itself)."""
    (err_console if err else console).print(text, markup=False, highlight=False, soft_wrap=True)


def emit(text: str, out: Optional[Path]) -> None:
    """Print ``text`` (on a terminal, its control characters as escapes), or write it atomically to ``out``."""
    if out is None:
        shown = terminal(text) if sys.stdout.isatty() else text  # a file gets the document's bytes as they are
        print(shown, end="" if text.endswith("\n") else "\n")
        return
    from ..core.atomic_files import atomic_write
    from ..report.files import check_out_file

    atomic_write(check_out_file(out), text)
    say(f"Wrote {out}")


def show(document: Any) -> None:
    """Print a document (robeval.report.document) on the console, through the terminal's renderer."""
    from ..report.terminal import to_rich

    for block in to_rich(document):
        console.print(block)


RESUMABLE_COMMANDS = ("run", "reproduce")
INVOKED: list[str] = []  # the arguments of this command (a resume command repeats them)
STOPPING: list[int] = []  # the signal that asked this process to stop, once one did


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's stop, ``kill``): handled as Ctrl-C, so the run is kept resumable."""


def raise_terminated(signum, frame) -> None:
    STOPPING.append(signum)
    raise Terminated()


def under_launcher() -> bool:
    """A worker that ``robeval run --nproc`` started: its launcher reports an interruption, not it."""
    from ..evaluation.distributed import LAUNCH_STATE, launched_by_torchrun

    return launched_by_torchrun() and LAUNCH_STATE in os.environ


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


def resume_command(argv: list[str], run_id: str) -> str:
    """The command line that continues run ``run_id``: the same options plus ``--resume RUN_ID``."""
    kept = drop_option(argv, "--resume", takes_value=True)
    if not kept or kept[0] not in RESUMABLE_COMMANDS:
        kept.insert(0, "run")
    return shlex.join(["robeval", *kept, "--resume", run_id])


def report_interrupt(exc: KeyboardInterrupt, store: Path) -> int:
    """Say what was kept and how to resume; the exit code (130 Ctrl-C, 143 SIGTERM)."""
    run_id = getattr(exc, "run_id", None)
    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    say(f"{what}; finished batches are kept in {store}.", err=True)
    if run_id:
        say(f"resume with: {resume_command(INVOKED, run_id)}", err=True)
    return 143 if isinstance(exc, Terminated) else 130


@contextmanager
def resumable(store: Path) -> Iterator[None]:
    """A run kept resumable: SIGTERM stops it as Ctrl-C does, and either ends the command saying what
    was kept and the command that continues it (a worker of ``--nproc`` leaves that to its launcher)."""
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    except KeyboardInterrupt as exc:
        raise typer.Exit(0 if under_launcher() else report_interrupt(exc, store)) from None


def _optional_resume_value(argv: list[str]) -> list[str]:
    """``--resume`` alone means ``--resume latest`` (the newest unfinished run with the same configuration)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--resume" and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out.insert(i + 1, "latest")
            break
    return out


def _one_line_warnings(shown):
    """``warnings.showwarning`` for the command: robeval's own warnings (a plugin's, the store's) are one
    ``warning:`` line on stderr (other warnings as ``shown``, Python's, prints them)."""

    def show(message, category, filename, lineno, file=None, line=None):  # warnings.showwarning's signature
        if issubclass(category, OneLineWarning):
            say(f"warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    return show


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors print one line and exit with code 2."""
    INVOKED[:] = sys.argv[1:] if argv is None else list(argv)
    args = _optional_resume_value(INVOKED)
    configure_process(threads_from_argv(args))  # before anything imports torch
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warnings(shown)
    try:
        code = app(args=args, standalone_mode=False)
    except SystemExit as exc:  # robeval's commands end with typer.Exit: this came from code they called
        say(f"error: the command was ended by SystemExit({exc.code!r}) from code it called (a model's or plugin's "
            "code calling sys.exit); it did not finish", err=True)  # fmt: skip
        sys.exit(2)
    except UserError as exc:
        say(f"error: {exc}", err=True)
        sys.exit(2)
    except typer.Abort:
        say("aborted", err=True)
        sys.exit(130)
    except click_exceptions.NoArgsIsHelpError as exc:
        print(exc.format_message())
        sys.exit(0)
    except click_exceptions.ClickException as exc:
        say(f"error: {exc.format_message()}", err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception:
        if STOPPING and under_launcher():  # a worker stopped by its launcher while waiting for another worker
            sys.exit(0)
        raise
    finally:
        warnings.showwarning = shown
    if isinstance(code, int) and code:
        sys.exit(code)
