"""Files written whole or not at all (every file robeval writes): through a temporary file in the same
folder, renamed onto its name once complete, so a reader never sees half a file and a failed write leaves
the old one.  An OS error (a full disk, a read-only folder) is a one-line :class:`~robeval.errors.UserError`."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import UserError


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path next to ``path`` for the block to write (a writer that wants a file name:
    ``torch.save``, safetensors); renamed onto ``path`` when the block ends, removed when it raises."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.part"  # the umask's permissions
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """``data`` (text as UTF-8, or bytes) to ``path``, whole or not at all; returns ``path``."""
    with replacing(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
    return Path(path)


def folder_refusal(folder: Path) -> str | None:
    """Why no file can be created in ``folder`` (the system's words), or None: shown by creating and
    removing a probe file, since a read-only or pseudo file system passes ``os.access`` and an immutable
    folder refuses even root."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".robeval-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def nearest_folder(folder: Path) -> Path:
    """``folder``, or the nearest one above it that exists: where a missing one would be made, checked
    instead of making it before any work (a command that fails then leaves no empty folder behind)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder
