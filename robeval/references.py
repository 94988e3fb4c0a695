"""How a model from the user's own code is named: ``PATH.py:CALLABLE`` or ``PKG.MODULE:CALLABLE`` (the
``module:attribute`` convention of uvicorn and gunicorn), optionally ``...=NAME`` for the name tables use.

Torch-free: the command line tells a reference from a registered name, and finds a missing file, before
torch loads.  Importing and calling the code is :mod:`robeval.models.user_code`'s.
"""

from __future__ import annotations

import re
from pathlib import Path

from .core.errors import UserError
from .core.printable import as_one, read_alike, refuse_hidden

PREFIX_NAMES = ("timm", "hf-hub", "robustbench", "module")  # names with a resolver's prefix, not code
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def split_label(text: str) -> tuple[str, str | None]:
    """``REFERENCE=NAME`` -> (REFERENCE, NAME); a plain name or reference -> (it, None)."""
    reference, eq, label = text.partition("=")
    if eq and is_reference(reference):
        if not label.strip():
            raise UserError(f"--model {text!r}: write REFERENCE=NAME with a NAME for the tables")
        refuse_hidden([label], "--model ...=NAME: the name", "the command line")
        return reference, label.strip()
    return text, None


def refuse_repeated_names(items: list[str]) -> None:
    """Each model of a run has one name, which shows as it is: a name holding a hidden character
    (robeval.core.printable), and two ``--model`` entries whose names read as one (a model given twice,
    ``./mine.py:build=digits-deit`` beside ``digits-deit`` or ``ｄｉｇｉｔｓ-deit``, in either order) are
    one line, never one silently replacing the other."""
    names = [split_label(item)[1] or item for item in items]
    refuse_hidden(names, "--model: the name", "the command line")
    if (pair := read_alike(names)) is None:
        return
    (first, one), (second, other) = ((names[i], items[i]) for i in pair)
    if one == other:
        raise UserError(f"--model {first!r} is given twice: give each model once")
    both = f"{first!r} is the name of both" if first == second else f"{as_one(first, second)}, are the names of"
    raise UserError(
        f"--model {both} {one!r} and {other!r}: each model of a run has one name (name your code's model "
        "otherwise: PATH.py:CALLABLE=NAME)"
    )


def refuse_label_clashes(labels: list[str], expanded: list[str]) -> None:
    """A ``REFERENCE=NAME`` label that reads as one of the models the other ``--model`` entries stand for,
    patterns expanded (``./mine.py:build=digits-deit`` beside ``digits-*``): one line, never one of the
    two models silently left out."""
    names = [*labels, *expanded]
    if (pair := read_alike(names)) is not None:
        raise UserError(
            f"--model: two models of the run would be shown as {as_one(*(names[i] for i in pair))}: each model "
            "of a run has one name (name your code's model otherwise: PATH.py:CALLABLE=NAME)"
        )


def parts(reference: str) -> tuple[str, str]:
    """(target, attribute): the file or module, and the callable's (possibly dotted) name in it."""
    target, _, attribute = reference.rpartition(":")
    return target, attribute


def is_reference(name: str) -> bool:
    """Whether ``name`` names the user's code (``x.py:f``, ``pkg.mod:f``) rather than a model or prefix."""
    if ":" not in name or name.partition(":")[0] in PREFIX_NAMES:
        return False
    target, attribute = parts(name)
    if not target or not _DOTTED.fullmatch(attribute):
        return False
    return target.endswith(".py") or bool(_DOTTED.fullmatch(target))


def is_file_reference(reference: str) -> bool:
    return parts(reference)[0].endswith(".py")


def code_identity(reference: str) -> str:
    """What a reference names wherever it is given from: a file's name and callable (``mine.py:build`` for
    ``./mine.py:build`` and ``../work/mine.py:build``), a module's reference as it is."""
    target, attribute = parts(reference)
    return f"{Path(target).name}:{attribute}" if is_file_reference(reference) else reference


def names_one_model(recorded: str, names: tuple[str, ...]) -> bool:
    """Whether the model name a checkpoint records is one of ``names`` (a model's registered name, its
    reference, its label), a reference to code counting by :func:`code_identity`."""
    if recorded in names:
        return True
    own = [code_identity(name) for name in names if is_reference(name)]
    return is_reference(recorded) and code_identity(recorded) in own


def check_reference_file(reference: str) -> None:
    """A ``PATH.py:CALLABLE`` whose file does not exist: one line naming it (before anything loads)."""
    if is_file_reference(reference):
        path = Path(parts(reference)[0])
        if not path.is_file():
            raise UserError(f"model file not found: {path} (from --model {reference})")


def check_callable_named(name: str) -> None:
    """A ``.py`` file given without the callable that builds the model: one line saying how to name it."""
    target = name.partition("=")[0]
    if target.endswith(".py"):
        raise UserError(
            f"--model {name!r}: name the callable in it that returns the model, as PATH.py:CALLABLE "
            f"(for example {target}:build)"
        )
