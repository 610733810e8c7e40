"""The page origin's live-data APIs: resources, admin, and the flag action, over HTTP."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.testclient import TestClient

from clients import page_client
from pagecontext.server import access
from pagecontext.server import app as app_module
from pagecontext.server.app import ServerConfig, create_assistant_app, create_page_app
from pagecontext.server.data import REGIONS, create_demo_db
from pagecontext.testing import FakeClock, counter_ids

ANA = {"Authorization": f"Bearer {access.DEMO_TOKENS['ana']}"}
BEN = {"Authorization": f"Bearer {access.DEMO_TOKENS['ben']}"}
NORTH_MARCH = "sales-2026-03-north"
# 2023-11-14T22:13:20.000Z, FakeClock's start.
START_ISO = "2023-11-14T22:13:20.000Z"
LOOPBACK = ("127.0.0.1", 50000)


@pytest.fixture
def config(tmp_path: Path) -> ServerConfig:
    """A configuration over an empty repository (only the APIs are used)."""
    (tmp_path / "index.html").write_text("<!doctype html>")
    (tmp_path / "web").mkdir()
    return ServerConfig(root=tmp_path)


@pytest.fixture
def clock() -> FakeClock:
    """The page app's clock."""
    return FakeClock()


@pytest.fixture
def api(config: ServerConfig, clock: FakeClock) -> Iterator[TestClient]:
    """A client of the page origin from a loopback address."""
    app = create_page_app(config, clock=clock, token_factory=counter_ids("tok"))
    with page_client(config, app, client=LOOPBACK) as client:
        yield client


@pytest.fixture
def remote_api(config: ServerConfig, api: TestClient) -> Iterator[TestClient]:
    """A client of the same app from a non-loopback address."""
    with page_client(config, client=("192.0.2.7", 50000)) as client:
        yield client


def admin(api: TestClient, method: str, path: str, body: object) -> dict[str, object]:
    response = api.request(method, path, json=body)
    assert response.status_code == 200, response.text
    result: dict[str, object] = response.json()
    return result


# --- access tables ----------------------------------------------------------------------


def test_demo_users_and_grants_are_seeded_once(tmp_path: Path) -> None:
    """ana reads every region and may flag; ben reads North and South only and may not."""
    db = tmp_path / "demo.db"
    create_demo_db(db)
    assert access.user_for_token(db, access.DEMO_TOKENS["ana"]) == "ana"
    assert access.user_for_token(db, "nope") is None
    assert all(access.is_authorized(db, "ana", f"sales-2026-01-{r.lower()}") for r in REGIONS)
    assert [
        r for r in REGIONS if access.is_authorized(db, "ben", f"sales-2026-01-{r.lower()}")
    ] == [
        "North",
        "South",
    ]
    assert access.has_permission(db, "ana", "flag")
    assert not access.has_permission(db, "ben", "flag")


def test_create_demo_db_keeps_revoked_grants_revoked(tmp_path: Path) -> None:
    """Creating the database again does not re-seed grants that were revoked since."""
    db = tmp_path / "demo.db"
    create_demo_db(db)
    access.revoke(db, "ana", "region", "North")
    create_demo_db(db)
    assert not access.is_authorized(db, "ana", NORTH_MARCH)
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT count(*) FROM users").fetchone() == (2,)
    connection.close()


def test_tokens_are_stored_only_as_digests(tmp_path: Path) -> None:
    """The users table holds no bearer token in plain text."""
    db = tmp_path / "demo.db"
    create_demo_db(db)
    assert access.DEMO_TOKENS["ana"].encode() not in db.read_bytes()


# --- GET /api/resources/{ref} ------------------------------------------------------------


def test_resource_read_returns_the_live_row_with_units_and_read_time(api: TestClient) -> None:
    """200: the row, its units and readAt (server time, ISO 8601 UTC), never cached."""
    response = api.get(f"/api/resources/{NORTH_MARCH}", headers=ANA)
    assert response.status_code == 200
    body = response.json()
    assert body["row"]["ref"] == NORTH_MARCH
    assert body["row"]["unitsSold"] == 4231
    assert body["units"] == {"unitsSold": "units", "revenueEur": "EUR"}
    assert body["readAt"] == START_ISO
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    ("headers", "ref", "status", "reason"),
    [
        ({}, NORTH_MARCH, 401, "missing-token"),
        ({"Authorization": "Basic abc"}, NORTH_MARCH, 401, "missing-token"),
        ({"Authorization": "Bearer wrong"}, NORTH_MARCH, 401, "invalid-token"),
        (ANA, "sales-2026-13-north", 400, "malformed-ref"),
        (ANA, "%23row-3", 400, "malformed-ref"),
        (ANA, "Sales-2026-03-North", 400, "malformed-ref"),
        (ANA, "sales-2027-03-north", 404, "unknown-ref"),
        (BEN, "sales-2026-03-west", 403, "not-authorized"),
        (BEN, "sales-2027-03-west", 403, "not-authorized"),
        (ANA, "sales-2026-03-mars", 400, "malformed-ref"),
    ],
)
def test_resource_read_refusals(
    api: TestClient, headers: dict[str, str], ref: str, status: int, reason: str
) -> None:
    """401 without a valid user, 400 malformed, 403 not granted, 404 unknown; never cached."""
    response = api.get(f"/api/resources/{ref}", headers=headers)
    assert response.status_code == status
    assert response.json()["reason"] == reason
    assert response.headers["cache-control"] == "no-store"
    if status == 401:
        assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.scenario(5)
def test_a_revoke_takes_effect_on_the_very_next_read(api: TestClient) -> None:
    """ana reads the row, her access is revoked, and the next read is a 403."""
    assert api.get(f"/api/resources/{NORTH_MARCH}", headers=ANA).status_code == 200
    removed = admin(api, "DELETE", "/admin/grants", {"user": "ana", "ref": NORTH_MARCH})
    assert removed == {"removed": [{"user": "ana", "kind": "region", "value": "North"}]}
    response = api.get(f"/api/resources/{NORTH_MARCH}", headers=ANA)
    assert (response.status_code, response.json()["reason"]) == (403, "not-authorized")
    admin(api, "POST", "/admin/grants", {"user": "ana", "ref": NORTH_MARCH})
    assert api.get(f"/api/resources/{NORTH_MARCH}", headers=ANA).status_code == 200
    assert api.get("/api/resources/sales-2026-04-north", headers=ANA).status_code == 403


@pytest.mark.parametrize(
    ("target", "status", "reason"),
    [
        ({"region": "north"}, 400, "unknown-region"),
        ({"ref": "sales-2026-03-North"}, 404, "unknown-user-or-ref"),
    ],
)
def test_revoking_what_does_not_exist_is_refused_not_done(
    api: TestClient, target: dict[str, str], status: int, reason: str
) -> None:
    """A revoke with a wrong case (a typo) is refused as the grant would be, never a 200
    that leaves the access in place."""
    response = api.request("DELETE", "/admin/grants", json={"user": "ben", **target})
    assert (response.status_code, response.json()["reason"]) == (status, reason)
    assert api.get(f"/api/resources/{NORTH_MARCH}", headers=BEN).status_code == 200


def test_resource_context_lists_the_region_and_month_rows_the_user_may_read(
    api: TestClient,
) -> None:
    """The context holds the region's 12 months and the month's regions, filtered by grants."""
    body = api.get(f"/api/resources/{NORTH_MARCH}/context", headers=ANA).json()
    assert [row["month"] for row in body["regionRows"]] == [f"2026-{m:02d}" for m in range(1, 13)]
    assert sorted(row["region"] for row in body["monthRows"]) == sorted(REGIONS)
    assert body["withheld"] == 0
    ben = api.get(f"/api/resources/{NORTH_MARCH}/context", headers=BEN).json()
    assert sorted(row["region"] for row in ben["monthRows"]) == ["North", "South"]
    assert ben["withheld"] == 3
    refused = api.get("/api/resources/sales-2026-03-west/context", headers=BEN)
    assert refused.status_code == 403


def test_cors_answers_only_the_assistant_origin(api: TestClient, config: ServerConfig) -> None:
    """A preflight from the assistant origin is allowed with Authorization; another is not."""
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    ok = api.options("/api/actions/flag", headers={"Origin": config.assistant_origin, **preflight})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == config.assistant_origin
    assert "authorization" in ok.headers["access-control-allow-headers"].lower()
    evil = api.options("/api/actions/flag", headers={"Origin": "http://evil.test", **preflight})
    assert evil.status_code == 400
    assert "access-control-allow-origin" not in evil.headers
    read = api.get(
        f"/api/resources/{NORTH_MARCH}", headers={"Origin": config.assistant_origin, **ANA}
    )
    assert read.headers["access-control-allow-origin"] == config.assistant_origin


# --- admin ----------------------------------------------------------------------------------


@pytest.mark.parametrize("announced", [True, False])
def test_an_action_body_past_its_limit_is_refused(remote_api: TestClient, announced: bool) -> None:
    """Any web page can POST text/plain cross-origin without a preflight: a body past
    16 KiB (sent with a token: without one it is not read at all) gets 413 before the
    token is looked up or the body parsed, announced or streamed (how much of it is
    read: tests/test_bodies.py)."""
    chunk = b"x" * 4096
    body = chunk * 16 if announced else iter([chunk] * 16)
    response = remote_api.post(
        "/api/actions/flag", content=body, headers={"Content-Type": "text/plain", **ANA}
    )
    assert response.status_code == 413
    assert response.json()["reason"] == "too-large"


def test_a_request_for_another_host_name_is_refused(config: ServerConfig) -> None:
    """DNS rebinding: a page whose name now resolves to this machine reaches it from a
    loopback address, same-origin, with no Origin or Sec-Fetch-* header. Both origins
    answer 400 to any Host but their own: no flags from the admin API, and no assistant
    page with its bearer token."""
    rebound = ServerConfig(
        root=config.root,
        db_path=config.db_path,
        page_host="rebind.example.test",
        assistant_host="rebind.example.test",
    )
    app = create_page_app(config)
    with TestClient(app, base_url=rebound.page_origin, client=LOOPBACK) as page:
        refused = page.get("/admin/flags", headers={"Content-Type": "application/json"})
        assert refused.status_code == 400
        assert "flags" not in refused.text
        # It names the origin to open instead.
        assert refused.text == "Invalid host header: this server answers only as " + (
            config.page_origin
        )
    with TestClient(create_assistant_app(config), base_url=rebound.assistant_origin) as panel:
        refused = panel.get("/assistant.html")
        assert refused.status_code == 400
        assert "Bearer" not in refused.text
    with page_client(config, app, client=LOOPBACK) as page:
        allowed = page.get("/admin/flags", headers={"Content-Type": "application/json"})
        assert allowed.status_code == 200
    # A host name is the same written in capitals; a Host without one is refused.
    host = config.assistant_host
    assert host.isalpha(), host
    shouted = config.assistant_origin.replace(host, host.upper())
    assistant_app = create_assistant_app(config)
    with (
        TestClient(assistant_app, base_url=shouted) as panel,
        TestClient(assistant_app, base_url=config.assistant_origin) as own,
    ):
        answer = panel.get("/assistant.html")
        assert answer.status_code != 400
        assert (answer.status_code, answer.text) == (
            own.get("/assistant.html").status_code,
            own.get("/assistant.html").text,
        )
        for refused_host in ("", "[", "[::1", "evil@" + host, host + "/x", host + ":port"):
            answer = panel.get("/assistant.html", headers={"Host": refused_host})
            assert answer.status_code == 400, refused_host


def test_a_refused_host_name_is_answered_nosniff_too(config: ServerConfig) -> None:
    """The host check's 400 is a response like any other: it forbids MIME sniffing, on
    both origins."""
    rebound = "http://rebind.example.test:8000"
    for app in (create_page_app(config), create_assistant_app(config)):
        with TestClient(app, base_url=rebound, client=LOOPBACK) as client:
            refused = client.get("/")
            assert refused.status_code == 400
            assert refused.headers["x-content-type-options"] == "nosniff"


def test_admin_changes_a_value_read_live_next(api: TestClient) -> None:
    """POST /admin/sales/{ref} changes the row; the next resource read shows it."""
    body = admin(api, "POST", f"/admin/sales/{NORTH_MARCH}", {"unitsSold": 1200})
    assert body["row"]["unitsSold"] == 1200  # type: ignore[index]
    row = api.get(f"/api/resources/{NORTH_MARCH}", headers=ANA).json()["row"]
    assert row["unitsSold"] == 1200


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "reason"),
    [
        ("POST", "/admin/grants", {"user": "ana"}, 400, "invalid-body"),
        (
            "POST",
            "/admin/grants",
            {"user": "ana", "ref": "x", "region": "North"},
            400,
            "invalid-body",
        ),
        ("POST", "/admin/grants", {"user": "ana", "region": "Mars"}, 400, "unknown-region"),
        ("POST", "/admin/grants", {"user": "zed", "region": "North"}, 404, "unknown-user-or-ref"),
        (
            "POST",
            "/admin/grants",
            {"user": "ana", "ref": "sales-2030-01-north"},
            404,
            "unknown-user-or-ref",
        ),
        ("POST", "/admin/grants", {"user": "ana", "region": "North", "x": 1}, 400, "invalid-body"),
        ("DELETE", "/admin/grants", {"user": "zed", "region": "North"}, 404, "unknown-user-or-ref"),
        ("POST", f"/admin/sales/{NORTH_MARCH}", {}, 400, "invalid-body"),
        ("POST", f"/admin/sales/{NORTH_MARCH}", {"unitsSold": -1}, 400, "invalid-body"),
        ("POST", f"/admin/sales/{NORTH_MARCH}", {"unitsSold": "5"}, 400, "invalid-body"),
        ("POST", "/admin/sales/sales-2030-01-north", {"unitsSold": 5}, 404, "unknown-ref"),
    ],
)
def test_admin_refuses_bad_bodies_clearly(
    api: TestClient, method: str, path: str, body: object, status: int, reason: str
) -> None:
    """Bad bodies are a 400 naming the problem; unknown users and rows a 404."""
    response = api.request(method, path, json=body)
    assert response.status_code == status
    assert response.json()["reason"] == reason


def test_admin_refuses_a_body_that_is_not_json(api: TestClient) -> None:
    """A non-JSON content type is a 415; broken JSON is a 400."""
    text = api.post("/admin/grants", content=b"user=ana", headers={"Content-Type": "text/plain"})
    assert text.status_code == 415
    broken = api.post("/admin/grants", content=b"{", headers={"Content-Type": "application/json"})
    assert (broken.status_code, broken.json()["reason"]) == (400, "invalid-body")


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (None, "(body): should be a JSON object"),
        ([1], "(body): should be a JSON object"),
        ({"user": 1, "region": 2}, "user: Input should be a valid string (and 1 more)"),
    ],
)
def test_a_bad_body_is_named_in_the_senders_words(
    api: TestClient, body: object, detail: str
) -> None:
    """The detail names the field and what is wrong with it, and how many more problems
    there are; a body that is not an object says so, not which model would read it."""
    response = api.post(
        "/admin/grants", content=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert (response.status_code, response.json()["reason"]) == (400, "invalid-body")
    assert response.json()["detail"] == detail


def test_admin_refuses_requests_from_outside_loopback(remote_api: TestClient) -> None:
    """A client address that is not loopback gets a 403 and changes nothing."""
    response = remote_api.post("/admin/grants", json={"user": "ben", "region": "West"})
    assert (response.status_code, response.json()["reason"]) == (403, "not-loopback")
    assert remote_api.get("/api/resources/sales-2026-03-west", headers=BEN).status_code == 403


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8000", "http://localhost:8001", "null"])
def test_admin_refuses_any_request_with_an_origin_header(api: TestClient, origin: str) -> None:
    """Even from loopback, a request carrying Origin (a web page's) gets a 403."""
    for method, path, body in (
        ("POST", "/admin/grants", {"user": "ben", "region": "West"}),
        ("DELETE", "/admin/grants", {"user": "ana", "region": "North"}),
        ("POST", f"/admin/sales/{NORTH_MARCH}", {"unitsSold": 1}),
    ):
        response = api.request(method, path, json=body, headers={"Origin": origin})
        assert (response.status_code, response.json()["reason"]) == (403, "origin-header")
    assert api.get(f"/api/resources/{NORTH_MARCH}", headers=ANA).json()["row"]["unitsSold"] == 4231


def test_admin_lists_flags_to_loopback_clients_only_and_never_to_a_browser(
    api: TestClient,
) -> None:
    """A same-origin GET from a page carries no Origin, but it carries Sec-Fetch-Site. A
    GET needs no content type: it carries no body."""
    json_type = {"Content-Type": "application/json"}
    assert api.get("/admin/flags").json() == {"flags": []}
    token = confirm(api)
    flagged = api.post(
        "/api/actions/flag",
        json={"ref": NORTH_MARCH, "taskId": "task-1", "confirmationToken": token},
        headers=ANA,
    )
    assert flagged.status_code == 201
    [flag] = api.get("/admin/flags", headers=json_type).json()["flags"]
    assert (flag["ref"], flag["user"], flag["taskId"]) == (NORTH_MARCH, "ana", "task-1")
    page = api.get("/admin/flags", headers={**json_type, "Sec-Fetch-Site": "same-origin"})
    assert (page.status_code, page.json()["reason"]) == (403, "browser-request")


# --- the flag action ------------------------------------------------------------------------


def confirm(api: TestClient, task_id: str = "task-1", ref: str = NORTH_MARCH) -> str:
    response = api.post(
        "/api/actions/flag/confirmations", json={"ref": ref, "taskId": task_id}, headers=ANA
    )
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    return token


def flag(
    api: TestClient, token: str, task_id: str = "task-1", headers: dict[str, str] = ANA
) -> tuple[int, dict[str, object]]:
    response = api.post(
        "/api/actions/flag",
        json={"ref": NORTH_MARCH, "taskId": task_id, "confirmationToken": token, "note": "3x"},
        headers=headers,
    )
    return response.status_code, response.json()


def test_an_action_confirmed_again_gets_the_flag_it_has(api: TestClient) -> None:
    """The same assistant action (`actionId`) flagged again with a fresh confirmation (its
    proposal confirmed in a second tab, or again after a reload): 200 with the flag made
    the first time, and no second flag; another action of the same row and task gets its
    own."""

    def flag_for(action_id: str) -> tuple[int, dict[str, Any]]:
        body = {"ref": NORTH_MARCH, "taskId": "task-1", "actionId": action_id}
        response = api.post(
            "/api/actions/flag", json={**body, "confirmationToken": confirm(api)}, headers=ANA
        )
        return response.status_code, response.json()

    first, made = flag_for("a-1")
    again, kept = flag_for("a-1")
    other, own = flag_for("a-2")
    assert (first, again, other) == (201, 200, 201)
    assert kept["flag"] == made["flag"]
    assert own["flag"]["id"] != made["flag"]["id"]
    listed = api.get(f"/api/actions/flags?ref={NORTH_MARCH}&taskId=task-1", headers=ANA)
    assert [f["actionId"] for f in listed.json()["flags"]] == ["a-1", "a-2"]


def test_an_action_id_of_another_rows_flag_is_refused_and_its_token_holds(
    api: TestClient,
) -> None:
    """A flag request for a row in another task, naming an action whose flag is of this
    row (an id the agent gave two proposals): 409 `action-id-taken`, no flag made and
    none of the first returned as this one's; its confirmation is not spent."""
    first = api.post(
        "/api/actions/flag",
        json={
            "ref": NORTH_MARCH,
            "taskId": "task-1",
            "actionId": "call_1",
            "confirmationToken": confirm(api),
        },
        headers=ANA,
    )
    assert first.status_code == 201
    token = confirm(api, task_id="task-2")
    body = {"ref": NORTH_MARCH, "taskId": "task-2", "confirmationToken": token}
    taken = api.post("/api/actions/flag", json={**body, "actionId": "call_1"}, headers=ANA)
    assert (taken.status_code, taken.json()["reason"]) == (409, "action-id-taken")
    listed = api.get(f"/api/actions/flags?ref={NORTH_MARCH}&taskId=task-2", headers=ANA)
    assert listed.json()["flags"] == []
    again = api.post("/api/actions/flag", json={**body, "actionId": "call_2"}, headers=ANA)
    assert again.status_code == 201


@pytest.mark.scenario(8)
def test_a_confirmed_flag_is_recorded_once(api: TestClient) -> None:
    """A token issued for the task flags the row once (201); a replay is a 409 `used`."""
    issued = api.post(
        "/api/actions/flag/confirmations",
        json={"ref": NORTH_MARCH, "taskId": "task-1"},
        headers=ANA,
    ).json()
    assert issued["expiresAt"] == "2023-11-14T22:15:20.000Z"
    assert (issued["action"], issued["ref"], issued["taskId"]) == ("flag", NORTH_MARCH, "task-1")
    status, body = flag(api, issued["token"])
    assert status == 201
    assert body["flag"] == {
        "id": 1,
        "ref": NORTH_MARCH,
        "user": "ana",
        "taskId": "task-1",
        "note": "3x",
        "flaggedAt": START_ISO,
        "actionId": None,
    }
    assert flag(api, issued["token"]) == (409, {"error": "confirmation-refused", "reason": "used"})


def test_a_flag_names_the_action_that_made_it_and_is_listed_by_it(api: TestClient) -> None:
    """A flag made for the assistant's action `a-1` is listed for `a-1` and not for
    another action of the same row and task; an action id past 256 characters is a 400."""
    token = api.post(
        "/api/actions/flag/confirmations",
        json={"ref": NORTH_MARCH, "taskId": "task-1"},
        headers=ANA,
    ).json()["token"]
    body = {"ref": NORTH_MARCH, "taskId": "task-1", "confirmationToken": token, "actionId": "a-1"}
    made = api.post("/api/actions/flag", json=body, headers=ANA)
    assert (made.status_code, made.json()["flag"]["actionId"]) == (201, "a-1")
    query = f"/api/actions/flags?ref={NORTH_MARCH}&taskId=task-1&actionId="
    assert [f["id"] for f in api.get(query + "a-1", headers=ANA).json()["flags"]] == [1]
    assert api.get(query + "a-2", headers=ANA).json() == {"flags": []}
    assert api.get(query + "x" * 257, headers=ANA).status_code == 400


def test_a_token_for_another_task_is_refused(api: TestClient) -> None:
    """A token confirmed in task-1 cannot flag in task-2 (409 wrong-task) and is then spent."""
    token = confirm(api, "task-1")
    assert flag(api, token, task_id="task-2") == (
        409,
        {"error": "confirmation-refused", "reason": "wrong-task"},
    )
    assert flag(api, token)[1]["reason"] == "used"


def test_an_expired_token_is_gone(api: TestClient, clock: FakeClock) -> None:
    """After two minutes the token is refused with 410 expired."""
    token = confirm(api)
    clock.advance(120_000)
    assert flag(api, token) == (410, {"error": "confirmation-refused", "reason": "expired"})


def test_a_token_expires_on_time_when_the_system_clock_is_set_back(
    config: ServerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own clocks: two minutes after its confirmation the token is expired,
    although the system clock was set back an hour meanwhile (an NTP step, a resumed
    virtual machine); the flag is not written."""
    clocks = {"time": 1_700_000_000.0, "monotonic": 5_000.0}
    monkeypatch.setattr(
        app_module,
        "time",
        SimpleNamespace(time=lambda: clocks["time"], monotonic=lambda: clocks["monotonic"]),
    )
    with page_client(config, create_page_app(config), client=LOOPBACK) as api:
        token = confirm(api)
        clocks["time"] += -3600 + 121
        clocks["monotonic"] += 121
        assert flag(api, token) == (410, {"error": "confirmation-refused", "reason": "expired"})
        assert admin(api, "GET", "/admin/flags", None)["flags"] == []


def test_unknown_tokens_are_refused(api: TestClient) -> None:
    """A token the server never issued is a 409 unknown."""
    assert flag(api, "forged")[1]["reason"] == "unknown"


def test_flagging_needs_the_permission_and_read_access(api: TestClient) -> None:
    """ben (no flag permission) gets no token; ana without read access neither."""
    response = api.post(
        "/api/actions/flag/confirmations", json={"ref": NORTH_MARCH, "taskId": "t"}, headers=BEN
    )
    assert (response.status_code, response.json()["reason"]) == (403, "no-permission")
    token = confirm(api)
    assert flag(api, token, headers=BEN)[0] == 403
    admin(api, "DELETE", "/admin/grants", {"user": "ana", "region": "North"})
    assert flag(api, token)[1]["reason"] == "not-authorized"
    response = api.post(
        "/api/actions/flag/confirmations", json={"ref": NORTH_MARCH, "taskId": "t"}, headers=ANA
    )
    assert (response.status_code, response.json()["reason"]) == (403, "not-authorized")
    unauthenticated = api.post(
        "/api/actions/flag/confirmations", json={"ref": NORTH_MARCH, "taskId": "t"}
    )
    assert unauthenticated.status_code == 401


def test_flag_bodies_are_validated(api: TestClient) -> None:
    """Missing token, bad task id or extra fields are a 400."""
    for body in (
        {"ref": NORTH_MARCH, "taskId": "t"},
        {"ref": NORTH_MARCH, "taskId": "t t", "confirmationToken": "x"},
        {"ref": NORTH_MARCH, "taskId": "t", "confirmationToken": "x", "apply": True},
    ):
        response = api.post("/api/actions/flag", json=body, headers=ANA)
        assert (response.status_code, response.json()["reason"]) == (400, "invalid-body")


@pytest.mark.parametrize("path", ["/api/actions/flag", "/api/actions/flag/confirmations"])
def test_a_flag_request_without_a_user_is_refused_before_its_body_is_read(
    api: TestClient, path: str
) -> None:
    """Any web page can make a browser post to the action API: a body sent without a
    token (here one that is not even JSON) is answered 401, not parsed first (and not
    read: tests/test_bodies.py)."""
    response = api.post(path, content=b'["\\ud800' + b'\\"' * 1000, headers={})
    assert (response.status_code, response.json()["reason"]) == (401, "missing-token")


def test_a_user_reads_only_their_own_flags_of_a_task(api: TestClient) -> None:
    """GET /api/actions/flags: what an assistant asks when its request got no answer."""
    token = confirm(api, task_id="task-9")
    flagged = api.post(
        "/api/actions/flag",
        json={"ref": NORTH_MARCH, "taskId": "task-9", "confirmationToken": token},
        headers=ANA,
    )
    assert flagged.status_code == 201
    query = f"/api/actions/flags?ref={NORTH_MARCH}&taskId="
    [flag] = api.get(query + "task-9", headers=ANA).json()["flags"]
    assert (flag["ref"], flag["user"], flag["taskId"]) == (NORTH_MARCH, "ana", "task-9")
    assert api.get(query + "task-8", headers=ANA).json() == {"flags": []}
    assert api.get(query + "task-9", headers=BEN).json() == {"flags": []}
    missing = api.get(f"/api/actions/flags?ref={NORTH_MARCH}", headers=ANA)
    assert (missing.status_code, missing.json()["reason"]) == (400, "invalid-query")
    assert api.get(query + "task-9").status_code == 401
    west = api.get("/api/actions/flags?ref=sales-2026-03-west&taskId=task-9", headers=BEN)
    assert (west.status_code, west.json()["reason"]) == (403, "not-authorized")


def test_a_database_made_before_flags_named_their_action_gets_the_column(tmp_path: Path) -> None:
    """The access tables of an older database keep their flags and gain `action_id`."""
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as connection:
        connection.execute(
            "CREATE TABLE flags (id INTEGER PRIMARY KEY AUTOINCREMENT, ref TEXT NOT NULL,"
            " user TEXT NOT NULL, task_id TEXT NOT NULL, note TEXT, flagged_at TEXT NOT NULL)"
        )
        connection.execute(
            "INSERT INTO flags (ref, user, task_id, note, flagged_at) VALUES (?, ?, ?, ?, ?)",
            (NORTH_MARCH, "ana", "task-1", None, START_ISO),
        )
    connection.close()
    access.create_access_tables(db)
    access.record_flag(db, NORTH_MARCH, "ana", "task-1", None, START_ISO, "a-1")
    assert [flag["actionId"] for flag in access.list_flags(db)] == [None, "a-1"]


def test_a_read_token_reads_as_its_user_and_can_do_nothing_else(api: TestClient) -> None:
    """The user's read token (what the assistant hands its agent) reads the rows the user
    may read, and nothing the user may not; it gets no confirmation token, cannot flag
    with one the user got, and cannot list the user's flags: 403 read-only-token, and no
    flag is recorded."""
    reader = {"Authorization": f"Bearer {access.DEMO_READ_TOKENS['ana']}"}
    read = api.get(f"/api/resources/{NORTH_MARCH}", headers=reader)
    assert (read.status_code, read.json()["row"]["ref"]) == (200, NORTH_MARCH)
    assert api.get(f"/api/resources/{NORTH_MARCH}/context", headers=reader).status_code == 200
    admin(api, "DELETE", "/admin/grants", {"user": "ana", "region": "North"})
    refused = api.get(f"/api/resources/{NORTH_MARCH}", headers=reader)
    assert (refused.status_code, refused.json()["reason"]) == (403, "not-authorized")
    admin(api, "POST", "/admin/grants", {"user": "ana", "region": "North"})
    asked = api.post(
        "/api/actions/flag/confirmations", json={"ref": NORTH_MARCH, "taskId": "t"}, headers=reader
    )
    assert (asked.status_code, asked.json()["reason"]) == (403, "read-only-token")
    token = confirm(api, "t")
    assert flag(api, token, task_id="t", headers=reader) == (
        403,
        {
            "error": "forbidden",
            "reason": "read-only-token",
            "detail": "this token reads as the user, nothing more",
        },
    )
    listed = api.get(f"/api/actions/flags?ref={NORTH_MARCH}&taskId=t", headers=reader)
    assert listed.status_code == 403
    assert api.get(f"/api/actions/flags?ref={NORTH_MARCH}&taskId=t", headers=ANA).json() == {
        "flags": []
    }
