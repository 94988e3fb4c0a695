"""The embedded demo zoo: small DeiT / DeiT-Elliptical models trained on scikit-learn's digits by the seeded
scripts in ``scripts/`` (docs/layout.md; their recipe: docs/models.md), shipped inside the package so
``robeval run`` works offline on a fresh machine.  Each file's metadata says how it was trained.
"""

from __future__ import annotations

from pathlib import Path

ZOO_DIR = Path(__file__).resolve().parent

# The stochastic depth of the shipped files written before their metadata said it, by the script that
# wrote them (which models each trained: docs/models.md, One recipe).
STOCHASTIC_DEPTH_BY_SCRIPT = {
    "scripts/train_demo_zoo.py": 0.1,
    "scripts/train_demo_variants.py": 0.1,
    "scripts/train_demo_models.py": 0.0,
}


def zoo_path(name: str) -> Path:
    """Path of the embedded checkpoint for model ``name`` (``digits-deit`` -> ``digits-deit.safetensors``)."""
    return ZOO_DIR / f"{name}.safetensors"
