"""The one judge of a run's options (docs/layout.md): :func:`make_config` turns what a user gives into
the configuration the engine reads.  Torch-free: ``robeval run`` calls it before torch loads, so a
wrong option answers at once; the plan checks what needs torch (the device, the models' code and
weights, the data).  Given a configuration's own fields again it gives the same one (:func:`remake`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..attack_settings import parse_set_items
from ..attacks import ATTACKS, parse_attack_list, resolve_settings
from ..core.defaults import DEFAULT_EPS, DEFAULT_MODELS, DEFAULT_N_EXAMPLES, DIGITS
from ..core.eps import parse_eps_list
from ..core.errors import UserError
from ..core.records import model_key
from ..core.seeds import check_seed
from ..core.threads import PER_CORE, at_most_cores
from ..data.published import check_data_options
from ..model_config import parse_model_config
from ..models.names import check_model_name, expand_model_patterns, is_own_code
from ..options import EvalConfig, option_default
from ..references import refuse_label_clashes, refuse_repeated_names, split_label
from ..robustbench_ext.dataset_facts import resolve_subset
from ..shifts.catalog import parse_severities
from ..shifts.kinds import SHIFT_KINDS
from .fast.audit import check_audited
from .protocols import PROTOCOLS

MODEL_KEYED = ("checkpoints", "references", "model_config")  # options keyed by model name


def at_least(option: str, value: int | None, least: int) -> None:
    if value is not None and value < least:
        raise UserError(f"{option} must be at least {least}, got {value}")


def member_paths(name: str, given: str | Path | list[str]) -> list[str]:
    """A model's checkpoints, one per member: ``A,B,C`` (unless the whole text is one existing file) and
    quoted globs (``seeds/NAME-seed*.safetensors``) expanded in sorted order; one line for a glob that
    matches nothing and for one file given twice."""
    texts = [str(given)] if isinstance(given, (str, Path)) else [str(g) for g in given]
    parts = [p.strip() for t in texts for p in ([t] if Path(t).exists() else t.split(","))]
    paths: list[str] = []
    for part in parts:
        if not part:
            raise UserError(f"--checkpoint {name}={','.join(texts)}: an empty path in the list")
        matched = sorted(glob.glob(part)) if glob.has_magic(part) and not Path(part).exists() else [part]
        if not matched:
            raise UserError(f"--checkpoint {name}={part}: no file matches {part}")
        paths += matched
    _refuse_one_file_twice(name, paths)
    return paths


def file_identity(path: str) -> tuple[Any, ...]:
    """What tells one file from another: its device and inode where it exists (one file under two
    spellings, through a symbolic link or a hard link is one), else its normalised absolute path."""
    try:
        found = os.stat(path)
    except OSError:
        return ("path", os.path.normpath(os.path.abspath(path)))
    return ("file", found.st_dev, found.st_ino)


def _refuse_one_file_twice(name: str, paths: list[str]) -> None:
    """One file among a model's members twice (``a.pt`` and ``./a.pt``, a link to it): one member counted
    twice, whose spread would read 0."""
    seen: dict[tuple[Any, ...], str] = {}
    for path in paths:
        first = seen.setdefault(file_identity(path), path)
        if first != path or paths.count(path) > 1:
            what = f"{path} is" if first == path else f"{first} and {path} are one file,"
            raise UserError(f"--checkpoint {name}: {what} given twice; each member is a checkpoint of its own")


def split_checkpoints(items: list[str], models: list[str]) -> dict[str, list[str]]:
    """``PATH`` (for a single model) or ``MODEL=PATH``, once per model; a model's several members as
    ``MODEL=A,B,C`` or a glob (:func:`member_paths`)."""
    out: dict[str, list[str]] = {}
    for item in items:
        name, eq, path = item.partition("=")
        if eq and name and not Path(item).exists():
            name, path = name.strip(), path.strip()
        elif len(models) == 1:
            name, path = models[0], item
        else:
            raise UserError(f"--checkpoint {item!r}: with several models write MODEL=PATH")
        if name in out:  # never the last one silently
            raise UserError(
                f"--checkpoint: two checkpoints for {name} ({','.join(out[name])} and {path}); give one, or "
                f"several as the members of one model: --checkpoint {name}=A,B,C"
            )
        out[name] = member_paths(name, path)
    return out


def _names(models: Any, labelled: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The models' names (patterns expanded, each known) and the code behind each one named
    ``REFERENCE=NAME`` (``labelled``: such names given already, with their code)."""
    given = list(DEFAULT_MODELS) if models is None else [models] if isinstance(models, str) else list(models)
    if not given:
        raise UserError("no --model given")
    refuse_repeated_names([str(item) for item in given])
    references: dict[str, str] = {}
    names: list[str] = []
    for item in given:
        reference, label = split_label(str(item))
        check_model_name(labelled.get(reference, reference))
        if label is not None:
            references[label] = reference
        names.append(label or reference)
    refuse_label_clashes(list(references), expand_model_patterns([n for n in names if n not in references]))
    return expand_model_patterns(names), references


def _attacks(values: Mapping[str, Any]) -> list[str]:
    """The attacks to run: given, or the protocol's, or none for a shift run (which evaluates the shift alone)."""
    attacks = values.get("attacks")
    if attacks is None:
        default = ",".join(PROTOCOLS.require(values["protocol"]).default_attacks) or "all"
        attacks = "none" if values.get("shift") else default
    return parse_attack_list(attacks if isinstance(attacks, str) else list(attacks))


def _settings(values: Mapping[str, Any], attacks: list[str]) -> dict[str, dict[str, Any]]:
    """Every attack of the run -> the settings it runs with: its defaults, its protocol's, the user's,
    judged.  A settings dict (the API's) may name attacks the run leaves out (judged, then left out);
    ``--set`` (a list of ``ATTACK.KEY=VALUE``) names attacks of the run only: another is a typo."""
    given = values.get("settings") or {}
    typed = not isinstance(given, Mapping)
    overrides = parse_set_items(list(given)) if typed else {a: dict(s) for a, s in given.items()}
    protocol = PROTOCOLS.require(values["protocol"])
    out: dict[str, dict[str, Any]] = {}
    for attack in dict.fromkeys([*attacks, *overrides]):
        settings = resolve_settings(attack, {**protocol.settings_for(attack), **overrides.get(attack, {})})
        if attack in attacks:
            out[attack] = settings
        elif typed:
            raise UserError(
                f"--set {attack}.{next(iter(overrides[attack]))}: {attack} is not among the attacks of this run "
                f"({', '.join(attacks) or 'none'})"
            )
    return out


def _by_model(values: Mapping[str, Any], models: list[str]) -> dict[str, Any]:
    """The options keyed by model name, from a dict or the command line's list form."""
    checkpoints, stated = values.get("checkpoints") or {}, values.get("model_config") or {}
    return dict(
        checkpoints={m: member_paths(m, paths) for m, paths in checkpoints.items()}
        if isinstance(checkpoints, Mapping)
        else split_checkpoints(list(checkpoints), models),
        model_config={m: dict(v) for m, v in stated.items()}
        if isinstance(stated, Mapping)
        else parse_model_config(list(stated), models),
    )


def _shift_forms(values: Mapping[str, Any]) -> dict[str, Any]:
    """--corruptions and --severities of a shift that has them (the kind's own corruption set)."""
    shift = values.get("shift")
    if shift is None or not (kind := SHIFT_KINDS.require(shift)).has_conditions:
        return {}
    return dict(
        corruptions=kind.corruption_set.parse(values.get("corruptions")),
        severities=parse_severities(values.get("severities")),
    )


def _user_forms(values: dict[str, Any]) -> dict[str, Any]:
    """The fields whose user form differs from what the engine reads, parsed and judged."""
    models, references = _names(values.get("models"), values.get("references") or {})
    subset, attacks = values.get("subset"), _attacks(values)
    demo_size = DEFAULT_N_EXAMPLES if values.get("data", DIGITS) == DIGITS else None  # a folder: all of it
    return dict(
        models=models,
        references={**(values.get("references") or {}), **references},
        eps=parse_eps_list(DEFAULT_EPS if values.get("eps") is None else values["eps"], values.get("norm", "Linf")),
        attacks=attacks,
        settings=_settings(values, attacks),
        subset=list(subset) if isinstance(subset, list) else resolve_subset(subset, values.get("subset_file")),
        n_examples=values.get("n_examples") or demo_size,
        **_by_model(values, models),
        **_shift_forms(values),
    )


def _check_values(values: Mapping[str, Any]) -> None:
    """What is wrong with one option alone: an unknown keyword, a choice, a count, the seed."""
    unknown = sorted(set(values) - {f.name for f in fields(EvalConfig)})
    if unknown:
        raise TypeError(f"unknown run option {unknown[0]!r}; the options are the fields of robeval.options.EvalConfig")
    declared = fields(EvalConfig)  # each option's choices and least (robeval.options.option)
    for f in (f for f in declared if f.metadata["choices"] and f.name in values):
        if values[f.name] not in f.metadata["choices"]:
            raise UserError(f"invalid --{f.name} {values[f.name]!r}: choose {' or '.join(f.metadata['choices'])}")
    for f in (f for f in declared if f.metadata["least"] is not None):
        at_least(f"--{f.name.replace('_', '-')}", values.get(f.name), f.metadata["least"])
    for option in PER_CORE:
        at_most_cores(option, values.get(option.removeprefix("--")))
    check_seed(values.get("seed", 0))


def make_config(**values: Any) -> EvalConfig:
    """An :class:`EvalConfig` from user-level values (every keyword a field of it; see its help): each
    option judged, then the rules between them (:func:`check_config`)."""
    _check_values(values)
    values = {"protocol": option_default("protocol"), **values}
    config = EvalConfig(**{**values, **_user_forms(values)})
    check_config(config)
    return config


def remake(config: EvalConfig, models: list[str] | None = None, **changes: Any) -> EvalConfig:
    """``config`` with ``changes`` (run options), judged again by :func:`make_config`; ``models``: only
    those of its models (their checkpoints, code and stated facts with them)."""
    values = {f.name: getattr(config, f.name) for f in fields(EvalConfig)}
    if models is not None:
        values["models"] = [m for m in config.models if m in models]
        values.update({key: {m: v for m, v in values[key].items() if m in models} for key in MODEL_KEYED})
    return make_config(**{**values, **changes})


def check_config(config: EvalConfig) -> None:
    """The rules between options, one line for the first one broken."""
    protocol = PROTOCOLS.require(config.protocol)
    for attack in config.attacks:
        spec = ATTACKS.require(attack)
        if config.norm not in spec.norms:
            raise UserError(
                f"attack {attack} does not support norm {config.norm} (it supports {', '.join(spec.norms)})"
            )
        if spec.minimum_norm and config.cascade:
            raise UserError(
                f"--cascade runs fixed-eps attacks one after another; {attack} searches each example's smallest "
                "fooling perturbation: run it without --cascade"
            )
        if spec.minimum_norm and protocol.space != "pixel":
            raise UserError(
                f"{attack} measures perturbations in the [0,1] pixel box; protocol {config.protocol} attacks "
                "normalized tensors: use --protocol standard or aa-plus"
            )
    if protocol.audit_stages:  # an audited protocol's (fast) rules for the run's options
        check_audited(config, f"--protocol {protocol.name}", protocol.default_attacks)
    for rule in (check_transfer, check_shift, check_model_options):
        rule(config)
    check_data_options(config, shift_copy=config.shift is not None and SHIFT_KINDS.require(config.shift).needs_a_copy)


def check_model_options(config: EvalConfig) -> None:
    """--checkpoint and --model-config name models of the run; --model-config states own code's facts only."""
    for option, named in (("--checkpoint", config.checkpoints), ("--model-config", config.model_config)):
        missing = sorted(set(named) - set(config.models))
        if missing:
            raise UserError(f"{option} given for {missing[0]!r}, which is not among --model {', '.join(config.models)}")
    registered = sorted(m for m in config.model_config if not is_own_code(config.references.get(m, m)))
    if registered:
        raise UserError(
            f"--model-config states the facts of your own models; {registered[0]}'s are its registration's "
            "(robeval models lists them)"
        )


def check_transfer(config: EvalConfig) -> None:
    """Transfer attacks need a source model, and a threat model in which it sees the same pixels."""
    transfer = [a for a in config.attacks if ATTACKS.require(a).kind == "transfer"]
    if transfer and config.source is None:
        raise UserError(
            f"--attacks {transfer[0]} needs --source-model NAME[=CHECKPOINT]: the model the images are crafted on"
        )
    if config.source is not None and not transfer:
        raise UserError("--source-model is for transfer attacks (--attacks transfer-pgd or transfer-apgd-ce)")
    if config.source is not None:
        check_model_name(config.source[0])
        if PROTOCOLS.require(config.protocol).space != "pixel":
            raise UserError(
                f"transfer attacks need a pixel-space protocol (standard, aa-plus), not {config.protocol}: "
                "two models normalise their inputs differently"
            )


def check_shift(config: EvalConfig) -> None:
    """A shift that can be run on this data with these attacks (one line otherwise)."""
    if config.shift is None:
        if config.corruptions or config.severities:
            with_conditions = " / ".join(k for k, s in SHIFT_KINDS.items() if s.has_conditions)
            raise UserError(f"--corruptions / --severities choose conditions of --shift {with_conditions}")
        return
    SHIFT_KINDS.require(config.shift).check(config)


def model_order(models: list[str]) -> list[str]:
    """Table order: each model, then its adaptive evaluation."""
    return [key for base in models for key in (model_key(base), model_key(base, adaptive=True))]
