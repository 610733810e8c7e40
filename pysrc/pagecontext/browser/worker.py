"""The Worker side of a pagecontext frame, run by Pyodide.

Owns the bound MessagePort and drives the sans-IO session (`pagecontext.session`):
it converts what arrives (edge messages, port messages, timer ticks) into session
calls and carries out the effects the session returns. Every proxy it creates has an
owner: the port's listener is kept by `WorkerBinding` and destroyed with the port it
listens to, a timer's callback is a once-callable (destroyed when it runs, or by
`WorkerBinding` when the deadline it was set for goes), and the edge's listener lives as
long as the worker, which the boot script terminates when its frame unmounts or fails.

Conversion happens here, at the edge: the boot script's port listener checks each
message is plain JSON-compatible data (a Map, a Date, an ArrayBuffer, a class instance
is refused before it reaches the core) and hands them over in batches, as JSON text.
"""

from __future__ import annotations

import asyncio
import gc
import json
import random
import secrets
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Literal

import js
import pyodide_js
from pyodide.ffi import JsException, JsProxy, create_once_callable, create_proxy, jsnull, to_js

from pagecontext.agui import read_outside_json
from pagecontext.answers import MALFORMED
from pagecontext.browser import callsites
from pagecontext.composer import Composer
from pagecontext.integration import (
    DEFAULT_HISTORY,
    PLAIN_DATA_MAX_DEPTH,
    TIMEOUTS,
    filters_in_page_order,
)
from pagecontext.models import Limits, parse_json
from pagecontext.rehearsal import rehearsal, rehearse_handshake
from pagecontext.session import (
    ACTION_TIMEOUT_MS,
    INTERNAL_ERROR,
    ActionRequest,
    AssistantSession,
    ClosePort,
    Effect,
    PageSession,
    Refresh,
    ShownChip,
    StartRun,
    ToEdge,
    ToPeer,
)

# Diagnostics after refused port messages are coalesced: at most one report this often.
DIAGNOSTICS_EVERY_MS = 250
# The longest a run may go on, however steadily its agent streams: a backstop for an
# agent that never ends. Its silences are timed by `timeouts.agentIdleMs`.
RUN_MAX_MS = 600_000
# The code of an answer asked for with no agent configured (`agentUrl` "").
NO_AGENT = "no-agent"
# An agent's answer: AG-UI's events over server-sent events.
EVENT_STREAM = "text/event-stream"
# How much of a refused agent request's body the panel shows, and the types of body it
# shows (an error page's markup, say, would read as noise).
_ERROR_BODY_CHARS = 200
_ERROR_BODY_TYPES = ("application/json", "application/problem+json", "text/plain")
# How much of an HTTP answer is read at most: an agent's error page, the action API's
# JSON (a few hundred bytes); what is past it is not read.
_ANSWER_BYTES = 65_536


def port_text_limit(limits: Limits) -> int:
    """A port message whose JSON text would pass this many characters is dropped by the
    boot script's listener, unread by Python (counted as not plain data): far past any
    message the core takes (its size limit is in UTF-8 bytes, at least one per
    character), so only a message built to make the worker parse megabytes is."""
    return 4 * limits.max_message_bytes + 65_536


def to_plain(value: Any) -> Any:
    """Return plain JS data (checked by the boot script's `plainDataProblem`) as dicts,
    lists and scalars. JSON null becomes None: Pyodide keeps it as `jsnull`."""
    if isinstance(value, JsProxy):
        value = value.to_py()
    return _nulls_to_none(value)


def _nulls_to_none(value: Any) -> Any:
    if value is jsnull:
        return None
    if isinstance(value, JsProxy):
        # to_py() leaves an object with an own "constructor" key as a proxy; the data is
        # already known to be plain, so read its own keys (the core then refuses the key).
        return {
            str(key): _nulls_to_none(js.Reflect.get(value, key)) for key in js.Object.keys(value)
        }
    if isinstance(value, dict):
        return {key: _nulls_to_none(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_nulls_to_none(item) for item in value]
    return value


def _each_message(batch: Any) -> Iterator[Any]:
    """The port messages of a batch from `listenPort` in order: a string item holds one
    JSON text per line (JSON text has no raw newline), any other item is one message."""
    for item in batch:
        if isinstance(item, str):
            yield from item.split("\n")
        else:
            yield item


def _js(message: dict[str, object]) -> Any:
    return to_js(message, dict_converter=js.Object.fromEntries)


def _wire(message: dict[str, object]) -> Any:
    """A port message as JavaScript data, through JSON: Pyodide hands the integers
    ±Number.MAX_SAFE_INTEGER over as BigInts (its Numbers stop short of them), which
    the peer refuses as no JSON; JSON.parse makes every number a Number."""
    return js.JSON.parse(json.dumps(message, separators=(",", ":")))


def _body(response: Any) -> Any:
    """`response`'s body stream, or None if it has none (204, 205)."""
    body = response.body
    return None if body is None or body is jsnull else body


async def _read_text(response: Any, limit: int) -> str:
    """The text of `response`'s body, its first `limit` bytes at most: the rest is not
    read (a body past it is cut, and its JSON does not parse)."""
    body = _body(response)
    if body is None:
        return ""
    reader = body.getReader()
    decoder = js.TextDecoder.new()
    parts: list[str] = []
    size = 0
    try:
        while size <= limit:
            chunk = await reader.read()
            if chunk.done:
                break
            size += int(chunk.value.length)
            parts.append(str(decoder.decode(chunk.value, _js({"stream": True}))))
    finally:
        await _cancel(reader)
    return "".join(parts)


def _media_type(response: Any) -> str:
    """A response's media type, lower case, without its parameters; "" if none."""
    return str(response.headers.get("content-type") or "").partition(";")[0].strip().lower()


async def _error_detail(response: Any) -> str:
    """What the panel shows of a refused agent request: the start of its body if it is
    JSON or plain text, else only its type (an error page's markup reads as noise)."""
    kind = _media_type(response)
    if kind in _ERROR_BODY_TYPES:
        return (await _read_text(response, _ANSWER_BYTES))[:_ERROR_BODY_CHARS]
    body = _body(response)
    if body is not None:
        await _cancel(body.getReader())
    return "its answer was " + (kind or "of no stated type") + ", not shown"


async def _cancel(reader: Any) -> None:
    """Stop reading a body: the network may stop sending it."""
    try:
        await reader.cancel()
    except JsException:
        return  # already closed or errored: nothing more will come


def _saved_state(text: object) -> dict[str, Any]:
    """The assistant's saved state from its JSON text; {} if there is none or it is damaged.
    Half a character (an escaped lone surrogate, which this build never saves) is read as
    U+FFFD, so that no restored string stops a run's JSON."""
    if not isinstance(text, str):
        return {}
    try:
        saved = read_outside_json(text)
    except ValueError:
        return {}
    return saved if isinstance(saved, dict) else {}


def _shown_chip(value: object) -> ShownChip | None:
    """The chip the panel showed, from the edge's `ask`: [pageInstanceId, revision], or
    None for no chip (anything else reads as none, so a question sent with it is refused
    while a chip is shown)."""
    if isinstance(value, list) and len(value) == 2:
        page_instance_id, revision = value
        if isinstance(page_instance_id, str) and type(revision) is int:
            return (page_instance_id, revision)
    return None


async def _fetch(url: str, body: str | None, headers: dict[str, str], signal: Any) -> Any:
    """Call `fetch`: POST `body`, or GET when it is None, given up (its body too) when
    `signal` aborts. Raises JsException when no answer came (see `_timed_out`)."""
    init: dict[str, Any] = {
        "method": "GET" if body is None else "POST",
        "headers": headers,
        "signal": signal,
    }
    if body is not None:
        init["body"] = body
    return await js.fetch(url, _js(init))


def _pairs(shareable: list[list[Any]]) -> list[tuple[str, str | None]]:
    """The edge's [name, unit or None] declarations of a component's shareable fields."""
    return [(name, unit) for name, unit in shareable]


def _declare_all(session: PageSession, declared: dict[str, list[list[Any]]]) -> None:
    """Record what each component (by id) declares shareable now, as the edge read it."""
    for component_id, shareable in declared.items():
        session.declare(component_id, _pairs(shareable))


def _ms_since(started: float) -> float:
    """The milliseconds since `started` (a `performance.now()`), to a tenth."""
    now: float = js.performance.now()
    return round(now - started, 1)


def _mark_times(name: str, times: list[float], **detail: object) -> None:
    """Mark `pagecontext:<name>` with `detail`, the milliseconds `times` took in all
    (`ms`) and the longest of them (`longest`)."""
    detail.update(ms=round(sum(times), 1), longest=max(times))
    js.performance.mark("pagecontext:" + name, _js({"detail": detail}))


class _OneShot:
    """A timer that calls `callback` once, `ms` after it was last armed: armed again or
    cleared first, the earlier arming never calls. It owns the callable it hands to
    `setTimeout`, destroyed when it runs or is cleared."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self._timer: Any = None
        self._proxy: Any = None
        # Whether it called since it was last armed.
        self.fired = False

    @property
    def armed(self) -> bool:
        return self._timer is not None

    def arm(self, ms: float) -> None:
        self.clear()
        self.fired = False
        self._proxy = create_once_callable(self._fire)
        self._timer = js.setTimeout(self._proxy, ms)

    def _fire(self) -> None:
        # The once-callable destroys itself when it runs.
        self._timer = self._proxy = None
        self.fired = True
        self.callback()

    def clear(self) -> None:
        if self._timer is not None:
            js.clearTimeout(self._timer)
            self._timer = None
        if self._proxy is not None:
            self._proxy.destroy()
            self._proxy = None


def _timed_out(error: JsException) -> bool:
    """True if `_fetch` gave up waiting, False for a network or CORS failure."""
    return bool(error.name == "TimeoutError")


# struct mallinfo: ten 32-bit words; `uordblks`, the bytes allocated, is the eighth.
_MALLINFO_BYTES = 40
_MALLINFO_IN_USE = 7


def _malloc_in_use() -> int:
    """The bytes malloc holds allocated in the wasm heap: Python's memory in use (this
    runtime has no pymalloc; every object is malloc's). `HEAP8.length`, the heap's
    size, never shrinks; this moves with what is kept."""
    module = pyodide_js._module
    info = module._malloc(_MALLINFO_BYTES)
    try:
        module._mallinfo(info)
        return int(module.HEAPU32[(info >> 2) + _MALLINFO_IN_USE])
    finally:
        module._free(info)


def _new_id() -> str:
    return secrets.token_urlsafe(16)


def _now() -> float:
    return float(js.Date.now())


def _steady() -> float:
    """Epoch milliseconds that only move forward: the worker's start on the wall clock
    plus the monotonic time since. The receipt ledger's deadlines run on it: Date.now()
    steps back and forth with the system clock (an NTP step, a user setting the time),
    and a step back left commands pending, the New conversation button refused, for as
    long as the step, then took their receipts as on time."""
    return float(js.performance.timeOrigin) + float(js.performance.now())


# While a receipt is awaited, the worker beats every BEAT_MS; a gap between two beats
# over FROZEN_MS is time it was not run: the browser froze it (with its page, kept in
# the back/forward cache, or in a tab it froze), or something starved it.
BEAT_MS = 500.0
FROZEN_MS = 1000.0


class _ActiveClock:
    """The assistant's clock for its receipt deadlines: `_steady()` less the time this
    worker was not run while receipts were awaited (`beat`). The page is frozen with it:
    a command's deadline counts the time the frames ran, so a receipt the page sends as
    it is shown again is on time, not late."""

    def __init__(self) -> None:
        self.frozen = 0.0
        self._last: float | None = None  # the last beat, while receipts are awaited

    def __call__(self) -> float:
        return _steady() - self.frozen

    def catch_up(self) -> None:
        """While receipts are awaited, beat now: the worker may run again after a freeze
        before its beat does, and what is judged next must not count the freeze."""
        if self._last is not None:
            self.beat()

    def beat(self) -> None:
        """A beat, and before a receipt is judged: the time since the last one beyond a
        beat's is not counted, if it is over FROZEN_MS."""
        now = float(js.performance.now())
        if self._last is not None and now - self._last > FROZEN_MS:
            self.frozen += now - self._last - BEAT_MS
        self._last = now

    def rest(self) -> None:
        """No receipt is awaited: no beat until the next."""
        self._last = None


class WorkerBinding:
    """Joins the session to the worker scope and the bound port."""

    def __init__(self, scope: Any, listen_port: Any) -> None:
        self.scope = scope
        self.listen_port = listen_port
        self.session: PageSession | AssistantSession | None = None
        self.port: Any = None
        self._port_proxy: Any = None
        self._port_listener: Any = None
        # The ledger's next deadline, and the timer set for it; the ledger's clock, and
        # its beat while a deadline is set.
        self._deadline_timer = _OneShot(self._on_timer)
        self._clock = _ActiveClock()
        self._beat = _OneShot(self._on_beat)
        self._timer_deadline: float | None = None
        self.rejected_plain = 0
        # Failures inside this worker, each caught where it happened and counted (the
        # diagnostics' `internalErrors`, with the session's): never a dead worker.
        self.internal_errors = 0
        self._limits = Limits()
        self._diagnostics_due = False
        self._pending: set[Literal["state", "persist"]] = set()
        self._flush_due = False
        # A panel state is on its way to the edge, which has not taken it yet: the next
        # one waits, so the main thread never has a queue of states to draw.
        self._state_unread = False
        self._log_version: object = None
        # The conversation log as last posted to the panel: entry id -> its JSON.
        self._shown_log: dict[str, str] = {}
        # The agent's URL and the page origin of the action API (assistant role).
        self.agent_url = ""
        self.agent_idle_ms = TIMEOUTS["agentIdleMs"]
        self.api_origin = ""
        # Each running answer's AbortController, by run id: Stop aborts its request.
        self._run_controllers: dict[str, Any] = {}
        # Requests in flight (agent runs, action API calls), kept until they finish.
        self._requests: set[asyncio.Task[None]] = set()
        # A selection's path, rehearsed once after the first binding (pagecontext.rehearsal).
        self._rehearsal: Iterator[list[dict[str, object]]] | None = None
        self._rehearsed = False
        self._rehearsal_ms: list[float] = []
        # The interpreter's call sites (pagecontext.browser.callsites): spread at the
        # rehearsal's start, provoked after each of its steps and `_provocations` times
        # after it; how long each provocation took.
        self._provocations = 0
        self._provoke_ms: list[float] = []
        self._edge_proxy = create_proxy(self._from_edge)
        scope.onmessage = self._edge_proxy

    # -- edge messages ------------------------------------------------------------------

    def _from_edge(self, event: Any) -> None:
        """One message from the edge. One that fails (a defect, or data the edge let
        through that the core refuses) is counted and changes nothing else."""
        try:
            self._edge_message(event)
        except Exception:
            self._internal_error()

    def _internal_error(self) -> None:
        self.internal_errors += 1
        self._diagnostics_soon()

    def _edge_message(self, event: Any) -> None:
        message = to_plain(event.data)
        kind = message.get("kind")
        session = self.session
        if kind == "init":
            self._init(message)
            return
        if session is None:
            return
        effects: list[Effect] = []
        if kind == "port":
            self._take_port(event.ports[0])
            position, nonce, peer = message["position"], message.get("nonce"), message.get("peer")
            named = message.get("conversationId")
            if isinstance(session, AssistantSession) and isinstance(named, str):
                # The conversation the edge's `connect` named (a new one may have begun
                # while it was on its way).
                effects = session.attach_port(position, nonce, peer, named)
            else:
                effects = session.attach_port(position, nonce, peer)
        elif kind == "child-reloaded":
            effects = session.child_reloaded()
        elif kind == "bye":
            self._run(session.bye())
            # An unmounted edge ends this worker at this answer (the boot host's retire).
            self.scope.postMessage(_js({"kind": "bye-sent"}))
            return
        elif kind == "state-read":
            self._state_unread = False
            if self._pending:
                self._flush_soon()
        elif kind == "diagnose":
            self._post_diagnostics(message.get("seq"), collect=True)
        elif isinstance(session, PageSession):
            effects = self._page_event(session, kind, message)
        else:
            if kind == "stop":
                # The stopped answer's stream is read no more: its request is aborted at
                # once, not when the agent's next part or its silence limit comes.
                controller = self._run_controllers.get(session.answering or "")
                if controller is not None:
                    controller.abort()
            effects = self._assistant_event(session, kind, message)
        self._run(effects)

    def _init(self, message: dict[str, Any]) -> None:
        if message["role"] == "page":
            # limits and history as integration.parse_config checked them on the edge.
            self._limits = Limits(**message.get("limits", {}))
            self.session = PageSession(
                page_instance_id=message["instanceId"],
                clock=_now,
                new_id=_new_id,
                limits=self._limits,
                history=message.get("history", DEFAULT_HISTORY),
            )
        else:
            session = AssistantSession(
                instance_id=message["instanceId"],
                conversation_id=message["conversationId"],
                clock=self._clock,
                new_id=_new_id,
            )
            session.restore(_saved_state(message.get("restored")))
            authorization = message.get("authorization")
            session.authorization = authorization if isinstance(authorization, str) else None
            agent_authorization = message.get("agentAuthorization")
            if isinstance(agent_authorization, str):
                session.agent_authorization = agent_authorization
            self.agent_url = str(message.get("agentUrl") or "")
            idle = message.get("agentIdleMs")
            self.agent_idle_ms = idle if isinstance(idle, int) else TIMEOUTS["agentIdleMs"]
            self.api_origin = str(message.get("apiOrigin") or "")
            self.session = session
            self._run([Refresh("state")])
        self.scope.postMessage(_js({"kind": "ready"}))
        self._later(self._rehearse_handshake, 0)

    def _rehearse_handshake(self) -> None:
        """Once ready, rehearse a binding on sessions of its own (this worker's party as
        the embedder), while it waits for its child's `connected`: checking it and
        answering `bound` then take a few ms instead of 30-50. Not in a child already
        connecting or bound, where the embedder's `bound` may be on its way."""
        session = self.session
        if session is None or session.binding is not None or session.connecting:
            return
        started = js.performance.now()
        rehearse_handshake("page" if isinstance(session, PageSession) else "assistant")
        _mark_times("handshake-rehearsed", [_ms_since(started)])

    @staticmethod
    def _page_event(session: PageSession, kind: str, message: dict[str, Any]) -> list[Effect]:
        if kind == "view":
            session.on_view(
                message["componentId"],
                page_id=message["pageId"],
                filters=filters_in_page_order(message["filtersText"], message["filters"]),
                generation=message["generation"],
                refs=message["refs"],
                shareable=_pairs(message["shareable"]),
            )
            return []
        if kind == "gone":
            session.on_gone(message["componentIds"])
            return []
        if kind == "select":
            session.declare(message["componentId"], _pairs(message["shareable"]))
            return session.on_select(
                message["componentId"],
                message["resourceRef"],
                message["values"],
                seq=message.get("seq"),
            )
        if kind == "declared":
            _declare_all(session, message["declared"])
            return []
        if kind == "share":
            _declare_all(session, message["declared"])
            return session.share()
        if kind == "clear":
            return session.clear_selection()
        if kind == "ui-done":
            return session.on_ui_done(message["commandId"], message["status"], message["reason"])
        return []

    @staticmethod
    def _assistant_event(
        session: AssistantSession, kind: str, message: dict[str, Any]
    ) -> list[Effect]:
        if kind == "show":
            return session.show()
        if kind == "remove-chip":
            key = message.get("key")
            return session.remove_chip(key if isinstance(key, str) else None)
        if kind == "restore-chips":
            return session.restore_chips()
        if kind == "stop":
            return session.stop_answer()
        if kind == "new-conversation":
            # Nothing in the log (pressed twice in a row, say): nothing to begin again,
            # and the page's selection is not sent to yet another conversation.
            return session.new_conversation(_new_id()) if session.composer.log else []
        if kind == "preview":
            return session.show_preview(message.get("open") is True)
        if kind == "ask":
            question = message.get("question")
            try:
                return session.ask(
                    str(question),
                    at=str(js.Date.new().toISOString()),
                    shown=_shown_chip(message.get("shown")),
                )
            except ValueError as refused:
                # Empty, oversized, or an answer still running (the panel drew it done):
                # the question goes back to its field, and the panel says why.
                return [
                    ToEdge(
                        {
                            "kind": "ask-refused",
                            "reason": "not-asked",
                            "question": str(question),
                            "why": str(refused),
                        }
                    )
                ]
        if kind == "confirm-action":
            return session.confirm_action(str(message.get("id")))
        if kind == "decline-action":
            return session.decline_action(str(message.get("id")))
        if kind == "check-action":
            return session.check_action(str(message.get("id")))
        return []

    # -- the bound port -----------------------------------------------------------------

    def _take_port(self, port: Any) -> None:
        self._close_port()
        self.port = port
        self._port_proxy = create_proxy(self._from_port)
        self._port_listener = self.listen_port(
            port, self._port_proxy, port_text_limit(self._limits), PLAIN_DATA_MAX_DEPTH
        )

    def _close_port(self) -> None:
        if self._port_listener is not None:
            self._port_listener.close()
            self._port_listener = None
        if self.port is not None:
            self.port.close()
            self.port = None
        if self._port_proxy is not None:
            self._port_proxy.destroy()
            self._port_proxy = None

    def _from_port(self, batch: Any) -> None:
        """Handle the port messages that arrived since the last call, in order.

        Each item is the JSON text of plain, finite data, or of several, one per line
        (parsed in C, contexts on the session's fast path), or {problem, value, head}:
        data with NaN or an infinity is read value by value so the core sees it as is;
        anything else (a Map, a Date, an ArrayBuffer, a BigInt, undefined) is never
        coerced, only counted, and the page answers a command among them from its
        envelope's scalar fields (`head`) with a `rejected` receipt.
        """
        session = self.session
        if session is None:
            return
        self._clock.catch_up()
        before = (session.refused, self.rejected_plain, self.internal_errors)
        for item in _each_message(batch):
            if self.port is None:
                break  # a bye in this batch closed the port: the rest is not ours
            try:
                if isinstance(item, str):
                    effects = session.on_port_json(item)
                elif item.problem == "non-finite":
                    effects = session.on_port_message(to_plain(item.value))
                else:
                    self.rejected_plain += 1
                    if session.binding is None:
                        # Not plain data, so not the handshake's next message either: the
                        # handshake refuses it, as one that does not validate, and closes
                        # the port (docs/protocol.md 8.12).
                        effects = session.on_port_message(None)
                    elif isinstance(session, PageSession) and item.head is not None:
                        # A command whose messageId can be read is answered `rejected`.
                        effects = session.on_port_unreadable(to_plain(item.head), item.problem)
                    else:
                        continue
                self._run(effects)
            except Exception:
                self.internal_errors += 1
        if (session.refused, self.rejected_plain, self.internal_errors) != before:
            self._diagnostics_soon()

    def _flush_soon(self) -> None:
        if self._flush_due or self._state_unread:
            return
        self._flush_due = True
        self._later(self._flush, 0)

    def _later(self, callback: Callable[[], None], delay_ms: int) -> None:
        """Call `callback` once after `delay_ms`, in a task of its own. An exception in it
        is counted (`internalErrors`) and the worker goes on: nothing escapes to the
        timer, which would fail the frame over a step that can be done again."""

        def guarded() -> None:
            try:
                callback()
            except Exception:
                self._internal_error()

        js.setTimeout(create_once_callable(guarded), delay_ms)

    def _flush(self) -> None:
        """Build and post the refreshed edge messages (state, persist), once each; while
        the edge has not read the last state, they wait for its `state-read`."""
        try:
            self._post_pending()
        except Exception:
            self._internal_error()

    def _post_pending(self) -> None:
        self._flush_due = False
        if self._state_unread:
            return
        pending, self._pending = self._pending, set()
        if isinstance(self.session, AssistantSession):
            for kind in sorted(pending, reverse=True):  # state, then persist
                # persist carries JSON text: the edge stores it without parsing.
                message = self.session.edge_message(kind)
                self.scope.postMessage(_js(message))
                if kind != "state":
                    continue
                self._state_unread = True
                if message["logVersion"] != self._log_version:
                    self._log_version = message["logVersion"]
                    self._post_log_changes(self.session.composer)

    def _post_log_changes(self, composer: Composer) -> None:
        """Post the conversation log's entries that changed since the last post, the ids
        of all entries in order (the panel redraws only those: the log can be long, and a
        receipt changes one entry), and whether earlier entries are no longer kept."""
        shown, changed = composer.log_changes(self._shown_log)
        self._shown_log = shown
        self.scope.postMessage(
            _js(
                {"kind": "log", "ids": list(shown), "changed": changed, "earlier": composer.earlier}
            )
        )

    # -- diagnostics --------------------------------------------------------------------

    def _diagnostics_soon(self) -> None:
        if self._diagnostics_due:
            return
        self._diagnostics_due = True
        self._later(self._post_due_diagnostics, DIAGNOSTICS_EVERY_MS)

    def _post_due_diagnostics(self) -> None:
        self._diagnostics_due = False
        self._post_diagnostics(None, collect=False)

    def _post_diagnostics(self, seq: object, *, collect: bool) -> None:
        """Report counters and memory: the wasm heap's size, the bytes malloc holds in
        use in it, and the objects the garbage collector tracks."""
        if self.session is None:
            return
        if collect:
            gc.collect()
        counters = self.session.diagnostics()
        session_errors = counters.get("internalErrors", 0)
        report = {
            "kind": "diagnostics",
            "seq": seq,
            **counters,
            "notPlainData": self.rejected_plain,
            "internalErrors": self.internal_errors
            + (session_errors if isinstance(session_errors, int) else 0),
            "heapBytes": int(pyodide_js._module.HEAP8.length),
            "heapInUse": _malloc_in_use(),
            "pyObjects": len(gc.get_objects()),
        }
        self.scope.postMessage(_js(report))

    # -- effects and the deadline timer -------------------------------------------------

    def _run(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, ToPeer):
                if self.port is not None:
                    self.port.postMessage(_wire(effect.message))
            elif isinstance(effect, Refresh):
                # Only the latest panel state and saved state matter: a burst of contexts
                # costs one build here and one render on the main thread.
                self._pending.add(effect.kind)
                self._flush_soon()
            elif isinstance(effect, ToEdge):
                # What is pending goes first (unless the edge has a state still unread).
                self._flush()
                self.scope.postMessage(_js(effect.message))
                if effect.message.get("kind") == "bound":
                    self._rehearse()
            elif isinstance(effect, ClosePort):
                self._close_port()
                if effect.refused:
                    self.scope.postMessage(_js({"kind": "refused", "reason": effect.reason}))
            elif isinstance(effect, StartRun):
                self._request(self._stream_run(effect))
            elif isinstance(effect, ActionRequest):
                self._request(self._call_action(effect))
        self._arm_timer()

    # -- rehearsal ----------------------------------------------------------------------

    def _rehearse(self) -> None:
        """Once bound for the first time, rehearse a selection's path on sessions of the
        rehearsal's own, one round per task, so the user's first selection and command
        do not pay for compiling and warming up the code they run. It starts by
        spreading the interpreter's call sites, and provokes them after each round and
        a few times after the last (pagecontext.browser.callsites)."""
        if self._rehearsed:
            return
        self._rehearsed = True
        self._rehearsal = rehearsal()
        self._later(self._spread_call_sites, 0)

    def _spread_call_sites(self) -> None:
        if self._rehearsal is None:
            return  # closed meanwhile
        started = js.performance.now()
        # JavaScript proxies too, which a selection's path reads and calls: new objects of
        # each kind of proxy, since the operations write to them.
        callsites.spread((js.Object.new(), js.Array.of(1), js.Map.new(), js.Array.of.bind(None)))
        self._provoke()
        self._rehearsal_ms.append(_ms_since(started))
        self._later(self._rehearse_round, 0)

    def _provoke(self) -> None:
        started = js.performance.now()
        callsites.provoke()
        self._provoke_ms.append(_ms_since(started))

    def _provoke_call_sites(self) -> None:
        if self._provocations <= 0:
            return  # closed meanwhile
        self._provoke()
        self._provocations -= 1
        if self._provocations:
            self._later(self._provoke_call_sites, callsites.PROVOKE_EVERY_MS)
            return
        # The detail: how many times the call sites were provoked, and their times.
        _mark_times("call-sites-provoked", self._provoke_ms, provoked=len(self._provoke_ms))

    def _rehearse_round(self) -> None:
        if self._rehearsal is None:
            return  # closed meanwhile
        started = js.performance.now()
        posted = next(self._rehearsal, None)
        if posted is None:
            self._rehearsal = None
            # The detail: the times its steps took.
            _mark_times("rehearsed", self._rehearsal_ms)
            self._provocations = callsites.PROVOKE_AFTER
            self._later(self._provoke_call_sites, callsites.PROVOKE_EVERY_MS)
            return
        # Converted as this worker converts what it posts and what it receives (from
        # its edge as data, from the port as a batch of JSON texts), and dropped.
        for message in posted:
            to_plain(_js(message))
        batch = js.Array.of("\n".join(json.dumps(message) for message in posted))
        for _text in _each_message(batch):
            pass
        self._provoke()
        self._rehearsal_ms.append(_ms_since(started))
        self._later(self._rehearse_round, 0)

    # -- HTTP: the agent's stream and the action API -----------------------------------

    def _request(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._requests.add(task)
        task.add_done_callback(self._request_done)

    def _request_done(self, task: asyncio.Task[None]) -> None:
        self._requests.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._internal_error()  # its own handlers already ended the run or layer

    async def _stream_run(self, start: StartRun) -> None:
        """POST the run input to the agent and feed its event stream to the session.
        Whatever fails, the run ends: the assistant never stays answering."""
        session = self.session
        if not isinstance(session, AssistantSession):
            return
        run_id = start.run_id
        if session.answering != run_id:
            # Stopped before this task began (a Stop that came as a follow-up run was
            # started): its request is never sent.
            return
        if not self.agent_url:
            # agentUrl "": there is no agent to ask (fetch("") would POST to this script).
            self._run(session.on_agent_failed(run_id, NO_AGENT, "no agentUrl is configured"))
            return
        headers = {"Content-Type": "application/json", "Accept": EVENT_STREAM}
        reader: Any = None
        # The request is aborted once the agent has sent nothing for `timeouts.agentIdleMs`
        # (timed from the request, and again from each part of its answer), RUN_MAX_MS
        # after it, or by Stop.
        controller = js.AbortController.new()
        silence, limit = _OneShot(controller.abort), _OneShot(controller.abort)
        self._run_controllers[run_id] = controller
        try:
            silence.arm(self.agent_idle_ms)
            limit.arm(RUN_MAX_MS)
            response = await _fetch(self.agent_url, start.body, headers, controller.signal)
            if not response.ok:
                detail = await _error_detail(response)
                code = f"http-{int(response.status)}"
                self._run(session.on_agent_failed(run_id, code, detail))
                return
            body = _body(response)
            if body is None or int(response.status) in (204, 205):
                # No content (a 204 may still come with an empty body stream): the
                # stream ended before it began.
                self._run(session.on_agent_end(run_id))
                return
            reader = body.getReader()
            kind = _media_type(response)
            if kind != EVENT_STREAM:
                # An AG-UI agent answers a stream of events; anything else is no answer.
                stated = "no stated type" if not kind else kind[:_ERROR_BODY_CHARS]
                detail = f"the agent answered {stated}, not {EVENT_STREAM}"
                self._run(session.on_agent_failed(run_id, MALFORMED, detail))
                return
            decoder = js.TextDecoder.new()
            while session.answering == run_id:
                silence.arm(self.agent_idle_ms)
                chunk = await reader.read()
                if chunk.done:
                    reader = None
                    break
                text = str(decoder.decode(chunk.value, _js({"stream": True})))
                self._run(session.on_agent_text(run_id, text))
            else:
                return  # the run ended (finished or refused): the reader is cancelled
            self._run(session.on_agent_text(run_id, str(decoder.decode())))
            self._run(session.on_agent_end(run_id))
        except JsException as error:
            # Once the agent's stream began, a failure cut its answer off: it was reached.
            code = "incomplete" if reader is not None else "agent-unreachable"
            detail = f"{error.name}: {error.message}"
            if silence.fired:
                code = "timeout"
                detail = f"the agent sent nothing for {self.agent_idle_ms / 1000:g} s"
            elif limit.fired:
                code = "timeout"
                detail = f"the answer was still running {RUN_MAX_MS // 1000} s after its request"
            if code == "agent-unreachable":
                # The browser says no more, whichever it was (a fetch its policy blocked
                # fails as one refused by CORS does: only the console tells them apart).
                detail += (
                    f" (no server at {self.agent_url}, a network error, no CORS answer"
                    f" for this assistant's origin, {js.location.origin}, or a"
                    f" Content-Security-Policy whose connect-src does not allow the"
                    f" agent's origin)"
                )
            self._run(session.on_agent_failed(run_id, code, detail))
        except Exception as error:
            self._internal_error()
            message = f"{type(error).__name__}: {error}"[:_ERROR_BODY_CHARS]
            self._run(session.on_agent_failed(run_id, INTERNAL_ERROR, message))
        finally:
            silence.clear()
            limit.clear()
            self._run_controllers.pop(run_id, None)
            if reader is not None:
                await _cancel(reader)

    async def _call_action(self, request: ActionRequest) -> None:
        """Send one step of a business action to the page origin's action API. Whatever
        fails, the step ends: no answer is `unconfirmed`, never success."""
        session = self.session
        if not isinstance(session, AssistantSession):
            return
        headers = {"Content-Type": "application/json"}
        if session.authorization:
            headers["Authorization"] = session.authorization
        url = self.api_origin + request.path
        try:
            signal = js.AbortSignal.timeout(ACTION_TIMEOUT_MS)
            response = await _fetch(url, request.body, headers, signal)
            status = int(response.status)
            text = await _read_text(response, _ANSWER_BYTES)
        except JsException as error:
            code = "timeout" if _timed_out(error) else "unreachable"
            self._run(session.on_action_failed(request.action_id, request.step, code))
            return
        except Exception:
            # Not the browser's failure but this worker's: counted, and the step ends.
            self._internal_error()
            self._run(session.on_action_failed(request.action_id, request.step, INTERNAL_ERROR))
            return
        try:
            body = parse_json(text)
        except ValueError:
            body = {}
        answer = body if isinstance(body, dict) else {}
        self._run(session.on_action_answer(request.action_id, request.step, status, answer))

    def _arm_timer(self) -> None:
        session = self.session
        if not isinstance(session, AssistantSession):
            return
        deadline = session.ledger.next_deadline()
        timer = self._deadline_timer
        if deadline == self._timer_deadline and (deadline is None or timer.armed):
            return  # the timer already set is the right one
        self._timer_deadline = deadline
        timer.clear()
        if deadline is None:
            self._beat.clear()
            self._clock.rest()
            return
        timer.arm(max(0.0, deadline - self._clock()) + 1)
        if not self._beat.armed:
            self._clock.beat()
            self._beat.arm(BEAT_MS)

    def _on_beat(self) -> None:
        self._clock.beat()
        if self._timer_deadline is not None:
            self._beat.arm(BEAT_MS)
        else:
            self._clock.rest()

    def _on_timer(self) -> None:
        self._timer_deadline = None
        self._clock.catch_up()
        if isinstance(self.session, AssistantSession):
            try:
                self._run(self.session.tick())
            except Exception:
                self._internal_error()
            finally:
                # The next deadline keeps its timer whatever this one did.
                self._arm_timer()


_BINDINGS: list[WorkerBinding] = []


def start(scope: Any, early: Any, listen_port: Any) -> WorkerBinding:
    """Take over the worker scope and replay the messages that arrived during boot.

    `listen_port(port, deliver, max_chars, max_depth)` is the boot script's listener: it
    checks that each port message is plain data (at most `max_chars` characters of text,
    nested at most `max_depth` deep), calls `deliver` with what arrived (runs of JSON texts,
    one per line, or {problem, value}) and returns an object whose `close()` stops it.
    """
    # The worker boots from a memory snapshot (web/worker.mjs), which gives every worker
    # the same `random` state: reseed it from the system. (The core's ids and nonces come
    # from `secrets`, which never uses that state.)
    random.seed()
    binding = WorkerBinding(scope, listen_port)
    _BINDINGS.append(binding)
    handler: Callable[[Any], None] = binding._from_edge
    for event in early:
        handler(event)
    early.length = 0
    return binding
