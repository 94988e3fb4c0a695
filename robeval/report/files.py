"""The files a run writes: results.csv, results.md, run.json (each written atomically)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import UserError
from .paper import render


def atomic_write(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def prepare_out_dir(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create output folder {out}: {exc.strerror}") from None
    if not os.access(out, os.W_OK):
        raise UserError(f"output folder {out} is not writable")
    return out


def skipped_note(run: dict[str, Any], shown: int = 5) -> str | None:
    """The line under a table that names the image files a run could not read."""
    skipped = run.get("skipped_files", [])
    if not skipped:
        return None
    names = ", ".join(skipped[:shown]) + (f" and {len(skipped) - shown} more" if len(skipped) > shown else "")
    filled = " (the --n-examples subset was filled from other readable images)" if run.get("data", {}).get("passed_over") else ""
    return f"Skipped {len(skipped)} unreadable image file(s): {names}{filled} (listed in run.json)"


def write_run_files(result: Any, out: Path) -> dict[str, Path]:
    out = prepare_out_dir(Path(out))
    summary = result.summary
    paths = {"csv": out / "results.csv", "md": out / "results.md", "json": out / "run.json"}
    atomic_write(paths["csv"], render(summary, "csv"))
    note = skipped_note(result.run)
    atomic_write(paths["md"], render(summary, "md") + (f"\n{note}\n" if note else ""))
    atomic_write(paths["json"], json.dumps(result.run, indent=2, default=str) + "\n")
    return paths
