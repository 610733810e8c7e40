"""Request bodies read up to a limit: a body past it is refused before it is held whole.

A browser sends a cross-origin `text/plain` POST without a preflight, so any web page can
make an endpoint read a large body before its own checks run. `read_body` refuses one
that announces more than the limit (`Content-Length`) at once, and stops reading one
that streams past it. The answer to a refused body carries `REFUSED_BODY_HEADERS`: the
server closes the connection once it is sent, instead of reading the rest of the body
to keep the connection open (which an HTTP/1.1 server otherwise does, to the end of
whatever the client sends).
"""

from __future__ import annotations

from typing import Final

from starlette.requests import Request

REFUSED_BODY_HEADERS: Final = {"Connection": "close"}


class BodyTooLargeError(Exception):
    """The request body is larger than the endpoint takes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than {limit:,} bytes")
        self.limit = limit


async def read_body(request: Request, limit: int) -> bytes:
    """Return the request's body; raise BodyTooLargeError past `limit` bytes, having read at
    most `limit` bytes and one chunk of it."""
    announced = request.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > limit:
        raise BodyTooLargeError(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLargeError(limit)
        chunks.append(chunk)
    return b"".join(chunks)
