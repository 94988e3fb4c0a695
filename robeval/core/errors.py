"""User-facing errors: a :class:`UserError` is one line with exit code 2; anything else is a bug and may
raise with a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TypeVar

T = TypeVar("T")


class UserError(ValueError):
    """An error caused by user input; reported as one line, exit code 2.

    A ``ValueError``: a library caller (RobustBench's ``benchmark()`` callers among them, whose refusals
    are ValueErrors) catches it as one.  Code that catches ValueError around robeval's own calls must
    let a UserError through (``except UserError: raise`` first), or its message would be replaced."""


def closest(name: str, choices: Iterable[str], n: int = 3) -> str:
    """A ``did you mean`` hint listing the closest valid names (empty when none are close)."""
    matches = difflib.get_close_matches(name, list(choices), n=n, cutoff=0.5)
    return f" (did you mean {', '.join(matches)}?)" if matches else ""


def lookup(registry: Mapping[str, T], name: str, what: str, listed_by: str | None = None) -> T:
    """``registry[name]``, or the one-line error every registry gives for an unknown name."""
    if name in registry:
        return registry[name]
    where = f"`{listed_by}` lists them" if listed_by else f"valid: {', '.join(registry)}"
    raise UserError(f"unknown {what} {name!r}{closest(name, registry)}; {where}")


class StoreFull(UserError):
    """The results store could not take a unit (disk or database full): the run stops, resumable."""


class OneLineWarning(UserWarning):
    """What a user should know that stops nothing: the command line prints it as one ``warning:`` line."""


class PluginWarning(OneLineWarning):
    """A plugin that could not be loaded (or clashes with another): the command line prints it as one
    ``warning:`` line and goes on with every other model."""


class StoreWarning(OneLineWarning):
    """A results store that could not be left as robeval leaves it (its records not all folded into the
    file itself: robeval.store.Store.fold_journal)."""


# What the user's code (a model file or module, its callable, its forward, a plugin) may raise, caught
# where robeval calls it: any Exception, and SystemExit and KeyboardInterrupt too, which would otherwise
# end the command as if it had finished (``sys.exit(0)``: exit code 0 and no output) or been stopped.
USER_CODE_RAISES = (Exception, SystemExit, KeyboardInterrupt)


def raised(exc: BaseException) -> str:
    """What the user's code raised, for a one-line message: its type and the first line of its text
    (a ``SystemExit`` says that the code called ``sys.exit``)."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}): the code called sys.exit instead of returning or raising an error"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
