"""Every number option of every command reads its text with robeval's one grammar (robeval.core.numbers;
docs/hardening.md, rule 10), found by walking the command line's own declarations: an option added
tomorrow with a whole-number or decimal type is checked by existing.  (Options whose text robeval reads
itself, such as ``--eps`` and ``--seeds``, are in tests/test_hostile_errors.py.)"""

from __future__ import annotations

import typing
from collections.abc import Iterator

import pytest
import typer.main

import robeval.cli  # noqa: F401  (registers the commands)
from robeval.cli.app import app, decimal_option, whole_option
from tests.conftest import run_cli

# What Python's int and float (and typer's own reading) take, and robeval's grammar refuses.
HOSTILE = ["1_0", "²", "٣", " 5", "5 ", "0x10", "", "５", "5_0e-4", " 0.005"]


def commands(group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    """(its words, the command) for every command under ``group``."""
    subcommands = getattr(group, "commands", None)
    if subcommands is None:
        yield path, group
        return
    for name, command in subcommands.items():
        yield from commands(command, (*path, name))


def is_number(annotation: object) -> bool:
    """An int or float, alone or inside Optional[...], list[...]."""
    return annotation in (int, float) or any(is_number(inner) for inner in typing.get_args(annotation))


def number_options() -> dict[str, tuple[list[str], object, object]]:
    """``"COMMAND --FLAG"`` -> (the command's words, the option, its parser) for every int or float parameter."""
    found = {}
    for path, command in commands(typer.main.get_command(app)):
        for param in command.params:  # type: ignore[attr-defined]
            described = getattr(param, "type_descriptor", None)
            if described is not None and is_number(described.annotation):
                key = " ".join([*path, param.opts[0]])
                found[key] = ([*path], param, described.parameter_info.parser)
    return found


NUMBER_OPTIONS = number_options()


def test_the_walk_finds_the_number_options_robeval_has():
    assert {"train-demo --lr", "train-demo --epochs", "run --n-examples", "profile --batch-size"} <= set(NUMBER_OPTIONS)
    assert len(NUMBER_OPTIONS) >= 20


@pytest.mark.parametrize("option", sorted(NUMBER_OPTIONS))
def test_every_number_option_refuses_text_outside_the_grammar_in_one_line(option):
    words, param, parser = NUMBER_OPTIONS[option]
    # first, statically: a declaration that bypasses the grammar must not reach a command that would then run
    assert parser in (whole_option, decimal_option), f"{option}: declare it with WholeOption or DecimalOption"
    flag = param.opts[0]
    for text in HOSTILE:
        given = [flag, text] if flag.startswith("-") else [text]
        result = run_cli(*words, *given)
        lines = result.stderr.splitlines()
        assert result.returncode == 2 and len(lines) == 1, (text, result.returncode, result.stderr[-300:])
        assert lines[0].startswith("error:") and flag in lines[0] and repr(text) in lines[0], (text, lines)


def test_lr_reads_decimals_as_the_grammar_writes_them():
    assert decimal_option("5e-4") == 0.0005 and decimal_option(".5") == 0.5 and decimal_option(None) is None
    for text in ("5_0e-4", " 0.005", "0.005 ", "٠.٥", "1e", "--1"):
        with pytest.raises(typer.BadParameter):
            decimal_option(text)
