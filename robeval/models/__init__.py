"""Models: the registry (every model's facts as data, torch-free: :mod:`.catalog`, :mod:`.registry`,
:mod:`.names`) and loading (torch: :mod:`.loading`, imported when first asked for).  Every model
comes back as a :class:`NormalizedModel` in eval mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.registry import lazy_attributes
from ..model_config import ModelConfig
from . import catalog  # noqa: F401  (robeval's models, as data)
from .names import expand_model_patterns, get_spec, list_models
from .registry import ModelSpec, register_model
from .weights import NO_WEIGHTS, Weights, embedded_weights, timm_weights

if TYPE_CHECKING:
    from .attention.elliptical import EllipticalAttention, set_elliptical_options
    from .given import GivenModel, Members, given_from_object, split_models
    from .loading import build_network, count_parameters, load_model, model_meta, parameter_count
    from .wrapper import ModelMeta, NormalizedModel, config_of, set_config

# What needs torch, by the module it is in (imported on first use, so the registry stays torch-free)
_NEED_TORCH = {
    "attention.elliptical": ("EllipticalAttention", "set_elliptical_options"),
    "given": ("GivenModel", "Members", "given_from_object", "split_models"),
    "loading": ("build_network", "count_parameters", "load_model", "model_meta", "parameter_count"),
    "wrapper": ("ModelMeta", "NormalizedModel", "config_of", "set_config"),
}
__getattr__ = lazy_attributes(
    __name__, {name: f".{module}:{name}" for module, names in _NEED_TORCH.items() for name in names}
)

__all__ = [
    "EllipticalAttention",
    "GivenModel",
    "Members",
    "ModelConfig",
    "ModelMeta",
    "ModelSpec",
    "NormalizedModel",
    "build_network",
    "config_of",
    "set_config",
    "count_parameters",
    "parameter_count",
    "NO_WEIGHTS",
    "Weights",
    "embedded_weights",
    "expand_model_patterns",
    "given_from_object",
    "get_spec",
    "list_models",
    "load_model",
    "model_meta",
    "register_model",
    "set_elliptical_options",
    "split_models",
    "timm_weights",
]
