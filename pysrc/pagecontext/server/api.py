"""The page origin's live-data APIs: resources, the business action, and the admin API.

This module owns the HTTP side of authorization (docs/agent.md has the full table):

- `GET /api/resources/{ref}` and `GET /api/resources/{ref}/context`: live rows, only
  for a user whose bearer token (the user's own, or the user's read token) is valid and
  who is granted the row, checked on every read and never cached (`Cache-Control:
  no-store`);
- `POST /api/actions/flag/confirmations` and `POST /api/actions/flag`: the business
  action, which needs the user's own token (a read token, the agent's, is refused:
  403 `read-only-token`), the user's `flag` permission, read access to the row and a
  single-use confirmation token bound to the task (`pagecontext.confirmations`);
- `/admin/...`: grant, revoke and change a value, for demos and tests. Refused (403)
  unless the client address is loopback and the request carries no `Origin` header,
  so no web page, not even one served from this origin, can reach it.

The resource and action APIs answer CORS for exactly the assistant origin (the
assistant's worker calls them), never `*`. Errors are JSON `{error, reason, detail?}`:
those of the endpoints, a path or method the APIs do not serve (404 `unknown-path`, 405
`method-not-allowed`), a body that does not arrive in time (408), and a database lock
that outlasts its busy timeout (503 `database-busy`).
"""

from __future__ import annotations

import http
import ipaddress
import logging
import re
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Final, Self, TypeVar

from pydantic import ConfigDict, Field, ValidationError, model_validator
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pagecontext.agui import TASK_ID_PATTERN
from pagecontext.confirmations import (
    ConfirmationBinding,
    ConfirmationRefused,
    ConfirmationRegistry,
)
from pagecontext.integration import authorization_parts
from pagecontext.models import WireModel, first_problem
from pagecontext.server import access
from pagecontext.server.bodies import (
    BODY_SECONDS,
    BodyTimeoutError,
    BodyTooLargeError,
    read_body,
    read_json,
)
from pagecontext.server.data import SalesRow, is_busy, query_sales, shown

__all__ = ["NO_STORE", "SALES_UNITS", "api_routes", "iso_utc", "sales_answer"]

NO_STORE: Final = "no-store"
SALES_UNITS: Final = {"unitsSold": "units", "revenueEur": "EUR"}
FLAG_ACTION: Final = "flag"


def iso_utc(epoch_ms: float) -> str:
    """Return `epoch_ms` as ISO 8601 UTC with milliseconds, e.g. 2026-05-01T09:30:00.000Z."""
    moment = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# The largest body an action or admin request takes (theirs are a few hundred bytes).
MAX_BODY_BYTES: Final = 16 * 1024


def _error(
    status: int,
    error: str,
    reason: str,
    detail: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, str] = {"error": error, "reason": reason}
    if detail is not None:
        body["detail"] = detail
    sent = {**(headers or {}), "Cache-Control": NO_STORE}
    if status == 401:
        sent["WWW-Authenticate"] = "Bearer"
    return JSONResponse(body, status_code=status, headers=sent)


_log = logging.getLogger(__name__)


class _JsonErrors:
    """The APIs' answers to what no endpoint answers, JSON like their other errors: a
    path or method they do not serve (Starlette's routing raises HTTPException), and a
    database that failed (`database_error`). Inside each mount,
    so that the CORS headers of the mount are on these answers too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except HTTPException as error:
            name = http.HTTPStatus(error.status_code).phrase.lower().replace(" ", "-")
            kind, reason = {
                404: ("not-found", "unknown-path"),
                405: ("method-not-allowed", "method-not-allowed"),
            }.get(error.status_code, (name, name))
            response = _error(error.status_code, kind, reason, headers=error.headers)
            await response(scope, receive, send)
        except (sqlite3.Error, FileNotFoundError) as error:
            await database_error(error)(scope, receive, send)


# The filters `GET /api/sales` takes, by query parameter, and the keyword of
# `query_sales` each one is.
SALES_FILTERS: Final = {"region": "region", "from": "month_from", "to": "month_to"}


def sales_answer(db_path: Path, query: list[tuple[str, str]]) -> JSONResponse:
    """`GET /api/sales`: the demo's rows under the filters of `query` (its parameters
    in order; an empty value means no filter), with their units. A parameter it does
    not take, one given twice, or a value `query_sales` refuses is 400 `bad-request`
    (`unknown-parameter`, `repeated-parameter`, `bad-filter`), saying which."""
    given: dict[str, str] = {}
    for name, value in query:
        if name not in SALES_FILTERS:
            return _error(
                400,
                "bad-request",
                "unknown-parameter",
                f"{shown(name)} is not a filter: the filters are {', '.join(SALES_FILTERS)}",
            )
        if name in given:
            return _error(400, "bad-request", "repeated-parameter", f"{name} is given twice")
        given[name] = value
    filters = {SALES_FILTERS[name]: value or None for name, value in given.items()}
    try:
        rows = query_sales(db_path, **filters)
    except ValueError as error:
        return _error(400, "bad-request", "bad-filter", str(error))
    except (sqlite3.Error, FileNotFoundError) as error:
        return database_error(error)
    return JSONResponse({"rows": rows, "units": SALES_UNITS}, headers={"Cache-Control": NO_STORE})


def database_error(error: sqlite3.Error | FileNotFoundError) -> JSONResponse:
    """The answer to a request the database failed: a lock that outlasts its busy
    timeout is 503 `database-busy` (try again); any other failure (the file removed
    under the running server, or no longer the demo's) is 503 `database-unavailable`,
    said once in the server's log, with no traceback."""
    if isinstance(error, sqlite3.OperationalError) and is_busy(error):
        return _error(
            503,
            "unavailable",
            "database-busy",
            "the database is busy: try again",
            headers={"Retry-After": "1"},
        )
    _log.error("pagecontext: the database cannot be read: %s", error)
    return _error(503, "unavailable", "database-unavailable", "the server cannot read its database")


def _ok(body: object, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers={"Cache-Control": NO_STORE})


class _Body(WireModel):
    # The wire models' strict camelCase rules; a body is spelled one way only.
    model_config = ConfigDict(validate_by_name=False)


_Ref = Annotated[str, Field(min_length=1, max_length=256)]
_TaskId = Annotated[str, Field(pattern=TASK_ID_PATTERN)]
_MAX_ACTION_ID: Final = 256
_ActionId = Annotated[str, Field(min_length=1, max_length=_MAX_ACTION_ID)]


class GrantBody(_Body):
    """`{user, ref}` or `{user, region}`: exactly one target."""

    user: Annotated[str, Field(min_length=1, max_length=64)]
    ref: _Ref | None = None
    region: Annotated[str, Field(min_length=1, max_length=64)] | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        if (self.ref is None) == (self.region is None):
            raise ValueError("give exactly one of ref and region")
        return self


class SalesUpdateBody(_Body):
    """`{unitsSold?, revenueEur?}`: at least one, neither negative."""

    units_sold: Annotated[int, Field(ge=0, le=10**9)] | None = None
    revenue_eur: Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _something(self) -> Self:
        if self.units_sold is None and self.revenue_eur is None:
            raise ValueError("give unitsSold, revenueEur or both")
        return self


class ConfirmationBody(_Body):
    """`{ref, taskId}`: what the user confirmed."""

    ref: _Ref
    task_id: _TaskId


class FlagBody(ConfirmationBody):
    """`{ref, taskId, confirmationToken, note?, actionId?}`: `actionId` names the
    assistant's action, so that it can later ask whether this very action was done."""

    confirmation_token: Annotated[str, Field(min_length=1, max_length=128)]
    note: Annotated[str, Field(max_length=500)] | None = None
    action_id: _ActionId | None = None


_M = TypeVar("_M", bound=_Body)


_C = TypeVar("_C", bound=ConfirmationBody)


def _parse(model: type[_M], body: bytes) -> _M | JSONResponse:
    try:
        value = read_json(body or b"null")
    except ValueError as error:
        return _error(400, "bad-request", "invalid-body", f"(body): not JSON: {error}")
    try:
        return model.model_validate(value)
    except ValidationError as error:
        return _error(400, "bad-request", "invalid-body", first_problem(error, "(body)"))


class _Api:
    """The endpoints, over one database, one confirmation registry and one clock."""

    def __init__(
        self, db: Path, confirmations: ConfirmationRegistry, clock: Callable[[], float]
    ) -> None:
        self.db = db
        self.confirmations = confirmations
        # The endpoints run in worker threads; the registry is plain data.
        self._confirmations_lock = threading.Lock()
        self.clock = clock

    # --- shared checks ---------------------------------------------------------------

    def user(self, request: Request, *, reading: bool = False) -> str | JSONResponse:
        """The bearer token's user, or a 401; `reading`, a read token is taken too, else
        it is a 403 (`read-only-token`)."""
        token = _bearer_token(request)
        if token is None:
            return _missing_token()
        found = access.token_user(self.db, token)
        if found is None:
            return _error(401, "unauthorized", "invalid-token")
        user, may_act = found
        if not reading and not may_act:
            return _error(
                403, "forbidden", "read-only-token", "this token reads as the user, nothing more"
            )
        return user

    def readable(self, user: str, ref: str) -> SalesRow | JSONResponse:
        """The live row `ref` if `user` may read it, else the 400/403/404."""
        if access.REF_PATTERN.fullmatch(ref) is None:
            return _error(400, "bad-request", "malformed-ref", "refs look like sales-2026-03-north")
        # Authorization before existence, so a refusal says nothing about what exists.
        if not access.is_authorized(self.db, user, ref):
            return _error(403, "forbidden", "not-authorized")
        row = access.read_row(self.db, ref)
        if row is None:
            return _error(404, "not-found", "unknown-ref")
        return row

    def reader_and_row(self, request: Request) -> tuple[str, SalesRow] | JSONResponse:
        """The bearer user and the row of the path's `{ref}`, or the 401/400/403/404."""
        user = self.user(request, reading=True)
        if isinstance(user, Response):
            return user
        row = self.readable(user, request.path_params["ref"])
        if isinstance(row, Response):
            return row
        return user, row

    def now(self) -> str:
        return iso_utc(self.clock())

    # --- resources ---------------------------------------------------------------------

    def resource(self, request: Request) -> Response:
        found = self.reader_and_row(request)
        if isinstance(found, Response):
            return found
        return _ok({"row": found[1], "units": SALES_UNITS, "readAt": self.now()})

    def resource_context(self, request: Request) -> Response:
        found = self.reader_and_row(request)
        if isinstance(found, Response):
            return found
        user, row = found
        ref = row["ref"]
        region_rows = query_sales(self.db, region=row["region"])
        month_rows = query_sales(self.db, month_from=row["month"], month_to=row["month"])
        # Every row is checked: the context of a granted row is not a way into others.
        cited = {r["ref"] for r in (*region_rows, *month_rows)}
        visible = access.readable_refs(self.db, user, cited)
        withheld = cited - visible
        return _ok(
            {
                "ref": ref,
                "regionRows": [r for r in region_rows if r["ref"] in visible],
                "monthRows": [r for r in month_rows if r["ref"] in visible],
                "withheld": len(withheld),
                "units": SALES_UNITS,
                "readAt": self.now(),
            }
        )

    # --- the business action -----------------------------------------------------------

    def flag_request(
        self, request: Request, body: bytes, model: type[_C]
    ) -> tuple[_C, ConfirmationBinding] | JSONResponse:
        """The parsed body and what it would confirm, if the user may flag its row. The
        caller's token is checked before the body is read: a request without one costs
        no parsing."""
        user = self.user(request)
        if isinstance(user, Response):
            return user
        parsed = _parse(model, body)
        if isinstance(parsed, Response):
            return parsed
        row = self.readable(user, parsed.ref)
        if isinstance(row, Response):
            return row
        if not access.has_permission(self.db, user, FLAG_ACTION):
            return _error(403, "forbidden", "no-permission", "this user may not flag rows")
        return parsed, ConfirmationBinding(parsed.task_id, user, FLAG_ACTION, parsed.ref)

    def flag_confirmation(self, request: Request, body: bytes) -> Response:
        checked = self.flag_request(request, body, ConfirmationBody)
        if isinstance(checked, Response):
            return checked
        parsed, binding = checked
        with self._confirmations_lock:
            issued = self.confirmations.issue(binding)
        return _ok(
            {
                "token": issued.token,
                "expiresAt": iso_utc(issued.expires_at_ms),
                "action": FLAG_ACTION,
                "ref": parsed.ref,
                "taskId": parsed.task_id,
            },
            status=201,
        )

    def flag(self, request: Request, body: bytes) -> Response:
        checked = self.flag_request(request, body, FlagBody)
        if isinstance(checked, Response):
            return checked
        parsed, binding = checked
        try:
            with self._confirmations_lock:
                spent = self.confirmations.consume(parsed.confirmation_token, binding)
        except ConfirmationRefused as refused:
            status = 410 if refused.reason == "expired" else 409
            return _error(status, "confirmation-refused", refused.reason)
        try:
            record, made = access.record_flag(
                self.db,
                parsed.ref,
                binding.user,
                parsed.task_id,
                parsed.note,
                self.now(),
                parsed.action_id,
            )
        except access.ActionIdTaken:
            # The agent named two proposals alike: this one is not done, and its row's
            # confirmation holds.
            with self._confirmations_lock:
                self.confirmations.refund(spent)
            return _error(
                409, "conflict", "action-id-taken", "that actionId flagged another row or task"
            )
        except sqlite3.OperationalError as error:
            if is_busy(error):
                # Nothing was written (the lock was never had): the user's confirmation
                # holds for a retry of the 503.
                with self._confirmations_lock:
                    self.confirmations.refund(spent)
            raise
        # 200: the flag this action already had (its proposal confirmed again); no other.
        return _ok({"flag": record}, status=201 if made else 200)

    def flags(self, request: Request, _body: bytes) -> Response:
        """`GET /api/actions/flags?ref=R&taskId=T[&actionId=A]`: the user's own flags of
        row R in task T (made for the assistant's action A), so an assistant whose request
        got no answer can ask what happened."""
        user = self.user(request)
        if isinstance(user, Response):
            return user
        ref, task_id = request.query_params.get("ref", ""), request.query_params.get("taskId", "")
        action_id = request.query_params.get("actionId")
        if re.fullmatch(TASK_ID_PATTERN, task_id) is None:
            return _error(400, "bad-request", "invalid-query", "taskId: a task id is required")
        if action_id is not None and not 1 <= len(action_id) <= _MAX_ACTION_ID:
            return _error(400, "bad-request", "invalid-query", "actionId: 1 to 256 characters")
        row = self.readable(user, ref)
        if isinstance(row, Response):
            return row
        flags = access.list_flags(self.db, user=user, ref=ref, task_id=task_id, action_id=action_id)
        return _ok({"flags": flags})

    # --- admin -------------------------------------------------------------------------

    def admin_grant(self, _request: Request, body: bytes) -> Response:
        return self._grant_or_revoke(body, revoke=False)

    def admin_revoke(self, _request: Request, body: bytes) -> Response:
        return self._grant_or_revoke(body, revoke=True)

    def _grant_or_revoke(self, body: bytes, *, revoke: bool) -> Response:
        parsed = _parse(GrantBody, body)
        if isinstance(parsed, Response):
            return parsed
        kind: access.GrantKind = "ref" if parsed.ref is not None else "region"
        value = parsed.ref if parsed.ref is not None else str(parsed.region)
        try:
            if revoke:
                return _ok({"removed": access.revoke(self.db, parsed.user, kind, value)})
            return _ok({"granted": access.grant(self.db, parsed.user, kind, value)})
        except ValueError as error:
            return _error(400, "bad-request", "unknown-region", str(error))
        except LookupError as error:
            return _error(404, "not-found", "unknown-user-or-ref", str(error))

    def admin_set_sales(self, request: Request, body: bytes) -> Response:
        parsed = _parse(SalesUpdateBody, body)
        if isinstance(parsed, Response):
            return parsed
        ref = request.path_params["ref"]
        try:
            row = access.set_values(self.db, ref, parsed.units_sold, parsed.revenue_eur)
        except LookupError as error:
            return _error(404, "not-found", "unknown-ref", str(error))
        return _ok({"row": row})

    def admin_flags(self, _request: Request, _body: bytes) -> Response:
        return _ok({"flags": access.list_flags(self.db)})


def _admin_refusal(request: Request) -> JSONResponse | None:
    """A 403 unless the request comes from loopback and not from a browser, else None.

    Browsers send `Origin` on every cross-origin request and on same-origin POST and
    DELETE, and `Sec-Fetch-Site` on every request, same-origin GET included.
    """
    if "origin" in request.headers:
        return _error(403, "forbidden", "origin-header", "the admin API is not for web pages")
    if "sec-fetch-site" in request.headers:
        return _error(403, "forbidden", "browser-request", "the admin API is not for web pages")
    host = request.client.host if request.client is not None else ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        return _error(403, "forbidden", "not-loopback")
    # A request that carries a body must say it is JSON; a GET reads and carries none.
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.method not in ("GET", "HEAD") and content_type != "application/json":
        return _error(415, "unsupported-media-type", "json-only")
    return None


_BodyHandler = Callable[[Request, bytes], Response]


def _bearer_token(request: Request) -> str | None:
    """The request's bearer token, or None if it carries none."""
    scheme, token = authorization_parts(request.headers.get("authorization", ""))
    return token if scheme == "bearer" and token else None


def _missing_token() -> JSONResponse:
    return _error(401, "unauthorized", "missing-token")


def _no_token(request: Request) -> JSONResponse | None:
    """A 401 for a request that carries no bearer token; None for any other. The action
    API answers it before the body is read (any web page can make a browser post one);
    the token itself is checked by `_Api.user`."""
    return _missing_token() if _bearer_token(request) is None else None


def _with_body(
    handler: _BodyHandler,
    guard: Callable[[Request], JSONResponse | None] | None = None,
    *,
    body_seconds: float = BODY_SECONDS,
) -> Callable[[Request], Awaitable[Response]]:
    """An async endpoint that reads the body (within `body_seconds`), then runs `handler`
    in a worker thread."""

    async def endpoint(request: Request) -> Response:
        refused = guard(request) if guard is not None else None
        if refused is not None:
            return refused
        try:
            body = await read_body(request, MAX_BODY_BYTES, body_seconds)
        except BodyTooLargeError as error:
            return _error(413, "payload-too-large", "too-large", str(error))
        except BodyTimeoutError as error:
            return _error(408, "request-timeout", "body-timeout", str(error))
        return await run_in_threadpool(handler, request, body)

    return endpoint


def api_routes(
    db: Path,
    *,
    assistant_origin: str,
    confirmations: ConfirmationRegistry,
    clock: Callable[[], float],
    body_seconds: float = BODY_SECONDS,
) -> list[BaseRoute]:
    """Return the routes of the resource, action and admin APIs over the database `db`.

    `clock` gives epoch milliseconds (readAt, flaggedAt); `confirmations` issues and
    consumes the flag action's tokens; a request body must arrive within `body_seconds`.
    """
    api = _Api(db, confirmations, clock)
    cors = [
        Middleware(
            CORSMiddleware,
            allow_origins=[assistant_origin],
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
            max_age=600,
        ),
        Middleware(_JsonErrors),
    ]

    def reading(handler: _BodyHandler) -> Callable[[Request], Awaitable[Response]]:
        return _with_body(handler, body_seconds=body_seconds)

    def acting(handler: _BodyHandler) -> Callable[[Request], Awaitable[Response]]:
        return _with_body(handler, _no_token, body_seconds=body_seconds)

    def admin(handler: _BodyHandler) -> Callable[[Request], Awaitable[Response]]:
        return _with_body(handler, _admin_refusal, body_seconds=body_seconds)

    return [
        Mount(
            "/api/resources",
            routes=[
                Route("/{ref}", api.resource, methods=["GET"]),
                Route("/{ref}/context", api.resource_context, methods=["GET"]),
            ],
            middleware=cors,
        ),
        Mount(
            "/api/actions",
            routes=[
                Route("/flag", acting(api.flag), methods=["POST"]),
                Route("/flags", acting(api.flags), methods=["GET"]),
                Route("/flag/confirmations", acting(api.flag_confirmation), methods=["POST"]),
            ],
            middleware=cors,
        ),
        Mount(
            "/admin",
            routes=[
                Route("/grants", admin(api.admin_grant), methods=["POST"]),
                Route("/grants", admin(api.admin_revoke), methods=["DELETE"]),
                Route("/sales/{ref}", admin(api.admin_set_sales), methods=["POST"]),
                Route("/flags", admin(api.admin_flags), methods=["GET"]),
            ],
            middleware=[Middleware(_JsonErrors)],
        ),
    ]
