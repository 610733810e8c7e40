"""Who may read and flag what: the demo's users, grants, permissions and flags in SQLite.

This module owns the access tables beside `sales` and every question asked of them:

- `users`: a name and the SHA-256 digest of the user's bearer token (the token itself
  is never stored). Two demo users: `ana` reads every region and may flag; `ben`
  reads North and South and may not flag. Their demo tokens are `DEMO_TOKENS`.
- `read_tokens`: the SHA-256 digest of a second token per user that reads as the user
  and may do nothing else (`DEMO_READ_TOKENS`): the credential the assistant hands to
  its agent, so that an agent can never carry out a business action, which needs the
  user's own token and the user's confirmation in the panel.
- `grants`: (user, kind, value) with kind `region` (a region name) or `ref` (one row).
- `permissions`: (user, action): the business actions a user may perform (`flag`).
- `flags`: the rows flagged for review, with who, which task, the note, when, and the
  assistant's action that asked for it (when it named one).

An existing table of one of these names must have the columns the demo uses
(`ACCESS_COLUMNS`, checked by `access_tables_problem`): a database where one does not
is another application's, and is refused before anything is written.

`is_authorized` answers from the tables on every call (no cache), so a revoke takes
effect on the very next read. Revoking is by target: afterwards the user cannot read
it, whatever grant gave access before (see `revoke`). Each call opens its own
connection, so the functions are safe from Starlette's worker threads.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final, Literal, TypedDict

from pagecontext.server.data import (
    REGIONS,
    DatabaseShapeError,
    SalesRow,
    connect,
    query_sales,
    table_problem,
)

__all__ = [
    "ACCESS_COLUMNS",
    "DEMO_READ_TOKENS",
    "DEMO_TOKENS",
    "REF_PATTERN",
    "ActionIdTaken",
    "FlagRecord",
    "Grant",
    "GrantKind",
    "access_tables_problem",
    "create_access_tables",
    "grant",
    "has_permission",
    "is_authorized",
    "read_row",
    "readable_refs",
    "record_flag",
    "ref_region",
    "revoke",
    "set_values",
    "token_user",
    "user_for_token",
]

# Demo-only credentials: the demo serves loopback only (run.port_problem), and these
# are in the docs.
DEMO_TOKENS: Final = {"ana": "pc-demo-token-ana", "ben": "pc-demo-token-ben"}
DEMO_READ_TOKENS: Final = {"ana": "pc-demo-read-ana", "ben": "pc-demo-read-ben"}
_DEMO_GRANTS: Final = {"ana": REGIONS, "ben": ("North", "South")}
_DEMO_PERMISSIONS: Final = {"ana": ("flag",), "ben": ()}

# A row id of the demo's data: its month and one of its regions. Anything else names no
# row, is read by no one, and is never repeated as the agent's words.
REF_PATTERN: Final = re.compile(
    rf"^sales-[0-9]{{4}}-(0[1-9]|1[0-2])-({'|'.join(region.lower() for region in REGIONS)})$"
)
GrantKind = Literal["region", "ref"]

_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS users (
        name TEXT PRIMARY KEY,
        token_sha256 TEXT NOT NULL UNIQUE
    )""",
    """CREATE TABLE IF NOT EXISTS read_tokens (
        user TEXT NOT NULL REFERENCES users(name),
        token_sha256 TEXT NOT NULL UNIQUE
    )""",
    """CREATE TABLE IF NOT EXISTS grants (
        user TEXT NOT NULL REFERENCES users(name),
        kind TEXT NOT NULL CHECK (kind IN ('region', 'ref')),
        value TEXT NOT NULL,
        PRIMARY KEY (user, kind, value)
    )""",
    """CREATE TABLE IF NOT EXISTS permissions (
        user TEXT NOT NULL REFERENCES users(name),
        action TEXT NOT NULL,
        PRIMARY KEY (user, action)
    )""",
    """CREATE TABLE IF NOT EXISTS flags (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ref TEXT NOT NULL,
        user TEXT NOT NULL,
        task_id TEXT NOT NULL,
        note TEXT,
        flagged_at TEXT NOT NULL,
        action_id TEXT
    )""",
)

# The columns each access table must have, and those it may lack (added since: a
# database made before them gets them).
ACCESS_COLUMNS: Final = {
    "users": (("name", "token_sha256"), ()),
    "read_tokens": (("user", "token_sha256"), ()),
    "grants": (("user", "kind", "value"), ()),
    "permissions": (("user", "action"), ()),
    "flags": (("id", "ref", "user", "task_id", "note", "flagged_at"), ("action_id",)),
}


class Grant(TypedDict):
    """One grant: a user reads one region, or one row."""

    user: str
    kind: GrantKind
    value: str


# Camel-case keys: this is the JSON the action API answers with.
FlagRecord = TypedDict(  # noqa: UP013
    "FlagRecord",
    {
        "id": int,
        "ref": str,
        "user": str,
        "taskId": str,
        "note": str | None,
        "flaggedAt": str,
        "actionId": str | None,
    },
)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    # Opening an existing file only: a missing database is an error, never a new file.
    connection = connect(path, "rw")
    try:
        with connection:
            yield connection
    finally:
        connection.close()


def access_tables_problem(connection: sqlite3.Connection) -> str | None:
    """Why an existing access table cannot serve as the demo's (`data.table_problem`), or
    None if every one can (or does not exist yet)."""
    for table, (columns, optional) in ACCESS_COLUMNS.items():
        problem = table_problem(connection, table, columns, optional)
        if problem is not None:
            return problem
    return None


def create_access_tables(path: Path) -> None:
    """Create the access tables in the existing database at `path`, seeding the demo users.

    Idempotent and never destructive: tables that exist are kept, and the demo users,
    grants and permissions are inserted only when the `users` table is new, so grants
    revoked since stay revoked; the demo read tokens, when `read_tokens` is (a database
    made before it). Raises DatabaseShapeError, before anything is written, if an access
    table exists with another shape.
    """
    with _connect(path) as connection:
        connection.execute("BEGIN IMMEDIATE")
        problem = access_tables_problem(connection)
        if problem is not None:
            raise DatabaseShapeError(problem)
        fresh, fresh_read = (
            connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            is None
            for table in ("users", "read_tokens")
        )
        for statement in _SCHEMA:
            connection.execute(statement)
        columns = [row[1] for row in connection.execute("PRAGMA table_info(flags)")]
        if "action_id" not in columns:
            # A database made before flags named the action that made them.
            connection.execute("ALTER TABLE flags ADD COLUMN action_id TEXT")
        if fresh:
            for user, token in DEMO_TOKENS.items():
                connection.execute("INSERT INTO users VALUES (?, ?)", (user, _digest(token)))
                connection.executemany(
                    "INSERT INTO grants VALUES (?, 'region', ?)",
                    [(user, region) for region in _DEMO_GRANTS[user]],
                )
                connection.executemany(
                    "INSERT INTO permissions VALUES (?, ?)",
                    [(user, action) for action in _DEMO_PERMISSIONS[user]],
                )
        if fresh_read:
            connection.executemany(
                "INSERT INTO read_tokens VALUES (?, ?)",
                [(user, _digest(token)) for user, token in DEMO_READ_TOKENS.items()],
            )


def token_user(path: Path, token: str) -> tuple[str, bool] | None:
    """Return the user `token` reads as, and whether it is the user's own token (which
    may act) rather than the user's read token; None for any other token."""
    with _connect(path) as connection:
        row = connection.execute(
            "SELECT name, 1 FROM users WHERE token_sha256 = :digest UNION ALL "
            "SELECT user, 0 FROM read_tokens WHERE token_sha256 = :digest",
            {"digest": _digest(token)},
        ).fetchone()
    return None if row is None else (str(row[0]), bool(row[1]))


def user_for_token(path: Path, token: str) -> str | None:
    """Return the user whose own bearer token is `token`, or None (a read token too)."""
    found = token_user(path, token)
    return found[0] if found is not None and found[1] else None


def ref_region(ref: str) -> str | None:
    """Return the region a well-formed ref names (e.g. "North"), or None if malformed."""
    match = REF_PATTERN.fullmatch(ref)
    if match is None:
        return None
    return next(region for region in REGIONS if region.lower() == match.group(2))


def is_authorized(path: Path, user: str, ref: str) -> bool:
    """Return True if `user` may read `ref` now: a grant on the ref or on its region."""
    return ref in readable_refs(path, user, [ref])


def readable_refs(path: Path, user: str, refs: Iterable[str]) -> set[str]:
    """Return those of `refs` that `user` may read now, from one read of their grants."""
    with _connect(path) as connection:
        grants = set(connection.execute("SELECT kind, value FROM grants WHERE user = ?", (user,)))
    return {ref for ref in refs if ("ref", ref) in grants or ("region", ref_region(ref)) in grants}


def has_permission(path: Path, user: str, action: str) -> bool:
    """Return True if `user` may perform the business action `action`."""
    with _connect(path) as connection:
        row = connection.execute(
            "SELECT 1 FROM permissions WHERE user = ? AND action = ?", (user, action)
        ).fetchone()
    return row is not None


def read_row(path: Path, ref: str) -> SalesRow | None:
    """Return the live row `ref`, or None if there is none."""
    region = ref_region(ref)
    if region is None:
        return None
    month = ref[len("sales-") : len("sales-YYYY-MM")]
    rows = query_sales(path, region=region, month_from=month, month_to=month)
    return rows[0] if rows else None


def _user_exists(connection: sqlite3.Connection, user: str) -> bool:
    return connection.execute("SELECT 1 FROM users WHERE name = ?", (user,)).fetchone() is not None


def grant(path: Path, user: str, kind: GrantKind, value: str) -> Grant:
    """Let `user` read a region or one row; return the grant (granting twice is fine).

    Raises LookupError for an unknown user or row, ValueError for an unknown region.
    """
    if kind == "region" and value not in REGIONS:
        raise ValueError(f"region must be one of {', '.join(REGIONS)}, got {value!r}")
    if kind == "ref" and read_row(path, value) is None:
        raise LookupError(f"no row {value!r}")
    with _connect(path) as connection:
        if not _user_exists(connection, user):
            raise LookupError(f"no user {user!r}")
        connection.execute("INSERT OR IGNORE INTO grants VALUES (?, ?, ?)", (user, kind, value))
    return {"user": user, "kind": kind, "value": value}


def revoke(path: Path, user: str, kind: GrantKind, value: str) -> list[Grant]:
    """Take away `user`'s access to a region or one row; return the grants removed.

    Revoking a row removes its ref grant and the grant on its region, so the user can
    no longer read it (other rows of the region go too: the demo has no deny rules).
    Revoking a region removes the region grant and the ref grants inside it. Revoking
    what is not granted removes nothing; a target that does not exist is an error, as
    for `grant`, so a revoke with a typo never reads as done.
    Raises LookupError for an unknown user or row, ValueError for an unknown region.
    """
    if kind == "region" and value not in REGIONS:
        raise ValueError(f"region must be one of {', '.join(REGIONS)}, got {value!r}")
    if kind == "ref" and read_row(path, value) is None:
        raise LookupError(f"no row {value!r}")
    targets: list[tuple[GrantKind, str]]
    if kind == "ref":
        targets = [("ref", value), ("region", ref_region(value) or "")]
    else:
        inside = [row["ref"] for row in query_sales(path, region=value)] if value in REGIONS else []
        targets = [("region", value), *(("ref", ref) for ref in inside)]
    removed: list[Grant] = []
    with _connect(path) as connection:
        if not _user_exists(connection, user):
            raise LookupError(f"no user {user!r}")
        for target_kind, target_value in targets:
            cursor = connection.execute(
                "DELETE FROM grants WHERE user = ? AND kind = ? AND value = ?",
                (user, target_kind, target_value),
            )
            if cursor.rowcount:
                removed.append({"user": user, "kind": target_kind, "value": target_value})
    return removed


def set_values(path: Path, ref: str, units_sold: int | None, revenue_eur: float | None) -> SalesRow:
    """Change the live values of row `ref`; return the row as it now is.

    Raises LookupError if there is no such row.
    """
    with _connect(path) as connection:
        for column, value in (("units_sold", units_sold), ("revenue_eur", revenue_eur)):
            if value is not None:
                # The column name comes from the literal tuple above, never from input.
                connection.execute(f"UPDATE sales SET {column} = ? WHERE ref = ?", (value, ref))
    row = read_row(path, ref)
    if row is None:
        raise LookupError(f"no row {ref!r}")
    return row


class ActionIdTaken(Exception):  # noqa: N818 - reads as the outcome it is
    """A flag request names an action whose flag is of another row or task."""


def record_flag(
    path: Path,
    ref: str,
    user: str,
    task_id: str,
    note: str | None,
    at: str,
    action_id: str | None = None,
) -> tuple[FlagRecord, bool]:
    """Record that `user` flagged `ref` for review in task `task_id` at `at` (for the
    assistant's action `action_id`, if named); return it, and True. An action of this
    user's that has its flag already (a proposal confirmed again, in another tab or after
    a reload) gets no second one: that flag is returned, and False. Raises
    ActionIdTaken if the action's flag is of another row or task (an id the agent used
    twice): nothing is written."""
    with _connect(path) as connection:
        if action_id is not None:
            # The write lock from here: two requests for one action cannot both find none.
            connection.execute("BEGIN IMMEDIATE")
            made = _flags(connection, (("user", user), ("action_id", action_id)))
            if made:
                if (made[0]["ref"], made[0]["taskId"]) != (ref, task_id):
                    raise ActionIdTaken(action_id)
                return made[0], False
        cursor = connection.execute(
            "INSERT INTO flags (ref, user, task_id, note, flagged_at, action_id)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (ref, user, task_id, note, at, action_id),
        )
        flag_id = cursor.lastrowid
    assert flag_id is not None
    record: FlagRecord = {
        "id": flag_id,
        "ref": ref,
        "user": user,
        "taskId": task_id,
        "note": note,
        "flaggedAt": at,
        "actionId": action_id,
    }
    return record, True


def list_flags(
    path: Path,
    *,
    user: str | None = None,
    ref: str | None = None,
    task_id: str | None = None,
    action_id: str | None = None,
) -> list[FlagRecord]:
    """Return the flags recorded, oldest first: every one, or those matching the
    given user, ref, task and action."""
    given = (("user", user), ("ref", ref), ("task_id", task_id), ("action_id", action_id))
    with _connect(path) as connection:
        return _flags(connection, given)


def _flags(
    connection: sqlite3.Connection, given: Iterable[tuple[str, str | None]]
) -> list[FlagRecord]:
    """The flags whose columns have the values given (None: any), oldest first. The
    column names come from the callers' literal tuples, never from input."""
    where = [(column, value) for column, value in given if value is not None]
    clause = " AND ".join(f"{column} = ?" for column, _ in where)
    query = "SELECT id, ref, user, task_id, note, flagged_at, action_id FROM flags"
    query += f" WHERE {clause}" if clause else ""
    rows = connection.execute(query + " ORDER BY id", [value for _, value in where]).fetchall()
    return [
        {
            "id": row[0],
            "ref": row[1],
            "user": row[2],
            "taskId": row[3],
            "note": row[4],
            "flaggedAt": row[5],
            "actionId": row[6],
        }
        for row in rows
    ]
