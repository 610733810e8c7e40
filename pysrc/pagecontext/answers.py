"""The assistant's side of one AG-UI run: the agent's event stream, read and checked.

This module owns what the assistant makes of the text an agent streams back:

- the server-sent events are decoded (`pagecontext.sse`) and each payload parsed as an
  AG-UI event (`agui.parse_event`);
- `TEXT_MESSAGE_CHUNK` and `TOOL_CALL_CHUNK` are expanded into their START / CONTENT
  (ARGS) / END events, as AG-UI's own client does, so the verifier sees only
  bracketed spans (but `RUN_ERROR` drops a chunked span still open: `ChunkExpander`);
- every event is checked by `agui.EventSequenceVerifier` against the run's threadId
  and runId; the events one event expands to are all checked before any is used, so
  the END that an event closing a chunked tool call stands for counts only if that
  event passes;
- what the panel and the session need comes out as updates: `TextDelta` for the
  answer's text, `ToolCallMade` when a tool call's arguments are complete, and one
  `RunEnded` that says how the run ended. A character whose surrogate halves two text
  deltas carry comes out whole; a lone half, as U+FFFD (`agui.paired_surrogates`).

A run ends exactly once. `code` is "" for RUN_FINISHED, "run-cancelled" or
"run-interrupted" for a RUN_FINISHED whose `outcome` says the agent cancelled the run or
stopped it to wait for input (which this assistant never gives), "run-error" for the
agent's RUN_ERROR, "malformed-stream" for anything that breaks the format or AG-UI's rules
(nothing after it is used), "incomplete" for a stream that stopped before the run
finished, or a transport failure the caller reports with `fail` ("agent-unreachable",
"http-<status>", "timeout"). After the end, further text is ignored.

Pure: no I/O. The caller feeds the text as it arrives.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final

from ag_ui.core import (
    BaseEvent,
    EventType,
    RunErrorEvent,
    RunFinishedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

from pagecontext.agui import (
    EventSequenceError,
    EventSequenceVerifier,
    paired_surrogates,
    parse_event,
)
from pagecontext.sse import SseDecoder, SseError

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_ERROR_CHARS",
    "MAX_ID_CHARS",
    "MAX_TOOL_CALLS",
    "AnswerStream",
    "ChunkExpander",
    "RunEnded",
    "TextDelta",
    "ToolCallMade",
    "Update",
]

# An answer longer than this, or with more tool calls, is not one the panel can show.
MAX_ANSWER_CHARS: Final = 100_000
MAX_TOOL_CALLS: Final = 50
# An id or a tool's name longer than this is refused (the log and the saved state keep
# them); a RUN_ERROR's message and code are cut to these lengths.
MAX_ID_CHARS: Final = 256
MAX_ERROR_CHARS: Final = 2000
_NAMED: Final = ("message_id", "tool_call_id", "tool_call_name", "step_name")
MALFORMED: Final = "malformed-stream"
# RUN_FINISHED outcomes that are no success: the code and message the run ends with.
_UNFINISHED: Final = {
    "cancelled": ("run-cancelled", "the agent cancelled the run"),
    "interrupt": (
        "run-interrupted",
        "the agent stopped the run to wait for input, which this assistant cannot give",
    ),
}
# Events that leave a chunked span open, as AG-UI's client's `transformChunks` does.
_PASSED_THROUGH: Final = frozenset(
    {
        EventType.RAW,
        EventType.ACTIVITY_SNAPSHOT,
        EventType.ACTIVITY_DELTA,
        EventType.REASONING_ENCRYPTED_VALUE,
    }
)


@dataclass(frozen=True)
class TextDelta:
    """More text of the assistant's answer."""

    message_id: str
    delta: str


@dataclass(frozen=True)
class ToolCallMade:
    """A tool call whose arguments are complete (TOOL_CALL_END seen)."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class RunEnded:
    """How the run ended: `code` "" is success, anything else a failure named by it."""

    code: str
    message: str = ""

    @property
    def ok(self) -> bool:
        """True for RUN_FINISHED."""
        return not self.code


Update = TextDelta | ToolCallMade | RunEnded


class ChunkExpander:
    """Turns chunk events into the bracketed events they stand for.

    A chunk with a new id closes the chunked span open before it and opens its own; a
    chunk without an id continues the open one. Any other event first closes the open
    chunked span, except the ones AG-UI's client passes through (`RAW`, `ACTIVITY_*`,
    `REASONING_ENCRYPTED_VALUE`) and `RUN_ERROR`, which drops it: a tool call the agent
    never ended is not ended for it by a run that failed, as one sent with
    `TOOL_CALL_START` is not. Raises EventSequenceError for a first chunk without an id
    (or a tool chunk without a name), which nothing could open.
    """

    def __init__(self) -> None:
        self._text: str | None = None
        self._tool: str | None = None

    def expand(self, event: BaseEvent) -> list[BaseEvent]:
        """Return the events `event` stands for, in order."""
        if isinstance(event, TextMessageChunkEvent):
            return self._text_chunk(event)
        if isinstance(event, ToolCallChunkEvent):
            return self._tool_chunk(event)
        if event.type in _PASSED_THROUGH:
            return [event]
        if event.type == EventType.RUN_ERROR:
            self._text = self._tool = None
            return [event]
        return [*self.close(), event]

    def close(self) -> list[BaseEvent]:
        """Close the chunked span still open, if any."""
        closing: list[BaseEvent] = []
        if self._text is not None:
            closing.append(TextMessageEndEvent(message_id=self._text))
            self._text = None
        if self._tool is not None:
            closing.append(ToolCallEndEvent(tool_call_id=self._tool))
            self._tool = None
        return closing

    def _text_chunk(self, chunk: TextMessageChunkEvent) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if chunk.message_id is not None and chunk.message_id != self._text:
            events += self.close()
            role = chunk.role or "assistant"
            events.append(TextMessageStartEvent(message_id=chunk.message_id, role=role))
            self._text = chunk.message_id
        elif self._text is None:
            raise EventSequenceError("chunk-without-id", chunk.type.value, "running")
        if chunk.delta:
            events.append(TextMessageContentEvent(message_id=self._text, delta=chunk.delta))
        return events

    def _tool_chunk(self, chunk: ToolCallChunkEvent) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if chunk.tool_call_id is not None and chunk.tool_call_id != self._tool:
            if not chunk.tool_call_name:
                raise EventSequenceError("chunk-without-name", chunk.type.value, "running")
            events += self.close()
            events.append(
                ToolCallStartEvent(
                    tool_call_id=chunk.tool_call_id,
                    tool_call_name=chunk.tool_call_name,
                    parent_message_id=chunk.parent_message_id,
                )
            )
            self._tool = chunk.tool_call_id
        elif self._tool is None:
            raise EventSequenceError("chunk-without-id", chunk.type.value, "running")
        if chunk.delta:
            events.append(ToolCallArgsEvent(tool_call_id=self._tool, delta=chunk.delta))
        return events


class AnswerStream:
    """One run's event stream: `feed` its text, then `end` (or `fail`)."""

    def __init__(
        self,
        *,
        thread_id: str,
        run_id: str,
        max_chars: int = MAX_ANSWER_CHARS,
        max_tool_calls: int = MAX_TOOL_CALLS,
    ) -> None:
        self._sse = SseDecoder()
        self._chunks = ChunkExpander()
        self._verifier = EventSequenceVerifier(thread_id=thread_id, run_id=run_id)
        self._max_chars = max_chars
        self._max_tool_calls = max_tool_calls
        self._chars = 0
        self._calls: dict[str, tuple[str, list[str]]] = {}
        # By message id: the high surrogate a text delta ended with, whose pair the
        # message's next delta begins with.
        self._held: dict[str, str] = {}
        self._made = 0
        self.ended: RunEnded | None = None

    def feed(self, text: str) -> list[Update]:
        """Return the updates the next piece of the stream's text brings."""
        if self.ended is not None:
            return []
        updates: list[Update] = []
        try:
            for sse in self._sse.feed(text):
                events = self._chunks.expand(parse_event(sse.data))
                # All the events one event stands for pass before any is used: a chunked
                # tool call closed by an event that is refused is not carried out.
                for event in events:
                    _check_names(event)
                    self._verifier.feed(event)
                for event in events:
                    update = self._update(event)
                    if update is not None:
                        updates.append(update)
                    if isinstance(update, RunEnded):
                        return updates  # what follows the end is not used
        except (SseError, EventSequenceError) as error:
            updates.append(self._end(MALFORMED, str(error)))
        return updates

    def end(self) -> list[Update]:
        """The stream ended; return the final update unless the run had already ended."""
        if self.ended is not None:
            return []
        cut = self._sse.close()
        try:
            for event in self._chunks.close():
                self._verifier.feed(event)
            self._verifier.end_of_stream()
        except EventSequenceError:
            why = "it was cut mid-event" if cut else "no RUN_FINISHED or RUN_ERROR came"
            return [self._end("incomplete", f"the agent's stream ended early: {why}")]
        return []  # not reached: a finished or errored run has `ended` set

    def fail(self, code: str, message: str) -> list[Update]:
        """The transport failed (`code` e.g. "agent-unreachable", "http-403", "timeout")."""
        if self.ended is not None:
            return []
        return [self._end(code, message)]

    def _end(self, code: str, message: str) -> RunEnded:
        self.ended = RunEnded(code, message)
        return self.ended

    def _update(self, event: BaseEvent) -> Update | None:
        if isinstance(event, TextMessageContentEvent | ToolCallArgsEvent):
            # Text and arguments count alike against the answer's size.
            self._chars += len(event.delta)
            if self._chars > self._max_chars:
                return self._end(MALFORMED, f"the answer is over {self._max_chars} characters")
            if isinstance(event, TextMessageContentEvent):
                return self._text(event.message_id, event.delta)
            self._calls[event.tool_call_id][1].append(event.delta)
        elif isinstance(event, TextMessageEndEvent):
            # A high surrogate still held never got its pair.
            return self._text(event.message_id, "", end=True)
        elif isinstance(event, ToolCallStartEvent):
            self._calls[event.tool_call_id] = (event.tool_call_name, [])
        elif isinstance(event, ToolCallEndEvent):
            name, parts = self._calls.pop(event.tool_call_id)
            self._made += 1
            if self._made > self._max_tool_calls:
                return self._end(MALFORMED, f"more than {self._max_tool_calls} tool calls")
            return ToolCallMade(event.tool_call_id, name, paired_surrogates("".join(parts)))
        elif isinstance(event, RunErrorEvent):
            code = f" ({event.code[:MAX_ID_CHARS]})" if event.code else ""
            return self._end("run-error", event.message[:MAX_ERROR_CHARS] + code)
        elif isinstance(event, RunFinishedEvent):
            outcome = event.outcome.type if event.outcome is not None else "success"
            return self._end(*_UNFINISHED.get(outcome, ("", "")))
        return None

    def _text(self, message_id: str, delta: str, *, end: bool = False) -> TextDelta | None:
        """The text of `delta` (after the surrogate held before it), its pairs joined and
        lone surrogates replaced; a high surrogate it ends with is held for the next
        delta, unless the message ends here."""
        text = self._held.pop(message_id, "") + delta
        if text and not end and "\ud800" <= text[-1] <= "\udbff":
            self._held[message_id] = text[-1]
            text = text[:-1]
        text = paired_surrogates(text)
        return TextDelta(message_id, text) if text else None


@cache
def _named_fields(kind: type[BaseEvent]) -> tuple[str, ...]:
    """The id and name fields events of `kind` have (asking a model for a field it does
    not have is slow)."""
    return tuple(field for field in _NAMED if field in kind.model_fields)


def _check_names(event: BaseEvent) -> None:
    """Raise EventSequenceError if an id or a tool's name of `event` is over MAX_ID_CHARS."""
    for field in _named_fields(type(event)):
        value = getattr(event, field)
        if isinstance(value, str) and len(value) > MAX_ID_CHARS:
            raise EventSequenceError("over-limit", event.type.value, "running", field)
