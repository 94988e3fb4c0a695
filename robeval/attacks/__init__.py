"""Attacks: ``create(name, model, eps, norm, seed, **settings) -> (x, y) -> x_adv``, or the classes
themselves (``PGD(model, eps=8/255)``).  Their registrations are data (:mod:`.catalog`), read without
torch; a class and the torch helpers (``Attack``, ``margin``, ``seeded_rng``) are imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.registry import lazy_attributes
from . import catalog  # noqa: F401  (robeval's attacks, as data)
from .registry import (
    ATTACKS,
    SUITE,
    AttackSpec,
    create,
    list_attacks,
    parse_attack_list,
    register_attack,
    resolve_settings,
)

if TYPE_CHECKING:
    from .base import Attack, margin, seeded_rng

# need torch: imported when asked for
__getattr__ = lazy_attributes(__name__, {name: f".base:{name}" for name in ("Attack", "margin", "seeded_rng")})

__all__ = [
    "ATTACKS",
    "SUITE",
    "Attack",
    "AttackSpec",
    "create",
    "list_attacks",
    "margin",
    "parse_attack_list",
    "register_attack",
    "resolve_settings",
    "seeded_rng",
]
