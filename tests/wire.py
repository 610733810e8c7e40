"""Raw wire messages for the tests: one valid message of each type, with overrides.

Every builder returns a fresh, JSON-compatible dict in wire form (camelCase keys) that
`parse_message` accepts as it is. Keyword arguments replace top-level keys by their wire
name (`context(selectionRevision=4)`); a value of `DROP` removes the key. A test module
that needs other defaults binds them once, e.g. `functools.partial(command,
messageId="cmd-1")`: keywords given later still win.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "DROP",
    "ENVELOPE",
    "NONCE",
    "OBSERVED_AT",
    "bye",
    "command",
    "connected",
    "context",
    "conversation",
    "envelope",
    "receipt",
    "selection",
    "selection_cleared",
    "with_selection",
    "without",
]


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Final = _Drop()
"""An override value that removes the key instead of setting it."""

ENVELOPE: Final[dict[str, Any]] = {
    "protocol": "pagecontext",
    "version": 1,
    "messageId": "msg-1",
    "pageInstanceId": "page-A",
    "conversationId": "conv-1",
}
OBSERVED_AT: Final = "2024-05-06T07:08:09.123Z"
NONCE: Final = "A" * 22


def _apply(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if value is DROP:
            raw.pop(key, None)
        else:
            raw[key] = value
    return raw


def envelope(kind: str, **overrides: Any) -> dict[str, Any]:
    """The envelope of docs/protocol.md section 3 with `type` set to `kind`, and nothing else."""
    return _apply({**ENVELOPE, "type": kind}, overrides)


def selection(**overrides: Any) -> dict[str, Any]:
    """A context's `selection`: filters of every value kind, a snapshot with a Quantity."""
    raw: dict[str, Any] = {
        "pageId": "sales",
        "componentId": "table",
        "resourceRef": "row:42",
        "observedAt": OBSERVED_AT,
        "filters": {"region": ["EU", "US"], "year": 2024, "open": True, "none": None},
        "snapshot": {"amount": {"value": 12.5, "unit": "EUR"}, "name": "Acme"},
    }
    return _apply(raw, overrides)


def context(**overrides: Any) -> dict[str, Any]:
    """page -> assistant: a context at selectionRevision 3."""
    raw = envelope("context", selectionRevision=3, selection=selection())
    return _apply(raw, overrides)


def with_selection(raw: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """A copy of the context `raw` (default: `context()`) with selection fields overridden."""
    base = context() if raw is None else dict(raw)
    base["selection"] = _apply(dict(base["selection"]), overrides)
    return base


def selection_cleared(**overrides: Any) -> dict[str, Any]:
    """page -> assistant: the selection was cleared, at selectionRevision 4."""
    return _apply(envelope("selection-cleared", selectionRevision=4), overrides)


def command(**overrides: Any) -> dict[str, Any]:
    """assistant -> page: highlight (focus) row:1 of `table`, based on revision 1."""
    raw = envelope(
        "command",
        basisRevision=1,
        action="highlight",
        target={"componentId": "table", "resourceRef": "row:1"},
        params={"tone": "focus"},
    )
    return _apply(raw, overrides)


def receipt(**overrides: Any) -> dict[str, Any]:
    """page -> assistant: `received`/applied/ok for command `cmd-1`."""
    raw = envelope("receipt", commandId="cmd-1", layer="received", status="applied", reason="ok")
    return _apply(raw, overrides)


def connected(**overrides: Any) -> dict[str, Any]:
    """child -> embedder: an assistant child `asst-1` presenting `NONCE`."""
    raw = envelope("connected", role="assistant", instanceId="asst-1", nonce=NONCE)
    return _apply(raw, overrides)


def bound(**overrides: Any) -> dict[str, Any]:
    """embedder -> child: the embedder bound the port (docs/protocol.md 8.12)."""
    return envelope("bound", **overrides)


def conversation(**overrides: Any) -> dict[str, Any]:
    """assistant -> page: a new conversation (the envelope's conversationId)."""
    return envelope("conversation", **overrides)


def bye(**overrides: Any) -> dict[str, Any]:
    """Either side: the connection is closing."""
    return envelope("bye", **overrides)


def without(raw: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A copy of `raw` without these top-level keys."""
    return {name: value for name, value in raw.items() if name not in keys}
