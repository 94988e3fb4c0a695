"""robeval: adversarial robustness evaluation of vision transformers (DeiT, DeiT-Elliptical).

Python API (docs/python.md): ``robeval.evaluate(models=[...], eps="8/255")`` runs an evaluation and returns
the run (``.summary`` is the table), ``robeval.load_model(name)`` builds a model, ``robeval.open_run()``
reads a stored run back.  The API is imported on first use, so ``robeval --help`` and other light commands
start without loading torch.
"""

from __future__ import annotations

from .core.defaults import DEFAULT_EPS, DEFAULT_MODELS, DEFAULT_N_EXAMPLES
from .core.registry import lazy_attributes

__version__ = "0.1.0"

__getattr__ = lazy_attributes(
    __name__,
    {
        **{name: f".api:{name}" for name in ("evaluate", "evaluate_full", "load_model", "benchmark")},
        "open_run": ".results_api:open_run",
        "ModelConfig": ".model_config:ModelConfig",
        "Members": ".models.given:Members",
        "attacks": ".attacks",
        "models": ".models",
    },
)

__all__ = [
    "DEFAULT_EPS",
    "Members",
    "ModelConfig",
    "DEFAULT_MODELS",
    "DEFAULT_N_EXAMPLES",
    "__version__",
    "benchmark",
    "evaluate",
    "evaluate_full",
    "load_model",
    "open_run",
]
