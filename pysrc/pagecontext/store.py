"""The description-keyed context store that feeds AG-UI's `context` list.

This module owns the readables an assistant offers its agents (CopilotKit's
`useCopilotReadable` model): each is keyed by its description, and a later registration
under the same description replaces the earlier one (keeping its place). A readable may
be scoped to agents: `agents=None` means every agent, an empty set means none. A
document (title, content, url) is a readable too and counts against the same budget.

Each value is serialized once, when it is set: a string is sent as it is, anything else
as compact JSON, and `context_for` hands out those strings, `[{description, value}]`,
as AG-UI's `RunAgentInput.context` expects. Subscribers hear about changes through
`flush(now_ms)`, which the caller runs on its timer: a burst of changes within
`throttle_ms` of the last notification is delivered as one call. No clock is read here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from pagecontext.errors import LocalProtocolError
from pagecontext.items import JsonValue, json_copy

__all__ = ["DEFAULT_THROTTLE_MS", "ContextEntry", "ContextStore", "Readable"]

DEFAULT_THROTTLE_MS: Final = 100.0


@dataclass(frozen=True)
class ContextEntry:
    """One entry of AG-UI's context: a description and its value, already serialized."""

    description: str
    value: str

    def to_json(self) -> dict[str, str]:
        """Return `{"description": ..., "value": ...}`."""
        return {"description": self.description, "value": self.value}


@dataclass(frozen=True)
class Readable:
    """A stored readable: its entry and the agents it is for (None: every agent)."""

    entry: ContextEntry
    agents: frozenset[str] | None

    def is_for(self, agent_id: str) -> bool:
        """Return True if `agent_id` may read this."""
        return self.agents is None or agent_id in self.agents


class ContextStore:
    """Readables by description, with throttled change notifications."""

    def __init__(self, throttle_ms: float = DEFAULT_THROTTLE_MS) -> None:
        self._throttle_ms = throttle_ms
        self._readables: dict[str, Readable] = {}
        self._subscribers: list[Callable[[ContextStore], None]] = []
        self._dirty = False
        self._notified_at: float | None = None

    def set(self, description: str, value: JsonValue, agents: Iterable[str] | None = None) -> None:
        """Register `value` under `description`, replacing what was there.

        Raises LocalProtocolError for an empty description or a value that is not JSON.
        """
        if not isinstance(description, str) or not description:
            raise LocalProtocolError("a readable needs a non-empty description")
        serialized = (
            value
            if isinstance(value, str)
            else json.dumps(json_copy(value), ensure_ascii=False, separators=(",", ":"))
        )
        scope = None if agents is None else frozenset(agents)
        readable = Readable(ContextEntry(description, serialized), scope)
        if self._readables.get(description) != readable:
            self._readables[description] = readable
            self._dirty = True

    def set_document(
        self,
        description: str,
        *,
        title: str,
        content: str,
        url: str | None = None,
        agents: Iterable[str] | None = None,
    ) -> None:
        """Register a document as a readable: `{title, content, url?}` under `description`."""
        document: dict[str, JsonValue] = {"title": title, "content": content}
        if url is not None:
            document["url"] = url
        self.set(description, document, agents)

    def remove(self, description: str) -> None:
        """Forget the readable under `description`, if any."""
        if self._readables.pop(description, None) is not None:
            self._dirty = True

    def context_for(self, agent_id: str, max_chars: int | None = None) -> list[ContextEntry]:
        """Return the entries `agent_id` may read, in registration order.

        With `max_chars`, entries whose description and value would take the total past
        it are left out (documents included); later, smaller entries may still fit.
        """
        entries: list[ContextEntry] = []
        used = 0
        for readable in self._readables.values():
            if not readable.is_for(agent_id):
                continue
            size = len(readable.entry.description) + len(readable.entry.value)
            if max_chars is not None and used + size > max_chars:
                continue
            used += size
            entries.append(readable.entry)
        return entries

    def subscribe(self, callback: Callable[[ContextStore], None]) -> Callable[[], None]:
        """Call `callback(store)` on each flushed change; return a function that unsubscribes."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def next_flush_at(self) -> float | None:
        """Return when `flush` would next notify (epoch ms), or None if nothing changed."""
        if not self._dirty:
            return None
        if self._notified_at is None:
            return float("-inf")
        return self._notified_at + self._throttle_ms

    def flush(self, now_ms: float) -> bool:
        """Notify the subscribers if something changed and the throttle allows it.

        Returns True if they were notified. Changes held back are not lost: a later
        flush delivers them.
        """
        due = self.next_flush_at()
        if due is None or now_ms < due:
            return False
        self._dirty = False
        self._notified_at = now_ms
        for callback in list(self._subscribers):
            callback(self)
        return True
