"""The ``robeval`` command: a thin Typer layer over the library (parse, call, print).

One module per group of commands; importing them registers the commands on ``app`` in the order
``robeval --help`` lists them.
"""

# importing them registers the commands, in this order
# isort: off
from . import run, info, train, results, examples, reproduce  # noqa: F401

# isort: on
from .app import app, main
from .stopping import drop_option, resume_command

__all__ = ["app", "drop_option", "main", "resume_command"]
