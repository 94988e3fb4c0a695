"""Registry of attack names -> attack classes with typed default settings.

``register_attack`` is the only thing an attack module needs; ``create`` builds one by name with
settings validated against the defaults (unknown keys and wrong types are user errors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from torch import nn

from ..errors import UserError, lookup
from ..settings import apply_settings, parse_attack_names, parse_set_items


@dataclass(frozen=True)
class AttackSpec:
    name: str
    cls: type
    norms: tuple[str, ...]
    kind: str  # "white-box" or "black-box"
    implementation: str
    defaults: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    title: str = ""  # how tables name it (FGSM, APGD-CE, ...)
    randomness: str = "none"  # where its random draws come from (run.json says it)
    in_suite: bool = True  # part of the seven-attack suite that "all" (and the default run) means
    minimum_norm: bool = False  # finds each example's smallest fooling perturbation (one run serves every eps)


_ATTACKS: dict[str, AttackSpec] = {}
ATTACK_KINDS = ("white-box", "black-box", "transfer")


def register_attack(name: str, *, norms: tuple[str, ...], kind: str, implementation: str, title: str,
                    defaults: dict[str, Any] | None = None, description: str = "",
                    randomness: str = "none", in_suite: bool = True,
                    minimum_norm: bool = False) -> Callable[[type], type]:
    """Register an attack class under ``name``: every fact about it lives here (tables, checks,
    protocols, ``robeval attacks`` and the tests read it)."""
    if kind not in ATTACK_KINDS:
        raise ValueError(f"attack {name!r}: kind must be one of {ATTACK_KINDS}")

    def decorate(cls: type) -> type:
        if name in _ATTACKS:
            raise ValueError(f"attack {name!r} registered twice")
        _ATTACKS[name] = AttackSpec(name, cls, tuple(norms), kind, implementation, dict(defaults or {}), description,
                                    title, randomness, in_suite, minimum_norm)
        return cls

    return decorate


def list_attacks() -> list[AttackSpec]:
    return list(_ATTACKS.values())


def get_attack_spec(name: str) -> AttackSpec:
    return lookup(_ATTACKS, name, "attack")


def parse_attack_list(text: str | list[str] | None) -> list[str]:
    """``"all"``/None -> the suite (every attack registered ``in_suite``, in registry order);
    ``"none"`` -> no attack; else a comma list validated by name (:func:`robeval.settings.parse_attack_names`)."""
    return parse_attack_names(text, {name: spec.in_suite for name, spec in _ATTACKS.items()})


def parse_set_options(items: list[str] | None) -> dict[str, dict[str, str]]:
    """``["pgd.steps=50", ...]`` -> ``{"pgd": {"steps": "50"}}`` (validated by name, key and value)."""
    return parse_set_items(items, {name: spec.defaults for name, spec in _ATTACKS.items()})


def resolve_settings(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults of ``name`` updated by ``overrides`` (known keys, coerced types, values within their
    limits: :mod:`robeval.settings`)."""
    return apply_settings(name, get_attack_spec(name).defaults, overrides)


def create(name: str, model: nn.Module, eps: float, norm: str = "Linf", seed: int = 0,
           clip: tuple[float, float] | None = (0.0, 1.0), **settings: Any):
    """Build attack ``name`` as a callable ``(x, y) -> x_adv`` on tensors in ``clip`` (default [0,1])."""
    spec = get_attack_spec(name)
    if norm not in spec.norms:
        raise UserError(f"attack {name} does not support norm {norm} (it supports {', '.join(spec.norms)})")
    return spec.cls(model, eps=eps, norm=norm, seed=seed, clip=clip, **resolve_settings(name, settings))
