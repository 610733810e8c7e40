"""Faults the frames survive in real Chromium: an agent answering with no body, a page's
attribute that reads as an infinity, a damaged saved conversation. Each ends in a state
the user can see and act on, never a frame that stays answering or failed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from playwright.sync_api import BrowserContext, Page, Route, expect

from .conftest import BOOT_TIMEOUT_MS, STEP_TIMEOUT_MS, Origins, wait_bound
from .helpers import (
    OTHER_ROW,
    ROW,
    ask,
    html,
    navigate_soon,
    open_workbench,
    panel,
    pin,
    receipt,
    saved_state_key,
    show_and_expect,
)


def test_an_agent_answering_with_no_body_ends_the_answer(
    demo: Page, context: BrowserContext, origins: Origins
) -> None:
    """An agent that answers 204 No Content: the answer ends cut off (`incomplete`), the
    assistant is not left answering, and the next question is answered."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)

    def no_content(route: Route) -> None:
        route.fulfill(status=204, headers={"Access-Control-Allow-Origin": origins.assistant})

    context.route(origins.assistant + "/agent", no_content)
    answer = ask(assistant, "Why is this row so high?", until="failed")
    expect(answer.locator("[data-pc-answer-error]")).to_have_attribute(
        "data-pc-answer-error", "incomplete"
    )
    expect(html(assistant)).to_have_attribute("data-pc-answering", "false")
    announced = assistant.locator("[data-pc-announce]")
    expect(announced).to_have_text("")  # a failure is its own alert
    context.unroute(origins.assistant + "/agent")
    ask(assistant, "And now?", until="done")
    # The built-in agent's answer is long: its beginning, and where the rest is.
    expect(announced).to_have_text(
        re.compile(r"^The assistant answered: About .{500,}… \(the rest is in the conversation\)$")
    )


def test_a_failure_is_announced_when_it_happens_not_again_when_restored(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """Workbench (the assistant is the top document, so it may store): an answer that
    fails is an alert; after a reload the restored conversation shows the failure again,
    but not as an alert."""
    business = open_workbench(page, origins)
    pin(business, page, ROW)

    def no_content(route: Route) -> None:
        route.fulfill(status=204, headers={"Access-Control-Allow-Origin": origins.assistant})

    context.route(origins.assistant + "/agent", no_content)
    ask(page, "Why is this row so high?", until="failed")
    failure = page.locator('[data-pc-answer-error="incomplete"]')
    expect(failure).to_have_attribute("role", "alert")
    page.reload()
    wait_bound(page)
    expect(failure).to_be_visible(timeout=STEP_TIMEOUT_MS)
    expect(failure).not_to_have_attribute("role", "alert")


def test_an_assistant_with_no_agent_says_so_at_once(
    page: Page, context: BrowserContext, no_agent_origins: Origins
) -> None:
    """An assistant served with no agent (`--no-agent`, `agentUrl: ""`) asks nobody: the
    answer fails at once as `no-agent`, saying so, and no request is made for it."""
    origins = no_agent_origins
    agent_requests: list[str] = []
    context.on(
        "request",
        lambda request: agent_requests.append(request.url) if request.method == "POST" else None,
    )
    page.goto(origins.page + "/")
    wait_bound(page)
    assistant = panel(page)
    wait_bound(assistant)
    pin(page, assistant, ROW)
    answer = ask(assistant, "Why is this row so high?", until="failed")
    expect(answer.locator("[data-pc-answer-error]")).to_have_attribute(
        "data-pc-answer-error", "no-agent"
    )
    expect(answer).to_contain_text("no agent to ask")
    expect(html(assistant)).to_have_attribute("data-pc-answering", "false")
    assert agent_requests == []


def test_a_value_that_reads_as_an_infinity_is_shared_as_its_text(demo: Page) -> None:
    """A cell whose `data-pc-value` is `1e999` (JSON for an infinity, which the core never
    takes): the row is selected and shared with the value as the page wrote it, and
    neither frame fails."""
    cell = demo.locator(f'tr[data-pc-resource-ref="{ROW}"] [data-pc-field="unitsSold"]')
    cell.evaluate("td => td.setAttribute('data-pc-value', '1e999')")
    assistant = panel(demo)
    chip = pin(demo, assistant, ROW)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_text("1e999 units")
    expect(html(demo)).to_have_attribute("data-pc-state", "bound")
    expect(html(assistant)).to_have_attribute("data-pc-state", "bound")
    pin(demo, assistant, OTHER_ROW)  # and the next selection goes as usual


def test_an_assistant_whose_page_never_binds_says_it_waits_for_it(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The page's worker script does not load: the assistant answered the page's edge and
    stays `connecting`; it says it is waiting for the page, and its Show me is off."""
    context.route(
        f"{origins.page}/web/worker.mjs",
        lambda route: route.fulfill(status=404, body="not here"),
    )
    page.goto(origins.page + "/")
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=BOOT_TIMEOUT_MS)
    assistant = panel(page)
    expect(html(assistant)).to_have_attribute(
        "data-pc-state", "connecting", timeout=BOOT_TIMEOUT_MS
    )
    expect(assistant.get_by_role("button", name="Show me")).to_have_attribute(
        "aria-disabled", "true"
    )
    expect(assistant.locator("[data-pc-state-text]")).to_have_text("Waiting for the page…")


def test_a_restored_conversation_waiting_for_its_page_sends_no_show_me(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """Workbench (it keeps its conversation): reloaded while the business page's worker
    script does not load, it keeps its restored chip and says it is waiting for the page;
    its Show me is off, and a press sends nothing. Once the page binds, Show me works."""
    business = open_workbench(page, origins)
    pin(business, page, ROW)
    saved = "([key, ref]) => (sessionStorage.getItem(key) || '').includes(ref)"
    page.wait_for_function(saved, arg=[saved_state_key(page), ROW])
    worker = f"{origins.page}/web/worker.mjs"
    context.route(worker, lambda route: route.fulfill(status=404, body="not here"))
    page.reload()
    expect(html(business)).to_have_attribute("data-pc-state", "failed", timeout=BOOT_TIMEOUT_MS)
    expect(html(page)).to_have_attribute("data-pc-state", "ready", timeout=BOOT_TIMEOUT_MS)
    chip = page.locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-restored", "true", timeout=STEP_TIMEOUT_MS)
    show = page.get_by_role("button", name="Show me")
    expect(show).to_have_attribute("aria-disabled", "true")
    expect(page.locator("[data-pc-state-text]")).to_have_text("Waiting for the page…")
    show.click(force=True)  # looks off, and is: nothing is recorded or sent
    expect(page.locator("[data-pc-announce]")).to_have_text(
        re.compile(r"^Not yet: the assistant is waiting for the page")
    )

    context.unroute(worker)
    navigate_soon(
        next(f for f in page.frames if f.url.startswith(origins.page)), "location.reload()"
    )
    expect(html(page)).to_have_attribute("data-pc-state", "bound", timeout=BOOT_TIMEOUT_MS)
    # Drawn from a state after the press: a command it sent would be in the log by now.
    expect(show).to_have_attribute("aria-disabled", "false", timeout=STEP_TIMEOUT_MS)
    expect(page.locator('[data-pc-log-kind="command"]')).to_have_count(0)
    expect(receipt(page)).to_have_text("")
    show_and_expect(page, "stale-context")


def test_an_assistant_whose_boot_script_does_not_load_says_it_is_starting(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The assistant's boot script does not load (a 404 during a deploy): its panel's own
    markup says the assistant is starting, and offers no control as if it worked."""
    boot = f"{origins.assistant}/web/boot.mjs"
    context.route(boot, lambda route: route.fulfill(status=404, body="not here"))
    with page.expect_response(boot, timeout=BOOT_TIMEOUT_MS):
        page.goto(origins.page + "/")
    assistant = panel(page)
    expect(assistant.locator("[data-pc-chips]")).to_have_text("The assistant is starting…")
    expect(html(assistant)).to_have_attribute("data-pc-state", "booting")
    expect(assistant.locator("[data-pc-state-text]")).to_have_text("Connecting…")
    for name in ("Show me", "Send"):
        expect(assistant.get_by_role("button", name=name)).to_be_disabled()
    expect(assistant.get_by_role("textbox", name="Your question")).to_be_disabled()


# Damages the workbench's saved state (under the key given) once, before its boot.
DAMAGED = """
if (location.pathname === "/workbench.html" && !sessionStorage.getItem("damaged")) {
  sessionStorage.setItem("damaged", "1");
  const damaged = JSON.stringify(STATE);
  sessionStorage.setItem(KEY, damaged);
  localStorage.setItem(KEY, damaged);
}
"""
# A business action whose saved receipt holds a list where its state goes.
DAMAGED_ACTION = {
    "composer": {
        "log": [
            {
                "kind": "action",
                "id": "act-1",
                "resourceRef": "sales-2026-03-north",
                "taskId": "t-1",
                "decision": "confirmed",
                "received": {"state": []},
                "business": {"state": []},
            }
        ]
    }
}


@pytest.mark.parametrize(
    "state",
    [{"conversationId": "bad id!"}, DAMAGED_ACTION],
    ids=["conversation-id", "action-receipt"],
)
def test_a_damaged_saved_state_is_read_as_far_as_it_goes_and_the_frames_bind(
    page: Page, origins: Origins, state: dict[str, object]
) -> None:
    """The workbench's saved state names a conversation id that is not one (`bad id!`),
    or holds an action whose receipt is not one: the assistant starts a new conversation
    instead of the first, reads the second as lost with the old document, and both
    frames bind, on this visit and the next."""
    page.goto(origins.assistant + "/workbench.html")
    key = saved_state_key(page)
    page.add_init_script(
        DAMAGED.replace("KEY", json.dumps(key)).replace("STATE", json.dumps(state))
    )
    business = open_workbench(page, origins)
    expect(html(business)).to_have_attribute("data-pc-state", "bound")
    assert page.evaluate("() => sessionStorage.getItem('damaged')") == "1"
    if state is DAMAGED_ACTION:
        action = page.locator('[data-pc-log-id="act-1"]')
        expect(action).to_have_attribute("data-pc-action-state", "unconfirmed")
        expect(action.get_by_role("button", name="Check with the server")).to_be_visible()
    page.reload()
    wait_bound(page)
    wait_bound(page.frame_locator("iframe[data-pc-child]"))
    expect(html(page)).to_have_attribute("data-pc-state", "bound", timeout=STEP_TIMEOUT_MS)


# Fills the document's sessionStorage and localStorage with another application's data,
# to the last character they take.
FILL_STORAGE = """() => {
  for (const name of ["sessionStorage", "localStorage"]) {
    let chunk = "x".repeat(1 << 20);
    for (let index = 0; chunk.length > 0; index += 1) {
      try {
        window[name].setItem(`other-app-${index}`, chunk);
      } catch {
        chunk = chunk.slice(0, chunk.length >> 1);
      }
    }
  }
}"""


def test_a_conversation_that_storage_cannot_hold_is_not_restored_older(
    page: Page, origins: Origins
) -> None:
    """Workbench: the assistant origin's storage fills up after a first answer was saved.
    The panel says the conversation is not being saved and will be gone on a reload; a
    reload then restores nothing, not the conversation as it stood before storage
    filled up, without what was asked since."""
    business = open_workbench(page, origins)
    pin(business, page, ROW)
    ask(page, "Why is this row so high?")
    page.evaluate(FILL_STORAGE)
    ask(page, "And compared with May?")
    note = page.locator("[data-pc-storage-note]")
    expect(note).to_contain_text("not being saved")
    page.reload()
    wait_bound(page)
    wait_bound(page.frame_locator("iframe[data-pc-child]"))
    expect(page.locator('[data-pc-log-kind="question"]')).to_have_count(0)


def agent_streaming(
    origins: Origins, events: Callable[[dict[str, str]], list[dict[str, object]]]
) -> Callable[[Route], None]:
    """A route handler that answers the agent's POST with the events `events(ids)`
    makes for the run's threadId and runId, as server-sent events."""

    def answer(route: Route) -> None:
        run = json.loads(route.request.post_data or "{}")
        ids = {"threadId": run["threadId"], "runId": run["runId"]}
        route.fulfill(
            status=200,
            headers={
                "Access-Control-Allow-Origin": origins.assistant,
                "Content-Type": "text/event-stream",
            },
            body="".join(f"data: {json.dumps(event)}\n\n" for event in events(ids)),
        )

    return answer


def test_an_agent_that_cancels_its_run_is_shown_as_such(
    demo: Page, context: BrowserContext, origins: Origins
) -> None:
    """An agent ends its run with `RUN_FINISHED` whose outcome is `cancelled`: the answer
    is shown failed, saying the agent cancelled it, not as an answer."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)

    def cancelling(ids: dict[str, str]) -> list[dict[str, object]]:
        return [
            {"type": "RUN_STARTED", **ids},
            {"type": "RUN_FINISHED", **ids, "outcome": {"type": "cancelled"}},
        ]

    context.route(origins.assistant + "/agent", agent_streaming(origins, cancelling))
    answer = ask(assistant, "Why is this row so high?", until="failed")
    failure = answer.locator("[data-pc-answer-error]")
    expect(failure).to_have_attribute("data-pc-answer-error", "run-cancelled")
    expect(failure).to_have_text("The agent cancelled its answer.")
    expect(html(assistant)).to_have_attribute("data-pc-answering", "false")


def test_tool_arguments_nested_thousands_deep_are_refused_and_the_assistant_goes_on(
    demo: Page, context: BrowserContext, origins: Origins
) -> None:
    """An agent streams a tool call whose arguments nest 5,000 brackets deep (10 KB):
    the call is refused (`malformed-arguments`), the answer ends, and the next question
    is answered. (Read by CPython's own JSON parser in WebAssembly, such text overflowed
    the JavaScript stack: the worker's runtime died and the answer ran forever.)"""
    assistant = panel(demo)
    pin(demo, assistant, ROW)

    def deep_agent(ids: dict[str, str]) -> list[dict[str, object]]:
        call = {"toolCallId": "deep-1"}
        return [
            {"type": "RUN_STARTED", **ids},
            {"type": "TOOL_CALL_START", **call, "toolCallName": "highlight"},
            {"type": "TOOL_CALL_ARGS", **call, "delta": "[" * 5000 + "]" * 5000},
            {"type": "TOOL_CALL_END", **call},
            {"type": "RUN_FINISHED", **ids},
        ]

    context.route(origins.assistant + "/agent", agent_streaming(origins, deep_agent))
    answer = ask(assistant, "Why is this row so high?", until="done")
    expect(answer).to_contain_text(
        "Refused the agent's highlight call (malformed-arguments: recursion limit exceeded"
    )
    expect(html(assistant)).to_have_attribute("data-pc-answering", "false")
    context.unroute(origins.assistant + "/agent")
    ask(assistant, "And now?", until="done")
