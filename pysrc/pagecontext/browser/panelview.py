"""The assistant panel's elements, built from the worker's panel state and conversation
log by the main-thread edge, run by MicroPython (its own module, so that no import of
the edge's is one long task of the main thread).

Every text goes in through `textContent`, never as markup: what the page, the agent or
the model wrote is shown, never run.
"""

import json
import re

import js

from pagecontext.integration import (
    STOPPED,
    action_checkable,
    action_unsent,
    command_standing,
    isolated_strings,
    panel_text,
    reason_listed,
)

# For the type checker only: MicroPython has neither typing nor contextlib, and never
# evaluates annotations.
try:  # noqa: SIM105
    from typing import Any
except ImportError:
    pass


# A tool's name: what the panel shows as one.
_TOOL_NAME = re.compile("^[A-Za-z0-9_.-]+$")


def text_element(tag: str, text: str, cls: str | None = None, own_direction: bool = False) -> Any:
    """An element of `tag` showing `text`. With `own_direction`, for text someone other
    than this panel wrote (a page's value, a question, an answer), the element takes its
    direction from its text (`dir="auto"`): an Arabic or Hebrew question is laid out right
    to left, its question mark and full stop at its end, not at its start."""
    el = js.document.createElement(tag)
    el.textContent = panel_text(text)
    if cls:
        el.className = cls
    if own_direction:
        el.setAttribute("dir", "auto")
    return el


# The longest text whose JSON strings `fill_block` isolates: each part is a call into
# the page's JavaScript, and a text of 32,000 characters with 1,800 strings to isolate
# took ~60 ms on the main thread. A longer one is drawn as one text.
ISOLATE_MAX_CHARS = 8000


def fill_block(el: Any, text: str) -> Any:
    """Fill `el` with `text`, a context block as the model gets it (or a text holding
    one): its words as they are, and each JSON string of an item line that holds more
    than ASCII in a `<bdi>` of its own (`isolated_strings`), so that right-to-left keys,
    values and list items are drawn in the order the model reads them (up to
    ISOLATE_MAX_CHARS). The element's text is `text`, exactly."""
    shown = panel_text(text)
    if len(shown) > ISOLATE_MAX_CHARS:
        el.textContent = shown
        return el
    el.textContent = ""
    _append_parts(el, isolated_strings(shown))
    return el


def _append_parts(el: Any, parts: list[list[Any]]) -> None:
    """Append `parts` ([text, isolate] pairs, as the panel shows them) to `el`: each text
    to isolate in a `<bdi>` of its own, drawn in its own direction, which neither moves the
    words around it nor is moved by them; the others as text."""
    for part, isolate in parts:
        el.append(_isolated(part) if isolate else part)


def _isolated(text: str) -> Any:
    """A `<bdi>` showing `text` (as the panel shows it already): drawn in its own
    direction, neither moving the words around it nor moved by them."""
    bdi = js.document.createElement("bdi")
    bdi.textContent = text
    return bdi


def _filter_parts(filters: list[Any]) -> list[list[Any]]:
    """The chip's filters line as [text, isolate] parts (`_append_parts`): each name and
    value a page wrote that holds more than ASCII isolated, so that a right-to-left name
    and its value are drawn name=value, not as one run that reads value=name; the rest
    runs together as one text (one call into JavaScript, not one per value)."""
    parts: list[list[Any]] = [["filters: ", False]]

    def add(text: str, page: bool = False) -> None:
        if page:
            text = panel_text(text)
            if len(text.encode()) != len(text):
                parts.append([text, True])
                return
        if parts[-1][1]:
            parts.append([text, False])
        else:
            parts[-1][0] += text

    for index, (name, value) in enumerate(filters):
        add(", " if index else "")
        add(name, True)
        add("=")
        if isinstance(value, list):
            add("[")
            for at, item in enumerate(value):
                add(", " if at else "")
                add(json.dumps(item), True)
            add("]")
        else:
            add(json.dumps(value), True)
    if not filters:
        add("none")
    add(" · seen ")
    return parts


def _format_value(value: Any) -> str:
    if isinstance(value, dict):
        return _scalar_text(value.get("value")) + " " + str(value.get("unit"))
    return _scalar_text(value)


def _scalar_text(value: Any) -> str:
    """A value as the page's JavaScript writes it: a float as String() does (shortest,
    `1e-7`; MicroPython's own writes `1e-07`, and other digits for some), true, false
    and null as JSON does; an integer and a string as they are."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return str(js.String(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value)


# How the chip writes when the user saw the object: date, time with seconds and zone.
_SEEN_FORMAT = '{"dateStyle": "medium", "timeStyle": "long"}'
# The browser's formatter of that (an `Intl.DateTimeFormat`), made at the first chip.
_seen_format: list[Any] = []


def _seen(observed_at: str) -> Any:
    """When the user saw the object (`observedAt`, UTC), as their own clock and calendar
    say it: in the browser's time zone and language, with the zone named ("Dec 8, 2026,
    9:34:10 AM GMT+13:45"), in a <time> whose `datetime` and tooltip are the exact UTC
    time the context carries and the model gets. A UTC time ending in `Z` was a time the
    user never saw on their clock, and in zones far from UTC another day."""
    el = js.document.createElement("time")
    el.setAttribute("datetime", observed_at)
    el.setAttribute("title", observed_at + " (UTC)")
    # In its own direction, isolated from the words around it: in Arabic or Hebrew the
    # date reads right to left.
    el.setAttribute("dir", "auto")
    # An empty list of languages: the browser's own. The browser's words, not a page's:
    # shown as written, with the direction marks its right-to-left formats hold.
    if not _seen_format:
        languages = js.JSON.parse("[]")
        _seen_format.append(js.Intl.DateTimeFormat.new(languages, js.JSON.parse(_SEEN_FORMAT)))
    el.textContent = str(_seen_format[0].format(js.Date.new(observed_at)))
    return el


# Said in a chip whose page has reloaded since it was shared.
CHIP_PAGE_RELOADED = (
    "The page has reloaded since you shared this: select it there again to use what it shows now."
)


def chip_element(chip: dict[str, Any]) -> Any:
    """Build the chip: what the user saw, as they saw it, with a remove button."""
    el = js.document.createElement("div")
    el.setAttribute("data-pc-chip", chip["resourceRef"])
    el.setAttribute("data-pc-chip-revision", str(chip["revision"]))
    el.setAttribute("data-pc-chip-key", chip["key"])
    if chip.get("restored"):
        el.setAttribute("data-pc-chip-restored", "true")
    el.className = "pc-chip"
    # A group named for its object: what a screen reader says when the focus lands on
    # it, rather than every line of it, machine names included.
    el.setAttribute("role", "group")
    el.setAttribute("aria-label", "Context: " + chip["resourceRef"])
    # Focusable from script: "Bring it back" hands the focus to the chip it restored.
    el.setAttribute("tabindex", "-1")
    el.append(text_element("div", chip["resourceRef"], "pc-chip-title", True))
    # The component and page ids go to the model with the ref, as text the page wrote:
    # shown too, each in an isolate of its own ("in sales-table of sales-2026").
    where = js.document.createElement("div")
    where.className = "pc-chip-where"
    where.setAttribute("data-pc-chip-where", "")
    component, page = panel_text(str(chip["componentId"])), panel_text(str(chip["pageId"]))
    _append_parts(where, [["in ", False], [component, True], [" of ", False], [page, True]])
    el.append(where)
    # [name, value] pairs, in the page's order (a MicroPython dict keeps none).
    values = js.document.createElement("dl")
    for name, value in chip.get("snapshot") or []:
        values.append(text_element("dt", name, None, True))
        dd = text_element("dd", _format_value(value), None, True)
        dd.setAttribute("data-pc-chip-field", name)
        values.append(dd)
    el.append(values)
    meta = js.document.createElement("div")
    meta.className = "pc-chip-meta"
    _append_parts(meta, _filter_parts(chip.get("filters") or []))
    meta.append(_seen(chip["observedAt"]))
    meta.append(" · revision " + str(chip["revision"]))
    el.append(meta)
    if chip.get("pageReloaded"):
        el.setAttribute("data-pc-chip-page-reloaded", "true")
        note = text_element("p", CHIP_PAGE_RELOADED, "pc-chip-note")
        # Read with the group's name when the focus lands on the chip.
        note.setAttribute("id", "pc-chip-note")
        el.setAttribute("aria-describedby", "pc-chip-note")
        el.append(note)
    remove = text_element("button", "\u00d7", "pc-chip-remove")
    remove.setAttribute("type", "button")
    remove.setAttribute("aria-label", "Remove context: " + chip["resourceRef"])
    remove.setAttribute("data-pc-chip-remove", "")
    el.append(remove)
    return el


def log_element(entry: dict[str, Any]) -> Any:
    """One conversation entry: a question (with the exact text sent), an answer, a
    command with its receipt as it stands (restored ones as they were saved), or a
    business action the agent proposed."""
    el = js.document.createElement("li")
    # Focusable from script: an entry whose button was pressed keeps the focus redrawn.
    el.setAttribute("tabindex", "-1")
    kind = entry.get("kind")
    el.setAttribute("data-pc-log-kind", str(kind))
    el.setAttribute("data-pc-log-id", str(entry.get("id")))
    if kind == "question":
        el.className = "pc-log-question"
        el.append(text_element("p", str(entry.get("question") or ""), None, True))
        sent = js.document.createElement("details")
        sent.append(text_element("summary", "Text sent"))
        sent.append(fill_block(js.document.createElement("pre"), str(entry.get("sent") or "")))
        el.append(sent)
        return el
    if kind == "answer":
        return _answer_element(el, entry)
    if kind == "action":
        return _action_element(el, entry)
    status, text = receipt_summary(entry)
    el.className = "pc-log-command"
    el.setAttribute("data-pc-log-status", status)
    if entry.get("restored"):
        el.setAttribute("data-pc-log-restored", "true")
        text += " (before reload)"
    # A command on a whole component (`refresh`, `clear-highlight`) names no object.
    ref = entry.get("resourceRef")
    line = text_element("p", text)
    if ref:
        # The object's id isolated: a right-to-left one that ends in a neutral character
        # (a Hebrew word and a full stop) is drawn as written, not split around the words
        # after it.
        line.prepend(_isolated(panel_text(str(ref))), " · ")
    el.append(line)
    return el


# What the panel says when an answer fails, by the failure's code.
_FAILURES = {
    "agent-unreachable": "The assistant could not reach its agent.",
    "timeout": "The agent took too long to answer.",
    "malformed-stream": "The agent's answer broke the protocol, so it was stopped.",
    "incomplete": "The agent's answer was cut off.",
    "run-error": "The agent reported an error.",
    "run-cancelled": "The agent cancelled its answer.",
    "run-interrupted": "The agent stopped to wait for input, which this assistant cannot give.",
    "internal-error": "The assistant failed while asking or reading, so the answer was stopped.",
    "no-agent": "This assistant has no agent to ask (its agentUrl is empty).",
    "assistant-reloaded": "This answer was interrupted when the assistant reloaded.",
    STOPPED: "You stopped this answer.",
}


def failure_summary(code: str) -> str:
    """What the panel says of an answer that failed with `code`. An HTTP status of 500
    or more is the agent's server failing, not a refusal of this request: the same
    question may be answered when asked again."""
    if code.startswith("http-"):
        status = code[5:]
        if status.isdigit() and int(status) >= 500:
            return "The agent's server failed (HTTP " + status + "): ask again in a moment."
        return "The agent refused the request (HTTP " + status + ")."
    return _FAILURES.get(code, "The answer failed.")


def _answer_element(el: Any, entry: dict[str, Any]) -> Any:
    state = str(entry.get("state") or "running")
    el.className = "pc-log-answer"
    el.setAttribute("data-pc-answer-state", state)
    if entry.get("about"):
        el.setAttribute("data-pc-answer-about", str(entry.get("about")))
    text = text_element("p", str(entry.get("text") or ""), "pc-answer-text", True)
    text.setAttribute("data-pc-answer-text", "")
    el.append(text)
    if state == "running":
        el.setAttribute("aria-busy", "true")
        el.append(text_element("p", "Answering…", "pc-progress"))
    for call in entry.get("toolCalls") or []:
        if call.get("refused"):
            # A tool's name as the agent gave it, if it is one; other text is not shown
            # as a name (it is kept escaped for the agent).
            name = str(call.get("name"))
            if _TOOL_NAME.match(name):
                note = "Refused the agent's " + name + " call"
            else:
                note = "Refused the agent's call of a tool it does not have"
            why = str(call.get("refused"))
            if call.get("refusedDetail"):
                why += ": " + str(call.get("refusedDetail"))
            el.append(text_element("p", note + " (" + why + ").", "pc-note"))
    error = entry.get("error")
    if state == "failed" and isinstance(error, dict):
        code = str(error.get("code") or "")
        failure = text_element("p", failure_summary(code), "pc-error")
        failure.setAttribute("data-pc-answer-error", code)
        if not entry.get("restored") and code != STOPPED:
            # A failure that happens now is announced; one restored with the log is not,
            # nor the user's own stop.
            failure.setAttribute("role", "alert")
        el.append(failure)
        if error.get("message") and code != STOPPED:
            # The user's own stop needs no detail ("stopped by the user" says it again).
            el.append(text_element("p", str(error.get("message")), "pc-note", True))
        # The question back in its field, for the user to send again (or change first).
        again = text_element("button", "Ask again")
        again.setAttribute("type", "button")
        again.setAttribute("data-pc-ask-again", "")
        el.append(again)
    return el


def _action_element(el: Any, entry: dict[str, Any]) -> Any:
    state, text = _action_summary(entry)
    el.className = "pc-log-action"
    el.setAttribute("data-pc-action-state", state)
    ref = str(entry.get("resourceRef") or "")
    el.setAttribute("data-pc-action-ref", ref)
    el.append(text_element("p", "Flag " + ref + " for review?", "pc-action-title"))
    if entry.get("note"):
        el.append(text_element("p", str(entry.get("note")), "pc-note", True))
    if state == "proposed":
        for label, decision in (("Flag for review", "confirm"), ("Not now", "decline")):
            button = text_element("button", label)
            button.setAttribute("type", "button")
            button.setAttribute("data-pc-action-decision", decision)
            el.append(button)
    else:
        status = text_element("p", text, "pc-action-status")
        status.setAttribute("data-pc-action-status", state)
        el.append(status)
        # Asked again after "not flagged yet": a flag request on its way (this tab's,
        # or another's) may still be written; "flagged" is the last word.
        if state == "unconfirmed" and action_checkable(entry.get("business")):
            check = text_element("button", "Check with the server")
            check.setAttribute("type", "button")
            check.setAttribute("data-pc-action-decision", "check")
            el.append(check)
    return el


def _action_summary(entry: dict[str, Any]) -> tuple[str, str]:
    """Return (state, text) for a business action: success only from the server."""
    decision = entry.get("decision")
    if decision == "proposed":
        return "proposed", ""
    if decision == "declined":
        return "declined", "Not flagged: you declined."
    # The ledger settles the business layer with the confirmation's failure too, so
    # it alone says where the action stands.
    layer = entry.get("business") or {}
    state = layer.get("state") or "pending"
    reason = str(layer.get("reason") or "")
    if state == "applied":
        result = entry.get("result") or {}
        text = "Flagged for review by the server (flag " + str(result.get("id")) + ")."
    elif action_unsent(entry):
        # No token came (no answer to the request for a confirmation, or the server
        # failed it), so no flag was asked for from here; another tab's confirmation of
        # the same proposal is what a check could still find.
        if state == "unconfirmed":
            said = "Not flagged from here: the server did not answer the request to confirm it"
        else:
            said = "Not flagged: the server failed to confirm it"
        text = (
            said
            + " ("
            + reason
            + "), so no flag was asked for. Ask the assistant again to flag it."
        )
    elif state == "rejected":
        text = "The server refused: " + reason + "."
    elif state == "unconfirmed":
        # A flag request the server failed (5xx) got an answer, but not one that says
        # what happened.
        cause = "the server failed" if reason.startswith("http-5") else "no answer from the server"
        text = "Unconfirmed: " + cause + " (" + reason + "). It may or may not be flagged."
    else:
        state = "pending"
        text = "Asking the server…"
    if layer.get("late") and layer.get("lateStatus") == "applied":
        result = entry.get("result") or {}
        text += " The server says it was flagged later (flag " + str(result.get("id")) + ")."
    elif layer.get("late") and layer.get("lateStatus") == "not-found":
        text += " The server says it is not flagged yet."
    elif layer.get("late"):
        text += " A late answer said " + str(layer.get("lateStatus")) + "."
    failed = entry.get("checkFailed")
    if failed:
        text += " The last check got no answer from the server (" + str(failed) + "): check again."
    return state, text


def receipt_summary(command: dict[str, Any]) -> tuple[str, str]:
    """Return (status, text) for the last command: where it stands (the UI layer once it
    settles, integration.command_standing). A Show me's `locate`, once it settled, is
    named after it when it stands otherwise (the object could not take the focus)."""
    layer = command_standing(command, "ui")
    status = layer.get("state") or "pending"
    text = _standing_text(command, layer)
    located = command.get("locate")
    if isinstance(located, dict):
        where = command_standing(located, "ui")
        if where.get("state") not in (None, "pending") and (
            (where.get("state"), where.get("reason")) != (status, layer.get("reason"))
        ):
            said = _standing_text(located, where)
            text += "; " + said[:1].lower() + said[1:]
    return status, text


def locate_state(command: dict[str, Any]) -> str | None:
    """Where the `locate` sent with a Show me command stands (its UI layer: `pending`
    until it settles); None if the command carries none."""
    located = command.get("locate")
    if not isinstance(located, dict):
        return None
    return str(command_standing(located, "ui").get("state") or "pending")


# What a command's receipt says in words, before its codes: what was done, by action...
_DONE = {
    "highlight": "Highlighted on the page",
    "locate": "Shown on the page",
    "refresh": "Refreshed on the page",
    "clear-highlight": "Highlights cleared on the page",
}
# ...why it was not, by reason...
_NOT_DONE_WHY = {
    "not-rendered": "Not done: the page does not show it now",
    "not-focusable": "The keyboard's focus could not move to it",
    "not-scrolled": "Not scrolled to: that would have moved what you are typing in",
    "no-refresh": "Not done: the page does not refresh it",
    "view-changed": "Not done: the page shows other data since: share it again from the page",
    "page-instance": "Not done: the page was reloaded since",
}
# ...or, for another reason, by state.
_NOT_DONE = {
    "pending": "Waiting for the page",
    "not-found": "Not done: the page does not show it",
    "stale-context": "Not done: the page changed since",
    "rejected": "Not done: the page refused it",
    "unconfirmed": "Not confirmed: the page did not answer",
}


def _standing_text(command: dict[str, Any], layer: dict[str, Any]) -> str:
    """Where a command stands, in words, then in the protocol's codes (in brackets)."""
    action = str(command.get("action", ""))
    state = str(layer.get("state") or "pending")
    reason = str(layer.get("reason") or "")
    code = action + ": " + state
    if reason:
        code += " (" + reason + ")"
    if layer.get("late"):
        code += ", late receipt: " + str(layer.get("lateStatus"))
    if state == "applied":
        said = _DONE.get(action, "Done on the page")
    else:
        # A reason's words only with the state pagecontext gives it: a page's own
        # `not-found` (`page-instance`) does not say the page was reloaded.
        why = _NOT_DONE_WHY.get(reason) if reason_listed(state, reason) else None
        said = why or _NOT_DONE.get(state, "Not done")
        if layer.get("late") and layer.get("lateStatus") == "applied":
            said += "; the page did it later"
    return said + " [" + code + "]"


# The fields of `pagecontext:state`'s detail.
