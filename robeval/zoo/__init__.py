"""The embedded demo zoo: small DeiT / DeiT-Elliptical models trained on scikit-learn's digits.

The checkpoints are produced by the seeded scripts in ``scripts/`` (``train_demo_zoo.py``: digits-deit and
digits-deit-elliptical; ``train_demo_variants.py``: the attention variants and robust-attention baselines;
``train_demo_models.py``: any other registered digits model) and ship inside the package, so ``robeval
run`` works offline on a fresh machine.  Each file's metadata says how it was trained (epochs, seed, the
script); the recipe is robeval.models.training's, 300 epochs at lr 1e-3.
"""

from __future__ import annotations

from pathlib import Path

ZOO_DIR = Path(__file__).resolve().parent

# The stochastic depth of the shipped files written before their metadata said it, by the script that
# wrote them: train_demo_zoo.py and train_demo_variants.py built their networks with drop_path_rate 0.1
# (robeval.defaults.DEMO_RECIPE); train_demo_models.py trained without it (digits-rvt, digits-rvt-plus,
# digits-deit-{distilled,kde,spkde,fourier,rvt}, digits-swin*), so those are not of the demo recipe.
STOCHASTIC_DEPTH_BY_SCRIPT = {
    "scripts/train_demo_zoo.py": 0.1,
    "scripts/train_demo_variants.py": 0.1,
    "scripts/train_demo_models.py": 0.0,
}


def zoo_path(name: str) -> Path:
    """Path of the embedded checkpoint for model ``name`` (``digits-deit`` -> ``digits-deit.safetensors``)."""
    return ZOO_DIR / f"{name}.safetensors"
