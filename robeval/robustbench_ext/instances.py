"""A model given as an ``nn.Module`` instance (RobustBench's ``benchmark(model)``), evaluated by robeval's
engine, which takes model names: while :func:`registered` holds it, the instance is the model
``module:<label>@<hash>``.  robeval evaluates a copy taken at registration (the caller's module is never
moved, put in eval mode or frozen, and changing it afterwards changes nothing); the builder gives that
copy, whose state dict is the weights (a source of its own, ``module``).  ``<hash>`` starts the SHA-256
of that state dict, so the run's identity names the weights: a resume or a comparison never mixes two
different modules under one name."""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..errors import UserError
from ..models.registry import ModelSpec, register_prefix
from ..models.weights import WEIGHT_SOURCES, Loaded, Weights
from ..models.wrapper import set_config

PREFIX = "module"
HASH_CHARS = 16  # of the state dict's SHA-256 in the model's name (the full digest is its checkpoint SHA-256)


@dataclass(frozen=True)
class Instance:
    """A registered module: a copy taken at registration (what is evaluated, whatever happens to the
    caller's module afterwards), its image configuration and the SHA-256 of its state dict."""

    snapshot: nn.Module
    config: dict[str, Any]
    sha: str


INSTANCES: dict[str, list[Instance]] = {}  # name -> its registrations, innermost last


def state_dict_sha256(module: nn.Module) -> str:
    """SHA-256 over the state dict: every entry's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for key, value in sorted(module.state_dict().items()):
        tensor = value.detach().to("cpu").contiguous()
        digest.update(f"{key}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def module_name(module: nn.Module, label: str | None, sha: str) -> str:
    """``module:<label>@<hash>``; the label is the caller's model name, else the module's class."""
    shown = re.sub(r"[^A-Za-z0-9._+-]+", "-", label or type(module).__name__).strip("-") or "model"
    return f"{PREFIX}:{shown}@{sha[:HASH_CHARS]}"


def _snapshot(module: nn.Module) -> nn.Module:
    try:
        return copy.deepcopy(module)
    except Exception as exc:  # a module holding something that cannot be copied (an open file, a lock)
        raise UserError(
            f"benchmark() evaluates a copy of the model, and this {type(module).__name__} cannot be copied: {exc}"
        ) from None


@contextmanager
def registered(module: nn.Module, image_config: dict[str, Any], label: str | None = None) -> Iterator[str]:
    """``module`` as a model name for as long as the block runs (``image_config``: its input size,
    classes and preprocessing, as a builder's ``pretrained_cfg``)."""
    if not isinstance(module, nn.Module):
        raise UserError(f"the model must be a torch.nn.Module taking [0,1] images, got {type(module).__name__}")
    sha = state_dict_sha256(module)
    name = module_name(module, label, sha)
    entry = Instance(set_config(_snapshot(module), image_config), dict(image_config), sha)
    INSTANCES.setdefault(name, []).append(entry)
    try:
        yield name
    finally:
        INSTANCES[name].remove(entry)
        if not INSTANCES[name]:
            del INSTANCES[name]


def _instance(name: str) -> Instance:
    if name not in INSTANCES:
        raise UserError(
            f"{name} names a module given to benchmark() in another process: its stored runs can be read, "
            "not run again by name"
        )
    return INSTANCES[name][-1]


def _instance_weights(name: str) -> Loaded:
    instance = _instance(name)
    return instance.snapshot.state_dict(), None, instance.sha


WEIGHT_SOURCES.add(PREFIX, _instance_weights)


@register_prefix(PREFIX)
def _resolve_instance(rest: str) -> ModelSpec:
    name = f"{PREFIX}:{rest}"
    instance = _instance(name)

    def build() -> nn.Module:
        return instance.snapshot  # robeval's own copy: the engine may move it, freeze it, wrap it

    return ModelSpec(
        name,
        type(instance.snapshot).__name__,
        build,
        weights=Weights(PREFIX, name, f"state dict SHA-256 {instance.sha[:HASH_CHARS]}"),
        description="a module given to benchmark() (takes [0,1] images)",
    )
