"""What ``robeval models`` and ``robeval attacks`` list, kept in a small cache so that they answer
without loading torch and timm (several seconds) each time.

The registries stay the one place for every fact: the cache is their listing, rebuilt whenever
robeval's source files, its version or the versions of torch/timm change (the key covers them), and
used only when its key matches.  Where the cache folder is not writable, the listing is computed
each time.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import __version__

PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "robeval"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def catalog_key() -> str:
    """Changes whenever a listed fact can: robeval's sources, its version, torch and timm."""
    digest = hashlib.sha256(f"{__version__}|{_version('torch')}|{_version('timm')}".encode())
    for path in sorted(PACKAGE.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(PACKAGE)}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def _model_rows() -> list[dict[str, Any]]:
    import torch

    from ..models import build_network, config_of, list_models, parameter_count

    rows = []
    for spec in list_models():
        with torch.device("meta"):
            net = build_network(spec.name)
        rows.append(
            {
                "name": spec.name,
                "family": spec.family,
                "params_M": parameter_count(net) / 1e6,
                "input": "x".join(map(str, config_of(net).get("input_size", ()))),
                "weights": spec.weights.describe(),
                "options": spec.options,
                "adaptive": spec.adaptive or {},
                "description": spec.description,
            }
        )
    return rows


def _attack_rows() -> list[dict[str, Any]]:
    from ..attacks import list_attacks

    return [
        {
            "name": s.name,
            "title": s.title,
            "kind": s.kind,
            "norms": list(s.norms),
            "defaults": s.defaults,
            "implementation": s.implementation,
            "randomness": s.randomness,
            "description": s.description,
            "in_suite": s.in_suite,
            "minimum_norm": s.minimum_norm,
        }
        for s in list_attacks()
    ]


def catalog() -> dict[str, list[dict[str, Any]]]:
    """``{"models": [...], "attacks": [...]}`` from the cache when it is current, else computed (and cached)."""
    path = cache_dir() / f"catalog-{catalog_key()}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    listing = {"models": _model_rows(), "attacks": _attack_rows()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in path.parent.glob("catalog-*.json"):
            old.unlink(missing_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(listing, default=str))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home: list without a cache
    return listing
