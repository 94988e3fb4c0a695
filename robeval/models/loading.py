"""Building and loading registered models: the bare network, its parameter count, a model ready to
evaluate (:func:`load_model`: [0,1] images in, normalization inside, eval mode)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..core.errors import UserError
from ..core.registry import placed
from ..zoo import zoo_path
from .checkpoint import OpenedCheckpoint, load_checkpoint, load_state_dict_strict, open_checkpoint
from .given import complete_config
from .names import get_spec
from .provenance import model_code
from .registry import ModelSpec
from .weights import WEIGHT_SOURCES, Loaded, Weights
from .wrapper import ModelMeta, NormalizedModel, parameter_count


def _check_options(spec: ModelSpec, options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        valid = ", ".join(spec.options) or "none"
        raise UserError(f"model {spec.name} has no option {unknown[0]!r} (valid: {valid})")
    return {**spec.options, **options}


def build_network(name: str, **options: Any) -> torch.nn.Module:
    """The bare network (expects normalized input) for ``name``, randomly initialised."""
    spec = get_spec(name)
    return spec.builder(**_check_options(spec, options))


def count_parameters(name: str) -> int:
    """Number of parameters of ``name``, counted on the meta device (no memory, no weights)."""
    with torch.device("meta"):
        return parameter_count(build_network(name))


def model_meta(spec: ModelSpec, options: dict[str, Any], net: torch.nn.Module | None = None) -> ModelMeta:
    """What a model is: input size, classes, preprocessing; a registration's facts (data), else what the
    built network says (a timm-style ``pretrained_cfg``, its output for its classes): ``net``, else the
    network built on the meta device (no memory, no weights) to read them."""
    config = spec.config
    if config is None:
        if net is None:
            with torch.device("meta"):
                net = spec.builder(**_check_options(spec, options))
        config = complete_config(net, spec.name)
    return ModelMeta(spec.name, spec.family, config, options=options, source=spec.reference, params=spec.params,
                     code=model_code(spec))  # fmt: skip


def embedded_state(name: str) -> Loaded:
    """The embedded weights of ``name`` (the ``embedded`` weight source), read once from the zoo's file."""
    path = zoo_path(name)
    if not path.exists():
        raise UserError(f"embedded checkpoint {path.name} is missing; run scripts/train_demo_models.py {name}")
    opened = open_checkpoint(path)
    return dict(opened.state), opened


def load_default_weights(net: torch.nn.Module, name: str, weights: Weights) -> OpenedCheckpoint | None:
    """Load ``weights`` into ``net`` (model ``name``) strictly; returns the file they came from, if any."""
    if not weights.exists:
        raise UserError(f"{name} has no public weights; pass --checkpoint {name}=PATH")
    state, opened = placed(WEIGHT_SOURCES[weights.kind])(weights.source)
    load_state_dict_strict(net, state, name, f"{weights.describe()}")
    return opened


def load_model(
    name: str,
    checkpoint: str | Path | OpenedCheckpoint | None = None,
    checkpoint_key: str | None = None,
    trust_checkpoint: bool = False,
    device: str | torch.device = "cpu",
    pretrained: bool = True,
    **options: Any,
) -> NormalizedModel:
    """Build ``name`` in eval mode, taking [0,1] NCHW images (normalization inside).

    ``name``: a registered model, a plugin's, or the user's code (``PATH.py:CALLABLE``,
    ``PKG.MODULE:CALLABLE``: its weights are what the code gives).  ``checkpoint``: a .pth/.pt/.safetensors
    file (bare state dict, or a dict with ``model``, ``model_ema`` or ``state_dict``; pick with
    ``checkpoint_key``), or one already read (:func:`~.checkpoint.open_checkpoint`: a run's, read once when
    it was admitted); loaded strictly.  Without it the model's default weights are used (timm hub, or
    the embedded demo zoo); ``pretrained=False`` gives random weights instead (smoke tests, profiling,
    making checkpoints): ``meta.weights`` is then ``"random"`` and every table says so.  ``options`` are
    the model's own (``robeval models``).
    """
    spec = get_spec(name)
    opts = _check_options(spec, options)
    net = spec.builder(**opts)
    opened: OpenedCheckpoint | None = None
    if checkpoint is not None:
        opened = load_checkpoint(net, checkpoint, spec.name, checkpoint_key, trust_checkpoint)
        weights = f"checkpoint {opened.path}"
    elif spec.reference is not None:
        weights = f"from its code ({spec.reference})"
    elif not pretrained:
        weights = "random"
    else:
        opened = load_default_weights(net, spec.name, spec.weights)
        weights = spec.weights.describe()
    meta = model_meta(spec, opts, net)
    meta.weights = weights
    if opened is not None:
        meta.checkpoint, meta.checkpoint_sha256, meta.recipe = opened.path, opened.sha256, opened.recipe
    if meta.params is None:  # a plugin's kind: no count as data
        meta.params = parameter_count(net)
    return NormalizedModel(net, meta).to(device)
