"""The library's exceptions: what we did wrong, and what a peer sent that we refuse.

Every error the library raises is a `PagecontextError`. Foreign exceptions (such as
pydantic's `ValidationError`) are mapped to these at the boundary and never escape.
"""

from __future__ import annotations

__all__ = [
    "HandshakeRejected",
    "LocalProtocolError",
    "MessageRejected",
    "PagecontextError",
]


class PagecontextError(Exception):
    """Base class of every error raised by pagecontext."""


class LocalProtocolError(PagecontextError):
    """We misused the API: an illegal state transition or a call out of order.

    The message names the event and the state in which it was attempted.
    """


class MessageRejected(PagecontextError):  # noqa: N818 - name fixed by the public API
    """A message from the peer failed validation.

    `reason` is a short code ("malformed", "unsupported-version", "too-large", ...).
    `message_id` is the message's messageId if one could be read from the raw input
    and is itself valid, so the caller can answer with a receipt; otherwise None.
    """

    def __init__(self, reason: str, message_id: str | None = None) -> None:
        super().__init__(f"message rejected: {reason}")
        self.reason = reason
        self.message_id = message_id


class HandshakeRejected(PagecontextError):  # noqa: N818 - name fixed by the public API
    """The port-level handshake failed; the connection must not be bound."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"handshake rejected: {reason}")
        self.reason = reason
