"""Tests for pagecontext.tracker: revisions, shared fields and the view history."""

from __future__ import annotations

import pytest

from pagecontext.errors import LocalProtocolError
from pagecontext.models import Quantity, Scalar, parse_message
from pagecontext.testing import FakeClock
from pagecontext.tracker import ComponentView, FieldSpec, SelectionTracker

# 2023-11-14T22:13:20.000Z
START_MS = 1_700_000_000_000.0


def tracker(history: int = 256) -> tuple[SelectionTracker, FakeClock]:
    clock = FakeClock(START_MS)
    tracker = SelectionTracker(page_instance_id="page-A", clock=clock, history=history)
    tracker.declare_component(
        "table", [FieldSpec("amount", unit="EUR"), FieldSpec("name"), FieldSpec("flag")]
    )
    tracker.set_view("table", ComponentView("sales", {"region": ("EU",)}, 1))
    return tracker, clock


def test_revisions_increase_strictly_from_one() -> None:
    """select and clear each issue the next revision, starting at 1."""
    t, _ = tracker()
    assert t.latest_revision == 0
    assert t.select("table", "row:1", {})[0] == 1
    assert t.clear() == 2
    assert t.select("table", "row:2", {})[0] == 3
    assert t.latest_revision == 3


def test_selection_carries_view_filters_and_the_observed_time() -> None:
    """The selection names the view's page and filters and when the user saw it."""
    t, clock = tracker()
    clock.advance(1_234.9)
    _, selection = t.select("table", "row:1", {})
    assert selection.page_id == "sales"
    assert selection.component_id == "table"
    assert selection.resource_ref == "row:1"
    assert selection.filters == {"region": ["EU"]}
    assert selection.observed_at == "2023-11-14T22:13:21.234Z"
    assert t.current == selection


def test_snapshot_holds_only_declared_fields_with_units_as_quantities() -> None:
    """Undeclared fields are dropped; fields with a unit become Quantity."""
    t, _ = tracker()
    _, selection = t.select(
        "table", "row:1", {"amount": 12.5, "name": "Acme", "secret": "s3cr3t", "flag": None}
    )
    assert selection.snapshot == {
        "amount": Quantity(value=12.5, unit="EUR"),
        "name": "Acme",
        "flag": None,
    }


def test_a_selection_with_nothing_shareable_has_no_snapshot() -> None:
    """With no declared field present, the snapshot is left out."""
    t, _ = tracker()
    assert t.select("table", "row:1", {"secret": 1})[1].snapshot is None


def test_a_selection_makes_a_valid_wire_message() -> None:
    """What the tracker builds passes the receiver's own validation."""
    t, _ = tracker()
    revision, selection = t.select("table", "row:1", {"amount": 3, "name": "n"})
    raw = {
        "protocol": "pagecontext",
        "version": 1,
        "type": "context",
        "messageId": "m1",
        "pageInstanceId": "page-A",
        "conversationId": "c",
        "selectionRevision": revision,
        "selection": selection.model_dump(mode="json"),
    }
    assert parse_message(raw).model_dump()["selection"] == selection.model_dump()


def test_clear_keeps_the_sequence_and_drops_the_selection() -> None:
    """clear issues a revision and leaves no current selection."""
    t, _ = tracker()
    t.select("table", "row:1", {})
    assert t.clear() == 2
    assert t.current is None


def test_set_view_issues_no_revision() -> None:
    """Changing a view alone does not move the revision."""
    t, _ = tracker()
    t.set_view("table", ComponentView("sales", {"region": ("US",)}, 2))
    assert t.latest_revision == 0


def test_selecting_in_an_undeclared_component_is_a_local_error() -> None:
    """select() in an undeclared component raises LocalProtocolError."""
    t, _ = tracker()
    with pytest.raises(LocalProtocolError, match="not declared"):
        t.select("chart", "bar:1", {})


def test_viewing_an_undeclared_component_is_a_local_error() -> None:
    """set_view() for an undeclared component raises LocalProtocolError."""
    t, _ = tracker()
    with pytest.raises(LocalProtocolError, match="not declared"):
        t.set_view("chart", ComponentView("sales", {}, 1))


def test_a_component_without_a_view_cannot_select() -> None:
    """A declared component must show a view before a selection in it."""
    t, _ = tracker()
    t.declare_component("chart", [])
    with pytest.raises(LocalProtocolError, match="no view"):
        t.select("chart", "bar:1", {})
    assert t.latest_revision == 0


def test_invalid_values_raise_a_local_error_and_issue_no_revision() -> None:
    """A NaN snapshot value is our mistake: LocalProtocolError, no revision spent."""
    t, _ = tracker()
    with pytest.raises(LocalProtocolError):
        t.select("table", "row:1", {"name": float("nan")})
    with pytest.raises(LocalProtocolError):
        t.select("table", "", {})
    assert t.latest_revision == 0


@pytest.mark.parametrize(
    ("values", "view_filters", "named"),
    [
        ({"amount": 2**53}, {}, "amount is 9007199254740992,"),
        ({"name": -(2**53)}, {}, "name is -9007199254740992,"),
        ({"flag": 1e300}, {}, "flag is 1e+300,"),
        ({"name": 1}, {"region": ("EU", 2**60)}, "region is 1152921504606846976,"),
    ],
)
def test_a_number_past_what_javascript_holds_is_named_with_where_it_is(
    values: dict[str, object], view_filters: dict[str, object], named: str
) -> None:
    """A number past Number.MAX_SAFE_INTEGER, in a field with a unit or without one or in
    a filter, is refused naming the field or filter and the number; no revision spent."""
    t, _ = tracker()
    if view_filters:
        t.set_view("table", ComponentView("sales", view_filters, 2))  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="past the numbers JavaScript") as refused:
        t.select("table", "row:1", values)  # type: ignore[arg-type]
    assert "can't select: " + named in str(refused.value)
    assert t.latest_revision == 0


def test_view_at_returns_the_view_when_the_revision_was_issued() -> None:
    """Later view changes do not alter what a revision recorded."""
    t, _ = tracker()
    first = ComponentView("sales", {"region": ("EU",)}, 1)
    second = ComponentView("sales", {"region": ("US",)}, 1)
    t.select("table", "row:1", {})
    t.set_view("table", second)
    t.select("table", "row:2", {})
    assert t.view_at(1, "table") == first
    assert t.view_at(2, "table") == second
    assert t.current_view("table") == second
    assert t.view_at(3, "table") is None
    assert t.view_at(1, "chart") is None


def test_history_keeps_only_the_last_revisions() -> None:
    """Revisions older than the history size are evicted."""
    t, _ = tracker(history=3)
    for index in range(5):
        t.select("table", f"row:{index}", {})
    assert [t.is_retained(revision) for revision in range(6)] == [
        False,
        False,
        False,
        True,
        True,
        True,
    ]
    assert t.view_at(2, "table") is None


def test_views_are_equal_by_value_and_type() -> None:
    """Same page, filters and generation are one view; 1 and True are different filters."""
    assert ComponentView("p", {"a": (1, 2), "b": "x"}, 1) == ComponentView(
        "p", {"b": "x", "a": (1, 2)}, 1
    )
    assert hash(ComponentView("p", {"a": 1}, 1)) == hash(ComponentView("p", {"a": 1}, 1))
    assert ComponentView("p", {"a": 1}, 1) != ComponentView("p", {"a": True}, 1)
    assert ComponentView("p", {"a": 1}, 1) != ComponentView("p", {"a": 1}, 2)
    assert ComponentView("p", {"a": 1}, 1) != ComponentView("q", {"a": 1}, 1)


@pytest.mark.parametrize(
    ("before", "after"),
    [((1,), (True,)), ((0,), (False,)), ((1,), (1.0,)), (("EU", 1), ("EU", True))],
)
def test_list_filters_are_equal_by_the_type_of_each_item_too(
    before: tuple[Scalar, ...], after: tuple[Scalar, ...]
) -> None:
    """A list filter's items compare by value and type, as a single filter's value does:
    [1] and [true] are different views, so a command based on a revision made in one is
    stale in the other (docs/protocol.md section 5, step 7)."""
    assert ComponentView("p", {"a": before}, 1) != ComponentView("p", {"a": after}, 1)
    t, _ = tracker()
    t.set_view("table", ComponentView("sales", {"region": before}, 1))
    revision = t.select("table", "row:1", {})[0]
    t.set_view("table", ComponentView("sales", {"region": after}, 1))
    assert t.view_at(revision, "table") != t.current_view("table")


def test_a_view_is_not_changed_by_mutating_the_callers_dict() -> None:
    """The view copies its filters."""
    filters: dict[str, str | tuple[str, ...]] = {"region": "EU"}
    view = ComponentView("sales", filters, 1)
    filters["region"] = "US"
    assert view.filters == {"region": "EU"}
