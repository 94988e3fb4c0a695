"""Models that exist as modules before a run starts: an ``nn.Module`` given to ``robeval.evaluate`` (or
RobustBench's ``benchmark()``), and a model of the user's code (``--model PATH.py:CALLABLE``, a plugin's
``robeval.models`` entry point), built once when the run is planned.

The plan carries each as a :class:`GivenModel`: robeval's own copy of the module (the caller's is never
moved, put in eval mode or frozen, and changing it afterwards changes nothing) and the SHA-256 of its
state dict, so the run's identity names the weights: a resume or a comparison never mixes two different
modules under one name.  What is checked before any attack runs: docs/models.md, section Your own model.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..core.errors import UserError
from ..model_config import ModelConfig, how_to_state
from .admission import admit_config, check_output
from .checkpoint import OpenedCheckpoint, load_checkpoint, weights_sha256
from .provenance import model_code
from .registry import GIVEN, ModelSpec
from .wrapper import ModelMeta, NormalizedModel, config_of, parameter_count

HASH_CHARS = 16  # of the state dict's SHA-256 in such a name (the full digest is in the run's identity)


@dataclass
class GivenModel:
    """A model the plan carries as a module (see the module docstring): its meta (what tables call it,
    what made it: the reference PATH.py:CALLABLE or PKG.MODULE:CALLABLE, or "module:<Class>"; its
    config, every field filled), robeval's own module (the engine may move, freeze and wrap it), the
    SHA-256 of its state dict and the checkpoint its weights were loaded from, read once."""

    meta: ModelMeta
    module: nn.Module
    sha256: str
    checkpoint: OpenedCheckpoint | None = None

    def identity(self) -> dict[str, Any]:
        """What of it determines the records: its source, its weights and its image facts."""
        return {"source": self.meta.source, "weights_sha256": self.sha256, "config": self.meta.config.as_cfg()}

    def wrapped(self, device: str | torch.device = "cpu") -> NormalizedModel:
        """As the engine evaluates it: [0,1] images in (its normalization inside), eval mode, no parameter
        gradients; the checkpoint its weights were loaded from (admitted by now) holds them no more."""
        model = NormalizedModel(self.module, self.meta).to(device)
        if self.checkpoint is not None:
            self.checkpoint.release()
        return model


def complete_config(
    module: nn.Module, name: str, stated: ModelConfig | dict[str, Any] | None = None, from_python: bool = False
) -> ModelConfig:
    """The module's ``pretrained_cfg`` updated by ``stated`` (``--model-config``, or the config given with it
    from Python), every field filled and admitted (:func:`~.admission.admit_config`: a mean and std per
    channel); one line saying what is missing or wrong and how to state it."""
    config = ModelConfig.from_cfg(config_of(module)).updated(ModelConfig.from_cfg(stated))
    missing = config.missing()
    if missing:
        raise UserError(how_to_state(name, missing, from_python))
    return admit_config(config.completed(check_output(module, name, config)), name)


def given_from_spec(name: str, spec: ModelSpec, seed: int, run: Any, checkpoint: str | None = None) -> GivenModel:
    """Build a user-code model now (seeded: the same command builds the same weights), with
    ``checkpoint`` (one of the run's ``--checkpoint`` for it) and the run's ``--model-config`` for it
    (``run``: the run's config, read by attribute)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = spec.builder()
    opened = load_checkpoint(module, checkpoint, name, run.checkpoint_key, run.trust_checkpoint) if checkpoint else None
    config = complete_config(module, name, run.model_config.get(name))
    sha256 = weights_sha256(module.state_dict())
    meta = ModelMeta(
        name,
        spec.family,
        config,
        weights=f"checkpoint {checkpoint}" if checkpoint else f"from its code ({spec.reference})",
        checkpoint=opened.path if opened else None,
        checkpoint_sha256=opened.sha256 if opened else sha256,
        source=str(spec.reference),
        params=parameter_count(module),
        code=model_code(spec),
        recipe=opened.recipe if opened else None,
    )
    return GivenModel(meta, module, sha256, opened)


def module_name(module: nn.Module, label: str | None, sha: str) -> str:
    """``module:<label>@<hash>``; the label is the caller's, else the module's class."""
    shown = re.sub(r"[^A-Za-z0-9._+-]+", "-", label or type(module).__name__).strip("-") or "model"
    return f"{GIVEN}:{shown}@{sha[:HASH_CHARS]}"


def _snapshot(module: nn.Module) -> nn.Module:
    try:
        return copy.deepcopy(module)
    except Exception as exc:  # a module holding something that cannot be copied (an open file, a lock)
        raise UserError(
            f"robeval evaluates a copy of the model, and this {type(module).__name__} cannot be copied: {exc}"
        ) from None


def given_from_object(item: Any, label: str | None = None) -> GivenModel:
    """An ``nn.Module``, or ``(module, ModelConfig or pretrained_cfg dict)``, given from Python."""
    module, stated = item if isinstance(item, tuple) and len(item) == 2 else (item, None)
    if not isinstance(module, nn.Module):
        raise UserError(
            f"a model is a name, a 'module:callable' string, an nn.Module or (nn.Module, robeval.ModelConfig), "
            f"not a {type(item).__name__}"
        )
    copied = _snapshot(module)
    sha = weights_sha256(copied.state_dict())
    name = module_name(module, label, sha)
    config = complete_config(copied, name, stated, from_python=True)
    source = f"{GIVEN}:{type(module).__name__}"
    params = parameter_count(copied)
    meta = ModelMeta(
        name, type(module).__name__, config, f"the module given ({source})", None, sha, source=source, params=params
    )
    return GivenModel(meta, copied, sha)


@dataclass(frozen=True)
class Members:
    """One model of several members given from Python (docs/python.md): ``robeval.Members("mine", [module_seed0,
    module_seed1])``, each an ``nn.Module`` or a ``(module, robeval.ModelConfig)`` pair, all taking the
    same images; tables name it ``module:mine`` and show the mean ± std over its members."""

    name: str
    items: Sequence[Any]

    def given(self) -> list[GivenModel]:
        label = re.sub(r"[^A-Za-z0-9._+-]+", "-", self.name).strip("-") or "model"
        if not self.items:
            raise UserError(f"robeval.Members({self.name!r}, ...) holds no module")
        name = f"{GIVEN}:{label}"
        members = [given_from_object(item, label) for item in self.items]
        for member in members:
            member.meta.name = name
        first = members[0].meta.config
        for i, member in enumerate(members[1:], 1):
            if member.meta.config != first:
                raise UserError(
                    f"members of {name} take other images: member {i} states {member.meta.config.as_cfg()}, member 0 "
                    f"{first.as_cfg()}; the members of one model are checkpoints of one network"
                )
        return members


def _as_members(item: Any) -> Members | None:
    """``item`` as a group of members: a :class:`Members`, or ``(name, [modules])``."""
    if isinstance(item, Members):
        return item
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], (list, tuple)):
        return Members(*item)
    return None


def _one_model(items: Any) -> bool:
    """Whether ``models=`` holds one model rather than a list of them."""
    pair = isinstance(items, tuple) and len(items) == 2 and isinstance(items[0], nn.Module)
    return isinstance(items, (str, nn.Module, GivenItem, Members)) or pair or _as_members(items) is not None


def split_models(items: Any) -> tuple[list[Any] | None, dict[str, list[GivenModel]]]:
    """A ``models`` list of names, references, modules and groups of members -> the names (modules named
    ``module:...``) and the modules by name (each model's members; one for a module); None stays None
    (the default models)."""
    if items is None:
        return None, {}
    names: list[Any] = []
    given: dict[str, list[GivenModel]] = {}
    for item in [items] if _one_model(items) else items:
        if isinstance(item, str):
            names.append(item)
            continue
        group = _as_members(item)
        if group is not None:
            members = group.given()
        else:
            members = [given_from_object(*item) if isinstance(item, GivenItem) else given_from_object(item)]
        name = members[0].meta.name
        if name in given:
            raise UserError(
                f"two of the modules given are one model, {name} (the same class and weights, or the same "
                "name of members): give it once"
            )
        given[name] = members
        names.append(name)
    return names, given


@dataclass(frozen=True)
class GivenItem:
    """A module with the label its name takes (``benchmark(model_name=...)``)."""

    item: Any
    label: str | None = None

    def __iter__(self):
        return iter((self.item, self.label))
