"""Per-task dedup of context items: what a task's conversation still holds is not sent again.

This module owns the rule: an item is left out of a question when its line, as the
per-item budget cuts it, is a whole line of a question the same task sent and the next
run still carries. The line holds the item's content, so an object sent again with new
values (or seen at another time) is sent again, and after a reload of the assistant, or
in a second tab, the saved log gives the same answer. A question the run no longer
carries (the log or the run's messages dropped it) no longer counts. `text` items are
the user's own words and always send.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from pagecontext.block import render_line
from pagecontext.budget import Budget, fit_items
from pagecontext.items import ContextItem

__all__ = ["ALWAYS_SENT_TYPES", "unsent"]

ALWAYS_SENT_TYPES: Final = frozenset({"text"})


def unsent(
    items: Sequence[ContextItem], history: Iterable[str], budget: Budget
) -> list[ContextItem]:
    """Return the items of `items` still to send, in order.

    `history` is the text of the task's questions that the next run carries; an item
    whose line (cut to `budget.per_item_chars`) is a whole line of it counts as sent.
    """
    seen_lines = {line for text in history for line in text.splitlines()}
    return [
        item
        for item in items
        if item.type in ALWAYS_SENT_TYPES or not _sent(item, seen_lines, budget)
    ]


def _sent(item: ContextItem, seen_lines: set[str], budget: Budget) -> bool:
    fitted = fit_items([item], budget)
    return bool(fitted) and render_line(fitted[0]) in seen_lines
