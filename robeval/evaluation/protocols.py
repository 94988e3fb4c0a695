"""Evaluation protocols: what space attacks act in, which labels they use, and their settings; each
registration's ``description`` says what it is, docs/protocols.md why (``nielsen2024`` reproduces a paper
and is no valid pixel-space threat model; ``fast`` screens, never a leaderboard entry).

AutoAttack's versions (``version=`` of its ``AutoAttack`` and of RobustBench's ``benchmark()``) are
protocols: a protocol that is one says so (``autoattack_version``), and :func:`autoattack_version`
finds it by the version's name.  ``standard`` is the standard protocol with AutoAttack's four attacks
(``version_attacks``); ``plus`` and ``rand`` are aa-plus and aa-rand with their own attacks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..attacks import list_attacks
from ..attacks.registry import PER_BATCH_IN_LIBRARY
from ..core.errors import lookup
from ..core.registry import Registry
from .fast.audit import AUDIT_RATE, AUDIT_STAGES, FAST_PASS, FAST_TARGETS, LIBRARY_DRAWS

PIXEL_BOX = (0.0, 1.0)


@dataclass(frozen=True)
class Protocol:
    name: str
    description: str
    space: str  # "pixel" or "normalized"
    predicted_labels: frozenset[str] = frozenset()  # attacks that use clean predictions as labels
    unclipped: frozenset[str] = frozenset()  # attacks with no input box
    attack_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)  # set on every model that has the option
    valid_threat_model: bool = True
    default_attacks: tuple[str, ...] = ()  # what it runs when --attacks is not given (empty: the seven-attack suite)
    attack_notes: dict[str, str] = field(default_factory=dict)  # what a table must say of an attack's rows
    autoattack_version: str | None = None  # the AutoAttack version this protocol is (its set_version name)
    version_attacks: tuple[str, ...] = ()  # the AutoAttack version's attacks in its order (empty: ``default_attacks``)
    # An audited protocol (fast): its last attacks run first on a seeded sample of the examples the ones
    # before left robust, then, as that audit decides, on every survivor (robeval.evaluation.fast.audit)
    audit_stages: tuple[str, ...] = ()
    audit_rate: float = 0.0  # the share of survivors the audit samples
    library_draws: frozenset[str] = frozenset()  # attacks drawn as AutoAttack's code draws them (--cascade's)

    def label_source(self, attack: str) -> str:
        return "predicted" if attack in self.predicted_labels else "true"

    def box(self, attack: str) -> tuple[float, float] | None:
        return None if attack in self.unclipped else PIXEL_BOX

    def settings_for(self, attack: str) -> dict[str, Any]:
        return dict(self.attack_settings.get(attack, {}))

    @property
    def pass_end(self) -> str:
        """An audited protocol's last attack before its audit's stages (the records its first stage starts from)."""
        return self.default_attacks[self.default_attacks.index(self.audit_stages[0]) - 1]

    def autoattack_version_attacks(self) -> tuple[str, ...]:
        """The attacks of the AutoAttack version this protocol is, in AutoAttack's order."""
        return self.version_attacks or self.default_attacks


PROTOCOLS: Registry[Protocol] = Registry("protocol")


def autoattack_version(version: str) -> Protocol:
    """The protocol that is AutoAttack's ``version`` (its ``autoattack_version``); one line for another name."""
    versions = {p.autoattack_version: p for p in PROTOCOLS.values() if p.autoattack_version is not None}
    return lookup(versions, version, "AutoAttack version")


RAND_EOT = 20  # AutoAttack's rand version: APGD's gradient averaged over 20 passes (randomised defences)
for _protocol in (
    Protocol(
        name="standard",
        description="attacks on [0,1] pixels, normalization inside the model, ground-truth labels",
        space="pixel",  # every attack with its registered defaults
        autoattack_version="standard",  # RobustBench's leaderboards: these four with their defaults
        version_attacks=("apgd-ce", "apgd-t", "fab-t", "square"),
    ),
    Protocol(
        name="nielsen2024",
        description=(
            "REPRODUCTION ONLY, not a valid pixel-space threat model: attacks on the normalized tensor "
            "(eps in normalized units), clean-prediction labels and no clipping for fgsm/pgd/spsa, "
            "AutoAttack's [0,1] clamp on normalized values, token median in elliptical models, and the "
            "authors' cleverhans SPSA (random start, final iterate, no early stop, gradient estimated "
            "around 2x as their code does)"
        ),
        space="normalized",
        predicted_labels=frozenset({"fgsm", "pgd", "spsa"}),
        unclipped=frozenset({"fgsm", "pgd", "spsa"}),
        attack_settings={
            "pgd": {"steps": 20, "rel_stepsize": 0.15, "random_start": True},
            "spsa": {
                "iterations": 40,
                "samples": 128,  # +/- pairs: cleverhans' spsa_samples=128 evaluates 256 inputs per step
                "lr": 0.01,
                "delta": 0.01,
                "random_start": True,
                "keep_best": False,
                "early_stop": False,
                "estimate_at_2x": True,
            },
        },
        model_options={"token_reduction": "median"},
        valid_threat_model=False,
        attack_notes={
            "fab-t": (
                "FAB-T counts a point only within eps of the input, and AutoAttack's [0,1] clamp of "
                "normalized values moves its points farther than that: under this protocol it finds none, "
                "so FAB-T equals clean accuracy"
            )
        },
    ),
    Protocol(
        name="aa-plus",
        description=(
            "AutoAttack's plus version on [0,1] pixels (Croce & Hein 2020): APGD-CE and APGD-DLR with 5 "
            "restarts, untargeted FAB with 5 restarts, Square with 5000 queries, APGD-T and FAB-T with 9 "
            "target classes; every attack on every example, so top-5 is measured under attack"
        ),
        space="pixel",
        attack_settings={
            "apgd-ce": {"n_restarts": 5},
            "apgd-dlr": {"n_restarts": 5},
            "fab": {"n_restarts": 5},
            "square": {"n_queries": 5000},
            "apgd-t": {"n_target_classes": 9},
            "fab-t": {"n_target_classes": 9},
        },
        default_attacks=("apgd-ce", "apgd-dlr", "fab", "square", "apgd-t", "fab-t"),
        autoattack_version="plus",
    ),
    Protocol(
        name="aa-rand",
        description=(
            "AutoAttack's rand version on [0,1] pixels, for randomised defences: APGD-CE and APGD-DLR with "
            f"their gradient averaged over {RAND_EOT} passes (EOT)"
        ),
        space="pixel",
        attack_settings={"apgd-ce": {"eot_iter": RAND_EOT}, "apgd-dlr": {"eot_iter": RAND_EOT}},
        default_attacks=("apgd-ce", "apgd-dlr"),
        autoattack_version="rand",
    ),
    Protocol(
        name="fast",
        description=(
            "AutoAttack's worst case at a fraction of its cost, for development, sweeps and screening checkpoints, "
            "never a leaderboard number: on [0,1] pixels, APGD-CE, then APGD-T on the "
            f"{FAST_TARGETS} best MALT-ranked targets; an audit of a seeded {AUDIT_RATE:.0%} sample of the surviving "
            "examples by what AutoAttack would still run (its other APGD-T targets, FAB-T, Square), escalated to "
            "every survivor when it breaks a point; the run prints a one-sided 95% lower bound on AutoAttack's "
            "robust accuracy"
        ),
        space="pixel",
        default_attacks=FAST_PASS + AUDIT_STAGES,
        attack_settings={
            "apgd-t-malt": {"n_target_classes": FAST_TARGETS},
            "apgd-t-rest": {"skip_malt_targets": FAST_TARGETS},
        },
        audit_stages=AUDIT_STAGES,
        audit_rate=AUDIT_RATE,
        library_draws=frozenset(LIBRARY_DRAWS),
    ),
):
    PROTOCOLS.add(_protocol.name, _protocol)


def autoattack_options(version: str) -> dict[str, Any]:
    """The run options of AutoAttack's ``version``: its protocol, and its attacks where they are not the
    protocol's own (None: the protocol's)."""
    protocol = autoattack_version(version)
    return {"protocol": protocol.name, "attacks": ",".join(protocol.version_attacks) or None}


RESTART_PROTOCOLS = ("standard", "aa-plus")  # one restart per attack vs AutoAttack's plus version


def restarted_attacks() -> list[str]:
    """The attacks that aa-plus runs with more restarts than the standard protocol."""
    plus = PROTOCOLS.require("aa-plus")
    return [a for a in plus.default_attacks if "n_restarts" in plus.settings_for(a)]


# Which attacks of a stored run can be crafted again exactly (robeval.evaluation.regenerate crafts them): the
# rule alone, torch-free, so that the report chooses its gallery's attack without loading a model.
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
