"""Fuzz properties of the protocol core: whatever a peer posts, nothing raises, nothing
invalid is committed or applied, and the channel keeps working.

Each property runs under the hypothesis profile in force (tests/conftest.py): `ci` by
default, `fuzz` with PAGECONTEXT_FUZZ=1.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import wire
from pagecontext.errors import MessageRejected
from pagecontext.models import (
    MAX_SAFE_INTEGER,
    MESSAGE_ID_PATTERN,
    REFUSAL_REASONS,
    CommandMessage,
    ContextMessage,
    ConversationMessage,
    Message,
    ReceiptMessage,
    SelectionClearedMessage,
    dump_message,
    parse_context_json,
    parse_message,
)
from pagecontext.receiver import Accepted, ContextReceiver, Refused, Repeated
from pagecontext.resolver import CommandResolver
from pagecontext.session import AssistantSession
from pagecontext.testing import ChannelPair, FakeClock, FakeDom, Side, counter_ids
from pagecontext.tracker import ComponentView, FieldSpec, SelectionTracker
from strategies import (
    contexts,
    hostile,
    message_ids,
    messages,
    mutated,
    set_at,
    stamped,
)

_MESSAGE_ID = re.compile(MESSAGE_ID_PATTERN)


def readable_id(raw: object) -> str | None:
    """The messageId a receiver may echo: present, a string, and of the right pattern."""
    candidate = raw.get("messageId") if isinstance(raw, dict) else None
    return candidate if isinstance(candidate, str) and _MESSAGE_ID.fullmatch(candidate) else None


def outcome(raw: object) -> Message | MessageRejected:
    """The parsed message, or the refusal parse_message raised."""
    try:
        return parse_message(raw)
    except MessageRejected as rejected:
        return rejected


# -- parse_message ----------------------------------------------------------------------


@pytest.mark.scenario(16)
@given(case=st.one_of(messages().map(lambda raw: (True, raw)), hostile().map(lambda r: (False, r))))
def test_parse_message_refuses_only_with_message_rejected_and_accepted_messages_round_trip(
    case: tuple[bool, object],
) -> None:
    """Any input parses or raises MessageRejected; what parses dumps and re-parses equal."""
    well_formed, raw = case
    message = outcome(raw)
    if isinstance(message, MessageRejected):
        assert not well_formed
        assert message.reason in REFUSAL_REASONS
        assert message.message_id == readable_id(raw)
        return
    dumped = dump_message(message)
    again = parse_message(dumped)
    assert again == message
    assert dump_message(again) == dumped
    if well_formed:
        assert dumped == raw


def json_text(raw: object) -> str | None:
    """Compact JSON text of `raw`, as JSON.stringify writes it; None if it has none."""
    try:
        return json.dumps(raw, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None


@pytest.mark.scenario(16)
@given(raw=st.one_of(contexts(), mutated(contexts()), hostile(contexts())))
@example(raw=wire.context(version=True))
@example(raw=wire.context(version=1.0))
@example(raw=wire.without(wire.context(), "type"))
@example(raw=wire.with_selection(filters={"constructor": 1}))
def test_the_fast_context_path_agrees_with_parse_message(raw: object) -> None:
    """parse_context_json never accepts what parse_message refuses, returns the same model
    when it accepts, and accepts every valid context with no escapes in its text."""
    text = json_text(raw)
    if text is None:
        return
    fast = parse_context_json(text)
    slow = outcome(json.loads(text))
    if fast is not None:
        assert fast == slow
    elif "\\" not in text:
        assert not isinstance(slow, ContextMessage)


# -- the assistant's ContextReceiver ----------------------------------------------------

PAGE, CONVERSATION = "page-A", "conv-1"
_PAGES = st.sampled_from([PAGE, PAGE, "page-B"])
_CONVERSATIONS = st.sampled_from([CONVERSATION, CONVERSATION, "conv-0"])
_REVISIONS = st.one_of(st.integers(1, 12), st.integers(1, 12), st.just(MAX_SAFE_INTEGER))
# The receiver does not look at messageIds: a few fixed ones keep the draws cheap.
_RECEIVER_IDS = st.sampled_from(["m1", "m2", "m3"])
_RECEIVER_AIM: dict[str, Any] = {
    "message_id": _RECEIVER_IDS,
    "page_instance_ids": _PAGES,
    "conversation_ids": _CONVERSATIONS,
    "revision": _REVISIONS,
}
_AIMED_AT_RECEIVER = stamped(**_RECEIVER_AIM)
# Rich content is parse_message's business (above); here the identities and revisions
# matter, and cheap messages keep 2,000 sequences fast.
_AIMED_CONTEXTS = stamped(types=("context", "selection-cleared"), **_RECEIVER_AIM)


@pytest.mark.scenario(16)
@given(
    st.lists(
        st.one_of(
            _AIMED_CONTEXTS,
            _AIMED_CONTEXTS,
            mutated(_AIMED_CONTEXTS),
            hostile(st.one_of(_AIMED_CONTEXTS, _AIMED_AT_RECEIVER)),
        ),
        max_size=8,
    )
)
def test_the_receiver_commits_only_valid_newer_contexts_and_keeps_working(
    sequence: list[object],
) -> None:
    """No input raises; each commit validates and is newer; a fresh context lands after."""
    receiver = ContextReceiver()
    receiver.bind(PAGE, CONVERSATION)
    best = 0
    for raw in sequence:
        before = (receiver.last_revision, receiver.committed)
        result = receiver.receive(raw)
        if isinstance(result, Accepted):
            message = parse_message(raw)
            assert isinstance(message, ContextMessage | SelectionClearedMessage)
            assert message == result.message
            assert (message.page_instance_id, message.conversation_id) == (PAGE, CONVERSATION)
            assert message.selection_revision > best
            best = message.selection_revision
            expected = message if isinstance(message, ContextMessage) else None
            assert receiver.committed == expected
        elif isinstance(result, Repeated):
            # The last one again: its revision, and what it committed (or none).
            message = parse_message(raw)
            assert isinstance(message, ContextMessage | SelectionClearedMessage)
            assert message.selection_revision == best
            if isinstance(message, ContextMessage):
                assert receiver.committed is not None
                assert message.selection == receiver.committed.selection
            else:
                assert receiver.committed is None
            assert (receiver.last_revision, receiver.committed) == before
        else:
            assert isinstance(result, Refused)
            assert (receiver.last_revision, receiver.committed) == before
        assert receiver.last_revision == best
    if best < MAX_SAFE_INTEGER:
        fresh = wire.context(selectionRevision=best + 1)
        assert isinstance(receiver.receive(fresh), Accepted)
        assert receiver.committed == parse_message(fresh)


# -- the page's CommandResolver ---------------------------------------------------------

VIEW = ComponentView("sales", {"region": ("EU",)}, 1)
_RESOLVER_AIM: dict[str, Any] = {
    "message_id": st.sampled_from(["c1", "c2", "c3", "c4"]),
    "page_instance_ids": _PAGES,
    "conversation_ids": _CONVERSATIONS,
    "revision": st.integers(1, 6),
    "component_ids": st.sampled_from(["table", "table", "chart"]),
    "resource_refs": st.sampled_from(["row:1", "row:2", "row:9"]),
}
_AIMED_AT_RESOLVER = stamped(**_RESOLVER_AIM)
_AIMED_COMMANDS = stamped(types=("command",), **_RESOLVER_AIM)
# What the page does between commands: select a row, change the view, (un)render a row.
_PAGE_EVENTS = st.sampled_from(["select", "select", "new-view", "remove", "render"])


@pytest.mark.scenario(16)
@given(
    st.lists(
        st.tuples(
            st.one_of(
                _AIMED_COMMANDS,
                _AIMED_COMMANDS,
                mutated(_AIMED_COMMANDS),
                hostile(st.one_of(_AIMED_COMMANDS, _AIMED_AT_RESOLVER)),
            ),
            st.none() | _PAGE_EVENTS,
        ),
        max_size=8,
    )
)
def test_the_resolver_applies_only_valid_current_commands_and_keeps_working(
    sequence: list[tuple[object, str | None]],
) -> None:
    """No input raises; applied commands are valid, current, rendered and new; receipts valid."""
    tracker = SelectionTracker(page_instance_id=PAGE, clock=FakeClock(), history=3)
    tracker.declare_component("table", [FieldSpec("amount")])
    tracker.set_view("table", VIEW)
    tracker.select("table", "row:1", {"amount": 1})
    dom = FakeDom()
    dom.render("table", ["row:1", "row:2"])
    resolver = CommandResolver(tracker=tracker, rendered=dom, new_id=counter_ids("r"))
    resolver.bind(PAGE, CONVERSATION)
    applied: set[str] = set()
    generation = 1
    for raw, event in sequence:
        resolution = resolver.resolve(raw)
        receipt = resolution.receipt
        assert (receipt is None) == (readable_id(raw) is None)
        if receipt is not None:
            assert parse_message(dump_message(receipt)) == receipt
            assert isinstance(receipt, ReceiptMessage)
            assert (receipt.layer, receipt.command_id) == ("received", readable_id(raw))
            assert (receipt.page_instance_id, receipt.conversation_id) == (PAGE, CONVERSATION)
            if not resolution.replayed:
                assert (receipt.status == "applied") == (resolution.apply is not None)
        command = resolution.apply
        if command is not None:
            assert parse_message(raw) == command
            assert (command.page_instance_id, command.conversation_id) == (PAGE, CONVERSATION)
            basis, component = command.basis_revision, command.target.component_id
            assert basis <= tracker.latest_revision
            assert tracker.is_retained(basis)
            assert tracker.view_at(basis, component) == tracker.current_view(component)
            assert dom.is_rendered(component, command.target.resource_ref)
            assert command.command_id not in applied
            assert not resolution.replayed
            applied.add(command.command_id)
        if event == "select":
            tracker.select("table", "row:2", {"amount": 2})
        elif event == "new-view":
            generation += 1
            tracker.set_view("table", ComponentView("sales", {"region": ("EU",)}, generation))
        elif event == "remove":
            dom.remove("table", "row:1")
        elif event == "render":
            dom.render("table", ["row:1"])
    dom.render("table", ["row:1"])
    basis, _ = tracker.select("table", "row:1", {"amount": 3})
    fresh = wire.command(messageId="fresh", basisRevision=basis)
    resolution = resolver.resolve(fresh)
    assert resolution.apply == parse_message(fresh)
    assert resolution.receipt is not None
    assert resolution.receipt.status == "applied"


# -- both sessions, joined by a ChannelPair ----------------------------------------------

ROWS = ["row:1", "row:2", "row:3"]
_PAIR_PAGES = st.sampled_from(["page-1", "page-1", "page-0"])
_PAIR_CONVERSATIONS = st.sampled_from(["conv-1", "conv-1", "conv-0"])
# Prefixed ids never collide with the sessions' own ("a1", "p1", ...).
_FUZZ_IDS = message_ids().map(lambda text: f"fz{text}"[:64])
_AIMED = st.one_of(
    stamped(
        message_id=_FUZZ_IDS,
        page_instance_ids=_PAIR_PAGES,
        conversation_ids=_PAIR_CONVERSATIONS,
        revision=st.integers(1, 4),
        component_ids=st.sampled_from(["orders", "orders", "chart"]),
        resource_refs=st.sampled_from(ROWS),
    ),
    messages(
        message_id=_FUZZ_IDS, page_instance_ids=_PAIR_PAGES, conversation_ids=_PAIR_CONVERSATIONS
    ),
)


def legitimate(raw: object) -> bool:
    """A valid message stamped with the pair's identities that may change its state.

    A genuine `bye` closes, a genuine `conversation` moves the page to another
    conversation and a genuine context moves the revision on: they are not garbage.
    Valid commands stay in: the page answers them and the fresh command still applies.
    """
    message = outcome(raw)
    if isinstance(message, MessageRejected | CommandMessage):
        return False
    if message.page_instance_id != "page-1":
        return False
    # A conversation message names the new conversation: any id is genuine.
    return isinstance(message, ConversationMessage) or message.conversation_id == "conv-1"


# A pair per example makes this the slowest property: a fifth of the profile's examples,
# and at least 400 (ci: 400, fuzz: 10,000), keeps the ci suite within its minute.
SESSION_EXAMPLES = max(400, settings().max_examples // 5)


@pytest.mark.scenario(16)
@settings(max_examples=SESSION_EXAMPLES)
@given(
    embedder=st.sampled_from(["page", "assistant"]),
    sequence=st.lists(
        st.tuples(
            st.sampled_from(["page", "assistant"]),
            st.one_of(_AIMED, mutated(_AIMED), hostile(_AIMED)).filter(
                lambda raw: not legitimate(raw)
            ),
        ),
        max_size=8,
    ),
)
def test_sessions_survive_garbage_and_still_share_and_apply(
    embedder: Side, sequence: list[tuple[Side, object]]
) -> None:
    """Garbage into both sessions raises nothing and closes nothing; sharing and a
    highlight with an `applied` receipt still work afterwards."""
    pair = ChannelPair(embedder=embedder)
    pair.render("orders", ROWS, shareable=[("amount", "EUR")])
    pair.run("page", pair.page.on_select("orders", "row:1", {"amount": 1}))
    pair.run("page", pair.page.share())
    pair.pump()
    for side, raw in sequence:
        session = pair.page if side == "page" else pair.assistant
        pair.run(side, session.on_port_message(raw))
        pair.pump()
    assert pair.page_closed == pair.assistant_closed == []
    assert pair.page.binding is not None
    assert pair.assistant.binding is not None
    pair.run("page", pair.page.on_select("orders", "row:3", {"amount": 3}))
    pair.run("page", pair.page.share())
    pair.pump()
    pinned = pair.assistant.pinned
    assert pinned is not None
    assert (pinned.selection_revision, pinned.selection.resource_ref) == (2, "row:3")
    pair.run("assistant", pair.assistant.show())
    pair.pump()
    highlight = pair.assistant.last_show
    assert highlight is not None
    layers = pair.assistant.ledger.get(highlight)
    assert layers["received"].state == layers["ui"].state == "applied"
    assert pair.dom.highlights["orders"]["row:3"] == "focus"


# -- the assistant's saved state --------------------------------------------------------

# A saved state with an entry of every kind, each layer settled as a reload finds it: the
# storage it comes from is the browser's, which anything with the origin may write to.
_SETTLED_LAYER: dict[str, Any] = {"state": "unconfirmed", "reason": "timeout", "late": False}
_SAVED: dict[str, Any] = {
    "format": 1,
    "pinned": wire.context(),
    "composer": {
        "dismissed": {"keys": ["orders:row:9"], "groups": ["filters"]},
        "log": [
            {"kind": "question", "id": "q-1", "question": "why?", "sent": "why?", "task": "t-1"},
            {
                "kind": "answer",
                "id": "r-1",
                "state": "done",
                "text": "Because.",
                "about": "row:1",
                "toolCalls": [{"id": "call-1", "name": "highlight", "arguments": "{}"}],
                "error": None,
            },
            {
                "kind": "command",
                "id": "c-1",
                "action": "highlight",
                "resourceRef": "row:1",
                "received": {"state": "applied", "reason": "ok"},
                "ui": {"state": "applied", "reason": "ok"},
            },
            {
                "kind": "action",
                "id": "a-1",
                "action": "flag",
                "resourceRef": "row:1",
                "taskId": "t-1",
                "note": None,
                "decision": "confirmed",
                "result": None,
                "received": {"state": "applied", "reason": "confirmation-issued"},
                "business": _SETTLED_LAYER,
                "checkFailed": "http-503",
            },
        ],
    },
}
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: object, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every place in a JSON value, the value itself first."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


@given(data=st.data())
def test_a_damaged_saved_state_never_stops_the_assistant(data: st.DataObject) -> None:
    """Whatever one value of a saved state is replaced by, restoring it raises nothing, and
    the assistant then draws, saves and checks its actions as usual: a damaged state in
    storage never keeps the assistant from starting on every reload."""
    path = data.draw(st.sampled_from(_paths(_SAVED)))
    damaged = set_at(copy.deepcopy(_SAVED), path, data.draw(_JSON_VALUES))
    assistant = AssistantSession(
        instance_id="asst-1", conversation_id="conv-1", clock=FakeClock(), new_id=counter_ids()
    )
    assistant.restore(damaged)
    assert assistant.state().message["kind"] == "state"
    assert assistant.edge_message("persist")["kind"] == "persist"
    for entry in assistant.composer.log:
        assistant.check_action(str(entry.get("id")))
    assistant.restore_chips()
