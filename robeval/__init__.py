"""robeval: adversarial robustness evaluation of vision transformers (DeiT, DeiT-Elliptical).

Python API::

    import robeval
    model = robeval.load_model("digits-deit-elliptical")           # [0,1] images in, logits out
    table = robeval.evaluate(models=["digits-deit", "digits-deit-elliptical"], eps="8/255")
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import DEFAULT_EPS, DEFAULT_MODELS, DEFAULT_N_EXAMPLES, evaluate, evaluate_full  # noqa: E402
from .models import load_model  # noqa: E402

__all__ = ["DEFAULT_EPS", "DEFAULT_MODELS", "DEFAULT_N_EXAMPLES", "__version__", "evaluate", "evaluate_full", "load_model"]
