"""Registry of attack names -> attack classes, and the facts tables and checks read about each.

An attack's default settings live on its class (``PGD.defaults``: ``PGD(model, eps)`` works without
the registry); ``register_attack`` adds the facts (title, kind, norms, implementation, randomness)
and the name; the first paragraph of the class's docstring is its one-line description.  ``create`` builds one by name with settings validated against the defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ..defaults import NOT_ATTACKS
from ..errors import UserError
from ..registry import Registry
from ..settings import parse_attack_names, parse_set_items

# The seven-attack suite of the Elliptical paper's Table E, in its column order: what "all" and the
# default run mean.  The other attacks (apgd-dlr, fab, transfer, minimum-norm) are named or come with
# their protocol; tables put them after the suite in the order they are registered.
SUITE = ("fgsm", "pgd", "spsa", "apgd-ce", "apgd-t", "fab-t", "square")
ATTACK_KINDS = ("white-box", "black-box", "transfer")


@dataclass(frozen=True)
class AttackSpec:
    name: str
    cls: type
    norms: tuple[str, ...]
    kind: str  # "white-box", "black-box" or "transfer"
    implementation: str
    defaults: dict[str, Any] = field(default_factory=dict)  # the class's own
    description: str = ""
    title: str = ""  # how tables name it (FGSM, APGD-CE, ...)
    randomness: str = "none"  # where its random draws come from (run.json says it)
    minimum_norm: bool = False  # finds each example's smallest fooling perturbation (one run serves every eps)

    @property
    def in_suite(self) -> bool:
        return self.name in SUITE


ATTACKS: Registry[AttackSpec] = Registry("attack", "robeval attacks")


def register_attack(
    name: str,
    *,
    title: str,
    implementation: str,
    kind: str = "white-box",
    norms: tuple[str, ...] = ("Linf", "L2"),
    description: str | None = None,
    randomness: str = "none",
    minimum_norm: bool = False,
) -> Callable[[type], type]:
    """Register an attack class under ``name``: every fact about it lives here or on the class
    (tables, checks, protocols, ``robeval attacks`` and the tests read it); ``description``
    defaults to the first paragraph of the class's docstring."""
    if kind not in ATTACK_KINDS:
        raise ValueError(f"attack {name!r}: kind must be one of {ATTACK_KINDS}")
    if name in NOT_ATTACKS:
        raise ValueError(f"attack name {name!r} is taken by a results row that is no attack")

    def decorate(cls: type) -> type:
        cls.name = name  # type: ignore[attr-defined]
        ATTACKS.add(
            name,
            AttackSpec(
                name,
                cls,
                tuple(norms),
                kind,
                implementation,
                dict(getattr(cls, "defaults", {})),
                description if description is not None else first_paragraph(cls.__doc__),
                title,
                randomness,
                minimum_norm,
            ),
        )
        return cls

    return decorate


def first_paragraph(doc: str | None) -> str:
    """A docstring's first paragraph on one line (the class's own docstring, not a base class's)."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def list_attacks() -> list[AttackSpec]:
    """Every attack: the suite in its order, then the others in registration order."""
    return [ATTACKS[n] for n in SUITE if n in ATTACKS] + [s for n, s in ATTACKS.items() if n not in SUITE]


def get_attack_spec(name: str) -> AttackSpec:
    return ATTACKS.get(name)


def parse_attack_list(text: str | list[str] | None) -> list[str]:
    """``"all"``/None -> the suite; ``"none"`` -> no attack; else a comma list validated by name
    (:func:`robeval.settings.parse_attack_names`)."""
    return parse_attack_names(text, {spec.name: spec.in_suite for spec in list_attacks()})


def parse_set_options(items: list[str] | None) -> dict[str, dict[str, str]]:
    """``["pgd.steps=50", ...]`` -> ``{"pgd": {"steps": "50"}}`` (validated by name, key and value)."""
    return parse_set_items(items, {name: spec.defaults for name, spec in ATTACKS.items()})


def resolve_settings(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults of ``name`` updated by ``overrides`` (known keys, coerced types, values within their
    limits: :mod:`robeval.settings`)."""
    from ..settings import apply_settings

    return apply_settings(name, get_attack_spec(name).defaults, overrides)


def create(
    name: str,
    model: nn.Module,
    eps: float,
    norm: str = "Linf",
    seed: int = 0,
    clip: tuple[float, float] | None = (0.0, 1.0),
    source: Any = None,
    **settings: Any,
):
    """Build attack ``name`` as a callable ``(x, y) -> x_adv`` on tensors in ``clip`` (default [0,1]);
    ``source``: a transfer attack's source model (robeval.attacks.transfer.SourceModel)."""
    spec = get_attack_spec(name)
    if norm not in spec.norms:
        raise UserError(f"attack {name} does not support norm {norm} (it supports {', '.join(spec.norms)})")
    if spec.kind == "transfer":
        settings["source"] = source
    return spec.cls(model, eps=eps, norm=norm, seed=seed, clip=clip, **settings)
