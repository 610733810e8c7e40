"""Request bodies are read up to their limit and no further (pagecontext.server.bodies),
checked at the ASGI level, where the count of `receive` calls shows how much was read."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request
from starlette.types import ASGIApp, Message

from pagecontext.server.app import ServerConfig, create_assistant_app, create_page_app
from pagecontext.server.bodies import BodyTooLargeError, read_body

CHUNK = 4096


class CountingBody:
    """An ASGI `receive` that hands out `chunks` one `http.request` message at a time and
    counts how many were taken."""

    def __init__(self, chunks: int, size: int = CHUNK) -> None:
        self._left = chunks
        self._size = size
        self.taken = 0

    async def __call__(self) -> Message:
        if self._left == 0:
            return {"type": "http.disconnect"}
        self._left -= 1
        self.taken += 1
        return {"type": "http.request", "body": b"x" * self._size, "more_body": self._left > 0}


def scope(host: str, path: str, length: int | None) -> dict[str, object]:
    headers = [(b"host", host.encode()), (b"content-type", b"text/plain")]
    if length is not None:
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
    app: ASGIApp, host: str, path: str, body: CountingBody, length: int | None
) -> tuple[int, int]:
    """POST `body` to `app`; return the response's status and how many chunks of the
    body had been taken when the response started (a streaming response may drain the
    rest afterwards, unheld, as it listens for the client's disconnect)."""
    started: list[tuple[int, int]] = []

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            started.append((int(message["status"]), body.taken))

    asyncio.run(app(scope(host, path, length), body, send))  # type: ignore[arg-type]
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
    body = CountingBody(chunks=3)
    request = Request(scope("x", "/", None), body)  # type: ignore[arg-type]
    assert asyncio.run(read_body(request, 4 * CHUNK)) == b"x" * (3 * CHUNK)


@pytest.mark.parametrize("announced", [True, False])
def test_the_action_api_reads_no_more_than_its_limit(
    demo_config: ServerConfig, announced: bool
) -> None:
    """A text/plain POST of 256 KiB to the action API: 413 having read at most 16 KiB and
    one chunk."""
    config = demo_config
    body = CountingBody(chunks=64)
    host = f"{config.page_host}:{config.page_port}"
    status, taken = post(
        create_page_app(config), host, "/api/actions/flag", body, 64 * CHUNK if announced else None
    )
    assert (status, taken) == (413, 0 if announced else 5)
    assert body.taken == taken


@pytest.mark.parametrize("announced", [True, False])
def test_the_agent_answers_having_read_no_more_than_1_mb(
    demo_config: ServerConfig, announced: bool
) -> None:
    """A run input of 4 MiB: the agent starts its answer (the RUN_ERROR of
    tests/test_agent.py) having read at most 1 MB and one chunk."""
    config = demo_config
    body = CountingBody(chunks=64, size=65536)
    host = f"{config.assistant_host}:{config.assistant_port}"
    status, taken = post(
        create_assistant_app(config), host, "/agent", body, 64 * 65536 if announced else None
    )
    assert status == 200
    assert taken == (0 if announced else 1_000_000 // 65536 + 1)
