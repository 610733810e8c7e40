"""The two protocol parties as sans-IO sessions: `PageSession` and `AssistantSession`.

A session owns one party's whole state (binding, selection or context, commands and
receipts) and never performs I/O. The caller feeds it what happened (a port message,
a DOM event reported by the main-thread edge, the clock passing a deadline) and carries
out the effects it returns:

- `ToPeer(message)`: post `message` on the bound port;
- `ToEdge(message)`: post `message` to the main-thread edge (UI work, state to show);
- `Refresh(kind)`: the panel's state or saved state changed; build it with
  `edge_message(kind)` when delivering (coalescing a burst into one message);
- `ClosePort(reason)`: close the current port; nothing more is read from it;
- `StartRun(run_id, body)` (assistant): POST `body` (a `RunAgentInput`) to the agent and
  feed the streamed answer back with `on_agent_text`, then `on_agent_end`, or
  `on_agent_failed`;
- `ActionRequest(action_id, step, path, body)` (assistant): POST `body` to the page
  origin's action API at `path` with the user's authorization, and report the answer
  with `on_action_answer`, or `on_action_failed`.

Either party may be the embedder or the child (docs/protocol.md section 1). The embedder
verifies the child's `connected` message; the child sends it. Messages to the edge are
plain dicts with a `kind`; docs/architecture.md lists them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final, Literal, get_args
from urllib.parse import urlencode

from pagecontext.agui import (
    AUTHORIZATION_PROP,
    BUSINESS_TOOL_NAMES,
    CONTEXT_TOOL_NAMES,
    TASK_CONTEXT_DESCRIPTION,
    TaskContext,
    ToolCallError,
    assistant_tools,
    build_run_input,
    business_proposal,
    context_tool_call,
    task_context_entry,
    tool_call_command,
)
from pagecontext.answers import AnswerStream, TextDelta, ToolCallMade, Update
from pagecontext.budget import DEFAULT_BUDGET
from pagecontext.composer import Composer
from pagecontext.conversation import run_messages
from pagecontext.errors import HandshakeRejected, LocalProtocolError, MessageRejected
from pagecontext.handshake import Binding, BindState, ChildBinder, EmbedderBinder, bound_message
from pagecontext.integration import (
    SAVED_STATE_FORMAT,
    STOPPED,
    action_checkable,
    is_layer_view,
    saved_state_readable,
)
from pagecontext.items import ContextItem, JsonValue
from pagecontext.ledger import LayerName, LayerRecord, LayerState, ReceiptLedger
from pagecontext.models import (
    DEFAULT_LIMITS,
    MAX_SAFE_INTEGER,
    Action,
    ByeMessage,
    CommandMessage,
    ContextMessage,
    ConversationMessage,
    Limits,
    ReceiptMessage,
    Scalar,
    Selection,
    SelectionClearedMessage,
    Target,
    dump_message,
    is_reason,
    parse_context_json,
    parse_message,
    unreadable,
)
from pagecontext.receiver import Accepted, ContextReceiver, ReceiveResult, Repeated
from pagecontext.resolver import CommandResolver, Resolution
from pagecontext.selection_items import object_key
from pagecontext.store import ContextStore
from pagecontext.tracker import ComponentView, FieldSpec, SelectionTracker
from pagecontext.windowrules import is_instance_id

__all__ = [
    "ACTION_DEADLINES_MS",
    "ACTION_TIMEOUT_MS",
    "AGENT_ID",
    "FLAGS_PATH",
    "FLAG_CONFIRMATIONS_PATH",
    "FLAG_PATH",
    "INTERNAL_ERROR",
    "MAX_FOLLOW_UPS",
    "UI_PENDING_MAX",
    "ActionRequest",
    "AssistantSession",
    "ClosePort",
    "Effect",
    "PageSession",
    "Position",
    "Refresh",
    "RenderedRegistry",
    "Role",
    "ShownChip",
    "StartRun",
    "ToEdge",
    "ToPeer",
]

Role = Literal["page", "assistant"]
# Command outcomes that are not refusals: applied, and a duplicate answered again.
# Stale and not-found outcomes are honest answers to valid commands, not refusals either.
_NOT_REFUSED = (
    "ok",
    "replayed",
    "page-instance",
    "revision-evicted",
    "view-changed",
    "not-rendered",
)
Position = Literal["embedder", "child"]
# A chip as the panel shows it: the context's pageInstanceId and selectionRevision.
ShownChip = tuple[str, int]


@dataclass(frozen=True)
class ToPeer:
    """Post `message` on the bound port."""

    message: dict[str, object]


@dataclass(frozen=True)
class ToEdge:
    """Post `message` to the main-thread edge."""

    message: dict[str, object]


@dataclass(frozen=True)
class Refresh:
    """What the panel shows (`kind="state"`) or what it saves (`kind="persist"`) changed.

    The caller builds the message with `AssistantSession.edge_message(kind)` when it
    delivers it, so a burst of changes costs one build and one post, not one per change.
    """

    kind: Literal["state", "persist"]


@dataclass(frozen=True)
class ClosePort:
    """Close the current port; `reason` is a short code for diagnostics.

    `refused` is True when the port is closed because its handshake failed (a wrong,
    used or missing nonce, a wrong role or identity), not because a binding ended.
    """

    reason: str
    refused: bool = False


@dataclass(frozen=True)
class StartRun:
    """Start the AG-UI run `run_id`: POST `body`, its `RunAgentInput` as JSON, to the agent."""

    run_id: str
    body: str


@dataclass(frozen=True)
class ActionRequest:
    """Call `path` on the page origin's action API, as the user: POST `body` (JSON), or
    GET when `body` is None.

    `step` is "confirm" (ask for a confirmation token), "execute" (carry the action out
    with it) or "check" (ask whether an unconfirmed action happened). The body may hold
    a confirmation token: it is never logged or saved.
    """

    action_id: str
    step: Literal["confirm", "execute", "check"]
    path: str
    body: str | None


Effect = ToPeer | ToEdge | Refresh | ClosePort | StartRun | ActionRequest
_STATE = Refresh("state")
_PERSIST = Refresh("persist")

# The id the assistant's agent has in the context store's per-agent scoping.
AGENT_ID = "default"
# The page origin's action API (docs/agent.md).
FLAG_CONFIRMATIONS_PATH = "/api/actions/flag/confirmations"
FLAG_PATH = "/api/actions/flag"
FLAGS_PATH = "/api/actions/flags"
# Business actions are not sent on the page channel: no connection can ever answer them.
_NO_CONNECTION = -1


# Runs started on their own after an answer that asked for context, per question.
MAX_FOLLOW_UPS = 3
# An answer whose reading failed inside the assistant ends with this code.
INTERNAL_ERROR: Final = "internal-error"
_ERROR_MESSAGE_CHARS: Final = 2000


@dataclass
class _Asked:
    """A question's context, for its context tools: the items in play when it was sent,
    and the characters their results may still take (`Composer.context_room` at first)."""

    items: tuple[ContextItem, ...]
    room: int


@dataclass
class _Run:
    """The run whose answer is streaming: the task it is pinned to, and its stream.

    `asked` is what the question's context tools answer from, shared by its runs;
    `follow_up` counts the runs before it for the same question; `wants_more` is set
    when the agent called a context tool, whose result it gets in a follow-up run.
    """

    run_id: str
    task: TaskContext | None
    page_instance_id: str | None
    asked: _Asked
    stream: AnswerStream
    follow_up: int = 0
    wants_more: bool = False


def _action_layer(step: str) -> Literal["received", "business"]:
    """The ledger layer an action API step settles: the confirmation is `received`."""
    return "received" if step == "confirm" else "business"


def _compact(value: Mapping[str, object]) -> str:
    return json.dumps(value, separators=(",", ":"))


class RenderedRegistry:
    """The page's registry of rendered objects, as the edge last reported it.

    The resolver asks it whether a target is on screen; `resourceRef` is only ever a
    key here, never a selector.
    """

    def __init__(self) -> None:
        self._refs: dict[str, frozenset[str]] = {}

    def update(self, component_id: str, refs: Iterable[str]) -> None:
        """Replace the set of objects rendered in `component_id`."""
        self._refs[component_id] = frozenset(refs)

    def forget(self, component_id: str) -> None:
        """The component is no longer on the page: none of its objects is rendered."""
        self._refs.pop(component_id, None)

    def __len__(self) -> int:
        """How many components have reported what they render."""
        return len(self._refs)

    def is_rendered(self, component_id: str, resource_ref: str | None) -> bool:
        """Return True if the component (and the object, when named) is rendered now."""
        refs = self._refs.get(component_id)
        if refs is None:
            return False
        return resource_ref is None or resource_ref in refs


class _Connection:
    """What both parties share: the binder for the current port, and the binding."""

    def __init__(self, *, role: Role, instance_id: str, new_id: Callable[[], str]) -> None:
        self.role: Role = role
        self.instance_id = instance_id
        self.new_id = new_id
        self.position: Position | None = None
        self.embedder: EmbedderBinder | None = None
        # As the child: the binder whose `connected` went out (its binding is made once
        # the embedder's `bound` arrives).
        self.child: ChildBinder | None = None
        self.binding: Binding | None = None
        self.connections = 0
        # Control messages on the bound port (a bye, a conversation, a receipt that does
        # not parse) refused, by reason (docs/protocol.md 8.6a).
        self.refused: Counter[str] = Counter()

    def refuse(self, reason: str) -> list[Effect]:
        """Count a refused control message; it changes nothing else."""
        self.refused[reason] += 1
        return []

    def attach(
        self,
        position: Position,
        nonce: str | None,
        peer: Mapping[str, object] | None,
        conversation_id: str | None,
    ) -> list[Effect]:
        """Take a new port: expect the child's `connected`, or send ours as the child and
        wait for the embedder's `bound`."""
        self.binding = None
        self.child = None
        self.position = position
        if position == "embedder":
            if nonce is None:
                raise LocalProtocolError("an embedder port needs the nonce it minted")
            if self.embedder is None:
                self.embedder = EmbedderBinder(
                    role=self.role, instance_id=self.instance_id, conversation_id=conversation_id
                )
            elif conversation_id is not None:
                self.embedder.use_conversation(conversation_id)
            if self.embedder.state is BindState.BOUND:
                self.embedder.close()
            self.embedder.expect(nonce)
            return []
        child = ChildBinder(
            role=self.role,
            instance_id=self.instance_id,
            conversation_id=conversation_id,
            nonce=nonce,
            new_id=self.new_id,
        )
        try:
            _binding, connected = child.connect(dict(peer or {}))
        except HandshakeRejected as exc:
            return [ClosePort(exc.reason, refused=True)]
        # Each port is a new connection, so receipts of an earlier one never match it.
        self.connections += 1
        self.child = child
        return [ToPeer(connected), ToEdge({"kind": "connecting"})]

    def on_handshake(self, raw: object) -> tuple[list[Effect], bool] | None:
        """Take the port's next message while its handshake is pending: as the embedder,
        the child's `connected` (answered with `bound`); as the child, the embedder's
        `bound` (see `ChildBinder.on_bound`). Returns the effects, with `binding` set if
        this message bound the port, or the port closed if it may not, and whether the
        message is still to be handled as a bound port's; None when no handshake is
        pending."""
        if self.awaiting_connected:
            assert self.embedder is not None
            try:
                self.binding = self.embedder.on_connected(raw)
            except HandshakeRejected as exc:
                return [ClosePort(exc.reason, refused=True)], False
            return [ToPeer(bound_message(self.binding, self.new_id()))], False
        offered = self.pending
        if offered is None:
            return None
        assert self.child is not None
        try:
            explicit = self.child.on_bound(raw)
        except HandshakeRejected as exc:
            return [ClosePort(exc.reason, refused=True), ToEdge({"kind": "unbound"})], False
        self.binding = replace(offered, connection_id=self.connections)
        return [], not explicit

    @property
    def awaiting_connected(self) -> bool:
        return (
            self.position == "embedder"
            and self.embedder is not None
            and self.embedder.state is BindState.AWAITING_CONNECTED
        )

    @property
    def pending(self) -> Binding | None:
        """As the child: the binding `connected` offered, while `bound` has not come."""
        return self.child.offered if self.child is not None else None

    @property
    def handshaking(self) -> bool:
        """A handshake is pending on the current port (either side)."""
        return self.awaiting_connected or self.pending is not None

    def bye(self) -> list[Effect]:
        """End the binding from this side: send `bye`, close the port, forget the binding
        (also one that waits for the embedder's `bound`)."""
        binding = self.binding or self.pending
        if binding is None:
            return []
        message = ByeMessage(
            message_id=self.new_id(),
            page_instance_id=binding.page_instance_id,
            conversation_id=binding.conversation_id,
        )
        self.drop()
        return [ToPeer(dump_message(message)), ClosePort("bye")]

    def drop(self) -> None:
        """Forget the current binding (bye, close, or the child reloaded)."""
        self.binding = None
        if self.child is not None and self.child.state is not BindState.CLOSED:
            self.child.close()
        if self.embedder is not None and self.embedder.state is not BindState.CLOSED:
            self.embedder.close()


def _take_handshake(
    conn: _Connection,
    raw: object,
    bound: Callable[[], list[Effect]],
    read: Callable[[object], list[Effect]],
) -> list[Effect] | None:
    """A port message while a handshake is pending (`_Connection.on_handshake`): its
    effects, the session's on binding (`bound`), and, for a message that bound the port
    without being `bound`, the session's on reading it (`read`). None when no handshake
    is pending."""
    handshake = conn.on_handshake(raw)
    if handshake is None:
        return None
    effects, unread = handshake
    if conn.binding is None:
        return effects
    effects += bound()
    return effects + read(raw) if unread else effects


def _flag_of(body: Mapping[str, object], action: Mapping[str, JsonValue]) -> bool:
    """True if an action API answer holds the flag the logged action `action` asked for:
    made for it (its id), of its row and its task."""
    flag = body.get("flag")
    if not isinstance(flag, dict):
        return False
    made = (flag.get("actionId"), flag.get("ref"), flag.get("taskId"))
    return made == (action.get("id"), action.get("resourceRef"), action.get("taskId"))


def _type_of(raw: object) -> object:
    return raw.get("type") if isinstance(raw, dict) else None


# A request to the action API gets this long (the worker ends it then, as `timeout`).
ACTION_TIMEOUT_MS: Final = 10_000
# A business action's layers: each counts from its own request, and outlasts that
# request's timeout, so that a request still on its way is never judged unconfirmed
# (and the user offered a check the request's answer could then contradict).
ACTION_DEADLINES_MS: Final = MappingProxyType(
    {"received": ACTION_TIMEOUT_MS + 1000, "business": ACTION_TIMEOUT_MS + 1000}
)


# How many applied commands may wait for their `ui` receipt at once (as many as the
# resolver remembers receipts for).
UI_PENDING_MAX = 1024


class PageSession:
    """The page party: tracks the selection, shares it, resolves commands."""

    def __init__(
        self,
        *,
        page_instance_id: str,
        clock: Callable[[], float],
        new_id: Callable[[], str],
        limits: Limits = DEFAULT_LIMITS,
        history: int = 256,
    ) -> None:
        """Raises LocalProtocolError if `page_instance_id` is not of the protocol's id
        shape (every message the page sends carries it)."""
        self.page_instance_id = _own_id("page_instance_id", page_instance_id)
        self.rendered = RenderedRegistry()
        self.tracker = SelectionTracker(
            page_instance_id=page_instance_id, clock=clock, history=history
        )
        self.resolver = CommandResolver(
            tracker=self.tracker, rendered=self.rendered, new_id=new_id, limits=limits
        )
        self._conn = _Connection(role="page", instance_id=page_instance_id, new_id=new_id)
        self._new_id = new_id
        self._limits = limits
        self._share_when_bound = False
        # The binding (connection, conversation) and revision last shared on it.
        self._shared: tuple[int, str, int] | None = None
        # Applied commands whose `ui` receipt waits for the edge's UI work, oldest first:
        # at most UI_PENDING_MAX (a command the page took over and never answers stays
        # unconfirmed at the assistant), and none from an earlier binding.
        self._ui_pending: dict[str, None] = {}

    @property
    def binding(self) -> Binding | None:
        """The current binding, or None while unbound."""
        return self._conn.binding

    @property
    def connecting(self) -> bool:
        """As the child: `connected` is sent, and the embedder's `bound` has not come."""
        return self._conn.pending is not None

    def on_view(
        self,
        component_id: str,
        *,
        page_id: str,
        filters: Mapping[str, Scalar | list[Scalar]],
        generation: int,
        refs: Iterable[str],
        shareable: Iterable[tuple[str, str | None]],
    ) -> None:
        """Record what a component renders now: its view, its objects and the fields it
        declares shareable."""
        self.declare(component_id, shareable)
        frozen = {k: tuple(v) if isinstance(v, list) else v for k, v in filters.items()}
        self.tracker.set_view(
            component_id, ComponentView(page_id=page_id, filters=frozen, generation=generation)
        )
        self.rendered.update(component_id, refs)

    def declare(self, component_id: str, shareable: Iterable[tuple[str, str | None]]) -> None:
        """Record the fields a component declares shareable now, as (name, unit or None)
        pairs. The edge reads them whenever a component renders, and again as a
        selection is made or shared, so a field the page stopped declaring does not
        leave with the next share (`share` narrows the selection)."""
        self.tracker.declare_component(
            component_id, [FieldSpec(name, unit) for name, unit in shareable]
        )

    def on_gone(self, component_ids: Iterable[str]) -> None:
        """Forget components the page took out of its document: nothing of them is kept,
        a command for one of their objects is `stale-context` (`view-changed`: the view
        it was based on is gone), and a component of that id that renders again is
        declared anew."""
        for component_id in component_ids:
            self.rendered.forget(component_id)
            self.tracker.forget_component(component_id)

    def on_select(
        self,
        component_id: str,
        resource_ref: str,
        values: Mapping[str, Scalar],
        *,
        seq: object = None,
    ) -> list[Effect]:
        """Record a new selection; it is shared when the user asks (share mode `ask`).

        A selection the tracker refuses (an undeclared component, one with no view yet,
        a value that is not valid for its field), or whose context the assistant would
        refuse (`_within_the_assistants_limits`), changes nothing: the edge is told why
        (`select-refused`, with the object refused, the one still selected, which it
        marks again, and `seq`, the edge's number for the selection, given back as it
        came), and counts it as a refused select.
        """
        try:
            revision, _selection = self.tracker.select(
                component_id, resource_ref, values, self._within_the_assistants_limits
            )
        except LocalProtocolError as error:
            current = self.tracker.current
            return [
                ToEdge(
                    {
                        "kind": "select-refused",
                        "reason": str(error),
                        "componentId": component_id,
                        "resourceRef": resource_ref,
                        "current": None
                        if current is None
                        else [current.component_id, current.resource_ref],
                        "seq": seq,
                    }
                )
            ]
        return [ToEdge({"kind": "selected", "revision": revision, "resourceRef": resource_ref})]

    def _within_the_assistants_limits(self, selection: Selection) -> None:
        """Raise LocalProtocolError if the assistant could refuse the context that shares
        `selection`: it checks every context against the protocol's default limits
        (docs/protocol.md section 4), and answers a refused one with nothing, so the
        user's question would go out about the selection before it. Checked by the
        assistant's own code on the longest envelope (a conversation id as long as the
        limit allows), so a selection taken here is never refused there for its size."""
        message = ContextMessage(
            message_id="m" * 64,
            page_instance_id=self.page_instance_id,
            conversation_id="c" * DEFAULT_LIMITS.max_id_chars,
            selection_revision=MAX_SAFE_INTEGER,
            selection=self.tracker.shareable(selection),
        )
        try:
            text = message.model_dump_json()
        except ValueError:
            # A lone surrogate (half a character) in a value: no JSON text carries it.
            raise LocalProtocolError(
                "can't select: a value holds half a character (a lone surrogate),"
                " which no JSON the assistant reads can carry"
            ) from None
        if parse_context_json(text) is not None:
            return
        try:
            parse_message(json.loads(text))
        except MessageRejected as rejected:
            raise LocalProtocolError(
                f"can't select: its context is over the limits the assistant applies"
                f" ({rejected.reason}: ids of at most {DEFAULT_LIMITS.max_id_chars} characters,"
                f" strings of {DEFAULT_LIMITS.max_string_chars},"
                f" {DEFAULT_LIMITS.max_filter_keys} filters,"
                f" {DEFAULT_LIMITS.max_snapshot_fields} shareable fields,"
                f" {DEFAULT_LIMITS.max_message_bytes} bytes in all)"
            ) from None

    def clear_selection(self) -> list[Effect]:
        """The user cleared the selection: a new revision with none. It is shared as a
        `selection-cleared` (`share`), so that the assistant no longer holds a context
        the user left. Nothing if nothing is selected."""
        if self.tracker.current is None:
            return []
        revision = self.tracker.clear()
        return [ToEdge({"kind": "selected", "revision": revision, "resourceRef": None})]

    def share(self) -> list[Effect]:
        """Send the current selection to the assistant, now or as soon as bound: a
        context, or a `selection-cleared` once the user cleared one. Nothing before any
        selection. A selection whose component has stopped sharing some of its fields
        goes as a new revision without them (`tracker.narrow`)."""
        if self.tracker.latest_revision == 0:
            return []
        if self._conn.binding is None:
            self._share_when_bound = True
            return [ToEdge({"kind": "share-queued"})]
        self._share_when_bound = False
        binding = self._conn.binding
        effects: list[Effect] = []
        narrowed = self.tracker.narrow()
        if narrowed is not None:
            current = self.tracker.current
            assert current is not None
            ref = current.resource_ref
            effects.append(ToEdge({"kind": "selected", "revision": narrowed, "resourceRef": ref}))
        shared = self._share_key(binding)
        if shared == self._shared:
            # Sent on this binding and conversation already. After a new conversation or
            # binding it goes again: the first may have crossed the assistant's switch
            # and been refused, and one it took comes back as a repeat, which changes
            # nothing and is not refused (docs/protocol.md 8.7).
            return effects
        self._shared = shared
        current = self.tracker.current
        message: ContextMessage | SelectionClearedMessage
        if current is None:
            message = SelectionClearedMessage(
                message_id=self._new_id(),
                page_instance_id=self.page_instance_id,
                conversation_id=binding.conversation_id,
                selection_revision=self.tracker.latest_revision,
            )
        else:
            message = ContextMessage(
                message_id=self._new_id(),
                page_instance_id=self.page_instance_id,
                conversation_id=binding.conversation_id,
                selection_revision=self.tracker.latest_revision,
                # As shareable as it is: narrow() above issued a revision if it was not.
                selection=current,
            )
        return [
            *effects,
            ToPeer(dump_message(message)),
            ToEdge({"kind": "shared", "revision": message.selection_revision}),
        ]

    def _share_key(self, binding: Binding) -> tuple[int, str, int]:
        """What a share is sent once for: the binding, its conversation, the revision."""
        return (binding.connection_id, binding.conversation_id, self.tracker.latest_revision)

    def attach_port(
        self, position: Position, nonce: str | None, peer: Mapping[str, object] | None = None
    ) -> list[Effect]:
        """Take a new port from the edge (see `_Connection.attach`)."""
        effects = self._conn.attach(position, nonce, peer, None)
        if self._conn.binding is not None:
            effects += self._bound()
        return effects

    def child_reloaded(self) -> list[Effect]:
        """The child frame loaded a new document: the old binding is gone."""
        self._conn.drop()
        return [ClosePort("child-reloaded"), ToEdge({"kind": "unbound"})]

    def bye(self) -> list[Effect]:
        """This document is going away (or closing the embed): say `bye` and unbind."""
        return [*self._conn.bye(), ToEdge({"kind": "unbound"})]

    def on_port_message(self, raw: object) -> list[Effect]:
        """Handle one message from the bound port."""
        handshake = _take_handshake(self._conn, raw, self._bound, self.on_port_message)
        if handshake is not None:
            return handshake
        if self._conn.binding is None:
            return []
        kind = _type_of(raw)
        if kind in ("conversation", "bye"):
            return self._control(raw)
        return self._resolved(self.resolver.resolve(raw))

    def on_port_unreadable(self, head: object, reason: str) -> list[Effect]:
        """A message from the bound port that the worker could not read as plain data
        (`reason`, `models.unreadable`); `head` holds its envelope's scalar fields. A
        command whose messageId can be read is answered `rejected` with the reason
        (docs/protocol.md section 5, step 1), as one that does not validate is; a control
        message is refused and counted. Nothing while no port is bound."""
        if self._conn.binding is None or self._conn.handshaking:
            return []
        if _type_of(head) in ("conversation", "bye"):
            return self._conn.refuse(reason)
        return self._resolved(self.resolver.refuse(unreadable(head, reason)))

    def _resolved(self, resolution: Resolution) -> list[Effect]:
        """What a resolved port message makes happen: its receipt, and the UI work of a
        command to apply."""
        effects: list[Effect] = []
        if resolution.receipt is not None:
            effects.append(ToPeer(dump_message(resolution.receipt)))
        command = resolution.apply
        if command is not None:
            self._ui_pending[command.command_id] = None
            if len(self._ui_pending) > UI_PENDING_MAX:
                del self._ui_pending[next(iter(self._ui_pending))]
            view = self.tracker.current_view(command.target.component_id)
            effects.append(ToEdge(_apply_instruction(command, view)))
        return effects

    def on_port_json(self, text: str) -> list[Effect]:
        """Handle one message from the bound port given as its JSON text.

        Raises ValueError if `text` is not JSON.
        """
        return self.on_port_message(json.loads(text))

    @property
    def refused(self) -> int:
        """Port messages refused so far: commands answered `rejected` or dropped unread,
        and control messages refused."""
        counts = self.resolver.counts
        accepted = sum(counts.get(reason, 0) for reason in _NOT_REFUSED)
        control = sum(self._conn.refused.values())
        # A message dropped unread is counted under its reason too.
        return sum(counts.values()) - accepted + control

    def diagnostics(self) -> dict[str, object]:
        """Counters for the diagnostics panel: command outcomes by reason, the components
        on the page, drops, refused control messages by reason."""
        return {
            "commands": dict(self.resolver.counts),
            "components": len(self.rendered),
            "control": dict(self._conn.refused),
            "dropped": self.resolver.dropped,
            "refused": self.refused,
        }

    def on_ui_done(
        self, command_id: str, status: Literal["applied", "not-found", "stale-context"], reason: str
    ) -> list[Effect]:
        """The edge finished (or could not do) the UI work of an applied command;
        `stale-context` when the component rendered another view before it could."""
        if command_id not in self._ui_pending or self._conn.binding is None:
            return []
        del self._ui_pending[command_id]
        receipt = self.resolver.ui_receipt(command_id, status, reason)
        return [ToPeer(dump_message(receipt))]

    def _bound(self) -> list[Effect]:
        binding = self._conn.binding
        assert binding is not None
        # A `ui` receipt of an earlier binding's command would settle nothing on this one.
        self._ui_pending.clear()
        # The conversation of the last binding, or of a `conversation` message since.
        left = self.resolver.conversation_id
        self.resolver.bind(self.page_instance_id, binding.conversation_id)
        effects: list[Effect] = [ToEdge({"kind": "bound", "connection": binding.connection_id})]
        if left is not None and left != binding.conversation_id:
            # An assistant that came back in another conversation (it reloaded with no
            # saved state): the highlights of the one left go, as for a `conversation`
            # message (docs/protocol.md 8.14).
            effects.append(
                ToEdge({"kind": "conversation", "conversationId": binding.conversation_id})
            )
        if self._share_when_bound:
            effects += self.share()
        return effects

    def _control(self, raw: object) -> list[Effect]:
        try:
            message = parse_message(raw, self._limits)
        except MessageRejected as rejected:
            return self._conn.refuse(rejected.reason)
        binding = self._conn.binding
        assert binding is not None
        # Both are for this page instance only; a bye must also name the bound
        # conversation, like every other message from the assistant (step 2).
        if message.page_instance_id != self.page_instance_id:
            return self._conn.refuse("page-instance")
        if isinstance(message, ByeMessage):
            if message.conversation_id != binding.conversation_id:
                return self._conn.refuse("conversation-mismatch")
            self._conn.drop()
            return [ClosePort("bye"), ToEdge({"kind": "unbound"})]
        if isinstance(message, ConversationMessage):
            if not is_instance_id(message.conversation_id):
                # A conversation id follows connect's rule (docs/protocol.md 8.1, 8.3): one
                # the page could not name in a later handshake is no conversation of it.
                return self._conn.refuse("malformed")
            self._conn.binding = Binding(
                connection_id=binding.connection_id,
                page_instance_id=binding.page_instance_id,
                conversation_id=message.conversation_id,
                peer_instance_id=binding.peer_instance_id,
            )
            self.resolver.bind(self.page_instance_id, message.conversation_id)
            # The highlights of the conversation left go from the page (docs/protocol.md 8.14).
            effects: list[Effect] = [
                ToEdge({"kind": "conversation", "conversationId": message.conversation_id})
            ]
            if self._shared == self._share_key(binding):
                # The selection shared last went out stamped with the conversation the
                # assistant has left, and may have crossed this message and been refused:
                # sent again, it is taken, or is a repeat (docs/protocol.md 8.7).
                effects += self.share()
            return effects
        return []


def _apply_instruction(command: CommandMessage, view: ComponentView | None) -> dict[str, object]:
    # The generation the command was checked against: the edge does the UI work only if
    # the component still shows it (it may have rendered again since).
    return {
        "kind": "apply",
        "commandId": command.command_id,
        "action": command.action,
        "componentId": command.target.component_id,
        "resourceRef": command.target.resource_ref,
        "tone": command.params.get("tone"),
        "focus": command.params.get("focus"),
        "basisRevision": command.basis_revision,
        "generation": view.generation if view is not None else None,
    }


def _record_view(record: LayerRecord | None) -> dict[str, JsonValue] | None:
    if record is None:
        return None
    return {
        "state": record.state,
        "reason": record.reason,
        "late": record.late,
        "lateStatus": record.late_status,
    }


_SETTLED: Final[frozenset[LayerState]] = frozenset(get_args(LayerState)) - {"pending"}


def _checkable(business: LayerRecord) -> bool:
    """True if the server may be asked whether a business action happened (the rule the
    panel draws its button by: `integration.action_checkable`)."""
    return action_checkable(_record_view(business))


def _own_id(name: str, value: str) -> str:
    """`value`, an id this party puts in the messages it sends; raises LocalProtocolError
    if it is not one the handshake may name (`windowrules.is_instance_id`), which the
    peer would refuse."""
    if not is_instance_id(value):
        raise LocalProtocolError(
            f"{name} must be 1-64 characters of the base64url alphabet, got {value!r:.80}"
        )
    return value


def _view_record(view: object) -> LayerRecord | None:
    """The ledger record a saved layer view (`_record_view`'s) stands for; None if it is
    not one, or its layer had not ended."""
    if not is_layer_view(view) or view["state"] not in _SETTLED:
        return None
    return LayerRecord(
        state=view["state"],
        reason=view.get("reason"),
        late=view.get("late", False),
        late_status=view.get("lateStatus"),
    )


class AssistantSession:
    """The assistant party: commits contexts, pins them, sends commands, keeps receipts."""

    def __init__(
        self,
        *,
        instance_id: str,
        conversation_id: str,
        clock: Callable[[], float],
        new_id: Callable[[], str],
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.instance_id = _own_id("instance_id", instance_id)
        self.conversation_id = _own_id("conversation_id", conversation_id)
        self.receiver = ContextReceiver(limits=limits)
        self.ledger = ReceiptLedger(clock=clock)
        # Business actions whose confirmation or flag request has not ended.
        self._in_flight: set[str] = set()
        # Business actions with a check on its way, and when it was sent: one at a time,
        # so that the panel's line about the last check is about the last one sent. One
        # older than a request's own timeout has ended whether or not it was heard of.
        self._checking: dict[str, float] = {}
        self._clock = clock
        self._conn = _Connection(role="assistant", instance_id=instance_id, new_id=new_id)
        self._new_id = new_id
        self._limits = limits
        self._pinned: ContextMessage | None = None
        self._pinned_wire: dict[str, object] | None = None
        self.pinned_restored = False
        # The page's selection-cleared that was the last revision taken before the
        # assistant reloaded (page instance, revision), from the saved state.
        self._cleared_restored: tuple[str, int] | None = None
        # The last "Show me"'s two commands: the panel's receipt line follows the
        # highlight, and names the locate when it settled otherwise (a row that cannot
        # take the focus).
        self.last_show: str | None = None
        self.last_locate: str | None = None
        self._composer = Composer()
        self._composer_stale = False
        # "What the AI sees" is composed for the panel only while it is open.
        self.preview_shown = False
        # The user's `Authorization` header value for the action API; None sends none.
        self.authorization: str | None = None
        # The one handed to the agent (`forwardedProps.authorization`), never the user's
        # own: a credential that reads as the user and cannot act; None hands none.
        self.agent_authorization: str | None = None
        # Readables the page or the assistant registered for the agent.
        self.context_store = ContextStore()
        self._run: _Run | None = None
        # Answers ended by a failure inside the assistant (`internal-error`).
        self.internal_errors = 0

    @property
    def binding(self) -> Binding | None:
        """The current binding, or None while unbound."""
        return self._conn.binding

    @property
    def connecting(self) -> bool:
        """As the child: `connected` is sent, and the embedder's `bound` has not come."""
        return self._conn.pending is not None

    @property
    def pinned(self) -> ContextMessage | None:
        """The context the next question is pinned to (the chip), or None."""
        return self._pinned

    @pinned.setter
    def pinned(self, message: ContextMessage | None) -> None:
        self._pinned = message
        self._pinned_wire = None  # dumped again only when shown or persisted
        # Registered with the composer only when it is next used: a burst of contexts
        # costs one registration, not one per context.
        self._composer_stale = True

    @property
    def composer(self) -> Composer:
        """The composer, with the pinned selection registered as its items."""
        if self._composer_stale:
            self._composer_stale = False
            pinned = self._pinned
            self._composer.set_selection(pinned.selection if pinned is not None else None)
        return self._composer

    @property
    def chip_shown(self) -> bool:
        """True if a context is pinned and the user has not removed its chip."""
        return self._pinned is not None and bool(self.composer.chips())

    @property
    def shown_chip(self) -> ShownChip | None:
        """The chip the panel's state shows now, as (pageInstanceId, selectionRevision),
        or None: what a question sent now is pinned to (`ask`)."""
        pinned = self._pinned
        if pinned is None or not self.chip_shown:
            return None
        return (pinned.page_instance_id, pinned.selection_revision)

    def _pinned_as_wire(self) -> dict[str, object] | None:
        if self._pinned is not None and self._pinned_wire is None:
            self._pinned_wire = dump_message(self._pinned)
        return self._pinned_wire

    def attach_port(
        self,
        position: Position,
        nonce: str | None,
        peer: Mapping[str, object] | None = None,
        conversation_id: str | None = None,
    ) -> list[Effect]:
        """Take a new port from the edge (see `_Connection.attach`).

        As the embedder, `conversation_id` is the conversation the edge named in the
        `connect` it sent with this port (default: the current one): the child echoes
        that one, also when a new conversation began since. Bound on an earlier
        conversation, the page is switched to the current one at once (`_bound`).
        """
        previous = self._conn.binding
        named = self.conversation_id
        if position == "embedder" and conversation_id is not None:
            named = conversation_id
        effects = self._conn.attach(position, nonce, peer, named)
        if previous is not None:
            # The old port is gone: its in-flight commands can no longer be confirmed.
            self.ledger.drop_connection(previous.connection_id)
        if self._conn.binding is not None:
            effects += self._bound()
        return effects

    def child_reloaded(self) -> list[Effect]:
        """The child frame loaded a new document: in-flight commands become unconfirmed."""
        binding = self._conn.binding
        self._conn.drop()
        if binding is not None:
            self.ledger.drop_connection(binding.connection_id)
        return [ClosePort("child-reloaded"), _STATE]

    def bye(self) -> list[Effect]:
        """This document is going away: say `bye`; in-flight commands become unconfirmed."""
        binding = self._conn.binding
        effects = self._conn.bye()
        if binding is not None:
            self.ledger.drop_connection(binding.connection_id)
        return [*effects, _STATE]

    def on_port_message(self, raw: object) -> list[Effect]:
        """Handle one message from the bound port."""
        handshake = _take_handshake(self._conn, raw, self._bound, self.on_port_message)
        if handshake is not None:
            return handshake
        binding = self._conn.binding
        if binding is None:
            return []
        kind = _type_of(raw)
        if kind in ("context", "selection-cleared"):
            return self._received(self.receiver.receive(raw))
        if kind not in ("receipt", "bye"):
            return self._conn.refuse("unexpected-type")
        try:
            message = parse_message(raw, self._limits)
        except MessageRejected as rejected:
            return self._conn.refuse(rejected.reason)
        if isinstance(message, ReceiptMessage):
            if (
                message.page_instance_id != binding.page_instance_id
                or message.conversation_id != self.conversation_id
            ):
                # Stamped for another page instance or an old conversation: not ours.
                self.ledger.ignore()
                return [_STATE]
            self.ledger.on_receipt(message, binding.connection_id)
            return [_STATE, _PERSIST]
        # Only a valid bye from the bound page instance and conversation closes.
        if (
            isinstance(message, ByeMessage)
            and message.page_instance_id == binding.page_instance_id
            and message.conversation_id == self.conversation_id
        ):
            self._conn.drop()
            self.ledger.drop_connection(binding.connection_id)
            return [ClosePort("bye"), _STATE]
        return self._conn.refuse(
            "page-instance"
            if message.page_instance_id != binding.page_instance_id
            else "conversation-mismatch"
        )

    def on_port_json(self, text: str) -> list[Effect]:
        """Handle one message from the bound port given as its compact JSON text.

        The same outcome as `on_port_message(json.loads(text))`; a valid context message
        (the one a page sends in bursts) is checked and committed on a faster path.
        Raises ValueError if `text` is not JSON.
        """
        if self._conn.binding is not None and not self._conn.handshaking:
            message = parse_context_json(text, self._limits)
            if message is not None:
                return self._received(self.receiver.admit(message))
        return self.on_port_message(json.loads(text))

    def _received(self, result: ReceiveResult) -> list[Effect]:
        # A commit, or the page's repeat of the restored revision (the same selection, which
        # the receiver holds since `resume`): the pinned context is the page's, live.
        if isinstance(result, Accepted) or (isinstance(result, Repeated) and self.pinned_restored):
            self.pinned = self.receiver.committed
            self.pinned_restored = False
            return [_STATE, _PERSIST]
        return [_STATE]

    @property
    def refused(self) -> int:
        """Port messages refused so far: contexts refused, receipts ignored, and control
        messages refused."""
        control = sum(self._conn.refused.values())
        return sum(self.receiver.counts.values()) + self.ledger.ignored + control

    def diagnostics(self) -> dict[str, object]:
        """Counters for the diagnostics panel: refused contexts by reason, ignored
        receipts, refused control messages by reason."""
        return {
            "contexts": dict(self.receiver.counts),
            "control": dict(self._conn.refused),
            "ignoredReceipts": self.ledger.ignored,
            "internalErrors": self.internal_errors,
            "refused": self.refused,
        }

    @property
    def busy(self) -> bool:
        """Whether an answer runs, a business action's request is on its way, or a
        command or action waits for its receipt: what they settle belongs to the log."""
        return self._run is not None or bool(self._in_flight) or self.ledger.settling

    def new_conversation(self, conversation_id: str) -> list[Effect]:
        """The user started a new conversation: its log starts empty (`Composer.clear_log`),
        and the page is told, which stamps its messages with it from now on.

        The page instance's revision sequence goes on; the pinned context stays pinned,
        and a removed chip stays removed. While `busy`, nothing changes and the panel is
        told (`new-conversation-refused`): the page stamps the receipts of what is on
        its way with the conversation it was sent in, which a new one would refuse.
        Raises LocalProtocolError, changing nothing, if `conversation_id` is not of the
        protocol's id shape.
        """
        _own_id("conversation_id", conversation_id)
        if self.busy:
            return [ToEdge({"kind": "new-conversation-refused"})]
        self.composer.clear_log()
        self.last_show = self.last_locate = None
        self.conversation_id = conversation_id
        # The edge names it in the next `connect` it sends as an embedder.
        effects: list[Effect] = [
            ToEdge({"kind": "conversation", "conversationId": conversation_id})
        ]
        binding = self._conn.binding
        if binding is not None:
            effects += self._switch_conversation(binding)
        return [*effects, _STATE, _PERSIST]

    def _switch_conversation(self, binding: Binding) -> list[Effect]:
        """Tell the bound page that the conversation is now `self.conversation_id`; the
        binding's own messages (`bye`) are stamped with it from now on."""
        self._conn.binding = replace(binding, conversation_id=self.conversation_id)
        self.receiver.bind(binding.page_instance_id, self.conversation_id)
        message = ConversationMessage(
            message_id=self._new_id(),
            page_instance_id=binding.page_instance_id,
            conversation_id=self.conversation_id,
        )
        return [ToPeer(dump_message(message))]

    def remove_chip(self, key: str | None = None) -> list[Effect]:
        """The user removed a chip (default: the pinned selection's): it stays removed,
        also when the page sends the same object again, until `restore_chips`."""
        removed = [chip.key for chip in self.composer.chips() if key is None or chip.key == key]
        for chip_key in removed:
            self.composer.dismiss(chip_key)
        run = self._run
        if run is not None and run.task is not None:
            task = run.task
            if object_key(task.page_id, task.component_id, task.resource_ref) in removed:
                # The answer's follow-up runs no longer carry what the user saw.
                run.task = task.model_copy(update={"snapshot": {}})
        return [_STATE, _PERSIST]

    def restore_chips(self) -> list[Effect]:
        """Bring back every chip the user removed."""
        self.composer.undismiss_all()
        return [_STATE, _PERSIST]

    def show_preview(self, shown: bool) -> list[Effect]:
        """The panel opened or closed "What the AI sees". While it is closed, the panel's
        state carries no preview (`None`), and a new context is not composed for it."""
        if shown == self.preview_shown:
            return []
        self.preview_shown = shown
        return [_STATE]

    def ask(self, question: str, at: str, *, shown: ShownChip | None) -> list[Effect]:
        """The user sends `question` (observed at ISO time `at`) and the agent is asked.

        The question is recorded with the exact text sent and pinned to a task: the
        committed context at this moment, unless the user removed its chip (docs/protocol.md
        section 7). Later selections never retarget it. `shown` is the chip the panel
        showed as the user sent it (`shown_chip` of the state it drew): if the context
        changed since (a newer one committed, the chip removed), nothing is asked, and
        the panel gets the question back (`ask-refused`), so that what reaches the agent
        is only ever what the user saw. Raises ValueError for an empty question, or
        while an answer is still running.
        """
        if self._run is not None:
            raise ValueError("an answer is still running")
        if shown != self.shown_chip:
            return [
                ToEdge({"kind": "ask-refused", "reason": "context-changed", "question": question})
            ]
        question_id = self._new_id()
        pinned = self.pinned if self.chip_shown else None
        task = None
        if pinned is not None:
            selection = pinned.selection
            task = TaskContext(
                task_id=question_id,
                page_id=selection.page_id,
                component_id=selection.component_id,
                resource_ref=selection.resource_ref,
                observed_at=selection.observed_at,
                basis_revision=pinned.selection_revision,
                snapshot=selection.snapshot or {},
            )
        asked = _Asked(tuple(self.composer.in_play()), self.composer.context_room)
        self.composer.send(question, entry_id=question_id, at=at)
        page_instance_id = pinned.page_instance_id if pinned is not None else None
        return self._start_run(task, page_instance_id, asked)

    def _start_run(
        self,
        task: TaskContext | None,
        page_instance_id: str | None,
        asked: _Asked,
        follow_up: int = 0,
    ) -> list[Effect]:
        """Start a run for `task` with the conversation so far; its context tools answer
        from `asked`. A run input that cannot be built (a failure inside the assistant)
        ends the answer at once (`internal-error`): the assistant is never left
        answering a run that was never sent."""
        run_id = self._new_id()
        task_id = task.task_id if task is not None else None
        about = task.resource_ref if task is not None else None
        try:
            body = self._run_body(run_id, task)
        except Exception as error:
            self.internal_errors += 1
            self.composer.start_answer(run_id, task_id=task_id, about=about)
            self._failed_inside(run_id, error)
            return [_STATE, _PERSIST]
        self._run = _Run(
            run_id,
            task,
            page_instance_id,
            asked,
            AnswerStream(thread_id=self.conversation_id, run_id=run_id),
            follow_up,
        )
        self.composer.start_answer(run_id, task_id=task_id, about=about)
        return [StartRun(run_id, body), _STATE, _PERSIST]

    def _run_body(self, run_id: str, task: TaskContext | None) -> str:
        """The JSON body of run `run_id`'s `RunAgentInput`: the conversation so far, the
        tools, the readables and the task, and the agent's credential."""
        # The readables within the block's total budget; the task's description is the
        # assistant's own, so a readable registered under it is left out.
        context = [
            entry
            for entry in self.context_store.context_for(AGENT_ID, DEFAULT_BUDGET.total_chars)
            if entry.description != TASK_CONTEXT_DESCRIPTION
        ]
        if task is not None:
            context.append(task_context_entry(task))
        run_input = build_run_input(
            self.conversation_id,
            run_id,
            run_messages(self.composer.log, self.composer.max_run_chars),
            assistant_tools(),
            context,
            {AUTHORIZATION_PROP: self.agent_authorization} if self.agent_authorization else None,
        )
        return run_input.model_dump_json(by_alias=True, exclude_none=True)

    @property
    def answering(self) -> str | None:
        """The id of the run whose answer is streaming, or None."""
        return self._run.run_id if self._run is not None else None

    def on_agent_text(self, run_id: str, text: str) -> list[Effect]:
        """More of run `run_id`'s event stream arrived, as text."""
        run = self._run
        if run is None or run.run_id != run_id:
            return []
        return self._answer_updates(run, run.stream.feed(text))

    def on_agent_end(self, run_id: str) -> list[Effect]:
        """Run `run_id`'s stream ended."""
        run = self._run
        if run is None or run.run_id != run_id:
            return []
        return self._answer_updates(run, run.stream.end())

    def on_agent_failed(self, run_id: str, code: str, message: str) -> list[Effect]:
        """Run `run_id` failed before its stream ended: `code` is "agent-unreachable",
        "http-<status>" or "timeout". The text already received stays."""
        run = self._run
        if run is None or run.run_id != run_id:
            return []
        return self._answer_updates(run, run.stream.fail(code, message))

    def stop_answer(self) -> list[Effect]:
        """The user stopped the answer running: it ends failed with `stopped`, keeping the
        text already received, and no follow-up run of it starts (the worker stops
        reading its stream). Nothing if no answer runs."""
        run = self._run
        if run is None:
            return []
        return self._answer_updates(run, run.stream.fail(STOPPED, "stopped by the user"))

    def _answer_updates(self, run: _Run, updates: list[Update]) -> list[Effect]:
        effects: list[Effect] = []
        try:
            for update in updates:
                if isinstance(update, TextDelta):
                    self.composer.answer_text(run.run_id, update.delta, update.message_id)
                elif isinstance(update, ToolCallMade):
                    effects += self._tool_call(run, update)
                else:
                    self.composer.answer_ended(run.run_id, update.code, update.message)
                    self._run = None
                    if update.ok and run.wants_more and run.follow_up < MAX_FOLLOW_UPS:
                        # The agent asked for context: it gets the results in a new run.
                        effects += self._start_run(
                            run.task, run.page_instance_id, run.asked, run.follow_up + 1
                        )
        except Exception as error:
            # Whatever went wrong, the answer ends: an assistant left answering would
            # refuse every question until a reload.
            if self._run is run:
                self._run = None
                self._failed_inside(run.run_id, error)
            self.internal_errors += 1
            return [*effects, _STATE, _PERSIST]
        return [*effects, _STATE, _PERSIST] if updates else []

    def _failed_inside(self, run_id: str, error: Exception) -> None:
        """End run `run_id`'s answer with `internal-error`, naming what failed."""
        message = f"{type(error).__name__}: {error}"[:_ERROR_MESSAGE_CHARS]
        self.composer.answer_ended(run_id, INTERNAL_ERROR, message)

    def _tool_call(self, run: _Run, call: ToolCallMade) -> list[Effect]:
        """Carry out a tool call of the running answer, for the answer's pinned task."""
        task = run.task
        refused: str | None = None
        detail = ""
        result: str | None = None
        effects: list[Effect] = []
        try:
            if self._tool_call_known(call.call_id):
                # Its result, a proposal or a receipt would be taken for the earlier one's.
                raise ToolCallError(call.name, "duplicate-id", "an earlier tool call has this id")
            if call.name in CONTEXT_TOOL_NAMES:
                asked = run.asked
                result = self.composer.context_result(
                    context_tool_call(call.name, call.arguments), asked.items, asked.room
                )
                asked.room -= len(result)
                run.wants_more = True
            elif task is None or run.page_instance_id is None:
                raise ToolCallError(call.name, "no-task", "the question had no pinned selection")
            elif call.name in BUSINESS_TOOL_NAMES:
                proposal = business_proposal(call.name, call.arguments)
                if proposal.resource_ref != task.resource_ref:
                    # The user confirms an action on what they asked about, and nothing
                    # else: an agent the page's data misled cannot aim it elsewhere.
                    raise ToolCallError(
                        call.name, "not-pinned", "a business action is for the task's own row"
                    )
                self.composer.record_action(
                    call.call_id,
                    action=proposal.action,
                    resource_ref=proposal.resource_ref,
                    note=proposal.note,
                    task_id=task.task_id,
                )
            else:
                page = tool_call_command(call.name, call.arguments)
                _, effects = self._send_command(
                    run.page_instance_id,
                    task.basis_revision,
                    page.action,
                    page.target,
                    page.params,
                    tool_call_id=call.call_id,
                )
        except ToolCallError as error:
            refused, detail = error.reason, error.detail
        self.composer.answer_tool_call(
            run.run_id,
            call.call_id,
            call.name,
            call.arguments,
            refused=refused,
            detail=detail,
            result=result,
        )
        return effects

    def _tool_call_known(self, call_id: str) -> bool:
        """True if this conversation already uses this id: an entry of the log (a question,
        an answer, a command, an action), a tool call, or a command the ledger still tracks.
        The agent sees the run's own id, and a tool call under it must not be taken for
        the answer."""
        if self.composer.id_taken(call_id):
            return True
        try:
            self.ledger.get(call_id)
        except KeyError:
            return False
        return True

    def _send_command(
        self,
        page_instance_id: str,
        basis_revision: int,
        action: Action,
        target: Target,
        params: Mapping[str, str],
        *,
        tool_call_id: str | None = None,
    ) -> tuple[str, list[Effect]]:
        """Build a command, record it in the ledger and the log, and send it if bound;
        return its id and the effects.

        Unbound, the command is recorded but not sent: nobody can answer it, so its
        deadline turns it into `unconfirmed`, never into success.
        """
        command = CommandMessage(
            type="command",
            message_id=self._new_id(),
            page_instance_id=page_instance_id,
            conversation_id=self.conversation_id,
            basis_revision=basis_revision,
            action=action,
            target=target,
            params=dict(params),
        )
        binding = self._conn.binding
        connection = binding.connection_id if binding is not None else 0
        self.ledger.record(command.command_id, connection)
        self.composer.record_command(
            command.command_id,
            command.action,
            command.target.resource_ref,
            tool_call_id=tool_call_id,
        )
        return command.command_id, [ToPeer(dump_message(command))] if binding is not None else []

    # -- business actions (the page origin's action API, never the page channel) ---------

    def confirm_action(self, action_id: str) -> list[Effect]:
        """The user confirmed the proposed action `action_id`: ask the server for a
        confirmation token bound to its task. Anything but a waiting proposal is ignored."""
        entry = self._proposal(action_id)
        if entry is None:
            return []
        self.composer.decide_action(action_id, "confirmed")
        self.ledger.record(action_id, _NO_CONNECTION, ("received", "business"), ACTION_DEADLINES_MS)
        self._in_flight.add(action_id)
        body = {"ref": entry["resourceRef"], "taskId": entry["taskId"]}
        request = ActionRequest(action_id, "confirm", FLAG_CONFIRMATIONS_PATH, _compact(body))
        return [request, _STATE, _PERSIST]

    def check_action(self, action_id: str) -> list[Effect]:
        """Ask the server whether a confirmed action that stayed unconfirmed happened.

        Only for an action whose `business` layer is unconfirmed with no late answer
        yet, or only "not found" (a flag request on its way, from this document or
        another, may be written since): the server's answer is recorded late (`applied`
        if the flag exists, `not-found` if not), and never turns unconfirmed into
        success.
        """
        try:
            entry = self.composer.entry(action_id, "action")
            business = self.ledger.get(action_id)["business"]
        except KeyError:
            return []
        if entry.get("kind") != "action" or not _checkable(business):
            return []
        if action_id in self._in_flight:
            return []  # its own request may still answer
        sent = self._checking.get(action_id)
        if sent is not None and self._clock() - sent < ACTION_TIMEOUT_MS:
            return []  # the check sent before it has not ended
        self._checking[action_id] = self._clock()
        query = urlencode(
            {"ref": entry["resourceRef"], "taskId": entry["taskId"], "actionId": action_id}
        )
        return [ActionRequest(action_id, "check", f"{FLAGS_PATH}?{query}", None)]

    def decline_action(self, action_id: str) -> list[Effect]:
        """The user declined the proposed action `action_id`: nothing is sent."""
        if self._proposal(action_id) is None:
            return []
        self.composer.decide_action(action_id, "declined")
        return [_STATE, _PERSIST]

    def on_action_answer(
        self, action_id: str, step: str, status: int, body: Mapping[str, object]
    ) -> list[Effect]:
        """The action API answered `step` of `action_id` with HTTP `status` and `body`.

        Success is recorded only from the server's 201, or its 200 with the flag this
        very action already had (its row, its task); a refusal keeps the server's
        reason. A failure (5xx) of the flag request is no usable answer
        (`on_action_failed`). An answer past the layer's deadline is recorded late, never
        as success.
        """
        if step == "execute" and status >= 500:
            # The server failed the flag request (a gateway's 502 may come after the
            # server wrote the flag): no usable answer, as if none came. The row may or
            # may not be flagged, which a check can find out.
            return self.on_action_failed(action_id, step, f"http-{status}")
        layer = _action_layer(step)
        reason = body.get("reason")
        effects: list[Effect] = []
        if step != "check":
            self._in_flight.discard(action_id)
        if step == "check":
            self._checking.pop(action_id, None)
            try:
                self.composer.entry(action_id, "action")
            except KeyError:
                return []  # a new conversation since: its log has no such action
            listed = body.get("flags")
            if status != 200 or not isinstance(listed, list):
                return self._checked(
                    action_id, "malformed-answer" if status == 200 else f"http-{status}"
                )
            checked = self._checked(action_id, None)
            # Only a flag made for this very action: another action's on the same row and
            # task (proposed again, say) says nothing of this one.
            flags = [f for f in listed if isinstance(f, dict) and f.get("actionId") == action_id]
            found: LayerState = "applied" if flags else "not-found"
            record = self.ledger.settle(action_id, "business", found, "checked")
            if record is None and flags:
                # "Not found" when asked before: the flag came since.
                record = self.ledger.found_later(action_id, "business")
            if record is not None and flags:
                self.composer.action_result(action_id, json.loads(_compact(flags[0])))
            if record is None:
                return checked
        elif status != 201 and not (
            step == "execute" and status == 200 and self._its_flag(action_id, body)
        ):
            # The server's reason is kept if it is a word; other text never reaches the
            # panel or the agent (conversation.tool_result) as the server's reason. A
            # failure (5xx) is named by its status, whatever its body says: it is not a
            # refusal (integration.action_unsent).
            why = reason if status < 500 and is_reason(reason) else f"http-{status}"
            record = self.ledger.settle(action_id, layer, "rejected", why)
        elif step == "confirm":
            record = self.ledger.settle(action_id, layer, "applied", "confirmation-issued")
            token = body.get("token")
            if record is not None and record.state == "applied" and isinstance(token, str):
                entry = self.composer.entry(action_id, "action")
                execute = {
                    "ref": entry["resourceRef"],
                    "taskId": entry["taskId"],
                    "confirmationToken": token,
                    "note": entry.get("note"),
                    "actionId": action_id,
                }
                effects.append(ActionRequest(action_id, "execute", FLAG_PATH, _compact(execute)))
                self.ledger.start(action_id, "business")
                self._in_flight.add(action_id)
        else:
            # A 201, or the server's 200 with the flag this very action already had (its
            # proposal confirmed in another tab, say): done, once.
            record = self.ledger.settle(action_id, layer, "applied", "done")
            flag = body.get("flag")
            if record is not None and isinstance(flag, dict):
                self.composer.action_result(action_id, json.loads(_compact(flag)))
        if record is None:
            return []
        return [*effects, _STATE, _PERSIST]

    def _its_flag(self, action_id: str, body: Mapping[str, object]) -> bool:
        """True if an answer's flag is the one the logged action `action_id` asked for."""
        try:
            return _flag_of(body, self.composer.entry(action_id, "action"))
        except KeyError:
            return False

    def on_action_failed(self, action_id: str, step: str, code: str) -> list[Effect]:
        """`step` of `action_id` got no answer, or none it can use (`code` e.g.
        "timeout", "unreachable", or "http-502" for a flag request the server failed):
        the layer is unconfirmed, never success. The server may still have acted."""
        layer = _action_layer(step)
        if step != "check":
            self._in_flight.discard(action_id)
        else:
            self._checking.pop(action_id, None)
        try:
            current = self.ledger.get(action_id)[layer]
        except KeyError:
            return []
        if step == "check":
            return self._checked(action_id, code)
        # Already settled (its deadline passed first, say): no answer is not an answer.
        if current.state != "pending":
            return []
        self.ledger.settle(action_id, layer, "unconfirmed", code)
        return [_STATE, _PERSIST]

    def _checked(self, action_id: str, failure: str | None) -> list[Effect]:
        """A check of `action_id` was answered (`failure` None) or got no usable answer:
        the panel says so, and nothing else changes (it may be asked again). Once the
        server's last word is in ("flagged later"), there is nothing left to check."""
        try:
            business = self.ledger.get(action_id)["business"]
            if failure is not None and not _checkable(business):
                return []
            changed = self.composer.action_checked(action_id, failure)
        except KeyError:
            return []
        return [_STATE, _PERSIST] if changed else []

    def _proposal(self, action_id: str) -> Mapping[str, JsonValue] | None:
        try:
            entry = self.composer.entry(action_id, "action")
        except KeyError:
            return None
        if entry.get("kind") != "action" or entry.get("decision") != "proposed":
            return None
        return entry

    def show(self) -> list[Effect]:
        """Send highlight (focus) and locate for the pinned selection."""
        pinned = self.pinned
        if pinned is None or not self.chip_shown:
            return []
        effects: list[Effect] = []
        target = Target(
            component_id=pinned.selection.component_id,
            resource_ref=pinned.selection.resource_ref,
        )
        show: tuple[tuple[Action, dict[str, str]], ...] = (
            ("highlight", {"tone": "focus"}),
            ("locate", {}),
        )
        self.composer.supersede_commands(
            (self.last_show, self.last_locate), pinned.selection.resource_ref
        )
        for action, params in show:
            command_id, sent = self._send_command(
                pinned.page_instance_id, pinned.selection_revision, action, target, params
            )
            effects += sent
            if action == "highlight":
                self.last_show = command_id
            else:
                self.last_locate = command_id
        return [*effects, _STATE, _PERSIST]

    def tick(self) -> list[Effect]:
        """The clock passed a deadline: pending layers become unconfirmed. A business
        action whose layer did is no longer waited for: its deadline outlasts its
        request's timeout, so a request that has not ended by then never will."""
        expired = self.ledger.expire()
        for command_id, _layer in expired:
            self._in_flight.discard(command_id)
        return [_STATE, _PERSIST] if expired else []

    def restore(self, saved: Mapping[str, object]) -> None:
        """Restore the pinned context saved by `_persist`, marked as restored, or the
        page's selection-cleared that came after it, which bound again to the same page
        instance is its last revision (docs/protocol.md 8.7).

        Nothing is sent: a restored context is shown, and a command for it is only sent
        when the user asks again (the page then judges it against its own instance). A
        state of another format restores nothing (`integration.saved_state_readable`).
        """
        if not saved_state_readable(saved):
            return
        composer = saved.get("composer")
        if isinstance(composer, dict):
            self.composer.restore(composer)
            self._restore_unconfirmed_actions()
        chip = saved.get("pinned")
        if isinstance(chip, dict):
            try:
                message = parse_message(chip, self._limits)
            except MessageRejected:
                message = None
            if isinstance(message, ContextMessage):
                self.pinned = message
                self.pinned_restored = True
        cleared = saved.get("cleared")
        if isinstance(cleared, dict):
            instance = cleared.get("pageInstanceId")
            revision = cleared.get("selectionRevision")
            # An id the handshake could have bound (none other is compared with).
            if (
                isinstance(instance, str)
                and is_instance_id(instance)
                and type(revision) is int
                and 0 < revision <= MAX_SAFE_INTEGER
            ):
                self._cleared_restored = (instance, revision)

    def _restore_unconfirmed_actions(self) -> None:
        """Put the restored business actions the user may still check with the server
        (`_checkable`: the assistant reloaded while one was on its way, say) back in the
        ledger, so that the check works on them as on any other."""
        for entry in self.composer.log:
            if entry.get("kind") != "action" or not entry.get("restored"):
                continue
            if entry.get("decision") != "confirmed":
                continue  # nothing was sent for it
            received = _view_record(entry.get("received"))
            business = _view_record(entry.get("business"))
            entry_id = entry.get("id")
            if received is None or business is None or not isinstance(entry_id, str):
                continue
            if _checkable(business):
                layers: dict[LayerName, LayerRecord] = {
                    "received": received,
                    "business": business,
                }
                self.ledger.restore(entry_id, _NO_CONNECTION, layers)

    def edge_message(self, kind: Literal["state", "persist"]) -> dict[str, object]:
        """Build the message a `Refresh(kind)` effect stands for."""
        return self.state().message if kind == "state" else self._persist().message

    def _command_view(self, command_id: str | None, action: str) -> dict[str, object] | None:
        """A Show me command's receipts, as the panel shows them; None if there is none,
        or the ledger forgot it (its capacity of newer commands came since)."""
        try:
            layers = self.ledger.get(command_id) if command_id is not None else None
        except KeyError:
            layers = None
        if layers is None:
            return None
        return {
            "commandId": command_id,
            "action": action,
            "received": _record_view(layers.get("received")),
            "ui": _record_view(layers.get("ui")),
        }

    def state(self) -> ToEdge:
        """What the panel shows: binding, the chip, and the last command's receipts."""
        chip: dict[str, object] | None = None
        pinned = self.pinned
        self._sync_log()
        if pinned is not None and self.chip_shown:
            message = self._pinned_as_wire()
            assert message is not None
            wire = message["selection"]
            assert isinstance(wire, dict)
            filters = wire["filters"]
            snapshot = wire.get("snapshot")
            assert isinstance(filters, dict)
            assert snapshot is None or isinstance(snapshot, dict)
            # Pairs, not objects: the panel's MicroPython keeps no dict order, and the
            # chip shows the fields in the order the page declared them shareable.
            chip = {
                "revision": pinned.selection_revision,
                "pageInstanceId": pinned.page_instance_id,
                "pageId": pinned.selection.page_id,
                "componentId": pinned.selection.component_id,
                "resourceRef": pinned.selection.resource_ref,
                "observedAt": pinned.selection.observed_at,
                "filters": [[name, value] for name, value in filters.items()],
                "snapshot": [[name, value] for name, value in (snapshot or {}).items()],
                "restored": self.pinned_restored,
                # Bound to another document of the page than the one it came from: what
                # it shows now may differ, and a command for this context is stale.
                "pageReloaded": self._conn.binding is not None
                and self._conn.binding.page_instance_id != pinned.page_instance_id,
                "key": self.composer.chips()[0].key,
            }
        last = self._command_view(self.last_show, "highlight")
        located = self._command_view(self.last_locate, "locate")
        if last is not None and located is not None:
            last["locate"] = located
        return ToEdge(
            {
                "kind": "state",
                "bound": self._conn.binding is not None,
                "connecting": self.connecting,
                "chip": chip,
                "command": last,
                "refused": dict(self.receiver.counts),
                "ignoredReceipts": self.ledger.ignored,
                "revision": self.receiver.last_revision,
                "preview": self.composer.preview() if self.preview_shown else None,
                "task": self.composer.task,
                "dismissed": self.composer.dismissed,
                # The pinned context's chip is one the user removed (not merely none).
                "removed": pinned is not None and not self.chip_shown,
                "logVersion": self.composer.log_version,
                "answering": self.answering,
                "busy": self.busy,
            }
        )

    def _sync_log(self) -> None:
        """Copy the receipt views that changed in the ledger into the conversation log's
        commands and actions."""

        def views(command_id: str) -> dict[str, JsonValue]:
            try:
                layers = self.ledger.get(command_id)
            except KeyError:
                return {}  # a proposal the user has not confirmed yet
            return {name: _record_view(record) for name, record in layers.items()}

        self.composer.sync_receipts(set(self.ledger.take_changed()), views)

    def _bound(self) -> list[Effect]:
        binding = self._conn.binding
        assert binding is not None
        effects: list[Effect] = []
        if binding.conversation_id != self.conversation_id:
            # Bound on the conversation of a handshake begun before a new conversation.
            effects = self._switch_conversation(binding)
        else:
            self.receiver.bind(binding.page_instance_id, self.conversation_id)
        # Revisions never go back across a reload of the assistant either.
        if self.pinned is not None and self.pinned_restored:
            self.receiver.resume(self.pinned)
        if self._cleared_restored is not None:
            self.receiver.resume_cleared(*self._cleared_restored)
        return [*effects, ToEdge({"kind": "bound", "connection": binding.connection_id}), _STATE]

    def _persist(self) -> ToEdge:
        pinned = self._pinned_as_wire()
        self._sync_log()
        # The page's selection-cleared taken last, as the receiver holds it; before any
        # binding, the one restored (a restored chip is `pinned`).
        if self.receiver.page_instance_id is None:
            cleared_at = self._cleared_restored
        else:
            cleared_at = self.receiver.cleared_at
        cleared = (
            None
            if cleared_at is None
            else {"pageInstanceId": cleared_at[0], "selectionRevision": cleared_at[1]}
        )
        # The JSON text of {format, conversationId, pinned, cleared, composer}, the log's
        # entries as the composer keeps them built.
        text = (
            f'{{"format": {SAVED_STATE_FORMAT}, '
            f'"conversationId": {json.dumps(self.conversation_id)}, '
            f'"pinned": {json.dumps(pinned)}, "cleared": {json.dumps(cleared)}, '
            f'"composer": {self.composer.saved_text()}}}'
        )
        return ToEdge({"kind": "persist", "text": text})
