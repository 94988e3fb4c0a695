"""The checks ``robeval run`` makes before it loads torch (several seconds): a typo in an option
answers at once.  They use the same rules as the library (eps, seeds, settings, protocols, shifts)
and the models and attacks of the listing cache (:mod:`robeval.cli.listing`); the library checks again
what needs torch (checkpoints, data, model classes)."""

from __future__ import annotations

import fnmatch
from typing import Any

from ..eps import parse_eps_list
from ..errors import UserError, lookup
from ..model_config import parse_model_config
from ..precision import PRECISIONS
from ..references import PREFIX_NAMES, check_callable_named, check_reference_file, is_reference, split_label
from ..seeds import check_seed
from ..settings import check_set_targets, parse_attack_names, parse_set_items
from .listing import catalog


def positive(name: str, value: int | None, least: int = 1) -> None:
    if value is not None and value < least:
        raise UserError(f"{name} must be at least {least}, got {value}")


def check_model_names(patterns: list[str], known: list[str], unavailable: dict[str, str] | None = None) -> None:
    """Glob patterns match a listed model; plain names are listed (or carry a resolver's prefix); the
    user's code names a file that exists (it is imported once torch has loaded); a plugin's name that
    could not be had says why."""
    listed = dict.fromkeys(known)
    for pattern in patterns:
        reference, label = split_label(pattern)
        if is_reference(reference):
            check_reference_file(reference)
            continue
        name = pattern.partition("=")[0]
        if name.partition(":")[0] in PREFIX_NAMES:
            continue
        if any(ch in name for ch in "*?["):
            if not any(fnmatch.fnmatchcase(n, name) for n in known):
                raise UserError(f"model pattern {name!r} matches no registered model")
        elif name in (unavailable or {}):
            raise UserError((unavailable or {})[name])
        else:
            check_callable_named(name)
            lookup(listed, name, "model", "robeval models")


def run_attacks(attacks: str | None, protocol: str, shift: str | None, rows: list[dict[str, Any]]) -> list[str]:
    """The attacks a run will evaluate (as the library decides them), from the listing."""
    from ..evaluation.protocols import get_protocol

    default = get_protocol(protocol).attacks
    if attacks is None:
        attacks = "none" if shift else (",".join(default) or "all")
    return parse_attack_names(attacks, {a["name"]: a["in_suite"] for a in rows})


def precheck_run(opts: dict[str, Any]) -> None:
    """Raise the one-line error of the first option that is wrong, without loading torch."""
    for name in ("batch_size", "n_examples", "threads", "nproc"):
        positive(f"--{name.replace('_', '-')}", opts.get(name))
    positive("--workers", opts.get("workers"), least=0)
    check_seed(opts["seed"])
    parse_eps_list(opts["eps"], opts["norm"])
    for option, value, choices in (
        ("--weights", opts["weights"], ("default", "random")),
        ("--precision", opts["precision"], tuple(PRECISIONS)),
    ):
        if value not in choices:
            raise UserError(f"invalid {option} {value!r}: choose {' or '.join(choices)}")
    if opts.get("shift") is not None:
        from ..shifts import get_shift, parse_severities

        kind = get_shift(opts["shift"])
        if kind.has_conditions:  # --corruptions from the kind's own set (ImageNet-C's, 3DCC's, C-bar's)
            kind.corruption_set.parse(opts.get("corruptions"))
            parse_severities(opts.get("severities"))
    listing = catalog(say_warnings=False)  # of the models it runs, the run says what is wrong
    check_model_names(
        list(opts.get("models") or []) + ([opts["source_model"]] if opts.get("source_model") else []),
        [m["name"] for m in listing["models"]],
        listing.get("unavailable"),
    )
    named = [split_label(m)[1] or split_label(m)[0] for m in opts.get("models") or []]
    parse_model_config(list(opts.get("model_config") or []), named)
    attacks = run_attacks(opts.get("attacks"), opts["protocol"], opts.get("shift"), listing["attacks"])
    settings = parse_set_items(list(opts.get("settings") or []), {a["name"]: a["defaults"] for a in listing["attacks"]})
    check_set_targets(settings, attacks)
    kinds = {a["name"]: a["kind"] for a in listing["attacks"]}
    if opts.get("source_model") and not any(kinds[a] == "transfer" for a in attacks):
        raise UserError("--source-model is for transfer attacks (--attacks transfer-pgd or transfer-apgd-ce)")
