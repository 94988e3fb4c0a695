"""A run's configuration from the user's values, and its identity.

:func:`make_config` turns what a user gives (``robeval run`` options or ``robeval.evaluate`` keywords,
both named as the fields of :class:`~robeval.options.EvalConfig`) into the configuration the engine
reads: names expanded, eps and attacks parsed, settings checked, defaults by data kind.
:func:`semantic_config` is the part that determines the records; ``--resume`` compares it with the
stored run.  Device, worker count and DataLoader processes are not part of it.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from ..attacks import parse_attack_list, parse_set_options, resolve_settings
from ..defaults import DEFAULT_EPS, DEFAULT_MODELS, DEFAULT_N_EXAMPLES, DIGITS, SELECTIONS, SPLITS
from ..eps import parse_eps_list
from ..errors import UserError
from ..model_config import parse_model_config
from ..models import expand_model_patterns
from ..options import EvalConfig, identity_fields
from ..references import refuse_repeated_names, split_label
from ..robustbench_ext.subsets import resolve_subset
from ..seeds import check_seed
from ..shifts.kinds import get_shift
from .protocols import get_protocol

ADAPTIVE_SUFFIX = "+adaptive"  # the name of a model's second evaluation with --adaptive


def split_checkpoints(items: list[str], models: list[str]) -> dict[str, str]:
    """``PATH`` (for a single model) or ``MODEL=PATH``, repeatable."""
    from pathlib import Path

    out: dict[str, str] = {}
    for item in items:
        name, eq, path = item.partition("=")
        if eq and name and not Path(item).exists():
            name, path = name.strip(), path.strip()
        elif len(models) == 1:
            name, path = models[0], item
        else:
            raise UserError(f"--checkpoint {item!r}: with several models write MODEL=PATH")
        if name in out:  # never the last one silently
            raise UserError(f"--checkpoint: two checkpoints for {name} ({out[name]} and {path}); give one")
        out[name] = path
    return out


def _names(models: Any) -> tuple[list[str], dict[str, str]]:
    """The models' names (patterns expanded) and the code behind each one named ``REFERENCE=NAME``."""
    given = list(DEFAULT_MODELS) if models is None else [models] if isinstance(models, str) else list(models)
    if not given:
        raise UserError("no --model given")
    refuse_repeated_names([str(item) for item in given])
    references: dict[str, str] = {}
    names: list[str] = []
    for item in given:
        reference, label = split_label(str(item))
        if label is not None:
            if references.get(label, reference) != reference or label in names:
                raise UserError(f"--model ...={label}: two models are named {label}")
            references[label] = reference
        names.append(label or reference)
    return expand_model_patterns(names), references


def _model_config(values: dict[str, Any], models: list[str]) -> dict[str, dict[str, Any]]:
    stated = values.get("model_config") or {}
    if isinstance(stated, dict):
        return {m: dict(v) for m, v in stated.items()}
    return parse_model_config(list(stated), models)


def _attacks(values: dict[str, Any]) -> list[str]:
    """The attacks to run: given, or the protocol's, or none for a shift run (which evaluates the shift alone)."""
    attacks = values.get("attacks")
    if attacks is None:
        attacks = "none" if values.get("shift") else (",".join(get_protocol(values["protocol"]).attacks) or "all")
    return parse_attack_list(attacks if isinstance(attacks, str) else list(attacks))


def _user_forms(values: dict[str, Any]) -> dict[str, Any]:
    """The fields whose user form differs from what the engine reads, parsed."""
    models, references = _names(values.get("models"))
    checkpoints = values.get("checkpoints") or {}
    settings = values.get("settings") or {}
    out: dict[str, Any] = dict(
        models=models,
        references={**(values.get("references") or {}), **references},
        model_config=_model_config(values, models),
        eps=parse_eps_list(values.get("eps") or DEFAULT_EPS, values.get("norm", "Linf")),
        attacks=_attacks({"protocol": "standard", **values}),
        checkpoints=dict(checkpoints)
        if isinstance(checkpoints, dict)
        else split_checkpoints(list(checkpoints), models),
        settings=(
            {k: dict(v) for k, v in settings.items()}
            if isinstance(settings, dict)
            else parse_set_options(list(settings))
        ),
        subset=resolve_subset(values.get("subset"), values.get("subset_file")),
    )
    shift = values.get("shift")
    if shift is not None and (kind := get_shift(shift)).has_conditions:  # --corruptions: the kind's set
        from ..shifts import parse_severities

        out.update(
            corruptions=kind.corruption_set.parse(values.get("corruptions")),
            severities=parse_severities(values.get("severities")),
        )
    return out


def _data_defaults(values: dict[str, Any]) -> dict[str, Any]:
    """Defaults that depend on the data: the demo's subset size."""
    n_examples = values.get("n_examples")
    digits = values.get("data", DIGITS) == DIGITS
    return dict(n_examples=DEFAULT_N_EXAMPLES if n_examples is None and digits else n_examples)


def make_config(**values: Any) -> EvalConfig:
    """An :class:`EvalConfig` from user-level values (every keyword a field of it; see its help)."""
    unknown = sorted(set(values) - {f.name for f in fields(EvalConfig)})
    if unknown:
        raise TypeError(f"unknown run option {unknown[0]!r}; the options are the fields of robeval.options.EvalConfig")
    for option, allowed in (("weights", ("default", "random")), ("split", SPLITS), ("selection", SELECTIONS)):
        if option in values and values[option] not in allowed:
            raise UserError(f"invalid --{option} {values[option]!r}: choose {' or '.join(allowed)}")
    config = EvalConfig(**{**values, **_user_forms(values), **_data_defaults(values)})
    check_seed(config.seed)
    for attack in set(config.settings) - set(config.attacks):  # a settings dict may cover attacks not run: checked too
        attack_settings(config, attack)
    return config


def attack_settings(config: EvalConfig, attack: str) -> dict[str, Any]:
    """Protocol defaults updated by the user's ``--set`` overrides, validated."""
    protocol = get_protocol(config.protocol)
    return resolve_settings(attack, {**protocol.settings_for(attack), **config.settings.get(attack, {})})


def semantic_config(config: EvalConfig, batch_size: int, settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What determines the records (compared on --resume): every identity field, with eps as text,
    checkpoints sorted, the batch size resolved and the attack settings as they will be used."""
    out: dict[str, Any] = {f.name: getattr(config, f.name) for f in identity_fields()}
    out["eps"] = [e.text for e in config.eps]
    out["checkpoints"] = dict(sorted(config.checkpoints.items()))
    out["batch_size"] = batch_size
    out["attack_settings"] = {a: settings[a] for a in config.attacks}
    del out["settings"]  # folded into attack_settings
    if not out["references"]:
        del out["references"]  # as runs without models of the user's code were stored before it existed
    return out


def config_difference(stored: dict[str, Any], current: dict[str, Any]) -> str | None:
    """The first key where a stored run's configuration differs from ``current``, or None.

    ``current`` is first put in the form the store keeps (a JSON round trip: tuples become lists)."""
    current = json.loads(json.dumps(current, sort_keys=True, default=str))
    for key in sorted(set(stored) | set(current)):
        if stored.get(key) != current.get(key):
            return f"{key}: stored {stored.get(key)!r}, now {current.get(key)!r}"
    return None


def model_order(models: list[str]) -> list[str]:
    """Table order: each model, then its adaptive evaluation."""
    return [name for base in models for name in (base, base + ADAPTIVE_SUFFIX)]
