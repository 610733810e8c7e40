"""Per-task dedup of context items: what a task was already sent is not sent again.

This module owns the rule of DESIGN.md: keys are marked when a task's context is sent,
and an item whose rendered line is already in the task's persisted history is not sent
again either, so a reload of the assistant (which loses the marks) or a second tab does
not resend it. `text` items are the user's own words and always send. Marks are per
task: what one task was sent says nothing about another.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from pagecontext.block import render_line
from pagecontext.items import ContextItem

__all__ = ["ALWAYS_SENT_TYPES", "SentItems"]

ALWAYS_SENT_TYPES: Final = frozenset({"text"})


class SentItems:
    """The item identities sent per task id."""

    def __init__(self) -> None:
        self._sent: dict[str, set[str]] = {}

    def unsent(
        self, task_id: str, items: Sequence[ContextItem], history: Iterable[str] = ()
    ) -> list[ContextItem]:
        """Return the items of `items` still to send to `task_id`, in order.

        `history` is the task's persisted text (earlier messages or blocks); an item
        whose line appears in it as a whole line counts as sent.
        """
        marked = self._sent.get(task_id, set())
        seen_lines = {line for text in history for line in text.splitlines()}
        return [
            item
            for item in items
            if item.type in ALWAYS_SENT_TYPES
            or (item.identity not in marked and render_line(item) not in seen_lines)
        ]

    def mark_sent(self, task_id: str, items: Iterable[ContextItem]) -> None:
        """Record that `items` were sent to `task_id`."""
        identities = {item.identity for item in items if item.identity is not None}
        self._sent.setdefault(task_id, set()).update(identities)

    def forget(self, task_id: str) -> None:
        """Drop the marks of a finished task."""
        self._sent.pop(task_id, None)
