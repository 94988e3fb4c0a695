"""robeval: adversarial robustness evaluation of vision transformers (DeiT, DeiT-Elliptical).

Python API::

    import robeval
    model = robeval.load_model("digits-deit-elliptical")           # [0,1] images in, logits out
    run = robeval.evaluate(models=["digits-deit", "digits-deit-elliptical"], eps="8/255")  # run.summary: the table
    run = robeval.evaluate(models=[my_module, "./mynet.py:build", "digits-deit"])  # your own models too
    run = robeval.evaluate(models=["digits-deit"], checkpoints={"digits-deit": ["s0.pth", "s1.pth", "s2.pth"]})
    run = robeval.evaluate(models=[robeval.Members("mine", [net0, net1, net2])])  # mean ± std over members
    run = robeval.open_run()                   # a stored run read back, the same Run: .records, .table("md"),
                                               # .compare(a, b), .plot(out), .check(), .report(out)

The API is imported on first use, so ``robeval --help`` and other light commands start without
loading torch.
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
