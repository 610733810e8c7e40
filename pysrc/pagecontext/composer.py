"""The assistant's composer and its conversation log: what the next question carries.

This module owns, for the assistant frame:
- the chips: the pinned selection registered as items (a visible reference item and a
  hidden snapshot item paired with it by `dismissGroup`, so removing the chip removes
  both), and the user's dismissals, which survive re-registration and reloads;
- the exact text the next question sends (the "What the AI sees" view shows this
  text, and `send` records the same text): the trusted standing instructions once per
  task, then the untrusted block of the items not sent to that task yet (redacted by
  their schemas, deduped, within the budget), then the user's question;
- the conversation log, bounded: questions with the text sent, and the commands with
  the receipts they had. It is saved as JSON and restored after a reload; a restored
  command is shown with its last receipt and is never sent again.

A task is the conversation's thread about one object (page, component, resourceRef):
follow-up questions about the same object belong to it, so a snapshot line already
sent there (found in the log, which a reload restores) is not sent again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from pagecontext.agui import ContextToolCall, paired_surrogates
from pagecontext.block import TRUSTED_TAG, safe_json
from pagecontext.budget import DEFAULT_BUDGET, Budget, fit_block
from pagecontext.conversation import (
    DEFAULT_MAX_CHARS,
    MESSAGE_OVERHEAD_CHARS,
    RunWindow,
    chars_at_most,
    kept_from,
)
from pagecontext.dedup import unsent
from pagecontext.integration import action_checkable, is_layer_view
from pagecontext.items import (
    ContextItem,
    Dismissals,
    Instruction,
    ItemRegistry,
    JsonValue,
)
from pagecontext.models import Selection
from pagecontext.redact import ItemSchema, redact_items
from pagecontext.selection_items import (
    REFERENCE_TYPE,
    SNAPSHOT_TYPE,
    reference_schema,
    selection_items,
    snapshot_schema,
)

__all__ = [
    "MAX_LOG_ENTRIES",
    "MAX_LOG_HELD",
    "NAMED_TOOLS",
    "NO_TASK",
    "STANDING_INSTRUCTIONS",
    "Chip",
    "Composer",
]

SELECTION_PROVIDER: Final = "selection"
NO_TASK: Final = "no-context"
# The log keeps the latest entries only, so saved state stays small: at most this many,
# and the saved copy within MAX_SAVED_CHARS of JSON (browser storage holds a few MB).
MAX_LOG_ENTRIES: Final = 100
# The most the log holds while it keeps a turn's question (ledger.CAPACITY is above it).
MAX_LOG_HELD: Final = 2 * MAX_LOG_ENTRIES
MAX_SAVED_CHARS: Final = 1_000_000
MAX_QUESTION_CHARS: Final = 4000

# The tools the standing instructions name; each must be one the agent is given.
NAMED_TOOLS: Final = ("highlight", "locate", "refresh")
STANDING_INSTRUCTIONS: Final = (
    Instruction(
        "You are the assistant beside the user's business page; the question is about"
        " the selection described in the data block, as the user saw it at observedAt."
    ),
    Instruction.format(
        "To point at objects on the page, call the page's tools ({highlight}, {locate},"
        " {refresh}); that is the only way you act on the page.",
        **{name: name for name in NAMED_TOOLS},
    ),
)
_NOTHING: Final = json.dumps({"status": "empty", "items": []})
# Where a receipt is still pending when the log is saved, nobody will answer it after a
# reload: it is shown as unconfirmed, never as success.
_PENDING: Final = "pending"
# How much of what was wrong with a refused tool call the agent is told.
_REFUSAL_DETAIL_CHARS: Final = 300


@dataclass(frozen=True)
class Chip:
    """A visible item, as the panel shows it: `key` identifies it for removal."""

    key: str
    type: str
    label: str


class Composer:
    """Chips, dismissals, per-task dedup, the next message's text and the log."""

    def __init__(
        self, *, budget: Budget = DEFAULT_BUDGET, max_run_chars: int = DEFAULT_MAX_CHARS
    ) -> None:
        self._registry = ItemRegistry()
        self._budget = budget
        # The size of a run's messages (conversation.run_messages): what a run no longer
        # carries does not count as sent.
        self.max_run_chars = max_run_chars
        self._schemas: dict[str, ItemSchema] = {REFERENCE_TYPE: reference_schema()}
        self._task = NO_TASK
        self.log: list[dict[str, JsonValue]] = []
        # Whether the conversation had entries before the log's first, no longer kept
        # (neither shown nor sent to the agent): the panel says so above the log.
        self.earlier = False
        # Counts changes to the log, so the panel redraws it only when it changed.
        self.log_version = 0
        # Each log entry's JSON text as last built, by id() of the entry (held, so the
        # id stays its own); an entry's text is dropped when it changes.
        self._texts: dict[int, tuple[dict[str, JsonValue], str]] = {}
        # message_text("") as of the last change to what it depends on (the items, the
        # dismissals, the log; an answer's streaming text only once it ends, since no
        # question is sent before): the panel asks for it on every refresh.
        self._preview: str | None = None
        # The run and the text message of the last text added to an answer: another
        # message of the same run starts a paragraph of its own.
        self._text_message: tuple[str, str] | None = None

    # -- the pinned selection as items ----------------------------------------------

    def set_selection(self, selection: Selection | None, label: str = "") -> None:
        """Register the pinned selection's items (None: nothing pinned)."""
        self._preview = None
        if selection is None:
            self._registry.deregister(SELECTION_PROVIDER)
            self._task = NO_TASK
            return
        reference, *rest = selection_items(selection, label or selection.resource_ref)
        # One chip per object: the snapshot rides along hidden, in the reference's group.
        items = [reference] + [replace(item, hidden=True) for item in rest]
        self._registry.register(SELECTION_PROVIDER, items)
        self._schemas[SNAPSHOT_TYPE] = snapshot_schema(public=(selection.snapshot or {}).keys())
        self._task = reference.key or NO_TASK

    @property
    def task(self) -> str:
        """The task the next question belongs to: the pinned object's key, or NO_TASK."""
        return self._task

    def chips(self) -> list[Chip]:
        """The visible items in play, in order."""
        return [
            Chip(key=item.key, type=item.type, label=item.label or item.key)
            for item in self._registry.view().items
            if not item.hidden and item.key is not None
        ]

    def dismiss(self, key: str) -> None:
        """Remove the chip with `key`, and the hidden items of its group, for good."""
        self._preview = None
        group = next(
            (
                item.dismiss_group
                for item in self._registry.view().items
                if item.key == key and item.dismiss_group is not None
            ),
            None,
        )
        if group is not None:
            self._registry.dismiss_group(group)
        self._registry.dismiss(key)

    def undismiss_all(self) -> None:
        """Bring back every dismissed chip."""
        self._preview = None
        self._registry.restore_dismissals(Dismissals())

    @property
    def dismissed(self) -> int:
        """How many keys and groups the user dismissed."""
        found = self._registry.dismissals
        return len({*found.keys, *found.groups})

    # -- the text sent ----------------------------------------------------------------

    def _compose(self, question: str) -> tuple[str, list[dict[str, JsonValue]]]:
        """The text a question would send now, and the task's questions it relies on.

        What the task was sent is what its questions in the next run still hold: a
        question that the run would drop once this one is added no longer counts, and the
        text is composed again without it (it only grows, so this ends).
        """
        items = self.in_play()
        # Once this question is added, the log keeps its last MAX_LOG_ENTRIES entries.
        history = [
            entry
            for entry in self.log[-(MAX_LOG_ENTRIES - 1) :]
            if entry.get("kind") == "question" and entry.get("task") == self._task
        ]
        if not history:
            return self._text(question, items, []), history
        # A bound of the run's size that needs no message built: the log's, then the
        # next question's (a message's JSON escapes a character in at most 6). Within
        # the run's size, the run keeps every entry of the log.
        log_bound = chars_at_most(self.log, self.log_texts()) + MESSAGE_OVERHEAD_CHARS
        window: RunWindow | None = None
        while True:
            texts = [str(entry["sent"]) for entry in history]
            text = self._text(question, items, texts)
            if log_bound + 6 * len(text) <= self.max_run_chars:
                return text, history
            if window is None:
                window = RunWindow(self.log, self.max_run_chars)
            carried = {id(entry) for entry in window.carried(text)}
            kept = [entry for entry in history if id(entry) in carried]
            if len(kept) == len(history):
                return text, history
            history = kept

    def _text(self, question: str, items: list[ContextItem], history: list[str]) -> str:
        """The block of the items `history` does not hold, then the question."""
        block = ""
        to_send = unsent(items, history, self._budget)
        if to_send:
            # The standing instructions go once per task: with its first block.
            sent_before = any(_has_instructions(text) for text in history)
            instructions = [] if sent_before else list(STANDING_INSTRUCTIONS)
            block = fit_block(instructions, to_send, self._budget)
        return "\n\n".join(part for part in (block, question) if part)

    def message_text(self, question: str) -> str:
        """Return the exact text `send(question)` would send now."""
        return self._compose(question)[0]

    def preview(self) -> str:
        """The block the next question may carry, kept until it changes: composed for
        the longest question, one JSON writes six characters per character. A longer
        question leaves less of the run for the questions before it, and once the run
        drops the one that carried the task's block, the block goes again; so the
        preview shows it whenever any question could send it (a short one may not)."""
        if self._preview is None:
            longest = "\x00" * MAX_QUESTION_CHARS
            self._preview = self.message_text(longest)[: -len(longest)].removesuffix("\n\n")
        return self._preview

    def send(self, question: str, *, entry_id: str, at: str) -> str:
        """Record the question as sent to the current task; return the text sent.

        The log holds the text, so a follow-up does not resend the items it carried. A
        lone surrogate (half a character, which JavaScript strings may hold) becomes
        U+FFFD: the question goes into every later run's JSON, which cannot carry one.
        Raises ValueError for an empty question or one over MAX_QUESTION_CHARS.
        """
        question = paired_surrogates(question.strip())
        if not question or len(question) > MAX_QUESTION_CHARS:
            raise ValueError(f"a question has 1 to {MAX_QUESTION_CHARS} characters")
        text, history = self._compose(question)
        self._preview = None
        entry: dict[str, JsonValue] = {
            "kind": "question",
            "id": entry_id,
            "task": self._task,
            "at": at,
            "question": question,
            "sent": text,
        }
        if history:
            # The text leaves out what these questions carried: the runs answering it keep
            # them (conversation.run_messages), however long its answers grow.
            entry["reliesOn"] = history[0]["id"]
        self._append(entry)
        return text

    # -- the context tools: what the budget elided, on request --------------------------

    def in_play(self) -> list[ContextItem]:
        """The items a question sent now carries, redacted: a dismissed item is not in
        play."""
        return redact_items(list(self._registry.view().items), self._schemas)

    def _whole(self) -> Budget:
        """The budget an item is given whole within: the block's total budget for it
        alone (not the per-item budget that elided it from the block)."""
        largest = max(self._budget.total_chars, self._budget.per_item_chars)
        return replace(self._budget, per_item_chars=largest, total_chars=largest * 2)

    @property
    def context_room(self) -> int:
        """The characters the context tools may give one question, over all its runs:
        enough for its largest item, once."""
        return self._whole().total_chars

    def context_result(self, call: ContextToolCall, items: Sequence[ContextItem], room: int) -> str:
        """Answer a context tool call from `items`: those in play when the question the
        run answers was sent (`in_play()` then), whatever was selected since.

        `get_context_item` gives the item whose key is asked for in an untrusted block,
        whole (`_whole`); `list_context_items` gives every item's type, key and label. An
        item the user dismissed since is never given. A result over `room` characters
        (what the question's earlier calls left of `context_room`) is not given:
        `{"status": "over-budget", "key"}` instead.
        """
        result = self._context_answer(call, items)
        if len(result) > room:
            return safe_json(json.dumps({"status": "over-budget", "key": call.key}))
        return result

    def _context_answer(self, call: ContextToolCall, items: Sequence[ContextItem]) -> str:
        hidden = self._registry.dismissals
        items = [item for item in items if not hidden.hides(item)]
        if call.name == "list_context_items":
            listed = [ContextItem(type=i.type, key=i.key, label=i.label) for i in items]
            return fit_block([], listed, self._budget) if listed else _NOTHING
        found = [item for item in items if item.key == call.key]
        if not found:
            # The key is the agent's, perhaps read from page data: escaped as a line is.
            return safe_json(json.dumps({"status": "not-found", "key": call.key}))
        return fit_block([], found, self._whole())

    # -- commands in the log ----------------------------------------------------------

    def record_command(
        self,
        command_id: str,
        action: str,
        resource_ref: str | None,
        *,
        tool_call_id: str | None = None,
    ) -> None:
        """Log a command the assistant sent, its receipts pending; `tool_call_id` is the
        agent's tool call it carries out, if any."""
        entry: dict[str, JsonValue] = {
            "kind": "command",
            "id": command_id,
            "action": action,
            "resourceRef": resource_ref,
            "received": {"state": _PENDING},
            "ui": {"state": _PENDING},
        }
        if tool_call_id is not None:
            entry["toolCallId"] = tool_call_id
        self._append(entry)

    def supersede_commands(self, ids: Sequence[str | None], resource_ref: str) -> None:
        """Take out of the log the commands `ids`, if they are its last entries, none an
        agent's, all for `resource_ref` and applied: a Show me pressed again for the same
        object supersedes the one before it (whose marks it takes off, docs/protocol.md
        8.15), so that presses repeated show once and never push the conversation out of
        the log. A press with any other outcome (pending, unconfirmed, stale) stays."""
        count = len(ids)
        tail = self.log[-count:] if count else []
        if len(tail) != count or [entry.get("id") for entry in tail] != list(ids):
            return
        for entry in tail:
            if (
                entry.get("kind") != "command"
                or entry.get("resourceRef") != resource_ref
                or "toolCallId" in entry
                or not _applied(entry)
            ):
                return
        del self.log[-count:]
        for entry in tail:
            self._changed(entry)

    def sync_receipts(
        self, ids: Collection[str], views: Callable[[str], Mapping[str, JsonValue]]
    ) -> None:
        """Copy the current layer views of the commands and business actions `ids` (those
        whose receipts changed) into the log, in one pass.

        `views(id)` returns its layers (`received`, `ui`, `business`) as the panel shows
        them, or {} if the ledger has none yet; restored commands keep what they were
        saved with (a restored action the ledger was given back is checked like any).
        """
        if not ids:
            return
        for entry in self.log:
            entry_id = entry["id"]
            if (
                entry_id not in ids
                or entry["kind"] not in ("command", "action")
                or (entry.get("restored") and entry["kind"] == "command")
                or not isinstance(entry_id, str)
            ):
                continue
            for layer, view in views(entry_id).items():
                if entry.get(layer) != view:
                    entry[layer] = view
                    self._changed(entry)

    # -- answers and business actions in the log ---------------------------------------

    def start_answer(self, run_id: str, *, task_id: str | None, about: str | None) -> None:
        """Log the answer of run `run_id` as running: the pinned task it is about
        (`task_id`, the object `about`), its text and tool calls still to come."""
        self._append(
            {
                "kind": "answer",
                "id": run_id,
                "task": self._task,
                "taskId": task_id,
                "about": about,
                "state": "running",
                "text": "",
                "toolCalls": [],
                "error": None,
            }
        )

    def answer_text(self, run_id: str, delta: str, message_id: str = "") -> None:
        """Add `delta`, of the agent's text message `message_id`, to the answer's text;
        the first text of another message of the run begins a new paragraph."""
        entry = self.entry(run_id, "answer")
        text = str(entry["text"])
        last, self._text_message = self._text_message, (run_id, message_id)
        if text and last is not None and last[0] == run_id and last[1] != message_id:
            text = text.rstrip("\n") + "\n\n"
        entry["text"] = text + delta
        # No question can be sent while the answer streams; its end moves the preview.
        self._changed(entry, preview=False)

    def answer_tool_call(
        self,
        run_id: str,
        call_id: str,
        name: str,
        arguments: str,
        *,
        refused: str | None = None,
        detail: str = "",
        result: str | None = None,
    ) -> None:
        """Record a tool call of the answer: `refused` says why it was not carried out
        (`detail`: what was wrong with it, for the agent to correct), `result` is the
        answer to a call the assistant answered itself. Its name and arguments are kept
        escaped as the block's lines are (`block.safe_json`; the arguments the same JSON
        value), and so is the detail: the next runs send them back to the agent, whose
        model reads them, and they may repeat page strings (an id) or be any text."""
        entry = self.entry(run_id, "answer")
        calls = entry["toolCalls"]
        assert isinstance(calls, list)
        call = _escaped_call({"id": call_id, "name": name, "arguments": arguments})
        if refused is not None:
            call["refused"] = refused
            if detail:
                call["refusedDetail"] = safe_json(detail[:_REFUSAL_DETAIL_CHARS])
        if result is not None:
            call["result"] = result
        calls.append(call)
        self._changed(entry)

    def answer_ended(self, run_id: str, code: str, message: str) -> None:
        """The run ended: "done", or "failed" with the failure's code and message. The
        text received so far stays."""
        entry = self.entry(run_id, "answer")
        entry["state"] = "failed" if code else "done"
        entry["error"] = {"code": code, "message": message} if code else None
        self._changed(entry)

    def record_action(
        self, call_id: str, *, action: str, resource_ref: str, note: str | None, task_id: str
    ) -> None:
        """Log a business action the agent proposed: it waits for the user's decision."""
        self._append(
            {
                "kind": "action",
                "id": call_id,
                "action": action,
                "resourceRef": resource_ref,
                "note": note,
                "taskId": task_id,
                "decision": "proposed",
                "result": None,
            }
        )

    def id_taken(self, call_id: str) -> bool:
        """True if an entry of the log (a question, an answer, a command, an action) or
        an answer's tool call has this id."""
        for entry in self.log:
            if entry.get("id") == call_id:
                return True
            calls = entry.get("toolCalls")
            if isinstance(calls, list) and any(
                isinstance(call, dict) and call.get("id") == call_id for call in calls
            ):
                return True
        return False

    def decide_action(self, call_id: str, decision: str) -> None:
        """Record the user's decision on a proposed action ("confirmed" or "declined")."""
        entry = self.entry(call_id, "action")
        entry["decision"] = decision
        self._changed(entry)

    def action_checked(self, call_id: str, failure: str | None) -> bool:
        """Record how the user's last check of an action with the server went: `failure`
        (a code, e.g. "http-503", "timeout") if it got no usable answer, None if it did.
        Return True if that changed the entry."""
        entry = self.entry(call_id, "action")
        if entry.get("checkFailed") == failure:
            return False
        if failure is None:
            del entry["checkFailed"]
        else:
            entry["checkFailed"] = failure
        self._changed(entry)
        return True

    def action_result(self, call_id: str, result: Mapping[str, JsonValue]) -> None:
        """Record what the server answered when it carried the action out."""
        entry = self.entry(call_id, "action")
        entry["result"] = dict(result)
        self._changed(entry)

    def clear_log(self) -> None:
        """Forget the conversation's log (a new conversation): no question, answer or
        receipt of it is shown, saved or sent to the agent again, and the task's items
        go again with its first question. The dismissals stay."""
        self.log = []
        self.earlier = False
        self._texts = {}
        self._text_message = None
        self._preview = None
        self.log_version += 1

    def entry(self, entry_id: str, kind: str) -> dict[str, JsonValue]:
        """The log entry of `kind` with `entry_id`. Raises KeyError if the log has none."""
        for entry in reversed(self.log):
            if entry["id"] == entry_id and entry.get("kind") == kind:
                return entry
        raise KeyError(entry_id)

    # -- saved state ------------------------------------------------------------------

    def log_texts(self) -> list[str]:
        """Each log entry's JSON text, in order. Only the entries that changed since the
        last call are serialized again, so a receipt costs one entry, not the log."""
        texts: dict[int, tuple[dict[str, JsonValue], str]] = {}
        for entry in self.log:
            built = self._texts.get(id(entry))
            if built is None or built[0] is not entry:
                built = (entry, json.dumps(entry))
            texts[id(entry)] = built
        self._texts = texts
        return [text for _entry, text in texts.values()]

    def log_changes(
        self, shown: Mapping[str, str]
    ) -> tuple[dict[str, str], list[dict[str, JsonValue]]]:
        """What the panel must redraw: `shown` maps entry ids to the JSON text they were
        last shown with. Returns the texts to remember now (every entry's, by id, in the
        log's order) and the entries whose text differs from what was shown."""
        texts = {
            str(entry["id"]): text for entry, text in zip(self.log, self.log_texts(), strict=True)
        }
        changed = [
            entry for entry in self.log if shown.get(str(entry["id"])) != texts[str(entry["id"])]
        ]
        return texts, changed

    def saved_text(self) -> str:
        """The dismissals and the log as JSON text, for the assistant's saved state. The
        oldest entries are left out of it where the log's JSON would pass
        MAX_SAVED_CHARS."""
        texts = self.log_texts()
        # json.dumps(list) is its items' texts joined with ", " between brackets.
        total = sum(len(text) + 2 for text in texts)
        start = 0
        while total > MAX_SAVED_CHARS and start < len(texts) - 1:
            total -= len(texts[start]) + 2
            start += 1
        dismissed = json.dumps(self._registry.dismissals.to_json())
        earlier = json.dumps(self.earlier or start > 0)
        log = ", ".join(texts[start:])
        return f'{{"dismissed": {dismissed}, "earlier": {earlier}, "log": [{log}]}}'

    def restore(self, saved: Mapping[str, object]) -> None:
        """Restore what `saved_text` saved (parsed). Pending receipts become unconfirmed:
        the page that would have answered them is gone, and nothing is sent again."""
        self._preview = None
        dismissed = saved.get("dismissed")
        if isinstance(dismissed, dict):
            self._registry.restore_dismissals(Dismissals.from_json(dismissed))
        log = saved.get("log")
        if not isinstance(log, list):
            return
        self.log = [_restored(entry) for entry in log[-MAX_LOG_ENTRIES:] if _valid(entry)]
        self.earlier = saved.get("earlier") is True or len(log) > MAX_LOG_ENTRIES
        self.log_version += 1

    def _changed(self, entry: dict[str, JsonValue], *, preview: bool = True) -> None:
        """`entry` of the log changed in place (`preview`: the kept preview may have
        changed with it)."""
        self.log_version += 1
        self._texts.pop(id(entry), None)
        # What the next run still carries of the task's questions decides what the next
        # question carries: a change to the log may move it.
        if preview:
            self._preview = None

    def _append(self, entry: dict[str, JsonValue]) -> None:
        self.log_version += 1
        self.log.append(entry)
        self._preview = None
        excess = len(self.log) - MAX_LOG_ENTRIES
        if excess > 0:
            # Never the question the runs answer, nor the earliest it relies on: a turn's
            # answers and commands may take the log past its size until the next question,
            # but never past MAX_LOG_HELD (Show me adds commands without a question).
            cut = max(min(excess, kept_from(self.log)), len(self.log) - MAX_LOG_HELD)
            if cut > 0:
                del self.log[:cut]
                self.earlier = True


def _applied(entry: Mapping[str, object]) -> bool:
    """True if the command `entry`'s `received` and `ui` receipts are both `applied`."""
    layers = (entry.get("received"), entry.get("ui"))
    return all(isinstance(layer, dict) and layer.get("state") == "applied" for layer in layers)


def _has_instructions(text: str) -> bool:
    return f"<{TRUSTED_TAG}>" in text.splitlines()


def _objects_or_none(entry: Mapping[str, object], *keys: str) -> bool:
    """True if each of `keys` in `entry` is absent, null or a JSON object."""
    return all(entry.get(key) is None or isinstance(entry.get(key), dict) for key in keys)


def _valid(entry: object) -> bool:
    """True if a saved log entry has every field the panel and the runs read, of its type:
    one that does not is dropped on restore, never drawn half."""
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        return False
    kind = entry.get("kind")
    if kind == "question":
        return isinstance(entry.get("sent"), str) and isinstance(entry.get("task"), str)
    if kind == "answer":
        return (
            isinstance(entry.get("text"), str)
            and isinstance(entry.get("toolCalls"), list)
            and all(
                isinstance(call, dict)
                and all(isinstance(call.get(k), str) for k in ("id", "name", "arguments"))
                for call in entry["toolCalls"]
            )
            and _objects_or_none(entry, "error")
        )
    if kind == "action":
        return (
            isinstance(entry.get("resourceRef"), str)
            and isinstance(entry.get("taskId"), str)
            and _objects_or_none(entry, "result", "received", "business")
        )
    return (
        kind == "command"
        and isinstance(entry.get("action"), str)
        and _objects_or_none(entry, "received", "ui")
    )


_RELOADED: Final = {"state": "unconfirmed", "reason": "assistant-reloaded"}


def _restored(entry: dict[str, JsonValue]) -> dict[str, JsonValue]:
    entry = dict(entry)
    kind = entry["kind"]
    if kind in ("command", "action"):
        layers = ("received", "ui") if kind == "command" else ("received", "business")
        if kind == "action" and entry.get("decision") != "confirmed":
            # Still a proposal (the user may confirm it after the reload), or declined:
            # nothing was sent for it.
            return entry
        for layer in layers:
            view = entry.get(layer)
            if not is_layer_view(view) or view.get("state") == _PENDING:
                entry[layer] = dict(_RELOADED)
        if kind == "action" and not action_checkable(entry.get("business")):
            # Nothing is left to check: a line about the last check is about nothing.
            entry.pop("checkFailed", None)
        entry["restored"] = True
    elif kind == "answer":
        if entry.get("state") == "running":
            # The stream this answer was reading is gone with the old document.
            entry["state"] = "failed"
            entry["error"] = {"code": "assistant-reloaded", "message": "the assistant reloaded"}
        # Drawn as it was, but not announced again (panelview).
        entry["restored"] = True
        # As answer_tool_call keeps them (a log saved before it did, or by hand).
        calls = entry["toolCalls"]
        assert isinstance(calls, list)  # _valid
        entry["toolCalls"] = [_escaped_call(call) for call in calls]
    return entry


def _escaped_call(call: JsonValue) -> dict[str, JsonValue]:
    """A tool call (an object with string `name` and `arguments`: `_valid` checks a
    saved one) with both escaped as the block's lines are (`block.safe_json`)."""
    assert isinstance(call, dict)
    return {
        **call,
        "name": safe_json(str(call["name"])),
        "arguments": safe_json(str(call["arguments"])),
    }
