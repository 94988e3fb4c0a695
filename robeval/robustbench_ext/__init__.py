"""What extends RobustBench: its fixed ImageNet subset (shipped as data), its data sets, threat models
and AutoAttack versions as data, its model names (``robustbench:<dataset>/<threat model>/<entry>``) and
module instances as models (``module:<label>@<hash>``; importing this package registers both), the
model-info JSON of its leaderboards, and its ``benchmark()``.

``benchmark`` runs robeval's engine, two layers above this package, so it is defined in
:mod:`robeval.api` and reached from here only when asked for: importing this package loads no engine.
"""

from typing import Any

from . import instances, models  # noqa: F401  (register the module: and robustbench: prefixes and weight sources)


def __getattr__(name: str) -> Any:
    """``robeval.robustbench_ext.benchmark`` is :func:`robeval.api.benchmark` (so a RobustBench user
    changes one import), imported on first use: the one reference from here to a layer above."""
    if name != "benchmark":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return import_module("robeval.api").benchmark
