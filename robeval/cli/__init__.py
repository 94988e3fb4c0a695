"""The ``robeval`` command: a thin Typer layer over the library (parse, call, print).

One module per group of commands; importing them registers the commands on ``app`` in the order
``robeval --help`` lists them.
"""

# isort: off
from . import run, info, train, results, reproduce  # noqa: F401

# isort: on
from .app import app, main

__all__ = ["app", "main"]
