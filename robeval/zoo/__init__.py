"""The embedded demo zoo: small DeiT / DeiT-Elliptical models trained on scikit-learn's digits.

The checkpoints are produced by the seeded scripts in ``scripts/`` (``train_demo_zoo.py``: digits-deit and
digits-deit-elliptical; ``train_demo_variants.py``: the attention variants and robust-attention baselines;
``train_demo_models.py``: any other registered digits model, with the same recipe) and ship inside the
package, so ``robeval run`` works offline on a fresh machine.
"""

from __future__ import annotations

from pathlib import Path

ZOO_DIR = Path(__file__).resolve().parent


def zoo_path(name: str) -> Path:
    """Path of the embedded checkpoint for model ``name`` (``digits-deit`` -> ``digits-deit.safetensors``)."""
    return ZOO_DIR / f"{name}.safetensors"
