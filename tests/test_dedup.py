"""Tests for pagecontext.dedup: lines the task's history holds, text always sent."""

from __future__ import annotations

import pytest

from pagecontext.block import render_block, render_line
from pagecontext.budget import Budget, fit_block
from pagecontext.dedup import unsent
from pagecontext.items import ContextItem

ROW = ContextItem(type="reference", key="row-42", label="Row 42")
TEXT = ContextItem(type="text", value="why so high?")
BUDGET = Budget()


@pytest.mark.scenario(23)
def test_lines_in_the_history_are_not_resent_but_text_is() -> None:
    """An item whose line a sent question holds is left out; a text item still goes."""
    history = [render_block([], [ROW, TEXT])]
    assert unsent([ROW, TEXT], history, BUDGET) == [TEXT]


def test_an_item_with_new_content_is_sent_again() -> None:
    """The same key with another value is another line: it is sent."""
    history = [render_block([], [ContextItem(type="snapshot", key="row-42", value={"a": 1})])]
    changed = ContextItem(type="snapshot", key="row-42", value={"a": 2})
    assert unsent([changed], history, BUDGET) == [changed]


def test_a_line_only_quoted_inside_other_text_does_not_count() -> None:
    """History must hold the item's line as a whole line, not as part of one."""
    history = ["user said: " + render_line(ROW)]
    assert unsent([ROW], history, BUDGET) == [ROW]


def test_an_item_cut_to_the_per_item_budget_counts_as_sent_by_its_cut_line() -> None:
    """An item over the per-item budget was sent elided; that elided line counts, so the
    item is not sent again with every question."""
    budget = Budget(per_item_chars=200)
    big = ContextItem(type="snapshot", key="row-42", value={"notes": "x" * 1000, "a": 1})
    history = [render_block([], [big])]
    assert unsent([big], history, budget) == [big]
    sent = fit_block([], [big], budget)
    assert unsent([big], [sent], budget) == []
