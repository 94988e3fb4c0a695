"""Attack registry: ``create(name, model, eps, norm, seed, **settings) -> (x, y) -> x_adv``."""

# Import order is registry order, which is the column order of the tables: fgsm, pgd, spsa, then
# AutoAttack's apgd-ce, apgd-t, fab-t, square.
from . import gradient  # noqa: F401,I001
from . import spsa  # noqa: F401,I001
from . import autoattack  # noqa: F401,I001
from . import transfer  # noqa: F401,I001
from . import minimum_norm  # noqa: F401,I001
from .base import Attack, margin, seeded_rng
from .registry import (AttackSpec, create, get_attack_spec, list_attacks, parse_attack_list, parse_set_options,
                       register_attack, resolve_settings)

__all__ = ["Attack", "AttackSpec", "create", "get_attack_spec", "list_attacks", "margin", "parse_attack_list",
           "parse_set_options", "register_attack", "resolve_settings", "seeded_rng"]
