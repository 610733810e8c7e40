"""Request bodies read up to a limit: a body past it is refused before it is held whole.

A browser sends a cross-origin `text/plain` POST without a preflight, so any web page can
make an endpoint read a large body before its own checks run. `read_body` refuses one
that announces more than the limit (`Content-Length`) at once, and stops reading one
that streams past it. The answer to a refused request that carries a body (any answer
of 400 or more: `RefusedBodyMiddleware`; the agent's refusal of a run input past 1 MB,
a stream of status 200, carries `REFUSED_BODY_HEADERS` itself) closes the connection
once it is sent, instead of the server reading the rest of the body to keep the
connection open (which an HTTP/1.1 server otherwise does, to the end of whatever the
client sends).

A body must also arrive in time: `read_body` gives up on one still incomplete after
`BODY_SECONDS` (`BodyTimeoutError`, which the endpoints answer with 408), so a client that
announces a body and never sends it does not hold its connection and task forever.
A client that hangs up before its body has all arrived gets no answer and leaves no
trace in the log (`client_gone`, the apps' handler of Starlette's `ClientDisconnect`):
it is an everyday event, not a server error.
`read_json` reads a body's JSON the one way the project reads JSON from outside.
"""

from __future__ import annotations

from typing import Final

import anyio
from starlette.datastructures import MutableHeaders
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pagecontext.agui import read_outside_json

REFUSED_BODY_HEADERS: Final = {"Connection": "close"}
# The longest a request body may take to arrive, from the first read to the last byte.
BODY_SECONDS: Final = 30.0


class RefusedBodyMiddleware:
    """Adds REFUSED_BODY_HEADERS to every answer of 400 or more to a request that carries
    a body (a `Content-Length` above 0, or a `Transfer-Encoding`): whatever refused it
    (the host check, a missing route, the admin API's guard, a size limit), the server
    does not read the rest."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                MutableHeaders(scope=message).update(REFUSED_BODY_HEADERS)
            await send(message)

        await self.app(scope, receive, send_closing)


def _has_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value not in (b"0", b"")):
            return True
    return False


class BodyTooLargeError(Exception):
    """The request body is larger than the endpoint takes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than {limit:,} bytes")
        self.limit = limit


class BodyTimeoutError(Exception):
    """The request body did not arrive in time."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request body did not arrive within {seconds:g} seconds")
        self.seconds = seconds


async def read_body(request: Request, limit: int, seconds: float = BODY_SECONDS) -> bytes:
    """Return the request's body; raise BodyTooLargeError past `limit` bytes, having read at
    most `limit` bytes and one chunk of it, and BodyTimeoutError if it is not all there
    within `seconds`."""
    announced = request.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > limit:
        raise BodyTooLargeError(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise BodyTooLargeError(limit)
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTimeoutError(seconds) from None
    return b"".join(chunks)


async def client_gone(_request: Request, _error: Exception) -> Response:
    """The answer to a request whose client hung up while its body was read
    (`ClientDisconnect`): nobody receives it, and the server writes none (uvicorn drops
    what is sent to a closed connection)."""
    return Response(status_code=400, headers=REFUSED_BODY_HEADERS)


CLIENT_GONE: Final = {ClientDisconnect: client_gone}
"""The exception handlers every app of the server takes."""


def read_json(body: bytes) -> object:
    """Return the JSON value of a request body (`agui.read_outside_json`: an escaped lone
    surrogate, which JavaScript writes for a character cut in two, is read like any other
    text, and becomes U+FFFD). Raises ValueError if it is not JSON, or is nested too
    deeply."""
    return read_outside_json(body)
