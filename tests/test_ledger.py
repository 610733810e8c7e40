"""Tests for pagecontext.ledger: per-layer receipts, deadlines and late arrivals."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wire
from pagecontext.errors import LocalProtocolError
from pagecontext.ledger import LayerRecord, ReceiptLedger
from pagecontext.models import ReceiptMessage, ReceiptStatus, parse_message
from pagecontext.testing import FakeClock

START = 1_700_000_000_000.0


def receipt(
    command_id: str = "cmd-1",
    layer: str = "received",
    status: ReceiptStatus = "applied",
    reason: str = "ok",
) -> ReceiptMessage:
    message = parse_message(
        wire.receipt(
            messageId="r1", commandId=command_id, layer=layer, status=status, reason=reason
        )
    )
    assert isinstance(message, ReceiptMessage)
    return message


def ledger() -> tuple[ReceiptLedger, FakeClock]:
    clock = FakeClock(START)
    return ReceiptLedger(clock=clock), clock


def states(ledger: ReceiptLedger, command_id: str = "cmd-1") -> dict[str, str]:
    return {layer: record.state for layer, record in ledger.get(command_id).items()}


def test_a_recorded_command_is_pending_on_every_layer() -> None:
    """record() opens the received and ui layers as pending."""
    book, _ = ledger()
    book.record("cmd-1", connection_id=1)
    assert states(book) == {"received": "pending", "ui": "pending"}


def test_receipts_settle_their_layers() -> None:
    """A timely receipt sets its layer's status, reason and time."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    clock.advance(100)
    assert book.on_receipt(receipt(), 1) == LayerRecord(
        state="applied", reason="ok", settled_at=START + 100
    )
    book.on_receipt(receipt(layer="ui"), 1)
    assert states(book) == {"received": "applied", "ui": "applied"}


def test_a_non_applied_received_receipt_settles_the_ui_layer_too() -> None:
    """If the page will not do the UI work, the ui layer takes the same outcome."""
    book, _ = ledger()
    book.record("cmd-1", 1)
    book.on_receipt(receipt(status="stale-context", reason="view-changed"), 1)
    assert book.get("cmd-1")["ui"] == LayerRecord(
        state="stale-context", reason="view-changed", settled_at=START
    )


def test_pending_layers_become_unconfirmed_after_their_deadlines() -> None:
    """expire() reports each layer whose deadline passed, once."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    book.on_receipt(receipt(), 1)
    clock.advance(10_000)
    assert book.expire() == []
    clock.advance(1)
    assert book.expire() == [("cmd-1", "ui")]
    assert book.expire() == []
    assert book.get("cmd-1")["ui"] == LayerRecord(
        state="unconfirmed", reason="deadline", settled_at=START + 10_001
    )


def test_an_unconfirmed_received_layer_ends_the_ui_layer_with_it() -> None:
    """Once `received` is unconfirmed at its deadline, the command was reported
    unconfirmed: a `ui` receipt that comes later, within the ui layer's own deadline, is
    recorded late, and never turns the command into success."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    clock.advance(3000)
    assert book.expire() == []
    clock.advance(1)
    assert book.expire() == [("cmd-1", "received"), ("cmd-1", "ui")]
    expired = LayerRecord(state="unconfirmed", reason="deadline", settled_at=START + 3001)
    assert book.get("cmd-1") == {"received": expired, "ui": expired}
    assert book.next_deadline() is None
    clock.advance(2000)
    book.on_receipt(receipt(), 1)
    late_ui = book.on_receipt(receipt(layer="ui"), 1)
    assert late_ui == LayerRecord(
        state="unconfirmed",
        reason="deadline",
        late=True,
        late_status="applied",
        settled_at=START + 3001,
    )
    assert states(book) == {"received": "unconfirmed", "ui": "unconfirmed"}


@pytest.mark.parametrize("then", ["deadline", "rejected"])
def test_a_ui_receipt_before_received_settles_nothing(then: str) -> None:
    """A page answers `received` first on the ordered port: a `ui: applied` that comes
    while `received` is pending is ignored (counted), so the command is never success
    when `received` then ends unconfirmed at its deadline or comes `rejected`."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    clock.advance(100)
    assert book.on_receipt(receipt(layer="ui"), 1) is None
    assert book.ignored == 1
    if then == "deadline":
        clock.advance(3000)
        book.expire()
        assert states(book) == {"received": "unconfirmed", "ui": "unconfirmed"}
    else:
        book.on_receipt(receipt(status="rejected", reason="future-revision"), 1)
        assert states(book) == {"received": "rejected", "ui": "rejected"}


def test_a_ui_receipt_exactly_at_receiveds_deadline_is_within_it_and_settles_nothing() -> None:
    """A deadline is inclusive (docs/protocol.md 8.6): a `ui` receipt that comes while
    `received` is pending, exactly at `received`'s deadline, is within it, so it is
    ignored and counted, and does not end `received`; the `received` receipt at that
    same instant is on time, and a `ui` receipt after it settles the ui layer."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    book.take_changed()
    clock.advance(3000)
    assert book.on_receipt(receipt(layer="ui"), 1) is None
    assert book.ignored == 1
    assert states(book) == {"received": "pending", "ui": "pending"}
    assert book.take_changed() == []
    assert book.on_receipt(receipt(), 1) == LayerRecord(
        state="applied", reason="ok", settled_at=START + 3000
    )
    assert book.on_receipt(receipt(layer="ui"), 1) == LayerRecord(
        state="applied", reason="ok", settled_at=START + 3000
    )
    assert states(book) == {"received": "applied", "ui": "applied"}
    assert book.ignored == 1


def test_a_ui_receipt_past_receiveds_deadline_ends_received_first() -> None:
    """A `ui` receipt that comes while `received` is pending but past its deadline
    (expire() has not run): `received` ends unconfirmed, and the `ui` receipt is
    recorded late on the layer that ended with it, never as success."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    clock.advance(3001)
    late_ui = book.on_receipt(receipt(layer="ui"), 1)
    assert late_ui is not None
    assert (late_ui.state, late_ui.late, late_ui.late_status) == ("unconfirmed", True, "applied")
    assert states(book) == {"received": "unconfirmed", "ui": "unconfirmed"}
    assert book.next_deadline() is None


def test_a_late_received_receipt_ends_the_ui_layer_even_before_expire_runs() -> None:
    """A `received` receipt past its deadline is late, and the `ui` layer ends
    unconfirmed with it, though the ui layer's own deadline is still to come."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    clock.advance(3001)
    book.on_receipt(receipt(), 1)
    assert book.get("cmd-1")["ui"] == LayerRecord(
        state="unconfirmed", reason="deadline", settled_at=START + 3001
    )
    late_ui = book.on_receipt(receipt(layer="ui"), 1)
    assert late_ui is not None
    assert (late_ui.state, late_ui.late, late_ui.late_status) == ("unconfirmed", True, "applied")


def test_a_late_receipt_is_recorded_as_late_and_never_as_success() -> None:
    """After unconfirmed, an applied receipt marks the layer late, still unconfirmed."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    clock.advance(3001)
    book.expire()
    record = book.on_receipt(receipt(), 1)
    assert record == LayerRecord(
        state="unconfirmed",
        reason="deadline",
        late=True,
        late_status="applied",
        settled_at=START + 3001,
    )


def test_a_receipt_past_the_deadline_is_late_even_before_expire_runs() -> None:
    """The deadline decides, not whether the timer has fired yet."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    clock.advance(3001)
    record = book.on_receipt(receipt(), 1)
    assert record is not None
    assert (record.state, record.late, record.late_status) == ("unconfirmed", True, "applied")


def test_a_receipt_exactly_at_the_deadline_counts() -> None:
    """The deadline is inclusive."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    clock.advance(3000)
    record = book.on_receipt(receipt(), 1)
    assert record is not None
    assert record.state == "applied"


@pytest.mark.parametrize(
    ("command_id", "connection_id"),
    [("cmd-unknown", 1), ("cmd-1", 2)],
)
def test_receipts_for_unknown_commands_or_other_connections_are_ignored(
    command_id: str, connection_id: int
) -> None:
    """An unknown command id, or a receipt from another connection, changes nothing."""
    book, _ = ledger()
    book.record("cmd-1", 1)
    assert book.on_receipt(receipt(command_id=command_id), connection_id) is None
    assert book.ignored == 1
    assert states(book) == {"received": "pending", "ui": "pending"}


def test_a_second_receipt_for_a_settled_layer_is_ignored() -> None:
    """The first answer stands; duplicates (and a second late one) are counted."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    book.on_receipt(receipt(status="not-found", reason="not-rendered"), 1)
    assert book.on_receipt(receipt(), 1) is None
    assert book.get("cmd-1")["received"].state == "not-found"
    book.record("cmd-2", 1)
    clock.advance(20_000)
    book.expire()
    late = book.on_receipt(receipt("cmd-2", status="rejected", reason="x"), 1)
    assert late is not None
    assert late.late_status == "rejected"
    assert book.ignored == 1
    assert book.on_receipt(receipt("cmd-2"), 1) is None
    assert book.get("cmd-2")["received"].late_status == "rejected"
    assert book.ignored == 2


def test_a_receipt_for_a_layer_not_recorded_is_ignored() -> None:
    """A command recorded without a ui layer ignores ui receipts."""
    book, _ = ledger()
    book.record("cmd-1", 1, layers=("received",))
    assert book.on_receipt(receipt(layer="ui"), 1) is None
    assert book.ignored == 1


# -- business actions: the server's answers, checks, a saved conversation -----------------


def _action(book: ReceiptLedger, command_id: str) -> None:
    """Record a business action as the assistant does: `received` and `business`."""
    book.record(command_id, -1, ("received", "business"), {"received": 1000, "business": 1000})


def test_settling_an_unknown_action_is_ignored_and_counted() -> None:
    """The server's answer for an action the ledger does not hold (never confirmed here,
    or forgotten) records nothing, is counted as ignored, and raises nothing."""
    book, _ = ledger()
    assert book.settle("act-9", "business", "applied", "done") is None
    assert book.ignored == 1
    with pytest.raises(KeyError):
        book.get("act-9")


def test_found_later_turns_only_a_late_not_found_into_a_late_applied() -> None:
    """A check that finds the flag after an earlier check found none records it late as
    applied. Any other layer (pending, settled on time, late with another status, never
    recorded) is left as it is: a check's answer never rewrites what the server said of
    the request itself, nor makes anything a success."""
    book, clock = ledger()
    for command_id in ("on-time", "late-rejected", "late-not-found"):
        _action(book, command_id)
        book.settle(command_id, "received", "applied", "confirmation-issued")
    book.settle("on-time", "business", "rejected", "no-permission")
    assert book.found_later("late-rejected", "business") is None  # still pending
    clock.advance(1001)
    book.expire()
    book.settle("late-rejected", "business", "rejected", "http-409")
    book.settle("late-not-found", "business", "not-found", "checked")
    before = {command_id: book.get(command_id) for command_id in ("on-time", "late-rejected")}
    for command_id in ("on-time", "late-rejected", "unknown"):
        assert book.found_later(command_id, "business") is None
    assert {command_id: book.get(command_id) for command_id in before} == before
    assert book.found_later("late-not-found", "ui") is None
    found = book.found_later("late-not-found", "business")
    assert found is not None
    assert (found.state, found.late, found.late_status) == ("unconfirmed", True, "applied")
    assert book.get("late-not-found")["business"] == found


def test_restore_never_replaces_a_recorded_command_nor_takes_a_pending_layer() -> None:
    """A saved conversation's action is restored with its layers as they ended: one the
    ledger records already keeps its own records, and one with a layer still pending
    (which no deadline would ever end) is not taken."""
    book, _ = ledger()
    _action(book, "act-1")
    book.settle("act-1", "received", "applied", "confirmation-issued")
    kept = book.get("act-1")
    lost = LayerRecord(state="unconfirmed", reason="assistant-reloaded")
    book.restore("act-1", -1, {"received": lost, "business": lost})
    assert book.get("act-1") == kept
    book.restore("act-2", -1, {"received": lost, "business": LayerRecord(state="pending")})
    with pytest.raises(KeyError):
        book.get("act-2")
    book.restore("act-3", -1, {"received": lost, "business": lost})
    late = book.settle("act-3", "business", "applied", "done")
    assert late is not None
    assert (late.state, late.late, late.late_status) == ("unconfirmed", True, "applied")


def test_dropping_a_connection_unconfirms_its_pending_layers() -> None:
    """A reload leaves in-flight commands unconfirmed; other connections are untouched."""
    book, _ = ledger()
    book.record("cmd-1", 1)
    book.record("cmd-2", 2)
    book.on_receipt(receipt(), 1)
    book.drop_connection(1)
    assert states(book, "cmd-1") == {"received": "applied", "ui": "unconfirmed"}
    assert book.get("cmd-1")["ui"].reason == "connection-closed"
    assert states(book, "cmd-2") == {"received": "pending", "ui": "pending"}


def test_next_deadline_is_the_earliest_pending_one() -> None:
    """The binding can set one timer for the earliest pending deadline."""
    book, clock = ledger()
    assert book.next_deadline() is None
    book.record("cmd-1", 1)
    clock.advance(500)
    book.record("cmd-2", 1, layers=("ui", "business"))
    assert book.next_deadline() == START + 3000
    book.on_receipt(receipt(), 1)
    assert book.next_deadline() == START + 10_000


def test_deadlines_are_configurable() -> None:
    """Custom deadlines apply per layer."""
    clock = FakeClock(START)
    book = ReceiptLedger(clock=clock, deadlines_ms={"received": 10, "ui": 20})
    book.record("cmd-1", 1)
    clock.advance(11)
    assert book.expire() == [("cmd-1", "received"), ("cmd-1", "ui")]
    book.record("cmd-2", 1)
    book.on_receipt(receipt("cmd-2"), 1)
    clock.advance(20)
    assert book.expire() == []
    clock.advance(1)
    assert book.expire() == [("cmd-2", "ui")]


def test_recording_twice_or_without_a_deadline_is_a_local_error() -> None:
    """A command id is recorded once, and only for layers with a deadline."""
    book = ReceiptLedger(clock=FakeClock(), deadlines_ms={"received": 10})
    book.record("cmd-1", 1, layers=("received",))
    with pytest.raises(LocalProtocolError, match="already recorded"):
        book.record("cmd-1", 1, layers=("received",))
    with pytest.raises(LocalProtocolError, match="no deadline"):
        book.record("cmd-2", 1)


def test_get_of_an_unknown_command_raises_key_error() -> None:
    """get() names only recorded commands."""
    book, _ = ledger()
    with pytest.raises(KeyError):
        book.get("nope")


STATUSES: list[ReceiptStatus] = ["applied", "stale-context", "not-found", "rejected"]
EVENTS = st.one_of(
    st.tuples(st.just("receipt"), st.sampled_from(["received", "ui"]), st.sampled_from(STATUSES)),
    st.tuples(st.just("advance"), st.integers(0, 6000)),
    st.tuples(st.just("expire")),
)


@pytest.mark.scenario(3)
@settings(max_examples=300)
@given(events=st.lists(EVENTS, max_size=12))
def test_a_settled_layer_never_changes_and_a_late_receipt_is_never_success(
    events: list[tuple[Any, ...]],
) -> None:
    """For any order of receipts, clock moves and expiries: a layer leaves pending once and
    keeps that outcome; a receipt after its deadline leaves the layer unconfirmed, marked
    late with its status; nothing unconfirmed becomes success."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    deadline = {"received": START + 3000, "ui": START + 10_000}
    settled: dict[str, LayerRecord] = {}
    for event in events:
        before = dict(book.get("cmd-1"))
        if event[0] == "advance":
            clock.advance(event[1])
        elif event[0] == "expire":
            book.expire()
        else:
            _, layer, status = event
            book.on_receipt(receipt(layer=layer, status=status, reason="r"), 1)
            if before[layer].state == "pending" and clock() > deadline[layer]:
                late = book.get("cmd-1")[layer]
                assert (late.state, late.late, late.late_status) == ("unconfirmed", True, status)
        for layer, record in book.get("cmd-1").items():
            previous = settled.get(layer)
            if previous is not None:
                assert (record.state, record.reason, record.settled_at) == (
                    previous.state,
                    previous.reason,
                    previous.settled_at,
                )
                assert record.late >= previous.late
            if record.state != "pending":
                settled[layer] = record
            if record.state not in ("pending", "unconfirmed"):
                assert record.settled_at is not None
                assert record.settled_at <= deadline[layer]
            if record.late:
                assert record.state == "unconfirmed"


def test_the_ledger_forgets_the_oldest_settled_commands_past_its_capacity() -> None:
    """Past its capacity the ledger forgets the oldest commands whose layers all
    settled; pending ones stay, and a receipt for a forgotten command is ignored."""
    clock = FakeClock(START)
    book = ReceiptLedger(clock=clock, capacity=3)
    book.record("old-pending", 1)
    for index in range(3):
        book.record(f"done-{index}", 1)
        book.on_receipt(receipt(f"done-{index}"), 1)
        book.on_receipt(receipt(f"done-{index}", layer="ui"), 1)
    book.record("new", 1)
    with pytest.raises(KeyError):
        book.get("done-0")
    with pytest.raises(KeyError):
        book.get("done-1")
    assert states(book, "old-pending") == {"received": "pending", "ui": "pending"}
    assert states(book, "done-2") == {"received": "applied", "ui": "applied"}
    assert book.on_receipt(receipt("done-0", layer="ui"), 1) is None
    assert book.ignored == 1
    # Once settled, the pending command is the oldest and goes next.
    book.on_receipt(receipt("old-pending", status="not-found"), 1)
    book.record("newer", 1)
    with pytest.raises(KeyError):
        book.get("old-pending")


def test_deadlines_come_from_the_pending_commands_only() -> None:
    """next_deadline() and expire() look at pending layers; settled commands, however
    many, change neither."""
    book, clock = ledger()
    for index in range(50):
        book.record(f"done-{index}", 1)
        book.on_receipt(receipt(f"done-{index}"), 1)
        book.on_receipt(receipt(f"done-{index}", layer="ui"), 1)
    assert book.next_deadline() is None
    clock.advance(500)
    book.record("cmd-1", 1)
    assert book.next_deadline() == START + 500 + 3000
    book.on_receipt(receipt(), 1)
    assert book.next_deadline() == START + 500 + 10000
    clock.advance(20_000)
    assert book.expire() == [("cmd-1", "ui")]
    assert book.next_deadline() is None
    assert book.expire() == []


def test_take_changed_names_each_command_whose_records_changed_once() -> None:
    """Recorded, settled, expired and dropped commands are named, oldest change first;
    a receipt the ledger ignores changes nothing."""
    book, clock = ledger()
    book.record("cmd-1", 1)
    book.record("cmd-2", 2)
    assert book.take_changed() == ["cmd-1", "cmd-2"]
    assert book.take_changed() == []
    book.on_receipt(receipt("cmd-2"), 2)
    book.on_receipt(receipt("cmd-1"), 2)  # another connection: ignored
    assert book.take_changed() == ["cmd-2"]
    book.drop_connection(2)
    assert book.take_changed() == ["cmd-2"]
    assert states(book, "cmd-2") == {"received": "applied", "ui": "unconfirmed"}
    clock.advance(5000)
    assert book.expire() == [("cmd-1", "received"), ("cmd-1", "ui")]
    assert book.take_changed() == ["cmd-1"]


def test_no_answer_past_the_deadline_ends_the_layer_and_is_no_late_answer() -> None:
    """A business action's request that got no answer (`unconfirmed`, from the worker's
    timeout or a network failure) handled after its layer's deadline, before expire()
    ran: the layer ends unconfirmed with that reason, not late, as expire() would have
    ended it, and never as a late answer that said "unconfirmed"."""
    book, clock = ledger()
    layers = ("received", "business")
    book.record("act-1", -1, layers, {"received": 11_000, "business": 11_000})
    book.settle("act-1", "received", "applied", "confirmation-issued")
    book.start("act-1", "business")
    clock.advance(11_500)
    record = book.settle("act-1", "business", "unconfirmed", "timeout")
    assert record is not None
    assert (record.state, record.reason, record.late, record.late_status) == (
        "unconfirmed",
        "timeout",
        False,
        None,
    )
    assert not book.settling
    # An answer is still late past the deadline.
    book.record("act-2", -1, layers, {"received": 11_000, "business": 11_000})
    clock.advance(11_500)
    late = book.settle("act-2", "received", "applied", "confirmation-issued")
    assert late is not None
    assert (late.state, late.late, late.late_status) == ("unconfirmed", True, "applied")
