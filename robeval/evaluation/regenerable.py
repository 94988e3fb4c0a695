"""Which attacks of a stored run can be crafted again exactly (robeval.evaluation.regenerate crafts them):
the rule alone, torch-free, so that the report chooses its gallery's attack without loading a model."""

from __future__ import annotations

from typing import Any

from ..attacks import list_attacks
from ..attacks.registry import PER_BATCH_IN_LIBRARY
from .protocols import PROTOCOLS


def refusal(attack: str, config: dict[str, Any]) -> str | None:
    """Why ``attack`` of a run with stored ``config`` cannot be crafted again exactly, or None."""
    per_batch = [s.name for s in list_attacks() if s.randomness == PER_BATCH_IN_LIBRARY]  # draws depend on the batch
    if attack in per_batch:
        others = ", ".join(a for a in per_batch if a != attack)
        fine = ", ".join(s.name for s in list_attacks() if s.name not in per_batch)
        return (
            f"cannot regenerate {attack} exactly: its random draws are made per batch inside the AutoAttack code "
            f"(as are {others}), not per example; these attacks can be regenerated: {fine}"
        )
    protocol = config.get("protocol", "")
    chained = "--cascade" if config.get("cascade") else None
    if protocol in PROTOCOLS and PROTOCOLS[protocol].audit_stages:
        chained = f"--protocol {protocol}"  # its own cascade, with an audit
    if chained:
        return (
            f"cannot regenerate {attack} of a {chained} run: its records follow every earlier attack of the "
            "cascade; regenerate from a run without --cascade"
        )
    return None
