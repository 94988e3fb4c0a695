"""The ``robeval`` command: a thin Typer layer over the library (parse, call, print).

One module per group of commands; importing them registers the commands on ``app`` in the order
``robeval --help`` lists them.
"""

from . import run, info, results, reproduce  # noqa: F401  (registers the commands)
from .app import app, main
from .run import drop_option, resume_command

__all__ = ["app", "drop_option", "main", "resume_command"]
