#!/usr/bin/env python
"""Train the embedded digits demos of the attention variants and robust-attention baselines
(digits-deit-{optimised,efficient,super,rkde,mom}) and write them into robeval/zoo/.

The recipe is robeval's demo recipe (robeval.core.defaults.DEMO_RECIPE, the shipped digits-deit's), so the
models differ from digits-deit only in their attention layers.  Prints every test accuracy.
(scripts/train_demo_models.py with these names; name others there.)

    .venv/bin/python scripts/train_demo_variants.py [--epochs 300] [--out robeval/zoo]
"""

from train_demo_models import main

from robeval.models.attention.kinds import ATTENTION_KINDS

VARIANTS = ("optimised", "efficient", "super", "rkde", "mom")

if __name__ == "__main__":
    assert set(VARIANTS) <= set(ATTENTION_KINDS), "a variant is no longer a registered attention kind"
    main([f"digits-deit-{kind}" for kind in VARIANTS], "scripts/train_demo_variants.py")
