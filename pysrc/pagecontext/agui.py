"""AG-UI for pagecontext: the tools, the run input, the task convention, the event rules.

This module owns what the assistant and an AG-UI agent agree on:

- the page's UI tools (`highlight`, `locate`, `refresh`), the assistant's context tools
  (`get_context_item`, `list_context_items`: what the budget elided, answered by the
  assistant itself) and the one business tool (`flag_for_review`) as AG-UI `Tool`s,
  their JSON Schemas generated from the pydantic models below, and the mapping of a
  tool call (name + JSON arguments) to the page command it stands for
  (`tool_call_command`), to a business proposal that the user must confirm
  (`business_proposal`), or to the context it asks for (`context_tool_call`): a
  business tool never becomes a page command;
- `build_run_input`, which composes a `RunAgentInput` (threadId = conversationId);
- the pinned task's convention: one context entry described `pagecontext.task` holding
  `TaskContext` as JSON, and the user's bearer token in `forwardedProps.authorization`;
- `EventSequenceVerifier`, a sans-IO check of an agent's event stream, fed one event at
  a time, with AG-UI's client rules (its TypeScript `verifyEvents`):

  ===============================  =================================================
  event                            rule
  ===============================  =================================================
  first event                      RUN_STARTED (or RUN_ERROR: a run that failed to
                                   start may still say why)
  anything after RUN_ERROR         refused
  anything after RUN_FINISHED      refused (one request is one run; AG-UI's client
                                   would also take a second RUN_STARTED here)
  RUN_STARTED while running        refused
  *_START of an id                 refused if that id was already started in this run
                                   (AG-UI refuses only an open one; a reused id would
                                   tie two tool calls to one receipt)
  *_CONTENT / *_ARGS / *_END       refused unless that id is open
  RUN_FINISHED                     refused while a text message, tool call, step,
                                   reasoning or reasoning message is still open
  RUN_STARTED / RUN_FINISHED ids   must be the run's threadId and runId, when given
  any other event                  accepted while running (TEXT_MESSAGE_CHUNK and
                                   TOOL_CALL_CHUNK are expanded by the consumer
                                   before they reach the verifier, as in AG-UI)
  ===============================  =================================================

  After a refused event the verifier refuses every later one (like h11 after an error).

Pure: no I/O, no clock, no randomness; ids are the caller's.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Final, Literal

from ag_ui.core import (
    BaseEvent,
    Context,
    Event,
    EventType,
    Message,
    RunAgentInput,
    TextPart,
    Tool,
)
from pydantic import Field, TypeAdapter, ValidationError

from pagecontext.block import safe_json, without_untrusted
from pagecontext.errors import LocalProtocolError, PagecontextError
from pagecontext.models import (
    KEEP_FOCUS as _KEEP_FOCUS,
)
from pagecontext.models import (
    ObservedAt,
    Revision,
    SnapshotValue,
    Target,
    WireModel,
    escapes_surrogate,
    first_problem,
    parse_json,
    problem_text,
)
from pagecontext.store import ContextEntry

__all__ = [
    "AUTHORIZATION_PROP",
    "BUSINESS_TOOL_NAMES",
    "CONTEXT_TOOL_NAMES",
    "DEFAULT_MAX_IDS",
    "FLAG_TOOL",
    "GET_CONTEXT_TOOL",
    "LIST_CONTEXT_TOOL",
    "PAGE_TOOL_NAMES",
    "TASK_CONTEXT_DESCRIPTION",
    "TASK_ID_PATTERN",
    "BusinessProposal",
    "ContextToolCall",
    "EventSequenceError",
    "EventSequenceVerifier",
    "FlagForReviewArgs",
    "GetContextItemArgs",
    "HighlightArgs",
    "ListContextItemsArgs",
    "LocateArgs",
    "PageCommandCall",
    "RefreshArgs",
    "TaskContext",
    "ToolCallError",
    "VerifierState",
    "assistant_tools",
    "build_run_input",
    "business_proposal",
    "context_tool_call",
    "page_tools",
    "paired_surrogates",
    "paired_throughout",
    "parse_event",
    "read_authorization",
    "read_outside_json",
    "read_task_context",
    "task_context_entry",
    "tool_call_command",
    "without_page_data",
]

TASK_CONTEXT_DESCRIPTION: Final = "pagecontext.task"
# A task's id, as the assistant makes it; the action API takes no other.
TASK_ID_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"
AUTHORIZATION_PROP: Final = "authorization"
FLAG_TOOL: Final = "flag_for_review"
PAGE_TOOL_NAMES: Final = ("highlight", "locate", "refresh")
BUSINESS_TOOL_NAMES: Final = (FLAG_TOOL,)
# The budget's elision markers name these (pagecontext.budget.Budget).
GET_CONTEXT_TOOL: Final = "get_context_item"
LIST_CONTEXT_TOOL: Final = "list_context_items"
CONTEXT_TOOL_NAMES: Final = (GET_CONTEXT_TOOL, LIST_CONTEXT_TOOL)

_MAX_ID_CHARS: Final = 256
# An item's key: a selection's is the compact JSON of its three ids (each at most 256
# characters, each character at most 6 once escaped).
_MAX_KEY_CHARS: Final = 3 * 6 * _MAX_ID_CHARS + 64
_MAX_NOTE_CHARS: Final = 500
# How much of what was wrong with an event the refusal says (its place names the agent's
# own keys).
_EVENT_PROBLEM_CHARS: Final = 200
# Ids the verifier remembers per run: an endless stream of new ids must not grow memory.
DEFAULT_MAX_IDS: Final = 10_000

_Id = Annotated[str, Field(min_length=1, max_length=_MAX_ID_CHARS)]


class _ToolArgs(WireModel):
    """Arguments come from a model: the wire's rules, nothing extra, nothing coerced."""


class HighlightArgs(_ToolArgs):
    """Arguments of `highlight`: mark one rendered object of the page."""

    component_id: _Id = Field(description="The page component that renders the object.")
    resource_ref: _Id = Field(description="The object's resource reference, e.g. a row id.")
    tone: Literal["focus", "related"] = Field(
        description="focus: the object the answer is about (one per component); "
        "related: an object the answer cites."
    )


class LocateArgs(_ToolArgs):
    """Arguments of `locate`: scroll an object into view (the keyboard's focus stays)."""

    component_id: _Id = Field(description="The page component that renders the object.")
    resource_ref: _Id = Field(description="The object's resource reference.")


class RefreshArgs(_ToolArgs):
    """Arguments of `refresh`: ask a component to reload its own data."""

    component_id: _Id = Field(description="The page component to reload.")


class FlagForReviewArgs(_ToolArgs):
    """Arguments of `flag_for_review`: propose flagging one row for review."""

    resource_ref: _Id = Field(description="The row to flag.")
    note: Annotated[str, Field(max_length=_MAX_NOTE_CHARS)] | None = Field(
        default=None, description="Why the row deserves a review, shown to the user."
    )


class GetContextItemArgs(_ToolArgs):
    """Arguments of `get_context_item`: one item of the context, whole."""

    key: Annotated[str, Field(min_length=1, max_length=_MAX_KEY_CHARS)] = Field(
        description="The item's key, as its line or an elision marker names it."
    )


class ListContextItemsArgs(_ToolArgs):
    """`list_context_items` takes no arguments."""


_TOOL_DESCRIPTIONS: Final[Mapping[str, tuple[type[_ToolArgs], str]]] = {
    "highlight": (HighlightArgs, "Highlight an object on the user's page."),
    "locate": (LocateArgs, "Scroll an object on the user's page into view."),
    "refresh": (RefreshArgs, "Ask a component of the user's page to reload its data."),
    GET_CONTEXT_TOOL: (
        GetContextItemArgs,
        "Fetch one context item in full (redacted as always), when the data block elided "
        "parts of it. The result comes with the next turn.",
    ),
    LIST_CONTEXT_TOOL: (
        ListContextItemsArgs,
        "List the context items in play (type, key, label), when the data block left some "
        "out. The result comes with the next turn.",
    ),
    FLAG_TOOL: (
        FlagForReviewArgs,
        "Propose flagging a row for review. A business action: the assistant asks the "
        "user to confirm and the server checks permission; nothing happens without both.",
    ),
}


class ToolCallError(PagecontextError):
    """A tool call from the agent cannot be used.

    `reason`: "unknown-tool", "business-tool" (a business tool is never a page
    command), "context-tool" (answered by the assistant, not the page), "ui-tool" (a
    UI tool is not a business proposal), "not-a-context-tool", "malformed-arguments"
    (not a JSON object, nested too deeply to read, or giving a key twice),
    "invalid-arguments" (missing, extra or wrongly typed) or "duplicate-id" (an earlier
    tool call of the conversation has its id); the assistant's session adds "no-task"
    (the question had no pinned selection) and "not-pinned" (a business proposal for a
    row other than the task's).
    """

    def __init__(self, tool: str, reason: str, detail: str = "") -> None:
        super().__init__(
            f"tool call {tool!r} refused: {reason}" + (f" ({detail})" if detail else "")
        )
        self.tool = tool
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class PageCommandCall:
    """The page command a UI tool call stands for (docs/protocol.md section 5).

    The caller adds the envelope and the task's pinned basisRevision.
    """

    action: Literal["highlight", "locate", "refresh"]
    target: Target
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ContextToolCall:
    """A context tool call: the assistant answers it from the context in play."""

    name: Literal["get_context_item", "list_context_items"]
    key: str | None


@dataclass(frozen=True)
class BusinessProposal:
    """A business action the agent proposes; the user confirms it, the server runs it."""

    action: Literal["flag"]
    resource_ref: str
    note: str | None


def _tool(name: str) -> Tool:
    model, description = _TOOL_DESCRIPTIONS[name]
    # A copy: the cached schema must not change if a caller edits its tool.
    return Tool(name=name, description=description, parameters=copy.deepcopy(_schema(model)))


@cache
def _schema(model: type[_ToolArgs]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True)


def page_tools() -> list[Tool]:
    """Return the page's UI tools: highlight, locate, refresh."""
    return [_tool(name) for name in PAGE_TOOL_NAMES]


def assistant_tools() -> list[Tool]:
    """Return every tool the assistant offers an agent: the UI tools, the context tools,
    then the business tool."""
    return [_tool(name) for name in (*PAGE_TOOL_NAMES, *CONTEXT_TOOL_NAMES, *BUSINESS_TOOL_NAMES)]


def _parse_arguments(name: str, arguments: str) -> _ToolArgs:
    entry = _TOOL_DESCRIPTIONS.get(name)
    if entry is None:
        raise ToolCallError(name, "unknown-tool")
    try:
        # A call that streamed no TOOL_CALL_ARGS at all passes no arguments: `{}`.
        raw = parse_json(arguments) if arguments.strip() else {}
    except ValueError as error:
        # Not JSON, or nested deeper than MAX_JSON_DEPTH.
        raise ToolCallError(name, "malformed-arguments", str(error)) from None
    if not isinstance(raw, dict):
        raise ToolCallError(name, "malformed-arguments", "not a JSON object")
    twice = _key_given_twice(arguments) if raw else None
    if twice is not None:
        raise ToolCallError(
            name, "malformed-arguments", f"the key {json.dumps(twice)} is given twice"
        )
    try:
        return entry[0].model_validate(raw, by_alias=True, by_name=False)
    except ValidationError as error:
        problems = "; ".join(
            problem_text(problem, "(arguments)") for problem in error.errors(include_url=False)
        )
        raise ToolCallError(name, "invalid-arguments", problems) from None


def _key_given_twice(text: str) -> str | None:
    """The first key that an object of the JSON `text` (read already, so within the depth
    limit) gives twice, if any. A parser takes the last one, and later runs send the text
    itself back to the agent: it would read a call other than the one carried out."""
    twice: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen and not twice:
                twice.append(key)
            seen.add(key)
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)
    return twice[0] if twice else None


def tool_call_command(name: str, arguments: str) -> PageCommandCall:
    """Return the page command for a UI tool call `name` with JSON `arguments`.

    Raises ToolCallError for an unknown tool, the business tool, arguments that are not
    a JSON object, or arguments that are missing, extra or of the wrong type.
    """
    args = _parse_arguments(name, arguments)
    if isinstance(args, HighlightArgs):
        target = Target(component_id=args.component_id, resource_ref=args.resource_ref)
        return PageCommandCall("highlight", target, {"tone": args.tone})
    if isinstance(args, LocateArgs):
        target = Target(component_id=args.component_id, resource_ref=args.resource_ref)
        # No press of the user's asked for it: the keyboard's focus stays where they have
        # it, perhaps in the question they are typing (docs/protocol.md 8.16).
        return PageCommandCall("locate", target, _KEEP_FOCUS)
    if isinstance(args, RefreshArgs):
        return PageCommandCall("refresh", Target(component_id=args.component_id))
    if isinstance(args, GetContextItemArgs | ListContextItemsArgs):
        raise ToolCallError(name, "context-tool", "answered by the assistant, not the page")
    raise ToolCallError(name, "business-tool", "confirmed by the user, never a page command")


def context_tool_call(name: str, arguments: str) -> ContextToolCall:
    """Return what a context tool call asks for.

    Raises ToolCallError for any other tool or for bad arguments, as `tool_call_command`.
    """
    args = _parse_arguments(name, arguments)
    if isinstance(args, GetContextItemArgs):
        return ContextToolCall("get_context_item", args.key)
    if isinstance(args, ListContextItemsArgs):
        return ContextToolCall("list_context_items", None)
    raise ToolCallError(name, "not-a-context-tool")


def business_proposal(name: str, arguments: str) -> BusinessProposal:
    """Return the business action a `flag_for_review` call proposes.

    Raises ToolCallError for any other tool or for bad arguments, as `tool_call_command`.
    """
    args = _parse_arguments(name, arguments)
    if not isinstance(args, FlagForReviewArgs):
        raise ToolCallError(name, "ui-tool", "a page command, not a business action")
    return BusinessProposal("flag", args.resource_ref, args.note)


# --- the pinned task, as the agent receives it --------------------------------------


class TaskContext(WireModel):
    """The pinned task (docs/protocol.md section 7), as the `pagecontext.task` context value.

    `snapshot` is what the user saw at `observedAt`; the agent re-reads `resourceRef`
    and never uses the snapshot in place of access it no longer has.
    """

    task_id: Annotated[str, Field(pattern=TASK_ID_PATTERN)]
    page_id: _Id
    component_id: _Id
    resource_ref: _Id
    observed_at: ObservedAt
    basis_revision: Revision
    snapshot: dict[str, SnapshotValue] = Field(default_factory=dict)


def task_context_entry(task: TaskContext) -> ContextEntry:
    """Return the context entry that carries `task` to the agent: compact JSON whose
    page strings (ids, snapshot names, values and units) are escaped as the untrusted
    block's lines are (`block.safe_json`), since an agent may put a context entry in
    front of its model."""
    return ContextEntry(TASK_CONTEXT_DESCRIPTION, safe_json(task.model_dump_json()))


def read_task_context(run_input: RunAgentInput) -> TaskContext | None:
    """Return the run's pinned task, or None if no context entry carries one.

    Raises ValueError if the entry is there but is not a valid `TaskContext`, or if
    there is more than one.
    """
    values = [
        entry.value
        for entry in run_input.context or ()
        if entry.description == TASK_CONTEXT_DESCRIPTION
    ]
    if not values:
        return None
    if len(values) > 1:
        raise ValueError(f"more than one {TASK_CONTEXT_DESCRIPTION!r} context entry")
    try:
        return TaskContext.model_validate_json(values[0])
    except ValidationError as error:
        raise ValueError(
            f"the {TASK_CONTEXT_DESCRIPTION!r} context entry is not a valid task: "
            f"{first_problem(error, '(entry)')}"
        ) from None


def without_page_data(run_input: RunAgentInput) -> RunAgentInput:
    """`run_input` as a model may be given it once the user's read of the task's
    resource was refused: the `pagecontext.task` entry without its snapshot (the ids and
    times stay), and the user and tool messages without their untrusted blocks (what the
    page showed, `block.without_untrusted`: a question's block, in each text part of one
    made of parts, and the selection's items a context tool returned); the rest as it
    was. The snapshot must not stand in for access the user no longer has
    (docs/agent.md).

    Raises ValueError for a task entry that `read_task_context` refuses.
    """
    task = read_task_context(run_input)
    context = [
        entry
        if entry.description != TASK_CONTEXT_DESCRIPTION or task is None
        else Context(
            description=entry.description,
            value=task_context_entry(task.model_copy(update={"snapshot": {}})).value,
        )
        for entry in run_input.context or ()
    ]
    messages = [
        message.model_copy(update={"content": _without_untrusted_parts(message.content)})
        if message.role in ("user", "tool")
        else message
        for message in run_input.messages
    ]
    return run_input.model_copy(update={"context": context, "messages": messages})


def _without_untrusted_parts(content: object) -> object:
    """A user or tool message's content (its text, or its parts: each text part's text)
    without its untrusted blocks; other parts (an image, a document) as they are."""
    if isinstance(content, str):
        return without_untrusted(content)
    if isinstance(content, list):
        return [
            part.model_copy(update={"text": without_untrusted(part.text)})
            if isinstance(part, TextPart)
            else part
            for part in content
        ]
    return content


def read_authorization(run_input: RunAgentInput) -> str | None:
    """Return `forwardedProps.authorization` (e.g. ``"Bearer <token>"``), or None."""
    props = run_input.forwarded_props
    if isinstance(props, dict):
        value = props.get(AUTHORIZATION_PROP)
        if isinstance(value, str) and value:
            return value
    return None


def build_run_input(
    thread_id: str,
    run_id: str,
    messages: Sequence[Message],
    tools: Sequence[Tool],
    context: Iterable[ContextEntry],
    forwarded_props: Mapping[str, object] | None = None,
) -> RunAgentInput:
    """Compose the `RunAgentInput` of one run; `thread_id` is the conversationId.

    Raises LocalProtocolError for an empty thread or run id, or two tools of one name.
    """
    if not thread_id or not run_id:
        raise LocalProtocolError("a run needs a threadId (the conversationId) and a runId")
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise LocalProtocolError(f"tool names must be unique, got {names}")
    return RunAgentInput(
        thread_id=thread_id,
        run_id=run_id,
        state={},
        messages=list(messages),
        tools=list(tools),
        context=[Context(description=e.description, value=e.value) for e in context],
        forwarded_props=dict(forwarded_props) if forwarded_props is not None else {},
    )


# --- the event stream ----------------------------------------------------------------


class EventSequenceError(PagecontextError):
    """The agent's event stream broke AG-UI's sequence rules.

    `reason` is a short code, `event_type` the refused event's type ("(unparsed)" for
    one that is not a valid AG-UI event, "" for a stream that ended early), `state` the
    verifier's state when it was refused.
    """

    def __init__(self, reason: str, event_type: str, state: str, detail: str = "") -> None:
        text = f"event {event_type or '(end of stream)'} refused in state {state}: {reason}"
        super().__init__(text + (f" ({detail})" if detail else ""))
        self.reason = reason
        self.event_type = event_type
        self.state = state


@cache
def _event_adapter() -> TypeAdapter[Any]:
    # Built on first use: a TypeAdapter over every event type is slow to create, and a
    # browser worker that never talks to an agent should not pay for it.
    return TypeAdapter(Event)


# A surrogate pair (high, then low), or a surrogate on its own.
_SURROGATES: Final = re.compile(r"[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _joined(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) == 1:
        return "\ufffd"
    high, low = ord(found[0]), ord(found[1])
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def paired_surrogates(text: str) -> str:
    """Return `text` with each surrogate pair joined into the character it encodes and
    each lone surrogate replaced by U+FFFD: text that JSON and UTF-8 can carry.

    Done with a pattern rather than the UTF-16 codec, whose module the browser worker's
    snapshot leaves out: the codec would be read from the standard library's archive,
    downloaded for it, the first time an answer cuts a character in two."""
    return _SURROGATES.sub(_joined, text)


def paired_throughout(value: object) -> object:
    """JSON data `value` with `paired_surrogates` applied to every string in it, keys
    included: JSON read from outside (a request's body, a state the browser's storage
    gave back) that escaped a lone surrogate can then be written as JSON and UTF-8."""
    if isinstance(value, str):
        return paired_surrogates(value)
    if isinstance(value, list):
        return [paired_throughout(item) for item in value]
    if isinstance(value, dict):
        return {paired_surrogates(str(key)): paired_throughout(item) for key, item in value.items()}
    return value


def read_outside_json(text: str | bytes) -> object:
    """The JSON value of `text` from outside (a request's body, a state the browser's
    storage gave back), read by `models.parse_json`, with every string made text that
    UTF-8 carries (`paired_throughout`) when it escapes a lone surrogate. Raises
    ValueError if it is not JSON, or is nested too deeply."""
    value = parse_json(text)
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return paired_throughout(value) if escapes_surrogate(raw) else value


def parse_event(data: str) -> BaseEvent:
    """Return the AG-UI event in one SSE `data:` payload (JSON).

    JSON that escapes a lone surrogate is valid (JavaScript writes one for a character
    that a delta cut in two); pydantic's parser refuses it, so such a payload is read by
    Python's. Its `delta` keeps its surrogates, for the stream to pair them across
    deltas; its other strings get `paired_surrogates`.
    Raises EventSequenceError("malformed-event") if it is not a valid AG-UI event.
    """
    try:
        try:
            event: BaseEvent = _event_adapter().validate_json(data)
        except ValidationError:
            if not escapes_surrogate(data):
                raise
            raw = parse_json(data)
            if isinstance(raw, dict):
                raw = {
                    key: paired_surrogates(value)
                    if isinstance(value, str) and key != "delta"
                    else value
                    for key, value in raw.items()
                }
            event = _event_adapter().validate_python(raw)
    except ValueError as error:  # ValidationError is a ValueError
        # Where and what, for the agent's author (pydantic's words name no input value).
        why = first_problem(error, "event") if isinstance(error, ValidationError) else str(error)
        raise EventSequenceError(
            "malformed-event", "(unparsed)", "parsing", why[:_EVENT_PROBLEM_CHARS]
        ) from None
    return event


_Role = Literal["open", "continue", "close"]

_E = EventType
# Each bracketed kind: its id field, then the events that open, continue and close it.
_KINDS: Final = (
    (
        "text message",
        "message_id",
        _E.TEXT_MESSAGE_START,
        _E.TEXT_MESSAGE_CONTENT,
        _E.TEXT_MESSAGE_END,
    ),
    ("tool call", "tool_call_id", _E.TOOL_CALL_START, _E.TOOL_CALL_ARGS, _E.TOOL_CALL_END),
    ("step", "step_name", _E.STEP_STARTED, None, _E.STEP_FINISHED),
    ("reasoning", "message_id", _E.REASONING_START, None, _E.REASONING_END),
    (
        "reasoning message",
        "message_id",
        _E.REASONING_MESSAGE_START,
        _E.REASONING_MESSAGE_CONTENT,
        _E.REASONING_MESSAGE_END,
    ),
)
_ROLES: Final[tuple[_Role, ...]] = ("open", "continue", "close")
_SPANS: Final[Mapping[EventType, tuple[str, str, _Role]]] = {
    event: (kind, id_field, role)
    for kind, id_field, *events in _KINDS
    for role, event in zip(_ROLES, events, strict=True)
    if event is not None
}

VerifierState = Literal["idle", "running", "finished", "errored", "failed"]


class EventSequenceVerifier:
    """Checks one run's events, in order, against AG-UI's sequence rules (module docstring).

    `feed` each event as it arrives; `end_of_stream` when the stream ends. `state` is
    idle (nothing yet), running, finished (RUN_FINISHED seen), errored (RUN_ERROR seen)
    or failed (an event was refused: every later call is refused too).
    """

    def __init__(
        self,
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        max_ids: int = DEFAULT_MAX_IDS,
    ) -> None:
        self._thread_id = thread_id
        self._run_id = run_id
        self._max_ids = max_ids
        self._state: VerifierState = "idle"
        self._open: dict[tuple[str, str], EventType] = {}
        self._seen: set[tuple[str, str]] = set()

    @property
    def state(self) -> VerifierState:
        """The verifier's state."""
        return self._state

    @property
    def open_ids(self) -> list[tuple[str, str]]:
        """The (kind, id) pairs started and not yet closed, in start order."""
        return list(self._open)

    def _refuse(self, reason: str, event_type: str, detail: str = "") -> EventSequenceError:
        error = EventSequenceError(reason, event_type, self._state, detail)
        self._state = "failed"
        return error

    def feed(self, event: BaseEvent) -> None:
        """Accept `event` or raise EventSequenceError naming it and the state."""
        kind = EventType(event.type)
        name = kind.value
        if self._state == "failed":
            raise EventSequenceError("verifier-failed", name, self._state)
        if self._state == "errored":
            raise self._refuse("after-run-error", name)
        if self._state == "finished":
            raise self._refuse("after-run-finished", name)
        if kind == EventType.RUN_ERROR:
            self._state = "errored"
            return
        if self._state == "idle":
            if kind != EventType.RUN_STARTED:
                raise self._refuse("first-event-not-run-started", name)
            self._check_run_ids(event, name)
            self._state = "running"
            return
        if kind == EventType.RUN_STARTED:
            raise self._refuse("run-already-started", name)
        if kind == EventType.RUN_FINISHED:
            self._check_run_ids(event, name)
            if self._open:
                still = ", ".join(f"{k} {i!r}" for k, i in self._open)
                raise self._refuse("unclosed-at-run-finished", name, still)
            self._state = "finished"
            return
        span = _SPANS.get(kind)
        if span is not None:
            self._feed_span(event, name, *span)

    def _check_run_ids(self, event: BaseEvent, name: str) -> None:
        for attribute, expected in (("thread_id", self._thread_id), ("run_id", self._run_id)):
            got = getattr(event, attribute, None)
            if expected is not None and got != expected:
                raise self._refuse(f"wrong-{attribute.replace('_', '-')}", name, repr(got))

    def _feed_span(
        self, event: BaseEvent, name: str, kind: str, id_field: str, role: _Role
    ) -> None:
        key = (kind, str(getattr(event, id_field)))
        if role == "open":
            if key in self._seen:
                raise self._refuse("duplicate-start", name, f"{kind} {key[1]!r}")
            if len(self._seen) >= self._max_ids:
                raise self._refuse("too-many-ids", name, str(self._max_ids))
            self._seen.add(key)
            self._open[key] = EventType(event.type)
            return
        if key not in self._open:
            why = "closed" if key in self._seen else "unknown"
            raise self._refuse(f"{why}-id", name, f"{kind} {key[1]!r}")
        if role == "close":
            del self._open[key]

    def end_of_stream(self) -> None:
        """Check that the stream ended after RUN_FINISHED or RUN_ERROR.

        Raises EventSequenceError("incomplete-stream") otherwise.
        """
        if self._state not in ("finished", "errored"):
            raise self._refuse("incomplete-stream", "")
