"""Tests for pagecontext.store: description-keyed readables, scoping, throttled notices."""

from __future__ import annotations

import pytest

from pagecontext.errors import LocalProtocolError
from pagecontext.store import ContextEntry, ContextStore
from pagecontext.testing import FakeClock


def test_a_later_registration_replaces_the_earlier_one_in_place() -> None:
    """The same description twice keeps one entry, with the later value, in first place."""
    store = ContextStore()
    store.set("selection", {"row": 1})
    store.set("user", "Ada")
    store.set("selection", {"row": 2})
    assert [entry.to_json() for entry in store.context_for("agent")] == [
        {"description": "selection", "value": '{"row":2}'},
        {"description": "user", "value": "Ada"},
    ]


def test_values_are_serialized_once() -> None:
    """A string is sent as it is (not quoted again); anything else as compact JSON."""
    store = ContextStore()
    store.set("block", '<pagecontext-data>\n- {"type":"x"}')
    store.set("n", [1, {"a": None}])
    assert store.context_for("a") == [
        ContextEntry("block", '<pagecontext-data>\n- {"type":"x"}'),
        ContextEntry("n", '[1,{"a":null}]'),
    ]


def test_scoping_absent_means_every_agent_and_empty_means_none() -> None:
    """agents=None reaches everyone, a set only its members, an empty set nobody."""
    store = ContextStore()
    store.set("all", 1)
    store.set("only-b", 2, agents=["b"])
    store.set("nobody", 3, agents=[])
    assert [entry.description for entry in store.context_for("a")] == ["all"]
    assert [entry.description for entry in store.context_for("b")] == ["all", "only-b"]


def test_documents_are_readables_within_the_budget() -> None:
    """A document is a `{title, content, url}` readable and is left out when over budget."""
    store = ContextStore()
    store.set("note", "short")
    store.set_document("manual", title="Manual", content="x" * 500, url="https://e.x/m")
    assert store.context_for("a")[1].value == (
        '{"title":"Manual","content":"' + "x" * 500 + '","url":"https://e.x/m"}'
    )
    assert [entry.description for entry in store.context_for("a", max_chars=100)] == ["note"]


def test_remove_forgets_a_readable() -> None:
    """A removed description is no longer in the context."""
    store = ContextStore()
    store.set("x", 1)
    store.remove("x")
    assert store.context_for("a") == []


def test_an_empty_description_or_a_non_json_value_is_refused() -> None:
    """set raises LocalProtocolError for both."""
    store = ContextStore()
    with pytest.raises(LocalProtocolError):
        store.set("", 1)
    with pytest.raises(LocalProtocolError):
        store.set("x", float("nan"))


def test_a_burst_of_changes_is_one_notification() -> None:
    """Changes within the throttle window reach subscribers once, on the next due flush."""
    clock = FakeClock()
    store = ContextStore(throttle_ms=100)
    seen: list[list[str]] = []
    store.subscribe(lambda s: seen.append([e.value for e in s.context_for("a")]))
    store.set("row", "1")
    assert store.flush(clock())
    for value in ("2", "3", "4"):
        clock.advance(10)
        store.set("row", value)
        assert not store.flush(clock())
    assert store.next_flush_at() == clock() - 30 + 100
    clock.advance(70)
    assert store.flush(clock())
    assert seen == [["1"], ["4"]]


def test_nothing_changed_means_no_notification() -> None:
    """Setting an equal value, or flushing with no change, notifies nobody."""
    store = ContextStore()
    calls: list[ContextStore] = []
    store.subscribe(calls.append)
    store.set("x", 1)
    store.flush(0)
    store.set("x", 1)
    assert store.next_flush_at() is None
    assert not store.flush(1000)
    assert len(calls) == 1


def test_an_unsubscribed_callback_is_not_called() -> None:
    """The function subscribe returns stops the notifications."""
    store = ContextStore()
    calls: list[ContextStore] = []
    unsubscribe = store.subscribe(calls.append)
    unsubscribe()
    store.set("x", 1)
    assert store.flush(0)
    assert calls == []
