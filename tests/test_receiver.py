"""Tests for pagecontext.receiver: which contexts the assistant commits."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wire
from pagecontext.models import (
    MAX_SAFE_INTEGER,
    REFUSAL_REASONS,
    ContextMessage,
    SelectionClearedMessage,
)
from pagecontext.receiver import Accepted, ContextReceiver, Refused, Repeated
from strategies import MUTATIONS, contexts, mutants, stamped
from wire import without
from work import calls_for_each


def context(revision: object = 1, **changes: Any) -> dict[str, Any]:
    """A context from page-A / conv-1 at `revision`."""
    return wire.context(selectionRevision=revision, **changes)


def cleared(revision: object, **changes: Any) -> dict[str, Any]:
    """A selection-cleared from page-A / conv-1 at `revision`."""
    return wire.selection_cleared(selectionRevision=revision, **changes)


def bound() -> ContextReceiver:
    receiver = ContextReceiver()
    receiver.bind("page-A", "conv-1")
    return receiver


def test_a_valid_context_is_committed() -> None:
    """A context from the bound page and conversation is accepted and committed."""
    receiver = bound()
    result = receiver.receive(context(5))
    assert isinstance(result, Accepted)
    assert isinstance(result.message, ContextMessage)
    assert receiver.committed == result.message
    assert receiver.last_revision == 5


@pytest.mark.parametrize("older", [3, 4])
def test_same_or_older_revisions_never_overwrite(older: int) -> None:
    """A revision not above the last accepted, with another selection, is
    stale-revision; the commit stays."""
    receiver = bound()
    receiver.receive(context(4))
    committed = receiver.committed
    other = context(older)
    other["selection"] = {**other["selection"], "resourceRef": "row:other"}
    assert receiver.receive(other) == Refused("stale-revision")
    assert receiver.committed == committed
    assert receiver.last_revision == 4


@pytest.mark.parametrize(
    ("seen", "again"),
    [
        ({"open": 1}, {"open": True}),
        ({"amount": 1}, {"amount": 1.0}),
        ({"flags": [0, 1]}, {"flags": [False, True]}),
    ],
)
def test_the_last_revision_with_values_only_python_finds_equal_is_a_refusal(
    seen: dict[str, Any], again: dict[str, Any]
) -> None:
    """The same revision with `true` where `1` was (or `1.0`) is another selection,
    although Python finds them equal: stale-revision, counted, the commit stays."""
    receiver = bound()
    first = context(4)
    first["selection"] = {**first["selection"], "filters": seen}
    receiver.receive(first)
    committed = receiver.committed
    other = context(4, messageId="again-1")
    other["selection"] = {**other["selection"], "filters": again}
    assert receiver.receive(other) == Refused("stale-revision")
    assert receiver.committed == committed
    assert dict(receiver.counts) == {"stale-revision": 1}


def test_the_last_revision_sent_again_is_a_repeat_not_a_refusal() -> None:
    """The last context again (the page shares it again after a new conversation), or
    the last selection-cleared again: Repeated, nothing changes, nothing is counted."""
    receiver = bound()
    receiver.receive(context(4))
    committed = receiver.committed
    again = context(4, messageId="again-1")
    assert isinstance(receiver.receive(again), Repeated)
    assert (receiver.committed, receiver.last_revision) == (committed, 4)
    receiver.receive(cleared(5))
    assert isinstance(receiver.receive(cleared(5, messageId="again-2")), Repeated)
    assert receiver.receive(context(5)) == Refused("stale-revision")
    assert (receiver.committed, receiver.last_revision) == (None, 5)
    assert dict(receiver.counts) == {"stale-revision": 1}


def test_selection_cleared_uncommits_and_records_the_revision() -> None:
    """A cleared selection leaves nothing committed but moves the revision on."""
    receiver = bound()
    receiver.receive(context(1))
    result = receiver.receive(cleared(2))
    assert isinstance(result, Accepted)
    assert isinstance(result.message, SelectionClearedMessage)
    assert receiver.committed is None
    assert receiver.last_revision == 2
    assert receiver.receive(context(2)) == Refused("stale-revision")


def test_an_older_selection_cleared_changes_nothing() -> None:
    """A late selection-cleared does not erase a newer context."""
    receiver = bound()
    receiver.receive(context(3))
    assert receiver.receive(cleared(2)) == Refused("stale-revision")
    assert receiver.last_revision == 3
    assert receiver.committed is not None


def test_cleared_at_names_only_a_selection_cleared_taken_last() -> None:
    """`cleared_at` is (instance, revision) while the last message taken is a
    selection-cleared; None before any, and once a context comes after it."""
    receiver = bound()
    assert receiver.cleared_at is None
    receiver.receive(context(1))
    assert receiver.cleared_at is None
    receiver.receive(cleared(2))
    assert receiver.cleared_at == ("page-A", 2)
    receiver.receive(context(3))
    assert receiver.cleared_at is None


@pytest.mark.parametrize(
    ("instance", "revision", "taken"),
    [
        ("page-A", 4, True),  # newer than what the receiver holds
        ("page-B", 4, False),  # another page instance's
        ("page-A", 2, False),  # not newer
        ("page-A", 1, False),
    ],
)
def test_a_resumed_selection_cleared_moves_the_revision_only_forward(
    instance: str, revision: int, taken: bool
) -> None:
    """`resume_cleared` takes a saved selection-cleared as the last revision of the
    bound instance, with nothing committed, only if it is that instance's and newer;
    taken, the same selection-cleared again is a repeat and an older context stale."""
    receiver = bound()
    receiver.receive(context(2))
    receiver.resume_cleared(instance, revision)
    assert receiver.last_revision == (revision if taken else 2)
    if taken:
        assert receiver.committed is None
        assert isinstance(receiver.receive(cleared(revision)), Repeated)
        assert receiver.receive(context(revision - 1)) == Refused("stale-revision")
    else:
        assert receiver.committed is not None


def test_messages_before_binding_are_unbound() -> None:
    """Nothing is committed before the receiver knows its page instance."""
    receiver = ContextReceiver()
    assert receiver.receive(context(1)) == Refused("unbound")
    assert receiver.committed is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (context(1, pageInstanceId="page-OTHER"), "page-instance"),
        (context(1, conversationId="conv-OLD"), "conversation-mismatch"),
    ],
)
def test_messages_from_another_binding_are_refused(raw: dict[str, Any], reason: str) -> None:
    """Another page instance or an old conversation is refused and counted."""
    receiver = bound()
    assert receiver.receive(raw) == Refused(reason)
    assert receiver.counts == {reason: 1}
    assert receiver.last_revision == 0


def test_a_message_of_another_type_is_unexpected() -> None:
    """A command or receipt handed to the receiver is refused as unexpected-type."""
    receiver = bound()
    assert receiver.receive(wire.bye()) == Refused("unexpected-type")


def test_a_conversation_change_keeps_the_revision_sequence() -> None:
    """Rebinding the same page instance to a new conversation keeps the last revision."""
    receiver = bound()
    receiver.receive(context(7))
    receiver.bind("page-A", "conv-2")
    assert receiver.last_revision == 7
    assert receiver.receive(context(8)) == Refused("conversation-mismatch")
    assert isinstance(receiver.receive(context(8, conversationId="conv-2")), Accepted)
    assert receiver.receive(context(7, conversationId="conv-2")) == Refused("stale-revision")


def test_a_new_page_instance_starts_a_new_revision_sequence() -> None:
    """After a page reload, revision 1 of the new instance is accepted; the old one is refused."""
    receiver = bound()
    receiver.receive(context(40))
    receiver.rebind("page-B", "conv-1")
    assert receiver.committed is None
    assert receiver.last_revision == 0
    assert isinstance(receiver.receive(context(1, pageInstanceId="page-B")), Accepted)
    assert receiver.receive(context(41)) == Refused("page-instance")


def nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


def with_selection(**changes: Any) -> dict[str, Any]:
    return wire.with_selection(context(9), **changes)


HOSTILE = [
    pytest.param(without(context(9), "selection"), "malformed", id="missing-field"),
    pytest.param(context(9, extra=1), "malformed", id="extra-field"),
    pytest.param(context(9, pageInstanceId=["page-A"]), "malformed", id="wrong-type"),
    pytest.param(context(9, version=2), "unsupported-version", id="unknown-version"),
    pytest.param(context(9, version=1.0), "unsupported-version", id="version-float"),
    pytest.param(with_selection(resourceRef="r" * 257), "over-limit", id="long-id"),
    pytest.param(with_selection(filters={"a": "s" * 1025}), "over-limit", id="long-string"),
    pytest.param(
        with_selection(filters={f"k{i}": i for i in range(33)}), "over-limit", id="many-filters"
    ),
    pytest.param(
        with_selection(snapshot={f"k{i}": i for i in range(65)}), "over-limit", id="big-snapshot"
    ),
    pytest.param(with_selection(filters={"a": "s" * 20_000}), "too-large", id="oversize"),
    pytest.param(with_selection(filters={"a": nested(10)}), "too-deep", id="deep"),
    pytest.param(
        with_selection(filters={"__proto__": {"admin": True}}), "forbidden-key", id="proto"
    ),
    pytest.param(with_selection(filters={"a": object()}), "not-json", id="non-json"),
    pytest.param(with_selection(filters={"a": float("nan")}), "not-json", id="nan"),
    pytest.param(context(9.0), "malformed", id="revision-float"),
    pytest.param(context(-9), "malformed", id="revision-negative"),
    pytest.param(context("9"), "malformed", id="revision-string"),
    pytest.param(context(MAX_SAFE_INTEGER + 1), "malformed", id="revision-unsafe"),
]


@pytest.mark.parametrize(("raw", "reason"), HOSTILE)
def test_hostile_payloads_are_refused_and_change_nothing(raw: object, reason: str) -> None:
    """Each hostile payload is refused with its reason; state stays; a valid message still lands."""
    receiver = bound()
    receiver.receive(context(2))
    committed = receiver.committed
    assert receiver.receive(raw) == Refused(reason)
    assert receiver.committed == committed
    assert receiver.last_revision == 2
    assert receiver.counts == {reason: 1}
    assert isinstance(receiver.receive(context(3)), Accepted)
    assert receiver.last_revision == 3


revisions = st.one_of(
    st.integers(min_value=-3, max_value=12),
    st.integers(min_value=MAX_SAFE_INTEGER - 2, max_value=MAX_SAFE_INTEGER + 2),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=1, max_value=12).map(float),
    st.integers(min_value=1, max_value=12).map(str),
    st.booleans(),
    st.none(),
)


def is_valid_revision(revision: object) -> bool:
    return type(revision) is int and 1 <= revision <= MAX_SAFE_INTEGER


@settings(max_examples=200)
@given(st.lists(st.tuples(st.booleans(), revisions), max_size=30))
def test_revisions_never_go_backwards_and_the_maximum_is_committed(
    sequence: list[tuple[bool, object]],
) -> None:
    """For any interleaving, last_revision never decreases and equals the max valid revision."""
    receiver = bound()
    best = 0
    best_is_context = False
    for is_context, revision in sequence:
        previous = receiver.last_revision
        receiver.receive(context(revision) if is_context else cleared(revision))
        assert receiver.last_revision >= previous
        if is_valid_revision(revision) and isinstance(revision, int) and revision > best:
            best, best_is_context = revision, is_context
        assert receiver.last_revision == best
        if best_is_context:
            assert receiver.committed is not None
            assert receiver.committed.selection_revision == best
        else:
            assert receiver.committed is None


# -- acceptance: hostile payloads (16) and a flood of them (19) ---------------------------

# Contexts the bound receiver would accept as they are (after revision 2): any refusal of
# their mutants is the mutation's doing.
_AIM = {
    "page_instance_ids": st.just("page-A"),
    "conversation_ids": st.just("conv-1"),
    "revision": st.integers(3, MAX_SAFE_INTEGER),
}
ACCEPTABLE = st.one_of(contexts(**_AIM), stamped(types=("context",), **_AIM))


@pytest.mark.scenario(16)
@pytest.mark.parametrize("mutation", MUTATIONS)
@settings(max_examples=60)
@given(data=st.data())
def test_every_payload_mutation_is_refused_and_the_receiver_keeps_working(
    mutation: str, data: st.DataObject
) -> None:
    """Each mutation kind makes a committable context refused for its payload; the commit
    and revision stay, only that reason is counted, and the next valid context lands."""
    mutant = data.draw(mutants(ACCEPTABLE, kinds=(mutation,), refused_only=True))
    receiver = bound()
    receiver.receive(context(2))
    committed = receiver.committed
    result = receiver.receive(mutant.raw)
    assert isinstance(result, Refused)
    assert result.reason in REFUSAL_REASONS
    assert (receiver.committed, receiver.last_revision) == (committed, 2)
    assert receiver.counts == {result.reason: 1}
    assert isinstance(receiver.receive(context(3)), Accepted)
    assert receiver.last_revision == 3


def flood_message(index: int) -> object:
    """The index-th of a rotation of messages the bound receiver refuses."""
    kind = index % 12
    if kind == 0:  # the last revision with another selection: stale
        return wire.with_selection(context(2, messageId=f"bad{index}"), resourceRef=f"r{index}")
    if kind == 1:
        return context(index + 10, pageInstanceId="page-X")
    if kind == 2:
        return context(index + 10, conversationId="conv-X")
    if kind == 3:
        return context(float(index + 10))
    if kind == 4:
        return with_selection(filters={"__proto__": {"admin": True}, "n": index})
    if kind == 5:
        return with_selection(filters={"a": nested(20)})
    if kind == 6:
        return with_selection(filters={"a": "s" * 20_000})
    if kind == 7:
        return context(index + 10, version=2)
    if kind == 8:
        return with_selection(filters={"a": float("nan")})
    if kind == 9:
        return {"junk": index, "type": "context"}
    if kind == 10:
        return wire.command(messageId=f"c{index}")
    return [index, "x" * 100]


@pytest.mark.scenario(19)
def test_refusing_a_message_takes_no_more_work_after_thousands_refused() -> None:
    """Bounded in time, counted rather than timed: refusing 1,200 messages (each kind of
    the flood 100 times) makes as many function calls after 9,600 refused as after
    1,200, so a refusal's cost does not grow with the flood."""
    receiver = bound()
    receiver.receive(context(2))
    for index in range(1200):
        receiver.receive(flood_message(index))
    early = calls_for_each(receiver.receive, [flood_message(i) for i in range(1200, 2400)])
    for index in range(2400, 9600):
        receiver.receive(flood_message(index))
    late = calls_for_each(receiver.receive, [flood_message(i) for i in range(9600, 10_800)])
    assert late == early
    assert receiver.last_revision == 2


@pytest.mark.scenario(19)
def test_a_flood_of_refused_messages_keeps_memory_and_counters_bounded() -> None:
    """10,000 refused messages: counters only, no memory growth over 256 KiB, state kept,
    and the next valid context lands."""
    receiver = bound()
    receiver.receive(context(2))
    committed = receiver.committed
    # Traced from before the warm-up, so that memory it took and the flood frees counts.
    tracemalloc.start()
    try:
        for index in range(600):  # warm up: first-time allocations are not growth
            receiver.receive(flood_message(index))
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        for index in range(10_000):
            receiver.receive(flood_message(index))
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 256 * 1024
    assert sum(receiver.counts.values()) == 10_600
    assert set(receiver.counts) <= REFUSAL_REASONS | {
        "stale-revision",
        "page-instance",
        "conversation-mismatch",
        "unexpected-type",
    }
    assert (receiver.committed, receiver.last_revision) == (committed, 2)
    assert isinstance(receiver.receive(context(3)), Accepted)
