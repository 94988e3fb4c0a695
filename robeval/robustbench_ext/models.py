"""RobustBench's model names: ``robustbench:<name>``, its ImageNet L-inf zoo, when the optional
package is installed (README: RobustBench).  The network is built from RobustBench's model zoo;
its weights are a source of their own (``robustbench``), read through RobustBench's loader."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import timm
import torch
from torch import nn

from ..errors import UserError
from ..models.hub import hub_offline, hub_reachable
from ..models.registry import ModelSpec, register_prefix
from ..models.weights import WEIGHT_SOURCES, Loaded, Weights
from ..models.wrapper import IMAGENET_CONFIG, set_config

# RobustBench's ImageNet preprocessing ("Res256Crop224": resize 256, centre crop 224, bilinear).  Its
# models normalise inside, so the wrapper in front of them must not: mean 0, std 1.
ROBUSTBENCH_CFG: dict[str, Any] = dict(
    IMAGENET_CONFIG, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0), interpolation="bilinear"
)


def _robustbench_package() -> None:
    """Register ``robustbench`` as a bare package so its submodules import without its ``__init__``.

    Why: robustbench 1.1.1's ``__init__`` imports its own evaluation code, which needs ``autoattack``
    (installable only from git, not from the package index) and ``pkg_resources`` (gone from current
    setuptools), so ``import robustbench`` fails on a fresh install.  robeval needs only its model zoo
    and ``load_model`` (``robustbench.utils``), which import neither."""
    if sys.modules.get("robustbench") is not None:
        return
    spec = importlib.util.find_spec("robustbench") if "robustbench" not in sys.modules else None
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "robustbench: models need the optional robustbench package: pip install 'robeval[robustbench]' "
            "&& pip install --no-deps robustbench"
        )
    package = types.ModuleType("robustbench")
    package.__path__, package.__spec__ = list(spec.submodule_search_locations), spec
    sys.modules["robustbench"] = package


def _robustbench_utils():
    _robustbench_package()
    try:
        import robustbench.utils as rb_utils
    except ImportError as exc:
        raise UserError(
            f"the robustbench package is installed but its model zoo does not import ({exc}); "
            "pip install 'robeval[robustbench]' installs what it needs (README: RobustBench)"
        ) from None
    return rb_utils


def _failed(model_name: str, exc: Exception) -> UserError:
    reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    return UserError(f"could not load RobustBench model {model_name!r} (imagenet, Linf): {reason}")


def robustbench_network(model_name: str) -> nn.Module:
    """The entry's network, randomly initialised, taking [0,1] images (RobustBench models normalise inside)."""
    _robustbench_utils()
    timm_name = f"{model_name.lower().replace('-', '_')}_imagenet_linf"  # RobustBench's own timm naming
    try:
        if timm.is_model(timm_name):
            net = timm.create_model(timm_name, pretrained=False, num_classes=1000)
        else:
            from robustbench.model_zoo import model_dicts
            from robustbench.model_zoo.enums import BenchmarkDataset, ThreatModel

            net = model_dicts[BenchmarkDataset.imagenet][ThreatModel.Linf][model_name]["model"]()
    except Exception as exc:  # unknown name: no model here
        raise _failed(model_name, exc) from None
    return set_config(net, ROBUSTBENCH_CFG)


def robustbench_weights(model_name: str) -> Loaded:
    """The entry's weights through RobustBench's own loader (its download and checksum)."""
    rb_utils = _robustbench_utils()
    try:
        with hub_offline(not hub_reachable()):  # some entries are timm models on the hub
            net = rb_utils.load_model(
                model_name=model_name,
                model_dir=str(Path(torch.hub.get_dir()) / "robustbench"),
                dataset="imagenet",
                threat_model="Linf",
            )
    except Exception as exc:  # unknown name, network, checksum: all mean no weights here
        raise _failed(model_name, exc) from None
    return net.state_dict(), None, None


WEIGHT_SOURCES.add("robustbench", robustbench_weights)


@register_prefix("robustbench")
def _resolve_robustbench(model_name: str) -> ModelSpec:
    if not model_name:
        raise UserError("robustbench model names look like robustbench:NAME (a RobustBench ImageNet Linf entry)")
    _robustbench_utils()  # fail early, with one line, when the package is missing

    def build() -> nn.Module:
        return robustbench_network(model_name)

    return ModelSpec(
        f"robustbench:{model_name}",
        "robustbench",
        build,
        weights=Weights("robustbench", model_name, "imagenet, Linf"),
        description="RobustBench ImageNet L-inf model (normalizes inside)",
    )
