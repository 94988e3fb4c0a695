"""Attacks: ``create(name, model, eps, norm, seed, **settings) -> (x, y) -> x_adv``, or the classes
themselves (``PGD(model, eps=8/255)``), each with its defaults on the class."""

# registration order is the order of the attacks outside the suite in tables; SUITE orders the suite
# isort: off
from . import gradient, spsa, autoattack, transfer, minimum_norm, malt  # noqa: F401

# isort: on
from .base import Attack, margin, seeded_rng
from .registry import (
    SUITE,
    AttackSpec,
    create,
    get_attack_spec,
    list_attacks,
    parse_attack_list,
    parse_set_options,
    register_attack,
    resolve_settings,
)

__all__ = [
    "SUITE",
    "Attack",
    "AttackSpec",
    "create",
    "get_attack_spec",
    "list_attacks",
    "margin",
    "parse_attack_list",
    "parse_set_options",
    "register_attack",
    "resolve_settings",
    "seeded_rng",
]
