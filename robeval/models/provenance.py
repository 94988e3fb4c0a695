"""Which code made a model, as a run records it (run.json's ``models.<name>.code``): for a model of the
user's code (``PATH.py:CALLABLE``, ``PKG.MODULE:CALLABLE``) the file it was read from and its SHA-256;
for a plugin's model or attention kind also the distribution that registers it and its version, and
for a kind the file of its attention layer.  robeval's own models have none (robeval's version is the
run's).  ``--resume`` refuses a run whose models' code changed since it started; tables and ``robeval
compare`` name a change between two runs (robeval.results.likeness).
"""

from __future__ import annotations

import hashlib
import inspect
from importlib import metadata
from pathlib import Path

from .registry import ModelSpec
from .user_code import code_record

OWN = ("robeval", "(your code)")  # packages that are no installed distribution of their own


def distribution(package: str) -> dict[str, str]:
    """A plugin's distribution and its installed version (none for robeval's own and the user's code)."""
    if package in OWN:
        return {}
    try:
        return {"distribution": package, "version": metadata.version(package)}
    except metadata.PackageNotFoundError:
        return {"distribution": package}


def layer_record(spec: ModelSpec) -> dict[str, str] | None:
    """The file of the attention layer a plugin's kind builds ``spec`` with, and its SHA-256."""
    from .attention.kinds import layer_class
    from .attention.registry import ATTENTION_KINDS

    name = spec.family.removeprefix("deit-")
    if not spec.family.startswith("deit-") or name not in ATTENTION_KINDS:
        return None
    kind = ATTENTION_KINDS[name]
    try:
        path = Path(inspect.getsourcefile(layer_class(kind)) or "")
    except TypeError:  # a class without a source file (built in C)
        return None
    if not path.is_file():
        return None
    return {"path": str(path.resolve()), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def model_code(spec: ModelSpec) -> dict[str, str] | None:
    """The code of ``spec`` as a run records it (the module docstring), or None for robeval's own."""
    if spec.reference is not None:
        record = code_record(spec.reference)
        return None if record is None else {**distribution(spec.package), **record}
    if spec.package in OWN:
        return None
    return {**distribution(spec.package), **(layer_record(spec) or {})}


def code_change(name: str, recorded: dict[str, str] | None, now: dict[str, str] | None) -> str | None:
    """How model ``name``'s code changed since ``recorded`` (one phrase naming the file), or None."""
    if not recorded or now is None:
        return None
    if recorded.get("sha256") == now.get("sha256") and recorded.get("version") == now.get("version"):
        return None
    where = now.get("path") or recorded.get("path") or now.get("distribution", "its code")
    version = (
        f", {now.get('distribution')} {recorded.get('version')} -> {now.get('version')}"
        if recorded.get("version") != now.get("version")
        else ""
    )
    sha = f"SHA-256 {str(recorded.get('sha256'))[:12]} -> {str(now.get('sha256'))[:12]}"
    return f"the code of model {name} changed since the run started ({where}: {sha}{version})"
