"""What ``robeval models`` and ``robeval attacks`` list, kept in a small cache so that they answer
without loading torch and timm (several seconds) each time.

The registries stay the one place for every fact, and the listing reads them as data (every
registration states its facts and parameter count: no network is built).  The cache is that listing,
rebuilt whenever robeval's source files, its version, the versions of torch/timm or the installed
plugins' entry points change (the key covers them), and used only when its key matches.  A process
that has loaded the registries already (a model registered from Python) lists them as they are now.
Where the cache folder is not writable, the listing is computed each time.  A plugin that could not
be loaded is a warning kept with the listing and said again whenever it is read.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import __version__
from ..atomic_files import atomic_write
from ..defaults import PLUGIN_GROUPS
from ..errors import PluginWarning, UserError

PACKAGE = Path(__file__).resolve().parents[1]  # all of robeval: every registration is keyed, not only the CLI's


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "robeval"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def plugin_entry_points() -> list[str]:
    """Every installed plugin's entry point (group, name, object, package and its version), unloaded."""
    found = []
    for group in PLUGIN_GROUPS:
        for entry in metadata.entry_points(group=group):
            dist = getattr(entry, "dist", None)
            package = f"{dist.name}=={dist.version}" if dist is not None else "?"
            found.append(f"{group}|{entry.name}|{entry.value}|{package}")
    return sorted(found)


def catalog_key() -> str:
    """Changes whenever a listed fact can: robeval's sources, its version, torch, timm and the plugins."""
    digest = hashlib.sha256(f"{__version__}|{_version('torch')}|{_version('timm')}".encode())
    for path in sorted(PACKAGE.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(PACKAGE)}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    digest.update("\n".join(plugin_entry_points()).encode())
    return digest.hexdigest()[:20]


def _model_rows() -> list[dict[str, Any]]:
    """Every model's row, from its registration's data (no network is built)."""
    from ..models import list_models

    rows = []
    for spec in list_models():
        config = spec.config
        rows.append(
            {
                "name": spec.name,
                "family": spec.family,
                "params_M": None if spec.params is None else spec.params / 1e6,
                "input": "x".join(map(str, config.input_size)) if config and config.input_size else "-",
                "weights": spec.weights.describe(),
                "options": spec.options,
                "adaptive": spec.adaptive or {},
                "description": spec.description,
                "package": spec.package,
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


def _computed() -> dict[str, Any]:
    """The listing from the registries, with the warnings loading the plugins gave."""
    from ..models.plugins import problems, unavailable

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # said from the plugins' own record, below
        listing: dict[str, Any] = {"models": _model_rows(), "attacks": _attack_rows()}
    listing["warnings"] = problems()
    listing["unavailable"] = unavailable()  # a plugin's names that could not be had: the line saying why
    return listing


def catalog(say_warnings: bool = True) -> dict[str, Any]:
    """``{"models": [...], "attacks": [...], "warnings": [...], "unavailable": {...}}`` from the cache when
    it is current, else computed (and cached); computed afresh where the registries are loaded already.
    ``say_warnings``: say again what loading the plugins warned of (a listing does; a run's check, which
    says it of the models it runs, does not)."""
    listing = _computed() if "robeval.models" in sys.modules else _cached()
    for line in listing.get("warnings", []) if say_warnings else []:
        warnings.warn(line, PluginWarning, stacklevel=2)
    return listing


def _cached() -> dict[str, Any]:
    path = cache_dir() / f"catalog-{catalog_key()}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    listing = _computed()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in path.parent.glob("catalog-*.json"):
            old.unlink(missing_ok=True)
        atomic_write(path, json.dumps(listing, default=str))
    except (OSError, UserError):
        pass  # a read-only home: list without a cache
    return listing
