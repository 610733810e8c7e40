"""Fakes that ship with the library: a port pair, a DOM registry, a clock and ids.

They let a page core and an assistant core talk without a browser, in tests of this
project and of projects that use it, and in the browser workers' rehearsal of a
selection's path (pagecontext.rehearsal). `ChannelPair` joins a `PageSession` and an
`AssistantSession` by a fake link and carries their effects, as a browser binding would.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from types import EllipsisType
from typing import Any, Literal

from pagecontext.errors import LocalProtocolError
from pagecontext.models import CommandMessage, ReceiptStatus, Scalar
from pagecontext.resolver import RenderedObjects
from pagecontext.session import (
    AssistantSession,
    ClosePort,
    Effect,
    PageSession,
    Refresh,
    ToEdge,
    ToPeer,
)
from pagecontext.windowrules import NONCE_BYTES, connect_message, encode_nonce, handshake_type

__all__ = [
    "ChannelPair",
    "FakeClock",
    "FakeDom",
    "FakePort",
    "Side",
    "counter_ids",
    "port_pair",
]

Side = Literal["page", "assistant"]


class FakePort:
    """One end of a fake MessageChannel; create them with `port_pair()`."""

    def __init__(self) -> None:
        self.peer: FakePort | None = None
        self.closed = False
        self._inbox: list[dict[str, object]] = []

    def post(self, message: dict[str, object]) -> None:
        """Queue a deep copy of `message` to the peer.

        The JSON round trip stands in for structured clone: the receiver never shares
        objects with the sender. Like a real port, a closed channel drops it silently.
        """
        if self.closed or self.peer is None or self.peer.closed:
            return
        self.peer._inbox.append(json.loads(json.dumps(message)))

    def drain(self) -> list[dict[str, object]]:
        """Return and forget the messages received so far, oldest first."""
        messages, self._inbox = self._inbox, []
        return messages

    def close(self) -> None:
        """Close this end: nothing more is sent from or delivered to it."""
        self.closed = True
        self._inbox.clear()


def port_pair() -> tuple[FakePort, FakePort]:
    """Return two entangled ports."""
    first, second = FakePort(), FakePort()
    first.peer, second.peer = second, first
    return first, second


class FakeDom(RenderedObjects):
    """A fake registry of rendered objects per component, recording the UI work done.

    Implements `pagecontext.resolver.RenderedObjects`. A component counts as rendered
    once `render` was called for it.
    """

    def __init__(self) -> None:
        self._rendered: dict[str, set[str]] = {}
        self.highlights: dict[str, dict[str, str]] = {}
        self.located: list[tuple[str, str]] = []
        # The object the keyboard's focus moved to last (a `locate` that does not keep it).
        self.focused: tuple[str, str] | None = None
        self.refreshes: Counter[str] = Counter()

    def render(self, component_id: str, refs: Iterable[str]) -> None:
        """Render these objects in the component (added to those already rendered)."""
        self._rendered.setdefault(component_id, set()).update(refs)

    def remove(self, component_id: str, ref: str) -> None:
        """Stop rendering one object, and drop its highlight."""
        self._rendered.get(component_id, set()).discard(ref)
        self.highlights.get(component_id, {}).pop(ref, None)

    def is_rendered(self, component_id: str, resource_ref: str | None) -> bool:
        """Return whether the object (or, for None, the component) is rendered."""
        refs = self._rendered.get(component_id)
        if refs is None:
            return False
        return resource_ref is None or resource_ref in refs

    def apply(self, command: CommandMessage) -> tuple[ReceiptStatus, str]:
        """Do the command's UI work; return the `ui`-layer (status, reason).

        highlight and locate need a rendered resourceRef; `focus` is exclusive within
        the component; locate moves the focus unless its params keep it; clear-highlight
        clears the component; refresh counts a reload.
        """
        return self._do(
            command.action,
            command.target.component_id,
            command.target.resource_ref,
            command.params.get("tone"),
            command.params.get("focus"),
        )

    def apply_instruction(self, instruction: Mapping[str, object]) -> tuple[ReceiptStatus, str]:
        """Do the UI work of a page session's `apply` edge message; see `apply`.

        Raises ValueError if `instruction` is not an `apply` message.
        """
        action = instruction.get("action")
        component_id = instruction.get("componentId")
        ref = instruction.get("resourceRef")
        tone = instruction.get("tone")
        focus = instruction.get("focus")
        if (
            instruction.get("kind") != "apply"
            or action not in ("highlight", "locate", "refresh", "clear-highlight")
            or not isinstance(component_id, str)
            or not (ref is None or isinstance(ref, str))
            or not (tone is None or isinstance(tone, str))
            or (action == "highlight") != isinstance(tone, str)
            or focus not in (None, "keep")
        ):
            raise ValueError(f"not an apply instruction: {instruction!r}")
        return self._do(action, component_id, ref, tone, focus)

    def _do(
        self,
        action: object,
        component_id: str,
        ref: str | None,
        tone: str | None,
        focus: object,
    ) -> tuple[ReceiptStatus, str]:
        if not self.is_rendered(component_id, ref):
            return "not-found", "not-rendered"
        if action in ("highlight", "locate") and ref is None:
            return "rejected", "no-resource-ref"
        if action == "highlight" and ref is not None:
            assert tone is not None  # a highlight always names its tone
            marks = self.highlights.setdefault(component_id, {})
            if tone == "focus":
                for other in [key for key, value in marks.items() if value == "focus"]:
                    del marks[other]
            marks[ref] = tone
        elif action == "locate" and ref is not None:
            self.located.append((component_id, ref))
            if focus != "keep":
                self.focused = (component_id, ref)
        elif action == "clear-highlight":
            self.highlights.pop(component_id, None)
        elif action == "refresh":
            self.refreshes[component_id] += 1
        return "applied", "ok"


class FakeClock:
    """A clock in epoch milliseconds that moves only when told to."""

    def __init__(self, start_ms: float = 1_700_000_000_000.0) -> None:
        self.now_ms = start_ms

    def __call__(self) -> float:
        return self.now_ms

    def advance(self, ms: float) -> None:
        """Move the clock forward by `ms` milliseconds."""
        self.now_ms += ms


def counter_ids(prefix: str = "m") -> Callable[[], str]:
    """Return a function giving deterministic ids: "m1", "m2", ..."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"


def _cloned(message: Mapping[str, object]) -> dict[str, object]:
    # The JSON round trip stands in for structured clone, as in FakePort.post.
    copy = json.loads(json.dumps(message))
    assert isinstance(copy, dict)
    return copy


def _other(side: Side) -> Side:
    return "assistant" if side == "page" else "page"


class ChannelPair:
    """A page session and an assistant session joined by a fake link, without a browser.

    Each handshake opens a new link (a fresh MessageChannel); a side's `ClosePort`
    closes the link it is attached to, and nothing more travels on it. `run(side,
    effects)` carries out what a session returned: `ToPeer` messages are queued for the
    other side (deep-copied), `ToEdge` messages are collected in `page_edge` or
    `assistant_edge`, `ClosePort` reasons in `page_closed` or `assistant_closed`. The
    page's `apply` instructions are done in `dom` at once and reported back with
    `on_ui_done`. `pump()` delivers queued messages until the link is quiet: as data
    (`on_port_message`), or with `as_text=True` as JSON text (`on_port_json`), as the
    browser's workers deliver them.

    Both sessions share `clock`; ids are deterministic ("p1", "a1", ...).
    """

    def __init__(
        self,
        *,
        embedder: Side = "page",
        page_instance_id: str = "page-1",
        assistant_instance_id: str = "asst-1",
        conversation_id: str = "conv-1",
        connect: bool = True,
        as_text: bool = False,
    ) -> None:
        self.embedder: Side = embedder
        # Deliver each message as its JSON text through `on_port_json`, as the browser
        # workers do, rather than as data through `on_port_message`.
        self.as_text = as_text
        self.clock = FakeClock()
        self.assistant = AssistantSession(
            instance_id=assistant_instance_id,
            conversation_id=conversation_id,
            clock=self.clock,
            new_id=counter_ids("a"),
        )
        self.assistant_edge: list[dict[str, object]] = []
        self.assistant_closed: list[str] = []
        # (sender, message) for every message a session put on a link, delivered or not.
        self.sent: list[tuple[Side, dict[str, object]]] = []
        self._page_ids = counter_ids("p")
        self._nonces = itertools.count(1)
        self._links = itertools.count(1)
        self._closed_links: set[int] = set()
        self._port: dict[Side, int | None] = {"page": None, "assistant": None}
        self._queue: deque[tuple[int, Side, dict[str, object]]] = deque()
        self.page, self.dom, self.page_edge, self.page_closed = self._new_page(page_instance_id)
        if connect:
            self.handshake()

    def _new_page(
        self, page_instance_id: str
    ) -> tuple[PageSession, FakeDom, list[dict[str, object]], list[str]]:
        page = PageSession(
            page_instance_id=page_instance_id, clock=self.clock, new_id=self._page_ids
        )
        return page, FakeDom(), [], []

    def mint_nonce(self) -> str:
        """Return a fresh, deterministic 22-character nonce."""
        return encode_nonce(next(self._nonces).to_bytes(NONCE_BYTES, "big"))

    def connect_data(self) -> dict[str, object]:
        """Return the embedder's `connect` message, as `windowrules.connect_message` builds it.
        Raises ValueError if the child's edge would refuse it (ids of the wrong shape)."""
        if self.embedder == "page":
            data = connect_message("page", self.page.page_instance_id)
        else:
            data = connect_message(
                "assistant", self.assistant.instance_id, self.assistant.conversation_id
            )
        # The child's edge admits only a well-formed connect (windowrules).
        if handshake_type(data) != "connect":
            raise ValueError(f"the edge would refuse this connect message: {data!r}")
        return _cloned(data)

    def handshake(
        self,
        *,
        nonce: str | None = None,
        child_nonce: str | EllipsisType | None = ...,
        deliver: bool = True,
        connect: dict[str, object] | None = None,
    ) -> str:
        """Open a new link and bind it through the sessions' public API; return the nonce.

        The embedder attaches with `nonce` (a fresh one if None), the child with
        `child_nonce` (default: the same nonce, as read from its URL) and the connect
        data; then the child's `connected` and the embedder's `bound` are delivered
        (unless `deliver` is False: `pump()` them). `connect` is the embedder's
        `connect` message (default: `connect_data()` now); an assistant embedder's port
        carries the conversation it names, as its edge sends it. Errors a session raises
        (such as LocalProtocolError for a reused nonce) propagate.
        """
        minted = self.mint_nonce() if nonce is None else nonce
        presented = minted if isinstance(child_nonce, EllipsisType) else child_nonce
        link = next(self._links)
        embedder, child = self.embedder, _other(self.embedder)
        self._port[embedder] = self._port[child] = link
        data = self.connect_data() if connect is None else connect
        if embedder == "assistant":
            named = data.get("conversationId")
            assert isinstance(named, str)
            self.run(embedder, self.assistant.attach_port("embedder", minted, None, named))
        else:
            self.run(embedder, self.page.attach_port("embedder", minted))
        self.run(child, self._session(child).attach_port("child", presented, _cloned(data)))
        if deliver:
            self.pump()
        return minted

    def child_reloaded(self) -> None:
        """Tell the embedder its child loaded a new document (a new `ready` arrived)."""
        embedder = self.embedder
        child_port = self._port[_other(embedder)]
        if child_port is not None:
            self._closed_links.add(child_port)  # the old document's port dies with it
        self._port[_other(embedder)] = None
        self.run(embedder, self._session(embedder).child_reloaded())

    def reload_page(self, page_instance_id: str) -> None:
        """Replace the page by a new document: new session, new DOM, no port yet.

        If the assistant embeds the page, it is told its child reloaded. Bind the new
        page with `handshake()`.
        """
        old_port = self._port["page"]
        if old_port is not None:
            self._closed_links.add(old_port)
        self._port["page"] = None
        self.page, self.dom, self.page_edge, self.page_closed = self._new_page(page_instance_id)
        if self.embedder == "assistant":
            self.run("assistant", self.assistant.child_reloaded())

    def reload_assistant(
        self, assistant_instance_id: str, conversation_id: str | None = None
    ) -> None:
        """Replace the assistant (the page's child) by a new document: new session, no
        port yet; the page is told its child reloaded. Bind it with `handshake()`. Its
        conversation is `conversation_id` (one without saved state begins a new one), by
        default the one before. Raises LocalProtocolError if the assistant is the
        embedder (it reloads with the page)."""
        if self.embedder != "page":
            raise LocalProtocolError("an assistant that embeds the page reloads with it")
        self.child_reloaded()
        self.assistant = AssistantSession(
            instance_id=assistant_instance_id,
            conversation_id=conversation_id or self.assistant.conversation_id,
            clock=self.clock,
            new_id=counter_ids(f"{assistant_instance_id}-"),
        )
        self.assistant_edge.clear()
        self.assistant_closed.clear()

    def render(
        self,
        component_id: str,
        refs: Iterable[str],
        *,
        page_id: str = "orders",
        filters: Mapping[str, Scalar | list[Scalar]] | None = None,
        generation: int = 1,
        shareable: Iterable[tuple[str, str | None]] = (),
    ) -> None:
        """Render these rows in a component: the page session's view and the fake DOM."""
        rows = list(refs)
        self.page.on_view(
            component_id,
            page_id=page_id,
            filters=filters or {},
            generation=generation,
            refs=rows,
            shareable=shareable,
        )
        for gone in [ref for ref in self._rendered(component_id) if ref not in rows]:
            self.dom.remove(component_id, gone)
        self.dom.render(component_id, rows)

    def _rendered(self, component_id: str) -> list[str]:
        return list(self.dom._rendered.get(component_id, ()))

    def post(self, to: Side, message: Mapping[str, object]) -> None:
        """Queue a raw message to `to`, as if its peer posted it on the current link."""
        self._send(_other(to), _cloned(message))

    def run(self, side: Side, effects: Iterable[Effect]) -> None:
        """Carry out the effects `side`'s session returned."""
        for effect in effects:
            if isinstance(effect, ToPeer):
                self.sent.append((side, _cloned(effect.message)))
                self._send(side, effect.message)
            elif isinstance(effect, Refresh):
                # Delivered at once: tests see every refresh the session asked for.
                self._edge(side).append(_cloned(self.assistant.edge_message(effect.kind)))
            elif isinstance(effect, ToEdge):
                self._edge(side).append(_cloned(effect.message))
                if side == "page" and effect.message.get("kind") == "apply":
                    self._apply(effect.message)
                elif side == "page" and effect.message.get("kind") == "conversation":
                    # A new conversation: its edge takes the highlights off the page.
                    self.dom.highlights.clear()
            elif isinstance(effect, ClosePort):
                self._closed(side).append(effect.reason)
                port = self._port[side]
                if port is not None:
                    self._closed_links.add(port)
                self._port[side] = None

    def pump(self, only: Side | None = None, limit: int | None = None) -> int:
        """Deliver queued messages (to `only`, if given), in order, until quiet or `limit`
        were delivered; return how many.

        A message on a closed link, or on a link its receiver has left, is dropped.
        Raises RuntimeError if the two sides still exchange messages after 10,000.
        """
        delivered = 0
        for _ in range(10_000):
            item = next((item for item in self._queue if only in (None, item[1])), None)
            if item is None or delivered == limit:
                return delivered
            self._queue.remove(item)
            link, to, message = item
            if link in self._closed_links or self._port[to] != link:
                continue
            delivered += 1
            self._delivering(link, to, message)
            session = self._session(to)
            if self.as_text:
                self.run(to, session.on_port_json(json.dumps(message)))
            else:
                self.run(to, session.on_port_message(message))
        raise RuntimeError("the link never went quiet")

    def sent_by(self, side: Side, kind: str) -> list[dict[str, object]]:
        """Return the messages of this `type` that `side` put on a link, oldest first."""
        return [
            message
            for sender, message in self.sent
            if sender == side and message.get("type") == kind
        ]

    def last_edge(self, side: Side, kind: str) -> dict[str, Any]:
        """Return the last edge message of this `kind` from `side`; KeyError if none."""
        for message in reversed(self._edge(side)):
            if message.get("kind") == kind:
                return message
        raise KeyError(kind)

    def _send(self, sender: Side, message: dict[str, object]) -> None:
        port = self._port[sender]
        if port is not None and port not in self._closed_links:
            self._queue.append((port, _other(sender), _cloned(message)))

    def _delivering(self, link: int, to: Side, message: dict[str, object]) -> None:
        """Called with each message as it is delivered on `link` to `to`."""

    def _apply(self, instruction: Mapping[str, object]) -> None:
        status, reason = self.dom.apply_instruction(instruction)
        command_id = instruction["commandId"]
        assert isinstance(command_id, str)
        self._ui_done(command_id, status, reason)

    def _ui_done(self, command_id: str, status: ReceiptStatus, reason: str) -> None:
        """The page's edge reports what the DOM did with a command; what it could not do
        is not-found, like the browser edge."""
        ui_status: Literal["applied", "not-found"] = (
            "applied" if status == "applied" else "not-found"
        )
        self.run("page", self.page.on_ui_done(command_id, ui_status, reason))

    def _session(self, side: Side) -> PageSession | AssistantSession:
        return self.page if side == "page" else self.assistant

    def _edge(self, side: Side) -> list[dict[str, object]]:
        return self.page_edge if side == "page" else self.assistant_edge

    def _closed(self, side: Side) -> list[str]:
        return self.page_closed if side == "page" else self.assistant_closed
