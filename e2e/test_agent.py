"""The assistant answers in real frames: the built-in agent over AG-UI, an external
agent set with --agent-url, tasks pinned while an answer runs, revocation, live values
against the snapshot, the business action confirmed by the user, and failures shown."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import FrameLocator, Locator, Page, Route, expect

from .agents import SLOW_PARTS, ExternalAgent
from .conftest import STEP_TIMEOUT_MS, Origins, wait_bound
from .helpers import (
    OTHER_ROW,
    ROW,
    admin,
    ask,
    assistant_timeouts,
    diagnose_now,
    html,
    open_preview,
    panel,
    pin,
    preview_text,
    select_and_ask,
    show_and_expect,
    system_colour,
    worker_report,
)

QUESTION = "Why is this row so high?"
# The business layer's deadline, and a margin for a loaded machine.
ACTION_TIMEOUT_MS = 10_000 + STEP_TIMEOUT_MS


@pytest.fixture
def agent_demo(page: Page, agent_origins: Origins) -> Iterator[tuple[Page, ExternalAgent]]:
    """The demo whose assistant calls the test's external AG-UI agent."""
    agent = agent_origins.agent
    assert agent is not None
    agent.reset()
    page.goto(agent_origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    yield page, agent
    agent.reset()


# --- the built-in agent -----------------------------------------------------------------


def test_the_answer_streams_in_explains_the_row_and_highlights_it(demo: Page) -> None:
    """The built-in agent explains the pinned row; its three highlights are applied."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    answer = ask(assistant, QUESTION)
    text = answer.locator("[data-pc-answer-text]")
    expect(text).to_contain_text(f"About {ROW} (North, 2026-03)")
    expect(text).to_contain_text("North sold 4,231 units in 2026-03, 2.94 times its average")
    expect(answer).to_have_attribute("data-pc-answer-about", ROW)
    # The agent's highlight tool calls became commands, applied on the page.
    commands = assistant.locator('[data-pc-log-kind="command"]')
    expect(commands).to_have_count(3)
    for index in range(3):
        expect(commands.nth(index)).to_have_attribute(
            "data-pc-log-status", "applied", timeout=STEP_TIMEOUT_MS
        )
    expect(demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')).to_have_attribute(
        "data-pc-highlight", "focus"
    )
    related = demo.locator('[data-pc-highlight="related"]')
    expect(related).to_have_count(2)
    # Heard as well as seen: each highlight's words, by its tone.
    expect(demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')).to_have_attribute(
        "aria-description", "Highlighted by the assistant"
    )
    for index in range(2):
        expect(related.nth(index)).to_have_attribute(
            "aria-description", "Marked as related by the assistant"
        )
    expect(html(assistant)).to_have_attribute("data-pc-answering", "false")


def test_an_answer_about_another_row_takes_the_earlier_answers_marks_away(demo: Page) -> None:
    """Two questions about two rows: once the second answer's highlights are drawn, the
    page shows its three marks only, one of them `focus`, and none of the first answer's
    (docs/protocol.md 8.15)."""
    assistant = panel(demo)
    marks = demo.locator("[data-pc-highlight]")
    pin(demo, assistant, ROW)
    ask(assistant, QUESTION)
    expect(marks).to_have_count(3, timeout=STEP_TIMEOUT_MS)
    pin(demo, assistant, OTHER_ROW)
    ask(assistant, QUESTION)
    expect(demo.locator(f'tr[data-pc-resource-ref="{OTHER_ROW}"]')).to_have_attribute(
        "data-pc-highlight", "focus", timeout=STEP_TIMEOUT_MS
    )
    expect(marks).to_have_count(3, timeout=STEP_TIMEOUT_MS)
    expect(demo.locator('[data-pc-highlight="focus"]')).to_have_count(1)
    expect(demo.locator(f'[data-pc-resource-ref="{ROW}"][data-pc-highlight]')).to_have_count(0)


@pytest.mark.scenario(5)
def test_after_a_revoke_the_answer_says_access_revoked_without_the_snapshot(
    demo: Page, origins: Origins
) -> None:
    """Scenario 5: access revoked on the server after the selection was made."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    admin(origins, "DELETE", "/admin/grants", {"user": "ana", "region": "North"})
    try:
        answer = ask(assistant, QUESTION)
    finally:
        admin(origins, "POST", "/admin/grants", {"user": "ana", "region": "North"})
    text = answer.locator("[data-pc-answer-text]")
    expect(text).to_contain_text(f"Access denied: I could not read {ROW}")
    expect(text).to_contain_text("revoked")
    expect(text).not_to_contain_text("4,231")
    expect(text).not_to_contain_text("4231")
    expect(assistant.locator('[data-pc-log-kind="command"]')).to_have_count(0)
    expect(demo.locator("[data-pc-highlight]")).to_have_count(0)


@pytest.mark.scenario(7)
def test_a_value_changed_on_the_server_is_stated_with_both_times(
    demo: Page, origins: Origins
) -> None:
    """Scenario 7: the answer states what the user saw and the live value, with when."""
    assistant = panel(demo)
    chip = pin(demo, assistant, ROW)
    observed_at = chip.locator(".pc-chip-meta time").get_attribute("datetime")
    admin(origins, "POST", f"/admin/sales/{ROW}", {"unitsSold": 5000})
    try:
        answer = ask(assistant, QUESTION)
    finally:
        admin(origins, "POST", f"/admin/sales/{ROW}", {"unitsSold": 4231})
    text = answer.locator("[data-pc-answer-text]")
    expect(text).to_contain_text(f"You saw 4,231 units at {observed_at}; the live value read at ")
    expect(text).to_contain_text("is 5,000 units")
    expect(text).to_contain_text("I use the live values")


@pytest.mark.scenario(8)
def test_a_highlight_applied_is_no_business_success_and_the_flag_needs_the_user(
    demo: Page, origins: Origins
) -> None:
    """Scenario 8: the highlights are applied and nothing is written; the flag happens
    only when the user confirms, and shows success only from the server's answer."""
    assistant = panel(demo)
    # The session's one server keeps the flags of the tests before this one.
    before = admin(origins, "GET", "/admin/flags")["flags"]
    assert isinstance(before, list)
    pin(demo, assistant, ROW)
    ask(assistant, QUESTION)
    proposal = assistant.locator('[data-pc-log-kind="action"]')
    expect(proposal).to_have_attribute("data-pc-action-state", "proposed")
    expect(proposal).to_have_attribute("data-pc-action-ref", ROW)
    expect(assistant.locator('[data-pc-log-status="applied"]')).to_have_count(3)
    assert admin(origins, "GET", "/admin/flags")["flags"] == before

    # From the keyboard: the entry keeps the focus when it is redrawn, and its outcome
    # is said through the panel's status region.
    proposal.get_by_role("button", name="Flag for review").press("Enter")
    expect(proposal).to_have_attribute("data-pc-action-state", "applied", timeout=STEP_TIMEOUT_MS)
    flags = admin(origins, "GET", "/admin/flags")["flags"]
    assert isinstance(flags, list)
    [flag] = [f for f in flags if isinstance(f, dict) and f not in before]
    assert (flag["ref"], flag["user"]) == (ROW, "ana")
    expect(proposal.locator("[data-pc-action-status]")).to_contain_text(f"flag {flag['id']}")
    expect(proposal).to_be_focused()
    expect(assistant.locator("[data-pc-announce]")).to_have_text(
        f"Flagged for review by the server (flag {flag['id']})."
    )


@pytest.mark.scenario(8)
def test_a_flag_the_server_never_answers_is_unconfirmed_never_success(
    demo: Page, origins: Origins
) -> None:
    """Scenario 8: no answer from the action API shows `unconfirmed`; the server checked
    says "not flagged yet" while the request is held, and "flagged later" once it is
    written: never success."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    ask(assistant, QUESTION)
    proposal = assistant.locator('[data-pc-log-kind="action"]')
    stall = origins.flag_stall
    stall.arm()
    try:
        proposal.get_by_role("button", name="Flag for review").click()
        expect(proposal).to_have_attribute("data-pc-action-state", "pending")
        expect(proposal).to_have_attribute(
            "data-pc-action-state", "unconfirmed", timeout=ACTION_TIMEOUT_MS
        )
        assert stall.held == 1
        status = proposal.locator("[data-pc-action-status]")
        expect(status).to_contain_text("may or may not")
        # A check that gets no usable answer says so, changes nothing else, and may be
        # asked again.
        check = proposal.get_by_role("button", name="Check with the server")
        failing = "**/api/actions/flags?*"
        demo.route(failing, lambda route: route.fulfill(status=503, body="{}"))
        check.click()
        expect(status).to_contain_text(
            "The last check got no answer from the server (http-503): check again.",
            timeout=STEP_TIMEOUT_MS,
        )
        demo.unroute(failing)
        expect(status).to_contain_text("may or may not")
        expect(status).not_to_contain_text("The server says")
        expect(proposal).to_have_attribute("data-pc-action-state", "unconfirmed")
        # The user asks the server what happened: the request is still held, so nothing
        # is flagged, and the answer is recorded late; it is never success. The failed
        # check's line goes with it.
        check.click()
        expect(status).to_contain_text(
            "The server says it is not flagged yet.", timeout=STEP_TIMEOUT_MS
        )
        expect(status).not_to_contain_text("The last check")
        expect(proposal).to_have_attribute("data-pc-action-state", "unconfirmed")
        # The held request is written once the server goes on (it waited for a lock, say):
        # asked again, the server has the flag, which is the last word.
        stall.release()
        assert stall.finished.wait(timeout=STEP_TIMEOUT_MS / 1000)
        check.click()
        expect(status).to_contain_text(
            "The server says it was flagged later", timeout=STEP_TIMEOUT_MS
        )
        expect(proposal).to_have_attribute("data-pc-action-state", "unconfirmed")
        expect(check).to_have_count(0)
    finally:
        stall.release()
        # The held request goes on once released: let it end before the next test.
        finished = stall.finished.wait(timeout=STEP_TIMEOUT_MS / 1000)
    assert finished, "the held flag request never ended once released"


def test_a_flag_request_a_gateway_failed_after_the_server_wrote_it_is_unconfirmed(
    demo: Page, origins: Origins
) -> None:
    """The server writes the flag, and the gateway in front of it answers 502: the panel
    says the server failed and the row may or may not be flagged (not that the server
    refused), and a check finds the flag."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    ask(assistant, QUESTION)
    proposal = assistant.locator('[data-pc-log-kind="action"]').last
    before = admin(origins, "GET", "/admin/flags")["flags"]
    flag_request = "**/api/actions/flag"

    def written_then_failed(route: Route) -> None:
        assert route.fetch().status == 201
        route.fulfill(status=502, body="<html>Bad Gateway</html>")

    demo.route(flag_request, written_then_failed)
    try:
        proposal.get_by_role("button", name="Flag for review").click()
        expect(proposal).to_have_attribute(
            "data-pc-action-state", "unconfirmed", timeout=STEP_TIMEOUT_MS
        )
    finally:
        demo.unroute(flag_request)
    status = proposal.locator("[data-pc-action-status]")
    expect(status).to_have_text(
        "Unconfirmed: the server failed (http-502). It may or may not be flagged."
    )
    flags = admin(origins, "GET", "/admin/flags")["flags"]
    assert isinstance(flags, list)
    [flag] = [f for f in flags if isinstance(f, dict) and f not in before]
    assert (flag["ref"], flag["user"]) == (ROW, "ana")
    proposal.get_by_role("button", name="Check with the server").click()
    expect(status).to_contain_text(
        f"The server says it was flagged later (flag {flag['id']}).", timeout=STEP_TIMEOUT_MS
    )
    expect(proposal).to_have_attribute("data-pc-action-state", "unconfirmed")


@pytest.mark.parametrize(
    ("failure", "state", "said"),
    [
        (
            "unreachable",
            "unconfirmed",
            "Not flagged from here: the server did not answer the request to confirm it"
            " (unreachable), so no flag was asked for. Ask the assistant again to flag it.",
        ),
        (
            "http-503",
            "rejected",
            "Not flagged: the server failed to confirm it (http-503), so no flag was asked"
            " for. Ask the assistant again to flag it.",
        ),
    ],
)
def test_a_flag_whose_confirmation_failed_was_never_asked_for_and_is_offered_again(
    demo: Page, origins: Origins, failure: str, state: str, said: str
) -> None:
    """The server cannot be reached, or fails, when the user confirms: no confirmation
    comes, so no flag is asked for, and the panel says so (not "may or may not be
    flagged", nor that the server refused). Asked again, the agent proposes it again,
    and that one flags the row."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    ask(assistant, QUESTION)
    proposals = assistant.locator('[data-pc-log-kind="action"]')
    expect(proposals).to_have_count(1)
    first = proposals.nth(0)
    before = admin(origins, "GET", "/admin/flags")["flags"]
    confirmations = "**/api/actions/flag/confirmations"

    def fail(route: Route) -> None:
        if failure == "unreachable":
            route.abort("connectionrefused")
        else:
            route.fulfill(status=503, body="")

    demo.route(confirmations, fail)
    first.get_by_role("button", name="Flag for review").click()
    expect(first).to_have_attribute("data-pc-action-state", state, timeout=STEP_TIMEOUT_MS)
    status = first.locator("[data-pc-action-status]")
    expect(status).to_have_text(said)
    assert admin(origins, "GET", "/admin/flags")["flags"] == before
    demo.unroute(confirmations)

    answer = ask(assistant, QUESTION)
    expect(answer.locator("[data-pc-answer-text]")).to_contain_text(
        "I propose flagging it for review"
    )
    expect(proposals).to_have_count(2)
    again = proposals.nth(1)
    again.get_by_role("button", name="Flag for review").click()
    expect(again).to_have_attribute("data-pc-action-state", "applied", timeout=STEP_TIMEOUT_MS)
    flags = admin(origins, "GET", "/admin/flags")["flags"]
    assert isinstance(flags, list)
    [flag] = [f for f in flags if isinstance(f, dict) and f not in before]
    assert (flag["ref"], flag["user"]) == (ROW, "ana")
    # The first proposal still says what became of it.
    expect(status).to_have_text(said)


# In the assistant's frame: while `window.__held` is an array, the worker's panel states
# are kept there instead of drawn, until `window.__release()` draws them (a state that
# has arrived and is not drawn yet, as on a busy main thread). Other messages pass.
HOLD_STATES = """
if (location.pathname === "/assistant.html") {
  const add = Worker.prototype.addEventListener;
  window.__held = null;
  Worker.prototype.addEventListener = function (type, listener, options) {
    if (type !== "message") return add.call(this, type, listener, options);
    return add.call(this, type, (event) => {
      if (window.__held && event.data && event.data.kind === "state") {
        window.__held.push(() => listener(event));
        return;
      }
      listener(event);
    }, options);
  };
  window.__release = () => {
    const held = window.__held || [];
    window.__held = null;
    for (const draw of held) draw();
  };
}
"""


@pytest.mark.scenario(6)
def test_a_question_sent_as_a_new_context_arrives_comes_back_unasked(
    page: Page, origins: Origins
) -> None:
    """The panel shows row A's chip; row B's context has reached the assistant's worker
    but is not drawn yet when the user sends: nothing is asked (no question in the log),
    the question is back in its field and the panel says why; once B's chip is drawn,
    the question sent again is about B."""
    page.context.add_init_script(HOLD_STATES)
    page.goto(origins.page + "/")
    assistant = panel(page)
    wait_bound(page)
    wait_bound(assistant)
    pin(page, assistant, ROW)
    frame = next(f for f in page.frames if f.url.startswith(origins.assistant))
    frame.evaluate("() => { window.__held = []; }")
    select_and_ask(page, OTHER_ROW)
    # The worker posts its state once it has committed B: that state is held.
    frame.wait_for_function("() => window.__held.length > 0", polling=20)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible()
    question = "Why is this row so high?"
    assistant.locator("[data-pc-question]").fill(question)
    assistant.get_by_role("button", name="Send").click()
    expect(assistant.locator("[data-pc-announce]")).to_contain_text(
        "Not sent", timeout=STEP_TIMEOUT_MS
    )
    expect(assistant.locator("[data-pc-question]")).to_have_value(question)
    expect(assistant.locator('[data-pc-log-kind="question"]')).to_have_count(0)
    frame.evaluate("() => window.__release()")
    expect(assistant.locator(f'[data-pc-chip="{OTHER_ROW}"]')).to_be_visible(
        timeout=STEP_TIMEOUT_MS
    )
    answer = ask(assistant, question)
    expect(answer).to_have_attribute("data-pc-answer-about", OTHER_ROW)
    expect(assistant.locator('[data-pc-log-kind="question"]')).to_have_count(1)


def test_a_new_conversation_takes_its_answers_highlights_off_the_page(demo: Page) -> None:
    """The built-in agent's answer highlights three rows; New conversation clears the
    answer in the panel and takes those highlights, and what a screen reader hears of
    them, off the page; the page is told once (`pagecontext:conversation`), and the
    user's selection stays."""
    demo.evaluate(
        """() => { window.__pcConversations = [];
             document.addEventListener("pagecontext:conversation",
               (event) => window.__pcConversations.push(event.detail)); }"""
    )
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    ask(assistant, QUESTION)
    marked = demo.locator("[data-pc-highlight]")
    expect(marked).to_have_count(3, timeout=STEP_TIMEOUT_MS)
    assistant.get_by_role("button", name="New conversation").click()
    expect(assistant.locator('[data-pc-log-kind="answer"]')).to_have_count(0)
    expect(marked).to_have_count(0, timeout=STEP_TIMEOUT_MS)
    expect(demo.locator("[aria-description]")).to_have_count(0)
    expect(demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')).to_have_attribute(
        "aria-selected", "true"
    )
    conversation = html(assistant).get_attribute("data-pc-conversation")
    assert demo.evaluate("window.__pcConversations") == [{"conversationId": conversation}]


def test_a_user_may_decline_and_nothing_is_sent(demo: Page, origins: Origins) -> None:
    """A declined flag writes nothing, and the focus rests on the entry that says so; a
    follow-up about the row does not propose it again."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    ask(assistant, QUESTION)
    proposals = assistant.locator('[data-pc-log-kind="action"]')
    expect(proposals).to_have_attribute("data-pc-action-state", "proposed")
    before = admin(origins, "GET", "/admin/flags")["flags"]
    proposals.get_by_role("button", name="Not now").press("Enter")
    expect(proposals).to_have_attribute("data-pc-action-state", "declined", timeout=STEP_TIMEOUT_MS)
    assert admin(origins, "GET", "/admin/flags")["flags"] == before
    # The pressed button is gone: the focus is on the entry, read whole with its outcome.
    expect(proposals).to_be_focused()
    expect(proposals.locator("[data-pc-action-status]")).to_have_text("Not flagged: you declined.")
    # A follow-up about the row is answered without proposing the flag again.
    again = ask(assistant, "And compared with May?")
    expect(again.locator("[data-pc-answer-text]")).to_contain_text(
        "which I proposed earlier in this conversation"
    )
    expect(proposals).to_have_count(1)


# --- an external AG-UI agent (--agent-url) ------------------------------------------------


def test_the_panel_says_an_answer_is_running_and_keeps_a_question_sent_meanwhile(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """Heard as well as seen: an answer that starts is announced; a question sent while
    it runs is not sent and says so, and stays in its field for later; the end of the
    answer is announced too."""
    demo, agent = agent_demo
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    agent.gate.clear()
    answer = ask(assistant, QUESTION, until="running")
    announce = assistant.locator("[data-pc-announce]")
    expect(announce).to_have_text("The assistant is answering…")
    field = assistant.locator("[data-pc-question]")
    field.fill("And meanwhile?")
    assistant.get_by_role("button", name="Send").press("Enter")
    expect(announce).to_contain_text("still answering")
    expect(field).to_have_value("And meanwhile?")
    agent.gate.set()
    expect(answer).to_have_attribute("data-pc-answer-state", "done", timeout=STEP_TIMEOUT_MS)
    # Said with what it answered, for a user who hears rather than reads the log.
    said = answer.locator("[data-pc-answer-text]").text_content() or ""
    expect(announce).to_have_text(f"The assistant answered: {said}")
    expect(assistant.locator('[data-pc-log-kind="question"]')).to_have_count(1)


def test_forced_colours_keep_the_connection_dots_the_progress_and_the_answers_box(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """In forced colours (a Windows contrast theme), which drop fills: each frame's
    connection dot stays, a disc in the text's colour once bound; a running answer's
    progress dot stays; and the answer's box, drawn by its fill alone, keeps a border."""
    demo, agent = agent_demo
    demo.emulate_media(forced_colors="active")
    assistant = panel(demo)
    ink = system_colour(demo, "CanvasText")
    assert ink != system_colour(demo, "Canvas")
    for frame in (demo, assistant):
        expect(frame.locator(".pc-dot")).to_have_css("background-color", ink)
    pin(demo, assistant, ROW)
    agent.gate.clear()
    answer = ask(assistant, QUESTION, until="running")
    progress = answer.locator(".pc-progress").evaluate(
        "(el) => getComputedStyle(el, '::before').backgroundColor"
    )
    assert progress == ink, progress
    agent.gate.set()
    expect(answer).to_have_attribute("data-pc-answer-state", "done", timeout=STEP_TIMEOUT_MS)
    expect(answer).to_have_css("border-top-style", "solid")
    expect(answer).to_have_css("border-top-color", ink)


def test_the_user_stops_a_running_answer_and_asks_again_at_once(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """Stop, shown beside Send while an answer runs: the answer ends at once as the
    user's stop (no alert), Stop goes, the focus waits in the question's field, and the
    assistant is free again: New conversation is on, and the next question is answered.
    Stop is not there before an answer runs, nor after; holding the focus as an answer
    ends by itself, it hands the focus to the field."""
    demo, agent = agent_demo
    assistant = panel(demo)
    stop = assistant.get_by_role("button", name="Stop")
    expect(stop).to_be_hidden()
    pin(demo, assistant, ROW)
    agent.gate.clear()
    answer = ask(assistant, QUESTION, until="running")
    stop.focus()
    stop.press("Enter")
    expect(answer).to_have_attribute("data-pc-answer-state", "failed", timeout=STEP_TIMEOUT_MS)
    stopped = answer.locator("[data-pc-answer-error]")
    expect(stopped).to_have_attribute("data-pc-answer-error", "stopped")
    expect(stopped).to_have_text("You stopped this answer.")
    expect(stopped).not_to_have_attribute("role", "alert")
    # Heard all the same, once, in the panel's status (the focus is in the field).
    expect(assistant.locator("[data-pc-announce]")).to_have_text("You stopped this answer.")
    expect(answer.locator(".pc-note")).to_have_count(0)
    expect(stop).to_be_hidden()
    expect(assistant.locator("[data-pc-question]")).to_be_focused()
    expect(assistant.locator("[data-pc-new-conversation]")).not_to_have_attribute(
        "aria-disabled", "true"
    )
    again = ask(assistant, "Once more?", until="running")
    stop.focus()
    agent.gate.set()
    expect(again).to_have_attribute("data-pc-answer-state", "done", timeout=STEP_TIMEOUT_MS)
    expect(again.locator("[data-pc-answer-text]")).to_contain_text("External agent")
    expect(answer).to_have_attribute("data-pc-answer-state", "failed")
    # Stop held the focus as that answer ended by itself: it waits in the field.
    expect(stop).to_be_hidden()
    expect(assistant.locator("[data-pc-question]")).to_be_focused()


@pytest.mark.scenario(6)
def test_a_selection_while_the_answer_runs_never_retargets_it(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """Scenario 6 against the external agent: ask about A, select B while the answer is
    still running; the answer and its highlight stay on A; B goes with the next question."""
    demo, agent = agent_demo
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    agent.gate.clear()
    answer = ask(assistant, QUESTION, until="running")
    expect(html(assistant)).to_have_attribute("data-pc-answering", "true")
    send = assistant.get_by_role("button", name="Send")
    expect(send).to_be_disabled()
    # Disabled for the answer, but still where the user's focus is (aria-disabled).
    expect(send).to_be_focused()
    pin(demo, assistant, OTHER_ROW)
    agent.gate.set()
    expect(answer).to_have_attribute("data-pc-answer-state", "done", timeout=STEP_TIMEOUT_MS)
    expect(answer.locator("[data-pc-answer-text]")).to_contain_text(
        "External agent: about the row you selected"
    )
    # The panel says what the answer is about: A, as it was asked, not the B pinned since.
    expect(answer).to_have_attribute("data-pc-answer-about", ROW)
    expect(demo.locator('[data-pc-highlight="focus"]')).to_have_attribute(
        "data-pc-resource-ref", ROW, timeout=STEP_TIMEOUT_MS
    )
    expect(demo.locator(f'tr[data-pc-resource-ref="{OTHER_ROW}"]')).not_to_have_attribute(
        "data-pc-highlight", "focus"
    )
    follow_up = ask(assistant, "And this one?")
    expect(follow_up).to_have_attribute("data-pc-answer-about", OTHER_ROW)
    tasks = [
        next(c.value for c in run.context if c.description == "pagecontext.task")
        for run in agent.inputs
    ]
    assert [ROW in tasks[0], OTHER_ROW in tasks[1]] == [True, True]


# A password field in the row, which the user types into; the page then hands the
# row's form values with its selection, as a page keeping its own selection does.
TYPED_IN_THE_ROW = """ref => {
  const row = document.querySelector(`tr[data-pc-resource-ref="${ref}"]`);
  const cell = document.createElement("td");
  const field = document.createElement("input");
  Object.assign(field, {type: "password", name: "password"});
  field.setAttribute("aria-label", "Password");
  cell.append(field);
  row.append(cell);
}"""
SELECTED_WITH_THE_FORM = """ref => {
  const values = {region: "North", month: "2026-03", unitsSold: 4231,
                  password: document.querySelector("input[name=password]").value};
  document.dispatchEvent(new CustomEvent("pagecontext:select",
    {detail: {componentId: "sales-table", resourceRef: ref, values}}));
  document.dispatchEvent(new CustomEvent("pagecontext:share"));
}"""


@pytest.mark.scenario(21)
def test_a_secret_typed_into_the_page_never_reaches_the_panel_or_the_agent(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """A password typed into an unsaved field of the selected row and handed with the
    selection: the page does not declare it shareable, so it is in neither the chip, the
    panel's "What the AI sees" nor the run the agent gets, where the declared values
    are."""
    demo, agent = agent_demo
    demo.evaluate(TYPED_IN_THE_ROW, ROW)
    demo.get_by_label("Password").fill("hunter2")
    demo.evaluate(SELECTED_WITH_THE_FORM, ROW)
    assistant = panel(demo)
    chip = assistant.locator(f'[data-pc-chip="{ROW}"]')
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_text(
        "4231 units", timeout=STEP_TIMEOUT_MS
    )
    expect(chip).not_to_contain_text("hunter2")
    open_preview(assistant)
    expect(preview_text(assistant)).to_contain_text("4231")
    expect(preview_text(assistant)).not_to_contain_text("hunter2")
    ask(assistant, QUESTION)
    sent = agent.inputs[-1].model_dump_json()
    assert "4231" in sent
    assert "hunter2" not in sent
    assert "password" not in sent


def asked_to_refresh(
    assistant: FrameLocator, agent: ExternalAgent, status: str, reason: str
) -> None:
    """The agent asks for a refresh of the pinned row's table; its receipt in the panel's
    log is `status` (`reason`)."""
    agent.tool = "refresh"
    ask(assistant, QUESTION)
    command = assistant.locator('[data-pc-log-kind="command"]')
    expect(command).to_have_attribute("data-pc-log-status", status, timeout=STEP_TIMEOUT_MS)
    # A command on the whole table names no object before it (no " · ").
    expect(command.locator("p")).to_have_text(
        re.compile(rf"^[^·]*\[refresh: {status} \({reason}\)")
    )


def with_refresh_listener(
    agent_demo: tuple[Page, ExternalAgent], body: str, arg: object = None
) -> tuple[Page, FrameLocator, ExternalAgent]:
    """The demo with a row pinned, and a listener of `pagecontext:refresh` that keeps
    the demo's own from running and runs `body` (JavaScript, given `event` and `arg`)."""
    demo, agent = agent_demo
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    listener = "(arg) => window.addEventListener('pagecontext:refresh', (event) => {"
    demo.evaluate(listener + "event.stopPropagation();" + body + "}, {capture: true})", arg)
    return demo, assistant, agent


def test_a_refresh_the_page_takes_is_applied_at_its_next_render(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """The agent asks the table to refresh: the demo page takes the event, reloads, and
    its render makes the command `applied`."""
    demo, agent = agent_demo
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    asked_to_refresh(assistant, agent, "applied", "ok")


@pytest.mark.parametrize("when", ["later", "inside"])
def test_a_refresh_the_page_took_and_could_not_do_says_so(
    agent_demo: tuple[Page, ExternalAgent], when: str
) -> None:
    """The page takes the refresh (the demo's own reload never runs), its reload fails,
    and it answers with `pagecontext:command-done` (`not-found`, its reason), in a later
    task or inside its listener, with no render between: the command is `not-found` with
    that reason, and the answer is taken, not refused; a render after it changes
    nothing."""
    demo, assistant, agent = with_refresh_listener(
        agent_demo,
        """event.preventDefault();
           const detail = {commandId: event.detail.commandId, status: "not-found",
                           reason: "reload-failed"};
           const answer = () => document.dispatchEvent(
             new CustomEvent("pagecontext:command-done", {detail}));
           if (arg) answer(); else setTimeout(answer, 0);""",
        when == "inside",
    )
    asked_to_refresh(assistant, agent, "not-found", "reload-failed")
    assert html(demo).get_attribute("data-pc-refused-command-done") is None
    ignored = worker_report(demo.frames[1])["ignoredReceipts"]
    demo.locator('[data-pc-component="sales-table"]').evaluate(
        """(table) => table.dispatchEvent(new CustomEvent("pagecontext:rendered",
             {bubbles: true}))"""
    )
    diagnose_now(demo)
    # No second receipt: the assistant's ledger would ignore it, and count it.
    assert worker_report(demo.frames[1])["ignoredReceipts"] == ignored
    command = assistant.locator('[data-pc-log-kind="command"]')
    expect(command).to_have_attribute("data-pc-log-status", "not-found")


def test_a_refresh_nobody_takes_is_not_found_at_once(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """With the page's refresh listener kept from running, nothing takes the event: the
    command is `not-found` (`no-refresh`) at once, not left waiting for a render that the
    user might cause for another reason (another filter) and that would confirm it."""
    _demo, assistant, agent = with_refresh_listener(agent_demo, "")
    asked_to_refresh(assistant, agent, "not-found", "no-refresh")


def test_a_refresh_nobody_takes_is_not_confirmed_by_a_render_during_it(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """A listener that does not take the refresh (no preventDefault) but makes the table
    render while the event is dispatched, for its own reasons: nothing reloads for the
    command, so it is `not-found` (`no-refresh`), not confirmed by that render."""
    _demo, assistant, agent = with_refresh_listener(
        agent_demo,
        """event.target.dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));""",
    )
    asked_to_refresh(assistant, agent, "not-found", "no-refresh")


def test_a_refresh_whose_component_is_taken_off_inside_its_listener_is_not_found(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """The page takes the refresh and, inside its listener, takes the table off the page
    and has the chart report a render: the table is forgotten, and the refresh is
    `not-found` (`not-rendered`) at once, not left for a render that will not come."""
    _demo, assistant, agent = with_refresh_listener(
        agent_demo,
        """event.preventDefault();
           event.target.remove();
           document.querySelector('[data-pc-component="sales-chart"]')
             .dispatchEvent(new CustomEvent("pagecontext:rendered"));""",
    )
    asked_to_refresh(assistant, agent, "not-found", "not-rendered")


# A component of its own, with no refresh of its own, and a listener on the document
# that takes every refresh that reaches it.
NOTES = """() => {
  const notes = document.createElement("div");
  Object.assign(notes.dataset, {pcComponent: "notes", pcPage: "notes", pcFilters: "{}",
    pcGeneration: "1", pcShareable: "name"});
  const note = document.createElement("p");
  Object.assign(note.dataset, {pcResourceRef: "n:1", pcValues: JSON.stringify({name: "n"})});
  note.textContent = "n";
  notes.append(note);
  document.body.append(notes);
  notes.dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
  document.addEventListener("pagecontext:refresh", (event) => event.preventDefault());
}"""


def test_a_refresh_is_for_its_component_alone(agent_demo: tuple[Page, ExternalAgent]) -> None:
    """`pagecontext:refresh` does not bubble: a listener on the document, which would
    take any refresh, never sees the one for a component that has no refresh of its
    own, and the command is `not-found` (`no-refresh`) at once."""
    demo, agent = agent_demo
    demo.evaluate(NOTES)
    assistant = panel(demo)
    demo.locator('[data-pc-resource-ref="n:1"]').click()
    demo.get_by_role("button", name="Ask AI").click()
    expect(assistant.locator('[data-pc-chip="n:1"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    asked_to_refresh(assistant, agent, "not-found", "no-refresh")


def typing_as_the_agent_locates(
    demo: Page, agent: ExternalAgent
) -> tuple[FrameLocator, Locator, Locator]:
    """Pin ROW and ask; the agent's answer, held until `agent.gate` is set, will locate
    it. The user types "And the" in the panel's field meanwhile. Returns the panel, its
    field and the answer's entry."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    agent.tool = "locate"
    agent.gate.clear()
    answer = ask(assistant, QUESTION, until="running")
    field = assistant.locator("[data-pc-question]")
    field.scroll_into_view_if_needed()
    field.press_sequentially("And the")
    return assistant, field, answer


def test_the_agents_locate_leaves_the_focus_in_the_question_being_typed(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """The user types the next question while the answer runs, and the answer locates
    the pinned row: the row is shown (`applied`), and the keyboard's focus stays in the
    panel's field, where the rest of the question goes (docs/protocol.md 8.16). Show me,
    the user's own press, still moves it to the row."""
    demo, agent = agent_demo
    demo.evaluate(
        """() => { window.__pcLocates = [];
          document.addEventListener("pagecontext:command", (event) => {
            if (event.detail.action === "locate") window.__pcLocates.push(event.detail.focus);
          }); }"""
    )
    assistant, field, answer = typing_as_the_agent_locates(demo, agent)
    # The page scrolled to its end: the row is out of view, the panel (sticky) in it.
    demo.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    expect(row).not_to_be_in_viewport()
    agent.gate.set()
    expect(answer).to_have_attribute("data-pc-answer-state", "done", timeout=STEP_TIMEOUT_MS)
    command = assistant.locator('[data-pc-log-kind="command"]')
    expect(command).to_have_attribute("data-pc-log-status", "applied", timeout=STEP_TIMEOUT_MS)
    expect(command.locator("p")).to_contain_text("Shown on the page [locate: applied (ok)]")
    expect(row).to_be_in_viewport()
    expect(row).not_to_be_focused()
    expect(field).to_be_focused()
    field.press_sequentially(" others?")
    expect(field).to_have_value("And the others?")
    show_and_expect(assistant, "applied")
    expect(row).to_be_focused()
    # What a page that carries out commands itself is told of each (`focus`).
    assert demo.evaluate("window.__pcLocates") == ["keep", None]


def test_the_agents_locate_does_not_scroll_the_question_being_typed_out_of_view(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """On a narrow screen the panel is below the table: the user types the next question
    while the answer runs, and the answer locates the pinned row, far above. Scrolling
    to it would take the field out of view, so nothing scrolls: the `ui` receipt is
    `not-found` (`not-scrolled`), and the field stays in view, with the focus
    (docs/protocol.md 8.16)."""
    demo, agent = agent_demo
    demo.set_viewport_size({"width": 390, "height": 720})
    assistant, field, answer = typing_as_the_agent_locates(demo, agent)
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    expect(row).not_to_be_in_viewport()
    scrolled = demo.evaluate("scrollY")
    agent.gate.set()
    expect(answer).to_have_attribute("data-pc-answer-state", "done", timeout=STEP_TIMEOUT_MS)
    command = assistant.locator('[data-pc-log-kind="command"]')
    expect(command).to_have_attribute("data-pc-log-status", "not-found", timeout=STEP_TIMEOUT_MS)
    expect(command.locator("p")).to_contain_text("[locate: not-found (not-scrolled)]")
    assert demo.evaluate("scrollY") == scrolled
    expect(field).to_be_in_viewport()
    expect(field).to_be_focused()


def test_a_character_cut_between_two_deltas_is_shown_whole(
    agent_demo: tuple[Page, ExternalAgent],
) -> None:
    """An agent that cuts a character in two between two text deltas, and sends a lone
    half: the answer shows the character whole and the half as U+FFFD, and the
    assistant's worker reads nothing it left out of its snapshot to do so."""
    demo, agent = agent_demo
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    agent.mode = "split-character"
    answer = ask(assistant, QUESTION)
    expect(answer.locator("[data-pc-answer-text]")).to_have_text(
        "Sales \U0001f4c8 up, a stray \ufffd half."
    )
    expect(answer).to_have_attribute("data-pc-answer-state", "done")
    # The assistant's worker: the one not on the page's origin.
    worker = next(w for w in demo.workers if not w.url.startswith(demo.url))
    read = worker.evaluate(
        "() => ['stdlib-loaded', 'site-packages-loaded']"
        ".filter((step) => performance.getEntriesByName(`pagecontext:${step}`).length)"
    )
    assert read == []


# The assistant's `timeouts.agentIdleMs` in the two tests below: shorter than the slow
# answer (`SLOW_PARTS`, 0.5 s apart: 3 s), longer than each of its pauses.
AGENT_IDLE_MS = 1500


@pytest.fixture
def idle_limited(page: Page, agent_origins: Origins) -> Iterator[tuple[Page, ExternalAgent]]:
    """The demo with the external agent, its assistant configured with
    `timeouts.agentIdleMs` = AGENT_IDLE_MS, a row pinned."""
    agent = agent_origins.agent
    assert agent is not None
    agent.reset()

    page.context.route(
        f"{agent_origins.assistant}/assistant.html*", assistant_timeouts(agentIdleMs=AGENT_IDLE_MS)
    )
    page.goto(agent_origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    pin(page, panel(page), ROW)
    yield page, agent
    agent.reset()


def test_an_answer_that_keeps_streaming_runs_past_the_silence_limit(
    idle_limited: tuple[Page, ExternalAgent],
) -> None:
    """An agent that streams its answer for longer than the assistant lets it stay
    silent, never silent that long, is answered in full: the limit is on silence, not on
    an answer's length."""
    page, agent = idle_limited
    agent.mode = "slow"
    answer = ask(panel(page), QUESTION)
    expect(answer.locator("[data-pc-answer-text]")).to_have_text("".join(SLOW_PARTS).strip())


def test_an_agent_silent_past_the_limit_fails_the_answer_as_a_timeout(
    idle_limited: tuple[Page, ExternalAgent],
) -> None:
    """An agent that began its answer and then sends nothing for the assistant's
    `timeouts.agentIdleMs` fails it `timeout`, saying how long it was silent; the user
    can ask again."""
    page, agent = idle_limited
    agent.gate.clear()
    failed = ask(panel(page), QUESTION, until="failed")
    expect(failed.locator("[data-pc-answer-error]")).to_have_attribute(
        "data-pc-answer-error", "timeout"
    )
    expect(failed.locator(".pc-note")).to_contain_text("the agent sent nothing for 1.5 s")
    expect(failed.get_by_role("button", name="Ask again")).to_be_visible()


@pytest.mark.parametrize(
    ("mode", "error", "shown", "note"),
    [
        ("forbidden", "http-403", "HTTP 403", '{"error":"forbidden"}'),
        ("html-error", "http-501", "HTTP 501", "its answer was text/html, not shown"),
        ("malformed", "malformed-stream", "broke the protocol", None),
        ("no-cors", "agent-unreachable", "could not reach its agent", "no CORS answer"),
        ("broken-off", "incomplete", "answer was cut off", None),
        (
            "json-answer",
            "malformed-stream",
            "broke the protocol",
            "the agent answered application/json, not text/event-stream",
        ),
    ],
)
def test_a_failed_answer_is_shown_and_the_conversation_is_kept(
    agent_demo: tuple[Page, ExternalAgent], mode: str, error: str, shown: str, note: str | None
) -> None:
    """A failed answer says what happened (an error body only if it is JSON or text, an
    error page's markup never), and nothing already in the conversation is lost."""
    demo, agent = agent_demo
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    first = ask(assistant, QUESTION)
    expect(first.locator("[data-pc-answer-text]")).to_contain_text("External agent")
    agent.mode = mode  # type: ignore[assignment]  # one of the modes above
    failed = ask(assistant, "And now?", until="failed")
    expect(failed.locator("[data-pc-answer-error]")).to_have_attribute(
        "data-pc-answer-error", error
    )
    expect(failed.locator("[role=alert]")).to_contain_text(shown)
    if note is not None:
        expect(failed.locator(".pc-note")).to_contain_text(note)
    # Nothing already in the conversation is lost, and the user can ask again: the
    # failed answer's "Ask again" puts its question back in the field, with the focus.
    expect(assistant.locator('[data-pc-log-kind="question"]')).to_have_count(2)
    expect(first).to_have_attribute("data-pc-answer-state", "done")
    expect(first.get_by_role("button", name="Ask again")).to_have_count(0)
    # A question the user is writing meanwhile is kept, and the panel says so.
    field = assistant.locator("[data-pc-question]")
    field.fill("Something else")
    failed.get_by_role("button", name="Ask again").click()
    expect(field).to_have_value("Something else")
    expect(assistant.locator("[data-pc-announce]")).to_contain_text("Not replaced")
    field.fill("")
    failed.get_by_role("button", name="Ask again").click()
    expect(field).to_have_value("And now?")
    expect(field).to_be_focused()
    agent.mode = "answer"
    ask(assistant, "Once more?")


def test_an_agent_url_the_policy_does_not_allow_is_named_as_a_cause(
    page: Page, agent_origins: Origins
) -> None:
    """An assistant page whose `agentUrl` names an origin its connect-src does not (the
    config changed after the build, as a deployment filling the page may do) fails
    `agent-unreachable`, and the note names the policy among the causes: the browser
    reports the block as it reports a missing CORS answer."""
    elsewhere = agent_origins.third + "/agent"

    def move_the_agent(route: Route) -> None:
        answer = route.fetch()
        body = re.sub(r'"agentUrl": "[^"]*"', f'"agentUrl": "{elsewhere}"', answer.text())
        route.fulfill(response=answer, body=body)

    page.route(agent_origins.assistant + "/assistant.html*", move_the_agent)
    page.goto(agent_origins.page + "/")
    wait_bound(page)
    assistant = panel(page)
    wait_bound(assistant)
    pin(page, assistant, ROW)
    failed = ask(assistant, QUESTION, until="failed")
    expect(failed.locator("[data-pc-answer-error]")).to_have_attribute(
        "data-pc-answer-error", "agent-unreachable"
    )
    expect(failed.locator(".pc-note")).to_contain_text(elsewhere)
    expect(failed.locator(".pc-note")).to_contain_text("connect-src")
