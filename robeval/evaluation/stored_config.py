"""Where run options meet a stored run's configuration (its identity: what
:func:`~.config.semantic_config` stores and ``--resume`` compares), the one place each way:

* :func:`rebuild_config`: the configuration of a stored run rebuilt from what the store keeps, some
  options changed (the large-eps run of ``robeval check --run-missing``) or none (``robeval
  examples``, which crafts a run's examples again); checked to give the stored configuration back.
* :func:`stored_identity` and :func:`newest_matching`: the configuration a run of some options would
  store, and the newest stored run that has it (``--resume`` alone, ``benchmark(aa_state_path=...)``,
  the column runs of ``robeval reproduce --resume``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from ..errors import UserError
from ..models import GivenModel, split_models
from ..options import EvalConfig, identity_fields
from .config import config_difference, make_config
from .plan import make_plan

# Options the store keeps in another form than the option takes: eps as text, the settings resolved
# for each attack run (``attack_settings``), the batch size resolved.
REBUILT = {"eps", "attacks", "settings", "batch_size"}
STORED_AS = {"settings": ("attack_settings",), "attacks": ("attacks", "attack_settings")}  # option -> identity keys
MODEL_KEYED = ("checkpoints", "references", "given_models")  # identity entries keyed by model name


def only_models(identity: Mapping[str, Any], models: list[str] | None) -> dict[str, Any]:
    """A run's identity as if it had evaluated only ``models`` (None: all of them)."""
    if models is None:
        return dict(identity)
    out = {**identity, "models": [m for m in identity["models"] if m in models]}
    for key in MODEL_KEYED:
        if key in out:
            out[key] = {name: value for name, value in out[key].items() if name in models}
            if not out[key] and key != "checkpoints":  # as semantic_config leaves them out when empty
                del out[key]
    return out


def rebuild_config(
    stored: Mapping[str, Any], models: list[str] | None = None, reset: Iterable[str] = (), **changes: Any
) -> EvalConfig:
    """The :class:`EvalConfig` of a stored run, from its stored configuration ``stored``: only ``models``
    of its models (None: all; one that cannot be built here, a module given from Python, then stands in
    no one's way), the options named in ``reset`` at their defaults, ``changes`` given (run options, or
    what is no part of the identity: device, data_dir, threads, trust_checkpoint).  One line when this
    robeval would not give the rest of the stored configuration back (another version's defaults, a
    missing option)."""
    stored = only_models(stored, models)
    options = {f.name: stored[f.name] for f in identity_fields() if f.name in stored and f.name not in REBUILT}
    options.update(
        eps=list(stored["eps"]),
        attacks=list(stored["attacks"]),
        settings=stored.get("attack_settings", {}),
        batch_size=stored["batch_size"],
    )
    reset = set(reset)
    config = make_config(**{**{k: v for k, v in options.items() if k not in reset}, **changes})
    touched = {key for name in reset | set(changes) for key in STORED_AS.get(name, (name,))}
    rebuilt = {k: v for k, v in make_plan(config).identity().items() if k not in touched}
    diff = config_difference({k: v for k, v in stored.items() if k not in touched}, rebuilt)
    if diff is not None:
        raise UserError(f"the stored run's configuration cannot be rebuilt here: {diff}")
    return config


def stored_identity(options: Mapping[str, Any], given: dict[str, GivenModel] | None = None) -> dict[str, Any]:
    """The configuration a run of ``options`` stores (its run options; others, such as ``out`` or
    ``store``, are passed over; modules in ``models`` count by their name, source and weights)."""
    names = {f.name for f in fields(EvalConfig)}
    plain = {k: v for k, v in options.items() if k in names}
    if given is None:
        models, given = split_models(plain.get("models"))
        if models is not None:
            plain["models"] = models
    return make_plan(make_config(**plain), given).identity()


def newest_matching(candidates: Iterable[tuple[str, dict[str, Any]]], identity: dict[str, Any]) -> str | None:
    """The first of ``candidates`` (run id, stored configuration; newest first) stored with ``identity``."""
    return next((run_id for run_id, stored in candidates if config_difference(stored, identity) is None), None)
