"""The results store: runs and per-example records in SQLite (Python's sqlite3; docs/store.md says
why a unit is one transaction and what WAL journaling allows).  Split by job: the schema and its
migrations (:mod:`.schema`), the file checks before SQLite opens it (:mod:`.files`), and here the
store itself, with the process that holds a run while it evaluates it (``runs.holder``: a second
``--resume`` of a held run is refused while it still runs).
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import sqlite3
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from ..attack_settings import read_stored_settings
from ..core.defaults import DEFAULT_STORE
from ..core.errors import StoreFull, StoreWarning, UserError
from ..core.json_input import load_json
from ..core.machine import process_start
from ..core.printable import as_one, read_alike, refuse_hidden
from ..core.records import BOOL_COLUMNS, CURVE_COLUMNS, RECORD_COLUMNS, Unit, UnitCurves, UnitTimes, curve_rows
from .files import BUSY_SECONDS, check_is_store, check_writable_store, read_only_connection
from .schema import MIGRATIONS, RUN_KEYS, SCHEMA_VERSION, UNIT_KEYS, UNIT_TABLES

IN_MEMORY = ":memory:"  # a store path that keeps the store in this process's memory (a run given no store)
JOURNAL_WAIT_SECONDS = BUSY_SECONDS  # how long a writer that closes waits for readers that pin its last records
UPDATABLE = {"status", "finished", "info", "data_identity", "total_units", "holder"}  # what update_run may set
HOLDER_SILENCE_SECONDS = 1800  # a holder on another machine that wrote nothing for this long is taken as gone


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def this_process() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "start": process_start(os.getpid()), "beat": now()}


def stored_holder(text: object) -> dict[str, Any] | None:
    """The process a stored run names as its holder, or None: none (NULL, which pandas reads back as a float
    NaN: a missing value is never taken for text), or what no robeval wrote (a host, a pid, a beat in time)."""
    holder = load_json(text, "a run's holder") if isinstance(text, str) and text else None
    if not isinstance(holder, dict) or not isinstance(holder.get("host"), str):
        return None
    pid, beat = holder.get("pid"), holder.get("beat", "1970-01-01T00:00:00+00:00")
    if type(pid) is not int or not 0 < pid < 2**31 or not isinstance(beat, str):
        return None
    try:
        return holder if datetime.fromisoformat(beat).tzinfo is not None else None
    except ValueError:
        return None


def holder_alive(holder: dict[str, Any]) -> bool:
    """Whether the process that holds a run still runs (same machine), or wrote lately (another one)."""
    if holder.get("host") != socket.gethostname():
        beat = datetime.fromisoformat(holder.get("beat", "1970-01-01T00:00:00+00:00"))
        return (datetime.now(timezone.utc) - beat).total_seconds() < HOLDER_SILENCE_SECONDS
    start = process_start(int(holder["pid"]))
    if start is not None or holder.get("start") is not None:
        return start == holder.get("start")
    try:
        os.kill(int(holder["pid"]), 0)
        return True
    except OSError:
        return False


def read_stored_json(text: str) -> dict[str, Any]:
    """A run's stored configuration or description, its attack settings in today's meaning
    (:func:`robeval.attack_settings.read_stored_settings`): every reader of a run's settings reads them here."""
    out = load_json(text, "a run's stored configuration")
    if isinstance(out.get("attack_settings"), dict):
        out["attack_settings"] = read_stored_settings(out["attack_settings"])
    return out


class Store:
    """A results store at ``path`` (created on first use); ``read_only``: a reader's, which refuses what
    :func:`check_is_store` refuses, writes nothing (:func:`read_only_connection`) and reads an older schema
    through a migrated copy in memory."""

    def __init__(self, path: str | Path = DEFAULT_STORE, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.holder: dict[str, Any] | None = None  # this process, while it evaluates a run of the store
        memory = str(path) == IN_MEMORY
        if read_only and not memory:
            check_is_store(self.path, reading=True)
        try:
            if read_only and not memory:
                self.conn = read_only_connection(self.path)
                if self.conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                    # migrated in a copy: the file stays as it was (a newer one refused)
                    with closing(self.conn) as stored:
                        self.conn = sqlite3.connect(":memory:", isolation_level=None)
                        stored.backup(self.conn)
                    self._migrate()
            else:
                if not memory:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                self.conn = sqlite3.connect(str(self.path), timeout=BUSY_SECONDS, isolation_level=None)
                # WAL + NORMAL: a commit survives the process being killed (what --resume relies on); only an
                # OS crash or power loss can drop the last units, which a resume then simply recomputes.
                busy = f"busy_timeout = {BUSY_SECONDS * 1000:.0f}"
                for pragma in (busy, "journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
                    self.conn.execute(f"PRAGMA {pragma}")
                self._migrate()
        except sqlite3.DatabaseError as exc:
            raise UserError(f"cannot use results store {self.path}: {exc}") from None
        except OSError as exc:
            raise UserError(f"cannot create results store {self.path}: {exc.strerror}") from None

    def close(self) -> None:
        """Let go of the store; a writer of a file first folds its journal into it (:meth:`fold_journal`)."""
        try:
            if not self.read_only and str(self.path) != IN_MEMORY:
                self.fold_journal()
        finally:
            self.conn.close()

    def fold_journal(self, wait: float | None = None) -> bool:
        """Copy every record the ``-wal`` journal holds into the store file itself, waiting up to ``wait``
        seconds (:data:`JOURNAL_WAIT_SECONDS`) for readers that pin the last records, then warning in one
        line (why: docs/store.md, section "The store file alone holds every record").  Returns whether the
        file holds every record."""
        wait = JOURNAL_WAIT_SECONDS if wait is None else wait
        deadline, pause = time.monotonic() + wait, 0.01
        try:
            while True:  # until every page is copied, or the deadline passes (a reader pinning the last pages)
                _, journal, copied = self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if copied == journal:
                    return True
                if time.monotonic() >= deadline:
                    break
                time.sleep(pause)
                pause = min(2 * pause, 0.5)
            why = f"a reader has kept a read transaction open since before them for {wait:.0f} s, and SQLite "
            why += "copies nothing past what a reader still reads"
        except sqlite3.Error as exc:  # a full disk, an I/O error: the journal keeps them
            why = f"SQLite could not copy them ({exc})"
        warnings.warn(
            f"the last records of {self.path} are only in {self.path}-wal still: {why}; they are safe there (SQLite "
            "reads them with the store: copy both files) and move into the file when robeval next writes to it",
            StoreWarning,
            stacklevel=2,
        )
        return False

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def _migrate(self) -> None:
        with self.transaction() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UserError(
                    f"results store {self.path} has schema {version}, newer than this robeval ({SCHEMA_VERSION})"
                )
            while version < SCHEMA_VERSION:
                for statement in filter(str.strip, MIGRATIONS[version].split(";")):
                    conn.execute(statement)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")

    # -- runs -----------------------------------------------------------------------------------
    def create_run(self, config: dict[str, Any], info: dict[str, Any], protocol: str) -> str:
        """A new run, held by this process (:meth:`hold`)."""
        run_id = datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self.holder = this_process()
        self._add_run("INSERT", run_id, config, protocol, info, json.dumps(self.holder))
        return run_id

    def hold(self, run_id: str) -> None:
        """Make this process the one that evaluates ``run_id``: refused while another live process holds
        it (naming it); a holder that is gone (killed, its machine silent) is taken over."""
        with self.transaction() as conn:
            row = conn.execute("SELECT holder FROM runs WHERE id = ?", (run_id,)).fetchone()
            holder = stored_holder(row[0] if row else None)
            if holder is not None and holder_alive(holder) and holder.get("pid") != os.getpid():
                raise UserError(
                    f"run {run_id} is being evaluated by process {holder['pid']} on {holder['host']} "
                    f"(last unit stored {holder.get('beat')}); wait for it or stop it before resuming"
                )
            self.holder = this_process()
            conn.execute("UPDATE runs SET holder = ? WHERE id = ?", (json.dumps(self.holder), run_id))

    def release(self, run_id: str, **fields: Any) -> None:
        self.update_run(run_id, holder=None, **fields)
        self.holder = None

    def ensure_run(self, run_id: str, config: dict[str, Any], protocol: str) -> None:
        """Create the row of a run started elsewhere (a worker's own store file) if it is missing."""
        self._add_run("INSERT OR IGNORE", run_id, config, protocol, {}, None)

    def _add_run(self, insert: str, run_id: str, config: dict, protocol: str, info: dict, holder: str | None) -> None:
        semantic = json.dumps(config, sort_keys=True, default=str)  # keys sorted: what --resume compares
        with self.transaction() as conn:
            conn.execute(
                f"{insert} INTO runs (id, created, status, protocol, config, info, total_units, holder) "
                "VALUES (?, ?, 'running', ?, ?, ?, 0, ?)",
                (run_id, now(), protocol, semantic, json.dumps(info, default=str), holder),
            )

    def merge_from(self, other: str | Path, run_id: str) -> int:
        """Copy a worker store's units and records of ``run_id`` into this store; returns units merged."""
        if not Path(other).exists():
            return 0
        self.conn.execute("ATTACH DATABASE ? AS worker", (str(other),))
        try:
            with self.transaction() as conn:
                for table, columns in UNIT_TABLES.items():  # the units last: their count is what merged
                    cols = ", ".join(["run_id", *columns])
                    query = f"INSERT OR IGNORE INTO {table} ({cols}) SELECT {cols} FROM worker.{table} WHERE run_id = ?"
                    merged = conn.execute(query, (run_id,)).rowcount
            return merged
        finally:
            self.conn.execute("DETACH DATABASE worker")

    def update_run(self, run_id: str, **fields: Any) -> None:
        if not UPDATABLE.issuperset(fields):
            raise ValueError(next(key for key in fields if key not in UPDATABLE))
        sets = ", ".join(f"{key} = ?" for key in fields)
        values = [json.dumps(value, default=str) if key == "info" else value for key, value in fields.items()]
        with self.transaction() as conn:
            conn.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*values, run_id))

    def run(self, run_id: str) -> dict[str, Any]:
        row = self.conn.execute(f"SELECT {', '.join(RUN_KEYS)} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            known = [r[0] for r in self.conn.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 5")]
            hint = f"; recent runs: {', '.join(known)}" if known else "; the store has no runs"
            raise UserError(f"no run {run_id!r} in {self.path}{hint}")
        out = dict(zip(RUN_KEYS, row))
        out["config"], out["info"] = self._checked(run_id, out["config"]), read_stored_json(out["info"])
        return out

    def unfinished_runs(self) -> list[tuple[str, dict[str, Any]]]:
        """``(run id, semantic configuration)`` of every unfinished run, newest first."""
        return self._configs("status != 'finished' ORDER BY created DESC, rowid DESC")

    def finished_runs(self) -> list[tuple[str, dict[str, Any]]]:
        """``(run id, semantic configuration)`` of every finished run, oldest first."""
        return self._configs("status = 'finished' ORDER BY created, rowid")

    def _configs(self, where: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (r, self._checked(r, config))
            for r, config in self.conn.execute(f"SELECT id, config FROM runs WHERE {where}")
        ]

    def _checked(self, run_id: str, config: str) -> dict[str, Any]:
        """A run's stored configuration (:func:`read_stored_json`), its names checked (:meth:`check_names`)."""
        out = read_stored_json(config)
        self.check_names(run_id, out)
        return out

    def runs(self) -> pd.DataFrame:
        df = pd.read_sql_query(
            "SELECT r.id, r.created, r.finished, r.status, r.protocol, r.total_units, "
            "(SELECT COUNT(*) FROM units u WHERE u.run_id = r.id) AS done_units, r.config, r.holder "
            "FROM runs r ORDER BY r.created, r.rowid",
            self.conn,
        )
        df["config"] = [json.dumps(self._checked(run_id, config)) for run_id, config in zip(df["id"], df["config"])]
        return df

    def check_names(self, run_id: str, config: dict[str, Any], names: Iterable[object] = ()) -> None:
        """One line when a run's id or a name it holds (model, attack, eps) is no one-line printable text that
        shows as it is, or two of its models read as one name: a store robeval wrote holds none
        (robeval.core.printable), and a name that could forge a line or pass for another is never shown."""
        named = [run_id, *(config.get(key) or [] for key in ("models", "attacks", "eps"))]
        flat = [n for item in named for n in (item if isinstance(item, list) else [item])]
        refuse_hidden([*flat, *names], "the name", f"{self.path}")
        models = [m for m in config.get("models") or [] if isinstance(m, str)]
        if (pair := read_alike(models)) is not None:
            raise UserError(
                f"the run {run_id} in {self.path} names two models {as_one(*(models[i] for i in pair))}: each "
                "model of a run has one name, and robeval writes no run that names one model twice"
            )

    @staticmethod
    def shown_status(status: str, holder: str | None) -> str:
        """A run's status as ``robeval runs`` shows it: a running run whose process is gone was killed."""
        alive = stored_holder(holder)
        if status == "running" and not (alive is not None and holder_alive(alive)):
            return "running? (its process is gone: resumable)"
        return status

    # -- units and records ----------------------------------------------------------------------
    def done_units(self, run_id: str) -> set[Unit]:
        rows = self.conn.execute(f"SELECT {', '.join(UNIT_KEYS)} FROM units WHERE run_id = ?", (run_id,))
        return {(m, e, a, int(b), int(k)) for m, e, a, b, k in rows}

    def worker_paths(self) -> list[Path]:
        """The worker files next to the store (``STORE.rank1``, ...), whatever the worker count was."""
        ranks = (q for q in self.path.parent.glob(f"{self.path.name}.rank*") if q.suffix[5:].isascii())
        return sorted(q for q in ranks if q.suffix[5:].isdigit())  # as worker_store_path writes them

    def write_units(self, run_id: str, units: UnitTimes, records: dict[str, list], curves: UnitCurves) -> None:
        """Store finished units, their records and their convergence curves in one transaction."""
        # Python bools bind as SQLite integers (bool subclasses int): the columns go in as they are
        rows = list(zip(itertools.repeat(run_id), *(records[c] for c in RECORD_COLUMNS)))
        points = [(run_id, *row) for unit, curve in curves for row in curve_rows(unit, curve)]
        done = [(run_id, *key, seconds) for key, seconds in units]
        try:
            with self.transaction() as conn:
                for table, values in (("records", rows), ("curves", points), ("units", done)):
                    columns = ["run_id", *UNIT_TABLES[table]]
                    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
                    conn.executemany(insert, values)
                if self.holder is not None:  # a sign of life for a resume on another machine
                    self.holder["beat"] = now()
                    conn.execute("UPDATE runs SET holder = ? WHERE id = ?", (json.dumps(self.holder), run_id))
        except sqlite3.OperationalError as exc:  # disk or database full, I/O error: the stored units stay
            raise StoreFull(
                f"cannot write to results store {self.path} ({exc}); the units stored so far are kept"
            ) from None

    def unit_records(self, run_id: str, model: str, member: int, attacks: Iterable[str]) -> list[dict[str, Any]]:
        """The stored records of the units of ``attacks`` of ``model``'s ``member``, one dict per record, as
        stored (what a second pass over a run's batches reads back: robeval.evaluation.fast.steps)."""
        names = list(attacks)
        rows = self.conn.execute(
            f"SELECT {', '.join(RECORD_COLUMNS)} FROM records WHERE run_id = ? AND model = ? AND member = ? "
            f"AND attack IN ({', '.join('?' * len(names))})",
            (run_id, model, member, *names),
        )
        return [dict(zip(RECORD_COLUMNS, row)) for row in rows]

    def records(self, run_id: str) -> pd.DataFrame:
        types = {**dict.fromkeys(BOOL_COLUMNS, bool), "min_norm": float, "fp32_top1": float}  # all NULL: NaN, not None
        return self._frame("records", RECORD_COLUMNS, run_id, "example").astype(types)

    def curves(self, run_id: str) -> pd.DataFrame:
        """The stored convergence-curve points of ``run_id``, one row per unit and point
        (:data:`CURVE_COLUMNS`; robeval.results.convergence sums them over batches)."""
        return self._frame("curves", CURVE_COLUMNS, run_id, "batch, point")

    def _frame(self, table: str, columns: list[str], run_id: str, order: str) -> pd.DataFrame:
        """``columns`` of ``table``'s rows of ``run_id``, ordered by unit (model, member, eps, attack), then ``order``."""
        query = (
            f"SELECT {', '.join(columns)} FROM {table} WHERE run_id = ? ORDER BY model, member, eps, attack, {order}"
        )
        frame = pd.read_sql_query(query, self.conn, params=(run_id,))
        refuse_hidden(pd.unique(frame[["model", "eps", "attack"]].to_numpy().ravel()), "the name", str(self.path))
        return frame


@contextmanager
def existing_store(store: Store | str | Path, writable: bool = False) -> Iterator[Store]:
    """``store`` itself, or the store at that path opened for the block and closed after it: read-only
    (:class:`Store` ``read_only``) unless ``writable`` (``check --run-missing`` adds a run).  A path that
    is not a robeval store, and a store that cannot be read (a damaged page), are one line; reading never
    creates a store."""
    if isinstance(store, Store):
        yield store
        return
    if writable and not Path(store).exists():
        raise UserError(f"results store not found: {store}")
    if writable:
        check_writable_store(Path(store))  # the one check of this writer's (run's is robeval.api's)
    opened = Store(store, read_only=not writable)
    try:
        yield opened
    except sqlite3.DatabaseError as exc:
        raise UserError(f"cannot read results store {store}: {exc}") from None
    finally:
        opened.close()


@dataclass
class StoredRun:
    run_id: str
    info: dict[str, Any]
    config: dict[str, Any]
    records: pd.DataFrame
    summary: pd.DataFrame
    status: str = "finished"  # running | finished | interrupted | failed (the store's)

    @property
    def protocol(self) -> str:
        return self.config["protocol"]

    @property
    def data(self) -> str:
        return self.info.get("data", {}).get("data", self.config.get("data", ""))
