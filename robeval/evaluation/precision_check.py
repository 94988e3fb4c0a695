"""Which examples a reduced-precision run crafts again in strict fp32, and with which attacks.

An attack crafted in bf16 can be weaker than in fp32 (gradients that round to zero, a margin that
loses its last digits).  Under ``--precision`` other than fp32, every fixed-eps white-box attack is
run again in fp32 (same seed, same per-example draws) on a sample of the examples, and each sampled
example's fp32 outcome is stored beside its reduced-precision one (records column ``fp32_top1``).
The sample is drawn per example from the run's seed, so it is the same for every attack, model and
batch size; it holds at least :data:`MIN_SHARE` of the examples and, on small runs, about
:data:`MIN_EXAMPLES` of them.  The check (robeval.results.checks) compares the two outcomes pairwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..attacks import get_attack_spec
from ..precision import Precision
from ..seeds import derive_seed

MIN_SHARE = 1 / 16  # of the examples, on a large run
MIN_EXAMPLES = 32  # on a small run: enough for the pairwise test to see a weakened attack
_SCALE = 2**31  # derive_seed's range


@dataclass
class PrecisionCheck:
    model: nn.Module | None  # the target as counted (fp32, no autocast); None: no check in this run
    share: float
    seed: int

    def covers(self, attack: str) -> bool:
        spec = get_attack_spec(attack)
        return self.model is not None and spec.kind == "white-box" and not spec.minimum_norm

    def rows(self, examples: list[int]) -> list[int]:
        """Positions in a batch of the sampled examples."""
        limit = self.share * _SCALE
        return [i for i, e in enumerate(examples) if derive_seed(self.seed, "fp32-check", e) % _SCALE < limit]


def precision_check(precision: Precision, model: nn.Module, n_examples: int, seed: int) -> PrecisionCheck:
    """The check of a run crafting in ``precision`` over ``n_examples`` (none for strict fp32)."""
    share = min(1.0, max(MIN_SHARE, MIN_EXAMPLES / max(n_examples, 1)))
    return PrecisionCheck(model if precision.reduced else None, share, seed)
