"""AutoAttack's versions (``version=`` of RobustBench's ``benchmark()``) as robeval runs: which protocol,
which attacks in which order, which settings.  benchmark() runs each as AutoAttack does, with
``cascade=True``: every attack only on the examples the earlier ones failed on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..registry import Registry


@dataclass(frozen=True)
class Version:
    name: str
    protocol: str
    attacks: tuple[str, ...]  # empty: the protocol's own attacks
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # on top of the protocol's
    description: str = ""


VERSIONS: Registry[Version] = Registry("AutoAttack version")
STANDARD = VERSIONS.add(
    "standard",
    Version(
        "standard",
        "standard",
        ("apgd-ce", "apgd-t", "fab-t", "square"),
        description="APGD-CE, APGD-T, FAB-T and Square with AutoAttack's standard settings (RobustBench's leaderboards)",
    ),
)
VERSIONS.add(
    "plus",
    Version("plus", "aa-plus", (), description="AutoAttack's plus version: robeval's protocol aa-plus"),
)
RAND_EOT = 20  # AutoAttack's rand version: APGD's gradient averaged over 20 passes (randomised defences)
VERSIONS.add(
    "rand",
    Version(
        "rand",
        "standard",
        ("apgd-ce", "apgd-dlr"),
        {"apgd-ce": {"eot_iter": RAND_EOT}, "apgd-dlr": {"eot_iter": RAND_EOT}},
        description="AutoAttack's rand version: APGD-CE and APGD-DLR with EOT over 20 passes",
    ),
)
