#!/usr/bin/env python
"""Train the embedded demo models (digits-deit, digits-deit-elliptical) and write them into robeval/zoo/.

Seeded and reproducible on a CPU.  Both models see the same data order and augmentation; they differ
only in the attention layers.  The recipe is robeval's demo recipe (robeval.core.defaults.DEMO_RECIPE: 300
epochs at lr 1e-3, stochastic depth 0.1), through the function `robeval train-demo` calls, so
`robeval train-demo --model digits-deit --seed 0` trains it the same way (the shipped files were trained
on 2 threads; another thread count rounds differently).  Prints both test accuracies.
(scripts/train_demo_models.py with these two names.)

    .venv/bin/python scripts/train_demo_zoo.py [--epochs 300] [--out robeval/zoo]
"""

from train_demo_models import main

if __name__ == "__main__":
    main(["digits-deit", "digits-deit-elliptical"], "scripts/train_demo_zoo.py")
