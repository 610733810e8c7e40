"""The page origin's APIs under conditions outside their endpoints' own checks: a
database of another shape, a held database lock, a path or method they do not serve,
and JSON that escapes a lone surrogate."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pagecontext.server import access, data
from pagecontext.server.app import ServerConfig
from pagecontext.server.data import DatabaseShapeError, create_demo_db, query_sales

ANA = {"Authorization": f"Bearer {access.DEMO_TOKENS['ana']}"}
NORTH_MARCH = "sales-2026-03-north"
LOOPBACK = ("127.0.0.1", 50000)
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def config(demo_config: ServerConfig) -> ServerConfig:
    return demo_config


@pytest.fixture
def api(origins: tuple[TestClient, TestClient]) -> TestClient:
    """A client of the page origin from a loopback address."""
    page, _ = origins
    return page


def _tables(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    connection.close()
    return [(str(name), str(sql)) for name, sql in rows]


# --- a database of another shape ------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        (
            "CREATE TABLE sales (id INTEGER PRIMARY KEY, customer TEXT, amount REAL)",
            "table sales has no column ref, region, month, units_sold, revenue_eur "
            "(it has id, customer, amount)",
        ),
        (
            "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL)",
            "table users has no column name, token_sha256 (it has id, email)",
        ),
        (
            "CREATE TABLE users (name TEXT PRIMARY KEY, token_sha256 TEXT, email TEXT NOT NULL)",
            "table users has a required column the demo does not fill: email",
        ),
        ("CREATE VIEW grants AS SELECT 1 AS user", "grants is a view, not a table"),
    ],
)
def test_a_database_with_a_table_of_another_shape_is_refused_untouched(
    tmp_path: Path, schema: str, said: str
) -> None:
    """Another application's database whose `sales` or `users` is not the demo's: refused
    with the table and what is wrong, before anything is written."""
    db = tmp_path / "theirs.db"
    with sqlite3.connect(db) as connection:
        connection.execute(schema)
    connection.close()
    before = (db.read_bytes(), _tables(db))
    with pytest.raises(DatabaseShapeError) as refused:
        create_demo_db(db)
    assert str(refused.value) == said
    assert (db.read_bytes(), _tables(db)) == before


def test_tables_of_the_demos_shape_with_more_columns_are_used(tmp_path: Path) -> None:
    """A `sales` table with the demo's columns and one more that may be left empty is the
    demo's: nothing is refused, and it is read as it is."""
    db = tmp_path / "ours.db"
    with sqlite3.connect(db) as connection:
        connection.execute(
            "CREATE TABLE sales (ref TEXT PRIMARY KEY, region TEXT, month TEXT,"
            " units_sold INTEGER, revenue_eur REAL, comment TEXT)"
        )
        connection.execute(
            "INSERT INTO sales VALUES (?, 'North', '2026-03', 5, 10.0, NULL)", (NORTH_MARCH,)
        )
    connection.close()
    create_demo_db(db)
    assert [row["unitsSold"] for row in query_sales(db)] == [5]
    assert access.user_for_token(db, access.DEMO_TOKENS["ana"]) == "ana"


# --- a held database lock ------------------------------------------------------------------


def test_the_demo_database_runs_in_write_ahead_log_mode(tmp_path: Path) -> None:
    """The demo database is created in write-ahead log mode."""
    db = tmp_path / "demo.db"
    create_demo_db(db)
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    connection.close()


def test_a_write_that_a_held_lock_outlasts_is_a_json_503_and_reads_go_on(
    api: TestClient, config: ServerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection holds the write lock past the busy timeout: a write answers 503
    `database-busy` (JSON, with the CORS headers of its API, `Retry-After`), not a 500,
    reads are answered meanwhile (write-ahead log), and once the lock is gone the same
    writes go through: the flag with the confirmation it had, which the 503 did not
    spend."""
    token = api.post(
        "/api/actions/flag/confirmations", json={"ref": NORTH_MARCH, "taskId": "t"}, headers=ANA
    ).json()["token"]
    monkeypatch.setattr(data, "busy_timeout_seconds", 0.0)
    holder = sqlite3.connect(config.db_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        granted = api.post("/admin/grants", json={"user": "ben", "region": "East"})
        flagged = api.post(
            "/api/actions/flag",
            json={"ref": NORTH_MARCH, "taskId": "t", "confirmationToken": token},
            headers={**ANA, "Origin": config.assistant_origin},
        )
        read = api.get(f"/api/resources/{NORTH_MARCH}", headers=ANA)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    busy = {
        "error": "unavailable",
        "reason": "database-busy",
        "detail": "the database is busy: try again",
    }
    for response in (granted, flagged):
        assert (response.status_code, response.json()) == (503, busy)
        assert response.headers["retry-after"] == "1"
    assert flagged.headers["access-control-allow-origin"] == config.assistant_origin
    assert read.status_code == 200
    assert api.post("/admin/grants", json={"user": "ben", "region": "East"}).status_code == 200
    again = api.post(
        "/api/actions/flag",
        json={"ref": NORTH_MARCH, "taskId": "t", "confirmationToken": token},
        headers={**ANA, "Origin": config.assistant_origin},
    )
    assert again.status_code == 201, again.text
    assert again.json()["flag"]["ref"] == NORTH_MARCH


# --- paths and methods the APIs do not serve ------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/resources/a%2Fb",
        "/api/resources/x%0a",
        f"/api/resources/{NORTH_MARCH}/context/more",
        "/api/actions/nothing",
        "/admin/nothing",
    ],
)
def test_a_path_the_apis_do_not_serve_is_a_json_404(
    api: TestClient, config: ServerConfig, path: str
) -> None:
    """A path the APIs do not serve is a JSON 404, not to be cached, with the API's CORS
    header except under /admin."""
    response = api.get(path, headers={**ANA, "Origin": config.assistant_origin})
    assert (response.status_code, response.json()) == (
        404,
        {"error": "not-found", "reason": "unknown-path"},
    )
    assert response.headers["cache-control"] == "no-store"
    if not path.startswith("/admin"):
        assert response.headers["access-control-allow-origin"] == config.assistant_origin


def test_a_method_the_apis_do_not_take_is_a_json_405(api: TestClient) -> None:
    """A method a path does not take is a JSON 405 with an `Allow` header."""
    for method, path in (
        ("POST", f"/api/resources/{NORTH_MARCH}"),
        ("GET", "/api/actions/flag"),
        ("PUT", "/admin/grants"),
    ):
        response = api.request(method, path, headers=ANA)
        assert (response.status_code, response.json()) == (
            405,
            {"error": "method-not-allowed", "reason": "method-not-allowed"},
        )
        assert response.headers["allow"]


# --- JSON that escapes a lone surrogate ------------------------------------------------------


def test_a_body_escaping_a_lone_surrogate_is_read_and_judged_as_any_other(
    api: TestClient,
) -> None:
    """JavaScript's JSON.stringify writes "\\ud83d" for an emoji cut in two: valid JSON,
    read like any other (the lone half becomes U+FFFD), then held to the same rules."""
    ref = api.post(
        "/api/actions/flag/confirmations",
        content=b'{"ref": "sales-2026-03-\\ud83d", "taskId": "t"}',
        headers=ANA,
    )
    assert (ref.status_code, ref.json()["reason"]) == (400, "malformed-ref")
    user = api.post(
        "/admin/grants", content=b'{"user": "\\ud800", "region": "North"}', headers=JSON
    )
    assert (user.status_code, user.json()["reason"]) == (404, "unknown-user-or-ref")
    assert user.json()["detail"] == "no user '\ufffd'"
    token = api.post(
        "/api/actions/flag/confirmations", json={"ref": NORTH_MARCH, "taskId": "t"}, headers=ANA
    ).json()["token"]
    flagged = api.post(
        "/api/actions/flag",
        content=(
            b'{"ref": "sales-2026-03-north", "taskId": "t", "confirmationToken": "'
            + token.encode()
            + b'", "note": "so high \\ud83d"}'
        ),
        headers=ANA,
    )
    assert flagged.status_code == 201, flagged.text
    assert flagged.json()["flag"]["note"] == "so high \ufffd"
    broken = api.post("/admin/grants", content=b'{"user": "\\ud83d', headers=JSON)
    assert (broken.status_code, broken.json()["reason"]) == (400, "invalid-body")


@pytest.mark.parametrize("gone", ["file", "folder"])
def test_a_database_removed_under_the_server_is_a_json_503(
    api: TestClient, config: ServerConfig, caplog: pytest.LogCaptureFixture, gone: str
) -> None:
    """The database is deleted while the server runs (a `make clean` beside `make demo`):
    the page's data, the resource, action and admin APIs answer 503
    `database-unavailable` in JSON, not a 500 in plain text, and the log says why in one
    line."""
    for path in config.db_path.parent.glob(config.db_path.name + "*"):
        path.unlink()
    if gone == "folder":
        config.db_path.parent.rmdir()
    unavailable = {
        "error": "unavailable",
        "reason": "database-unavailable",
        "detail": "the server cannot read its database",
    }
    answers = [
        api.get("/api/sales"),
        api.get(f"/api/resources/{NORTH_MARCH}", headers=ANA),
        api.post(
            "/api/actions/flag/confirmations", json={"ref": NORTH_MARCH, "taskId": "t"}, headers=ANA
        ),
        api.get("/admin/flags", headers=JSON),
    ]
    for response in answers:
        assert (response.status_code, response.json()) == (503, unavailable), response.text
    logged = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(logged) == len(answers)
    assert all(r.exc_info is None for r in caplog.records)
