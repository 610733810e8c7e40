"""Tests for pagecontext.handshake: nonce-bound binding on the port, both sides."""

from __future__ import annotations

from functools import partial

import pytest

import wire
from pagecontext.errors import HandshakeRejected, LocalProtocolError
from pagecontext.handshake import (
    SPENT_NONCES,
    Binding,
    BindState,
    ChildBinder,
    EmbedderBinder,
    bound_message,
    read_nonce,
)
from pagecontext.testing import counter_ids, port_pair

NONCE = "n" * 21 + "A"
OTHER_NONCE = "o" * 21 + "B"
THIRD_NONCE = "t" * 21 + "C"


def page_embedder() -> EmbedderBinder:
    return EmbedderBinder(role="page", instance_id="page-A", conversation_id=None)


def assistant_child(nonce: str | None = NONCE) -> ChildBinder:
    return ChildBinder(
        role="assistant",
        instance_id="asst-1",
        conversation_id="conv-1",
        nonce=nonce,
        new_id=counter_ids("h"),
    )


# A `connected` from the assistant child `asst-1` to the page embedder `page-A`.
connected = partial(wire.connected, messageId="h1", nonce=NONCE)


def test_child_and_embedder_bind_to_the_same_identities() -> None:
    """The child's connected message binds the embedder to matching identities."""
    embedder = page_embedder()
    embedder.expect(NONCE)
    child_binding, message = assistant_child().connect({"role": "page", "pageInstanceId": "page-A"})
    embedder_binding = embedder.on_connected(message)
    assert embedder.state is BindState.BOUND
    assert embedder.binding == embedder_binding
    assert embedder_binding == Binding(
        connection_id=1,
        page_instance_id="page-A",
        conversation_id="conv-1",
        peer_instance_id="asst-1",
    )
    assert child_binding == Binding(
        connection_id=1,
        page_instance_id="page-A",
        conversation_id="conv-1",
        peer_instance_id="page-A",
    )


def test_the_handshake_binds_across_a_port_pair() -> None:
    """The connected message survives a structured-clone-like copy and binds the embedder."""
    embedder_port, child_port = port_pair()
    embedder = page_embedder()
    embedder.expect(NONCE)
    _, message = assistant_child().connect({"role": "page", "pageInstanceId": "page-A"})
    child_port.post(message)
    message["nonce"] = OTHER_NONCE  # the sender's later changes do not travel
    (arrived,) = embedder_port.drain()
    assert embedder.on_connected(arrived).connection_id == 1
    child_port.close()
    child_port.post(message)
    assert embedder_port.drain() == []


def test_a_page_child_binds_to_an_assistant_embedder() -> None:
    """With the roles swapped, the page child names itself and the assistant's conversation."""
    embedder = EmbedderBinder(role="assistant", instance_id="asst-1", conversation_id="conv-1")
    embedder.expect(NONCE)
    child = ChildBinder(
        role="page", instance_id="page-B", conversation_id=None, nonce=NONCE, new_id=counter_ids()
    )
    peer = {
        "protocol": "pagecontext",
        "version": 1,
        "type": "connect",
        "role": "assistant",
        "assistantInstanceId": "asst-1",
        "conversationId": "conv-1",
    }
    child_binding, message = child.connect(peer)
    assert message["instanceId"] == "page-B"
    assert child_binding.peer_instance_id == "asst-1"
    assert embedder.on_connected(message) == Binding(1, "page-B", "conv-1", "page-B")


def test_connected_message_carries_the_nonce_and_a_fresh_message_id() -> None:
    """The child sends its role, instance id, nonce and a new messageId."""
    _, message = assistant_child().connect({"role": "page", "pageInstanceId": "page-A"})
    assert message == connected()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (connected(type="bye", role=None, instanceId=None, nonce=None), "not-connected"),
        ({"type": "connected"}, "not-connected"),
        ("connected", "not-connected"),
        (connected(role="page"), "wrong-role"),
        (connected(nonce=OTHER_NONCE), "nonce-mismatch"),
        (connected(pageInstanceId="page-Z"), "identity-mismatch"),
        # A child's own ids follow a `connect`'s rule: what binds one way binds the other.
        (connected(conversationId="  \n\t "), "not-connected"),
        (connected(instanceId="asst 1"), "not-connected"),
        (connected(conversationId="c" * 65), "not-connected"),
    ],
)
def test_a_connected_message_that_does_not_qualify_closes(raw: object, reason: str) -> None:
    """Each failed check raises its reason and leaves the embedder CLOSED and unbound."""
    if isinstance(raw, dict):
        raw = {key: value for key, value in raw.items() if value is not None}
    embedder = page_embedder()
    embedder.expect(NONCE)
    with pytest.raises(HandshakeRejected) as caught:
        embedder.on_connected(raw)
    assert caught.value.reason == reason
    assert embedder.state is BindState.CLOSED
    assert embedder.binding is None


def test_an_assistant_embedder_checks_its_conversation_is_echoed() -> None:
    """An assistant embedder refuses a page child naming another conversation."""
    embedder = EmbedderBinder(role="assistant", instance_id="asst-1", conversation_id="conv-1")
    embedder.expect(NONCE)
    raw = connected(role="page", instanceId="page-A", conversationId="conv-OLD")
    with pytest.raises(HandshakeRejected) as caught:
        embedder.on_connected(raw)
    assert caught.value.reason == "identity-mismatch"


def test_an_assistant_embedder_refuses_a_page_naming_itself_inconsistently() -> None:
    """A page child's instanceId must be the pageInstanceId it stamps."""
    embedder = EmbedderBinder(role="assistant", instance_id="asst-1", conversation_id="conv-1")
    embedder.expect(NONCE)
    with pytest.raises(HandshakeRejected) as caught:
        embedder.on_connected(connected(role="page", instanceId="page-OTHER"))
    assert caught.value.reason == "identity-mismatch"


def test_a_reloaded_child_presenting_a_used_nonce_never_binds() -> None:
    """After a reload, the old nonce is refused as used; only the new nonce binds."""
    embedder = page_embedder()
    embedder.expect(NONCE)
    embedder.on_connected(connected())
    embedder.child_reloaded()
    assert embedder.state is BindState.CLOSED
    assert embedder.binding is None
    embedder.expect(OTHER_NONCE)
    with pytest.raises(HandshakeRejected) as caught:
        embedder.on_connected(connected())
    assert caught.value.reason == "nonce-used"
    embedder.expect(THIRD_NONCE)
    binding = embedder.on_connected(connected(nonce=THIRD_NONCE))
    assert binding.connection_id == 2


def test_connection_ids_count_bindings_from_one() -> None:
    """Each successful binding gets the next connection id."""
    embedder = page_embedder()
    ids = []
    for nonce in (NONCE, OTHER_NONCE, THIRD_NONCE):
        embedder.expect(nonce)
        ids.append(embedder.on_connected(connected(nonce=nonce)).connection_id)
        embedder.close()
    assert ids == [1, 2, 3]


def test_a_frame_announcing_itself_again_and_again_grows_no_memory() -> None:
    """Each reload of the child spends a nonce; the embedder remembers the last
    SPENT_NONCES of them, and still refuses the latest ones as used."""
    embedder = page_embedder()
    nonces = [f"{index:022d}" for index in range(SPENT_NONCES + 500)]
    for nonce in nonces:
        embedder.expect(nonce)
        embedder.child_reloaded()
    assert len(embedder._spent_nonces) == SPENT_NONCES
    with pytest.raises(LocalProtocolError):
        embedder.expect(nonces[-1])
    embedder.expect("n" * 22)
    with pytest.raises(HandshakeRejected) as caught:
        embedder.on_connected(connected(nonce=nonces[-2]))
    assert caught.value.reason == "nonce-used"


def test_a_nonce_can_be_expected_only_once() -> None:
    """Expecting a nonce that was expected before is a local error, even if it never bound."""
    embedder = page_embedder()
    embedder.expect(NONCE)
    embedder.close()
    with pytest.raises(LocalProtocolError, match="nonce already used"):
        embedder.expect(NONCE)


def test_a_rejected_nonce_is_spent() -> None:
    """A nonce whose connected message failed cannot be expected again."""
    embedder = page_embedder()
    embedder.expect(NONCE)
    with pytest.raises(HandshakeRejected):
        embedder.on_connected(connected(role="page"))
    with pytest.raises(LocalProtocolError):
        embedder.expect(NONCE)


def test_illegal_moves_name_the_event_and_the_state() -> None:
    """Out-of-order calls raise LocalProtocolError naming event and state."""
    embedder = page_embedder()
    with pytest.raises(LocalProtocolError, match="'connected' in state IDLE"):
        embedder.on_connected(connected())
    with pytest.raises(LocalProtocolError, match="'child-reloaded' in state IDLE"):
        embedder.child_reloaded()
    embedder.expect(NONCE)
    with pytest.raises(LocalProtocolError, match="'expect' in state AWAITING_CONNECTED"):
        embedder.expect(OTHER_NONCE)
    embedder.on_connected(connected())
    with pytest.raises(LocalProtocolError, match="'connected' in state BOUND"):
        embedder.on_connected(connected())
    with pytest.raises(LocalProtocolError, match="'expect' in state BOUND"):
        embedder.expect(OTHER_NONCE)


def test_close_is_legal_in_every_state() -> None:
    """close() always ends in CLOSED and clears the binding."""
    embedder = page_embedder()
    embedder.close()
    assert embedder.state is BindState.CLOSED
    embedder.expect(NONCE)
    embedder.on_connected(connected())
    embedder.close()
    embedder.close()
    assert embedder.state is BindState.CLOSED
    assert embedder.binding is None


def test_an_assistant_binder_needs_a_conversation() -> None:
    """An assistant without a conversation id cannot take part in a handshake."""
    with pytest.raises(LocalProtocolError):
        EmbedderBinder(role="assistant", instance_id="a", conversation_id=None)
    with pytest.raises(LocalProtocolError):
        ChildBinder(
            role="assistant",
            instance_id="a",
            conversation_id=None,
            nonce=NONCE,
            new_id=counter_ids(),
        )


@pytest.mark.parametrize("nonce", [None, "A" * 21, "A" * 21 + "!", "A" * 23])
def test_a_child_without_a_nonce_cannot_connect(nonce: str | None) -> None:
    """No nonce in the URL, or one that is not a nonce (the wrong length, a character
    outside base64url), means no connection: `no-nonce`."""
    child = assistant_child(nonce=nonce)
    with pytest.raises(HandshakeRejected) as caught:
        child.connect({"role": "page", "pageInstanceId": "page-A"})
    assert caught.value.reason == "no-nonce"
    assert child.state is BindState.CLOSED


def test_a_child_refuses_a_peer_with_its_own_role() -> None:
    """Two assistants never bind."""
    child = assistant_child()
    peer = {"role": "assistant", "assistantInstanceId": "x", "conversationId": "c"}
    with pytest.raises(HandshakeRejected) as caught:
        child.connect(peer)
    assert caught.value.reason == "wrong-role"


@pytest.mark.parametrize(
    "peer",
    [
        {"role": "page"},
        {"role": "page", "pageInstanceId": ""},
        {"role": "page", "pageInstanceId": 5},
        {"role": "page", "pageInstanceId": "p", "extra": "x"},
        {"role": "page", "assistantInstanceId": "p"},
        {"role": "robot", "pageInstanceId": "p"},
        {"role": "page", "pageInstanceId": "p", "version": 2},
        {"role": "page", "pageInstanceId": "p", "version": True},
        {"role": "page", "pageInstanceId": "p", "type": "ready"},
        {"role": "page", "pageInstanceId": "p" * 257},
        # The ids a handshake names are 1-64 base64url characters (docs/protocol.md 8.1),
        # as the edge's window rules read them.
        {"role": "page", "pageInstanceId": "p" * 65},
        {"role": "page", "pageInstanceId": "  "},
        {"role": "page", "pageInstanceId": "a b"},
        {"role": "page", "pageInstanceId": "\u00e9"},
        {"role": "assistant", "assistantInstanceId": "a", "conversationId": "c\n"},
    ],
)
def test_a_child_refuses_malformed_connect_data(peer: dict[str, object]) -> None:
    """Bad connect data raises malformed and closes the child."""
    child = assistant_child()
    with pytest.raises(HandshakeRejected) as caught:
        child.connect(peer)
    assert caught.value.reason == "malformed"
    assert child.state is BindState.CLOSED


def test_a_child_connects_once() -> None:
    """A second connect is a local error, before and after the embedder's `bound`."""
    child = assistant_child()
    child.connect({"role": "page", "pageInstanceId": "page-A"})
    with pytest.raises(LocalProtocolError, match="'connect' in state AWAITING_BOUND"):
        child.connect({"role": "page", "pageInstanceId": "page-A"})
    child.on_bound(wire.bound(pageInstanceId="page-A", conversationId="conv-1"))
    with pytest.raises(LocalProtocolError, match="'connect' in state BOUND"):
        child.connect({"role": "page", "pageInstanceId": "page-A"})


def test_a_child_is_bound_only_by_the_embedders_bound() -> None:
    """The child waits after sending `connected`; the `bound` the embedder answers once
    it has checked the nonce binds the child to the same identities."""
    embedder = page_embedder()
    embedder.expect(NONCE)
    child = assistant_child()
    assert child.offered is None
    pending, connected_message = child.connect({"role": "page", "pageInstanceId": "page-A"})
    assert child.state is BindState.AWAITING_BOUND
    assert child.offered == pending
    binding = embedder.on_connected(connected_message)
    assert (binding.page_instance_id, binding.conversation_id) == ("page-A", "conv-1")
    assert (pending.page_instance_id, pending.conversation_id) == ("page-A", "conv-1")
    ack = bound_message(binding, "ack1")
    assert ack == wire.bound(messageId="ack1", pageInstanceId="page-A", conversationId="conv-1")
    assert child.on_bound(ack) is True
    assert child.state is BindState.BOUND
    assert child.offered is None  # taken by the binding
    with pytest.raises(LocalProtocolError, match="'bound' in state BOUND"):
        child.on_bound(ack)


@pytest.mark.parametrize(
    "raw",
    [
        wire.context(pageInstanceId="page-A", conversationId="conv-1"),
        wire.bye(pageInstanceId="page-A", conversationId="conv-1"),
    ],
)
def test_an_embedder_that_predates_bound_binds_by_its_first_stamped_message(raw: object) -> None:
    """An embedder that sends no `bound` sends only on a port it bound: its first valid
    message, stamped with the binding's page instance and conversation, binds the child,
    which is told to read it as a bound port's message (False)."""
    child = assistant_child()
    child.connect({"role": "page", "pageInstanceId": "page-A"})
    assert child.on_bound(raw) is False
    assert child.state is BindState.BOUND


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (wire.without(wire.context(pageInstanceId="page-A"), "conversationId"), "not-bound"),
        ({**wire.bound(pageInstanceId="page-A", conversationId="conv-1"), "x": 1}, "not-bound"),
        (wire.bound(pageInstanceId="page-A", conversationId="conv-1", version=2), "not-bound"),
        ("bound", "not-bound"),
        (wire.bound(pageInstanceId="page-B", conversationId="conv-1"), "identity-mismatch"),
        (wire.bound(pageInstanceId="page-A", conversationId="conv-2"), "identity-mismatch"),
        (wire.context(pageInstanceId="page-A", conversationId="conv-2"), "identity-mismatch"),
    ],
)
def test_a_first_message_that_is_not_a_matching_bound_closes_the_child(
    raw: object, reason: str
) -> None:
    """A first message that is not valid, or is stamped for another binding, closes the
    child: it is never bound."""
    child = assistant_child()
    child.connect({"role": "page", "pageInstanceId": "page-A"})
    with pytest.raises(HandshakeRejected) as caught:
        child.on_bound(raw)
    assert caught.value.reason == reason
    assert child.state is BindState.CLOSED
    assert child.offered is None


def test_a_child_takes_bound_only_after_connecting() -> None:
    """`bound` before `connect` is a local error; so is one after the child closed."""
    child = assistant_child()
    ack = wire.bound(pageInstanceId="page-A", conversationId="conv-1")
    with pytest.raises(LocalProtocolError, match="'bound' in state IDLE"):
        child.on_bound(ack)
    child.connect({"role": "page", "pageInstanceId": "page-A"})
    child.close()
    with pytest.raises(LocalProtocolError, match="'bound' in state CLOSED"):
        child.on_bound(ack)


@pytest.mark.parametrize(
    ("fragment", "nonce"),
    [
        ("#pc-nonce=" + NONCE, NONCE),
        ("pc-nonce=" + NONCE, None),  # location.hash always starts with "#"
        ("#pc-nonce=" + "a-b_" * 5 + "zz", "a-b_" * 5 + "zz"),
        ("#pc-nonce=" + NONCE[:-1], None),
        ("#pc-nonce=" + NONCE + "x", None),
        ("#pc-nonce=" + NONCE[:-1] + "=", None),
        ("#pc-nonce=" + NONCE[:-1] + "+", None),
        ("#pc-nonce=" + NONCE + "&x=1", None),
        ("#other=" + NONCE, None),
        ("", None),
    ],
)
def test_read_nonce_accepts_only_22_base64url_characters(fragment: str, nonce: str | None) -> None:
    """read_nonce returns the nonce only for an exact pc-nonce fragment."""
    assert read_nonce(fragment) == nonce


@pytest.mark.parametrize("peer", [None, "page-A", ["role", "page"], 7])
def test_connect_data_that_is_not_an_object_is_malformed(peer: object) -> None:
    """The connect data comes from another window: anything but an object is refused as
    malformed (not another exception), the child closes, and no `connected` is made."""
    child = assistant_child()
    with pytest.raises(HandshakeRejected) as caught:
        child.connect(peer)  # type: ignore[arg-type]
    assert caught.value.reason == "malformed"
    assert child.state is BindState.CLOSED
    assert child.offered is None


def test_a_child_whose_own_ids_the_embedder_would_refuse_sends_no_connected() -> None:
    """A message id over the protocol's limit would only be refused by the embedder: the
    child refuses it first (malformed) and closes, sending nothing."""
    child = ChildBinder(
        role="assistant",
        instance_id="asst-1",
        conversation_id="conv-1",
        nonce=NONCE,
        new_id=lambda: "h" * 257,
    )
    with pytest.raises(HandshakeRejected) as caught:
        child.connect({"role": "page", "pageInstanceId": "page-A"})
    assert caught.value.reason == "malformed"
    assert child.state is BindState.CLOSED
