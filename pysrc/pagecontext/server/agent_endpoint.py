"""`POST /agent` on the assistant origin: the built-in agent behind AG-UI, over SSE.

This module owns the agent's I/O: it validates the `RunAgentInput` body, re-reads the
pinned row through the page origin's resource API with the user's own authorization
(`HttpResourceReader`, or any `ResourceReader` a test injects), asks
`pagecontext.agent.explain` what to say, and streams the events of
`pagecontext.agent.run` as server-sent events (`data: <event JSON>`).

A body that is not a valid `RunAgentInput` gets a stream holding only `RUN_ERROR`
(code `bad-input`); JSON text is read by `bodies.read_json`, so an escaped lone
surrogate (JavaScript's half of a character) is text like any other. A body still
incomplete after `bodies.BODY_SECONDS` gets a 408, JSON, and no stream. A valid
`RunAgentInput` whose task or authorization is missing gets
`RUN_STARTED` then `RUN_ERROR` (code `bad-input`); an unreachable resource API gives
`RUN_ERROR` (code `resource-api-unavailable`), and so does an answer it cannot read (cut
short, or JSON nested too deeply); anything else that fails after `RUN_STARTED` ends
with `RUN_ERROR` (code `internal-error`), never a dropped stream. A refused read
(401/403/404) is not an error: the agent answers that access was denied, without the
snapshot.
"""

from __future__ import annotations

import http.client
import logging
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Final, NamedTuple

import anyio
import anyio.to_thread
from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent
from pydantic import TypeAdapter, ValidationError
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from pagecontext.agent.explain import (
    NO_SELECTION,
    LiveRead,
    ReadRefused,
    SalesFigures,
    explain,
)
from pagecontext.agent.run import (
    RunInputError,
    answer_events,
    flag_proposed,
    pinned_task,
    run_error,
    run_started,
    user_authorization,
)
from pagecontext.agui import TaskContext
from pagecontext.errors import PagecontextError
from pagecontext.models import ObservedAt, first_problem, is_reason, parse_json
from pagecontext.server import access
from pagecontext.server.bodies import (
    BODY_SECONDS,
    REFUSED_BODY_HEADERS,
    BodyTimeoutError,
    BodyTooLargeError,
    read_body,
    read_json,
)
from pagecontext.server.data import MONTH_PATTERN, REGIONS

__all__ = [
    "HttpResourceReader",
    "ResourceReader",
    "ResourceUnavailable",
    "agent_endpoint",
    "live_read",
]

ResourceReader = Callable[[str, str], LiveRead | ReadRefused]
_TIMEOUT_SECONDS: Final = 10.0
# The most of a resource API answer the agent reads: a row and its context are a few KB.
MAX_RESOURCE_BYTES: Final = 1024 * 1024
_MAX_BODY_BYTES: Final = 1_000_000
_REFUSED_STATUSES: Final = (401, 403, 404)
_READ_AT: Final = TypeAdapter(ObservedAt)


class ResourceUnavailable(PagecontextError):  # noqa: N818 - reads as the condition it is
    """The resource API could not be reached or answered something unexpected."""


def live_read(row_answer: Mapping[str, object], context: Mapping[str, object]) -> LiveRead:
    """Build a `LiveRead` from the resource API's two answers; raise ValueError if malformed.

    Every string the answer repeats is checked to be what it names (a row's ref, region
    and month, `readAt` a time as `observedAt` is written): no other text from the data
    reaches the agent's words, which the next run sends back as the assistant's own."""
    row, read_at = row_answer.get("row"), row_answer.get("readAt")
    region, month = context.get("regionRows"), context.get("monthRows")
    withheld = context.get("withheld")
    if not (
        isinstance(row, dict)
        and isinstance(read_at, str)
        and isinstance(region, list)
        and isinstance(month, list)
        and isinstance(withheld, int)
    ):
        raise ValueError("unexpected resource API answer")
    try:
        _READ_AT.validate_python(read_at)
    except ValidationError:
        raise ValueError("the resource API's readAt is not a UTC time in milliseconds") from None
    return LiveRead(
        _figures(row),
        [_figures(r) for r in region],
        [_figures(r) for r in month],
        withheld,
        read_at,
    )


def _figures(row: object) -> SalesFigures:
    """`row` as `SalesFigures`, if its ref, region and month are a sales row's."""
    figures = SalesFigures.from_json(row)
    if not (
        access.REF_PATTERN.fullmatch(figures.ref)
        and figures.region in REGIONS
        and MONTH_PATTERN.fullmatch(figures.month)
    ):
        raise ValueError("the resource API's row has a ref, region or month of no sales row")
    return figures


# A refusal's reason, as the resource API gives it, if it is a word (`models.Reason`).
def _refusal(status: int, body: Mapping[str, object]) -> ReadRefused:
    reason = body.get("reason")
    return ReadRefused(status, reason if is_reason(reason) else "refused")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not followed: the request carries the user's credential,
    which urllib would send on to wherever the redirect points."""

    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None


class HttpResourceReader:
    """Reads a row and its context from the page origin's resource API, as the user."""

    def __init__(self, page_origin: str, timeout: float = _TIMEOUT_SECONDS) -> None:
        self._base = page_origin.rstrip("/") + "/api/resources/"
        self._timeout = timeout
        # Straight to the page origin: never through a proxy the environment names
        # (`http_proxy`, read when an opener is built), which would get the user's
        # credential, and never on to a redirect's target.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def _get(self, path: str, authorization: str) -> tuple[int, dict[str, object]]:
        request = urllib.request.Request(
            self._base + path,
            headers={"Authorization": authorization, "Accept": "application/json"},
        )
        try:
            try:
                with self._opener.open(request, timeout=self._timeout) as response:
                    status, raw = response.status, response.read(MAX_RESOURCE_BYTES + 1)
            except urllib.error.HTTPError as error:
                status, raw = error.code, error.read(MAX_RESOURCE_BYTES + 1)
        # HTTPException: an answer that broke off or broke HTTP (a body cut short is an
        # IncompleteRead), which is no OSError.
        except (OSError, http.client.HTTPException) as error:
            raise ResourceUnavailable(f"the resource API did not answer: {error}") from None
        if len(raw) > MAX_RESOURCE_BYTES:
            raise ResourceUnavailable(
                f"the resource API's answer is over {MAX_RESOURCE_BYTES} bytes"
            )
        try:
            body = parse_json(raw)
        except ValueError:  # not JSON, or nested too deeply to read
            body = None
        return status, body if isinstance(body, dict) else {}

    def __call__(self, ref: str, authorization: str) -> LiveRead | ReadRefused:
        """Return the live row and its context, or the refusal; raise ResourceUnavailable."""
        if not access.REF_PATTERN.fullmatch(ref):
            # Not a row of this data: nothing to ask the resource API (a `/` in it would
            # even reach another path).
            return ReadRefused(400, "malformed-ref", read=False)
        quoted = urllib.parse.quote(ref, safe="")
        status, row = self._get(quoted, authorization)
        if status in _REFUSED_STATUSES:
            return _refusal(status, row)
        if status != 200:
            raise ResourceUnavailable(f"the resource API answered HTTP {status}")
        status, context = self._get(quoted + "/context", authorization)
        if status in _REFUSED_STATUSES:
            # Revoked between the two reads: the newer answer wins.
            return _refusal(status, context)
        if status != 200:
            raise ResourceUnavailable(f"the resource API answered HTTP {status}")
        try:
            return live_read(row, context)
        except ValueError as error:
            raise ResourceUnavailable(str(error)) from None


_LOG = logging.getLogger(__name__)

# Runs reading rows at once, each in a thread while it waits for the resource API, under
# a limit of their own: the endpoints of both origins share one event loop and its 40
# threads, and the page origin's, which answer those reads, must never wait for them.
AGENT_READS: Final = 8
# Run inputs are read (parsed and checked) in threads, a large one alone: 1 MB of nested
# arrays is some 40 MB of lists and up to 2.3 s of reading. One of at most SMALL_RUN_BYTES
# (a conversation's first dozens of questions: the first is ~4 KB) is read in a lane of
# its own, SMALL_RUN_READS at a time, so that it never waits behind a large one.
SMALL_RUN_BYTES: Final = 64 * 1024
SMALL_RUN_READS: Final = 4


def _new_id() -> str:
    return uuid.uuid4().hex


class _Run(NamedTuple):
    """What a run uses of its input."""

    ids: RunAgentInput  # its ids: a RunAgentInput holding nothing else
    task: TaskContext | None
    authorization: str  # to read the task's row with
    proposed: bool  # the conversation proposed a flag of that row already
    failure: Exception | None  # answered after RUN_STARTED, as any failure of the run


def _take_run(body: bytes) -> RunErrorEvent | _Run:
    """What the run of the request `body` uses of it (`_Run`), or the RUN_ERROR of a body
    that is no RunAgentInput. The rest (any JSON in `state`, `forwardedProps`, a tool's
    `parameters`, a key AG-UI does not name: 1 MB of nested arrays is some 40 MB of
    lists) is not kept while the run waits for its read."""
    try:
        value = read_json(body)
    except ValueError as error:
        return run_error(f"not a RunAgentInput: (body): not JSON: {error}", "bad-input")
    try:
        run_input = RunAgentInput.model_validate(value)
    except ValidationError as error:
        problem = first_problem(error, "(body)")
        return run_error(f"not a RunAgentInput: {problem}", "bad-input")
    ids = RunAgentInput.model_construct(thread_id=run_input.thread_id, run_id=run_input.run_id)
    try:
        task = pinned_task(run_input)
        if task is None:
            return _Run(ids, None, "", False, None)
        authorization = user_authorization(run_input)
        proposed = flag_proposed(run_input, task.resource_ref)
        return _Run(ids, task, authorization, proposed, None)
    except Exception as error:
        return _Run(ids, None, "", False, error)


def agent_endpoint(
    reader: ResourceReader,
    new_id: Callable[[], str] = _new_id,
    *,
    origin: str | None = None,
    body_seconds: float = BODY_SECONDS,
) -> Callable[[Request], object]:
    """Return the `POST /agent` endpoint, reading rows with `reader`.

    With `origin` (the assistant's), a request from a browser page of any other origin
    (its `Origin` header, `null` included) is refused, 403, unread: another site cannot
    make its visitors' browsers spend the agent's reads. A request without `Origin` is
    not a page's. A body that has not arrived within `body_seconds` gets a 408 (JSON).
    """

    # Made in the event loop, on the first run: the reads, and the run inputs read (the
    # large ones' lane, then the small ones').
    reads: list[anyio.CapacityLimiter] = []
    takes: list[anyio.CapacityLimiter] = []

    async def read(ref: str, authorization: str) -> LiveRead | ReadRefused:
        return await anyio.to_thread.run_sync(reader, ref, authorization, limiter=reads[0])

    async def endpoint(request: Request) -> Response:
        sender = request.headers.get("origin")
        if origin is not None and sender is not None and sender != origin:
            return JSONResponse({"error": "forbidden", "reason": "foreign-origin"}, status_code=403)
        try:
            body: bytes | None = await read_body(request, _MAX_BODY_BYTES, body_seconds)
        except BodyTooLargeError:
            body = None
        except BodyTimeoutError as error:
            return JSONResponse(
                {"error": "request-timeout", "reason": "body-timeout", "detail": str(error)},
                status_code=408,
            )

        async def events() -> AsyncIterator[BaseEvent]:
            nonlocal body
            if body is None:
                yield run_error("the run input is larger than 1 MB", "bad-input")
                return
            if not reads:
                reads.append(anyio.CapacityLimiter(AGENT_READS))
                takes.extend((anyio.CapacityLimiter(1), anyio.CapacityLimiter(SMALL_RUN_READS)))
            # The body too is not kept past its reading (up to 1 MB for each run).
            text, body = body, None
            lane = takes[1] if len(text) <= SMALL_RUN_BYTES else takes[0]
            # Not on the event loop both origins share: 1 MB of JSON can take seconds.
            taken = await anyio.to_thread.run_sync(_take_run, text, limiter=lane)
            del text
            if isinstance(taken, RunErrorEvent):
                yield taken
                return
            ids, task, authorization, proposed, failure = taken
            yield run_started(ids)
            try:
                if failure is not None:
                    raise failure
                if task is None:
                    answer = NO_SELECTION
                else:
                    outcome = await read(task.resource_ref, authorization)
                    answer = explain(task, outcome, flag_proposed=proposed)
                answered = answer_events(ids, answer, new_id)
            except RunInputError as error:
                yield run_error(str(error), "bad-input")
                return
            except ResourceUnavailable as error:
                yield run_error(str(error), "resource-api-unavailable")
                return
            except Exception:
                # A run that started ends with RUN_ERROR, never a dropped stream.
                # The run's id is the caller's: written quoted and cut, never as given.
                _LOG.exception("the agent could not answer run %.80r", ids.run_id)
                yield run_error("the agent could not answer: an internal error", "internal-error")
                return
            for event in answered:
                yield event

        async def encoded() -> AsyncIterator[dict[str, str]]:
            async for event in events():
                yield {"data": event.model_dump_json(by_alias=True)}

        response = EventSourceResponse(encoded(), sep="\n", headers={"Cache-Control": "no-store"})
        if body is None:
            # After the headers EventSourceResponse sets (it says keep-alive).
            response.headers.update(REFUSED_BODY_HEADERS)
        return response

    return endpoint
