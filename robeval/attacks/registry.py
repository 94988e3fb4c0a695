"""Registry of attack names -> attack classes with typed default settings.

``register_attack`` is the only thing an attack module needs; ``create`` builds one by name with
settings validated against the defaults (unknown keys and wrong types are user errors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from torch import nn

from ..errors import UserError, closest, lookup


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
    ``"none"`` -> no attack (clean accuracy only); else a comma list validated by name (attacks
    outside the suite, such as ``apgd-dlr`` or ``fab``, are named or come with their protocol)."""
    suite = [name for name, spec in _ATTACKS.items() if spec.in_suite]
    if text is None:
        return suite
    items = [t.strip() for part in ([text] if isinstance(text, str) else text) for t in str(part).split(",") if t.strip()]
    if not items or items == ["all"]:
        return suite
    if items == ["none"]:
        return []
    out: list[str] = []
    for item in items:
        get_attack_spec(item)
        if item not in out:
            out.append(item)
    return out


KIND_WORDS = {bool: "true or false", int: "a whole number", float: "a number"}


def _coerce(attack: str, key: str, value: Any, default: Any) -> Any:
    kind = type(default)
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            return int(str(value).strip())
        except ValueError:
            pass
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        try:
            return float(str(value).strip())
        except ValueError:
            pass
    else:
        return str(value)
    raise UserError(f"{attack}.{key} must be {KIND_WORDS.get(kind, kind.__name__)}, got {value!r}")


def resolve_settings(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults of ``name`` updated by ``overrides`` (validated keys, coerced types)."""
    spec = get_attack_spec(name)
    settings = dict(spec.defaults)
    for key, value in (overrides or {}).items():
        if key not in spec.defaults:
            valid = ", ".join(spec.defaults) or "none"
            raise UserError(f"attack {name} has no setting {key!r}{closest(key, spec.defaults)}; valid keys: {valid}")
        settings[key] = _coerce(name, key, value, spec.defaults[key])
        if isinstance(settings[key], (int, float)) and not isinstance(settings[key], bool) and settings[key] < 0:
            raise UserError(f"{name}.{key} must not be negative, got {value!r}")
    return settings


def parse_set_options(items: list[str] | None) -> dict[str, dict[str, str]]:
    """``["pgd.steps=50", ...]`` -> ``{"pgd": {"steps": "50"}}`` (validated by name and key)."""
    out: dict[str, dict[str, str]] = {}
    for item in items or []:
        target, eq, value = item.partition("=")
        attack, dot, key = target.strip().partition(".")
        if not eq or not dot or not attack or not key:
            raise UserError(f"--set {item!r}: expected ATTACK.KEY=VALUE, e.g. pgd.steps=50")
        get_attack_spec(attack)
        resolve_settings(attack, {key: value})  # validates key and type now, before any work
        out.setdefault(attack, {})[key] = value.strip()
    return out


def create(name: str, model: nn.Module, eps: float, norm: str = "Linf", seed: int = 0,
           clip: tuple[float, float] | None = (0.0, 1.0), **settings: Any):
    """Build attack ``name`` as a callable ``(x, y) -> x_adv`` on tensors in ``clip`` (default [0,1])."""
    spec = get_attack_spec(name)
    if norm not in spec.norms:
        raise UserError(f"attack {name} does not support norm {norm} (it supports {', '.join(spec.norms)})")
    return spec.cls(model, eps=eps, norm=norm, seed=seed, clip=clip, **resolve_settings(name, settings))
