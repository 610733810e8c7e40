"""Tests for pagecontext.dedup: per-task marks, persisted history, text always sent."""

from __future__ import annotations

import pytest

from pagecontext.block import render_block, render_line
from pagecontext.dedup import SentItems
from pagecontext.items import ContextItem

ROW = ContextItem(type="reference", key="row-42", label="Row 42")
TEXT = ContextItem(type="text", value="why so high?")


def test_marked_items_are_not_resent_to_the_same_task() -> None:
    """After mark_sent, the keyed item is left out; a text item still goes."""
    sent = SentItems()
    sent.mark_sent("task-1", [ROW, TEXT])
    assert sent.unsent("task-1", [ROW, TEXT]) == [TEXT]


def test_sent_keys_do_not_leak_across_tasks() -> None:
    """A mark for one task leaves another task's items to send."""
    sent = SentItems()
    sent.mark_sent("task-1", [ROW])
    assert sent.unsent("task-2", [ROW]) == [ROW]
    sent.forget("task-1")
    assert sent.unsent("task-1", [ROW]) == [ROW]


@pytest.mark.scenario(23)
def test_lines_in_the_persisted_history_are_not_resent_after_a_reload() -> None:
    """A fresh SentItems (the assistant reloaded) skips items whose line is in history."""
    history = [render_block([], [ROW, TEXT])]
    fresh = SentItems()
    assert fresh.unsent("task-1", [ROW, TEXT], history) == [TEXT]


def test_a_line_only_quoted_inside_other_text_does_not_count() -> None:
    """History must hold the item's line as a whole line, not as part of one."""
    history = ["user said: " + render_line(ROW)]
    assert SentItems().unsent("task-1", [ROW], history) == [ROW]
