"""The files a run writes: results.csv, results.md, run.json (each written whole or not at all:
robeval.atomic_files), and the checks that an output file or folder can be written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.atomic_files import atomic_write, folder_refusal
from ..core.errors import UserError
from ..core.printable import visible_controls
from .bests import mark_bests
from .document import Paragraph, to_markdown
from .paper import paper_document, render


def check_out_file(path: Path) -> Path:
    """A file an output can be written to (checked before any work): not a folder, in a folder that
    exists (made if missing) and is writable."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path} is a folder; give a file name to write to (e.g. {path / 'table.md'})")
    prepare_out_dir(path.parent)
    return path


def prepare_out_dir(out: Path) -> Path:
    """``out`` made if missing, and shown writable by writing (and removing) a probe file in it: a
    read-only file system or a pseudo file system passes ``os.access`` but refuses the write."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create output folder {out}: {exc.strerror}") from None
    refused = folder_refusal(out)
    if refused is not None:
        raise UserError(f"output folder {out} is not writable: {refused}")
    return out


RUN_FILES = ("results.csv", "results.md", "run.json")


def check_out_dir(out: Path, run_id: str | None = None) -> Path:
    """``out`` made and writable, and holding no other run's files: a run never overwrites the results
    of another (``run_id``: the run that may write there again, a resumed one)."""
    out = prepare_out_dir(out)
    found = [name for name in RUN_FILES if (out / name).exists()]
    if not found:
        return out
    try:
        owner = json.loads((out / "run.json").read_text()).get("run_id")
    except (OSError, ValueError, AttributeError):
        owner = None
    if owner is not None and owner == run_id:
        return out
    whose = f"the files of run {owner}" if owner else f"{', '.join(found)} but no run.json of a robeval run"
    hint = f" (or --resume {owner} to continue that run)" if owner else ""
    raise UserError(f"output folder {out} holds {whose}; choose another --out{hint}")


def skipped_note(run: dict[str, Any], shown: int = 5) -> str | None:
    """The line under a table that names the image files a run could not read (one line: a file name's
    control characters as escapes)."""
    skipped = [visible_controls(str(name)) for name in run.get("skipped_files", [])]
    if not skipped:
        return None
    names = ", ".join(skipped[:shown]) + (f" and {len(skipped) - shown} more" if len(skipped) > shown else "")
    passed_over = run.get("data", {}).get("passed_over")
    filled = " (the --n-examples subset was filled from other readable images)" if passed_over else ""
    return f"Skipped {len(skipped)} unreadable image file(s): {names}{filled} (listed in run.json)"


def write_run_files(result: Any, out: Path) -> dict[str, Path]:
    out = prepare_out_dir(Path(out))
    summary = result.summary
    paths = {"csv": out / "results.csv", "md": out / "results.md", "json": out / "run.json"}
    atomic_write(paths["csv"], render(summary, "csv"))
    note = skipped_note(result.info)
    table = paper_document(mark_bests(summary, result.records))
    atomic_write(paths["md"], to_markdown(table + ([Paragraph(note)] if note else [])))
    atomic_write(paths["json"], json.dumps(result.info, indent=2, default=str) + "\n")
    return paths
