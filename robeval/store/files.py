"""What a results store's file is before SQLite opens it: a robeval store, whole (its header and length),
readable without writing (:func:`read_only_connection`), writable where a writer needs it
(:func:`check_writable_store`); and where a distributed run's workers keep theirs."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

from ..core.atomic_files import folder_refusal, nearest_folder
from ..core.errors import UserError
from .schema import OUR_TABLES

BUSY_SECONDS = 60.0  # how long a connection waits for another's lock
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100  # SQLite's file header: page size at 16, page count at 28, valid when 92 equals 24


def _check_length(path: Path, header: bytes, size: int) -> None:
    """A file shorter than the pages its header counts was cut off (a copy that stopped, a full disk):
    refused before SQLite reads a missing page mid-table.  Skipped while a ``-wal`` file holds pages
    that a writer has not yet copied into it."""
    if Path(f"{path}-wal").exists():
        return
    if len(header) < HEADER_BYTES:
        raise UserError(f"results store {path} is truncated ({size} bytes, shorter than SQLite's header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big") if header[92:96] == header[24:28] else 0
    if size % page_size or size < pages * page_size:
        raise UserError(
            f"results store {path} is truncated ({size} bytes; its header counts {pages} pages of {page_size}): "
            "copy it again whole"
        )


def read_only_connection(path: Path) -> sqlite3.Connection:
    """A connection that cannot write ``path`` nor create anything beside it: with a ``-wal`` file there
    (a writer at work, or one that was killed) SQLite's ``mode=ro``, which reads the journal too; without
    one ``immutable=1``, which needs no ``-wal``/``-shm`` and no write access to the folder (read-only
    media).  A writer that starts during such a read is not seen by it."""
    mode = "mode=ro" if Path(f"{path}-wal").exists() else "immutable=1"
    conn = sqlite3.connect(
        f"file:{quote(str(path.resolve()))}?{mode}", uri=True, timeout=BUSY_SECONDS, isolation_level=None
    )
    conn.execute("PRAGMA query_only = ON")
    return conn


def check_is_store(path: Path, reading: bool) -> None:
    """Refuse a file that is not a robeval store before anything writes to it (a foreign SQLite
    database, a CSV, a truncated store): it is left byte for byte as it was.  A missing or empty file
    becomes a new store when writing; when ``reading``, both are refused."""
    if path.is_symlink() and not path.exists():
        raise UserError(f"results store {path} is a symbolic link to nothing (a missing target or a loop)")
    if path.exists() and not path.is_file():
        raise UserError(f"results store {path} is not a file")
    if reading and not path.exists():
        raise UserError(f"results store not found: {path}")
    if reading and path.stat().st_size == 0:
        raise UserError(f"results store {path} is an empty file, not a robeval results store")
    if not path.exists() or path.stat().st_size == 0:
        return  # a writer creates the store
    with open(path, "rb") as fh:
        header = fh.read(HEADER_BYTES)
    if not header.startswith(SQLITE_MAGIC):
        raise UserError(f"{path} is not a robeval results store (not an SQLite database); give another --store")
    _check_length(path, header, path.stat().st_size)
    try:
        with closing(read_only_connection(path)) as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise UserError(f"cannot read results store {path}: {exc}") from None
    if tables and not (version >= 1 and tables >= OUR_TABLES):
        shown = ", ".join(sorted(tables)[:5])
        raise UserError(
            f"{path} is an SQLite database of another program (tables: {shown}), not a robeval results "
            "store; it was left as it was: give another --store"
        )
    if reading and not tables:
        raise UserError(f"results store {path} holds no runs table: not a robeval results store")


def check_writable_store(path: Path) -> None:
    """A store a writer may use (:func:`check_is_store`) and can write (the store, its journal files and its
    folder), refused before any work when it cannot: a writer opening it would fail at its first write,
    after minutes, with the ``-wal``/``-shm`` journal files SQLite made beside it left behind."""
    check_is_store(path, reading=False)
    files = (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
    refused = next(filter(None, (_file_refusal(file) for file in files if file.exists())), None)
    folder = nearest_folder(path.parent)
    if refused is None and (why := folder_refusal(folder)) is not None:
        refused = f"its folder {folder} takes no new file ({why}); SQLite writes beside it"
    if refused is not None:
        what = f"results store {path} cannot be written" if path.exists() else f"cannot create results store {path}"
        raise UserError(
            f"{what}: {refused}; a command that stores runs needs a store it can write (give another --store)"
        )


def _file_refusal(file: Path) -> str | None:
    """Why ``file`` cannot be written: marked read-only (no write permission: refused for root too, who
    could write it anyway, as its owner meant it to stay as it is), or not to be opened for writing (a
    read-only file system, an immutable file, another user's); None when it can."""
    if not file.stat().st_mode & 0o222:
        return f"{file.name} is read-only (no write permission)"
    try:
        os.close(os.open(file, os.O_RDWR))
    except OSError as exc:
        return f"{file.name} cannot be opened for writing ({exc.strerror})"
    return None


def worker_store_path(path: str | Path, rank: int) -> Path:
    """Where worker ``rank`` of a distributed run keeps its units until rank 0 merges them."""
    return Path(f"{path}.rank{rank}")
