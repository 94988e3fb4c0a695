"""Seeds: the run's ``--seed`` and the seeds derived from it for every unit and example.

Torch-free, so the command line checks ``--seed`` before it loads torch.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .errors import UserError

MAX_SEED = 2**63 - 1  # torch.manual_seed and SQLite's INTEGER both hold a signed 64-bit value


def check_seed(seed: int) -> int:
    """``seed`` when it is a whole number from 0 to 2^63 - 1; one line otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise UserError(f"--seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    return seed


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from the run seed and a unit's or example's identity (attack, eps, index, ...)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF
