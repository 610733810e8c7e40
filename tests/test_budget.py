"""Tests for pagecontext.budget: eliding to fit, markers that name tools, parseable JSON."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagecontext.block import parse_block, render_block, render_line
from pagecontext.budget import _LABEL_KEEP, Budget, fit_block, fit_items
from pagecontext.errors import LocalProtocolError
from pagecontext.items import ContextItem, Instruction, JsonValue

INSTRUCTIONS = [Instruction("Use get_resource to re-read a row.")]
TOOLS = {"table": "get_table", "reference": "get_resource"}


def marker(value: JsonValue, tool: str) -> dict[str, JsonValue]:
    """The marker for `value` (no character of it escaped in a line): its characters, the
    start of the SHA-256 of its JSON, the tool."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return {"elided": {"chars": len(text), "digest": digest, "fetchWith": tool}}


def table(key: str, rows: int, note: str = "small") -> ContextItem:
    return ContextItem(
        type="table",
        key=key,
        label=f"Table {key}",
        value={"note": note, "rows": [{"id": n, "text": "x" * 50} for n in range(rows)]},
    )


def test_items_within_budget_are_unchanged() -> None:
    """Nothing is elided when everything fits."""
    items = [table("t", 3), ContextItem(type="text", value="hello")]
    assert fit_items(items, Budget(fetch_tools=TOOLS)) == items
    assert fit_block(INSTRUCTIONS, items) == render_block(INSTRUCTIONS, items)


def test_an_item_over_its_budget_loses_its_heaviest_field_first() -> None:
    """The heaviest field becomes a marker naming the item type's tool; others stay."""
    item = table("t", 2000)
    [fitted] = fit_items([item], Budget(per_item_chars=1000, fetch_tools=TOOLS))
    rows = item.value["rows"]  # type: ignore[call-overload,index]
    assert fitted.value == {"note": "small", "rows": marker(rows, "get_table")}
    assert len(render_line(fitted)) <= 1000


def test_the_default_per_item_budget_is_64000_characters() -> None:
    """An item of about 100,000 characters is cut to at most 64,000."""
    [fitted] = fit_items([ContextItem(type="text", key="k", value="y" * 100_000)])
    assert len(render_line(fitted)) <= 64_000
    assert fitted.value == marker("y" * 100_000, "get_context_item")


def test_a_line_of_exactly_the_per_item_budget_is_kept_whole_and_one_more_is_cut() -> None:
    """The per-item budget is inclusive: a line of exactly per_item_chars characters is
    left as it is; one character more and its value is elided."""
    budget = Budget(per_item_chars=1000)
    frame = len(render_line(ContextItem(type="text", key="k", value="")))
    exact = ContextItem(type="text", key="k", value="v" * (1000 - frame))
    assert len(render_line(exact)) == 1000
    assert fit_items([exact], budget) == [exact]
    over = ContextItem(type="text", key="k", value="v" * (1001 - frame))
    [fitted] = fit_items([over], budget)
    assert fitted.value == marker("v" * (1001 - frame), "get_context_item")


def test_values_of_the_same_size_elided_make_other_lines_and_escapes_count() -> None:
    """Two values of one size elide to lines that differ (their digests), so dedup sends
    the new one; a marker counts the characters the value takes escaped in a line."""
    lines = {
        render_line(fit_items([ContextItem(type="text", key="k", value=v)], Budget(600))[0])
        for v in ("a" * 5000, "b" * 5000)
    }
    assert len(lines) == 2
    [fitted] = fit_items([ContextItem(type="text", key="k", value="<" * 5000)], Budget(600))
    assert fitted.value["elided"]["chars"] == 2 + 6 * 5000  # type: ignore[call-overload,index]


@pytest.mark.parametrize("length", [201, 211, 212, 240])
def test_an_item_whose_cut_label_is_still_too_long_is_left_out(length: int) -> None:
    """A label of escaped characters (12 each in the line) cut to 200 is still over the
    item's budget: the item is left out, once, and a label the cut would not shorten is
    not cut."""
    item = ContextItem(type="reference", key="row:1", label="\U000f0000" * length)
    budget = Budget(per_item_chars=1_000, total_chars=20_000)
    assert fit_items([item], budget) == []
    assert fit_block([], [item], budget).count('"elidedItems":1,') == 1


def test_a_scalar_value_is_elided_whole_and_a_long_label_is_shortened() -> None:
    """With no fields to pick from the value goes; then the label keeps its start."""
    item = ContextItem(type="note", key="n", label="L" * 5000, value="v" * 5000)
    [fitted] = fit_items([item], Budget(per_item_chars=600))
    assert fitted.value == marker("v" * 5000, "get_context_item")
    assert fitted.label == "L" * 200 + "...[elided]"


def test_an_item_that_cannot_be_cut_enough_is_left_out() -> None:
    """A key longer than the per-item budget cannot be elided: the item is dropped."""
    assert fit_items([ContextItem(type="t", key="k" * 500)], Budget(per_item_chars=100)) == []


@pytest.mark.scenario(22)
def test_over_the_total_the_json_stays_parseable_and_names_the_tool() -> None:
    """Each line still parses, markers name the fetch tool, and the block fits."""
    items = [
        ContextItem(type="reference", key="row-42", label="Row 42", value={"page": "sales"}),
        table("big", 800, note="n" * 3000),
        table("bigger", 1500),
    ]
    budget = Budget(total_chars=6000, fetch_tools=TOOLS)
    block = fit_block(INSTRUCTIONS, items, budget)
    assert len(block) <= 6000
    parsed = parse_block(block)
    assert parsed[0] == items[0].to_json()  # the light reference is untouched
    assert [line["key"] for line in parsed] == ["row-42", "big", "bigger"]
    marker = parsed[2]["value"]["rows"]["elided"]  # type: ignore[call-overload,index]
    assert marker["fetchWith"] == "get_table"  # type: ignore[call-overload,index]
    assert marker["chars"] > 6000  # type: ignore[call-overload,index,operator]


@pytest.mark.scenario(22)
def test_when_eliding_is_not_enough_the_last_items_are_dropped_and_counted() -> None:
    """Items dropped from the end are summed up in one line naming the listing tool."""
    items = [ContextItem(type="reference", key=f"row-{n}", label="r") for n in range(100)]
    block = fit_block([], items, Budget(total_chars=1000))
    assert len(block) <= 1000
    parsed = parse_block(block)
    assert parsed[0]["key"] == "row-0"  # the first items are kept
    assert parsed[-1]["type"] == "elided"
    assert parsed[-1]["value"] == {
        "elidedItems": 100 - (len(parsed) - 1),
        "fetchWith": "list_context_items",
    }


def test_a_budget_below_the_fixed_text_is_refused() -> None:
    """If even the instructions do not fit, fit_block raises rather than overrun."""
    with pytest.raises(LocalProtocolError):
        fit_block(INSTRUCTIONS, [], Budget(total_chars=10))


@pytest.mark.parametrize("tool", ["", "get tool", "x\ny", "a" * 129, "get_item\n"])
def test_tool_names_must_be_ids(tool: str) -> None:
    """A tool name outside the id pattern is refused."""
    with pytest.raises(LocalProtocolError):
        Budget(fetch_tools={"t": tool})


values = st.recursive(
    st.none() | st.integers() | st.text(alphabet="ab<\n\u2028", max_size=300),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=3), children, max_size=5)
    ),
    max_leaves=30,
)


@pytest.mark.scenario(22)
@settings(max_examples=150)
@given(
    st.lists(st.builds(ContextItem, type=st.just("t"), key=st.text(max_size=20), value=values)),
    st.integers(min_value=900, max_value=4000),
    st.integers(min_value=200, max_value=2000),
)
def test_any_fitted_block_is_within_budget_and_parses(
    items: list[ContextItem], total: int, per_item: int
) -> None:
    """Whatever the items, the block fits both budgets and every line parses."""
    block = fit_block(INSTRUCTIONS, items, Budget(per_item_chars=per_item, total_chars=total))
    assert len(block) <= total
    parsed = parse_block(block)
    assert all(len(render_line(ContextItem(**line))) <= per_item for line in parsed)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("whole", "kept"),
    [
        # An e and its combining acute accent (NFD), which the cut left an `e`.
        ("e\u0301", ""),
        # A flag: two regional indicators, of which the cut left the first.
        ("\U0001f1e9\U0001f1ea", ""),
        # A family emoji: a man, a joiner and a woman.
        ("\U0001f468\u200d\U0001f469", ""),
        # A thumbs up with a skin tone.
        ("\U0001f44d\U0001f3fd", ""),
        # A Hangul syllable written in its three letters (NFD), cut after the first two.
        ("\u1112\u1161\u11ab", ""),
        # A Hangul syllable written with two leading consonants (old Korean, NFD).
        ("\u1100\u1100\u1161", ""),
        # A leading consonant and a vowel of Hangul Jamo Extended-B.
        ("\u1100\ud7b0", ""),
        # A Devanagari conjunct: ka, virama, ssa (kṣa), cut after the virama.
        ("\u0915\u094d\u0937", ""),
        # A flag whose first indicator is the 200th code point, after a whole flag.
        ("\U0001f1eb\U0001f1f7", "\U0001f1e9\U0001f1ea"),
    ],
)
def test_a_long_label_is_cut_between_whole_characters(whole: str, kept: str) -> None:
    """A label cut to its first 200 code points is cut before a character the user sees
    as one but that spans the 200th, never inside it: no accent taken off its letter,
    no half flag, no dangling joiner."""
    start = "L" * (_LABEL_KEEP - len(whole) + 1 - len(kept))
    item = ContextItem(type="note", key="n", label=start + kept + whole + "R" * 5000)
    [fitted] = fit_items([item], Budget(per_item_chars=600))
    assert fitted.label == start + kept + "...[elided]"
