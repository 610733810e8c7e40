"""The demo's business data: a small SQLite table of monthly sales per region.

This module owns the `sales` schema, the deterministic seed data (60 rows: five
regions times the twelve months of 2026, with one row far above the rest so that
"why is this row so high?" has an answer in the data), and the one validated
query the resource API serves. Each call opens its own connection (`connect`), so the
functions are safe to call from Starlette's worker threads.

The database runs in write-ahead-log mode (set by `create_demo_db`), so reads never wait
for a write; a statement that waits for another connection's write lock gives up after
`busy_timeout_seconds` with "database is locked" (`is_busy`), which the page origin
answers with 503.
"""

from __future__ import annotations

import math
import random
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal, TypedDict

__all__ = [
    "MONTHS",
    "MONTH_PATTERN",
    "OUTLIER_REFS",
    "REGIONS",
    "DatabaseShapeError",
    "SalesRow",
    "connect",
    "create_demo_db",
    "is_busy",
    "query_sales",
    "shown",
    "table_problem",
]

REGIONS: Final = ("North", "South", "East", "West", "Central")
MONTHS: Final = tuple(f"2026-{month:02d}" for month in range(1, 13))

# The rows a demo user is expected to ask about: a bulk order that tripled North
# in March, and a summer closure that emptied South in August.
_HIGH_OUTLIER: Final = ("North", "2026-03", 3.4)
_LOW_OUTLIER: Final = ("South", "2026-08", 0.35)
OUTLIER_REFS: Final = ("sales-2026-03-north", "sales-2026-08-south")

_BASE_UNITS: Final = {"North": 1200, "South": 950, "East": 1100, "West": 1350, "Central": 800}
_UNIT_PRICE_EUR: Final = {
    "North": 42.5,
    "South": 39.9,
    "East": 44.0,
    "West": 41.2,
    "Central": 46.8,
}
MONTH_PATTERN: Final = re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$")

# Camel-case keys because this is the shape the page and the agent see in JSON; the
# functional form keeps them out of pep8-naming's reach.
SalesRow = TypedDict(  # noqa: UP013
    "SalesRow",
    {"ref": str, "region": str, "month": str, "unitsSold": int, "revenueEur": float},
)

_SCHEMA: Final = """
CREATE TABLE sales (
    ref TEXT PRIMARY KEY,
    region TEXT NOT NULL,
    month TEXT NOT NULL,
    units_sold INTEGER NOT NULL,
    revenue_eur REAL NOT NULL
)
"""
SALES_COLUMNS: Final = ("ref", "region", "month", "units_sold", "revenue_eur")

# How long a statement waits for another connection's lock before it fails with
# "database is locked". A module setting, read on every connect.
busy_timeout_seconds: float = 10.0


class DatabaseShapeError(Exception):
    """A table the demo uses exists in the database with another shape."""


def connect(path: Path, mode: Literal["ro", "rw", "rwc"]) -> sqlite3.Connection:
    """Open the database at `path`: read-only (`ro`), read-write (`rw`, an existing file
    only) or creating it (`rwc`), waiting up to `busy_timeout_seconds` for a lock."""
    connection = sqlite3.connect(
        f"{path.resolve().as_uri()}?mode={mode}", uri=True, timeout=busy_timeout_seconds
    )
    # In write-ahead-log mode a commit then waits for no disk flush (a checkpoint does):
    # the database stays consistent, and a power cut may lose the last commits.
    connection.execute("PRAGMA synchronous = NORMAL")
    return connection


def is_busy(error: sqlite3.Error) -> bool:
    """True if `error` is another connection's lock that outlasted the busy timeout."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def table_problem(
    connection: sqlite3.Connection,
    table: str,
    columns: Sequence[str],
    optional: Sequence[str] = (),
) -> str | None:
    """Why the existing `table` cannot serve as the demo's, or None if it can (or if there
    is no such table): a column of `columns` is missing, or a column the demo does not
    know must be given a value (NOT NULL without a default), which the demo's inserts
    cannot do. `optional` columns may be missing (a later version adds them)."""
    kind = connection.execute(
        "SELECT type FROM sqlite_master WHERE name = ? COLLATE NOCASE", (table,)
    ).fetchone()
    if kind is None:
        return None
    if kind[0] != "table":
        return f"{table} is a {kind[0]}, not a table"
    info = connection.execute(f'PRAGMA table_info("{table}")').fetchall()
    have = {str(row[1]).lower(): row for row in info}
    missing = [column for column in columns if column not in have]
    if missing:
        return (
            f"table {table} has no column {', '.join(missing)} "
            f"(it has {', '.join(str(row[1]) for row in info)})"
        )
    known = {*columns, *optional}
    required = [
        str(row[1])
        for name, row in have.items()
        # NOT NULL, no default, and not the rowid's alias (INTEGER PRIMARY KEY).
        if name not in known
        and row[3]
        and row[4] is None
        and not (row[5] and str(row[2]).upper() == "INTEGER")
    ]
    if required:
        return f"table {table} has a required column the demo does not fill: {', '.join(required)}"
    return None


def sales_ref(region: str, month: str) -> str:
    """Return the resource reference of one row, e.g. ``sales-2026-03-north``."""
    return f"sales-{month}-{region.lower()}"


def _seed_rows() -> list[tuple[str, str, str, int, float]]:
    # A fixed seed and a fixed draw order keep every fresh database identical,
    # so tests and the built-in agent can rely on the numbers.
    rng = random.Random(2026)
    rows: list[tuple[str, str, str, int, float]] = []
    for index, month in enumerate(MONTHS):
        season = 1.0 + 0.15 * math.sin(2 * math.pi * (index - 2) / 12)
        for region in REGIONS:
            units = _BASE_UNITS[region] * season * rng.uniform(0.9, 1.1)
            price = _UNIT_PRICE_EUR[region] * rng.uniform(0.97, 1.03)
            for outlier_region, outlier_month, factor in (_HIGH_OUTLIER, _LOW_OUTLIER):
                if (region, month) == (outlier_region, outlier_month):
                    units *= factor
            units_sold = round(units)
            rows.append(
                (
                    sales_ref(region, month),
                    region,
                    month,
                    units_sold,
                    round(units_sold * price, 2),
                )
            )
    return rows


def create_demo_db(path: Path) -> None:
    """Create the demo database at `path` unless it already has the `sales` table.

    Idempotent and never destructive: an existing table is left exactly as it is,
    including rows that were edited or deleted since it was seeded. Parent
    folders are created as needed. The access tables (users, grants, permissions,
    flags: `pagecontext.server.access`) are created beside it on the same terms.
    The database is put in write-ahead-log mode.

    Raises DatabaseShapeError, before anything is written, if a table of the demo's
    exists with another shape (`table_problem`), or if the database holds tables and
    none of the demo's: another application's database either way.
    """
    # Imported here: access reads the sales table through this module.
    from pagecontext.server.access import (
        ACCESS_COLUMNS,
        access_tables_problem,
        create_access_tables,
    )

    path.parent.mkdir(parents=True, exist_ok=True)
    connection = connect(path, "rwc")
    connection.isolation_level = None
    try:
        # IMMEDIATE takes the write lock before the checks, so two processes starting
        # at once cannot both seed the table.
        connection.execute("BEGIN IMMEDIATE")
        problem = table_problem(connection, "sales", SALES_COLUMNS) or access_tables_problem(
            connection
        )
        if problem is None:
            problem = _foreign_tables_problem(connection, {"sales", *ACCESS_COLUMNS})
        if problem is not None:
            raise DatabaseShapeError(problem)
        exists = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sales'"
        ).fetchone()
        if exists is None:
            connection.execute(_SCHEMA)
            connection.executemany(
                "INSERT INTO sales (ref, region, month, units_sold, revenue_eur) "
                "VALUES (?, ?, ?, ?, ?)",
                _seed_rows(),
            )
        connection.execute("COMMIT")
        # Readers then never wait for a writer, nor a writer for readers.
        connection.execute("PRAGMA journal_mode = WAL")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    finally:
        connection.close()
    create_access_tables(path)


def _foreign_tables_problem(connection: sqlite3.Connection, ours: set[str]) -> str | None:
    """Why the database is another application's (it has tables, none of them named as
    one of `ours`), or None: a new or empty database, or one the demo made."""
    tables = [
        str(row[0])
        for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name"
        )
    ]
    if not tables or any(name.lower() in ours for name in tables):
        return None
    listed = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
    return (
        f"it holds tables of another application ({listed}) and none of the demo's: name a new file"
    )


# How much of a refused value an error message shows.
SHOWN_CHARS: Final = 40


def shown(value: str) -> str:
    """`value` quoted for an error message, cut to its first SHOWN_CHARS characters
    (with "...") so that a long value is not sent back whole."""
    if len(value) <= SHOWN_CHARS:
        return repr(value)
    return repr(value[:SHOWN_CHARS]) + "..."


def _check_month(name: str, value: str | None) -> None:
    if value is not None and not MONTH_PATTERN.fullmatch(value):
        raise ValueError(f"{name} must be a month written YYYY-MM, got {shown(value)}")


def query_sales(
    path: Path,
    region: str | None = None,
    month_from: str | None = None,
    month_to: str | None = None,
) -> list[SalesRow]:
    """Return the sales rows matching the filters, ordered by month then region.

    `region` must be one of `REGIONS`; `month_from` and `month_to` are inclusive
    bounds written YYYY-MM. None means no filter.

    Raises ValueError for an unknown region, a malformed month or a range whose
    start is after its end, and FileNotFoundError if the database does not exist.
    """
    if region is not None and region not in REGIONS:
        raise ValueError(f"region must be one of {', '.join(REGIONS)}, got {shown(region)}")
    _check_month("from", month_from)
    _check_month("to", month_to)
    if month_from is not None and month_to is not None and month_from > month_to:
        raise ValueError(f"from ({month_from}) must not be after to ({month_to})")
    if not path.is_file():
        raise FileNotFoundError(f"demo database {path} does not exist")

    clauses: list[str] = []
    params: list[str] = []
    if region is not None:
        clauses.append("region = ?")
        params.append(region)
    if month_from is not None:
        clauses.append("month >= ?")
        params.append(month_from)
    if month_to is not None:
        clauses.append("month <= ?")
        params.append(month_to)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""

    # Read-only: the resource API only reads; writes go through the action API.
    connection = connect(path, "ro")
    try:
        cursor = connection.execute(
            "SELECT ref, region, month, units_sold, revenue_eur FROM sales"
            f"{where} ORDER BY month, region",
            params,
        )
        return [
            {
                "ref": ref,
                "region": row_region,
                "month": month,
                "unitsSold": int(units_sold),
                "revenueEur": float(revenue_eur),
            }
            for ref, row_region, month, units_sold, revenue_eur in cursor.fetchall()
        ]
    finally:
        connection.close()
