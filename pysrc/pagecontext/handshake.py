"""The port-level binding state machine (docs/protocol.md section 2, steps 5-8, and
docs/protocol.md 8.12).

The window-level checks (origin, `event.source`) run in the browser bindings; this
module decides on what arrives over the port: the embedder binds a connection only when
the child's `connected` message presents the nonce minted for it, and answers `bound`;
the child builds `connected` from the embedder's `connect` data and the nonce it read
from its URL, and counts itself bound only once the embedder's first message arrives:
that `bound`, or, from an embedder that predates it, its first stamped message.
"""

from __future__ import annotations

import enum
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from pagecontext.errors import HandshakeRejected, LocalProtocolError, MessageRejected
from pagecontext.models import (
    NONCE_PATTERN,
    PROTOCOL,
    VERSION,
    BoundMessage,
    ConnectedMessage,
    Role,
    dump_message,
    parse_message,
)
from pagecontext.windowrules import is_instance_id, read_nonce

__all__ = [
    "SPENT_NONCES",
    "BindState",
    "Binding",
    "ChildBinder",
    "EmbedderBinder",
    "bound_message",
    "read_nonce",
]


class BindState(enum.Enum):
    """Where a binder stands in the handshake."""

    IDLE = "idle"
    AWAITING_CONNECTED = "awaiting-connected"
    AWAITING_BOUND = "awaiting-bound"
    BOUND = "bound"
    CLOSED = "closed"


_Event = Literal["expect", "connected", "rejected", "close", "child-reloaded", "connect", "bound"]

# Transition rules.
# - An embedder expects a `connected` message only after minting a nonce ("expect"),
#   from IDLE or after a previous connection CLOSED; it never expects two at once.
# - A `connected` message either binds (BOUND) or is rejected, and a rejection closes:
#   after an error the binder refuses further use until a new nonce is expected.
# - "close" is legal from every state; "child-reloaded" ends a live or pending binding.
# - A child connects once ("connect": IDLE -> AWAITING_BOUND) and is bound only by the
#   embedder's first port message ("bound": AWAITING_BOUND -> BOUND); a failed connect,
#   or a first message that is not valid and stamped for the binding, closes it.
# Anything not in a table is a LocalProtocolError naming the event and the state.
_EMBEDDER_TRANSITIONS: Mapping[tuple[BindState, _Event], BindState] = {
    (BindState.IDLE, "expect"): BindState.AWAITING_CONNECTED,
    (BindState.CLOSED, "expect"): BindState.AWAITING_CONNECTED,
    (BindState.AWAITING_CONNECTED, "connected"): BindState.BOUND,
    (BindState.AWAITING_CONNECTED, "rejected"): BindState.CLOSED,
    (BindState.AWAITING_CONNECTED, "child-reloaded"): BindState.CLOSED,
    (BindState.BOUND, "child-reloaded"): BindState.CLOSED,
    (BindState.IDLE, "close"): BindState.CLOSED,
    (BindState.AWAITING_CONNECTED, "close"): BindState.CLOSED,
    (BindState.BOUND, "close"): BindState.CLOSED,
    (BindState.CLOSED, "close"): BindState.CLOSED,
}
_CHILD_TRANSITIONS: Mapping[tuple[BindState, _Event], BindState] = {
    (BindState.IDLE, "connect"): BindState.AWAITING_BOUND,
    (BindState.IDLE, "rejected"): BindState.CLOSED,
    (BindState.AWAITING_BOUND, "bound"): BindState.BOUND,
    (BindState.AWAITING_BOUND, "rejected"): BindState.CLOSED,
    (BindState.IDLE, "close"): BindState.CLOSED,
    (BindState.AWAITING_BOUND, "close"): BindState.CLOSED,
    (BindState.BOUND, "close"): BindState.CLOSED,
    (BindState.CLOSED, "close"): BindState.CLOSED,
}

_NONCE_RE = re.compile(NONCE_PATTERN)


def _next_state(
    table: Mapping[tuple[BindState, _Event], BindState], state: BindState, event: _Event
) -> BindState:
    try:
        return table[(state, event)]
    except KeyError:
        raise LocalProtocolError(f"can't handle event {event!r} in state {state.name}") from None


@dataclass(frozen=True)
class Binding:
    """A bound connection: which page instance and conversation it serves, and the peer."""

    connection_id: int
    page_instance_id: str
    conversation_id: str
    peer_instance_id: str


# How many spent nonces an embedder remembers: a frame that keeps announcing itself
# makes a new nonce each time, and must not grow the embedder's memory without bound.
SPENT_NONCES: Final = 1024


class EmbedderBinder:
    """The embedder's side: binds a port only on a `connected` carrying the minted nonce.

    If the embedder is the page, `instance_id` is its pageInstanceId and
    `conversation_id` is None (the child assistant names it); if it is the assistant,
    `conversation_id` is its current conversation.
    """

    def __init__(self, *, role: Role, instance_id: str, conversation_id: str | None) -> None:
        if role == "assistant" and conversation_id is None:
            raise LocalProtocolError("an assistant embedder needs its conversation_id")
        self._role: Role = role
        self._instance_id = instance_id
        self._conversation_id = conversation_id
        self._state = BindState.IDLE
        self._expected_nonce: str | None = None
        # The last SPENT_NONCES nonces expected, bound or not: each binds at most once.
        # Nonces are minted at random, so an older one never comes back but from a peer
        # replaying it, which the expected nonce refuses anyway ("nonce-mismatch").
        self._spent_nonces: dict[str, None] = {}
        self._connections = 0
        self._binding: Binding | None = None

    @property
    def state(self) -> BindState:
        """The current handshake state."""
        return self._state

    @property
    def binding(self) -> Binding | None:
        """The live binding, or None unless BOUND."""
        return self._binding

    def use_conversation(self, conversation_id: str) -> None:
        """An assistant embedder's conversation changed: a `connected` must echo this one."""
        if self._role == "assistant":
            self._conversation_id = conversation_id

    def expect(self, nonce: str) -> None:
        """Wait for a `connected` message carrying `nonce`.

        Raises LocalProtocolError if the state is not IDLE or CLOSED, or if the nonce was
        expected before (nonces are single-use).
        """
        if nonce in self._spent_nonces:
            raise LocalProtocolError(f"nonce already used; can't expect it in {self._state.name}")
        self._state = _next_state(_EMBEDDER_TRANSITIONS, self._state, "expect")
        self._spent_nonces[nonce] = None
        if len(self._spent_nonces) > SPENT_NONCES:
            del self._spent_nonces[next(iter(self._spent_nonces))]
        self._expected_nonce = nonce

    def on_connected(self, raw: object) -> Binding:
        """Bind on the child's first port message; return the new Binding.

        Raises HandshakeRejected ("not-connected", "wrong-role", "nonce-used",
        "nonce-mismatch", "identity-mismatch") and goes CLOSED if the message does not
        qualify; LocalProtocolError if no `connected` message is expected.
        """
        # Look the move up first: it raises unless a `connected` message is expected.
        bound = _next_state(_EMBEDDER_TRANSITIONS, self._state, "connected")
        expected_nonce = self._expected_nonce
        assert expected_nonce is not None  # set by every move into AWAITING_CONNECTED
        # Whatever happens next, this nonce has had its one chance.
        self._expected_nonce = None
        try:
            message = self._checked_connected(raw, expected_nonce)
        except HandshakeRejected:
            self._state = _next_state(_EMBEDDER_TRANSITIONS, self._state, "rejected")
            raise
        self._state = bound
        self._connections += 1
        self._binding = Binding(
            connection_id=self._connections,
            page_instance_id=message.page_instance_id,
            conversation_id=message.conversation_id,
            peer_instance_id=message.instance_id,
        )
        return self._binding

    def close(self) -> None:
        """End the handshake or the binding (either side sent or received `bye`)."""
        self._state = _next_state(_EMBEDDER_TRANSITIONS, self._state, "close")
        self._expected_nonce = None
        self._binding = None

    def child_reloaded(self) -> None:
        """The child document reloaded: its binding ends; expect() a new nonce next."""
        self._state = _next_state(_EMBEDDER_TRANSITIONS, self._state, "child-reloaded")
        self._expected_nonce = None
        self._binding = None

    def _checked_connected(self, raw: object, expected_nonce: str) -> ConnectedMessage:
        try:
            message = parse_message(raw)
        except MessageRejected:
            raise HandshakeRejected("not-connected") from None
        # Its ids are a `connect`'s (docs/protocol.md 8.1), whichever side chose them:
        # a conversation that binds with the assistant as the child binds as the embedder.
        if not isinstance(message, ConnectedMessage) or not all(
            map(
                is_instance_id,
                (message.page_instance_id, message.conversation_id, message.instance_id),
            )
        ):
            raise HandshakeRejected("not-connected")
        if message.role == self._role:
            raise HandshakeRejected("wrong-role")
        if not hmac.compare_digest(message.nonce.encode(), expected_nonce.encode()):
            # Membership leaks nothing useful: a spent nonce can never bind again.
            spent = message.nonce in self._spent_nonces
            raise HandshakeRejected("nonce-used" if spent else "nonce-mismatch")
        if self._role == "page":
            echoes_us = message.page_instance_id == self._instance_id
        else:
            # A page child must also name itself consistently in both fields.
            echoes_us = (
                message.conversation_id == self._conversation_id
                and message.instance_id == message.page_instance_id
            )
        if not echoes_us:
            raise HandshakeRejected("identity-mismatch")
        return message


class ChildBinder:
    """The child's side: answers the embedder's `connect` with a `connected` message,
    and is bound once the embedder's first port message (its `bound`) echoes the
    binding's identities.

    `nonce` is what `read_nonce` found in the child's URL at start (None if absent).
    """

    def __init__(
        self,
        *,
        role: Role,
        instance_id: str,
        conversation_id: str | None,
        nonce: str | None,
        new_id: Callable[[], str],
    ) -> None:
        if role == "assistant" and conversation_id is None:
            raise LocalProtocolError("an assistant child needs its conversation_id")
        self._role: Role = role
        self._instance_id = instance_id
        self._conversation_id = conversation_id
        self._nonce = nonce
        self._new_id = new_id
        self._state = BindState.IDLE
        self._binding: Binding | None = None

    @property
    def state(self) -> BindState:
        """The current handshake state."""
        return self._state

    @property
    def offered(self) -> Binding | None:
        """The binding `connected` offered, while the embedder's `bound` has not come."""
        return self._binding if self._state is BindState.AWAITING_BOUND else None

    def connect(self, peer: Mapping[str, object]) -> tuple[Binding, dict[str, object]]:
        """Bind to the embedder described by its `connect` data.

        `peer` is `{"role": "page", "pageInstanceId": ...}` or `{"role": "assistant",
        "assistantInstanceId": ..., "conversationId": ...}`, optionally with the connect
        message's own `protocol`, `version` and `type` keys. Returns the Binding it will
        have once the embedder answers `bound` (`on_bound`), and the `connected` message
        to send over the port. Raises HandshakeRejected ("no-nonce", "wrong-role",
        "malformed") and goes CLOSED; LocalProtocolError on a second call.
        """
        awaiting = _next_state(_CHILD_TRANSITIONS, self._state, "connect")
        try:
            binding, connected = self._connected_message(peer)
        except HandshakeRejected:
            self._state = _next_state(_CHILD_TRANSITIONS, self._state, "rejected")
            raise
        self._state = awaiting
        self._binding = binding
        return binding, connected

    def on_bound(self, raw: object) -> bool:
        """Bind on the embedder's first port message after `connected`.

        Returns True if it is the embedder's `bound`. An embedder that predates `bound`
        sends none: its first message, valid and stamped with this binding's page
        instance and conversation, binds as well (it sends only on a port it bound), and
        False says the caller is still to handle it as a bound port's message. Raises
        HandshakeRejected ("not-bound": not a valid message; "identity-mismatch": it
        names another page instance or conversation) and goes CLOSED;
        LocalProtocolError unless `connect` was answered and nothing bound yet.
        """
        bound = _next_state(_CHILD_TRANSITIONS, self._state, "bound")
        binding = self._binding
        assert binding is not None  # set by the move into AWAITING_BOUND
        try:
            message = parse_message(raw)
        except MessageRejected:
            message = None
        reason = None
        if message is None:
            reason = "not-bound"
        elif (message.page_instance_id, message.conversation_id) != (
            binding.page_instance_id,
            binding.conversation_id,
        ):
            reason = "identity-mismatch"
        if reason is not None:
            self._state = _next_state(_CHILD_TRANSITIONS, self._state, "rejected")
            self._binding = None
            raise HandshakeRejected(reason)
        self._state = bound
        return isinstance(message, BoundMessage)

    def close(self) -> None:
        """End the binding."""
        self._state = _next_state(_CHILD_TRANSITIONS, self._state, "close")
        self._binding = None

    def _connected_message(self, peer: Mapping[str, object]) -> tuple[Binding, dict[str, object]]:
        if self._nonce is None or not _NONCE_RE.fullmatch(self._nonce):
            raise HandshakeRejected("no-nonce")
        fields = _peer_fields(peer)
        if fields["role"] == self._role:
            raise HandshakeRejected("wrong-role")
        if self._role == "page":
            page_instance_id = self._instance_id
            conversation_id = fields["conversationId"]
            peer_instance_id = fields["assistantInstanceId"]
        else:
            assert self._conversation_id is not None  # checked in __init__
            page_instance_id = fields["pageInstanceId"]
            conversation_id = self._conversation_id
            peer_instance_id = page_instance_id
        candidate = {
            "protocol": PROTOCOL,
            "version": VERSION,
            "type": "connected",
            "messageId": self._new_id(),
            "pageInstanceId": page_instance_id,
            "conversationId": conversation_id,
            "role": self._role,
            "instanceId": self._instance_id,
            "nonce": self._nonce,
        }
        # Parse what we are about to send: an id over the limits would only be refused
        # by the embedder, so refuse it here with the same rules.
        try:
            message = parse_message(candidate)
        except MessageRejected:
            raise HandshakeRejected("malformed") from None
        binding = Binding(
            connection_id=1,
            page_instance_id=page_instance_id,
            conversation_id=conversation_id,
            peer_instance_id=peer_instance_id,
        )
        return binding, dump_message(message)


def bound_message(binding: Binding, message_id: str) -> dict[str, object]:
    """The embedder's `bound` message for a binding `on_connected` just made."""
    message = BoundMessage(
        message_id=message_id,
        page_instance_id=binding.page_instance_id,
        conversation_id=binding.conversation_id,
    )
    return dump_message(message)


_PEER_KEYS = {
    "page": frozenset({"role", "pageInstanceId"}),
    "assistant": frozenset({"role", "assistantInstanceId", "conversationId"}),
}
_CONNECT_ENVELOPE = {"protocol": PROTOCOL, "version": VERSION, "type": "connect"}


def _peer_fields(peer: Mapping[str, object]) -> dict[str, str]:
    """Return the connect data's identity fields as strings, or raise "malformed"."""
    if not isinstance(peer, Mapping):
        raise HandshakeRejected("malformed")
    fields = dict(peer)
    for key, value in _CONNECT_ENVELOPE.items():
        if key in fields:
            present = fields.pop(key)
            if type(present) is not type(value) or present != value:
                raise HandshakeRejected("malformed")
    role = fields.get("role")
    if not isinstance(role, str) or role not in _PEER_KEYS or set(fields) != _PEER_KEYS[role]:
        raise HandshakeRejected("malformed")
    if not all(is_instance_id(value) for key, value in fields.items() if key != "role"):
        raise HandshakeRejected("malformed")
    return {key: str(value) for key, value in fields.items()}
