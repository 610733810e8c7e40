"""The conversation log as AG-UI messages: what the next run tells the agent happened.

This module owns one rule: how the assistant's conversation log (`Composer.log`)
becomes the `messages` of a `RunAgentInput`:

- a question is a user message holding exactly the text sent (`sent`);
- a finished or failed answer is an assistant message with the text received and the
  tool calls the agent made;
- each of those tool calls is followed by a tool message, its result: the receipt of
  the page command it became (`integration.command_standing`: the `ui` layer once
  settled, else the `received` layer if that did not apply, else pending), the state
  of the business action it proposed (the user's decision, then the server's answer;
  with `"requested": false` when its confirmation got no answer, so nothing was asked
  to carry it out),
  the context a context tool asked for, or why the assistant refused it. So the
  receipts reach the agent as tool results. A receipt's reason that the protocol does
  not list (a page may name its own) reaches it as `page-defined`: a page's words
  never reach the agent outside the untrusted block;
- a tool call refused as `duplicate-id` is left out, with its result: its id is an
  earlier call's (or entry's), and the agent would get two results for one id.

Oldest entries are dropped first, a whole answer with its results at a time, to keep the
messages within `max_chars`; the latest question and what follows it are always kept, and
so is every entry from the earliest question it relies on (`reliesOn`: the composer left
out of it what those questions hold), however long its answers' follow-up runs grow.
`RunWindow` says which questions a next run would still carry, so the composer resends
what the run would no longer hold. Pure: reads the log, never changes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

from ag_ui.core import AssistantMessage, FunctionCall, Message, ToolCall, ToolMessage, UserMessage

from pagecontext.integration import action_unsent, command_standing, reason_listed
from pagecontext.items import JsonValue
from pagecontext.models import is_reason

__all__ = [
    "DEFAULT_MAX_CHARS",
    "MESSAGE_OVERHEAD_CHARS",
    "PAGE_DEFINED",
    "RunWindow",
    "chars_at_most",
    "kept_from",
    "run_messages",
    "tool_result",
]

DEFAULT_MAX_CHARS: Final = 200_000
PAGE_DEFINED: Final = "page-defined"
_PENDING: Final = "pending"
# The refusal of a tool call whose id the conversation already has (the session's).
_DUPLICATE_ID: Final = "duplicate-id"


def tool_result(entry: Mapping[str, JsonValue] | None) -> dict[str, JsonValue]:
    """The result of the tool call a command or action `entry` carries out (None: the
    call led to nothing yet)."""
    if entry is None:
        return {"status": _PENDING}
    if entry.get("kind") == "command":
        view = command_standing(entry, "ui")
    elif entry.get("decision") != "confirmed":
        return {"status": str(entry.get("decision") or "proposed")}
    else:
        view = command_standing(entry, "business")
    result: dict[str, JsonValue] = {"status": view.get("state")}
    reason = view.get("reason")
    if reason:
        # A command's reasons come from the page: one the protocol does not list is the
        # page's own word, and reaches the agent only as that.
        listed = entry.get("kind") != "command" or reason_listed(view.get("state"), reason)
        result["reason"] = reason if listed else PAGE_DEFINED
    if view.get("late"):
        result["lateStatus"] = view.get("lateStatus")
    if entry.get("kind") == "action" and action_unsent(entry):
        # Its confirmation got no answer: nothing was asked of the server to carry it
        # out, so the agent may propose it again (agent.run.flag_proposed).
        result["requested"] = False
    return result


def _failure(entry: Mapping[str, JsonValue]) -> str:
    """What a later run is told of a failed answer: that it failed, and its code (the
    assistant's own word: answers.py, worker.py), or "" for one that did not fail."""
    if entry.get("state") != "failed":
        return ""
    error = entry.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return f"[This answer failed: {code}]" if is_reason(code) else "[This answer failed]"


def _answer(
    entry: Mapping[str, JsonValue], results: Mapping[str, Mapping[str, JsonValue]]
) -> list[Message]:
    listed = entry.get("toolCalls")
    calls = [
        call
        for call in (listed if isinstance(listed, list) else [])
        if isinstance(call, dict) and call.get("refused") != _DUPLICATE_ID
    ]
    text = str(entry.get("text") or "")
    failed = _failure(entry)
    if failed:
        # The agent's model learns the answer did not end as one (cut off, refused, never
        # reached), rather than taking what came for a whole answer, or seeing none.
        text = f"{text}\n\n{failed}" if text else failed
    if not text and not calls:
        return []
    tool_calls = [
        ToolCall(
            id=str(call["id"]),
            # A call that streamed no arguments had `{}` (agui.tool_call_command).
            function=FunctionCall(name=str(call["name"]), arguments=str(call["arguments"]) or "{}"),
        )
        for call in calls
    ]
    messages: list[Message] = [
        AssistantMessage(id=str(entry["id"]), content=text or None, tool_calls=tool_calls or None)
    ]
    for call in calls:
        call_id = str(call["id"])
        if isinstance(call.get("result"), str):
            content = str(call["result"])  # the assistant answered it (a context tool)
        else:
            if "refused" in call:
                result: Mapping[str, JsonValue] = {"status": "rejected", "reason": call["refused"]}
                if isinstance(call.get("refusedDetail"), str):
                    result = {**result, "detail": call["refusedDetail"]}
            else:
                result = tool_result(results.get(call_id))
            content = json.dumps(result, separators=(",", ":"), sort_keys=True)
        messages.append(ToolMessage(id=f"{call_id}-result", tool_call_id=call_id, content=content))
    return messages


def _groups(
    log: Sequence[Mapping[str, JsonValue]],
) -> list[tuple[Mapping[str, JsonValue], list[Message]]]:
    """Each question or finished answer of the log with its messages, in order."""
    results: dict[str, Mapping[str, JsonValue]] = {}
    for entry in log:
        if entry.get("kind") == "command" and isinstance(entry.get("toolCallId"), str):
            results[str(entry["toolCallId"])] = entry
        elif entry.get("kind") == "action":
            results[str(entry["id"])] = entry
    groups: list[tuple[Mapping[str, JsonValue], list[Message]]] = []
    for entry in log:
        kind = entry.get("kind")
        if kind == "question":
            groups.append((entry, [_question(entry)]))
        elif kind == "answer" and entry.get("state") != "running":
            group = _answer(entry, results)
            if group:
                groups.append((entry, group))
    return groups


def _question(entry: Mapping[str, JsonValue]) -> Message:
    return UserMessage(id=str(entry["id"]), content=str(entry["sent"]))


def _size(messages: Sequence[Message]) -> int:
    return sum(len(message.model_dump_json()) for message in messages)


def _first_kept(sizes: Sequence[int], keep: int, max_chars: int) -> int:
    """The index of the first group kept: the oldest go first while the total is over
    `max_chars`, but never the group at index `keep` or what follows it."""
    total = sum(sizes)
    start = 0
    while total > max_chars and start < min(keep, len(sizes) - 1):
        total -= sizes[start]
        start += 1
    return start


def kept_from(entries: Sequence[Mapping[str, JsonValue]]) -> int:
    """The first entry a run must keep: the latest question, or the earliest question it
    relies on where the run still holds it."""
    questions = [index for index, entry in enumerate(entries) if entry.get("kind") == "question"]
    if not questions:
        return len(entries)
    latest = questions[-1]
    relied = entries[latest].get("reliesOn")
    return next(
        (index for index in questions if entries[index].get("id") == relied),
        latest,
    )


def run_messages(
    log: Sequence[Mapping[str, JsonValue]], max_chars: int = DEFAULT_MAX_CHARS
) -> list[Message]:
    """Return the AG-UI messages for the log, oldest first, within `max_chars`.

    The latest question and everything after it are always kept: that is the turn the
    run answers. So is everything from the earliest question it relies on: its text
    leaves out what those questions carried.
    """
    groups = _groups(log)
    start = _first_kept(
        [_size(messages) for _entry, messages in groups],
        kept_from([entry for entry, _messages in groups]),
        max_chars,
    )
    return [message for _entry, messages in groups[start:] for message in messages]


# What a message's JSON holds beyond the entry fields it comes from: its role, its ids
# (each at most 256 characters), its keys, a tool result written as JSON.
MESSAGE_OVERHEAD_CHARS: Final = 1000


def chars_at_most(log: Sequence[Mapping[str, JsonValue]], texts: Sequence[str]) -> int:
    """An upper bound of the JSON characters of `run_messages(log)`, from each entry's
    JSON text (`texts`: `json.dumps(entry)`, which escapes at least what a message's JSON
    does): every message comes from fields of one entry, plus at most
    MESSAGE_OVERHEAD_CHARS."""
    calls = sum(len(listed) for entry in log if isinstance(listed := entry.get("toolCalls"), list))
    return sum(len(text) for text in texts) + MESSAGE_OVERHEAD_CHARS * (len(log) + calls)


class RunWindow:
    """Which of the log's questions the next run carries, once the next question is added.

    Built from the log as it is; `carried(next_sent)` then answers for a next question
    that sends `next_sent`, without serializing the log again. The next question's id is
    counted at its longest (`ID_CHARS`), so the answer errs towards resending.
    """

    ID_CHARS: Final = 256

    def __init__(
        self, log: Sequence[Mapping[str, JsonValue]], max_chars: int = DEFAULT_MAX_CHARS
    ) -> None:
        groups = _groups(log)
        self._entries = [entry for entry, _messages in groups]
        self._sizes = [_size(messages) for _entry, messages in groups]
        self._max_chars = max_chars

    def carried(self, next_sent: str) -> list[Mapping[str, JsonValue]]:
        """The question entries of the log that a run after a question sending
        `next_sent` still carries."""
        size = _size([_question({"id": "x" * self.ID_CHARS, "sent": next_sent})])
        start = _first_kept([*self._sizes, size], len(self._sizes), self._max_chars)
        return [found for found in self._entries[start:] if found.get("kind") == "question"]
