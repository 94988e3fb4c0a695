"""Seeds: the run's ``--seed`` and the seeds derived from it for every unit and example.

Torch-free, so the command line checks ``--seed`` before it loads torch.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .errors import UserError
from .numbers import INT64_MAX, whole_number

MAX_SEED = INT64_MAX  # torch.manual_seed and SQLite's INTEGER both hold a signed 64-bit value


def check_seed(seed: int) -> int:
    """``seed`` when it is a whole number from 0 to 2^63 - 1; one line otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise UserError(f"--seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    return seed


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from the run seed and a unit's or example's identity (attack, eps, index, ...)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


MAX_SEEDS = 1000  # a list of training seeds longer than this is a typo (0-10000), not an experiment
SEEDS_SYNTAX = "a range 0-4, a comma list 0,2,5, or both (0-2,7)"


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """``--seeds``: seeds as ``0-4``, ``0,2,5`` or a mix (``0-2,7``), each once, in the order given;
    one line naming the part that is none of these."""
    seeds: list[int] = []
    for part in (p.strip() for p in str(text).split(",")):
        first, dash, last = part.partition("-")
        low, high = whole_number(first), whole_number(last) if dash else whole_number(first)
        if low is None or high is None:
            raise UserError(f"{option} {text!r}: {part!r} is not a seed or a range; write {SEEDS_SYNTAX}")
        if high < low or high - low >= MAX_SEEDS or len(seeds) + high - low >= MAX_SEEDS:
            raise UserError(f"{option} {text!r}: {part!r} is an empty or too long range (at most {MAX_SEEDS} seeds)")
        seeds += [check_seed(s) for s in range(low, high + 1)]
    twice = next((s for s in seeds if seeds.count(s) > 1), None)
    if twice is not None:
        raise UserError(f"{option} {text!r}: seed {twice} is given twice")
    return seeds
