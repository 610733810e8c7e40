"""Tests for pagecontext.ledger: per-layer receipts, deadlines and late arrivals."""

from __future__ import annotations

import pytest

from pagecontext.errors import LocalProtocolError
from pagecontext.ledger import LayerRecord, ReceiptLedger
from pagecontext.models import ReceiptMessage, ReceiptStatus
from pagecontext.testing import FakeClock

START = 1_700_000_000_000.0


def receipt(
    command_id: str = "cmd-1",
    layer: str = "received",
    status: ReceiptStatus = "applied",
    reason: str = "ok",
) -> ReceiptMessage:
    return ReceiptMessage.model_validate(
        {
            "message_id": "r1",
            "page_instance_id": "page-A",
            "conversation_id": "conv-1",
            "command_id": command_id,
            "layer": layer,
            "status": status,
            "reason": reason,
        }
    )


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
    clock.advance(3000)
    assert book.expire() == []
    clock.advance(1)
    assert book.expire() == [("cmd-1", "received")]
    clock.advance(7000)
    assert book.expire() == [("cmd-1", "ui")]
    assert book.expire() == []
    assert book.get("cmd-1")["ui"] == LayerRecord(
        state="unconfirmed", reason="deadline", settled_at=START + 10_001
    )


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
    assert book.expire() == [("cmd-1", "received")]


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
