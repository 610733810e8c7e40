"""A second, independent AG-UI agent for the browser suites, and a stall for a route.

`ExternalAgent` is a small AG-UI server written against the `ag_ui` package alone (no
pagecontext code): it answers `POST /agent` for one assistant origin (CORS; a request
from any other `Origin`, `null` included, is refused 403 unread), reads the
pinned task from the run's context, and streams its answer with chunk events, the way
third-party agents often do. The test controls it:

- `gate`: while cleared, an answer waits before streaming (an answer "still running");
- `mode`: "answer", "forbidden" (HTTP 403, a JSON body), "html-error" (HTTP 501, an
  HTML error page), "malformed" (a content event for a message
  never started), "split-character" (`SPLIT_DELTAS`: a character cut in two between
  two deltas, and a lone half, as JSON escapes), "no-cors" (no CORS headers: the
  browser cannot read it), or "slow" (its answer in `SLOW_PARTS` deltas, each
  `pace` seconds after the one before: an answer that streams for a while);
- `inputs`: every `RunAgentInput` it received, in order;
- `tool`: the page tool its answer calls on the pinned object ("highlight", "locate",
  or "refresh" of its component).

`Stall` holds POST requests to one path while armed, as a server that does not answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from typing import Literal

import anyio
from ag_ui.core import (
    RunAgentInput,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageChunkEvent,
    ToolCallChunkEvent,
)
from ag_ui.encoder import EventEncoder
from anyio import to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Mode = Literal[
    "answer",
    "forbidden",
    "html-error",
    "malformed",
    "split-character",
    "no-cors",
    "broken-off",
    "json-answer",
    "slow",
]
# An answer whose character U+1F4C8 is cut between its two deltas (JavaScript's halves),
# with a lone low half after it; read as "Sales \U0001f4c8 up, a stray \ufffd half."
SPLIT_DELTAS = ("Sales \ud83d", "\udcc8 up, a stray \udc00 half.")
# A slow answer's parts ("slow" mode).
SLOW_PARTS = tuple(f"part {number}. " for number in range(1, 7))


async def _wait(gate: threading.Event) -> None:
    """Return once `gate` is set. The wait blocks a worker thread, not the event loop;
    a request cancelled meanwhile returns at once, and its thread ends when the gate is
    set (the servers' owner sets every gate before it stops them)."""
    if not gate.is_set():
        await to_thread.run_sync(gate.wait, abandon_on_cancel=True)


class ExternalAgent:
    """The test's own AG-UI agent for one assistant origin."""

    def __init__(self, assistant_origin: str) -> None:
        self.assistant_origin = assistant_origin
        self.mode: Mode = "answer"
        self.gate = threading.Event()
        self.gate.set()
        self.inputs: list[RunAgentInput] = []
        self.tool: Literal["highlight", "locate", "refresh"] = "highlight"
        self.pace = 0.5

    def reset(self) -> None:
        self.mode = "answer"
        self.tool = "highlight"
        self.gate.set()
        self.inputs.clear()

    def _cors(self) -> dict[str, str]:
        if self.mode == "no-cors":
            return {}
        return {
            "Access-Control-Allow-Origin": self.assistant_origin,
            "Access-Control-Allow-Methods": "POST",
            "Access-Control-Allow-Headers": "Content-Type",
            "Vary": "Origin",
        }

    async def preflight(self, _request: Request) -> Response:
        return Response(status_code=204, headers=self._cors())

    async def run(self, request: Request) -> Response:
        # CORS only keeps other pages from reading the answer: any page can make a
        # browser POST here (as text/plain, without a preflight), and a sandboxed panel
        # sends `Origin: null`. Refuse both before reading the body, so that no run
        # (no model call, no read with a credential the request brings) starts for them.
        # A client that sends no `Origin` is no web page (as for the built-in `/agent`).
        origin = request.headers.get("origin")
        if origin is not None and origin != self.assistant_origin:
            return JSONResponse({"error": "forbidden", "reason": "foreign-origin"}, status_code=403)
        run_input = RunAgentInput.model_validate_json(await request.body())
        self.inputs.append(run_input)
        if self.mode == "forbidden":
            return JSONResponse({"error": "forbidden"}, status_code=403, headers=self._cors())
        if self.mode == "html-error":
            page = "<!doctype html><title>Error</title><h1>Not implemented</h1>"
            return HTMLResponse(page, status_code=501, headers=self._cors())
        if self.mode == "json-answer":
            # A 200 that is no event stream: an endpoint that answers JSON.
            return JSONResponse({"answer": "External agent says hi"}, headers=self._cors())
        encoder = EventEncoder()
        return StreamingResponse(
            self._events(run_input, encoder),
            media_type=encoder.get_content_type(),
            headers=self._cors(),
        )

    async def _events(self, run_input: RunAgentInput, encoder: EventEncoder) -> AsyncIterator[str]:
        thread, run = run_input.thread_id, run_input.run_id
        yield encoder.encode(RunStartedEvent(thread_id=thread, run_id=run))
        if self.mode == "malformed":
            orphan = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "never-started", "delta": "x"}
            yield f"data: {json.dumps(orphan)}\n\n"
            return
        if self.mode == "broken-off":
            # Part of an answer, then the server goes away: the response is cut short.
            yield encoder.encode(
                TextMessageChunkEvent(message_id=f"{run}-m", role="assistant", delta="Partly ")
            )
            raise ConnectionAbortedError("the agent's server went away mid-answer")
        if self.mode == "slow":
            for delta in SLOW_PARTS:
                await anyio.sleep(self.pace)
                yield encoder.encode(
                    TextMessageChunkEvent(message_id=f"{run}-m", role="assistant", delta=delta)
                )
            yield encoder.encode(RunFinishedEvent(thread_id=thread, run_id=run))
            return
        if self.mode == "split-character":
            for delta in SPLIT_DELTAS:
                # json.dumps escapes each half as \uXXXX, as JavaScript's JSON does.
                chunk = {"type": "TEXT_MESSAGE_CHUNK", "messageId": f"{run}-m"}
                yield f"data: {json.dumps(chunk | {'role': 'assistant', 'delta': delta})}\n\n"
            yield encoder.encode(RunFinishedEvent(thread_id=thread, run_id=run))
            return
        await _wait(self.gate)
        task = next(
            (json.loads(c.value) for c in run_input.context if c.description == "pagecontext.task"),
            None,
        )
        if task is None:
            text = "External agent: no selection was pinned to this question."
        else:
            # The page's ref goes into the tool call that targets it, not into the
            # answer's words: later runs send those back to the agent as its own.
            text = f"External agent: about the row you selected at {task['observedAt']}."
        for part in (text[: len(text) // 2], text[len(text) // 2 :]):
            yield encoder.encode(
                TextMessageChunkEvent(message_id=f"{run}-m", role="assistant", delta=part)
            )
        if task is not None:
            arguments = {"componentId": task["componentId"]}
            if self.tool != "refresh":
                arguments |= {"resourceRef": task["resourceRef"]}
            if self.tool == "highlight":
                arguments |= {"tone": "focus"}
            yield encoder.encode(
                ToolCallChunkEvent(
                    tool_call_id=f"{run}-c",
                    tool_call_name=self.tool,
                    parent_message_id=f"{run}-m",
                    delta=json.dumps(arguments),
                )
            )
        yield encoder.encode(RunFinishedEvent(thread_id=thread, run_id=run))

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/agent", self.run, methods=["POST"]),
                Route("/agent", self.preflight, methods=["OPTIONS"]),
            ]
        )


class Stall:
    """ASGI middleware: while `armed` is set, POST requests to `path` are read whole, then
    wait until it is cleared, then go on (the server acts late, as one waiting for a
    lock does; the client may have given up meanwhile)."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path
        self.armed = threading.Event()
        self._released = threading.Event()
        self._released.set()
        self.held = 0
        # Set when a held request has been answered (the server acted, late).
        self.finished = threading.Event()

    def arm(self) -> None:
        """Hold the next requests; `held` counts them from now."""
        self.held = 0
        self.finished.clear()
        self._released.clear()
        self.armed.set()

    def release(self) -> None:
        self.armed.clear()
        self._released.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == self.path
            and scope["method"] == "POST"
            and self.armed.is_set()
        ):
            self.held += 1
            # The body as it came, before the client can go: the app reads it after.
            messages = [await receive()]
            while messages[-1]["type"] == "http.request" and messages[-1].get("more_body"):
                messages.append(await receive())

            async def replayed() -> Message:
                return messages.pop(0) if messages else await receive()

            await _wait(self._released)
            try:
                await self.app(scope, replayed, send)
            finally:
                self.finished.set()
            return
        await self.app(scope, receive, send)
