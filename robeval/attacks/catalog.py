"""Every attack robeval registers, as data: its facts and defaults, and where its class is (imported
when the attack is first built).  The order here is the order of the attacks outside the suite in
tables.  Each fact is written once, here: a class takes its defaults and curve facts with
``@registered_as(name)``."""

from __future__ import annotations

from .registry import ITERATIONS, PER_BATCH_IN_LIBRARY, PER_EXAMPLE, QUERIES, AttackSpec, add_attack

APGD = dict(n_iter=100, n_restarts=1, rho=0.75, eot_iter=1)  # eot_iter > 1: AutoAttack's "rand" version
FAB = dict(n_iter=100, n_restarts=1, alpha_max=0.1, eta=1.05, beta=0.9)
PGD = dict(steps=20, rel_stepsize=0.25, random_start=True, eot_iter=1)
SPSA = dict(
    iterations=40, samples=128, lr=0.01, delta=0.01, max_batch=1024, random_start=False, keep_best=True,
    early_stop=True, estimate_at_2x=False,
)  # fmt: skip
AA = "AutoAttack"  # the implementations from AutoAttack's code (pyautoattack)
CROSS = "crafted on the source model (--source-model), evaluated on each target"

for _spec in (
    AttackSpec(
        "fgsm", "robeval.attacks.gradient:FGSM", "FGSM", "robeval (one gradient step)",
        "one step of size eps along the sign (Linf) or direction (L2) of the CE gradient", dict(eot_iter=1),
    ),
    AttackSpec(
        "pgd", "robeval.attacks.gradient:PGD", "PGD", "robeval (projected gradient descent)",
        "CE-loss PGD, step = rel_stepsize * eps, uniform random start", PGD, randomness=PER_EXAMPLE,
        curve_axis=ITERATIONS, curve_setting="steps",
    ),
    AttackSpec(
        "spsa", "robeval.attacks.spsa:SPSA", "SPSA", "robeval (batched SPSA + Adam)",
        "gradient-free: finite differences along random +/-1 directions, samples = +/- pairs per step "
        "(2 x samples model evaluations), Adam on the margin loss; under the standard protocol from the image, "
        "keeping each example's best iterate and stopping it once fooled; under nielsen2024 the authors' "
        "cleverhans procedure: a uniform random start, every iteration, the final iterate, and their code's "
        "gradient estimate around 2x (estimate_at_2x)",
        SPSA, kind="black-box", norms=("Linf",), randomness=PER_EXAMPLE, curve_axis=ITERATIONS,
        curve_setting="iterations",
    ),
    AttackSpec(
        "apgd-ce", "robeval.attacks.autoattack:APGDCE", "APGD-CE", f"{AA} APGDAttack (pyautoattack)",
        "AutoAttack's APGD on cross-entropy, 100 iterations", APGD, randomness=PER_EXAMPLE, curve_axis=ITERATIONS, curve_setting="n_iter",
    ),
    AttackSpec(
        "apgd-dlr", "robeval.attacks.autoattack:APGDDLR", "APGD-DLR", f"{AA} APGDAttack, loss dlr (pyautoattack)",
        "AutoAttack's APGD on the (untargeted) DLR loss; part of protocol aa-plus", APGD, randomness=PER_EXAMPLE, curve_axis=ITERATIONS, curve_setting="n_iter",
    ),
    AttackSpec(
        "apgd-t", "robeval.attacks.autoattack:APGDT", "APGD-T", f"{AA} APGDAttack_targeted (pyautoattack)",
        "AutoAttack's APGD on the targeted DLR loss, 9 targets (2nd..10th logits)",
        dict(APGD, n_target_classes=9), randomness=PER_EXAMPLE, curve_axis=ITERATIONS, curve_setting="n_iter",
    ),
    AttackSpec(
        "fab-t", "robeval.attacks.autoattack:FABT", "FAB-T", f"{AA} FABAttack_PT, targeted (pyautoattack)",
        "AutoAttack's targeted FAB (minimal perturbation), 9 targets; counts only within eps",
        dict(FAB, n_target_classes=9), randomness=PER_BATCH_IN_LIBRARY,
    ),
    AttackSpec(
        "fab", "robeval.attacks.autoattack:FAB", "FAB", f"{AA} FABAttack_PT, untargeted (pyautoattack)",
        "AutoAttack's untargeted FAB (minimal perturbation); part of protocol aa-plus", FAB,
        randomness=PER_BATCH_IN_LIBRARY,
    ),
    AttackSpec(
        "square", "robeval.attacks.autoattack:Square", "Square", f"{AA} SquareAttack (pyautoattack)",
        "score-based random search on the margin loss, 5000 queries, no rescaling schedule",
        dict(n_queries=5000, p_init=0.8, n_restarts=1), kind="black-box", randomness=PER_BATCH_IN_LIBRARY,
        curve_axis=QUERIES, curve_setting="n_queries",
    ),
    AttackSpec(
        "transfer-pgd", "robeval.attacks.transfer:TransferPGD", "Transfer PGD",
        "robeval PGD on --source-model, evaluated on the target", f"PGD {CROSS}", PGD, kind="transfer",
        randomness=PER_EXAMPLE,
    ),
    AttackSpec(
        "transfer-apgd-ce", "robeval.attacks.transfer:TransferAPGDCE", "Transfer APGD-CE",
        f"{AA} APGD-CE on --source-model, evaluated on the target", f"APGD-CE {CROSS}", APGD, kind="transfer",
        randomness=PER_EXAMPLE,
    ),
    AttackSpec(
        "fmn", "robeval.attacks.minimum_norm:FMN", "FMN",
        "foolbox LInfFMNAttack / L2FMNAttack (L2 projection fixed here)",
        "fast minimum-norm attack: smallest fooling perturbation per example; one run, every eps",
        dict(steps=50, max_stepsize=1.0, gamma=0.2), minimum_norm=True,
    ),
    AttackSpec(
        "fab-mn", "robeval.attacks.minimum_norm:FABMinimumNorm", "FAB-MN",
        f"{AA} FABAttack_PT, untargeted minimum norm (pyautoattack)",
        "untargeted FAB, minimum-norm mode: smallest point over its restarts (later ones start at random "
        "within restart_radius)",
        dict(FAB, restart_radius=8 / 255), randomness=PER_BATCH_IN_LIBRARY, minimum_norm=True,
    ),
    AttackSpec(
        "apgd-t-malt", "robeval.attacks.malt:APGDTMalt", "APGD-T (MALT)",
        f"{AA} APGDAttack_targeted (pyautoattack) on MALT-ranked targets",
        "AutoAttack's APGD-T on the n_target_classes best MALT-ranked targets (the fast protocol's pass); with 10 "
        "classes or fewer MALT only reorders AutoAttack's targets",
        dict(APGD, n_target_classes=9), randomness=PER_EXAMPLE, curve_axis=ITERATIONS, curve_setting="n_iter",
    ),
    AttackSpec(
        "apgd-t-rest", "robeval.attacks.malt:APGDTRest", "APGD-T (rest)",
        f"{AA} APGDAttack_targeted (pyautoattack) on AutoAttack's targets MALT did not rank first",
        "AutoAttack's APGD-T targets less the skip_malt_targets best MALT-ranked ones (the fast protocol's audit: "
        "what AutoAttack's APGD-T still runs after apgd-t-malt)",
        dict(APGD, n_target_classes=9, skip_malt_targets=0), randomness=PER_EXAMPLE, curve_axis=ITERATIONS, curve_setting="n_iter",
    ),
):  # fmt: skip
    add_attack(_spec)
