"""Request bodies are read up to their limit and no further (pagecontext.server.bodies),
checked at the ASGI level, where the count of `receive` calls shows how much was read."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from dataclasses import replace

import pytest
from starlette.requests import Request
from starlette.types import ASGIApp, Message

from pagecontext.server import access
from pagecontext.server.app import ServerConfig, create_assistant_app, create_page_app
from pagecontext.server.bodies import BodyTimeoutError, BodyTooLargeError, read_body
from pagecontext.server.run import free_port, start_in_thread

CHUNK = 4096
# The action API reads the body of a request with a bearer token only.
A_TOKEN: dict[str, str | None] = {"authorization": f"Bearer {access.DEMO_TOKENS['ana']}"}


class CountingBody:
    """An ASGI `receive` that hands out `chunks` one `http.request` message at a time and
    counts how many were taken; `cut`, the last one says more is coming, and the client
    hangs up instead."""

    def __init__(self, chunks: int, size: int = CHUNK, *, cut: bool = False) -> None:
        self._left = chunks
        self._size = size
        self._cut = cut
        self.taken = 0

    async def __call__(self) -> Message:
        if self._left == 0:
            return {"type": "http.disconnect"}
        self._left -= 1
        self.taken += 1
        more = self._left > 0 or self._cut
        return {"type": "http.request", "body": b"x" * self._size, "more_body": more}


def scope(
    host: str,
    path: str,
    length: int | None,
    content_type: str = "text/plain",
    authorization: str | None = None,
) -> dict[str, object]:
    headers = [(b"host", host.encode()), (b"content-type", content_type.encode())]
    if authorization is not None:
        headers.append((b"authorization", authorization.encode()))
    # A body of no announced length comes chunked, as HTTP/1.1 sends it.
    if length is None:
        headers.append((b"transfer-encoding", b"chunked"))
    else:
        headers.append((b"content-length", str(length).encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }


def post(
    app: ASGIApp,
    host: str,
    path: str,
    body: CountingBody,
    length: int | None,
    content_type: str = "text/plain",
    authorization: str | None = None,
) -> tuple[int, int, str | None]:
    """POST `body` to `app`; return the response's status, how many chunks of the body
    had been taken when the response started (a streaming response may drain the rest
    afterwards, unheld, as it listens for the client's disconnect) and its `Connection`
    header."""
    started: list[tuple[int, int, str | None]] = []

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = {bytes(k).decode(): bytes(v).decode() for k, v in message["headers"]}
            started.append((int(message["status"]), body.taken, headers.get("connection")))

    request = scope(host, path, length, content_type, authorization)
    asyncio.run(app(request, body, send))  # type: ignore[arg-type]
    [answer] = started
    return answer


@pytest.mark.parametrize("announced", [True, False])
def test_read_body_stops_at_its_limit(announced: bool) -> None:
    """Announced past the limit: nothing is read. Streamed: reading stops at the first
    chunk past it."""
    body = CountingBody(chunks=64)
    request = Request(scope("x", "/", 64 * CHUNK if announced else None), body)  # type: ignore[arg-type]
    with pytest.raises(BodyTooLargeError):
        asyncio.run(read_body(request, 4 * CHUNK))
    assert body.taken == (0 if announced else 5)


def test_read_body_returns_a_body_within_its_limit() -> None:
    """A body within its limit is read whole."""
    body = CountingBody(chunks=3)
    request = Request(scope("x", "/", None), body)  # type: ignore[arg-type]
    assert asyncio.run(read_body(request, 4 * CHUNK)) == b"x" * (3 * CHUNK)


@pytest.mark.parametrize("announced", [True, False])
def test_the_action_api_reads_no_more_than_its_limit(
    demo_config: ServerConfig, announced: bool
) -> None:
    """A text/plain POST of 256 KiB to the action API, with a token: 413 having read at
    most 16 KiB and one chunk."""
    config = demo_config
    body = CountingBody(chunks=64)
    host = f"{config.page_host}:{config.page_port}"
    length = 64 * CHUNK if announced else None
    app = create_page_app(config)
    status, taken, connection = post(app, host, "/api/actions/flag", body, length, **A_TOKEN)
    assert (status, taken, connection) == (413, 0 if announced else 5, "close")
    assert body.taken == taken


@pytest.mark.parametrize("path", ["/api/actions/flag", "/api/actions/flag/confirmations"])
@pytest.mark.parametrize("announced", [True, False])
def test_the_action_api_reads_no_body_sent_without_a_token(
    demo_config: ServerConfig, path: str, announced: bool
) -> None:
    """Any web page can make a browser post to the action API: a body sent without a
    bearer token is answered 401 with not one chunk of it read, closing the connection."""
    config = demo_config
    body = CountingBody(chunks=4)
    host = f"{config.page_host}:{config.page_port}"
    length = 4 * CHUNK if announced else None
    status, taken, connection = post(create_page_app(config), host, path, body, length)
    assert (status, taken, connection) == (401, 0, "close")


@pytest.mark.parametrize("announced", [True, False])
def test_the_agent_answers_having_read_no_more_than_1_mb(
    demo_config: ServerConfig, announced: bool
) -> None:
    """A run input of 4 MiB: the agent starts its answer (the RUN_ERROR of
    tests/test_agent.py) having read at most 1 MB and one chunk."""
    config = demo_config
    body = CountingBody(chunks=64, size=65536)
    host = f"{config.assistant_host}:{config.assistant_port}"
    status, taken, connection = post(
        create_assistant_app(config), host, "/agent", body, 64 * 65536 if announced else None
    )
    assert (status, connection) == (200, "close")
    assert taken == (0 if announced else 1_000_000 // 65536 + 1)


@pytest.mark.parametrize(("origin", "path"), [("page", "/admin/grants"), ("assistant", "/agent")])
def test_a_client_that_hangs_up_before_its_body_arrives_ends_its_request_quietly(
    demo_config: ServerConfig, origin: str, path: str
) -> None:
    """100 bytes announced, one sent, then the client hangs up: the request ends with
    nothing raised to the server (which would log it as an error, with a traceback, for
    every such client), and an answer nobody receives (uvicorn drops it)."""
    config = demo_config
    if origin == "page":
        app, host = create_page_app(config), f"{config.page_host}:{config.page_port}"
    else:
        app = create_assistant_app(config)
        host = f"{config.assistant_host}:{config.assistant_port}"
    body = CountingBody(chunks=1, size=1, cut=True)
    assert post(app, host, path, body, 100, "application/json") == (400, 1, "close")


def test_a_body_within_the_limit_keeps_the_connection(demo_config: ServerConfig) -> None:
    """A body within the limit is answered with the connection kept open."""
    config = demo_config
    host = f"{config.assistant_host}:{config.assistant_port}"
    status, _taken, connection = post(
        create_assistant_app(config), host, "/agent", CountingBody(chunks=1, size=10), None
    )
    assert (status, connection) == (200, "keep-alive")


@pytest.mark.parametrize(
    ("origin", "path", "extra", "status"),
    [
        ("page", "/api/actions/flag", f"Authorization: {A_TOKEN['authorization']}\r\n", 413),
        # No token: refused before the body is read.
        ("page", "/api/actions/flag", "", 401),
        ("assistant", "/agent", "", 200),
        # The admin API's guard: a browser's request carries Origin.
        ("page", "/admin/grants", "Origin: https://evil.example\r\n", 403),
        ("page", "/nowhere", "", 404),
        ("page", "/api/sales", "", 405),
        # Another host name for this address (DNS rebinding).
        ("page", "/api/actions/flag", "Host: rebind.example.test\r\n", 400),
    ],
)
def test_the_server_closes_the_connection_instead_of_reading_a_refused_body_on(
    demo_config: ServerConfig, origin: str, path: str, extra: str, status: int
) -> None:
    """Through uvicorn: a chunked body that goes on past a limit, or that a refusal
    leaves unread, ends the connection though the client has not finished sending (the
    answer may be lost to the reset that closing with unread bytes makes; tests above
    check its header). Kept open, the server would read all that is sent, and the read
    below would time out waiting for the rest of the body."""
    config = replace(demo_config, page_port=free_port(), assistant_port=free_port())
    port = config.page_port if origin == "page" else config.assistant_port
    host = config.page_host if origin == "page" else config.assistant_host
    head = extra if extra.startswith("Host:") else f"Host: {host}:{port}\r\n{extra}"
    chunk = b"x" * 65536
    with start_in_thread(config), socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            f"POST {path} HTTP/1.1\r\n{head}"
            "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        answer = b""
        # The connection ends while sending (reset, broken pipe) or while reading.
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            for _ in range(2_000_000 // len(chunk)):
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            while received := s.recv(65536):
                answer += received
    expected = f"HTTP/1.1 {status}".encode()
    assert answer[: len(expected)] == expected[: len(answer)]


def test_an_answer_of_400_or_more_to_a_request_with_a_body_closes_the_connection(
    demo_config: ServerConfig,
) -> None:
    """At the ASGI level: a missing route's 404 to a POST with a body says close; the
    same 404 to a request without one keeps the connection."""
    config = demo_config
    host = f"{config.page_host}:{config.page_port}"
    app = create_page_app(config)
    assert post(app, host, "/nowhere", CountingBody(chunks=1), CHUNK)[::2] == (404, "close")
    assert post(app, host, "/nowhere", CountingBody(chunks=0), 0)[::2] == (404, None)


class StalledBody:
    """An ASGI `receive` that hands out the first 5 bytes of a body announced longer,
    then waits for the rest, which never comes: an event nobody sets."""

    def __init__(self) -> None:
        self.taken = 0

    async def __call__(self) -> Message:
        self.taken += 1
        if self.taken == 1:
            return {"type": "http.request", "body": b'{"a":', "more_body": True}
        await asyncio.Event().wait()
        raise AssertionError("unreachable: the event is never set")


def answer(
    app: ASGIApp, host: str, path: str, receive: StalledBody, authorization: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    """POST to `app` with `receive`; return the answer's status, headers and body. The
    answer must come within 10 s (a bound for a hung test, not a wait)."""
    status: list[int] = []
    headers: dict[str, str] = {}
    body: list[bytes] = []

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(int(message["status"]))
            headers.update((bytes(k).decode(), bytes(v).decode()) for k, v in message["headers"])
        elif message["type"] == "http.response.body":
            body.append(bytes(message.get("body", b"")))

    async def run() -> None:
        request = scope(host, path, 1000, authorization=authorization)
        await asyncio.wait_for(app(request, receive, send), 10)  # type: ignore[arg-type]

    asyncio.run(run())
    return status[0], headers, b"".join(body)


def test_read_body_gives_up_on_a_body_that_does_not_arrive_in_time() -> None:
    """(Within 10 s: a bound for a hung test, not a wait.)"""
    request = Request(scope("x", "/", 1000), StalledBody())  # type: ignore[arg-type]

    async def read() -> bytes:
        return await asyncio.wait_for(read_body(request, 4 * CHUNK, 0.01), 10)

    with pytest.raises(BodyTimeoutError, match=r"did not arrive within 0\.01 seconds"):
        asyncio.run(read())


@pytest.mark.parametrize(
    ("origin", "path"), [("page", "/api/actions/flag"), ("assistant", "/agent")]
)
def test_a_body_that_never_finishes_is_answered_408_and_the_connection_closed(
    demo_config: ServerConfig, origin: str, path: str
) -> None:
    """Content-Length 1000 and 5 bytes sent, then nothing: after `body_seconds` the
    endpoint answers 408, JSON, closing the connection, instead of holding it and its
    task forever."""
    config = replace(demo_config, body_seconds=0.01)
    if origin == "page":
        app, host = create_page_app(config), f"{config.page_host}:{config.page_port}"
    else:
        app, host = create_assistant_app(config), f"{config.assistant_host}:{config.assistant_port}"
    status, headers, body = answer(app, host, path, StalledBody(), **A_TOKEN)
    assert (status, headers["content-type"], headers["connection"]) == (
        408,
        "application/json",
        "close",
    )
    assert json.loads(body) == {
        "error": "request-timeout",
        "reason": "body-timeout",
        "detail": "the request body did not arrive within 0.01 seconds",
    }
