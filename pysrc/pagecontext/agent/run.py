"""One run of the built-in agent as AG-UI events, without I/O.

This module owns the shape of the built-in agent's stream: `RUN_STARTED`; one assistant
text message streamed in several `TEXT_MESSAGE_CONTENT` chunks; one `TOOL_CALL_START` /
`TOOL_CALL_ARGS` / `TOOL_CALL_END` per planned tool call, each a child of that message;
then `RUN_FINISHED`. A run that cannot proceed ends with `RUN_ERROR` instead. It also
reads what the agent needs from the run input (`task_and_authorization`), following the
convention of `pagecontext.agui`: the `pagecontext.task` context entry and
`forwardedProps.authorization`. Ids come from the caller.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ag_ui.core import (
    BaseEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolMessage,
)

from pagecontext.agent.explain import Answer
from pagecontext.agui import (
    AUTHORIZATION_PROP,
    TaskContext,
    ToolCallError,
    business_proposal,
    read_authorization,
    read_task_context,
)
from pagecontext.block import safe_json
from pagecontext.errors import PagecontextError

__all__ = [
    "RunInputError",
    "answer_events",
    "flag_proposed",
    "pinned_task",
    "run_error",
    "run_started",
    "user_authorization",
]


class RunInputError(PagecontextError):
    """The run input lacks what the built-in agent needs; the message says what."""


def pinned_task(run_input: RunAgentInput) -> TaskContext | None:
    """Return the run's pinned task, or None if the question has none (no selection, or
    the user removed its chip).

    Raises RunInputError if the task entry is there but invalid.
    """
    try:
        return read_task_context(run_input)
    except ValueError as error:
        raise RunInputError(str(error)) from None


def flag_proposed(run_input: RunAgentInput, resource_ref: str) -> bool:
    """Whether the conversation the run carries (its `messages`) holds this agent's
    proposal to flag `resource_ref` already: a `flag_for_review` call of an assistant
    message naming that row, read as the assistant reads one (`business_proposal`); a
    call it would refuse proposed nothing, and neither did one whose result says it was
    never sent (`"requested": false`: the user confirmed it, and the server did not
    answer the request for a confirmation), so that the user is offered it again."""
    unsent = {
        message.tool_call_id
        for message in run_input.messages
        if isinstance(message, ToolMessage) and _never_requested(message.content)
    }
    for message in run_input.messages:
        for call in getattr(message, "tool_calls", None) or ():
            if call.id in unsent:
                continue
            try:
                proposal = business_proposal(call.function.name, call.function.arguments)
            except ToolCallError:
                continue
            if proposal.resource_ref == resource_ref:
                return True
    return False


def _never_requested(content: object) -> bool:
    """True if a tool result (the assistant's JSON text) says its action was never sent
    to be carried out."""
    if not isinstance(content, str):
        return False
    try:
        result = json.loads(content)
    except ValueError:
        return False
    return isinstance(result, dict) and result.get("requested") is False


def user_authorization(run_input: RunAgentInput) -> str:
    """Return the user's Authorization header value, from forwardedProps.

    Raises RunInputError if there is none, or it is not a header value.
    """
    authorization = read_authorization(run_input)
    if authorization is None:
        raise RunInputError(
            f"forwardedProps.{AUTHORIZATION_PROP} is missing: the agent reads data only "
            "with the user's own authorization"
        )
    # It becomes a header of the agent's reads: visible ASCII and spaces only.
    if not all(" " <= ch <= "~" for ch in authorization):
        raise RunInputError(f"forwardedProps.{AUTHORIZATION_PROP} is not a header value")
    return authorization


def run_started(run_input: RunAgentInput) -> RunStartedEvent:
    """The run's first event."""
    return RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)


def run_error(message: str, code: str) -> RunErrorEvent:
    """The event that ends a run that could not complete."""
    return RunErrorEvent(message=message, code=code)


def answer_events(
    run_input: RunAgentInput, answer: Answer, new_id: Callable[[], str]
) -> list[BaseEvent]:
    """Return the events after RUN_STARTED: the text, the tool calls, RUN_FINISHED."""
    message_id = new_id()
    events: list[BaseEvent] = [TextMessageStartEvent(message_id=message_id, role="assistant")]
    events.extend(
        TextMessageContentEvent(message_id=message_id, delta=chunk)
        for chunk in answer.chunks
        if chunk
    )
    events.append(TextMessageEndEvent(message_id=message_id))
    for call in answer.tool_calls:
        call_id = new_id()
        events += [
            ToolCallStartEvent(
                tool_call_id=call_id, tool_call_name=call.name, parent_message_id=message_id
            ),
            ToolCallArgsEvent(
                tool_call_id=call_id,
                delta=safe_json(json.dumps(dict(call.arguments), separators=(",", ":"))),
            ),
            ToolCallEndEvent(tool_call_id=call_id),
        ]
    events.append(RunFinishedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id))
    return events
