"""The main-thread edge of a pagecontext frame, run by MicroPython.

Owns what must happen on the main thread and nothing more:

- the window half of the handshake (docs/protocol.md section 2): minting the nonce and
  navigating the child (embedder), reading and removing the nonce (child), and the
  exact-origin and `event.source` checks on `ready` and `connect`;
- handing the bound MessagePort to the core's Worker, which holds it from then on;
- the DOM adapter, the page's integration surface (docs/integration.md): reading the
  page's registry of rendered objects (`data-pc-*` attributes; the boot host keeps each
  component's as a JavaScript Map, `host.objects`) and its selections
  (clicks, or `pagecontext:select` from a page that keeps the selection itself),
  publishing `pagecontext:state` and `pagecontext:command`, and applying highlight,
  locate, clear-highlight and refresh to the objects the registry holds (never through
  a selector built from a message) unless the page carries a command out itself;
- the assistant panel's few elements: the chip, the receipt, the buttons, the
  conversation (the elements themselves are built by panelview);
- publishing state on `<html>` for styles and tests (`data-pc-state` and counters).

Written in the Python subset MicroPython runs (see windowrules). Every listener proxy
is created through `ProxyOwner`, which removes and drops them all on `close()`.
"""

import json

import js
from jsffi import create_proxy, to_js

# For the type checker only: MicroPython has neither typing nor contextlib, and never
# evaluates annotations.
try:  # noqa: SIM105
    from typing import Any
except ImportError:
    pass

from pagecontext.browser.panelview import (
    CHIP_PAGE_RELOADED,
    chip_element,
    failure_summary,
    fill_block,
    locate_state,
    log_element,
    receipt_summary,
    text_element,
)
from pagecontext.integration import (
    SAVED_STATE_PREFIX,
    STOPPED,
    ConfigError,
    is_scalar,
    misspelled_fields,
    parse_command_done,
    parse_config,
    parse_generation,
    parse_select,
    parse_view,
    saved_state_key,
    saved_state_readable,
    shown_text,
    url_on_origin,
)
from pagecontext.windowrules import (
    NONCE_BYTES,
    NONCE_PREFIX,
    child_url,
    connect_message,
    connect_target,
    encode_nonce,
    handshake_type,
    is_instance_id,
    origin_allowed,
    read_nonce,
    ready_message,
    ready_origin_ok,
)

# What the panel says when New conversation must wait, and when it has begun.
NEW_CONVERSATION_WAITS = (
    "Not yet: the assistant is still answering, or waiting for the page or the server. "
    "Start a new conversation once it is done."
)
NEW_CONVERSATION_BEGUN = "A new conversation: the questions and answers before it are cleared."
# Said when the page shares the object whose chip the user removed: it stays out.
CONTEXT_STAYS_REMOVED = (
    "The context you removed stays out of the conversation: press Bring it back to use it."
)
# What the context area says with no chip: none taken yet, or the one taken removed.
CONTEXT_EMPTY = "Select something on the page and press “Ask AI”."
CONTEXT_REMOVED_EMPTY = "Removed. Select something else on the page and press “Ask AI”."
# What Ask again says when the question's field holds another question being written.
WRITING_KEPT = (
    "Not replaced: the question field holds what you are writing. Clear it, then press Ask again."
)
# What a press of Show me says while the page is not connected.
SHOW_WAITS = "Not yet: the assistant is waiting for the page. Show me works once it is connected."
# How much of an answer the status says when it is done (the whole is in the log).
ANSWER_SAID_CHARS = 600
# What the panel says when a question was not sent: the context changed as it was.
ASK_REFUSED = (
    "Not sent: what the assistant sees changed just as you sent it. Check the context, "
    "then send your question again."
)
# What the panel says while the conversation cannot be saved.
STORAGE_NOTE = (
    "This conversation is not being saved in this browser: it, and a question you are "
    "writing, will be gone when the assistant reloads."
)
# What a screen reader says with an object the assistant highlighted, by tone
# (`aria-description`): the highlight is heard, not only seen.
HIGHLIGHT_SAID = {
    "focus": "Highlighted by the assistant",
    "related": "Marked as related by the assistant",
}
_HIGHLIGHT_WORDS = tuple(HIGHLIGHT_SAID.values())
# What `data-pc-error` says when the worker's `error` event names nothing (a script that
# did not load).
WORKER_ERROR = "the worker's script did not load, or it stopped on an uncaught error"
# The reason of a boot timeout (`data-pc-error`) begins so: the one failure that is not
# final, which boot.mjs and the styles tell apart by it.
BOOT_TIMEOUT = "boot-timeout:"


class ProxyOwner:
    """Owns the proxies of every listener the edge adds, and removes them on release.

    MicroPython's proxies have no explicit destroy: removing the listener and dropping
    the last reference lets both collectors reclaim them.
    """

    def __init__(self) -> None:
        self._entries: list[tuple[Any, str, Any, bool]] = []
        self._timers: dict[int, Any] = {}
        self._observers: list[tuple[Any, Any]] = []

    def listen(self, target: Any, event_name: str, handler: Any, *, capture: bool = False) -> Any:
        """Add `handler` as a listener (in the capture phase with `capture`) and keep its
        proxy; return the proxy."""
        proxy = create_proxy(handler)
        target.addEventListener(event_name, proxy, capture)
        self._entries.append((target, event_name, proxy, capture))
        return proxy

    def observe(self, target: Any, options: dict[str, Any], handler: Any) -> None:
        """Observe `target`'s mutations (a MutationObserver with `options`), calling
        `handler(records, observer)`; disconnected on release."""
        proxy = create_proxy(handler)
        observer = js.MutationObserver.new(proxy)
        observer.observe(target, to_js(options))
        self._observers.append((observer, proxy))

    def observe_quietly(self, target: Any, options: dict[str, Any], handler: Any) -> None:
        """As `observe`, but `handler()` is called with no arguments: the records never
        reach MicroPython. A record holds every node its mutation removed, and a
        MicroPython proxy of a JS object keeps it until MicroPython's collector runs,
        which an idle edge may not do for hundreds of calls: a page that re-renders a
        large table would keep each old table's nodes alive meanwhile."""
        proxy = create_proxy(handler)
        observer = _HOST[0].observeQuietly(target, to_js(options), proxy)
        self._observers.append((observer, proxy))

    def unlisten(self, proxy: Any) -> None:
        """Remove the listener `listen` returned `proxy` for, and drop it."""
        kept = []
        for entry in self._entries:
            if entry[2] is proxy:
                target, event_name, _proxy, capture = entry
                target.removeEventListener(event_name, proxy, capture)
            else:
                kept.append(entry)
        self._entries = kept

    def later(self, delay_ms: int, handler: Any) -> int:
        """Call `handler()` once after `delay_ms`, keeping its proxy until then; return
        the timer's id for `cancel`."""
        holder: list[int] = []

        def fire() -> None:
            self._timers.pop(holder[0], None)
            handler()

        proxy = create_proxy(fire)
        timer: int = js.setTimeout(proxy, delay_ms)
        holder.append(timer)
        self._timers[timer] = proxy
        return timer

    def cancel(self, timer: int) -> None:
        """Cancel a timer from `later` (if it has not fired) and drop its proxy."""
        if self._timers.pop(timer, None) is not None:
            js.clearTimeout(timer)

    def release(self) -> None:
        """Remove every listener this owner added, cancel its timers, drop the proxies."""
        for target, event_name, proxy, capture in self._entries:
            target.removeEventListener(event_name, proxy, capture)
        self._entries = []
        for timer in list(self._timers):
            self.cancel(timer)
        for observer, _proxy in self._observers:
            observer.disconnect()
        self._observers = []

    def __len__(self) -> int:
        return len(self._entries)


_HOST: list[Any] = []


# MicroPython hands JavaScript an integer past 31 bits wrapped to 32 (2**31 became
# -2147483648, 2**32 zero), and a string only up to a NUL in it; a float it hands over
# exactly, and every integer a page's value may hold (MAX_SAFE_INTEGER at most) is exact
# as one. (Through JSON, every message went slower: bursts of selections queued up.)
_WRAPPED = 2**31


class _HoldsNul(Exception):  # noqa: N818 - reads as the condition it is
    """A string of the message holds a NUL, which `to_js` would cut it at."""


def _exact_ints(value: Any) -> Any:
    """`value` (plain data) with each integer MicroPython would hand JavaScript wrapped as
    the float equal to it: a page's values reach the worker as the page wrote them.
    Raises _HoldsNul for a string (or key) holding a NUL."""
    kind = type(value)
    if kind is int:
        return float(value) if not -_WRAPPED < value < _WRAPPED else value
    if kind is str:
        if "\x00" in value:
            raise _HoldsNul
        return value
    if kind is dict:
        return {_exact_ints(key): _exact_ints(item) for key, item in value.items()}
    if kind is list:
        return [_exact_ints(item) for item in value]
    return value


def _each(array: Any) -> list[Any]:
    """The items of a JavaScript array, as a list."""
    return [array[i] for i in range(array.length)]


def _js_data(value: Any) -> Any:
    """`value` (plain data) as JavaScript data holding what it holds (`_exact_ints`);
    through JSON when a string holds a NUL (its escape carries it)."""
    try:
        return to_js(_exact_ints(value))
    except _HoldsNul:
        return js.JSON.parse(json.dumps(value))


def _composer_bottom() -> float | None:
    """How far below the top of the panel's window its composer ends, or None if the
    panel has none."""
    composer = js.document.querySelector("[data-pc-composer]")
    if composer is None:
        return None
    return float(composer.getBoundingClientRect().bottom)


def _composer_shown() -> bool:
    """Whether the panel's composer ends within its window."""
    bottom = _composer_bottom()
    return bottom is not None and bottom <= float(js.window.innerHeight) + 1


def _show_composer() -> None:
    """Scroll the panel's own window (never the page's: scrollIntoView would scroll the
    frames around it too) so that its composer ends at the window's bottom edge."""
    bottom = _composer_bottom()
    if bottom is not None and bottom > float(js.window.innerHeight):
        js.window.scrollBy(0, bottom - float(js.window.innerHeight) + 8)


def _focus_question() -> Any:
    """Give the question's field the focus, without the browser scrolling (which would
    move the page around this frame too); return the field, or None if there is none."""
    field = js.document.querySelector("[data-pc-question]")
    if field is not None:
        field.focus(to_js({"preventScroll": True}))
    return field


def _plain(value: Any, *, flat: bool = False, detail: bool = False, worker: bool = False) -> Any:
    """Return a JS value as plain Python data through JSON, or None if it is not JSON.

    The boot script's `host.json` does the stringify, since MicroPython cannot catch
    the exception a BigInt or a cycle raises. With `flat` (a message from another
    window), only a flat object of scalars is read, none of its keys and strings over 256
    characters (`host.flat`): anything else is None.
    With `detail` (a page event's detail), one holding a number JSON cannot write (NaN,
    an infinity, which JSON.stringify writes as null) is None (`host.detail`). With
    `worker` (a message of the edge's worker), a BigInt Pyodide made of a safe integer
    reads as that integer (`host.worker`).
    """
    host = _HOST[0]
    if flat:
        text = host.flat(value)
    elif worker:
        text = host.worker(value)
    elif detail:
        text = host.detail(value)
    else:
        text = host.json(value)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _random_id() -> str:
    buf = js.Uint8Array.new(NONCE_BYTES)
    js.crypto.getRandomValues(buf)
    return encode_nonce(bytes([buf[i] for i in range(NONCE_BYTES)]))


def _reread(text: Any) -> str | None:
    """JSON a page wrote (an attribute's text) as JavaScript reads it, written again for
    MicroPython's reader (`host.reread`); None where JavaScript's JSON.parse refuses it
    or it holds half a character."""
    # MicroPython hands JavaScript a string only up to a NUL, and no JSON holds a raw one.
    if "\x00" in text:
        return None
    written = _HOST[0].reread(text)
    return written if isinstance(written, str) else None


def _attr_value(text: str) -> Any:
    """Read a `data-pc-value` attribute: JSON scalars keep their type, else the text."""
    written = _reread(text)
    if written is None:
        return text
    try:
        value = json.loads(written)
    except ValueError:
        return text
    # Not NaN or an infinity ("1e999" reads as one): the core takes only finite numbers.
    return value if is_scalar(value) else text


def _attr_values(element: Any, into: dict[str, Any]) -> str | None:
    """Add the values of an element's `data-pc-values` to `into`; return why nothing was
    added if it is not a JSON object of scalars, else None."""
    text = element.getAttribute("data-pc-values")
    if not text:
        return None
    written = _reread(text)
    try:
        found = None if written is None else json.loads(written)
    except ValueError:
        found = None
    if not isinstance(found, dict) or not all(is_scalar(value) for value in found.values()):
        return "data-pc-values is not a JSON object of scalars: " + str(text)[:80]
    into.update(found)
    return None


def _embedder_origin() -> str | None:
    """The origin of the page this frame is in, where the browser tells it
    (`location.ancestorOrigins`, which Firefox lacks); None where it does not, or
    hides it ("null")."""
    origins = getattr(js.window.location, "ancestorOrigins", None)
    if origins is None or not origins.length:
        return None
    first = str(origins.item(0))
    return None if first == "null" else first


def _components_in_document() -> dict[str, Any]:
    """The components in the document now, by id (the last element of an id)."""
    found = {}
    elements = js.document.querySelectorAll("[data-pc-component]")
    for i in range(elements.length):
        found[elements[i].getAttribute("data-pc-component")] = elements[i]
    return found


# The attributes pagecontext reads on a component, its objects and their fields, or
# writes there (docs/integration.md, "Components and objects"). Another `data-pc-` name
# there is said once in the console: a misspelled one would be read as absent.
OBJECT_ATTRIBUTES = (
    "data-pc-component",
    "data-pc-page",
    "data-pc-shareable",
    "data-pc-filters",
    "data-pc-generation",
    "data-pc-values",
    "data-pc-resource-ref",
    "data-pc-field",
    "data-pc-value",
    "data-pc-highlight",
    "data-pc-ask",
)


# How many elements inside the first object selected in a component are looked at for
# an attribute pagecontext does not read (a row's cells and what is in them).
SCANNED_ELEMENTS = 200


def _unread_attributes(elements: list[Any]) -> list[str]:
    """The `data-pc-` attribute names on `elements` that pagecontext does not read there
    (`OBJECT_ATTRIBUTES`), each once, in the order found."""
    found: list[str] = []
    for element in elements:
        names = element.getAttributeNames()
        for i in range(names.length):
            name = str(names[i])
            if name.startswith("data-pc-") and name not in OBJECT_ATTRIBUTES and name not in found:
                found.append(name)
    return found


def _view_generation(component: Any) -> int | None:
    """The data generation a component shows now, read on its own (its filters may not
    parse while its generation moved on); None if the generation does not parse."""
    try:
        return parse_generation(component.getAttribute("data-pc-generation"))
    except ValueError:
        return None


def _shows_object(component: Any, element: Any, ref: str) -> bool:
    """True if `element` is still in the document as the object `ref` of `component`
    (a page may patch nodes in place before it reports its render)."""
    return bool(
        element.isConnected
        and element.getAttribute("data-pc-resource-ref") == ref
        and element.closest("[data-pc-component]") == component
    )


# How many commands may wait on the page at once: those it carries out itself, and the
# refreshes of one component that has not rendered since. The oldest beyond it are
# forgotten (their receipts stay unconfirmed at the assistant).
WAITING_MAX = 256
# A command the page took over (`pagecontext:command`, cancelled) and has not answered
# (`pagecontext:command-done`) after this long is said once in the console: the
# assistant reports it `unconfirmed` at its deadline (10 s by default: the ledger's).
UNANSWERED_MS = 10000


def _highlight(element: Any, tone: str) -> None:
    """Mark `element` highlighted in `tone`, for the eye (`data-pc-highlight`) and for a
    screen reader (`aria-description`, unless the page gave it a description of its own)."""
    element.setAttribute("data-pc-highlight", tone)
    said = element.getAttribute("aria-description")
    if said is None or said in _HIGHLIGHT_WORDS:
        element.setAttribute("aria-description", HIGHLIGHT_SAID.get(tone, HIGHLIGHT_SAID["focus"]))


def _unhighlight(element: Any) -> None:
    """Take `element`'s highlight away, the description `_highlight` gave it with it."""
    element.removeAttribute("data-pc-highlight")
    if element.getAttribute("aria-description") in _HIGHLIGHT_WORDS:
        element.removeAttribute("aria-description")


def _keep_last(waiting: list[Any], entry: Any) -> None:
    waiting.append(entry)
    if len(waiting) > WAITING_MAX:
        waiting.pop(0)


class Edge:
    """One frame's main-thread edge. `close()` undoes everything.

    It starts in three steps, each one task of the main thread, so that no step holds
    the page for long (docs/performance.md): `check()` the config, make the `Edge`, then
    `begin()`. Nothing listens before `begin()`, which posts `init` to the worker: the
    worker says nothing before it, and everything that answers it is set up in the same
    task.
    """

    def __init__(self, config: dict[str, Any], worker: Any, host: Any) -> None:
        """`config` is the frame's config as `check()` returns it."""
        self.host = host
        self.config = config
        self.role = config["role"]
        self.position = config["position"]
        self.peer_origin = config["peerOrigin"]
        # Where an assistant saves its conversation: a key of its owner's (a page saves
        # nothing).
        self.storage_key = saved_state_key(config) if self.role == "assistant" else ""
        self.worker = worker
        # Set once the worker failed: it is ended (`worker_failed`).
        self.worker_ended = False
        self.root = js.document.documentElement
        self.owner = ProxyOwner()
        self.rejected: dict[str, int] = {}
        self.nonce: str | None = None
        self.connect_sent = False
        self.frame: Any = None
        self.opaque_child = False
        self.child_src: str = ""
        # Armed when the child is loaded with a nonce, until its `ready` comes.
        self.child_timer: int | None = None
        # The `load` listener of a replacing frame being emptied (`_on_frame_replaced`)
        # until its blank document loads, or None.
        self.blanking: Any = None
        # The child frame's `load` listener (`_on_child_load`), how many documents
        # loaded in it since it was last loaded with a nonce, and how many had when its
        # answer was refused (`_child_refused`).
        self.child_load: Any = None
        self.child_loads = 0
        self.refused_at = 0
        # componentId -> its objects as last reported: a JavaScript Map from resourceRef
        # to element, which the boot host makes and reads (`host.objects`).
        self.registry: dict[str, Any] = {}
        # What a highlight says to a screen reader, as the host's helpers take it.
        self.highlight_words = to_js(list(_HIGHLIGHT_WORDS))
        self.selected: Any = None  # the element marked aria-selected, if any
        # The (componentId, resourceRef) of the selection held: the last one sent to the
        # worker, or the one the worker kept when it refused that.
        self.selecting: tuple[str, str] | None = None
        # The view (pageId, filters, generation) the selection held was made in, if this
        # edge read all its values from the page (`_follow`); None if the page gave some
        # (`pagecontext:select` with values) or the worker kept an earlier selection.
        self.selecting_view: Any = None
        self.components: dict[str, Any] = {}  # componentId -> component element
        # componentId -> the view last reported: (pageId, filters, generation).
        self.views: dict[str, tuple[str, Any, int]] = {}
        self.pending_refresh: dict[str, list[str]] = {}  # componentId -> [commandId]
        # The newest selection revision a highlight on the page was drawn for.
        self.marks_revision = -1
        # The component whose pagecontext:refresh is being dispatched, and whether it
        # rendered during the dispatch (which counts only if a listener took the event).
        self.refreshing: str | None = None
        self.rendered_while_refreshing = False
        # The commands the page took (`pagecontext:command` cancelled), with the selection
        # revision of each highlight among them (None for other actions).
        self.delegated: list[tuple[str, Any]] = []
        # What this edge has said in the console of the page's markup, each once
        # (`_say_once`): a page renders and selects again and again.
        self.said: set[str] = set()
        # The number of the last `select` sent to the worker, which answers a refused
        # one with it: a refusal of one that a newer one replaced changes nothing.
        self.select_seq = 0
        # The command whose pagecontext:command is being dispatched, and an answer the
        # page gave for it during the dispatch.
        self.dispatching: str | None = None
        self.early_answer: tuple[str, str] | None = None
        self.state: dict[str, Any] = {}
        # What `pagecontext:state` last told the page.
        self.public: dict[str, Any] = _public_detail("booting")
        self.published: str = ""
        self.diagnostics_seq = 0
        # The conversation's entries shown in the panel, by entry id.
        self.log_items: dict[str, Any] = {}
        # What the panel shows now, as drawn from the last state: a part of the next
        # state that equals it is not drawn again.
        self.drawn: dict[str, Any] = {}
        self.diagnostics: dict[str, Any] = {}
        self._set_state("booting")
        self.boot_timer: int | None = None
        self.instance_id = _random_id()
        init: dict[str, Any] = {"kind": "init", "role": self.role, "instanceId": self.instance_id}
        if self.role == "page":
            init["limits"] = config["limits"]
            init["history"] = config["history"]
        if self.role == "assistant":
            # The saved text goes to the worker as it is: MicroPython's dicts do not keep
            # key order, and the core compares saved lines with what it renders.
            text = self.host.load(self.storage_key, SAVED_STATE_PREFIX) or "{}"
            conversation_id = _saved_conversation(text)
            if conversation_id is None or not self.host.ownSaved(self.storage_key):
                # None saved, or the state read is the latest another tab saved: this
                # tab continues its log as a conversation of its own (the agent's
                # thread), so that two tabs that go on apart never share one.
                conversation_id = _random_id()
            self.conversation_id = conversation_id
            self.root.setAttribute("data-pc-conversation", conversation_id)
            init["conversationId"] = conversation_id
            init["restored"] = text
            # Where the agent and the action API are, and as whom the assistant calls
            # them; the agent URL as `check()` resolved it, since a worker started from
            # a data: URL (a sandboxed panel) has no base URL of its own.
            agent_url = config["agentUrl"]
            if agent_url:
                init["agentUrl"] = agent_url
            authorization = config["authorization"]
            if authorization:
                init["authorization"] = authorization
            agent_authorization = config["agentAuthorization"]
            if agent_authorization:
                init["agentAuthorization"] = agent_authorization
            init["apiOrigin"] = self.peer_origin
            init["agentIdleMs"] = config["timeouts"]["agentIdleMs"]
        self.init = init

    def begin(self) -> None:
        """Listen, post `init` to the worker, set up the page's DOM or the panel, and
        start the handshake: the last of the three start steps. The edge is then
        `current()`."""
        # Armed here, not when the edge is made: an edge unmounted before `begin()` owns
        # no timer, no listener and no proxy.
        self.boot_timer = self.owner.later(self.config["timeouts"]["bootMs"], self._on_boot_timeout)
        self.owner.listen(self.worker, "message", self._from_worker)
        self.owner.listen(self.worker, "error", self._on_worker_error)
        self.owner.listen(js.window, "message", self._from_window)
        self.owner.listen(js.window, "pagehide", self._on_pagehide)
        details = js.document.querySelector("[data-pc-diagnostics]")
        if details is not None:
            self.owner.listen(details, "toggle", self._render_diagnostics)
        self._to_worker(self.init)
        if self.role == "page":
            self._start_page_dom()
        else:
            self._start_panel()
        if self.position == "embedder":
            self._start_embedder()
        else:
            self._start_child()
        _EDGE.append(self)

    # -- publishing -------------------------------------------------------------------

    def _set_state(self, state: str) -> None:
        self.root.setAttribute("data-pc-state", state)
        if state != "failed":
            self.root.removeAttribute("data-pc-error")
            self.root.removeAttribute("data-pc-error-field")
        self._publish(state=state)

    def _publish(self, **changes: Any) -> None:
        """Update what `pagecontext:state` reports and dispatch it if anything changed."""
        public = self.public
        for name in changes:
            public[name] = changes[name]
        if public["state"] != "failed":
            public["error"] = None
        text = json.dumps([public[k] for k in _PUBLIC_KEYS])
        if text == self.published:
            return
        self.published = text
        _dispatch(js.document, "pagecontext:state", public, False)

    def _fail(self, error: str) -> None:
        """Publish `failed` with its reason (`data-pc-error`), loudly. The boot timer
        stops: its timeout would hide the reason. The first reason stays, a later one
        is only logged, except after a boot timeout, which is not final: the worker's
        failure after it replaces it."""
        js.console.error("pagecontext: " + error)
        if self.public["state"] == "failed" and not str(self.public["error"]).startswith(
            BOOT_TIMEOUT
        ):
            return
        if self.boot_timer is not None:
            self.owner.cancel(self.boot_timer)
            self.boot_timer = None
        self.root.setAttribute("data-pc-error", error)
        self.public["error"] = error
        self._set_state("failed")
        self._load_child()

    def _on_boot_timeout(self) -> None:
        self.boot_timer = None
        ms = self.config["timeouts"]["bootMs"]
        self._fail(BOOT_TIMEOUT + " the worker was not ready within " + str(ms) + " ms")

    def _reject(self, reason: str) -> None:
        count = self.rejected.get(reason, 0) + 1
        self.rejected[reason] = count
        self.root.setAttribute("data-pc-window-rejected", str(sum(self.rejected.values())))
        self.root.setAttribute("data-pc-rejected-" + reason, str(count))

    def _to_worker(
        self, message: dict[str, Any], transfer: list[Any] | None = None, objects: Any = None
    ) -> None:
        """Post `message` to the worker, with `transfer` (ports); with `objects` (a
        component's, `host.objects`), their refs as its `refs`, made in JavaScript."""
        if self.worker_ended:
            # Nobody reads it: a port it would have been handed is closed here.
            for port in transfer or []:
                port.close()
            return
        data = _js_data(message)
        if objects is not None:
            data.refs = self.host.refs(objects)
        if transfer is None:
            self.worker.postMessage(data)
        else:
            # A JS array: a MicroPython list that JavaScript iterates keeps each JS object
            # in it referenced for good (each binding's ports).
            self.worker.postMessage(data, to_js(transfer))

    def _on_pagehide(self, event: Any) -> None:
        # This document is going away (reload, navigation, closed tab): tell the peer,
        # so it stops sending to a port nobody reads and marks in-flight work unconfirmed.
        # Not when the browser keeps it in its back/forward cache (`persisted`): the whole
        # page is frozen then, the peer's frame and both workers with it, and shown again
        # it goes on bound as it was; a bye would leave it unbound until a reload.
        if not event.persisted:
            self._to_worker({"kind": "bye"})
        if self.role == "assistant":
            # A question typed and not sent comes back in its field on the next document
            # of this tab's panel (`_start_panel`); an empty field removes an older one.
            field = js.document.querySelector("[data-pc-question]")
            if field is not None:
                self.host.keepDraft(self.storage_key, str(field.value))

    # -- handshake: embedder ------------------------------------------------------------

    def _start_embedder(self) -> None:
        # start() checked that the frame exists and its URL is on the peer's origin.
        self._take_frame(js.document.querySelector("[data-pc-child]"))
        self.owner.observe_quietly(
            js.document, {"childList": True, "subtree": True}, self._on_frame_replaced
        )
        if self.config["childLoad"] == "at-once":
            self._navigate_child()

    def _take_frame(self, frame: Any) -> None:
        """Make `frame` (an `[data-pc-child]` element) this embedder's child frame."""
        if self.child_load is not None:
            self.owner.unlisten(self.child_load)
        self.frame = frame
        self.child_load = self.owner.listen(frame, "load", self._on_child_load)
        # A frame this page sandboxed without allow-same-origin runs in an opaque origin.
        sandboxed = frame.hasAttribute("sandbox")
        self.opaque_child = sandboxed and not frame.sandbox.contains("allow-same-origin")
        if self.opaque_child:
            self.root.setAttribute("data-pc-child-origin", "opaque")
        else:
            self.root.removeAttribute("data-pc-child-origin")

    def _on_frame_replaced(self) -> None:
        """The page took the child frame out of its document and put another
        `[data-pc-child]` element in (a framework rendered the frame anew): that one is
        the child frame from now on. The binding with the old one's document is dropped,
        and the new one is loaded with a fresh nonce; until one is in the document,
        nothing changes. A frame taken out and put back is the same element, and reloads
        as a frame does."""
        frame = self.frame
        if frame is None or frame.isConnected:
            return
        found = js.document.querySelector("[data-pc-child]")
        if found is None:
            return
        # A frame replaced again before its blank document loaded: the new one is
        # emptied in its turn (the listener was on the old one, and its load would
        # never come), rather than taken for one whose first load is still to come.
        blanking = self.blanking is not None
        if blanking:
            self.owner.unlisten(self.blanking)
            self.blanking = None
        self._take_frame(found)
        if self.connect_sent:
            self._to_worker({"kind": "child-reloaded"})
        if self.nonce is None and not blanking:
            return  # its first load is still to come (`_load_child`), as it would be
        # A copy of the old element is already loading its URL, with the spent nonce: a
        # new nonce set in that URL's fragment could reach the document as a hashchange,
        # after its `ready` for the spent one. The frame is emptied first, and loaded
        # once blank (`_on_frame_blank`); until then, its `ready` binds nothing.
        self.nonce = None
        self.connect_sent = False
        self.blanking = self.owner.listen(found, "load", self._on_frame_blank)
        self.host.navigate(found, "about:blank")

    def _on_frame_blank(self, event: Any) -> None:
        """A replacing frame emptied by `_on_frame_replaced` loaded: load it with a
        fresh nonce, unless it has been since (or is no longer the child frame)."""
        if self.nonce is None and event.target == self.frame:
            self._navigate_child()

    def _load_child(self) -> None:
        """Load the child the first time, if it waits (`childLoad: "staggered"`): once
        this frame's runtime is instantiated, or at the latest once its core is ready or
        has failed, so that the child never waits for a core that will not come. Later
        loads go through `_on_ready`."""
        # An embedder's nonce is set by its first navigation; only a replaced frame
        # clears it, and is loaded by `_on_frame_blank`.
        if self.position == "embedder" and self.frame is not None and self.nonce is None:
            self._navigate_child()

    def _navigate_child(self) -> None:
        """Mint a fresh single-use nonce and load the child with it.

        The child's URL is read from the page's own `data-pc-src` each time, so the page
        may point its frame elsewhere (within the configured origin) between loads.
        """
        src = self.frame.getAttribute("data-pc-src")
        if not isinstance(src, str) or not url_on_origin(src, self.peer_origin):
            # The page pointed its frame at another origin since the start: its nonce
            # (and, for an opaque-origin child, the binding) would go there. Not loaded;
            # refused and counted, loudly.
            js.console.error(
                "pagecontext: the child frame's data-pc-src must stay on peerOrigin "
                + self.peer_origin
                + ", got "
                + str(src)
            )
            self._reject("child-url")
            return
        self.child_src = src
        if self.blanking is not None:
            # Loaded with a nonce now: the frame's later loads are its child's own.
            self.owner.unlisten(self.blanking)
            self.blanking = None
        self.nonce = _random_id()
        self.connect_sent = False
        self.child_loads = 0
        self.host.navigate(self.frame, child_url(self.child_src, self.nonce))
        if self.child_timer is not None:
            self.owner.cancel(self.child_timer)
            self.child_timer = None
        self._await_child()

    def _await_child(self) -> None:
        """Report the child silent past `timeouts.childMs` unless it answers first
        (`_child_answered`), unless a timer for that runs already."""
        if self.child_timer is None:
            self.child_timer = self.owner.later(
                self.config["timeouts"]["childMs"], self._on_child_silent
            )

    def _on_child_silent(self) -> None:
        """The child loaded with a nonce has not announced itself by `timeouts.childMs`
        (its server is down, its boot script did not load): said, not failed, since it
        may still come, and then binds as usual (`_child_answered`)."""
        self.child_timer = None
        ms = self.config["timeouts"]["childMs"]
        js.console.warn(
            "pagecontext: the child frame "
            + self.child_src
            + " has not answered within "
            + str(ms)
            + " ms; still waiting for it (is its server up, and is it configured for"
            + " this page's origin, "
            + str(js.window.location.origin)
            + "? A child configured for another never answers, its"
            + " frame-ancestors policy may keep it from loading here, and so may this"
            + " page's own frame-src if it does not name the child's origin exactly."
            + " A child that failed to start, its config refused, says why in its own"
            + " console and on its <html data-pc-error>)"
        )
        self.root.setAttribute("data-pc-child-state", "silent")
        self._publish(child="silent")

    def _child_refused(self, reason: str) -> None:
        """The child loaded with a nonce answered, and this frame's worker refused its
        handshake (`reason`): said at once, loudly. It is not loaded again (a child that
        fails its handshake would fail it again); one that answers again, its user having
        reloaded it, binds as usual (`_child_answered`), and one reloaded that never
        answers is reported silent (`_on_child_load`). A timer running now is a later
        load's (`_navigate_child`), and stays."""
        js.console.error(
            "pagecontext: the child frame "
            + str(self.child_src)
            + " answered, but its handshake was refused ("
            + reason
            + "): it stays unbound until it loads again"
        )
        self.root.setAttribute("data-pc-child-state", "refused")
        self._publish(child="refused")
        self.refused_at = self.child_loads

    def _on_child_load(self, _event: Any) -> None:
        """A document loaded in the child frame. The first since it was loaded with a
        nonce is the one that answers, and its `load` may come before or after its answer
        is refused; a later one, while that answer stays refused, is its user's reload:
        the refused document is gone, and the new one is awaited as a first load is,
        reported silent past `timeouts.childMs` if it never answers (its server is down)
        rather than refused for good. (A `load` of the document before it, if it comes
        after the nonce's navigation began, is counted as the first.)

        A frame the page moved in its document loads its `src` again, and its child
        announces itself (`_on_ready`); one loaded without a `src` (in a page loaded by
        Back or Forward) is emptied by the move instead, and is loaded here with a fresh
        nonce."""
        if self.nonce is not None and self.blanking is None and self.host.moved(self.frame):
            if self.connect_sent:
                self._to_worker({"kind": "child-reloaded"})
            self._navigate_child()
            return
        self.child_loads += 1
        if self.public["child"] == "refused" and self.child_loads > max(self.refused_at, 1):
            self._await_child()

    def _child_answered(self) -> None:
        """The child loaded with a nonce announced itself (`ready`)."""
        if self.child_timer is not None:
            self.owner.cancel(self.child_timer)
            self.child_timer = None
        self.root.removeAttribute("data-pc-child-state")
        self._publish(child=None)

    def _from_window(self, event: Any) -> None:
        source = event.source
        if self.position == "embedder":
            expected = self.frame.contentWindow if self.frame is not None else None
        else:
            expected = js.window.parent
        # None never equals a window: a null source or a detached frame never matches.
        if source is None or expected is None or source != expected:
            self._reject("source")
            return
        if not event.isTrusted:
            # Made by script with new MessageEvent(), not sent: whatever it claims, it
            # acts on nothing (not even an unbind).
            self._reject("untrusted")
            return
        if self.position == "embedder":
            origin_ok = ready_origin_ok(event.origin, self.peer_origin, self.opaque_child)
        else:
            origin_ok = origin_allowed(event.origin, self.peer_origin)
        if not origin_ok:
            self._reject("origin")
            if self.position == "embedder" and self.connect_sent:
                # Only the child frame's own window passes the source check: a foreign
                # origin there means the bound document navigated away. Unbind.
                self._to_worker({"kind": "child-reloaded"})
            return
        if self.position == "embedder" and self.host.runtimeRequest(event.data):
            return  # the child asks for the runtime's files: the boot script answers
        data = _plain(event.data, flat=True)
        kind = handshake_type(data)
        wanted = "ready" if self.position == "embedder" else "connect"
        if kind != wanted or data["role"] == self.role:
            self._reject("malformed")
            return
        if self.position == "embedder":
            self._on_ready()
        else:
            self._on_connect(event, data)

    def _on_ready(self) -> None:
        if self.nonce is None:
            # The child's document came before this frame loaded it with a nonce: the
            # browser restored the frame from session history (a back or forward
            # navigation), or the page gave the iframe a `src` of its own. Its `ready`
            # binds nothing. Loaded with a nonce (`_load_child`), it announces itself again.
            return
        self._child_answered()
        if self.connect_sent:
            # The child loaded a new document: its nonce is spent. Drop the old binding
            # and navigate it again with a new nonce; it never gets a second connect.
            self._to_worker({"kind": "child-reloaded"})
            self._navigate_child()
            return
        channel = js.MessageChannel.new()
        if self.role == "page":
            hello = connect_message("page", self.instance_id)
        else:
            hello = connect_message("assistant", self.instance_id, self.conversation_id)
        target = connect_target(self.peer_origin, self.opaque_child)
        self.host.post(self.frame.contentWindow, to_js(hello), target, to_js([channel.port2]))
        port = {"kind": "port", "position": "embedder", "nonce": self.nonce}
        if self.role == "assistant":
            # The worker expects the child to echo the conversation this connect names,
            # which a new conversation begun meanwhile would otherwise not be.
            port["conversationId"] = self.conversation_id
        self._to_worker(port, [channel.port1])
        self.connect_sent = True

    # -- handshake: child ---------------------------------------------------------------

    def _start_child(self) -> None:
        embedder = _embedder_origin()
        if embedder is not None and embedder != self.peer_origin:
            js.console.error("pagecontext: " + self._foreign_embedder(embedder))
        self._take_nonce()
        self.owner.listen(js.window, "hashchange", self._on_hashchange)

    def _foreign_embedder(self, embedder: str) -> str:
        """Why this child, in a page of `embedder` rather than of its peerOrigin, never
        binds, and what its author does about it."""
        if self.role == "page":
            # A business page framed by another site (a portal) with position "auto":
            # as a child it waits for an assistant workbench on peerOrigin, which never
            # comes, and it never loads its own assistant.
            return (
                "this page is framed by "
                + embedder
                + ", so it started as a child, which binds only to an assistant workbench"
                + " on its peerOrigin "
                + str(self.peer_origin)
                + ': a page that another site frames sets "position": "embedder"'
                + " (docs/integration.md)"
            )
        # Its `ready` goes to peerOrigin only, so the browser drops it, and the page
        # waits for a child that never answers: say why, where its author looks.
        return (
            "this frame is in a page of "
            + embedder
            + ", but configured for the page origin "
            + str(self.peer_origin)
            + ": the two never bind (configure or build it for "
            + embedder
            + ")"
        )

    def _take_nonce(self) -> None:
        """Read the nonce once from the URL, remove it, and announce readiness. A
        fragment that is not a nonce's is the page's own, and stays."""
        location = js.window.location
        nonce = read_nonce(location.hash)
        if str(location.hash).startswith(NONCE_PREFIX):
            js.history.replaceState(js.history.state, "", location.pathname + location.search)
        if nonce is not None:
            self.nonce = nonce
        self.host.post(js.window.parent, to_js(ready_message(self.role)), self.peer_origin, None)

    def _on_hashchange(self, event: Any) -> None:
        if read_nonce(js.window.location.hash) is not None:
            self._take_nonce()

    def _on_connect(self, event: Any, data: dict[str, Any]) -> None:
        ports = event.ports
        if self.nonce is None or ports is None or ports.length != 1:
            self._reject("no-nonce" if self.nonce is None else "ports")
            return
        message = {"kind": "port", "position": "child", "nonce": self.nonce, "peer": data}
        self._to_worker(message, [ports[0]])
        self.nonce = None

    # -- worker messages ----------------------------------------------------------------

    def worker_failed(self, reason: str) -> None:
        """The worker failed: it said so (`failed`), its script did not load, or it
        stopped on an uncaught error (its `error` event, which boot.mjs hands over when
        it came before `begin()`); `reason` is why, perhaps empty. The worker is ended:
        retired (the boot host's `retire`: told to say `bye` to a peer it may be bound
        to, then terminated), so that a runtime that failed does not keep its memory for
        as long as the page stays open, nor answer a peer after its frame said
        `failed`."""
        self._fail("worker: " + (reason or WORKER_ERROR))
        if not self.worker_ended:
            self.worker_ended = True
            self.host.retire(self.worker)

    def _on_worker_error(self, event: Any) -> None:
        message = getattr(event, "message", None)
        self.worker_failed(str(message) if message else "")

    def _say_unsaved(self, unsaved: bool) -> None:
        """Whether the conversation lives in memory only (storage denied or full), said
        in words (a status the user sees and hears) and through data-pc-storage."""
        if unsaved == self.root.hasAttribute("data-pc-storage"):
            return
        if unsaved:
            self.root.setAttribute("data-pc-storage", "unavailable")
        else:
            self.root.removeAttribute("data-pc-storage")
        note = js.document.querySelector("[data-pc-storage-note]")
        if note is not None:
            note.textContent = STORAGE_NOTE if unsaved else ""

    def _from_worker(self, event: Any) -> None:
        saved = self.host.persist(self.storage_key, event.data)
        if saved is not None:
            # A save, which storage denied (blocked third-party storage) or full refuses.
            self._say_unsaved(not saved)
            return
        if self.worker_ended:
            # A worker that failed is being retired: what it still posts before it ends
            # (the `unbound` its `bye` makes, a panel state) does not undo `failed`.
            return
        message = _plain(event.data, worker=True)
        if not isinstance(message, dict):
            js.console.error("pagecontext: a message from the worker could not be read")
            return
        kind = message.get("kind")
        if kind == "runtime":
            self._load_child()
        elif kind == "ready":
            if self.boot_timer is not None:
                self.owner.cancel(self.boot_timer)
                self.boot_timer = None
            self._set_state("ready")
            self._load_child()
        elif kind == "bound":
            if self.position == "embedder" and self.connect_sent:
                # Bound: the child answered. A reloaded child's new document may announce
                # itself before the worker's `unbound` for the binding that ended comes,
                # which armed the silent timer anew (`_await_child`): withdrawn here. Not
                # while no connect is out since the last navigation: that `bound` is for
                # the binding that ended, and the timer is the new document's (an
                # assistant's worker sends no `unbound` that would arm it again). Before
                # the connection's number is set: one `pagecontext:state` says both.
                self._child_answered()
            connection = message.get("connection")
            self.root.setAttribute("data-pc-connection", str(connection))
            self.public["connection"] = connection
            self._set_state("bound")
        elif kind == "connecting":
            # A child: its `connected` is out; the embedder's `bound` makes it bound.
            self._set_state("connecting")
        elif kind == "unbound":
            self._set_state("ready")
            if self.position == "embedder" and self.frame is not None and self.frame.isConnected:
                # The bound child went away (a `bye`, a reload whose new document never
                # announced itself: its server is down). Report it silent past
                # `timeouts.childMs`, as for a first load (docs/integration.md), rather
                # than say "Connecting…" for good; `_child_answered` withdraws it.
                self._await_child()
        elif kind == "conversation" and self.config["role"] == "page":
            self._conversation_left(message.get("conversationId"))
        elif kind == "conversation":
            # A new conversation: the next `connect` this embedder sends names it.
            conversation_id = message.get("conversationId")
            if isinstance(conversation_id, str):
                self.conversation_id = conversation_id
                self.root.setAttribute("data-pc-conversation", conversation_id)
                self._announce(NEW_CONVERSATION_BEGUN)
        elif kind == "diagnostics":
            self._on_diagnostics(message)
        elif kind == "refused":
            # The worker closed a port whose handshake failed (nonce, role, identity).
            reason = str(message.get("reason"))
            self._reject("handshake-" + reason)
            if self.position == "embedder":
                self._child_refused(reason)
        elif kind == "failed":
            self.worker_failed(str(message.get("error")))
        elif kind == "apply":
            self._apply(message)
        elif kind == "select-refused":
            self._refuse_event("select", str(message.get("reason")))
            self._selection_refused(message)
        elif kind == "selected":
            self.root.setAttribute("data-pc-revision", str(message.get("revision")))
            self._publish(revision=message.get("revision"))
        elif kind == "shared":
            self.root.setAttribute("data-pc-shared-revision", str(message.get("revision")))
            self._publish(sharedRevision=message.get("revision"))
        elif kind == "state":
            # Read: the worker may build the next one while this one is drawn.
            self._to_worker({"kind": "state-read"})
            self.state = message
            if message.get("bound"):
                self._set_state("bound")
            else:
                self._set_state("connecting" if message.get("connecting") else "ready")
            self._render_panel(message)
        elif kind == "log":
            self._render_log(message.get("ids") or [], message.get("changed") or [])
            earlier = js.document.querySelector("[data-pc-log-earlier]")
            if earlier is not None:
                earlier.hidden = message.get("earlier") is not True
        elif kind == "ask-refused":
            not_asked = message.get("reason") == "not-asked"
            said = "Not sent: " + str(message.get("why")) + "." if not_asked else ASK_REFUSED
            self._ask_refused(str(message.get("question") or ""), said)
        elif kind == "new-conversation-refused":
            self._announce(NEW_CONVERSATION_WAITS)

    # -- diagnostics --------------------------------------------------------------------

    def diagnose(self) -> int:
        """Ask the worker for a fresh report (after a garbage collection); return its seq.

        The report lands on `<html data-pc-diagnostics-seq>` and in the diagnostics panel.
        """
        self.diagnostics_seq += 1
        self._to_worker({"kind": "diagnose", "seq": self.diagnostics_seq})
        return self.diagnostics_seq

    def _on_diagnostics(self, report: dict[str, Any]) -> None:
        self.diagnostics = report
        root = self.root
        root.setAttribute("data-pc-port-refused", str(report.get("refused", 0)))
        root.setAttribute("data-pc-heap-bytes", str(report.get("heapBytes", 0)))
        root.setAttribute("data-pc-heap-in-use", str(report.get("heapInUse", 0)))
        root.setAttribute("data-pc-internal-errors", str(report.get("internalErrors", 0)))
        root.setAttribute("data-pc-py-objects", str(report.get("pyObjects", 0)))
        if report.get("seq") is not None:
            root.setAttribute("data-pc-diagnostics-seq", str(report["seq"]))
        self._render_diagnostics()

    def _render_diagnostics(self, event: Any = None) -> None:
        panel = js.document.querySelector("[data-pc-diagnostics]")
        if panel is None or not panel.open:
            return
        if event is not None:
            # Opened by the user: a fresh report, drawn when it lands (`_on_diagnostics`);
            # until one was asked for, every counter would stay "…".
            self.diagnose()
        rows = [("window messages refused", "")]
        for reason in sorted(self.rejected):
            rows.append(("  " + reason, str(self.rejected[reason])))
        report = self.diagnostics
        rows.append(("port messages refused", str(report.get("refused", "…"))))
        for group in ("commands", "contexts", "control"):
            counts = report.get(group) or {}
            for reason in sorted(counts):
                rows.append(("  " + reason, str(counts[reason])))
        if "components" in report:
            # A page's core: the components it knows (docs/integration.md).
            rows.append(("components", str(report["components"])))
        # The page's integration events refused here (`_refuse_event`).
        for name in ("select", "rendered", "command-done"):
            refused = self.root.getAttribute("data-pc-refused-" + name)
            if refused:
                rows.append(("pagecontext:" + name + " refused", refused))
        rows.append(("not plain data", str(report.get("notPlainData", "…"))))
        rows.append(("Pyodide heap", str(report.get("heapBytes", "…")) + " bytes"))
        rows.append(("  in use", str(report.get("heapInUse", "…")) + " bytes"))
        rows.append(("internal errors", str(report.get("internalErrors", "…"))))
        rows.append(("Python objects", str(report.get("pyObjects", "…"))))
        table = panel.querySelector("dl")
        table.replaceChildren()
        for name, value in rows:
            table.append(text_element("dt", name))
            table.append(text_element("dd", value))

    # -- page DOM adapter ---------------------------------------------------------------

    def _start_page_dom(self) -> None:
        doc = js.document
        self.owner.listen(doc, "click", self._on_click)
        # In the capture phase: an event dispatched on an element without `bubbles`
        # (CustomEvent's default) reaches the document only there.
        for name, handler in (
            ("pagecontext:rendered", self._on_rendered),
            ("pagecontext:select", self._on_select_event),
            ("pagecontext:share", self._on_share_event),
            ("pagecontext:clear", self._on_clear_event),
            ("pagecontext:command-done", self._on_command_done),
        ):
            self.owner.listen(doc, name, handler, capture=True)
        # A re-send the worker makes on its own (a new conversation, a new binding) goes
        # with what each component declares at that time, not at the last selection.
        self.owner.observe(
            doc,
            {"attributes": True, "attributeFilter": ["data-pc-shareable"], "subtree": True},
            self._on_declared,
        )
        components = doc.querySelectorAll("[data-pc-component]")
        for i in range(components.length):
            self._scan(components[i])

    def replay(self, events: Any) -> None:
        """Handle what the page did before this edge listened, as if it came now: its
        clicks and selection events, in order (boot.mjs keeps them while MicroPython
        loads). Call it right after `begin()`."""
        handlers = {
            "click": self._on_click,
            "pagecontext:select": self._on_select_event,
            "pagecontext:share": self._on_share_event,
            "pagecontext:clear": self._on_clear_event,
        }
        for i in range(events.length):
            event = events[i]
            handler = handlers.get(event.type)
            if handler is not None:
                handler(event)

    def _on_rendered(self, event: Any) -> None:
        target = event.target
        # An element (nodeType 1) that is a component; the document or an element inside
        # a component is not one, and reports nothing.
        if target.nodeType != 1 or not target.getAttribute("data-pc-component"):
            self._refuse_event(
                "rendered", "dispatch it on the component's element (data-pc-component)"
            )
            return
        self._forget_removed(target.getAttribute("data-pc-component"))
        self._scan(target)

    def _forget_removed(self, reported: str) -> None:
        """Forget the components the page has taken out of its document since (a closed
        widget, a dashboard's widgets of ids made as they come): those whose element is
        gone and that no element has the id of now (a component given a new element
        stays, for its own report). Nothing here or in the worker keeps them or their
        elements, the marks on those are removed, and a refresh one of them was asking
        for is `not-found`: it will not render again."""
        detached = [cid for cid, el in self.components.items() if not el.isConnected]
        if not detached:
            return
        present = _components_in_document()
        gone = [cid for cid in detached if cid != reported and cid not in present]
        if not gone:
            return
        for component_id in gone:
            del self.components[component_id]
            self.views.pop(component_id, None)
            objects = self.registry.pop(component_id, None)
            if objects is not None:
                for element in _each(
                    self.host.replaced(objects, None, self.selected, self.highlight_words)
                ):
                    self._unmark(element)
            for command_id in self.pending_refresh.pop(component_id, []):
                self._ui_done(command_id, "not-found", "not-rendered")
        self._to_worker({"kind": "gone", "componentIds": gone})

    def _scan(self, component: Any) -> None:
        """Rebuild one component's registry from the DOM and report its view."""
        component_id = component.getAttribute("data-pc-component")
        if not component_id:
            return
        filters_text = component.getAttribute("data-pc-filters")
        # Read as JavaScript reads it ("" where it refuses it: not a JSON object).
        written = None if filters_text is None else _reread(filters_text) or ""
        try:
            filters, generation = parse_view(written, component.getAttribute("data-pc-generation"))
        except ValueError as error:
            # Nothing of it changes: its objects and view stay as last reported.
            self._refuse_event("rendered", component_id + ": " + str(error))
            return
        # A component nested in this one reports its own objects.
        objects = self.host.objects(component)
        # An element that no longer stands for the object it stood for (a long list
        # recycles its rows for other objects) loses the marks it had for that object.
        before = self.registry.get(component_id)
        if before is not None:
            for element in _each(
                self.host.replaced(before, objects, self.selected, self.highlight_words)
            ):
                self._unmark(element)
        self.registry[component_id] = objects
        # The selected object keeps its mark through a render that gives it a new element
        # (a list built again, a framework's new rows): the selection is the object's,
        # and "Ask AI" still shares it.
        held = self.selecting
        element = (
            self._object(component_id, held[1])
            if held is not None and held[0] == component_id
            else None
        )
        if element is not None and element != self.selected:
            self._mark_selected(element)
        page_id = component.getAttribute("data-pc-page") or "page"
        # The filters as written: `_follow` must tell apart every view the worker does
        # (1, 1.0 and true are three filters there, and compare equal here); a text that
        # differs only in its spacing or order selects again in the same view, which is
        # harmless.
        view = (page_id, filters_text, generation)
        self.components[component_id] = component
        self.views[component_id] = view
        self._to_worker(
            {
                "kind": "view",
                "componentId": component_id,
                "pageId": page_id,
                "filters": filters,
                # The worker's CPython puts them in the text's order, which a MicroPython
                # dict does not keep (integration.filters_in_page_order).
                "filtersText": filters_text,
                "generation": generation,
                "shareable": self._declared(component),
            },
            objects=objects,
        )
        if element is not None:
            self._follow(component_id, view)
        if component_id == self.refreshing:
            self.rendered_while_refreshing = True
        for command_id in self.pending_refresh.pop(component_id, []):
            self._ui_done(command_id, "applied", "ok")

    def _follow(self, component_id: str, view: Any) -> None:
        """The selected object is still rendered after its component rendered: if the
        component shows another view than the one it was selected in (other filters, a
        new generation), select it again as it is shown now, so that the selection the
        user sees marked is the one "Ask AI" shares, in the view its commands are
        checked against. Not a selection whose values the page gave: those are the
        page's to give again (`pagecontext:select`). One refused (values the page shows
        now that cannot be shared) is not tried again at every render: the selection
        before it stays, as the user's own refused one would."""
        held = self.selecting
        if held is not None and self.selecting_view not in (None, view):
            self.selecting_view = None
            self._select(component_id, held[1], {})

    def _on_click(self, event: Any) -> None:
        target = event.target
        if target is None or not hasattr(target, "closest"):
            return
        if target.closest("[data-pc-ask]") is not None:
            self._share()
            return
        row = target.closest("[data-pc-resource-ref]")
        if row is None:
            self._clicked_nothing(target)
            return
        component = row.closest("[data-pc-component]")
        if component is None:
            return
        component_id = component.getAttribute("data-pc-component")
        ref = row.getAttribute("data-pc-resource-ref")
        if self._object(component_id, ref) != row:
            return  # not an object this component reported as rendered
        self._select(component_id, ref, {})

    def _clicked_nothing(self, target: Any) -> None:
        """A click in a component that reports no object at all selected nothing: said
        once per component in the console, since its objects' attribute may be
        misspelled (`data-pc-resourceref`). A component with objects is not said: a click
        beside them (a header, a gap) is an ordinary one."""
        component = target.closest("[data-pc-component]")
        if component is None:
            return
        component_id = str(component.getAttribute("data-pc-component"))
        objects = self.registry.get(component_id)
        if objects is not None and objects.size:
            return
        self._say_once(
            "empty " + component_id,
            "a click in component "
            + component_id
            + " selected nothing: it reports no objects (no element in it has"
            + " data-pc-resource-ref when it reports pagecontext:rendered; docs/integration.md)",
        )

    def _object(self, component_id: str, ref: Any) -> Any:
        """The element of object `ref` of a component, as last reported; None if it has
        none, or `ref` is no string. MicroPython hands JavaScript a string only up to a
        NUL (it would find the object named by what precedes it): a ref holding one goes
        as its JSON, whose escape carries it, and finds the object of that very ref (a
        page's JavaScript may give a `data-pc-resource-ref` a NUL; the refs the worker
        is told hold it)."""
        objects = self.registry.get(component_id)
        if objects is None or not isinstance(ref, str):
            return None
        if "\x00" in ref:
            return self.host.object(objects, json.dumps(ref), True)
        return self.host.object(objects, ref, False)

    def _say_once(self, key: str, text: str) -> None:
        """Warn in the console with `text`, the first time only for `key`."""
        if key not in self.said:
            self.said.add(key)
            js.console.warn("pagecontext: " + text)

    def _declared(self, component: Any) -> list[list[Any]]:
        """The fields a component declares shareable now (`data-pc-shareable`, each
        `name` or `name:unit`), as [name, unit or None] pairs. A colon with nothing on one
        side of it (`total: EUR`, `:EUR`) is taken as written, and said once in the
        console: such a field is shared with no unit, and the word after the space is a
        field."""
        written = component.getAttribute("data-pc-shareable") or ""
        shareable = []
        for item in written.split():
            name, colon, unit = item.partition(":")
            if colon and not (name and unit):
                self._say_once(
                    "shareable " + written,
                    "data-pc-shareable of component "
                    + str(component.getAttribute("data-pc-component"))
                    + " has "
                    + json.dumps(item)
                    + ", with no "
                    + ("unit after" if name else "field before")
                    + " its colon (a field's unit follows its colon with no space:"
                    + " total:EUR); taken as written",
                )
            shareable.append([name, unit or None])
        return shareable

    def _say_unshared(
        self, component: Any, row: Any, declared: list[list[Any]], values: dict[str, Any]
    ) -> None:
        """Say once what of a selection's markup looks misspelled, since nothing else
        shows it: a `data-pc-` attribute pagecontext does not read on the component, the
        object or inside it (the first object selected in each component is looked at),
        and values the selection has but does not share while a field the component
        declares has none, or while it declares none."""
        component_id = str(component.getAttribute("data-pc-component"))
        if row is not None and "looked " + component_id not in self.said:
            self.said.add("looked " + component_id)
            inside = row.querySelectorAll("*")
            # At most the first ones: each costs MicroPython calls into JavaScript, and an
            # object may hold a whole nested component (5000 elements: most of a second).
            count = min(inside.length, SCANNED_ELEMENTS)
            elements = [component, row] + [inside[i] for i in range(count)]
            for name in _unread_attributes(elements):
                self._say_once(
                    "attribute " + component_id + " " + name,
                    "component "
                    + component_id
                    + " has "
                    + name
                    + ", which pagecontext does not read there (misspelled? the attributes"
                    + ' are listed in docs/integration.md, "Components and objects")',
                )
        names = [pair[0] for pair in declared]
        unshared = sorted([name for name in values if name not in names])
        if not unshared:
            return
        key = "unshared " + component_id
        if names:
            # Only values that look like a declared field with no value, each field said
            # once: a value the page keeps to itself, beside a field that one object does
            # not have, is a correct page's.
            # (Those said already are not compared again: this runs at every selection.)
            lacked = [
                name
                for name in names
                if name not in values and "missing " + component_id + " " + name not in self.said
            ]
            missing: list[str] = []
            alike: list[str] = []
            for name, other in misspelled_fields(lacked, unshared):
                if name not in missing:
                    missing.append(name)
                if other not in alike:
                    alike.append(other)
            if not missing:
                return
            for name in missing:
                self.said.add("missing " + component_id + " " + name)
            key += " " + " ".join(missing)
            unshared = sorted(alike)
            said = (
                "data-pc-shareable of component "
                + component_id
                + " names "
                + ", ".join(missing)
                + ", which this selection has no value for"
            )
        else:
            said = "component " + component_id + " declares no field shareable (data-pc-shareable)"
        self._say_once(
            key,
            said
            + "; these of its values are not shared: "
            + ", ".join(unshared)
            + " (a name misspelled in data-pc-shareable, data-pc-field or data-pc-values?)",
        )

    def _select(self, component_id: str, ref: str, given: dict[str, Any]) -> None:
        """Select object `ref` of a component: what the user sees of it, the component's
        values (a chart's title), the object's own (a mark's series, bucket and value),
        then its cells, if it is rendered, and `given` (a `pagecontext:select`'s) over
        them. A rendered object is marked `aria-selected`; the one marked before is
        unmarked. A `data-pc-values` that is not a JSON object of scalars refuses the
        selection (counted and logged, as a wrong `pagecontext:select` is)."""
        component = self.components[component_id]
        row = self._object(component_id, ref)
        values: dict[str, Any] = {}
        for element in (component, row):
            problem = None if element is None else _attr_values(element, values)
            if problem is not None:
                self._refuse_event("select", component_id + " " + ref + ": " + problem)
                return
        if row is not None:
            cells = row.querySelectorAll("[data-pc-field]")
            for i in range(cells.length):
                cell = cells[i]
                raw = cell.getAttribute("data-pc-value")
                value = _attr_value(raw) if raw is not None else shown_text(cell.textContent)
                values[cell.getAttribute("data-pc-field")] = value
        for name in given:
            values[name] = given[name]
        declared = self._declared(component)
        self._say_unshared(component, row, declared, values)
        self._mark_selected(row)
        self.selecting = (component_id, ref)
        self.selecting_view = None if given else self.views.get(component_id)
        self.select_seq += 1
        self._selection_changed(
            {
                "kind": "select",
                "componentId": component_id,
                "resourceRef": ref,
                "values": values,
                "shareable": declared,
                "seq": self.select_seq,
            }
        )

    def _conversation_left(self, conversation_id: Any) -> None:
        """The assistant began a new conversation: the highlights it asked for in the one
        it left go (the answers they belonged to are cleared), the selection stays, and
        the page is told (`pagecontext:conversation`), for highlights it drew itself."""
        self._take_marks_off()
        detail = {"conversationId": conversation_id if isinstance(conversation_id, str) else None}
        _dispatch(js.document, "pagecontext:conversation", detail, False)

    def _take_marks_off(self) -> None:
        """Take every highlight the assistant's commands drew off the page."""
        for objects in self.registry.values():
            for element in _each(self.host.highlighted(objects, None, self.highlight_words)):
                _unhighlight(element)

    def _unmark(self, element: Any) -> None:
        """`element` no longer stands for the object it was marked for: its marks go."""
        _unhighlight(element)
        if element == self.selected:
            self._mark_selected(None)

    def _mark_selected(self, element: Any) -> None:
        """Mark `element` (None: none) `aria-selected`, and the one marked before
        `aria-selected="false"`: it is still an object the user may select, and says so."""
        if self.selected is not None:
            self.selected.setAttribute("aria-selected", "false")
        self.selected = element
        if element is not None:
            element.setAttribute("aria-selected", "true")

    def _selection_refused(self, message: dict[str, Any]) -> None:
        """The core refused the selection this edge sent last: the object selected before
        it is marked again (none if none was, or if it is not rendered). Nothing if this
        edge has sent a newer selection since, even of the same object: the worker takes
        that one after the refused one (the refusal names its `seq`)."""
        refused = (message.get("componentId"), message.get("resourceRef"))
        if refused != self.selecting or message.get("seq") != self.select_seq:
            return
        current = message.get("current")
        kept = None
        self.selecting = None
        self.selecting_view = None
        if isinstance(current, list) and len(current) == 2:
            kept = self._object(current[0], current[1])
            self.selecting = (current[0], current[1])
        self._mark_selected(kept)

    def _selection_changed(self, message: dict[str, Any]) -> None:
        """Tell the worker the selection changed (`select`, `clear`); with `share:
        "select"` it is shared at once."""
        self._to_worker(message)
        if self.config["share"] == "select":
            self._share()

    def _on_declared(self, records: Any, observer: Any) -> None:
        """A component's `data-pc-shareable` changed: the worker is told at once."""
        declared = {}
        for i in range(records.length):
            target = records[i].target
            component_id = target.getAttribute("data-pc-component")
            if component_id in self.components:
                declared[component_id] = self._declared(target)
        if declared:
            self._to_worker({"kind": "declared", "declared": declared})

    def _share(self) -> None:
        """Have the worker share the current selection, with what each component declares
        shareable at this moment: a field the page stopped declaring after the user
        selected (or declares with another unit) does not leave, whether or not the
        component has reported a render since."""
        # Read from the elements in the document now (a component may have a new
        # element its render has not reported yet); one that has none declares nothing.
        present = _components_in_document()
        declared = {}
        for component_id in self.components:
            element = present.get(component_id)
            declared[component_id] = [] if element is None else self._declared(element)
        self._to_worker({"kind": "share", "declared": declared})

    def _refuse_event(self, name: str, why: str) -> None:
        """Count and report an integration event the page sent wrong; nothing is done."""
        attribute = "data-pc-refused-" + name
        count = int(self.root.getAttribute(attribute) or "0") + 1
        self.root.setAttribute(attribute, str(count))
        js.console.error("pagecontext: " + name + " refused: " + why)

    def _read_detail(self, event: Any, name: str, parse: Any) -> Any:
        """Return `parse(event.detail)`, or None after refusing the event if it fails."""
        data = _plain(event.detail, detail=True)
        if data is None:
            self._refuse_event(
                name,
                "detail must be a JSON object, its numbers finite and its strings whole characters",
            )
            return None
        try:
            return parse(data)
        except ValueError as error:
            self._refuse_event(name, str(error))
            return None

    def _on_select_event(self, event: Any) -> None:
        """`pagecontext:select` from a page that keeps the selection in its own state."""
        found = self._read_detail(event, "select", parse_select)
        if found is None:
            return
        component_id, ref, values = found
        if component_id not in self.components:
            if component_id in _components_in_document():
                # In the document, but added after pagecontext started and never
                # reported: the registry knows nothing of it yet.
                why = (
                    "data-pc-component="
                    + component_id
                    + " has not reported itself: dispatch pagecontext:rendered on it"
                    + " once it is in the document, then select"
                )
            else:
                why = "no data-pc-component=" + component_id + " on the page"
            self._refuse_event("select", why)
            return
        self._select(component_id, ref, values)

    def _on_share_event(self, event: Any) -> None:
        self._share()

    def _on_clear_event(self, event: Any) -> None:
        """`pagecontext:clear`: the user cleared the selection (shared at once with
        `share: "select"`, else on the next "Ask AI")."""
        self._mark_selected(None)
        self.selecting = None
        self.selecting_view = None
        self._selection_changed({"kind": "clear"})

    def _apply(self, message: dict[str, Any]) -> None:
        command_id = message["commandId"]
        component_id = message["componentId"]
        objects = self.registry.get(component_id)
        component = self.components.get(component_id)
        if objects is None or component is None:
            self._ui_done(command_id, "not-found", "not-rendered")
            return
        action = message["action"]
        detail = {
            "commandId": command_id,
            "action": action,
            "componentId": component_id,
            "resourceRef": message.get("resourceRef"),
            "tone": message.get("tone"),
            "focus": message.get("focus"),
            "basisRevision": message.get("basisRevision"),
        }
        cancelled, early = self._dispatch_answered(component, "pagecontext:command", detail)
        if cancelled:
            # The page carries it out itself and answers with pagecontext:command-done;
            # until then (or if it never does) no UI receipt is sent.
            marks = message.get("basisRevision") if action == "highlight" else None
            if early is not None:
                self._page_done(command_id, marks, early[0], early[1])
                return
            _keep_last(self.delegated, (command_id, marks))
            self.owner.later(UNANSWERED_MS, lambda: self._unanswered(command_id, str(action)))
            return
        if early is not None:
            self._refuse_event("command-done", command_id + " was not cancelled by the page")
        # The page's listeners have run, and may have rendered: read what it shows now.
        objects = self.registry.get(component_id)
        component = self.components.get(component_id)
        if objects is None or component is None or not component.isConnected:
            self._ui_done(command_id, "not-found", "not-rendered")
            return
        if action == "clear-highlight":
            for el in _each(self.host.highlighted(objects, None, self.highlight_words)):
                _unhighlight(el)
            self._ui_done(command_id, "applied", "ok")
            return
        if action == "refresh":
            # On the component only (it does not bubble): a listener elsewhere must not
            # take another component's refresh.
            detail = {"commandId": command_id}
            # While it is dispatched, a render is noted too, to count once it is known
            # whether a listener took it.
            self.refreshing, self.rendered_while_refreshing = component_id, False
            taken, early = self._dispatch_answered(
                component, "pagecontext:refresh", detail, bubbles=False
            )
            rendered, self.refreshing = self.rendered_while_refreshing, None
            if not taken:
                # No listener took it (preventDefault): no reload will come, and a render
                # for another reason, during the event or later, must not confirm it.
                if early is not None:
                    self._refuse_event("command-done", command_id + " was not taken by the page")
                self._ui_done(command_id, "not-found", "no-refresh")
            elif early is not None:
                # The page took it and answered inside its listener (a reload that failed).
                self._ui_done(command_id, early[0], early[1])
            elif rendered:
                # The page reloaded inside its listener.
                self._ui_done(command_id, "applied", "ok")
            elif component_id not in self.components:
                # Taken off the page inside its listener: it will not render again.
                self._ui_done(command_id, "not-found", "not-rendered")
            else:
                _keep_last(self.pending_refresh.setdefault(component_id, []), command_id)
            return
        generation = message.get("generation")
        # What the component shows now; a generation that does not parse keeps the one it
        # last reported (as its refused report did).
        shown = _view_generation(component)
        if shown is None and component_id in self.views:
            shown = self.views[component_id][2]
        if generation is not None and shown != generation:
            # It rendered another view after the worker checked the command against it.
            self._ui_done(command_id, "stale-context", "view-changed")
            return
        ref = message.get("resourceRef")
        element = self._object(component_id, ref)
        # In the document but drawn nowhere (`hidden`, `display: none`, or inside such an
        # element: no box at all), or drawn unseen (`visibility: hidden`, `opacity: 0`,
        # on it or an ancestor): there is nothing the user could see highlighted or
        # located.
        if (
            element is None
            or not _shows_object(component, element, str(ref))
            or not self.host.seen(element)
        ):
            self._ui_done(command_id, "not-found", "not-rendered")
            return
        if action == "highlight":
            self._marks_for(message.get("basisRevision"))
            tone = message.get("tone")
            if tone == "focus":
                for el in _each(self.host.highlighted(objects, "focus", None)):
                    _unhighlight(el)
            _highlight(element, str(tone))
        elif action == "locate" and message.get("focus") == "keep":
            # Not asked for by a press of the user's (an agent's): the keyboard's focus
            # stays where the user has it, and so does what holds it (docs/protocol.md
            # 8.16), or the object is not scrolled to.
            if not self.host.scrollKeepingFocus(element):
                self._ui_done(command_id, "not-found", "not-scrolled")
                return
        elif action == "locate":
            element.scrollIntoView(to_js({"block": "nearest"}))
            element.focus(to_js({"preventScroll": True}))
            if js.document.activeElement != element:
                # Scrolled to, but the keyboard's focus did not move: an element that
                # cannot take it (no `tabindex`), so `locate` did not do all it says.
                self._ui_done(command_id, "not-found", "not-focusable")
                return
        self._ui_done(command_id, "applied", "ok")

    def _unanswered(self, command_id: str, action: str) -> None:
        """Say in the console that the page took command `command_id` and has not
        answered it, if it still has not."""
        if any(entry[0] == command_id for entry in self.delegated):
            js.console.warn(
                "pagecontext: the page took "
                + action
                + " command "
                + command_id
                + " (it cancelled pagecontext:command) and has not answered it with"
                + " pagecontext:command-done after "
                + str(UNANSWERED_MS // 1000)
                + " s: the assistant reports it unconfirmed"
            )

    def _on_command_done(self, event: Any) -> None:
        """The page finished (or could not do) a command it took over."""
        found = self._read_detail(event, "command-done", parse_command_done)
        if found is None:
            return
        command_id, status, reason = found
        if command_id == self.dispatching:
            self.early_answer = (status, reason)
            return
        for waiting in self.pending_refresh.values():
            if command_id in waiting:
                # A refresh the page took (`pagecontext:refresh`), answered before the
                # component's next render: a reload that failed says so.
                waiting.remove(command_id)
                self._ui_done(command_id, status, reason)
                return
        taken = [entry for entry in self.delegated if entry[0] == command_id]
        if not taken:
            self._refuse_event(
                "command-done",
                command_id + " is not a command the page took, or it was answered already"
                " (cancel its pagecontext:command, then answer it once)",
            )
            return
        self.delegated.remove(taken[0])
        self._page_done(command_id, taken[0][1], status, reason)

    def _page_done(self, command_id: str, marks: Any, status: str, reason: str) -> None:
        """The page answered a command it took: its `ui` receipt. A highlight it drew
        (`marks`: its selection revision) counts as one pagecontext drew (`_marks_for`)."""
        if status == "applied":
            self._marks_for(marks)
        self._ui_done(command_id, status, reason)

    def _marks_for(self, revision: Any) -> None:
        """A highlight for selection `revision` is drawn: if the marks are for another
        (a newer selection, or an older chip's Show me), they go first, in every
        component (docs/protocol.md 8.15)."""
        if isinstance(revision, int) and revision != self.marks_revision:
            self._take_marks_off()
            self.marks_revision = revision

    def _dispatch_answered(
        self, component: Any, name: str, detail: dict[str, Any], bubbles: bool = True
    ) -> tuple[bool, tuple[str, str] | None]:
        """Dispatch the cancelable event `name` about the command `detail["commandId"]`
        on `component`; return whether a listener cancelled (took) it, and the answer a
        listener gave at once (pagecontext:command-done, kept until it is known whether
        the event was taken), if any."""
        self.dispatching = detail["commandId"]
        taken = not _dispatch(component, name, detail, True, bubbles=bubbles)
        early, self.early_answer = self.early_answer, None
        self.dispatching = None
        return taken, early

    def _ui_done(self, command_id: str, status: str, reason: str) -> None:
        self._to_worker(
            {"kind": "ui-done", "commandId": command_id, "status": status, "reason": reason}
        )

    # -- assistant panel ----------------------------------------------------------------

    def _start_panel(self) -> None:
        doc = js.document
        self.owner.listen(doc.querySelector("[data-pc-show]"), "click", self._on_show)
        self.owner.listen(doc.querySelector("[data-pc-chips]"), "click", self._on_chip_click)
        composer = doc.querySelector("[data-pc-composer]")
        if composer is not None:
            self.owner.listen(composer, "submit", self._on_ask)
        field = doc.querySelector("[data-pc-question]")
        draft = str(self.host.takeDraft(self.storage_key) or "")
        if field is not None and draft and not str(field.value).strip():
            field.value = draft
        # Said as the panel starts, not at its first save: a question typed before
        # anything is selected, or a panel reloaded into an empty conversation, is told
        # that nothing is kept (the first save that goes through takes it away).
        self._say_unsaved(not self.host.storageUsable(self.storage_key))
        restore = doc.querySelector("[data-pc-restore-chips]")
        if restore is not None:
            self.owner.listen(restore, "click", self._on_restore_chips)
        begin = doc.querySelector("[data-pc-new-conversation]")
        if begin is not None:
            self.owner.listen(begin, "click", self._on_new_conversation)
        stop = doc.querySelector("[data-pc-stop]")
        if stop is not None:
            self.owner.listen(stop, "click", self._on_stop)
        log = doc.querySelector("[data-pc-log]")
        if log is not None:
            # Mounted again in the same document: the worker posts every entry anew.
            log.replaceChildren()
            self.owner.listen(log, "click", self._on_log_click)
        preview = doc.querySelector("[data-pc-preview]")
        if preview is not None:
            self.owner.listen(preview, "toggle", self._on_preview_toggle)
            if preview.open:
                self._on_preview_toggle()

    def _on_show(self, event: Any) -> None:
        # The second click of a double click (the browser counts a mouse's quick clicks
        # in `detail`; a key press has 0) is the same press: its commands are not sent
        # again.
        if event.detail > 1:
            return
        # Unbound, nobody would answer its commands: it is off (`_render_panel`), and a
        # press says why, as Send and New conversation do.
        if not self.state.get("bound"):
            self._announce(SHOW_WAITS)
            return
        self._to_worker({"kind": "show"})

    def _on_chip_click(self, event: Any) -> None:
        button = event.target.closest("[data-pc-chip-remove]")
        if button is not None:
            chip = button.closest("[data-pc-chip-key]")
            key = chip.getAttribute("data-pc-chip-key") if chip is not None else None
            self._to_worker({"kind": "remove-chip", "key": key})

    def _on_restore_chips(self, event: Any) -> None:
        self._to_worker({"kind": "restore-chips"})

    def _on_new_conversation(self, event: Any) -> None:
        # Off while the worker is busy (aria-disabled): what is on its way settles in the
        # log. The worker says so too (`new-conversation-refused`) if it got busy since.
        if self.state.get("busy"):
            self._announce(NEW_CONVERSATION_WAITS)
            return
        self._to_worker({"kind": "new-conversation"})

    def _on_preview_toggle(self, event: Any = None) -> None:
        # "What the AI sees" is composed only while it is open: the worker is told.
        preview = js.document.querySelector("[data-pc-preview]")
        self._to_worker({"kind": "preview", "open": bool(preview.open)})

    def _on_stop(self, event: Any) -> None:
        """Stop the answer running. The button goes with the answer's end: the focus
        waits in the question's field, for what the user asks next."""
        self._to_worker({"kind": "stop"})
        _focus_question()

    def _on_log_click(self, event: Any) -> None:
        """Confirm or decline a business action the agent proposed, or put a failed
        answer's question back in the field."""
        if event.target.closest("[data-pc-ask-again]") is not None:
            self._ask_again(event.target.closest("[data-pc-log-id]"))
            return
        button = event.target.closest("[data-pc-action-decision]")
        if button is None or button.getAttribute("aria-disabled") == "true":
            return
        entry = button.closest("[data-pc-log-id]")
        if entry is None:
            return
        decision = button.getAttribute("data-pc-action-decision")
        kinds = {"confirm": "confirm-action", "decline": "decline-action", "check": "check-action"}
        kind = kinds.get(decision)
        if kind is None:
            return
        # A decision is taken once: its buttons are off at once, before the worker's new
        # state arrives (aria-disabled, which keeps the keyboard's focus where it is until
        # the entry is redrawn). A check only reads the server, and may be asked again (a
        # check that got no usable answer says so, and changes nothing else).
        if decision != "check":
            for other in entry.querySelectorAll("[data-pc-action-decision]"):
                other.setAttribute("aria-disabled", "true")
        self._to_worker({"kind": kind, "id": entry.getAttribute("data-pc-log-id")})

    def _ask_again(self, answer: Any) -> None:
        """Put the question `answer` (an answer's entry) answered back in the question
        field, with the focus: the user sends it again, about the context shown now. A
        field that holds another question the user is writing keeps it, and the panel
        says so."""
        question = answer.previousElementSibling if answer is not None else None
        while question is not None and question.getAttribute("data-pc-log-kind") != "question":
            question = question.previousElementSibling
        if question is None:
            return
        field = _focus_question()
        if field is None:
            return
        text = question.querySelector("p").textContent
        typed = str(field.value).strip()
        if typed and typed != text:
            self._announce(WRITING_KEPT)
        else:
            field.value = text
        _show_composer()

    def _on_ask(self, event: Any) -> None:
        event.preventDefault()
        field = js.document.querySelector("[data-pc-question]")
        if field is None:
            return
        question = str(field.value).strip()
        if not question:
            return
        if self.state.get("answering"):
            # The question stays in its field for when the answer is done.
            self._announce("The assistant is still answering: send your question once it is done.")
            return
        # The chip drawn as the user sends: the worker asks only if it still holds that
        # context (a newer one may have come since this state was drawn).
        chip = self.drawn.get("chip")
        shown = [chip["pageInstanceId"], chip["revision"]] if chip else None
        self._to_worker({"kind": "ask", "question": question, "shown": shown})
        field.value = ""

    def _ask_refused(self, question: str, said: str) -> None:
        """The worker did not ask (the context changed as the user sent, say). The
        question goes back into its field (unless the user typed another since), and the
        panel says why (`said`); a new chip is drawn by the state that follows."""
        field = js.document.querySelector("[data-pc-question]")
        if field is not None and not str(field.value).strip():
            field.value = question
        self._announce(said)

    def _changed(self, part: str, value: Any) -> bool:
        """Whether this part of the panel's state differs from what is drawn; if so, it
        is noted as drawn (the caller draws it)."""
        if part in self.drawn and self.drawn[part] == value:
            return False
        self.drawn[part] = value
        return True

    def _render_panel(self, state: dict[str, Any]) -> None:
        doc = js.document
        chip = state.get("chip")
        # Where the keyboard's focus was, if a part redrawn or hidden here held it.
        refocus = False
        first = not self.drawn
        if first:
            # The first state: until now the panel's markup (web/panel.html) said the
            # assistant is starting, its composer off.
            for hook in ("[data-pc-question]", "[data-pc-send]", "[data-pc-new-conversation]"):
                control = doc.querySelector(hook)
                if control is not None:
                    control.disabled = False
        bound = bool(state.get("bound"))
        if self._changed("bound", bound):
            # Off until bound (aria-disabled, as Send: a press does nothing, `_on_show`):
            # a Show me sent then would reach no page.
            show = doc.querySelector("[data-pc-show]")
            show.setAttribute("aria-disabled", "false" if bound else "true")
        # A receipt or an answer's progress leaves the chip as it is: not rebuilt.
        before = self.drawn.get("chip") or {}
        chip_changed = self._changed("chip", chip)
        # The context drawn before, drawn again (its page reloaded since, say): no new
        # context, though the revision moved (a new page document starts its own anew).
        same_context = _same_chip(before, chip, "pageInstanceId", "revision")
        # No chip because the user removed the pinned one (not a cleared selection while
        # an older removal stands): Ask AI on the same object keeps it out, so the empty
        # area asks for another one (Bring it back is shown under it).
        removed = chip is None and bool(state.get("removed"))
        if self._changed("removed", removed) or chip_changed:
            chips = doc.querySelector("[data-pc-chips]")
            refocus = _holds_focus(chips)
            chips.replaceChildren()
            doc.querySelector("[data-pc-show]").disabled = chip is None
            if chip is not None:
                chips.append(chip_element(chip))
            else:
                said = CONTEXT_REMOVED_EMPTY if removed else CONTEXT_EMPTY
                chips.append(text_element("p", said, "pc-empty"))
        # The last revision committed, chip or not (a removed chip stays removed).
        revision = state.get("revision") or 0
        if self._changed("revision", revision) and not first:
            # What Ask AI did, said to a user who cannot see the panel change: the context
            # taken, or kept out as they asked.
            # The same object again (selected again as its component rendered another
            # view, shared at once with share "select", as a live component does at
            # every render): said once, not at every render.
            same_object = _same_chip(before, chip, "componentId", "resourceRef")
            if chip is not None and chip_changed and not same_context:
                said = "Context updated: " if same_object else "Context added: "
                self._announce(said + str(chip.get("resourceRef")), not same_object)
            elif chip is None and state.get("dismissed"):
                self._announce(CONTEXT_STAYS_REMOVED, False)
        reloaded = isinstance(chip, dict) and bool(chip.get("pageReloaded"))
        if same_context and reloaded and not before.get("pageReloaded"):
            # Heard as well as seen: the chip's note.
            self._announce(str(before.get("resourceRef")) + ": " + CHIP_PAGE_RELOADED)
        self.root.setAttribute("data-pc-revision", str(revision))
        answering = state.get("answering")
        self.root.setAttribute("data-pc-answering", "true" if answering else "false")
        off_while = {"[data-pc-send]": answering, "[data-pc-new-conversation]": state.get("busy")}
        for hook, off in off_while.items():
            control = doc.querySelector(hook)
            if control is not None:
                # aria-disabled, not disabled: a disabled button loses the keyboard's
                # focus, and the one who just pressed Send would land on nothing. A press
                # then does nothing but say why (`_on_ask`, `_on_new_conversation`).
                control.setAttribute("aria-disabled", "true" if off else "false")
        # Stop is there while an answer runs; one that held the focus as it ends hands it
        # to the question's field, not to the body.
        stop = doc.querySelector("[data-pc-stop]")
        if stop is not None and bool(stop.hidden) == bool(answering):
            held = _holds_focus(stop)
            stop.hidden = not answering
            if held and not answering:
                _focus_question()
        preview = doc.querySelector("[data-pc-preview]")
        if preview is not None:
            # textContent, never markup: the text is shown exactly as the model gets it.
            # None: it is closed, and the worker did not compose it.
            text = state.get("preview")
            pre = preview.querySelector("pre")
            if pre is not None and self._changed("preview", text):
                fill_block(pre, text or "")
            preview.setAttribute("data-pc-preview-composed", "false" if text is None else "true")
        dismissed = doc.querySelector("[data-pc-dismissed]")
        if dismissed is not None:
            count = state.get("dismissed") or 0
            refocus = refocus or (not count and _holds_focus(dismissed))
            dismissed.hidden = not count
            dismissed.setAttribute("data-pc-dismissed", str(count))
        if refocus:
            self._refocus_context()
        command = state.get("command")
        shown = receipt_summary(command) if command is not None else None
        located = locate_state(command) if command is not None else None
        # A live region: written only when what it says (or where its locate stands)
        # changes, so that it is not announced again on every state.
        if not self._changed("receipt", [command and command["commandId"], shown, located]):
            return
        receipt = doc.querySelector("[data-pc-receipt]")
        if command is None or shown is None:
            receipt.removeAttribute("data-pc-receipt-status")
            receipt.removeAttribute("data-pc-receipt-command")
            receipt.removeAttribute("data-pc-receipt-locate")
            receipt.textContent = ""
            return
        status, detail = shown
        # A new command's receipt is said even when it reads as the last one did.
        again = receipt.getAttribute("data-pc-receipt-command") != command["commandId"]
        # The command id first: a status always belongs to the command named with it.
        receipt.setAttribute("data-pc-receipt-command", command["commandId"])
        receipt.setAttribute("data-pc-receipt-status", status)
        if located is None:
            receipt.removeAttribute("data-pc-receipt-locate")
        else:
            receipt.setAttribute("data-pc-receipt-locate", located)
        _say(receipt, detail, again)

    def _refocus_context(self) -> None:
        """The chip or "Bring it back" held the focus and was redrawn or hidden: the
        focus goes to what took its place (the chip, read whole; "Bring it back" after a
        removal), else to the question, never to the page's body."""
        doc = js.document
        target = doc.querySelector("[data-pc-chip]")
        if target is None:
            dismissed = doc.querySelector("[data-pc-dismissed]")
            if dismissed is not None and not dismissed.hidden:
                target = dismissed.querySelector("[data-pc-restore-chips]")
        if target is None:
            target = doc.querySelector("[data-pc-question]")
        if target is not None:
            # Not scrolled into view: a focus in the panel never scrolls the page around it.
            target.focus(to_js({"preventScroll": True}))

    def _announce(self, text: str, again: bool = True) -> None:
        """Say `text` through the panel's status region (a polite live region); with
        `again`, said again if it repeats what the region holds (a second press that
        must wait)."""
        region = js.document.querySelector("[data-pc-announce]")
        if region is not None:
            _say(region, text, again)

    def _render_log(self, ids: list[Any], changed: list[Any]) -> None:
        """Redraw the changed entries of the conversation, add new ones at the end and
        drop those no longer in it (the log grows at the end, and loses its oldest)."""
        log = js.document.querySelector("[data-pc-log]")
        if log is None:
            return
        # The composer in view before, or the user's question added: kept in view after,
        # with the newest entries above it, as the log grows under it. A user who
        # scrolled up to read stays where they are.
        follow = _composer_shown()
        for entry in changed:
            element = log_element(entry)
            old = self.log_items.get(entry.get("id"))
            if old is None:
                log.append(element)
                self.log_items[entry.get("id")] = element
                # The user's own question: they are at the composer, and follow it.
                follow = follow or entry.get("kind") == "question"
                if element.getAttribute("data-pc-answer-state") == "running":
                    self._announce("The assistant is answering…")
                continue
            if old.getAttribute("data-pc-answer-state") == "running":
                # Heard as well as seen: a failure is an alert of its own (and the
                # status no longer says the assistant is answering).
                if entry.get("state") == "done":
                    self._announce(_answered(entry))
                elif entry.get("state") == "failed":
                    # A failure is an alert of its own; the user's own stop is not, and
                    # is said here (the focus has gone to the question's field).
                    error = entry.get("error")
                    stopped = isinstance(error, dict) and error.get("code") == STOPPED
                    self._announce(failure_summary(STOPPED) if stopped else "")
            before = old.querySelector("[data-pc-action-status]")
            said = None if before is None else str(before.textContent)
            # A control inside the entry held the focus (a decision pressed): the redraw
            # replaces it, so the focus goes to the entry, which is read whole, outcome
            # included (not announced as well). The entry itself is patched in place,
            # never replaced: one that holds the focus keeps it with no new focus event
            # (nothing read again, the log not scrolled back to it).
            inside = _holds_focus(old) and not old.isSameNode(js.document.activeElement)
            _patch(old, element)
            if inside:
                old.focus(to_js({"preventScroll": True}))
                continue
            # An action's outcome, and a late answer about it, is said as it is shown.
            status = old.querySelector("[data-pc-action-status]")
            if (
                status is not None
                and old.getAttribute("data-pc-action-state") != "pending"
                and said != str(status.textContent)
            ):
                self._announce(str(status.textContent))
        kept = set(ids)
        lost = False
        for entry_id in list(self.log_items):
            if entry_id not in kept:
                gone = self.log_items.pop(entry_id)
                lost = lost or _holds_focus(gone)
                gone.remove()
        if lost:
            # The focus was on an entry that went (a new conversation, the oldest trimmed):
            # it goes to the question, never to the panel's body.
            _focus_question()
        if follow:
            _show_composer()

    def close(self) -> None:
        """Remove every listener and drop every proxy, and end the worker: a bound (or
        binding) one is retired (the boot host's `retire`: it says `bye` to the peer,
        then ends), any other terminated at once. The marks it set on the page's elements
        (`aria-selected`, `data-pc-highlight`) are removed. This edge is no longer
        `current()`."""
        self.owner.release()
        if self.selected is not None:
            self.selected.removeAttribute("aria-selected")
            self.selected = None
        self._take_marks_off()
        # What it published of its binding and selections goes with it: a mount after it
        # starts from none.
        for name, key in _CLOSED_WITH_THE_EDGE.items():
            self.root.removeAttribute("data-pc-" + name)
            self.public[key] = None
        # A worker that failed was retired then (`worker_failed`): it ends once its bye
        # is out, which terminating it now would cut short.
        if self.public.get("state") in ("bound", "connecting"):
            self.host.retire(self.worker)
        elif not self.worker_ended:
            self.worker.terminate()
        self._set_state("closed")
        if self in _EDGE:
            _EDGE.remove(self)


def _answered(entry: dict[str, Any]) -> str:
    """What the status says of an answer that is done: that it is, and what it says (its
    first ANSWER_SAID_CHARS characters), for a user who hears rather than reads the log."""
    text = " ".join(str(entry.get("text") or "").split())
    if not text:
        return "The assistant answered."
    if len(text) > ANSWER_SAID_CHARS:
        text = text[:ANSWER_SAID_CHARS] + "… (the rest is in the conversation)"
    return "The assistant answered: " + text


def _say(region: Any, text: str, again: bool) -> None:
    """Write `text` into the live region `region`. A live region says only what changed:
    with `again` (a new message), words that read as those shown go with a no-break space
    added, or taken away, so that they are said again; without it they are left as they
    are, and not said again."""
    shown = str(region.textContent)
    if text and shown.rstrip("\u00a0") == text:
        if not again:
            return
        text = text + "\u00a0" if shown == text else text
    region.textContent = text


def _same_chip(before: Any, chip: Any, *keys: str) -> bool:
    """Whether the chip drawn `before` and `chip` (both dicts, or none drawn) agree on
    `keys`."""
    return (
        isinstance(chip, dict)
        and bool(before)
        and [before.get(key) for key in keys] == [chip.get(key) for key in keys]
    )


def _holds_focus(element: Any) -> bool:
    """Whether the keyboard's focus is on `element` or inside it, in this document while
    it has the focus (a frame's `activeElement` stays set when the user moves on to the
    page around it, and a focus moved then would take the page's focus away)."""
    doc = js.document
    active = doc.activeElement
    return (
        element is not None
        and active is not None
        and bool(doc.hasFocus())
        and bool(element.contains(active))
    )


def _patch(old: Any, new: Any) -> None:
    """Make `old` what `new` is, keeping `old` itself in the document (and the focus it
    may hold): `new`'s attributes, then its children, moved over."""
    for name in list(old.getAttributeNames()):
        if not new.hasAttribute(name):
            old.removeAttribute(name)
    for name in list(new.getAttributeNames()):
        old.setAttribute(name, new.getAttribute(name))
    old.replaceChildren()
    child = new.firstChild
    while child is not None:
        old.append(child)
        child = new.firstChild


def _saved_conversation(text: str) -> str | None:
    """The conversation id in the saved state's JSON text, if there is one and it is an
    id (1 to 64 base64url characters)."""
    try:
        saved = json.loads(text)
    except ValueError:
        return None
    found = saved.get("conversationId") if saved_state_readable(saved) else None
    # A damaged id would make every connect malformed, on every reload: a new one then.
    return found if is_instance_id(found) else None


_PUBLIC_KEYS = ("state", "connection", "revision", "sharedRevision", "child", "error")
# The `<html>` attributes (after `data-pc-`) of an edge's binding and selections, which
# closing it removes, each with the `pagecontext:state` key it clears.
_CLOSED_WITH_THE_EDGE = {
    "connection": "connection",
    "revision": "revision",
    "shared-revision": "sharedRevision",
    "child-state": "child",
}


def _public_detail(state: str, **known: Any) -> dict[str, Any]:
    """A `pagecontext:state` detail: every key present, None until known."""
    detail: dict[str, Any] = dict.fromkeys(_PUBLIC_KEYS)
    detail["state"] = state
    detail.update(known)
    return detail


def _dispatch(
    target: Any, name: str, detail: dict[str, Any], cancelable: bool, bubbles: bool = True
) -> bool:
    """Dispatch a CustomEvent (bubbling unless `bubbles` is False) with plain data as its
    detail; return False if a listener cancelled it (a listener's exception is reported,
    never raised here)."""
    init = {"detail": detail, "bubbles": bubbles, "cancelable": cancelable}
    event_init = _js_data(init)
    return bool(target.dispatchEvent(js.CustomEvent.new(name, event_init)))


def _check_child_frame(config: dict[str, Any]) -> None:
    """Check the embedder's `<iframe data-pc-child>` and give it `childUrl` as its
    `data-pc-src` if it has none. Raises ConfigError if it is missing or its URL is not
    on the peer's origin."""
    frame = js.document.querySelector("[data-pc-child]")
    if frame is None:
        raise ConfigError(
            "position",
            "an embedder needs an <iframe data-pc-child> in the document when pagecontext"
            " starts (a page that renders it later mounts after: mount() of boot.mjs)",
        )
    if not frame.getAttribute("data-pc-src") and config["childUrl"]:
        frame.setAttribute("data-pc-src", config["childUrl"])
    src = frame.getAttribute("data-pc-src")
    if src is None:
        raise ConfigError("childUrl", "missing: give childUrl or the iframe's data-pc-src")
    if not url_on_origin(src, config["peerOrigin"]):
        raise ConfigError(
            "childUrl",
            "the child frame's URL must be on peerOrigin "
            + config["peerOrigin"]
            + ", got "
            + str(src),
        )


# The panel's elements an assistant cannot work without (web/panel.html has them all;
# the others, the composer and the log among them, are optional).
PANEL_HOOKS = ("data-pc-chips", "data-pc-show", "data-pc-receipt")


def _check_panel() -> None:
    """Check that an assistant's document holds the panel's required elements. Raises
    ConfigError naming the missing ones."""
    missing = [name for name in PANEL_HOOKS if js.document.querySelector("[" + name + "]") is None]
    if missing:
        raise ConfigError(
            "role",
            "an assistant's page needs the panel's elements (web/panel.html): missing "
            + ", ".join("[" + name + "]" for name in missing),
        )


_EDGE: list["Edge"] = []


def check(config: Any, worker: Any, host: Any) -> dict[str, Any] | None:
    """Check this frame's config: the first of the edge's start steps (see `Edge`).
    Return the checked config for `Edge(config, worker, host)`.

    A config that `integration.parse_config` refuses fails loudly: the worker is
    stopped, `<html data-pc-state="failed" data-pc-error="config: FIELD: why">` is
    published (and `pagecontext:state`), and None is returned.
    """
    _HOST[:] = [host]
    try:
        checked = parse_config(_plain(config))
        _check_peer_origin(checked)
        if checked["position"] == "embedder":
            _check_child_frame(checked)
        if checked["agentUrl"]:
            checked["agentUrl"] = _resolved_agent_url(checked["agentUrl"], host)
        if checked["role"] == "assistant":
            _check_panel()
        # Last: what is wrong in the config or the document is said first.
        _check_embedded(checked)
    except ConfigError as error:
        worker.terminate()
        message = "config: " + str(error)
        js.console.error("pagecontext: " + message)
        root = js.document.documentElement
        root.setAttribute("data-pc-error", message)
        root.setAttribute("data-pc-error-field", error.field)
        root.setAttribute("data-pc-state", "failed")
        detail = _public_detail("failed", error=message)
        _dispatch(js.document, "pagecontext:state", detail, False)
        return None
    return checked


def _check_peer_origin(checked: dict[str, Any]) -> None:
    """Refuse a peer on this frame's own origin, which could never bind: the two frames
    are kept apart by their origins."""
    own = str(js.location.origin)
    if checked["peerOrigin"] == own:
        raise ConfigError(
            "peerOrigin", "is this frame's own origin " + own + ": the two frames need two origins"
        )


def _check_embedded(checked: dict[str, Any]) -> None:
    """Refuse a child with no embedder (a top-level document), which could never bind."""
    if checked["position"] == "child" and js.window.parent == js.window:
        raise ConfigError(
            "position",
            '"child" in a document that no frame embeds: "embedder", or "auto" to choose',
        )


def _resolved_agent_url(url: str, host: Any) -> str:
    """The agent URL resolved against this document (`host.url`: `new URL()`, which
    throws on what it cannot parse, and MicroPython cannot catch that)."""
    resolved = host.url(url, js.location.href)
    if not isinstance(resolved, str):
        raise ConfigError("agentUrl", "not a URL the browser can parse: " + url)
    return resolved


def current() -> "Edge | None":
    """Return the running edge (for the page's own Python code), or None."""
    return _EDGE[-1] if _EDGE else None
