"""Tests for pagecontext.session: both parties end to end, joined by a ChannelPair."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import wire
from pagecontext.block import extract_lines, parse_block
from pagecontext.budget import DEFAULT_BUDGET
from pagecontext.errors import LocalProtocolError
from pagecontext.integration import LAYER_STATES, action_checkable
from pagecontext.ledger import LayerState, ReceiptLedger
from pagecontext.models import MAX_SAFE_INTEGER, Limits, Quantity
from pagecontext.session import (
    ACTION_DEADLINES_MS,
    ACTION_TIMEOUT_MS,
    UI_PENDING_MAX,
    ActionRequest,
    AssistantSession,
    ClosePort,
    PageSession,
    StartRun,
    ToEdge,
    ToPeer,
)
from pagecontext.testing import ChannelPair, FakeClock, Side, counter_ids

TOPOLOGIES: list[Side] = ["page", "assistant"]
ROWS = ["row:1", "row:2", "row:3"]
FILTERS: dict[str, Any] = {"region": ["EU", "UK"], "year": 2024, "open": True}
SHAREABLE = [("amount", "EUR"), ("status", None)]


def render_orders(pair: ChannelPair, *, generation: int = 1) -> None:
    pair.render("orders", ROWS, filters=FILTERS, generation=generation, shareable=SHAREABLE)


def select(pair: ChannelPair, ref: str = "row:2", amount: int = 1250) -> int:
    """Select a row on the page; return the revision the page issued."""
    pair.run("page", pair.page.on_select("orders", ref, {"amount": amount, "status": "open"}))
    revision = pair.last_edge("page", "selected")["revision"]
    assert isinstance(revision, int)
    return revision


def share(pair: ChannelPair) -> None:
    pair.run("page", pair.page.share())
    pair.pump()


def pin(pair: ChannelPair, ref: str) -> None:
    """Select `ref` on the page and share it: the assistant's chip, which Show me shows."""
    select(pair, ref)
    share(pair)


def sent_contexts(pair: ChannelPair) -> list[tuple[object, Any]]:
    """(selectionRevision, selection) of each context the page sent, in order."""
    return [(c["selectionRevision"], c["selection"]) for c in pair.sent_by("page", "context")]


def received_statuses(pair: ChannelPair) -> set[tuple[object, object]]:
    """The (status, reason) of the page's `received` receipts."""
    receipts = [r for r in pair.sent_by("page", "receipt") if r["layer"] == "received"]
    return {(r["status"], r["reason"]) for r in receipts}


def shared_pair(embedder: Side) -> ChannelPair:
    """A bound pair whose assistant has pinned row:2 of the orders table."""
    pair = ChannelPair(embedder=embedder)
    render_orders(pair)
    select(pair)
    share(pair)
    assert pair.assistant.pinned is not None
    return pair


def state(pair: ChannelPair) -> dict[str, Any]:
    return pair.last_edge("assistant", "state")


def chip(pair: ChannelPair) -> dict[str, Any]:
    value = state(pair)["chip"]
    assert isinstance(value, dict)
    return value


def layers(pair: ChannelPair, command_id: str) -> dict[str, tuple[str, str | None]]:
    """The ledger's (state, reason) per layer of one command."""
    return {
        layer: (record.state, record.reason)
        for layer, record in pair.assistant.ledger.get(command_id).items()
    }


def show(pair: ChannelPair) -> tuple[str, str]:
    """Press "Show me" (without delivering); return the highlight and locate command ids."""
    pair.run("assistant", pair.assistant.show())
    commands = pair.sent_by("assistant", "command")[-2:]
    assert [command["action"] for command in commands] == ["highlight", "locate"]
    return str(commands[0]["messageId"]), str(commands[1]["messageId"])


def envelope(pair: ChannelPair, kind: str, **fields: Any) -> dict[str, Any]:
    """A bare envelope of `kind`, stamped with the pair's identities unless overridden."""
    stamp = {
        "messageId": f"x-{kind}",
        "pageInstanceId": pair.page.page_instance_id,
        "conversationId": pair.assistant.conversation_id,
    }
    return wire.envelope(kind, **{**stamp, **fields})


# -- the handshake -----------------------------------------------------------------------


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_the_handshake_binds_both_sides_to_the_same_identities(embedder: Side) -> None:
    """Both sessions report `bound` and agree on page instance, conversation and peer."""
    pair = ChannelPair(embedder=embedder, page_instance_id="page-7", conversation_id="conv-3")
    assert [m for m in pair.page_edge if m["kind"] == "bound"] == [
        {"kind": "bound", "connection": 1}
    ]
    assert pair.last_edge("assistant", "bound") == {"kind": "bound", "connection": 1}
    assert state(pair)["bound"] is True
    page, assistant = pair.page.binding, pair.assistant.binding
    assert page is not None
    assert assistant is not None
    assert page.page_instance_id == assistant.page_instance_id == "page-7"
    assert page.conversation_id == assistant.conversation_id == "conv-3"
    assert page.peer_instance_id == "asst-1"
    assert assistant.peer_instance_id == "page-7"
    assert pair.page_closed == pair.assistant_closed == []


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_the_child_is_bound_only_by_the_embedders_bound(embedder: Side) -> None:
    """The child answers `connect` with `connected` and reports `connecting`, not
    `bound`. The embedder, once it has checked the nonce, sends `bound` before anything
    else; the child reports `bound` when it arrives, and a context queued before the
    handshake is then committed."""
    pair = ChannelPair(embedder=embedder, connect=False)
    render_orders(pair)
    select(pair)
    pair.run("page", pair.page.share())
    child: Side = "assistant" if embedder == "page" else "page"
    child_session = pair.assistant if child == "assistant" else pair.page
    pair.handshake(deliver=False)
    assert child_session.binding is None
    assert pair.last_edge(child, "connecting") == {"kind": "connecting"}
    with pytest.raises(KeyError):
        pair.last_edge(child, "bound")
    if child == "assistant":
        assert pair.assistant.edge_message("state")["connecting"] is True
    pair.pump(only=embedder)  # the embedder takes `connected`
    assert next(message["type"] for side, message in pair.sent if side == embedder) == "bound"
    assert child_session.binding is None
    pair.pump()
    assert child_session.binding is not None
    assert pair.last_edge(child, "bound") == {"kind": "bound", "connection": 1}
    assert pair.assistant.edge_message("state")["connecting"] is False
    assert pair.assistant.pinned is not None
    assert pair.assistant.pinned.selection_revision == 1


def test_a_connecting_child_that_leaves_says_bye_and_stops_connecting() -> None:
    """A child whose `connected` is out and whose embedder has not answered `bound` says
    `bye` for the binding it offered when its document goes away, and is then neither
    connecting nor bound: a late `bound` binds nothing."""
    assistant = AssistantSession(
        instance_id="asst-1", conversation_id="conv-1", clock=FakeClock(), new_id=counter_ids("a")
    )
    assistant.attach_port("child", wire.NONCE, {"role": "page", "pageInstanceId": "page-1"})
    assert assistant.connecting
    effects = assistant.bye()
    said = [e.message for e in effects if isinstance(e, ToPeer)]
    assert [(m["type"], m["pageInstanceId"], m["conversationId"]) for m in said] == [
        ("bye", "page-1", "conv-1")
    ]
    assert ClosePort("bye") in effects
    assert not assistant.connecting
    assistant.on_port_message(wire.bound(pageInstanceId="page-1", conversationId="conv-1"))
    assert assistant.binding is None


@pytest.mark.parametrize(
    ("first", "reason"),
    [
        ({**wire.bound(pageInstanceId="page-1", conversationId="conv-1"), "x": 1}, "not-bound"),
        (wire.bound(pageInstanceId="page-2", conversationId="conv-1"), "identity-mismatch"),
        (wire.context(pageInstanceId="page-1", conversationId="conv-2"), "identity-mismatch"),
    ],
)
def test_a_child_whose_embedder_does_not_answer_bound_closes_the_port(
    first: dict[str, object], reason: str
) -> None:
    """A first port message that is not valid, or is stamped for another page instance
    or conversation, closes the port, refused; the child is not bound and commits
    nothing."""
    assistant = AssistantSession(
        instance_id="asst-1", conversation_id="conv-1", clock=FakeClock(), new_id=counter_ids("a")
    )
    assistant.attach_port("child", wire.NONCE, {"role": "page", "pageInstanceId": "page-1"})
    effects = assistant.on_port_message(first)
    assert ClosePort(reason, refused=True) in effects
    assert ToEdge({"kind": "unbound"}) in effects
    assert assistant.binding is None
    assert assistant.pinned is None
    assert (
        assistant.on_port_message(wire.bound(pageInstanceId="page-1", conversationId="conv-1"))
        == []
    )
    assert assistant.binding is None


def test_an_embedder_that_predates_bound_binds_the_child_with_its_first_context() -> None:
    """An embedder from before `bound` sends its first context right after binding:
    the context binds the assistant child (`bound` on its edge) and is committed."""
    assistant = AssistantSession(
        instance_id="asst-1", conversation_id="conv-1", clock=FakeClock(), new_id=counter_ids("a")
    )
    assistant.attach_port("child", wire.NONCE, {"role": "page", "pageInstanceId": "page-1"})
    first = wire.context(pageInstanceId="page-1", conversationId="conv-1", selectionRevision=1)
    effects = assistant.on_port_message(first)
    assert ToEdge({"kind": "bound", "connection": 1}) in effects
    assert assistant.binding is not None
    assert assistant.pinned is not None
    assert assistant.pinned.selection_revision == 1


@pytest.mark.scenario(11)
@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_wrong_nonce_never_binds_and_closes_the_port(embedder: Side) -> None:
    """The embedder closes with nonce-mismatch; nothing the child sends then arrives."""
    pair = ChannelPair(embedder=embedder, connect=False)
    nonce = pair.handshake(child_nonce=pair.mint_nonce())
    embedder_session = pair.page if embedder == "page" else pair.assistant
    assert embedder_session.binding is None
    closed = pair.page_closed if embedder == "page" else pair.assistant_closed
    assert closed == ["nonce-mismatch"]
    edge = pair.page_edge if embedder == "page" else pair.assistant_edge
    assert all(message["kind"] != "bound" for message in edge)
    # Whatever the child shares goes nowhere.
    render_orders(pair)
    select(pair)
    share(pair)
    assert pair.assistant.pinned is None
    # The right nonce, too late: it had its one chance.
    child: Side = "assistant" if embedder == "page" else "page"
    wrong = pair.sent_by(child, "connected")[0]
    assert wrong["nonce"] != nonce
    assert embedder_session.on_port_message({**wrong, "nonce": nonce}) == []
    assert embedder_session.binding is None


@pytest.mark.scenario(11)
@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_missing_nonce_never_binds_and_the_child_closes(embedder: Side) -> None:
    """A child with no nonce in its URL closes with no-nonce and sends nothing."""
    pair = ChannelPair(embedder=embedder, connect=False)
    pair.handshake(child_nonce=None)
    child: Side = "assistant" if embedder == "page" else "page"
    assert (pair.page_closed if child == "page" else pair.assistant_closed) == ["no-nonce"]
    assert pair.sent == []
    assert pair.page.binding is None
    assert pair.assistant.binding is None


@pytest.mark.scenario(11)
@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_replayed_nonce_never_binds_again(embedder: Side) -> None:
    """A reloaded child presenting a spent nonce is refused with nonce-used."""
    pair = ChannelPair(embedder=embedder)
    spent = pair.sent_by("assistant" if embedder == "page" else "page", "connected")[0]["nonce"]
    assert isinstance(spent, str)
    pair.child_reloaded()
    pair.handshake(child_nonce=spent)
    embedder_session = pair.page if embedder == "page" else pair.assistant
    assert embedder_session.binding is None
    closed = pair.page_closed if embedder == "page" else pair.assistant_closed
    assert closed == ["child-reloaded", "nonce-used"]


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_the_embedder_refuses_to_mint_a_spent_nonce_again(embedder: Side) -> None:
    """Expecting a nonce twice is our own error, raised before anything is sent."""
    pair = ChannelPair(embedder=embedder)
    nonce = pair.sent_by("assistant" if embedder == "page" else "page", "connected")[0]["nonce"]
    assert isinstance(nonce, str)
    pair.child_reloaded()
    with pytest.raises(LocalProtocolError, match="nonce already used"):
        pair.handshake(nonce=nonce)


def test_a_rebound_child_binds_with_a_fresh_nonce() -> None:
    """After a child reload, a fresh nonce binds a new connection."""
    pair = ChannelPair(embedder="assistant")
    pair.reload_page("page-2")
    pair.handshake()
    assert pair.assistant.binding is not None
    assert pair.assistant.binding.connection_id == 2
    assert pair.assistant.binding.page_instance_id == "page-2"
    assert pair.last_edge("page", "bound") == {"kind": "bound", "connection": 1}


# -- sharing the selection ---------------------------------------------------------------


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_select_then_share_commits_exactly_that_revision(embedder: Side) -> None:
    """The chip shows the shared revision's object, snapshot values with units, filters."""
    pair = ChannelPair(embedder=embedder)
    render_orders(pair)
    select(pair, "row:1", amount=10)
    revision = select(pair, "row:2")
    share(pair)
    assert pair.assistant.pinned is not None
    assert pair.assistant.pinned.selection_revision == revision == 2
    pair.run("assistant", pair.assistant.show_preview(True))
    assert state(pair)["preview"].startswith("<pagecontext-instructions>")
    shown = chip(pair)
    assert shown.pop("key") == '["orders","orders","row:2"]'
    assert shown == {
        "revision": 2,
        "pageInstanceId": "page-1",
        "pageId": "orders",
        "componentId": "orders",
        "resourceRef": "row:2",
        "observedAt": "2023-11-14T22:13:20.000Z",
        "filters": [[name, value] for name, value in FILTERS.items()],
        # Pairs in the order the page declared the fields shareable.
        "snapshot": [["amount", {"value": 1250, "unit": "EUR"}], ["status", "open"]],
        "restored": False,
        "pageReloaded": False,
    }
    assert pair.last_edge("page", "shared") == {"kind": "shared", "revision": 2}
    assert (
        json.loads(pair.last_edge("assistant", "persist")["text"])["pinned"]["selectionRevision"]
        == 2
    )


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_share_before_binding_is_queued_and_sent_once_bound(embedder: Side) -> None:
    """share() while unbound waits; the handshake then sends the context exactly once."""
    pair = ChannelPair(embedder=embedder, connect=False)
    render_orders(pair)
    select(pair)
    pair.run("page", pair.page.share())
    assert pair.page_edge[-1] == {"kind": "share-queued"}
    assert pair.sent_by("page", "context") == []
    pair.handshake()
    assert len(pair.sent_by("page", "context")) == 1
    assert chip(pair)["resourceRef"] == "row:2"
    assert pair.assistant.pinned is not None
    assert pair.assistant.pinned.selection_revision == 1
    assert pair.pump() == 0  # nothing left to send
    assert [m["kind"] for m in pair.page_edge].count("shared") == 1


def test_nothing_is_shared_without_a_selection() -> None:
    """share() with no selection sends nothing and queues nothing."""
    pair = ChannelPair()
    pair.run("page", pair.page.share())
    assert pair.sent_by("page", "context") == []
    assert pair.page_edge == [{"kind": "bound", "connection": 1}]


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_an_older_or_equal_revision_never_overwrites_the_pinned_context(embedder: Side) -> None:
    """Replayed or repeated contexts are refused as stale-revision; the pin stays."""
    pair = ChannelPair(embedder=embedder)
    render_orders(pair)
    select(pair, "row:1")
    share(pair)
    select(pair, "row:3")
    share(pair)
    first, second = pair.sent_by("page", "context")
    # The same revision again: the page sends it once per binding and conversation.
    assert [e for e in pair.page.share() if isinstance(e, ToPeer)] == []
    pair.post("assistant", second)  # a repeat: the same selection, not refused
    pair.post("assistant", first)  # an older revision, replayed
    changed = {**second, "messageId": "x-1"}
    changed["selection"] = {**second["selection"], "resourceRef": "row:1"}  # type: ignore[dict-item]
    pair.post("assistant", changed)  # the same revision, different content
    pair.pump()
    assert pair.assistant.pinned is not None
    assert pair.assistant.pinned.selection_revision == 2
    assert chip(pair)["resourceRef"] == "row:3"
    assert state(pair)["refused"] == {"stale-revision": 2}


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_revision_sent_again_after_a_new_conversation_is_a_repeat(embedder: Side) -> None:
    """ "Ask AI" again on the same binding sends nothing; after a new conversation, or on
    a new binding, the revision goes again, and the assistant, which took it already,
    takes it as a repeat: nothing refused, the pinned context kept."""
    pair = shared_pair(embedder)
    share(pair)
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()  # the page sends it again at once, on the new conversation
    share(pair)
    pair.handshake()
    share(pair)
    sent = [(c["selectionRevision"], c["conversationId"]) for c in pair.sent_by("page", "context")]
    assert sent == [(1, "conv-1"), (1, "conv-2"), (1, "conv-2")]
    assert state(pair)["refused"] == {}
    assert chip(pair)["resourceRef"] == "row:2"


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_the_pages_edge_is_told_of_a_new_conversation(embedder: Side) -> None:
    """A new conversation reaches the page's edge (`conversation`, with its id), which
    takes the highlights of the conversation left off the page (docs/protocol.md 8.14);
    nothing of it before."""
    pair = shared_pair(embedder)
    show(pair)
    pair.pump()
    assert pair.dom.highlights
    assert not [m for m in pair.page_edge if m["kind"] == "conversation"]
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    told = [m for m in pair.page_edge if m["kind"] == "conversation"]
    assert told == [{"kind": "conversation", "conversationId": "conv-2"}]
    assert pair.dom.highlights == {}


@pytest.mark.parametrize("bad", ["", "conv 2", "x" * 65, "conv-2\n"])
def test_ids_that_no_peer_would_take_are_refused_before_anything_changes(bad: str) -> None:
    """A session's own ids go into every message it sends: one the protocol's models
    would refuse is a LocalProtocolError at once (not a pydantic error later), and a
    new conversation with one changes neither the log nor the binding."""
    with pytest.raises(LocalProtocolError, match="page_instance_id"):
        PageSession(page_instance_id=bad, clock=FakeClock(), new_id=counter_ids())
    with pytest.raises(LocalProtocolError, match="conversation_id"):
        AssistantSession(
            instance_id="asst-1", conversation_id=bad, clock=FakeClock(), new_id=counter_ids()
        )
    pair = shared_pair("page")
    before = (len(pair.assistant.composer.log), pair.assistant.conversation_id)
    with pytest.raises(LocalProtocolError, match="conversation_id"):
        pair.assistant.new_conversation(bad)
    assert (len(pair.assistant.composer.log), pair.assistant.conversation_id) == before
    binding = pair.assistant.binding
    assert binding is not None
    assert binding.conversation_id == before[1]


def test_a_new_conversation_starts_with_an_empty_log_and_the_row_still_pinned() -> None:
    """Asked and answered, then a new conversation: the log is empty (shown, saved and
    sent to the agent), the chip stays, and the next question carries the row's block
    again. While an answer runs, a new conversation is refused and the log kept."""
    pair = shared_pair("page")
    question = "Why is this row so high?"
    first = pair.assistant.ask(
        question, at="2026-01-01T00:00:00.000Z", shown=pair.assistant.shown_chip
    )
    [run] = [effect for effect in first if isinstance(effect, StartRun)]
    pair.run("assistant", first)
    refused = [ToEdge({"kind": "new-conversation-refused"})]
    assert pair.assistant.new_conversation("conv-2") == refused
    assert [entry["kind"] for entry in pair.assistant.composer.log] == ["question", "answer"]
    pair.run("assistant", pair.assistant.on_agent_end(run.run_id))
    # A Show me waiting for its receipts: the page stamps them with the conversation it
    # was sent in, which a new one would refuse.
    pair.run("assistant", pair.assistant.show())
    assert state(pair)["busy"] is True
    assert pair.assistant.new_conversation("conv-2") == refused
    pair.pump()
    assert state(pair)["command"]["ui"]["state"] == "applied"
    assert state(pair)["busy"] is False
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    assert pair.assistant.composer.log == []
    assert state(pair)["command"] is None
    assert state(pair)["refused"] == {}
    assert pair.assistant.ledger.ignored == 0
    saved = json.loads(pair.last_edge("assistant", "persist")["text"])
    assert saved["conversationId"] == "conv-2"
    assert saved["composer"]["log"] == []
    assert chip(pair)["resourceRef"] == "row:2"
    again = pair.assistant.ask(
        question, at="2026-01-01T00:01:00.000Z", shown=pair.assistant.shown_chip
    )
    [rerun] = [effect for effect in again if isinstance(effect, StartRun)]
    body = json.loads(rerun.body)
    assert body["threadId"] == "conv-2"
    [message] = body["messages"]
    block = message["content"].removesuffix("\n\n" + question)
    assert [line["type"] for line in parse_block(block)] == ["reference", "snapshot"]


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_context_that_crossed_a_new_conversation_is_sent_again_and_taken(
    embedder: Side,
) -> None:
    """The page shares a selection while the assistant starts a new conversation: the
    context, stamped with the old one, is refused; the page, told of the new one, sends
    it again stamped with it, and it is pinned, with no second "Ask AI"."""
    pair = ChannelPair(embedder=embedder)
    render_orders(pair)
    select(pair)
    pair.run("page", pair.page.share())  # on its way...
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))  # ...as this is
    pair.pump()
    assert state(pair)["refused"] == {"conversation-mismatch": 1}
    assert [c["conversationId"] for c in pair.sent_by("page", "context")] == ["conv-1", "conv-2"]
    assert pair.assistant.pinned is not None
    assert pair.assistant.pinned.conversation_id == "conv-2"
    assert chip(pair)["resourceRef"] == "row:2"


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_selection_shared_after_its_component_narrowed_is_a_new_revision(
    embedder: Side,
) -> None:
    """The table stops sharing `amount` after the row was shared: what the page sends
    of it next (here at once, on a new conversation) is a new revision without the
    field, which the assistant takes, so it no longer holds what the page stopped
    sharing; the same revision never goes out with two contents."""
    pair = shared_pair(embedder)
    pair.render("orders", ROWS, filters=FILTERS, generation=2, shareable=[("status", None)])
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    sent = sent_contexts(pair)
    assert [revision for revision, _ in sent] == [1, 2]
    assert sent[1][1]["snapshot"] == {"status": "open"}
    assert pair.assistant.pinned is not None
    assert pair.assistant.pinned.selection.snapshot == {"status": "open"}
    assert state(pair)["refused"] == {}
    assert pair.last_edge("page", "selected")["revision"] == 2


def test_what_a_component_declares_as_the_user_shares_decides_what_goes() -> None:
    """The table stops declaring `amount` and reports no render; the edge hands the
    declaration over with the share: the row goes as a new revision without the field,
    and the first revision, which held it, never goes."""
    pair = ChannelPair()
    render_orders(pair)
    select(pair)
    pair.page.declare("orders", [("status", None)])
    share(pair)
    sent = sent_contexts(pair)
    assert [(revision, s["snapshot"]) for revision, s in sent] == [(2, {"status": "open"})]


def test_a_narrowed_selection_is_checked_against_the_view_it_was_made_in() -> None:
    """The table re-renders with other filters and stops sharing `amount`: the narrowed
    revision still belongs to the view the row was selected in, so Show me on it is
    `stale-context` (`view-changed`), and nothing is highlighted."""
    pair = ChannelPair()
    pair.render("orders", ROWS, filters={"region": "EU"}, generation=1, shareable=SHAREABLE)
    select(pair)
    pair.render(
        "orders", ROWS, filters={"region": "US"}, generation=2, shareable=[("status", None)]
    )
    share(pair)
    assert [c["selectionRevision"] for c in pair.sent_by("page", "context")] == [2]
    pair.run("assistant", pair.assistant.show())
    pair.pump()
    assert received_statuses(pair) == {("stale-context", "view-changed")}
    assert pair.dom.highlights == {}


def test_a_component_taken_off_the_page_is_forgotten() -> None:
    """The page removes the orders table: its session keeps nothing of it, Show me on
    the pinned row is `stale-context` (`view-changed`) and highlights nothing, and a
    selection in it is refused; rendered again, it is a component as before."""
    pair = shared_pair("page")
    assert pair.page.diagnostics()["components"] == 1
    pair.page.on_gone(["orders"])
    assert pair.page.diagnostics()["components"] == 0
    pair.run("assistant", pair.assistant.show())
    pair.pump()
    assert received_statuses(pair) == {("stale-context", "view-changed")}
    assert pair.dom.highlights == {}
    pair.run("page", pair.page.on_select("orders", "row:1", {"status": "open"}))
    assert pair.last_edge("page", "select-refused")["resourceRef"] == "row:1"
    render_orders(pair)
    assert select(pair, "row:1") == 2
    assert pair.page.diagnostics()["components"] == 1


def test_nothing_of_a_selection_in_a_component_taken_off_leaves_with_it() -> None:
    """The row is selected, its table stops declaring `amount`, then is taken off the
    page before the user asks: the selection goes as a new revision with no snapshot,
    since no component declares anything of it now."""
    pair = ChannelPair()
    render_orders(pair)
    select(pair)
    pair.page.declare("orders", [("status", None)])
    pair.page.on_gone(["orders"])
    share(pair)
    sent = sent_contexts(pair)
    assert [(revision, s.get("snapshot")) for revision, s in sent] == [(2, None)]


def test_a_reloaded_assistant_is_sent_the_revision_again() -> None:
    """A new assistant document holds no context: the same revision goes to it."""
    pair = shared_pair("page")
    pair.reload_assistant("asst-2")
    pair.handshake()
    share(pair)
    assert [c["selectionRevision"] for c in pair.sent_by("page", "context")] == [1, 1]
    assert chip(pair)["resourceRef"] == "row:2"


# -- commands and receipts ---------------------------------------------------------------


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_show_highlights_and_locates_the_pinned_row(embedder: Side) -> None:
    """Both commands are applied at both layers and the fake DOM shows the focus."""
    pair = shared_pair(embedder)
    pair.dom.highlights["orders"] = {"row:1": "focus", "row:3": "related"}
    highlight, locate = show(pair)
    pair.pump()
    for command_id in (highlight, locate):
        assert layers(pair, command_id) == {
            "received": ("applied", "ok"),
            "ui": ("applied", "ok"),
        }
    assert pair.dom.highlights == {"orders": {"row:3": "related", "row:2": "focus"}}
    assert pair.dom.located == [("orders", "row:2")]
    # The user's own press: the keyboard's focus moves to the row.
    assert pair.dom.focused == ("orders", "row:2")
    command = state(pair)["command"]
    assert command["commandId"] == highlight
    assert command["received"]["state"] == "applied"
    assert command["ui"] == {"state": "applied", "reason": "ok", "late": False, "lateStatus": None}
    # The locate's receipts go with it, for the panel to name one that stands otherwise.
    assert command["locate"]["commandId"] == locate
    assert command["locate"]["ui"]["state"] == "applied"


def test_show_without_a_pinned_context_sends_nothing() -> None:
    """No chip, no command."""
    pair = ChannelPair()
    assert pair.assistant.show() == []


def test_show_after_the_chip_was_removed_sends_nothing() -> None:
    """The user took the chip back: Show me has nothing to point at, and the page is sent
    no command for the row."""
    pair = shared_pair("page")
    pair.run("assistant", pair.assistant.remove_chip(None))
    assert pair.assistant.show() == []
    assert pair.sent_by("assistant", "command") == []


def test_a_row_no_longer_rendered_is_not_found() -> None:
    """The page answers not-found when the pinned row left the DOM in the same view."""
    pair = shared_pair("page")
    pair.render("orders", ["row:1"], filters=FILTERS, shareable=SHAREABLE)
    highlight, _ = show(pair)
    pair.pump()
    assert layers(pair, highlight) == {
        "received": ("not-found", "not-rendered"),
        "ui": ("not-found", "not-rendered"),
    }
    assert pair.dom.highlights == {}


def test_a_changed_view_makes_the_command_stale() -> None:
    """New data in the component means the pinned revision no longer describes it."""
    pair = shared_pair("page")
    render_orders(pair, generation=2)
    highlight, _ = show(pair)
    pair.pump()
    assert layers(pair, highlight)["received"] == ("stale-context", "view-changed")
    assert pair.dom.highlights == {}


@pytest.mark.scenario(2)
@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_after_a_page_reload_show_is_stale_and_highlights_nothing(embedder: Side) -> None:
    """A new page instance refuses the old pin with stale-context/page-instance; the
    chip says its page has reloaded since, until the new page shares a selection."""
    pair = shared_pair(embedder)
    pinned = pair.assistant.pinned
    assert chip(pair)["pageReloaded"] is False
    pair.reload_page("page-2")
    render_orders(pair)
    pair.handshake()
    assert pair.page.binding is not None
    assert pair.assistant.binding is not None
    assert pair.assistant.binding.page_instance_id == "page-2"
    assert pair.assistant.pinned == pinned
    # The chip says its page has reloaded since.
    assert chip(pair)["pageInstanceId"] == "page-1"
    assert chip(pair)["pageReloaded"] is True
    highlight, locate = show(pair)
    pair.pump()
    for command_id in (highlight, locate):
        assert layers(pair, command_id) == {
            "received": ("stale-context", "page-instance"),
            "ui": ("stale-context", "page-instance"),
        }
    assert pair.dom.highlights == {}
    assert pair.dom.located == []
    assert all(message["kind"] != "apply" for message in pair.page_edge)
    select(pair)
    share(pair)
    assert (chip(pair)["pageInstanceId"], chip(pair)["pageReloaded"]) == ("page-2", False)


def test_a_child_reload_makes_in_flight_commands_unconfirmed() -> None:
    """Commands sent but not answered become unconfirmed; answered ones keep their receipt."""
    pair = shared_pair("assistant")
    done, _ = show(pair)
    pair.pump()
    highlight, locate = show(pair)
    pair.pump(only="page")  # the old page answers, but its receipts are still on the way
    old_receipts = pair.sent_by("page", "receipt")[-4:]
    assert {receipt["commandId"] for receipt in old_receipts} == {highlight, locate}
    pair.reload_page("page-2")
    assert pair.assistant_closed == ["child-reloaded"]
    assert state(pair)["bound"] is False
    for command_id in (highlight, locate):
        assert layers(pair, command_id) == {
            "received": ("unconfirmed", "connection-closed"),
            "ui": ("unconfirmed", "connection-closed"),
        }
    assert layers(pair, done)["ui"] == ("applied", "ok")
    assert state(pair)["command"]["ui"]["state"] == "unconfirmed"
    # The old connection's receipts arrive after the new page is bound: ignored, counted.
    pair.handshake()
    for receipt in old_receipts:
        pair.post("assistant", receipt)
    pair.pump()
    assert pair.assistant.ledger.ignored == 4
    assert state(pair)["ignoredReceipts"] == 4
    for command_id in (highlight, locate):
        record = pair.assistant.ledger.get(command_id)["received"]
        assert record.state == "unconfirmed"
        assert record.late is False


def test_the_log_shows_every_commands_receipts_as_the_ledger_has_them() -> None:
    """Only the commands whose receipts changed are copied into the log; after receipts,
    late receipts, deadlines and a dropped connection, every command in the log shows
    exactly the ledger's layers. (Each Show me is for another row: one pressed again for
    the same row takes the press before out of the log.)"""
    pair = shared_pair("assistant")
    show(pair)
    pair.pump()
    pin(pair, "row:1")
    late, _ = show(pair)
    pair.clock.advance(10_001)
    pair.run("assistant", pair.assistant.tick())
    pair.pump()  # the receipts come late
    pin(pair, "row:3")
    show(pair)
    pair.clock.advance(3001)
    pair.run("assistant", pair.assistant.tick())
    pin(pair, "row:1")  # its pump brings the receipts of the press before, late
    in_flight = show(pair)
    pair.pump(only="page")
    pair.reload_page("page-2")
    state(pair)
    commands = [entry for entry in pair.assistant.composer.log if entry["kind"] == "command"]
    assert len(commands) == 8
    for entry in commands:
        ledger = pair.assistant.ledger.get(str(entry["id"]))
        assert entry["received"] == _view(ledger["received"])
        assert entry["ui"] == _view(ledger["ui"])
    by_id = {entry["id"]: entry for entry in commands}
    assert by_id[late]["ui"] == {
        "state": "unconfirmed",
        "reason": "deadline",
        "late": True,
        "lateStatus": "applied",
    }
    assert {by_id[command_id]["ui"]["reason"] for command_id in in_flight} == {"connection-closed"}


def test_a_show_me_the_ledger_forgot_leaves_the_panel_without_a_receipt() -> None:
    """Once the ledger's capacity of newer commands came after the last Show me, its
    records are forgotten, and the panel shows no receipt for it (nothing breaks)."""
    pair = shared_pair("page")
    pair.assistant.ledger = ReceiptLedger(clock=pair.clock, capacity=2)
    highlight, _ = show(pair)
    pair.pump()
    assert state(pair)["command"]["ui"]["state"] == "applied"
    for index in range(3):
        pair.assistant.ledger.record(f"other-{index}", 1)
        pair.assistant.ledger.settle(f"other-{index}", "received", "rejected", "test")
    with pytest.raises(KeyError):
        pair.assistant.ledger.get(highlight)
    assert pair.assistant.state().message["command"] is None


def _view(record: Any) -> dict[str, Any]:
    """A layer record as the log shows it."""
    return {
        "state": record.state,
        "reason": record.reason,
        "late": record.late,
        "lateStatus": record.late_status,
    }


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_an_unanswered_command_becomes_unconfirmed_after_its_deadline(embedder: Side) -> None:
    """At 3 s the received layer is still pending; just past it, it is unconfirmed, and
    so is the ui layer, whose own deadline is later: the command is unconfirmed whole."""
    pair = shared_pair(embedder)
    highlight, _ = show(pair)
    pair.clock.advance(3000)
    assert pair.assistant.tick() == []
    assert layers(pair, highlight)["received"] == ("pending", None)
    pair.clock.advance(1)
    pair.run("assistant", pair.assistant.tick())
    assert layers(pair, highlight) == {
        "received": ("unconfirmed", "deadline"),
        "ui": ("unconfirmed", "deadline"),
    }
    assert state(pair)["command"]["received"]["state"] == "unconfirmed"
    assert state(pair)["command"]["ui"]["state"] == "unconfirmed"


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_late_applied_receipt_is_recorded_late_never_as_applied(embedder: Side) -> None:
    """Receipts after every deadline leave both layers unconfirmed, marked late."""
    pair = shared_pair(embedder)
    highlight, _ = show(pair)
    pair.clock.advance(10_001)
    pair.run("assistant", pair.assistant.tick())
    pair.pump()
    assert pair.dom.highlights == {"orders": {"row:2": "focus"}}  # the page did the work
    for layer in ("received", "ui"):
        record = pair.assistant.ledger.get(highlight)[layer]
        assert (record.state, record.late, record.late_status) == ("unconfirmed", True, "applied")
    assert state(pair)["command"]["ui"] == {
        "state": "unconfirmed",
        "reason": "deadline",
        "late": True,
        "lateStatus": "applied",
    }


def test_a_receipt_past_its_deadline_is_late_even_before_tick() -> None:
    """The deadline holds even if the timer has not fired yet; the ui receipt that
    follows a late received one is late too, though within the ui layer's own 10 s."""
    pair = shared_pair("page")
    highlight, _ = show(pair)
    pair.clock.advance(3001)
    pair.pump()
    for layer in ("received", "ui"):
        record = pair.assistant.ledger.get(highlight)[layer]
        assert (record.state, record.late, record.late_status) == ("unconfirmed", True, "applied")


def test_a_repeated_command_gets_its_original_receipt_and_is_not_applied_again() -> None:
    """The page answers a replayed commandId with the same receipt and does no UI work."""
    pair = shared_pair("page")
    highlight, _ = show(pair)
    pair.pump()
    original = pair.sent_by("assistant", "command")[-2]
    pair.dom.highlights.clear()
    pair.post("page", original)
    pair.pump()
    received = [r for r in pair.sent_by("page", "receipt") if r["commandId"] == highlight]
    assert [r["layer"] for r in received] == ["received", "ui", "received"]
    assert received[2] == received[0]
    assert pair.dom.highlights == {}
    assert pair.assistant.ledger.ignored == 1  # the ledger already has that layer


# -- conversation, bye, restore ----------------------------------------------------------


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_after_a_new_conversation_the_assistants_bye_unbinds_the_page(embedder: Side) -> None:
    """The binding's own messages carry the new conversation: the page takes the `bye`."""
    pair = shared_pair(embedder)
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    assert pair.last_edge("assistant", "conversation")["conversationId"] == "conv-2"
    [bye] = [e.message for e in pair.assistant.bye() if isinstance(e, ToPeer)]
    assert bye["conversationId"] == "conv-2"
    pair.page.on_port_message(bye)  # as the port delivers it before it closes
    assert pair.page.binding is None
    assert pair.page.diagnostics()["control"] == {}


def test_a_page_reloaded_after_a_new_conversation_binds_on_it() -> None:
    """The workbench's page reloads after a new conversation: its `connect` names the new
    conversation (as the edge learned it), the assistant binds it, and the page's
    contexts are taken."""
    pair = shared_pair("assistant")
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    pair.reload_page("page-2")
    pair.handshake()
    assert pair.page.binding is not None
    assert pair.page.binding.conversation_id == "conv-2"
    render_orders(pair)
    select(pair, "row:3")
    share(pair)
    assert pair.assistant.pinned is not None
    assert pair.assistant.pinned.selection.resource_ref == "row:3"


def test_a_new_conversation_while_the_connect_is_on_its_way_binds_and_switches() -> None:
    """The workbench's page reloads; its edge sends `connect` naming the conversation it
    knows, and the assistant starts a new one before the page's `connected` comes back
    echoing the old: the page binds (no `identity-mismatch`), is switched to the new
    conversation at once, and its contexts and commands work on it."""
    pair = shared_pair("assistant")
    pair.reload_page("page-2")
    connect = pair.connect_data()  # the edge's connect, naming conv-1
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    pair.handshake(connect=connect)
    assert pair.page.binding is not None
    assert pair.page.binding.conversation_id == "conv-2"
    assert pair.assistant.diagnostics()["control"] == {}
    render_orders(pair)
    select(pair, "row:3")
    share(pair)
    assert pair.sent_by("page", "context")[-1]["conversationId"] == "conv-2"
    assert chip(pair)["resourceRef"] == "row:3"
    highlight, _ = show(pair)
    pair.pump()
    assert layers(pair, highlight)["ui"][0] == "applied"


def test_a_binding_made_while_the_conversation_changed_switches_the_page_to_it() -> None:
    """The page embeds the assistant; the conversation changes while the assistant's
    `connected` waits for the page's `bound`: once bound, the page is told the new
    conversation, and commands of it are applied."""
    pair = ChannelPair(embedder="page")
    pair.child_reloaded()
    pair.handshake(deliver=False)
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    assert pair.page.binding is not None
    assert pair.page.binding.conversation_id == "conv-2"
    render_orders(pair)
    select(pair)
    share(pair)
    highlight, _ = show(pair)
    pair.pump()
    assert layers(pair, highlight)["ui"][0] == "applied"


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_new_conversation_rebinds_the_page(embedder: Side) -> None:
    """The assistant starts a new conversation: the page stamps it from then on, and a
    command still stamped with the old one is rejected, never applied."""
    pair = shared_pair(embedder)
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    assert pair.page.binding is not None
    assert pair.page.binding.conversation_id == "conv-2"
    stale = envelope(
        pair,
        "command",
        messageId="old-1",
        conversationId="conv-1",
        basisRevision=1,
        action="highlight",
        target={"componentId": "orders", "resourceRef": "row:2"},
        params={"tone": "focus"},
    )
    pair.post("page", stale)
    pair.pump()
    receipt = pair.sent_by("page", "receipt")[-1]
    assert (receipt["commandId"], receipt["status"], receipt["reason"]) == (
        "old-1",
        "rejected",
        "conversation-mismatch",
    )
    assert receipt["conversationId"] == "conv-2"
    assert pair.dom.highlights == {}
    highlight, _ = show(pair)
    pair.pump()
    assert layers(pair, highlight)["ui"][0] == "applied"
    select(pair, "row:3")
    share(pair)
    assert pair.sent_by("page", "context")[-1]["conversationId"] == "conv-2"
    assert chip(pair)["resourceRef"] == "row:3"


@pytest.mark.parametrize("conversation_id", [None, "conv-2"])
def test_an_assistant_back_in_another_conversation_takes_the_highlights_away(
    conversation_id: str | None,
) -> None:
    """The assistant reloads and binds again. In the same conversation (its saved state
    restored), the page keeps its highlights; in another (it had none saved), the page
    takes them away and tells its code, as for a `conversation` message (8.14)."""
    pair = shared_pair("page")
    show(pair)
    pair.pump()
    pair.reload_assistant("asst-2", conversation_id)
    pair.page_edge.clear()
    pair.handshake()
    told = [e for e in pair.page_edge if e.get("kind") == "conversation"]
    if conversation_id is None:
        assert told == []
    else:
        assert told == [{"kind": "conversation", "conversationId": conversation_id}]
    assert pair.page.binding is not None
    assert pair.page.binding.conversation_id == (conversation_id or "conv-1")


def test_a_conversation_message_for_another_page_instance_is_ignored() -> None:
    """Only this page instance's conversation message changes its conversation."""
    pair = shared_pair("page")
    other = {**envelope(pair, "conversation"), "conversationId": "conv-9"}
    pair.post("page", {**other, "pageInstanceId": "page-0"})
    pair.post("page", {**other, "x": 1})
    pair.pump()
    assert pair.page.binding is not None
    assert pair.page.binding.conversation_id == "conv-1"
    # The same message for this page instance does change it.
    pair.post("page", other)
    pair.pump()
    assert pair.page.binding.conversation_id == "conv-9"


@pytest.mark.parametrize("conversation_id", ["a b", "x" * 65, "conv\u2028two", "conv.2"])
def test_a_conversation_id_no_handshake_could_name_is_refused(conversation_id: str) -> None:
    """A new conversation's id follows `connect`'s rule (1-64 characters of
    [A-Za-z0-9_-], docs/protocol.md 8.1): another is refused as malformed, counted under
    control, and the page keeps its conversation."""
    pair = shared_pair("page")
    pair.post("page", {**envelope(pair, "conversation"), "conversationId": conversation_id})
    pair.pump()
    assert pair.page.binding is not None
    assert pair.page.binding.conversation_id == "conv-1"
    assert pair.page.diagnostics()["control"] == {"malformed": 1}


@pytest.mark.parametrize("embedder", TOPOLOGIES)
@pytest.mark.parametrize("receiver", TOPOLOGIES)
def test_bye_unbinds_the_side_that_receives_it(embedder: Side, receiver: Side) -> None:
    """`bye` closes the port and unbinds; nothing more is answered on it."""
    pair = shared_pair(embedder)
    pair.post(receiver, envelope(pair, "bye"))
    pair.pump()
    session = pair.page if receiver == "page" else pair.assistant
    assert session.binding is None
    assert (pair.page_closed if receiver == "page" else pair.assistant_closed) == ["bye"]
    if receiver == "page":
        assert pair.page_edge[-1] == {"kind": "unbound"}
        assert session.on_port_message(envelope(pair, "command")) == []
    else:
        assert state(pair)["bound"] is False
        assert pair.assistant.pinned is not None  # the chip survives the connection


def test_bye_makes_the_assistants_in_flight_commands_unconfirmed() -> None:
    """A peer's bye ends the connection its pending commands were sent on."""
    pair = shared_pair("page")
    highlight, _ = show(pair)
    pair.post("assistant", envelope(pair, "bye"))
    pair.pump(only="assistant")
    assert layers(pair, highlight)["received"] == ("unconfirmed", "connection-closed")


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_the_pages_bye_names_its_conversation_now_and_unbinds_the_assistant(
    embedder: Side,
) -> None:
    """The page's document goes away after the assistant switched to a new conversation:
    its `bye` names the page instance and that conversation (the assistant refuses any
    other, and would stay bound to a dead port), its port is closed and its edge told
    `unbound`; the assistant takes the bye and unbinds. Said again, unbound, the page
    sends nothing."""
    pair = shared_pair(embedder)
    pair.run("assistant", pair.assistant.new_conversation("conv-2"))
    pair.pump()
    effects = pair.page.bye()
    said = [e.message for e in effects if isinstance(e, ToPeer)]
    assert [(m["type"], m["pageInstanceId"], m["conversationId"]) for m in said] == [
        ("bye", "page-1", "conv-2")
    ]
    assert ClosePort("bye") in effects
    assert ToEdge({"kind": "unbound"}) in effects
    assert pair.page.binding is None
    assert not pair.page.connecting
    # As the port delivers it before it closes.
    assert ClosePort("bye") in pair.assistant.on_port_message(said[0])
    assert pair.assistant.binding is None
    assert pair.page.bye() == [ToEdge({"kind": "unbound"})]


def test_the_ui_receipts_a_page_waits_for_are_bounded_and_end_with_its_binding() -> None:
    """Applied commands whose UI work never reports back (a component that never renders
    after a refresh, a command the page took over and never answers) are remembered up to
    UI_PENDING_MAX, oldest dropped; a new binding starts with none: its `ui` receipts
    could settle nothing."""
    pair = shared_pair("page")
    page = pair.page
    revision = pair.last_edge("page", "selected")["revision"]
    ids = [f"r{index}" for index in range(UI_PENDING_MAX + 1)]
    for command_id in ids:
        raw = envelope(
            pair,
            "command",
            messageId=command_id,
            basisRevision=revision,
            action="refresh",
            target={"componentId": "orders"},
            params={},
        )
        applied = [e for e in page.on_port_message(raw) if isinstance(e, ToEdge)]
        assert [e.message["kind"] for e in applied] == ["apply"]
    assert page.on_ui_done(ids[0], "applied", "ok") == []  # dropped, the oldest
    [late] = page.on_ui_done(ids[1], "applied", "ok")
    assert isinstance(late, ToPeer)
    assert (late.message["layer"], late.message["commandId"]) == ("ui", ids[1])
    pair.handshake()
    assert pair.page.binding is not None
    assert page.on_ui_done(ids[2], "applied", "ok") == []


def test_a_field_the_page_stops_sharing_after_the_selection_does_not_leave() -> None:
    """The user selects a row while `amount` is shareable; the table renders again with
    only `status` shareable; then "Ask AI": the context carries `status`, not `amount`,
    and not `status` either once the page declares it with a unit it did not have."""
    pair = ChannelPair()
    render_orders(pair)
    select(pair)
    pair.render("orders", ROWS, filters=FILTERS, generation=1, shareable=[("status", None)])
    share(pair)
    [context] = pair.sent_by("page", "context")
    assert context["selection"]["snapshot"] == {"status": "open"}
    # A revision is shared once per binding: the same steps on a page of its own.
    other = ChannelPair()
    render_orders(other)
    select(other)
    other.render("orders", ROWS, filters=FILTERS, generation=1, shareable=[("status", "code")])
    share(other)
    [context] = other.sent_by("page", "context")
    assert "snapshot" not in context["selection"]


@pytest.mark.scenario(24)
def test_restore_pins_the_saved_context_and_sends_nothing() -> None:
    """A persisted pin comes back marked restored, with no message on the link."""
    saved = json.loads(shared_pair("page").last_edge("assistant", "persist")["text"])
    assert isinstance(saved, dict)
    pair = ChannelPair(page_instance_id="page-2", connect=False)
    pair.assistant.restore(saved)
    assert pair.pump() == 0
    assert pair.sent == []
    assert pair.assistant.pinned_restored is True
    restored = pair.assistant.state().message["chip"]
    assert isinstance(restored, dict)
    assert restored["restored"] is True
    assert restored["resourceRef"] == "row:2"
    assert restored["pageInstanceId"] == "page-1"
    assert restored["snapshot"] == [["amount", {"value": 1250, "unit": "EUR"}], ["status", "open"]]
    pair.handshake()
    assert chip(pair)["restored"] is True
    assert pair.sent_by("assistant", "command") == []


@pytest.mark.parametrize(
    "saved",
    [{}, {"pinned": None}, {"pinned": "x"}, {"pinned": {"type": "context"}}],
)
def test_restore_ignores_what_is_not_a_saved_context(saved: dict[str, object]) -> None:
    """A missing or malformed saved pin restores nothing."""
    assistant = AssistantSession(
        instance_id="asst-1", conversation_id="conv-1", clock=FakeClock(), new_id=counter_ids()
    )
    assistant.restore(saved)
    assert assistant.pinned is None
    assert assistant.pinned_restored is False


def _restored_with(*entries: dict[str, object], clock: FakeClock | None = None) -> AssistantSession:
    """An assistant that restored a saved conversation of `entries`."""
    assistant = AssistantSession(
        instance_id="asst-1",
        conversation_id="conv-1",
        clock=clock or FakeClock(),
        new_id=counter_ids(),
    )
    assistant.restore({"composer": {"log": list(entries)}})
    return assistant


_ACTION: dict[str, object] = {
    "kind": "action",
    "id": "act-1",
    "action": "flag",
    "resourceRef": "row:1",
    "taskId": "t-1",
    "note": None,
    "result": None,
}
_UNCONFIRMED = {"state": "unconfirmed", "reason": "timeout", "late": False}


@pytest.mark.parametrize(
    "layer",
    [
        {"state": []},
        {"state": {"a": 1}},
        {"state": 3},
        {"state": "unconfirmed", "late": "yes"},
        {"state": "unconfirmed", "reason": ["x"]},
        {"state": "unconfirmed", "late": True, "lateStatus": {}},
    ],
)
def test_a_saved_action_whose_receipt_is_damaged_restores_as_lost_with_the_old_document(
    layer: dict[str, object],
) -> None:
    """A saved business action whose layer's fields are of the wrong type (storage is the
    user's, and the browser's) restores as an action on its way when the assistant
    reloaded: the assistant starts rather than failing on every reload, and the action
    can be checked with the server, as its panel offers."""
    question = {"kind": "question", "id": "q-1", "question": "why?", "sent": "why?", "task": "t-1"}
    assistant = _restored_with(
        {**_ACTION, "decision": "confirmed", "received": layer, "business": layer}, question
    )
    assert [entry["id"] for entry in assistant.composer.log] == ["act-1", "q-1"]
    # As a request on its way when the assistant reloaded: unconfirmed, and the panel's
    # "Check with the server" (drawn by the same rule) asks the server.
    entry = assistant.composer.log[0]
    assert entry["business"] == {"state": "unconfirmed", "reason": "assistant-reloaded"}
    assert action_checkable(entry["business"])
    assert assistant.ledger.get("act-1")["business"].state == "unconfirmed"
    [check] = assistant.check_action("act-1")
    assert check.step == "check"
    assert assistant.state().message["kind"] == "state"


def test_only_a_confirmed_action_is_restored_as_on_its_way() -> None:
    """A proposal and a declined action sent nothing: whatever their saved layers hold,
    neither comes back checkable, and a proposal can still be confirmed; a confirmed one
    with no layers saved comes back as lost with the old document, and checkable."""
    damaged = {"state": []}
    assistant = _restored_with(
        {**_ACTION, "decision": "proposed", "received": damaged, "business": damaged},
        {**_ACTION, "id": "act-2", "decision": "declined", "business": _UNCONFIRMED},
        {**_ACTION, "id": "act-3", "decision": "confirmed", "received": None, "business": None},
    )
    for declined_or_proposed in ("act-1", "act-2"):
        with pytest.raises(KeyError):
            assistant.ledger.get(declined_or_proposed)
        assert assistant.check_action(declined_or_proposed) == []
    [confirm, *_] = assistant.confirm_action("act-1")
    assert isinstance(confirm, ActionRequest)
    assert confirm.step == "confirm"
    assert assistant.composer.log[2]["business"] == {
        "state": "unconfirmed",
        "reason": "assistant-reloaded",
    }
    [check] = assistant.check_action("act-3")
    assert check.step == "check"


def test_a_saved_line_about_a_failed_check_goes_once_nothing_is_left_to_check() -> None:
    """A state saved with "the last check got no answer" beside the server's last word
    ("flagged later") restores without that line; beside a layer still checkable, with
    it."""
    flagged = {"state": "unconfirmed", "reason": "timeout", "late": True, "lateStatus": "applied"}
    assistant = _restored_with(
        {**_ACTION, "decision": "confirmed", "business": flagged, "checkFailed": "timeout"},
        {
            **_ACTION,
            "id": "act-2",
            "decision": "confirmed",
            "business": _UNCONFIRMED,
            "checkFailed": "http-503",
        },
    )
    assert "checkFailed" not in assistant.composer.log[0]
    assert assistant.composer.log[1]["checkFailed"] == "http-503"


def test_a_check_that_never_ends_holds_the_next_back_only_for_its_timeout() -> None:
    """A check neither answered nor failed (its worker lost it) keeps a second press from
    sending another only until a request's own timeout has passed."""
    clock = FakeClock()
    assistant = _restored_with(
        {**_ACTION, "decision": "confirmed", "business": _UNCONFIRMED}, clock=clock
    )
    assert len(assistant.check_action("act-1")) == 1
    clock.advance(ACTION_TIMEOUT_MS - 1)
    assert assistant.check_action("act-1") == []
    clock.advance(1)
    assert len(assistant.check_action("act-1")) == 1


def _confirmed_flag(clock: FakeClock | None = None) -> AssistantSession:
    """An assistant whose restored proposal `act-1` the user confirmed, and whose
    confirmation the server issued: its flag request is out."""
    assistant = _restored_with({**_ACTION, "decision": "proposed"}, clock=clock)
    [confirm] = [e for e in assistant.confirm_action("act-1") if isinstance(e, ActionRequest)]
    assert confirm.step == "confirm"
    effects = assistant.on_action_answer("act-1", "confirm", 201, {"token": "tok-1"})
    [execute] = [e for e in effects if isinstance(e, ActionRequest)]
    assert execute.step == "execute"
    return assistant


_ITS_FLAG: dict[str, object] = {"id": 7, "actionId": "act-1", "ref": "row:1", "taskId": "t-1"}


@pytest.mark.parametrize(
    ("body", "state"),
    [
        ({"flag": _ITS_FLAG}, "applied"),
        ({}, "rejected"),
        ({"flag": None}, "rejected"),
        ({"flag": [_ITS_FLAG]}, "rejected"),
        ({"flag": "act-1"}, "rejected"),
        ({"flag": {**_ITS_FLAG, "taskId": "t-2"}}, "rejected"),
        ({"flag": {**_ITS_FLAG, "actionId": "act-2"}}, "rejected"),
    ],
)
def test_a_200_to_the_flag_request_is_success_only_with_this_actions_own_flag(
    body: dict[str, object], state: str
) -> None:
    """The server's 200 (not 201) says the flag existed already: the action is done only
    if the answer holds the flag made for this very action, its row and its task. No
    flag, one that is not an object, or another task's or action's flag is no success
    (`rejected`, with the status as its reason), and nothing fails on the way."""
    assistant = _confirmed_flag()
    assistant.on_action_answer("act-1", "execute", 200, body)
    record = assistant.ledger.get("act-1")["business"]
    assert record.state == state
    if state == "rejected":
        assert record.reason == "http-200"
        assistant.state()
        assert assistant.composer.entry("act-1", "action")["result"] is None


def test_declining_an_action_already_confirmed_or_unknown_changes_nothing() -> None:
    """Decline is for a waiting proposal only: pressed on an action whose requests are
    out (another tab, a stale panel), it leaves the action confirmed, its requests
    tracked and nothing to save; on an id the log does not hold, it does nothing."""
    assistant = _confirmed_flag()
    assert assistant.decline_action("act-1") == []
    assert assistant.composer.entry("act-1", "action")["decision"] == "confirmed"
    assert assistant.ledger.get("act-1")["business"].state == "pending"
    assert assistant.decline_action("act-9") == []
    assert assistant.confirm_action("act-9") == []


@pytest.mark.parametrize("decision", ["proposed", "declined"])
def test_a_confirmation_answer_for_an_action_never_confirmed_sends_no_flag_request(
    decision: str,
) -> None:
    """The user's confirmation is what sends the flag request: a confirmation token that
    arrives for an action still proposed or declined here (a stray answer, another tab's
    request), or for an id the log does not hold, is not used; nothing is recorded, and
    the decision stays the user's."""
    assistant = _restored_with({**_ACTION, "decision": decision})
    for action_id in ("act-1", "act-9"):
        effects = assistant.on_action_answer(action_id, "confirm", 201, {"token": "tok-1"})
        assert effects == []
        with pytest.raises(KeyError):
            assistant.ledger.get(action_id)
    assert assistant.composer.entry("act-1", "action")["decision"] == decision


def test_a_confirmation_answered_twice_sends_one_flag_request() -> None:
    """The confirmation's answer delivered again (a retried request) uses no second
    token: no second flag request goes out, and the flag request's deadline still counts
    from the one that did, so that no answer in its time is still `unconfirmed`."""
    clock = FakeClock()
    assistant = _confirmed_flag(clock)
    clock.advance(ACTION_DEADLINES_MS["business"] - 1)
    again = assistant.on_action_answer("act-1", "confirm", 201, {"token": "tok-2"})
    assert [e for e in again if isinstance(e, ActionRequest)] == []
    assert assistant.ledger.get("act-1")["received"].state == "applied"
    clock.advance(2)
    assistant.tick()
    business = assistant.ledger.get("act-1")["business"]
    assert (business.state, business.reason) == ("unconfirmed", "deadline")


def test_a_late_word_from_an_earlier_run_leaves_the_current_answer_alone() -> None:
    """The first run ended; the user asked again. What the worker reports of the first
    run afterwards (a transport failure, text it still held) is not the current run's:
    the current answer keeps running, and then finishes with its own text."""
    pair = shared_pair("page")
    at = "2026-01-01T00:00:00.000Z"
    [first] = [
        e
        for e in pair.assistant.ask("why?", at=at, shown=pair.assistant.shown_chip)
        if isinstance(e, StartRun)
    ]
    pair.run("assistant", pair.assistant.on_agent_end(first.run_id))
    [second] = [
        e
        for e in pair.assistant.ask("and now?", at=at, shown=pair.assistant.shown_chip)
        if isinstance(e, StartRun)
    ]
    stream = [
        {"type": "RUN_STARTED", "threadId": "conv-1", "runId": first.run_id},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "stale"},
    ]
    stale = "".join(f"data: {json.dumps(event)}\n\n" for event in stream)
    assert pair.assistant.on_agent_text(first.run_id, stale) == []
    assert pair.assistant.on_agent_failed(first.run_id, "timeout", "no answer") == []
    assert pair.assistant.answering == second.run_id
    current = pair.assistant.composer.entry(second.run_id, "answer")
    assert (current["state"], current["text"], current["error"]) == ("running", "", None)
    run = {"threadId": "conv-1", "runId": second.run_id}
    events = [
        {"type": "RUN_STARTED", **run},
        {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "fresh"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m2"},
        {"type": "RUN_FINISHED", **run},
    ]
    text = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    pair.run("assistant", pair.assistant.on_agent_text(second.run_id, text))
    current = pair.assistant.composer.entry(second.run_id, "answer")
    assert (current["state"], current["text"]) == ("done", "fresh")


def test_the_layer_states_the_panel_reads_are_the_ledgers() -> None:
    """integration.LAYER_STATES (read by the MicroPython panel, which has no typing) and
    ledger.LayerState name the same states."""
    assert get_args(LayerState) == LAYER_STATES


def test_a_saved_state_of_another_format_restores_nothing() -> None:
    """Each save names its format; a state of another one (a later build's, read after a
    rollback) restores neither the pin nor the conversation's log, and one saved before
    the format was written (the same shape, no `format`) restores both."""
    text = shared_pair("page").last_edge("assistant", "persist")["text"]
    assert text.startswith('{"format": 1, ')
    saved = json.loads(text)
    for found, restored in ((2, False), (True, False), ("1", False), (1, True), (None, True)):
        state = (
            {**saved, "format": found}
            if found is not None
            else {key: value for key, value in saved.items() if key != "format"}
        )
        assistant = AssistantSession(
            instance_id="asst-1", conversation_id="conv-1", clock=FakeClock(), new_id=counter_ids()
        )
        before = assistant.composer.log_version
        assistant.restore(state)
        assert assistant.pinned_restored is restored, found
        # The composer's log (empty in this state) is replaced only by a restore.
        assert (assistant.composer.log_version != before) is restored, found


def test_a_new_context_replaces_a_restored_pin() -> None:
    """Once the page shares, the chip is live again, no longer restored."""
    saved = json.loads(shared_pair("page").last_edge("assistant", "persist")["text"])
    assert isinstance(saved, dict)
    pair = ChannelPair(page_instance_id="page-2", connect=False)
    pair.assistant.restore(saved)
    pair.handshake()
    render_orders(pair)
    select(pair, "row:1")
    share(pair)
    assert chip(pair)["restored"] is False
    assert chip(pair)["pageInstanceId"] == "page-2"


def test_a_restored_pin_keeps_its_revision_from_the_page_it_came_from() -> None:
    """The assistant reloads beside the same page instance: the restored chip's revision
    is still the last one, so that revision with another selection, or an older one,
    replaces nothing (stale-revision), and a question asked on the chip carries what it
    shows; the page's own share of that revision makes the chip live again."""
    pair = shared_pair("page")
    select(pair, "row:1")
    share(pair)
    saved = json.loads(pair.last_edge("assistant", "persist")["text"])
    pinned = saved["pinned"]
    assert pinned["selectionRevision"] == 2
    pair.reload_assistant("asst-2")
    pair.assistant.restore(saved)
    pair.handshake()
    assert chip(pair)["restored"] is True
    shown = pair.assistant.shown_chip
    forged = json.loads(json.dumps(pinned))
    forged["messageId"] = "forged-1"
    forged["selection"]["snapshot"] = {"amount": {"value": 999, "unit": "EUR"}}
    older = json.loads(json.dumps(pinned))
    older["messageId"] = "forged-2"
    older["selectionRevision"] = 1
    for message in (forged, older):
        pair.post("assistant", message)
        pair.pump()
    assert pair.assistant.receiver.counts["stale-revision"] == 2
    assert chip(pair)["restored"] is True
    assert chip(pair)["snapshot"] == [
        ["amount", {"value": 1250, "unit": "EUR"}],
        ["status", "open"],
    ]
    assert pair.assistant.shown_chip == shown
    share(pair)
    assert pair.sent_by("page", "context")[-1]["selectionRevision"] == 2
    assert chip(pair)["restored"] is False
    assert chip(pair)["resourceRef"] == "row:1"
    assert pair.assistant.receiver.counts["stale-revision"] == 2


def test_a_restored_cleared_selection_keeps_its_revision_from_the_page_it_came_from() -> None:
    """The page cleared the selection it had shared, and the assistant reloads beside
    the same page instance, with no chip to restore: the cleared revision is still the
    last one, so the context of an older revision replaces nothing (stale-revision), and
    the same selection-cleared again is the page's repeat, not refused."""
    pair = shared_pair("page")
    [context] = pair.sent_by("page", "context")
    pair.run("page", pair.page.clear_selection())
    share(pair)
    saved = json.loads(pair.last_edge("assistant", "persist")["text"])
    assert saved["pinned"] is None
    assert saved["cleared"] == {"pageInstanceId": "page-1", "selectionRevision": 2}
    pair.reload_assistant("asst-2")
    pair.assistant.restore(saved)
    # Saved again before it binds: nothing of it is lost.
    again = json.loads(pair.assistant.edge_message("persist")["text"])
    assert again["cleared"] == saved["cleared"]
    pair.handshake()
    older = {**context, "messageId": "replayed-1"}
    pair.post("assistant", older)
    pair.pump()
    assert pair.assistant.receiver.counts["stale-revision"] == 1
    assert pair.assistant.pinned is None
    assert state(pair)["chip"] is None
    cleared = envelope(pair, "selection-cleared", selectionRevision=2, messageId="again-1")
    pair.post("assistant", cleared)
    pair.pump()
    assert sum(pair.assistant.receiver.counts.values()) == 1
    select(pair, "row:3")
    share(pair)
    assert pair.sent_by("page", "context")[-1]["selectionRevision"] == 3
    assert chip(pair)["resourceRef"] == "row:3"
    assert json.loads(pair.last_edge("assistant", "persist")["text"])["cleared"] is None


@pytest.mark.parametrize(
    "cleared",
    [
        "x",
        {"pageInstanceId": "page-1"},
        {"pageInstanceId": "page-1", "selectionRevision": True},
        {"pageInstanceId": "page-1", "selectionRevision": 0},
        {"pageInstanceId": "page-1", "selectionRevision": 2.0},
        {"pageInstanceId": "page-1", "selectionRevision": 2**53},
        {"pageInstanceId": 1, "selectionRevision": 2},
        {"pageInstanceId": "p" * 65, "selectionRevision": 2},
    ],
)
def test_a_saved_cleared_revision_that_is_not_one_restores_nothing(cleared: object) -> None:
    """A damaged `cleared` in the saved state is left out: it is not saved again, the
    receiver starts as without one, and a context of revision 1 from the page is
    taken."""
    pair = shared_pair("page")
    [context] = pair.sent_by("page", "context")
    pair.reload_assistant("asst-2")
    pair.assistant.restore({"pinned": None, "cleared": cleared})
    assert json.loads(pair.assistant.edge_message("persist")["text"])["cleared"] is None
    pair.handshake()
    pair.post("assistant", {**context, "messageId": "again-1"})
    pair.pump()
    assert pair.assistant.receiver.counts == {}
    assert chip(pair)["resourceRef"] == "row:2"


@pytest.mark.scenario(24)
def test_a_reloaded_assistant_shows_its_commands_receipts_and_sends_none_again() -> None:
    """Show me applied, and a second one still on its way, then the assistant reloads
    beside the same page: bound again and shared to, it sends no command, the applied
    ones are shown applied, and the one on its way `unconfirmed`, never applied anew."""
    pair = shared_pair("page")
    applied = show(pair)
    pair.pump()
    pin(pair, "row:3")  # another row: a press for the same one supersedes the one before
    on_its_way = show(pair)
    saved = json.loads(pair.last_edge("assistant", "persist")["text"])
    sent_before = len(pair.sent_by("assistant", "command"))
    pair.reload_assistant("asst-2")
    pair.assistant.restore(saved)
    pair.handshake()
    share(pair)
    assert chip(pair)["restored"] is False
    assert len(pair.sent_by("assistant", "command")) == sent_before
    commands = {e["id"]: e for e in pair.assistant.composer.log if e["kind"] == "command"}
    for command_id in applied:
        assert commands[command_id]["ui"]["state"] == "applied"
    for command_id in on_its_way:
        assert commands[command_id]["ui"] == {
            "state": "unconfirmed",
            "reason": "assistant-reloaded",
        }
    # The page's receipts for the commands on their way reach the new assistant's
    # ledger as receipts of no command it sent: they settle nothing.
    pair.pump()
    after = {e["id"]: e for e in pair.assistant.composer.log if e["kind"] == "command"}
    assert [after[command_id]["ui"]["state"] for command_id in on_its_way] == [
        "unconfirmed",
        "unconfirmed",
    ]
    assert len(pair.sent_by("assistant", "command")) == sent_before


@pytest.mark.scenario(22)
def test_a_question_on_a_snapshot_over_the_budget_sends_a_block_within_it() -> None:
    """What the model gets, as the assistant sends it: 13 shared fields of 1,000 `<`
    (within a message's 16 KiB, 78,000 characters once escaped) go in a run whose block
    is within the budget, each line within its own, every line parsing, and the elided
    values naming the tool that fetches them whole."""
    pair = ChannelPair()
    fields = [(f"note{n}", None) for n in range(13)]
    pair.render("orders", ROWS, shareable=fields)
    pair.run(
        "page", pair.page.on_select("orders", "row:2", {name: "<" * 1_000 for name, _ in fields})
    )
    share(pair)
    question = "Why is this row so high?"
    effects = pair.assistant.ask(
        question, at="2026-01-01T00:00:00.000Z", shown=pair.assistant.shown_chip
    )
    [start] = [effect for effect in effects if isinstance(effect, StartRun)]
    text = json.loads(start.body)["messages"][-1]["content"]
    assert text.endswith("\n\n" + question)
    block = text.removesuffix("\n\n" + question)
    assert len(block) <= DEFAULT_BUDGET.total_chars
    assert all(len(line) <= DEFAULT_BUDGET.per_item_chars for line in extract_lines(block))
    [reference, snapshot] = parse_block(block)
    assert reference["key"] == snapshot["key"]
    elided = json.dumps(snapshot["value"])
    assert '"fetchWith": "get_context_item"' in elided


@pytest.mark.scenario(14)
@pytest.mark.parametrize("reloaded", [True, False], ids=["page-reloaded", "same-page"])
def test_a_child_assistant_on_a_new_port_ignores_receipts_of_its_old_port(
    reloaded: bool,
) -> None:
    """Each port a child takes is a new connection: old receipts never confirm anything,
    whether the page reloaded meanwhile or not. With the same page instance and
    conversation (the child bound again), the old receipts carry every right stamp, and
    still confirm nothing, because their commands went out on the old connection."""
    pair = shared_pair("page")
    highlight, locate = show(pair)
    pair.pump(only="page")  # the page answers; its receipts are still on the way
    old_receipts = pair.sent_by("page", "receipt")[-4:]
    assert {r["pageInstanceId"] for r in old_receipts} == {pair.page.page_instance_id}
    if reloaded:
        pair.reload_page("page-2")
    pair.handshake()  # the same assistant document takes a second port
    assert pair.assistant.binding is not None
    assert pair.assistant.binding.connection_id == 2
    for receipt in old_receipts:
        pair.post("assistant", receipt)
    pair.pump()
    assert pair.assistant.ledger.ignored == 4
    for command_id in (highlight, locate):
        assert layers(pair, command_id) == {
            "received": ("unconfirmed", "connection-closed"),
            "ui": ("unconfirmed", "connection-closed"),
        }
        assert not pair.assistant.ledger.get(command_id)["received"].late


# -- hostile control messages -------------------------------------------------------------


@pytest.mark.scenario(16)
@pytest.mark.parametrize("embedder", TOPOLOGIES)
@pytest.mark.parametrize("receiver", TOPOLOGIES)
@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"messageId": wire.DROP}, id="no-message-id"),
        pytest.param({"protocol": wire.DROP, "version": wire.DROP}, id="bare"),
        pytest.param({"version": 2}, id="version-2"),
        pytest.param({"extra": 1}, id="extra-field"),
        pytest.param({"__proto__": {}}, id="proto-key"),
        pytest.param({"conversationId": 7}, id="wrong-type"),
        pytest.param({"pageInstanceId": "page-0"}, id="other-page-instance"),
        pytest.param({"conversationId": "conv-0"}, id="other-conversation"),
    ],
)
def test_a_bye_that_is_malformed_or_for_another_binding_closes_nothing(
    embedder: Side, receiver: Side, changes: dict[str, Any]
) -> None:
    """Only a valid bye stamped with the bound page instance and conversation closes; any
    other is refused and counted (docs/protocol.md 8.6a), both sides stay bound, and a
    highlight still gets `applied`."""
    pair = shared_pair(embedder)
    session = pair.page if receiver == "page" else pair.assistant
    before = session.refused
    pair.post(receiver, envelope(pair, "bye", **changes))
    pair.pump()
    assert session.refused == before + 1
    control = session.diagnostics()["control"]
    assert isinstance(control, dict)
    assert sum(control.values()) == 1, control
    assert pair.page_closed == pair.assistant_closed == []
    assert pair.page.binding is not None
    assert pair.assistant.binding is not None
    highlight, _ = show(pair)
    pair.pump()
    assert layers(pair, highlight) == {"received": ("applied", "ok"), "ui": ("applied", "ok")}


def test_a_receipt_that_does_not_parse_is_refused_and_counted() -> None:
    """A receipt with a status the protocol does not have settles nothing, and the
    assistant counts it by reason; so does a message of a type a page never sends."""
    pair = shared_pair("page")
    highlight, _ = show(pair)
    before = pair.assistant.refused
    bad = envelope(pair, "receipt", commandId=highlight, status="done")
    pair.assistant.on_port_message(bad)
    pair.assistant.on_port_message(envelope(pair, "command"))
    assert pair.assistant.refused == before + 2
    assert pair.assistant.diagnostics()["control"] == {"malformed": 1, "unexpected-type": 1}
    assert layers(pair, highlight)["received"][0] == "pending"


def test_a_session_checks_every_message_against_its_own_limits() -> None:
    """Control messages and receipts are held to the limits the session was given."""
    strict = Limits(max_id_chars=16, max_detail_chars=10)
    page = PageSession(
        page_instance_id="page-1", clock=FakeClock(), new_id=counter_ids("p"), limits=strict
    )
    connect = {"role": "assistant", "assistantInstanceId": "asst-1", "conversationId": "conv-1"}
    page.attach_port("child", wire.NONCE, connect)
    page.on_port_message(wire.bound(pageInstanceId="page-1", conversationId="conv-1"))
    page.on_port_message(wire.conversation(pageInstanceId="page-1", conversationId="c" * 17))
    assert page.binding is not None
    assert page.binding.conversation_id == "conv-1"
    page.on_port_message(wire.conversation(pageInstanceId="page-1", conversationId="c" * 16))
    assert page.binding.conversation_id == "c" * 16

    assistant = AssistantSession(
        instance_id="asst-1",
        conversation_id="conv-1",
        clock=FakeClock(),
        new_id=counter_ids("a"),
        limits=strict,
    )
    assistant.attach_port("child", wire.NONCE, {"role": "page", "pageInstanceId": "page-1"})
    assistant.on_port_message(wire.bound(pageInstanceId="page-1", conversationId="conv-1"))
    assistant.on_port_message(wire.context(pageInstanceId="page-1", selectionRevision=1))
    assistant.show()
    highlight = assistant.last_show
    assert highlight is not None
    receipt = wire.receipt(pageInstanceId="page-1", commandId=highlight)
    assistant.on_port_message({**receipt, "detail": "d" * 11})
    assert assistant.ledger.get(highlight)["received"].state == "pending"
    assistant.on_port_message({**receipt, "detail": "d" * 10})
    assert assistant.ledger.get(highlight)["received"].state == "applied"


# -- acceptance scenarios ----------------------------------------------------------------


def shared_message(pair: ChannelPair) -> dict[str, object]:
    """Share the page's current selection; return the context instead of sending it."""
    (message,) = [effect.message for effect in pair.page.share() if isinstance(effect, ToPeer)]
    return message


BURST = [f"row:{index}" for index in range(200)]


@pytest.mark.scenario(1)
@settings(max_examples=20)
@given(
    order=st.permutations(range(len(BURST))),
    shows=st.sets(st.integers(0, len(BURST) - 1), max_size=12),
    view_change=st.none() | st.integers(1, len(BURST) - 1),
)
# Both branches every run: "Show me" before the view changed (view-changed), and after.
@example(order=list(range(len(BURST))), shows={0, 3, 100, 160}, view_change=150)
def test_fast_switching_ends_on_the_last_revision_and_highlights_only_the_target(
    order: list[int], shows: set[int], view_change: int | None
) -> None:
    """200 selections shared in a burst arrive shuffled: after every delivery the assistant
    holds the newest revision delivered so far; a "Show me" for a superseded revision
    highlights exactly its own row, or nothing if the view changed since; the end is 200."""
    pair = ChannelPair()
    pair.render("orders", BURST, filters=FILTERS, shareable=SHAREABLE)
    contexts = []
    for index, row in enumerate(BURST):
        if index == view_change:  # new data: revisions from here on are in generation 2
            pair.render("orders", BURST, filters=FILTERS, generation=2, shareable=SHAREABLE)
        select(pair, row, amount=index)
        contexts.append(shared_message(pair))
    newest = -1
    for step, index in enumerate(order):
        pair.post("assistant", contexts[index])
        pair.pump()
        newest = max(newest, index)
        pinned = pair.assistant.pinned
        assert pinned is not None
        assert pair.assistant.receiver.last_revision == pinned.selection_revision == newest + 1
        assert pinned.selection.resource_ref == BURST[newest]
        if step in shows:
            focus_before = dict(pair.dom.highlights.get("orders", {}))
            highlight, _ = show(pair)
            pair.pump()
            if view_change is None or newest >= view_change:
                assert layers(pair, highlight)["ui"] == ("applied", "ok")
                assert pair.dom.highlights["orders"] == {BURST[newest]: "focus"}
            else:
                assert layers(pair, highlight)["received"] == ("stale-context", "view-changed")
                assert pair.dom.highlights.get("orders", {}) == focus_before
    assert pair.assistant.receiver.last_revision == len(BURST)
    assert chip(pair)["resourceRef"] == BURST[-1]
    targets = {
        command["messageId"]: command["target"]["resourceRef"]  # type: ignore[index]
        for command in pair.sent_by("assistant", "command")
    }
    applied = [message for message in pair.page_edge if message["kind"] == "apply"]
    assert all(message["resourceRef"] == targets[message["commandId"]] for message in applied)


@pytest.mark.scenario(3)
@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_context_arriving_after_a_newer_one_changes_nothing(embedder: Side) -> None:
    """A late context or selection-cleared is refused as stale; the pin and chip stay."""
    pair = ChannelPair(embedder=embedder)
    render_orders(pair)
    select(pair, "row:1")
    late = shared_message(pair)
    select(pair, "row:3")
    share(pair)
    pinned, shown = pair.assistant.pinned, chip(pair)
    persisted = pair.last_edge("assistant", "persist")
    pair.post("assistant", late)
    pair.post("assistant", envelope(pair, "selection-cleared", selectionRevision=1))
    pair.pump()
    assert pair.assistant.pinned == pinned
    assert chip(pair) == shown
    assert pair.last_edge("assistant", "persist") is persisted
    assert state(pair)["refused"] == {"stale-revision": 2}


@pytest.mark.scenario(3)
@pytest.mark.parametrize("status", ["not-found", "rejected", "applied"])
def test_a_receipt_arriving_after_a_newer_one_changes_nothing(status: str) -> None:
    """Once a layer has its answer, a later receipt for it (another outcome or the same)
    is ignored and counted; the record is unchanged."""
    pair = shared_pair("page")
    highlight, _ = show(pair)
    pair.pump()
    before = dict(pair.assistant.ledger.get(highlight))
    for layer in ("received", "ui"):
        late = envelope(pair, "receipt", messageId=f"late-{layer}", commandId=highlight)
        pair.post("assistant", {**late, "layer": layer, "status": status, "reason": "late"})
    pair.pump()
    assert dict(pair.assistant.ledger.get(highlight)) == before
    assert pair.assistant.ledger.ignored == 2
    assert state(pair)["command"]["ui"]["state"] == "applied"


@pytest.mark.scenario(3)
@pytest.mark.parametrize("embedder", TOPOLOGIES)
@pytest.mark.parametrize("tick_first", [True, False])
def test_a_receipt_after_its_deadline_is_late_and_never_success(
    embedder: Side, tick_first: bool
) -> None:
    """The page answers applied, but only after both deadlines: both layers stay
    unconfirmed, marked late with the status they carried, whether or not the timer fired."""
    pair = shared_pair(embedder)
    highlight, locate = show(pair)
    pair.pump(only="page")  # the page did the work; its receipts are on their way
    assert pair.dom.highlights == {"orders": {"row:2": "focus"}}
    pair.clock.advance(10_001)
    if tick_first:
        pair.run("assistant", pair.assistant.tick())
    pair.pump()
    pair.run("assistant", pair.assistant.tick())
    for command_id in (highlight, locate):
        for layer in ("received", "ui"):
            record = pair.assistant.ledger.get(command_id)[layer]
            assert (record.state, record.reason) == ("unconfirmed", "deadline")
            assert (record.late, record.late_status) == (True, "applied")
    assert state(pair)["command"]["received"]["state"] == "unconfirmed"


@pytest.mark.scenario(17)
@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_duplicate_command_id_gets_its_original_receipt_and_is_applied_once(
    embedder: Side,
) -> None:
    """A locate re-posted (also with another target) is answered with the original
    `received` receipt each time; the page scrolls once and sends one `ui` receipt."""
    pair = shared_pair(embedder)
    _, locate = show(pair)
    pair.pump()
    (original,) = [c for c in pair.sent_by("assistant", "command") if c["messageId"] == locate]
    for _ in range(3):
        pair.post("page", original)
    pair.post("page", {**original, "target": {"componentId": "orders", "resourceRef": "row:3"}})
    pair.pump()
    receipts = [r for r in pair.sent_by("page", "receipt") if r["commandId"] == locate]
    assert [r["layer"] for r in receipts] == ["received", "ui"] + ["received"] * 4
    assert all(receipt == receipts[0] for receipt in receipts[2:])
    assert pair.dom.located == [("orders", "row:2")]
    applied = [m for m in pair.page_edge if m["kind"] == "apply" and m["commandId"] == locate]
    assert len(applied) == 1
    assert layers(pair, locate) == {"received": ("applied", "ok"), "ui": ("applied", "ok")}


SELECTOR_LIKE = ["tr:nth-child(2)", "<img src=x onerror=alert(1)>", "*", "#id, .cls"]


@pytest.mark.scenario(18)
@pytest.mark.parametrize("rendered", SELECTOR_LIKE)
def test_a_selector_like_resource_ref_is_only_a_key_of_the_page_registry(rendered: str) -> None:
    """Of four selector- or HTML-shaped refs, only the one a row is registered under
    exactly is highlighted, on that row alone; the others are not-found."""
    pair = ChannelPair()
    pair.render("orders", ["row:1", rendered, "row:3"], filters=FILTERS, shareable=SHAREABLE)
    revision = select(pair, "row:1")
    for index, ref in enumerate(SELECTOR_LIKE):
        target = {"componentId": "orders", "resourceRef": ref}
        raw = envelope(pair, "command", messageId=f"sel-{index}", basisRevision=revision)
        pair.post(
            "page", {**raw, "action": "highlight", "target": target, "params": {"tone": "focus"}}
        )
    pair.pump()
    outcomes = {
        receipt["commandId"]: (receipt["status"], receipt["reason"])
        for receipt in pair.sent_by("page", "receipt")
        if receipt["layer"] == "received"
    }
    hit = f"sel-{SELECTOR_LIKE.index(rendered)}"
    assert outcomes == {
        f"sel-{index}": ("applied", "ok")
        if f"sel-{index}" == hit
        else ("not-found", "not-rendered")
        for index in range(len(SELECTOR_LIKE))
    }
    applied = [(m["commandId"], m["resourceRef"]) for m in pair.page_edge if m["kind"] == "apply"]
    assert applied == [(hit, rendered)]
    assert pair.dom.highlights == {"orders": {rendered: "focus"}}


@pytest.mark.scenario(18)
@pytest.mark.parametrize(
    ("action", "params"),
    [("eval", {}), ("write", {"value": "1"}), ("highlight", {"tone": "focus", "css": "x"})],
)
def test_a_command_outside_the_closed_set_is_rejected_by_the_page(
    action: str, params: dict[str, str]
) -> None:
    """The page answers rejected/malformed and does no UI work."""
    pair = shared_pair("page")
    raw = envelope(pair, "command", basisRevision=1, action=action, params=params)
    pair.post("page", {**raw, "target": {"componentId": "orders", "resourceRef": "row:2"}})
    pair.pump()
    (receipt,) = pair.sent_by("page", "receipt")
    assert (receipt["status"], receipt["reason"]) == ("rejected", "malformed")
    assert all(message["kind"] != "apply" for message in pair.page_edge)
    assert pair.dom.highlights == {}


@pytest.mark.scenario(3)
@pytest.mark.parametrize(
    "stamp", [{"conversationId": "old-conversation"}, {"pageInstanceId": "other-page"}]
)
def test_a_receipt_stamped_for_another_conversation_or_page_settles_nothing(
    stamp: dict[str, str],
) -> None:
    """A receipt for a known command, on the bound port, but stamped with an old
    conversation or another page instance, is refused and counted; the real one counts."""
    pair = shared_pair("page")
    highlight, _ = show(pair)
    forged = envelope(
        pair, "receipt", commandId=highlight, layer="received", status="applied", reason="ok"
    )
    pair.post("assistant", {**forged, **stamp})
    pair.pump(only="assistant")
    assert layers(pair, highlight)["received"] == ("pending", None)
    assert pair.assistant.ledger.ignored == 1
    pair.pump()
    assert layers(pair, highlight)["received"][0] == "applied"


@pytest.mark.scenario(20)
def test_the_panel_previews_exactly_the_block_the_model_would_get() -> None:
    """The chip carries the block for the pinned selection: the standing instruction in
    the trusted part, the reference then the snapshot as data, parseable back to items."""
    from pagecontext.block import extract_instructions, parse_block
    from pagecontext.composer import STANDING_INSTRUCTIONS

    pair = shared_pair("page")
    pair.run("assistant", pair.assistant.show_preview(True))
    preview = state(pair)["preview"]
    assert extract_instructions(preview) == [i.text for i in STANDING_INSTRUCTIONS]
    items = parse_block(preview)
    assert [item["type"] for item in items] == ["reference", "snapshot"]
    assert "row:2" in json.dumps(items[0])
    snapshot = items[1]["value"]
    assert isinstance(snapshot, dict)
    assert snapshot["values"] == {"amount": {"value": 1250, "unit": "EUR"}, "status": "open"}


def test_the_preview_is_composed_only_while_the_panel_shows_it() -> None:
    """Closed, "What the AI sees" is not in the panel's state, and a new context is not
    composed for it; opening it posts a state with the text, closing it drops the text."""
    pair = shared_pair("page")
    assert state(pair)["preview"] is None
    assert pair.assistant.composer._preview is None  # never composed
    pair.run("assistant", pair.assistant.show_preview(True))
    assert "row:2" in state(pair)["preview"]
    assert pair.assistant.show_preview(True) == []  # no change, no new state
    pair.run("assistant", pair.assistant.show_preview(False))
    assert state(pair)["preview"] is None
    assert state(pair)["chip"]["resourceRef"] == "row:2"


def test_port_messages_as_json_text_have_the_same_outcome_as_decoded_ones() -> None:
    """on_port_json (the worker's path, fast for contexts) commits, refuses and counts
    exactly as on_port_message does for the same messages."""
    pairs = [ChannelPair(), ChannelPair()]
    stamp = {"pageInstanceId": "page-1", "conversationId": "conv-1"}
    sequence = [
        wire.context(**stamp, selectionRevision=2),
        wire.with_selection(wire.context(**stamp, selectionRevision=2), resourceRef="x"),  # stale
        wire.context(**stamp, selectionRevision=2),  # the same again: a repeat
        wire.context(**stamp, selectionRevision=5, messageId="m-5"),
        wire.context(pageInstanceId="page-2", conversationId="conv-1", selectionRevision=9),
        wire.context(**stamp, selectionRevision=6, extra=1),
        wire.with_selection(wire.context(**stamp, selectionRevision=7), filters={"__proto__": 1}),
        wire.context(**stamp, selectionRevision=8, version=True),
        wire.selection_cleared(**stamp, selectionRevision=10),
        wire.receipt(**stamp),
        wire.context(**stamp, selectionRevision=11),
    ]
    outcomes = []
    for pair, as_text in zip(pairs, (False, True), strict=True):
        session = pair.assistant
        effects = [
            session.on_port_json(json.dumps(raw, separators=(",", ":")))
            if as_text
            else session.on_port_message(raw)
            for raw in sequence
        ]
        outcomes.append(
            (
                effects,
                session.receiver.last_revision,
                session.receiver.committed,
                session.diagnostics(),
            )
        )
    assert outcomes[0] == outcomes[1]
    effects, last_revision, committed, diagnostics = outcomes[1]
    assert last_revision == 11
    assert committed is not None
    assert diagnostics["contexts"] == {
        "stale-revision": 1,
        "page-instance": 1,
        "malformed": 1,
        "forbidden-key": 1,
        "unsupported-version": 1,
    }


@pytest.mark.parametrize(
    ("component", "values"),
    [
        ("orders", {"amount": float("inf")}),  # "1e999" as MicroPython's json reads it
        ("nowhere", {"amount": 1}),  # no such component
    ],
)
def test_a_selection_the_tracker_refuses_changes_nothing_and_says_why(
    component: str, values: dict[str, Any]
) -> None:
    """The page's own bad data is a refused select for the edge to count, never an
    exception out of the session: the revision and what is shared stay as they were,
    and the refusal carries the edge's number for the selection."""
    pair = ChannelPair()
    render_orders(pair)
    revision = select(pair)
    effects = pair.page.on_select(component, "row:1", values, seq=7)
    [refused] = [e.message for e in effects if isinstance(e, ToEdge)]
    assert refused["kind"] == "select-refused"
    assert "can't select" in str(refused["reason"])
    # The edge's number for the selection, so that it can tell it from a newer one.
    assert refused["seq"] == 7
    assert pair.page.tracker.latest_revision == revision
    current = pair.page.tracker.current
    assert current is not None
    assert current.resource_ref == "row:2"


@pytest.mark.parametrize(
    ("ref", "status", "filters", "fields"),
    [
        ("row:1", "x" * 1025, FILTERS, 0),  # a string over 1,024 characters
        ("r" * 257, "open", FILTERS, 0),  # a resourceRef over 256 characters
        ("row:1", "open", {f"f{i}": i for i in range(33)}, 0),  # 33 filters
        ("row:1", "open", FILTERS, 63),  # 65 shareable fields
    ],
)
def test_a_selection_whose_context_the_assistant_would_refuse_is_refused_on_the_page(
    ref: str, status: str, filters: dict[str, Any], fields: int
) -> None:
    """The assistant refuses a context over the protocol's limits and answers nothing:
    the page refuses such a selection when it is made (`select-refused`, naming the
    limits), so the page's selection, the chip and what a question is about stay the
    row selected before, rather than the page showing one row and the assistant
    another. One at the limits is taken and committed."""
    pair = ChannelPair()
    render_orders(pair)
    revision = select(pair)
    share(pair)
    shareable = [*SHAREABLE, *((f"extra{i}", None) for i in range(fields))]
    pair.render("orders", [*ROWS, ref], filters=filters, generation=2, shareable=shareable)
    values = {"amount": 7, "status": status, **{f"extra{i}": i for i in range(fields)}}
    effects = pair.page.on_select("orders", ref, values)
    [refused] = [e.message for e in effects if isinstance(e, ToEdge)]
    assert refused["kind"] == "select-refused"
    assert "over the limits the assistant applies" in str(refused["reason"])
    assert pair.page.tracker.latest_revision == revision
    share(pair)
    pinned = pair.assistant.pinned
    assert pinned is not None
    assert (pinned.selection_revision, pinned.selection.resource_ref) == (revision, "row:2")


def test_a_selection_holding_half_a_character_is_refused_on_the_page() -> None:
    """A value with a lone surrogate (which a JavaScript string may hold) is no JSON
    the assistant reads: the selection is refused (`select-refused`), not an internal
    error, and the one before it stays."""
    pair = ChannelPair()
    render_orders(pair)
    revision = select(pair)
    effects = pair.page.on_select("orders", "row:1", {"amount": 7, "status": "ab\ud83d"})
    [refused] = [e.message for e in effects if isinstance(e, ToEdge)]
    assert refused["kind"] == "select-refused"
    assert "half a character" in str(refused["reason"])
    assert pair.page.tracker.latest_revision == revision


@pytest.mark.parametrize(
    ("values", "filters", "named"),
    [
        ({"amount": MAX_SAFE_INTEGER + 1, "status": "open"}, FILTERS, "amount is 9007199254740992"),
        ({"amount": 1e300, "status": "open"}, FILTERS, "amount is 1e+300"),
        (
            {"amount": 7, "status": "open"},
            {"since": [1, -(2**60)]},
            "since is -1152921504606846976",
        ),
    ],
)
def test_a_selection_holding_a_number_javascript_cannot_hold_is_refused_on_the_page(
    values: dict[str, Any], filters: dict[str, Any], named: str
) -> None:
    """A number past Number.MAX_SAFE_INTEGER, in a value or in the view's filters, is
    refused when the selection is made (`select-refused`, naming it), not sent for the
    assistant to refuse; the selection before it stays, and the largest safe number is
    taken and committed."""
    pair = ChannelPair()
    render_orders(pair)
    revision = select(pair)
    pair.render("orders", ROWS, filters=filters, generation=2, shareable=SHAREABLE)
    effects = pair.page.on_select("orders", "row:1", values)
    [refused] = [e.message for e in effects if isinstance(e, ToEdge)]
    assert refused["kind"] == "select-refused"
    assert named in str(refused["reason"])
    assert pair.page.tracker.latest_revision == revision
    pair.render("orders", ROWS, filters=FILTERS, generation=3, shareable=SHAREABLE)
    pair.run("page", pair.page.on_select("orders", "row:1", {"amount": MAX_SAFE_INTEGER}))
    share(pair)
    pinned = pair.assistant.pinned
    assert pinned is not None
    assert pinned.selection.snapshot is not None
    assert pinned.selection.snapshot["amount"] == Quantity(value=MAX_SAFE_INTEGER, unit="EUR")


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_number_that_is_not_finite_is_refused_as_such(number: float) -> None:
    """NaN and the infinities are refused on the page as numbers no JSON holds, not
    named as numbers too large for JavaScript."""
    pair = ChannelPair()
    render_orders(pair)
    revision = select(pair)
    effects = pair.page.on_select("orders", "row:1", {"amount": number, "status": "open"})
    [refused] = [e.message for e in effects if isinstance(e, ToEdge)]
    assert refused["kind"] == "select-refused"
    assert "past the numbers JavaScript" not in str(refused["reason"])
    assert "invalid selection data" in str(refused["reason"])
    assert pair.page.tracker.latest_revision == revision


def test_a_selection_at_the_limits_is_taken_and_committed() -> None:
    """A value of exactly 1,024 characters and a resourceRef of 256: within the limits,
    the selection is taken and the assistant commits it."""
    pair = ChannelPair()
    ref = "r" * 256
    pair.render("orders", [*ROWS, ref], filters=FILTERS, generation=1, shareable=SHAREABLE)
    pair.run("page", pair.page.on_select("orders", ref, {"amount": 7, "status": "x" * 1024}))
    share(pair)
    pinned = pair.assistant.pinned
    assert pinned is not None
    assert pinned.selection.resource_ref == ref


def test_show_me_pressed_again_shows_once_and_keeps_the_conversation() -> None:
    """Hundreds of Show me after one question: each press supersedes the one before in
    the log, which holds the question and the last press's two commands, their receipts
    applied; nothing of the conversation is pushed out."""
    pair = shared_pair("page")
    pair.run(
        "assistant",
        pair.assistant.ask("why?", at="2026-05-01T09:30:00.000Z", shown=pair.assistant.shown_chip),
    )
    for _ in range(400):
        last = show(pair)
        pair.pump()
    log = pair.assistant.composer.log
    assert [entry["kind"] for entry in log] == ["question", "answer", "command", "command"]
    assert tuple(entry["id"] for entry in log[2:]) == last
    assert [entry["ui"]["state"] for entry in log[2:]] == ["applied", "applied"]  # type: ignore[index]
    assert pair.assistant.composer.earlier is False


def test_a_show_me_with_the_conversation_between_keeps_the_one_before() -> None:
    """Show me supersedes only the press right before it: with a question and its answer
    logged between the two, both presses stay in the log, in order."""
    pair = shared_pair("page")
    first = show(pair)
    pair.pump()
    pair.run(
        "assistant",
        pair.assistant.ask("why?", at="2026-05-01T09:30:00.000Z", shown=pair.assistant.shown_chip),
    )
    second = show(pair)
    pair.pump()
    ids = [entry["id"] for entry in pair.assistant.composer.log if entry["kind"] == "command"]
    assert ids == [*first, *second]


def test_a_message_the_worker_could_not_read_is_answered_when_its_id_can_be_read() -> None:
    """A command the worker could not read as plain data (a Map, undefined in it) is
    answered `rejected` with the worker's reason when its messageId can be read, counted
    once when it cannot; a control message is refused and counted."""
    pair = shared_pair("page")
    head = {"protocol": "pagecontext", "version": 1, "type": "command", "messageId": "u-1"}
    effects = pair.page.on_port_unreadable(head, "not-plain")
    [receipt] = [e.message for e in effects if isinstance(e, ToPeer)]
    assert (receipt["commandId"], receipt["status"], receipt["reason"]) == (
        "u-1",
        "rejected",
        "not-plain",
    )
    before = pair.page.refused
    assert pair.page.on_port_unreadable({"type": "command"}, "not-json") == []
    assert pair.page.refused == before + 1
    assert pair.page.on_port_unreadable({"type": "bye", "messageId": "b-1"}, "not-plain") == []
    assert pair.page.diagnostics()["control"] == {"not-plain": 1}
    assert pair.page.binding is not None


@pytest.mark.parametrize("embedder", TOPOLOGIES)
def test_a_cleared_selection_is_shared_and_the_assistant_holds_no_context(
    embedder: Side,
) -> None:
    """The user clears the selection, then asks: the page sends `selection-cleared` with
    the next revision, once; the assistant holds no context and shows no chip. Clearing
    with nothing selected does nothing."""
    pair = shared_pair(embedder)
    assert pair.assistant.pinned is not None
    pair.run("page", pair.page.clear_selection())
    share(pair)
    share(pair)
    [cleared] = pair.sent_by("page", "selection-cleared")
    assert cleared["selectionRevision"] == 2
    assert pair.assistant.pinned is None
    assert state(pair)["chip"] is None
    assert pair.page.clear_selection() == []
    select(pair, "row:3")
    share(pair)
    assert chip(pair)["resourceRef"] == "row:3"


def test_the_panel_is_told_a_removed_chip_apart_from_no_context() -> None:
    """`removed` says the pinned context's chip is one the user removed: while it is, and
    not once it is brought back, nor when another row's context is then cleared by the
    page (no chip, an older removal still standing: nothing was removed)."""
    pair = shared_pair("page")
    assert state(pair)["removed"] is False
    pair.run("assistant", pair.assistant.remove_chip(None))
    assert (state(pair)["chip"], state(pair)["removed"]) == (None, True)
    pair.run("assistant", pair.assistant.restore_chips())
    assert state(pair)["removed"] is False
    pair.run("assistant", pair.assistant.remove_chip(None))
    select(pair, "row:3")
    share(pair)
    assert chip(pair)["resourceRef"] == "row:3"
    assert state(pair)["removed"] is False
    pair.run("page", pair.page.clear_selection())
    share(pair)
    assert pair.assistant.pinned is None
    assert state(pair)["dismissed"]
    assert (state(pair)["chip"], state(pair)["removed"]) == (None, False)


def test_a_flag_request_that_failed_as_its_deadline_passed_can_be_checked() -> None:
    """The worker hands a flag request's failure (its 10 s timeout) to the session after
    the business layer's deadline (11 s) but before the deadline timer's tick, a worker
    busy for over a second: the action is unconfirmed with the failure's reason, no
    "late answer", and the user may still ask the server whether it was flagged."""
    from pagecontext.session import ACTION_DEADLINES_MS

    clock = FakeClock()
    assistant = AssistantSession(
        instance_id="asst-1", conversation_id="conv-1", clock=clock, new_id=counter_ids("a")
    )
    assistant.composer.record_action(
        "act-1", action="flag-for-review", resource_ref="row:1", note=None, task_id="t-1"
    )
    assistant.confirm_action("act-1")
    clock.advance(100)
    [execute] = [
        effect
        for effect in assistant.on_action_answer("act-1", "confirm", 201, {"token": "tok"})
        if isinstance(effect, ActionRequest)
    ]
    assert execute.step == "execute"
    clock.advance(ACTION_DEADLINES_MS["business"] + 500)
    assistant.on_action_failed("act-1", "execute", "timeout")
    assistant.state()
    business = assistant.composer.entry("act-1", "action")["business"]
    assert business == {
        "state": "unconfirmed",
        "reason": "timeout",
        "late": False,
        "lateStatus": None,
    }
    assert action_checkable(business)
    [check] = assistant.check_action("act-1")
    assert check.step == "check"
