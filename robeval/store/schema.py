"""The results store's schema: the tables of schema 1 and the migrations that bring a store of any
version to :data:`SCHEMA_VERSION` (``PRAGMA user_version``; ``MIGRATIONS[v]`` moves a store from version
``v`` to ``v + 1``), and the keys and columns the store reads and writes (robeval.store)."""

from __future__ import annotations

from ..core.records import CURVE_COLUMNS, RECORD_COLUMNS, RECORD_TYPES

SCHEMA_VERSION = 7

V1_COLUMNS = RECORD_COLUMNS[: RECORD_COLUMNS.index("min_norm")]  # the records of schema 1; later columns by migration


def _unit_table(name: str, columns: str, key: str) -> str:
    """A table of rows per unit (the run's, deleted with it): the unit's keys, ``columns``, and its primary key
    ``(run_id, model, eps, attack, key)``."""
    return f"""CREATE TABLE {name} (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    model TEXT NOT NULL, eps TEXT NOT NULL, attack TEXT NOT NULL, batch INTEGER NOT NULL,
    {columns},
    PRIMARY KEY (run_id, model, eps, attack, {key})
)"""


_SCHEMA_V1 = f"""
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,            -- running | finished | interrupted | failed
    protocol TEXT NOT NULL,
    config TEXT NOT NULL,            -- JSON: the semantic configuration (compared on --resume)
    info TEXT NOT NULL,              -- JSON: versions, checkpoint hashes, settings, data identity, ...
    data_identity TEXT,
    total_units INTEGER NOT NULL DEFAULT 0
);
{_unit_table("units", "seconds REAL", "batch")};
CREATE TABLE records (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    {", ".join(f"{c} {RECORD_TYPES[c]} NOT NULL" for c in V1_COLUMNS)},
    PRIMARY KEY (run_id, model, eps, attack, example)
);
CREATE INDEX records_by_run ON records(run_id, model, eps, attack);
"""

# A unit's convergence curve, one row per point (robeval.core.records.UnitCurve), written with its records.
_CURVE_POINT = "point INTEGER NOT NULL, position INTEGER NOT NULL, robust INTEGER NOT NULL, examples INTEGER NOT NULL"
_CURVES = _unit_table("curves", _CURVE_POINT, "batch, point")

# Data without clean images (an ImageNet-C tree, CIFAR-10-C) has no perturbation to measure: its records
# linf and l2 are NaN, which SQLite stores as NULL.  Schema 1 made them NOT NULL; SQLite cannot drop a
# constraint, so schema 6 copies the records into a table that allows NULL there.
NULLABLE = ("linf", "l2")
_ALL_RECORD_COLUMNS = ", ".join(["run_id", *V1_COLUMNS, "min_norm", "fp32_top1"])


def _records_copy(version: int, member: str, key: str) -> str:
    """The records copied into a table of schema ``version`` that allows NULL in :data:`NULLABLE`."""
    return f"""
CREATE TABLE records_v{version} (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    {", ".join(f"{c} {RECORD_TYPES[c]}{'' if c in NULLABLE else ' NOT NULL'}" for c in V1_COLUMNS)},
    min_norm REAL, fp32_top1 REAL{member},
    PRIMARY KEY (run_id, model, {key}eps, attack, example)
);
INSERT INTO records_v{version} ({_ALL_RECORD_COLUMNS}) SELECT {_ALL_RECORD_COLUMNS} FROM records;
DROP TABLE records;
ALTER TABLE records_v{version} RENAME TO records;
CREATE INDEX records_by_run ON records(run_id, model, {key}eps, attack)"""


# Schema 7 adds a model's member (robeval.core.records) to the records, units and curves and to their keys
# (a copy, as SQLite cannot change a primary key); a store of an older schema holds member 0 only.
_V6_CURVE_COLUMNS = ", ".join(["run_id", *CURVE_COLUMNS[:-1]])
_MEMBER = "member INTEGER NOT NULL DEFAULT 0"
_MEMBERS = f"""{_records_copy(7, f", {_MEMBER}", "member, ")};
{_unit_table("units_v7", f"seconds REAL, {_MEMBER}", "batch, member")};
INSERT INTO units_v7 (run_id, model, eps, attack, batch, seconds) SELECT run_id, model, eps, attack, batch, seconds FROM units;
DROP TABLE units;
ALTER TABLE units_v7 RENAME TO units;
{_unit_table("curves_v7", f"{_CURVE_POINT}, {_MEMBER}", "batch, member, point")};
INSERT INTO curves_v7 ({_V6_CURVE_COLUMNS}) SELECT {_V6_CURVE_COLUMNS} FROM curves;
DROP TABLE curves;
ALTER TABLE curves_v7 RENAME TO curves
"""

MIGRATIONS: dict[int, str] = {
    0: _SCHEMA_V1,
    1: "ALTER TABLE records ADD COLUMN min_norm REAL",  # minimum-norm attacks (NULL = not one; SQLite stores NaN as NULL)
    2: "ALTER TABLE runs ADD COLUMN holder TEXT",  # JSON: the process evaluating the run (NULL: none)
    3: "ALTER TABLE records ADD COLUMN fp32_top1 REAL",  # the fp32 re-check of reduced precision (NULL: none)
    4: _CURVES,  # convergence curves, one row per unit and point (a store of schema 4 has none)
    5: _records_copy(6, "", ""),  # linf / l2 may be NULL (no clean image to measure against)
    6: _MEMBERS,  # several checkpoints per model: the member in records, units and curves
}
OUR_TABLES = {"runs", "units", "records"}
RUN_KEYS = ["id", "created", "finished", "status", "protocol", "config", "info", "data_identity", "total_units"]
UNIT_KEYS = ["model", "eps", "attack", "batch", "member"]  # a unit (records.Unit) as the store keys it
UNIT_TABLES = {"records": RECORD_COLUMNS, "curves": CURVE_COLUMNS, "units": [*UNIT_KEYS, "seconds"]}  # after run_id
