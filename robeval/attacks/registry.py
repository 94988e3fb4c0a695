"""Registry of attack names -> the facts tables, checks and the command line read about each, and the
class that runs it.

Torch-free: a registration is data (:class:`AttackSpec`) with the place of its class, which is
imported when an attack is first built, so the command line lists attacks and checks ``--attacks`` and
``--set`` before torch loads.  robeval's own attacks are registered in :mod:`.catalog` (their classes
bind to it with :func:`registered_as`); a class written elsewhere registers itself with
:func:`register_attack`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..attack_settings import apply_settings
from ..core.defaults import NOT_ATTACKS
from ..core.errors import UserError, lookup
from ..core.registry import Registry, placed

if TYPE_CHECKING:
    from torch import nn

# The seven-attack suite of the Elliptical paper's Table E, in its column order: what "all" and the
# default run mean.  The other attacks (apgd-dlr, fab, transfer, minimum-norm) are named or come with
# their protocol; tables put them after the suite in the order they are registered.
SUITE = ("fgsm", "pgd", "spsa", "apgd-ce", "apgd-t", "fab-t", "square")
ATTACK_KINDS = ("white-box", "black-box", "transfer")

# Where an attack's random draws come from (AttackSpec.randomness; run.json reports it).
PER_EXAMPLE = "per example: seeded by (run seed, attack, eps, example index); records do not depend on the batch size"
PER_BATCH_IN_LIBRARY = (
    "per batch, inside the AutoAttack code (seeded by run seed, attack, eps, batch index): "
    "records depend on the batch size"
)


@dataclass(frozen=True)
class AttackSpec:
    name: str
    location: str | type  # the class, or where it is: "robeval.attacks.gradient:PGD" (imported when first built)
    title: str  # how tables name it (FGSM, APGD-CE, ...)
    implementation: str
    description: str
    defaults: dict[str, Any] = field(default_factory=dict)  # every setting with its default
    kind: str = "white-box"  # "white-box", "black-box" or "transfer"
    norms: tuple[str, ...] = ("Linf", "L2")
    randomness: str = "none"  # where its random draws come from (run.json says it)
    minimum_norm: bool = False  # finds each example's smallest fooling perturbation (one run serves every eps)
    curve_axis: str | None = None  # what its convergence curve counts along (ITERATIONS, QUERIES); None: no curve
    curve_setting: str = ""  # the setting that sets how many of them

    @property
    def cls(self) -> type:
        """The class that runs the attack (its module imported now, the first time)."""
        return self.location if isinstance(self.location, type) else placed(self.location)


ATTACKS: Registry[AttackSpec] = Registry("attack", "robeval attacks")
ITERATIONS, QUERIES = "iterations", "queries"  # a convergence curve's axes (robeval.attacks.convergence)
CURVE_POINTS = 20  # a curve's points after its start: every 5% of the budget (so its last tenth is 2 points)


def add_attack(spec: AttackSpec) -> AttackSpec:
    """One registration (its facts checked: a known kind, a name no results row takes)."""
    if spec.kind not in ATTACK_KINDS:
        raise ValueError(f"attack {spec.name!r}: kind must be one of {ATTACK_KINDS}")
    if spec.name in NOT_ATTACKS:
        raise ValueError(f"attack name {spec.name!r} is taken by a results row that is no attack")
    return ATTACKS.add(spec.name, spec)


def class_defaults(cls: type) -> dict[str, Any]:
    """A class's settings with their defaults: its ``defaults``, else its constructor's keywords after
    the ones every attack takes (model, eps, norm, seed, clip)."""
    stated = getattr(cls, "defaults", None)
    if stated:
        return dict(stated)
    params = list(inspect.signature(cls).parameters.values())
    common = {"model", "eps", "norm", "seed", "clip"}
    return {p.name: p.default for p in params if p.name not in common and p.default is not inspect.Parameter.empty}


def registered_as(name: str) -> Callable[[type], type]:
    """Bind one of robeval's attack classes to its registration in :mod:`.catalog` (its ``name``): the class
    takes its settings' defaults and its convergence-curve facts from there, where they are written once
    (the command line judges ``--set`` by the registration; a class used without the command line,
    ``PGD(model, eps=8/255, steps=10)``, has the same defaults)."""

    def bind(cls: type) -> type:
        spec = ATTACKS[name]
        cls.name = name  # type: ignore[attr-defined]
        cls.defaults = dict(spec.defaults)  # type: ignore[attr-defined]
        cls.curve_axis, cls.curve_setting = spec.curve_axis, spec.curve_setting  # type: ignore[attr-defined]
        return cls

    return bind


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
    """Register an attack class written outside robeval under ``name``, its defaults its own and its
    ``description`` (unless given) the first paragraph of its docstring."""

    def decorate(cls: type) -> type:
        first_paragraph = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())  # the class's own docstring
        text = description if description is not None else first_paragraph
        axis, setting = getattr(cls, "curve_axis", None), getattr(cls, "curve_setting", "")
        facts = (text, class_defaults(cls), kind, tuple(norms), randomness, minimum_norm, axis, setting)
        add_attack(AttackSpec(name, cls, title, implementation, *facts))
        cls.name = name  # type: ignore[attr-defined]
        return cls

    return decorate


def list_attacks() -> list[AttackSpec]:
    """Every attack: the suite in its order, then the others in registration order."""
    return [ATTACKS[n] for n in SUITE if n in ATTACKS] + [s for n, s in ATTACKS.items() if n not in SUITE]


def parse_attack_list(text: str | list[str] | None) -> list[str]:
    """The attacks of ``--attacks``: None or ``"all"`` -> the suite; ``"none"`` -> no attack; else a comma
    list of registered names (no duplicates, in order)."""
    suite = [n for n in SUITE if n in ATTACKS]
    if text is None:
        return suite
    items = [
        t.strip() for part in ([text] if isinstance(text, str) else text) for t in str(part).split(",") if t.strip()
    ]
    if not items:
        raise UserError("--attacks names no attack: give a comma list (see `robeval attacks`), 'all' or 'none'")
    if items in (["all"], ["none"]):
        return suite if items == ["all"] else []
    for item in items:
        lookup(ATTACKS, item, "attack", "robeval attacks")
    return list(dict.fromkeys(items))


def resolve_settings(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings attack ``name`` runs with: its defaults updated by ``overrides``, judged by
    :func:`robeval.attack_settings.apply_settings`."""
    return apply_settings(name, ATTACKS.require(name).defaults, overrides)


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
    spec = ATTACKS.require(name)
    if norm not in spec.norms:
        raise UserError(f"attack {name} does not support norm {norm} (it supports {', '.join(spec.norms)})")
    if spec.kind == "transfer":
        settings["source"] = source
    return spec.cls(model, eps=eps, norm=norm, seed=seed, clip=clip, **settings)
