"""The composer in real frames: chips the user removes stay removed, the question sends
exactly the text "What the AI sees" shows, follow-ups do not resend, and a reloaded
assistant restores its conversation without sending anything to the page."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Locator, Page, expect

from pagecontext import integration

from .conftest import STEP_TIMEOUT_MS, Origins, wait_bound
from .helpers import (
    OTHER_ROW,
    ROW,
    ask,
    diagnose_now,
    html,
    navigate_soon,
    open_preview,
    open_workbench,
    panel,
    pin,
    preview_text,
    question_entry,
    saved_state_key,
    select_and_ask,
    show_and_expect,
    worker_report,
)


def sent_text(entry: Locator) -> str:
    return entry.locator("pre").text_content() or ""


@pytest.mark.scenario(23)
def test_a_removed_chip_stays_removed_when_the_page_sends_the_row_again(demo: Page) -> None:
    """Remove the chip: the row leaves "What the AI sees"; asking about the same row again
    (a new revision) brings no chip back; another row does; "Bring it back" restores. The
    panel's status says each outcome of Ask AI (to a user who cannot see the chip)."""
    assistant = panel(demo)
    announce = assistant.locator("[data-pc-announce]")
    select_and_ask(demo, ROW)
    chip = assistant.locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_be_visible(timeout=STEP_TIMEOUT_MS)
    expect(announce).to_have_text(f"Context added: {ROW}")
    preview = assistant.locator("[data-pc-preview]")
    expect(preview).to_have_attribute("data-pc-preview-composed", "false")
    open_preview(assistant)
    expect(preview_text(assistant)).to_contain_text(ROW)
    chip.get_by_role("button", name="Remove context").click()
    expect(assistant.locator("[data-pc-chip]")).to_have_count(0, timeout=STEP_TIMEOUT_MS)
    expect(preview_text(assistant)).to_have_text("")
    expect(assistant.locator("[data-pc-dismissed]")).to_be_visible()

    select_and_ask(demo, ROW)
    expect(html(assistant)).to_have_attribute("data-pc-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(assistant.locator("[data-pc-chip]")).to_have_count(0)
    expect(preview_text(assistant)).to_have_text("")
    expect(assistant.get_by_role("button", name="Show me")).to_be_disabled()
    expect(announce).to_have_text(re.compile(r"^The context you removed stays out"))
    # Where the chip was, the panel asks for something else: Ask AI on this row keeps it out.
    expect(assistant.locator("[data-pc-chips]")).to_have_text(
        "Removed. Select something else on the page and press “Ask AI”."
    )

    select_and_ask(demo, OTHER_ROW)
    expect(assistant.locator(f'[data-pc-chip="{OTHER_ROW}"]')).to_be_visible(
        timeout=STEP_TIMEOUT_MS
    )
    expect(announce).to_have_text(f"Context added: {OTHER_ROW}")
    select_and_ask(demo, ROW)
    expect(html(assistant)).to_have_attribute("data-pc-revision", "4", timeout=STEP_TIMEOUT_MS)
    assistant.get_by_role("button", name="Bring it back").click()
    expect(chip).to_be_visible(timeout=STEP_TIMEOUT_MS)
    expect(assistant.locator("[data-pc-dismissed]")).to_be_hidden()


def test_the_keyboard_focus_follows_a_removed_and_restored_chip(demo: Page) -> None:
    """Removing the chip from the keyboard leaves the focus on "Bring it back", and that
    hands it to the chip it restored: never to the page's body. The chip is a group named
    for its object, and its remove button names it too."""
    assistant = panel(demo)
    select_and_ask(demo, ROW)
    chip = assistant.get_by_role("group", name=f"Context: {ROW}")
    expect(chip).to_be_visible(timeout=STEP_TIMEOUT_MS)
    chip.get_by_role("button", name=f"Remove context: {ROW}", exact=True).press("Enter")
    expect(chip).to_have_count(0, timeout=STEP_TIMEOUT_MS)
    bring_back = assistant.get_by_role("button", name="Bring it back")
    expect(bring_back).to_be_focused()
    bring_back.press("Enter")
    expect(chip).to_be_focused(timeout=STEP_TIMEOUT_MS)
    expect(assistant.locator("[data-pc-dismissed]")).to_be_hidden()


def test_the_panel_never_takes_the_focus_from_the_page(demo: Page) -> None:
    """The chip holds the panel's focus (clicked); the user goes back to the page and
    asks about another row: the new chip is drawn, and the page keeps the focus."""
    assistant = panel(demo)
    select_and_ask(demo, ROW)
    chip = assistant.locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_be_visible(timeout=STEP_TIMEOUT_MS)
    chip.locator(".pc-chip-title").click()
    expect(chip).to_be_focused()
    select_and_ask(demo, OTHER_ROW)
    expect(assistant.locator(f'[data-pc-chip="{OTHER_ROW}"]')).to_be_visible(
        timeout=STEP_TIMEOUT_MS
    )
    assert demo.evaluate("() => document.hasFocus()"), "the panel took the page's focus"
    expect(demo.get_by_role("button", name="Ask AI")).to_be_focused()


def test_a_question_sends_exactly_what_the_ai_sees_and_a_follow_up_only_itself(
    demo: Page,
) -> None:
    """The text sent is the preview, a blank line, the question; a follow-up about the
    same row sends the question alone, and the preview is then empty."""
    assistant = panel(demo)
    select_and_ask(demo, ROW)
    open_preview(assistant)
    expect(preview_text(assistant)).to_contain_text("<pagecontext-data>", timeout=STEP_TIMEOUT_MS)
    preview = preview_text(assistant).text_content() or ""
    ask(assistant, "Why is this row so high?")
    assert sent_text(question_entry(assistant)) == preview + "\n\nWhy is this row so high?"
    expect(preview_text(assistant)).to_have_text("")
    ask(assistant, "And compared with April?")
    assert sent_text(question_entry(assistant)) == "And compared with April?"


def test_a_question_the_assistant_does_not_take_goes_back_to_its_field_with_why(
    demo: Page,
) -> None:
    """A question longer than the assistant takes (4,001 characters, set by script past
    the field's maxlength): nothing is asked, the question goes back to its field, and
    the panel says why, where it said nothing before, and says it again when sent again."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    frame = next(f for f in demo.frames if f is not demo.main_frame)
    frame.evaluate(
        """() => {
          document.querySelector("[data-pc-question]").value = "x".repeat(4001);
          document.querySelector("[data-pc-send]").click();
        }"""
    )
    expect(assistant.locator("[data-pc-announce]")).to_have_text(
        "Not sent: a question has 1 to 4000 characters.", timeout=STEP_TIMEOUT_MS
    )
    assert len(assistant.locator("[data-pc-question]").input_value()) == 4001
    expect(assistant.locator('[data-pc-log-kind="question"]')).to_have_count(0)
    # Sent again: the same words are said again, so the live region's text changes (a
    # no-break space added or taken away), or a screen reader would say nothing.
    announce = assistant.locator("[data-pc-announce]")
    first = announce.evaluate("(el) => el.textContent")
    frame.evaluate('() => document.querySelector("[data-pc-send]").click()')
    expect(announce).not_to_have_js_property("textContent", first, timeout=STEP_TIMEOUT_MS)
    expect(announce).to_have_text("Not sent: a question has 1 to 4000 characters.")


def test_a_question_typed_and_not_sent_is_back_in_its_field_after_a_reload(
    page: Page, origins: Origins
) -> None:
    """Workbench: a question typed in the panel and not sent is back in its field after
    the assistant reloads. One that was sent is not: the field is empty after the next
    reload. Another user's is removed with that user's saved state
    (`test_another_users_saved_conversation_is_never_shown_and_is_removed`)."""
    business = open_workbench(page, origins)
    typed = "Why is this row so high?\nCompare it with March."
    page.locator("[data-pc-question]").fill(typed)
    page.reload()
    wait_bound(page)
    expect(page.locator("[data-pc-question]")).to_have_value(typed, timeout=STEP_TIMEOUT_MS)
    pin(business, page, ROW)
    ask(page, "Sent, so not kept")
    expect(page.locator("[data-pc-question]")).to_have_value("")
    page.reload()
    wait_bound(page)
    expect(page.locator('[data-pc-log-kind="question"]')).to_have_count(1, timeout=STEP_TIMEOUT_MS)
    expect(page.locator("[data-pc-question]")).to_have_value("")


def test_a_new_conversation_clears_the_log_and_the_page_follows_it(demo: Page) -> None:
    """Ask about a row, then press "New conversation": the log is empty, the panel names
    the new conversation, the chip stays, the focus on a cleared entry goes to the
    question, and the next question carries the row's block again; its answer's
    highlights, stamped with the new conversation, are applied."""
    assistant = panel(demo)
    pin(demo, assistant, ROW)
    ask(assistant, "Why is this row so high?")
    commands = assistant.locator('[data-pc-log-kind="command"]')
    expect(commands).to_have_count(3, timeout=STEP_TIMEOUT_MS)  # the answer's highlights
    log = assistant.locator("[data-pc-log-kind]")
    before = html(assistant).get_attribute("data-pc-conversation")
    assert before
    # Show me, and New conversation pressed before its receipts are in: refused, said,
    # and the commands' receipts are taken (a new conversation would refuse them).
    frame = next(f for f in demo.frames if f is not demo.main_frame)
    frame.evaluate(
        """() => {
          document.querySelector("[data-pc-show]").click();
          document.querySelector("[data-pc-new-conversation]").click();
        }"""
    )
    expect(assistant.locator("[data-pc-announce]")).to_contain_text("Not yet")
    expect(assistant.locator("[data-pc-receipt]")).to_have_attribute(
        "data-pc-receipt-status", "applied", timeout=STEP_TIMEOUT_MS
    )
    button = assistant.get_by_role("button", name="New conversation")
    expect(button).to_have_attribute("aria-disabled", "false")
    assert html(assistant).get_attribute("data-pc-conversation") == before
    # Pressed twice (by script, the focus left on the first entry of the log): the
    # second press finds nothing to clear, and the focus goes from the cleared entry to
    # the question, not to the panel's body.
    frame.evaluate(
        """() => {
          document.querySelector("[data-pc-log-kind]").focus();
          const button = document.querySelector("[data-pc-new-conversation]");
          button.click();
          button.click();
        }"""
    )
    expect(html(assistant)).not_to_have_attribute("data-pc-conversation", before)
    expect(log).to_have_count(0, timeout=STEP_TIMEOUT_MS)
    expect(assistant.locator("[data-pc-question]")).to_be_focused()
    expect(assistant.locator("[data-pc-announce]")).to_contain_text("A new conversation")
    expect(assistant.locator("[data-pc-receipt]")).to_have_text("")
    diagnose_now(frame)
    expect(html(assistant)).to_have_attribute("data-pc-port-refused", "0")
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible()
    # The first answer's marks, taken off the page, so that those of the next answer are
    # told apart from them.
    marked = demo.locator("[data-pc-highlight]")
    demo.evaluate(
        "() => document.querySelectorAll('[data-pc-highlight]')"
        ".forEach((element) => element.removeAttribute('data-pc-highlight'))"
    )
    expect(marked).to_have_count(0)
    ask(assistant, "Why is this row so high?")
    sent = sent_text(question_entry(assistant))
    assert ROW in sent, sent
    assert sent.endswith("\n\nWhy is this row so high?"), sent
    expect(commands).to_have_count(3, timeout=STEP_TIMEOUT_MS)
    for index in range(3):
        expect(commands.nth(index)).to_have_attribute(
            "data-pc-log-status", "applied", timeout=STEP_TIMEOUT_MS
        )
    expect(marked).to_have_count(3)


@pytest.mark.scenario(23, 24)
def test_a_reloaded_assistant_restores_its_conversation_and_sends_nothing(
    page: Page, origins: Origins
) -> None:
    """Workbench: ask, show (applied), reload the assistant. The question and the command
    come back, the command with the receipt it had; none is sent to the new page again
    (a later Show me's commands are the only ones it gets), and the restored task's
    context is not sent again."""
    business = open_workbench(page, origins)
    select_and_ask(business, ROW)
    expect(page.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    ask(page, "Why is this row so high?")
    show_and_expect(page, "applied")
    # The answer's three highlights, then Show me's highlight and locate.
    commands = page.locator('[data-pc-log-kind="command"]')
    expect(commands).to_have_count(5)
    for index in range(5):
        expect(commands.nth(index)).to_have_attribute(
            "data-pc-log-status", "applied", timeout=STEP_TIMEOUT_MS
        )

    page.reload()
    wait_bound(page)
    wait_bound(business)
    restored = page.locator('[data-pc-log-kind="command"][data-pc-log-restored="true"]')
    expect(restored).to_have_count(5, timeout=STEP_TIMEOUT_MS)
    expect(restored.first).to_have_attribute("data-pc-log-status", "applied")
    expect(page.locator('[data-pc-log-kind="answer"][data-pc-answer-state="done"]')).to_have_count(
        1
    )
    expect(page.locator('[data-pc-log-kind="question"]')).to_have_count(1)
    expect(page.locator(f'[data-pc-chip="{ROW}"]')).to_have_attribute(
        "data-pc-chip-restored", "true"
    )
    open_preview(page)
    expect(preview_text(page)).to_have_text("")
    expect(html(business)).to_have_attribute("data-pc-state", "bound")
    # Show me: the pinned context is of the page before the reload, so its two commands
    # (highlight, locate) are stale there. They travel the port after anything the
    # restored assistant would have sent, and once both receipts are in, the page's
    # worker reports what it received: the new page got exactly those two, and applied
    # none.
    show_and_expect(page, "stale-context")
    shown = page.locator('[data-pc-log-kind="command"]:not([data-pc-log-restored])')
    expect(shown).to_have_count(2, timeout=STEP_TIMEOUT_MS)
    for index in range(2):
        expect(shown.nth(index)).to_have_attribute(
            "data-pc-log-status", "stale-context", timeout=STEP_TIMEOUT_MS
        )
    frame = next(f for f in page.frames if f.url.startswith(origins.page))
    report = worker_report(frame)
    assert report["commands"] == {"page-instance": 2}, report
    expect(business.locator("[data-pc-highlight]")).to_have_count(0)
    expect(restored).to_have_count(5)
    for index in range(5):
        expect(restored.nth(index)).to_have_attribute("data-pc-log-status", "applied")


SAVED_HOLDS = """([storage, key, text]) => (window[storage].getItem(key) || "").includes(text)"""


# At the start of each document: this tab's saved state under `key`, as saved by a log
# that no longer keeps the conversation's earliest entries.
SAVED_WITH_EARLIER = """
(() => {
  const key = %s;
  const text = sessionStorage.getItem(key);
  if (text === null) return;
  const saved = JSON.parse(text);
  saved.composer.earlier = true;
  sessionStorage.setItem(key, JSON.stringify(saved));
})();
"""


def test_a_log_that_no_longer_keeps_its_earliest_entries_says_so(
    page: Page, origins: Origins
) -> None:
    """Workbench: a conversation whose log no longer keeps its earliest entries (its
    saved state says so) says it above the log once restored, and a new conversation
    starts without it."""
    business = open_workbench(page, origins)
    key = saved_state_key(page)
    note = page.locator("[data-pc-log-earlier]")
    pin(business, page, ROW)
    ask(page, "asked before")
    expect(note).to_be_hidden()
    page.wait_for_function(SAVED_HOLDS, arg=["sessionStorage", key, "asked before"])
    page.add_init_script(SAVED_WITH_EARLIER % json.dumps(key))
    page.reload()
    wait_bound(page)
    expect(page.locator('[data-pc-log-kind="question"]')).to_have_count(1, timeout=STEP_TIMEOUT_MS)
    expect(note).to_be_visible()
    expect(note).to_contain_text("Earlier parts of this conversation are no longer kept")
    page.get_by_role("button", name="New conversation").click()
    expect(page.locator('[data-pc-log-kind="question"]')).to_have_count(0, timeout=STEP_TIMEOUT_MS)
    expect(note).to_be_hidden()


def test_two_tabs_keep_their_own_conversations_and_a_new_tab_continues_the_latest(
    page: Page, origins: Origins
) -> None:
    """Workbench in two tabs: the second continues the first's conversation and asks on;
    a reload of the first shows its own conversation, not the one the second tab saved
    after it; a new tab continues the latest saved. Each tab's conversation (the agent's
    thread) is its own: a tab that continues another's log goes on under a new id, and a
    reload keeps its tab's."""
    first = open_workbench(page, origins)
    key = saved_state_key(page)
    conversation = html(page).get_attribute("data-pc-conversation")
    pin(first, page, ROW)
    ask(page, "asked in the first tab")
    page.wait_for_function(SAVED_HOLDS, arg=["sessionStorage", key, "asked in the first tab"])
    other = page.context.new_page()
    second = open_workbench(other, origins)
    expect(other.locator('[data-pc-log-kind="question"]')).to_have_count(1)
    pin(second, other, OTHER_ROW)
    ask(other, "asked in the second tab")
    other.wait_for_function(SAVED_HOLDS, arg=["localStorage", key, "asked in the second tab"])
    continued = html(other).get_attribute("data-pc-conversation")
    assert conversation
    assert continued
    assert continued != conversation

    page.reload()
    wait_bound(page)
    questions = page.locator('[data-pc-log-kind="question"]')
    expect(questions).to_have_count(1, timeout=STEP_TIMEOUT_MS)
    expect(questions).to_contain_text("asked in the first tab")
    expect(html(page)).to_have_attribute("data-pc-conversation", conversation)

    third = page.context.new_page()
    open_workbench(third, origins)
    questions = third.locator('[data-pc-log-kind="question"]')
    expect(questions).to_have_count(2, timeout=STEP_TIMEOUT_MS)
    expect(questions.last).to_contain_text("asked in the second tab")
    assert html(third).get_attribute("data-pc-conversation") not in (conversation, continued)


# Storage that refuses every write, as a browser blocking third-party storage does,
# until the test calls `window.allowStorage()`.
DENY_STORAGE = """
const setItem = Storage.prototype.setItem;
Object.defineProperty(Storage.prototype, "setItem", {
  configurable: true,
  value() { throw new DOMException("storage is denied", "SecurityError"); },
});
window.allowStorage = () => Object.defineProperty(Storage.prototype, "setItem", {
  configurable: true, value: setItem,
});
"""


def test_an_assistant_whose_storage_is_denied_says_so_and_keeps_working(
    page: Page, origins: Origins
) -> None:
    """A panel whose writes to localStorage throw marks `data-pc-storage="unavailable"`
    on its first save, and the conversation goes on in memory: the chip, Show me.
    Reloaded, it has nothing saved and comes back in a new conversation: the page takes
    the highlight Show me drew away (docs/protocol.md 8.14), and keeps the selection."""
    page.context.add_init_script(DENY_STORAGE)
    page.goto(origins.page + "/")
    wait_bound(page)
    assistant = panel(page)
    wait_bound(assistant)
    select_and_ask(page, ROW)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    expect(html(assistant)).to_have_attribute(
        "data-pc-storage", "unavailable", timeout=STEP_TIMEOUT_MS
    )
    # The user is told, in words.
    note = assistant.locator("[data-pc-storage-note]")
    expect(note).to_be_visible()
    expect(note).to_contain_text("not being saved")
    show_and_expect(assistant, "applied")
    row = page.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    expect(row).to_have_attribute("data-pc-highlight", "focus")
    child = next(frame for frame in page.frames if frame.url.startswith(origins.assistant))
    navigate_soon(child, "location.reload()")
    wait_bound(page, connection=2)
    expect(row).not_to_have_attribute("data-pc-highlight", re.compile(".*"))
    expect(row).to_have_attribute("aria-selected", "true")


def test_a_panel_denied_its_storage_says_so_before_anything_is_saved(
    demo: Page,
) -> None:
    """The demo's panel is framed by another site, and this browser denies it its
    storage: it says so as it starts, before the first save (a selection), so that a
    question typed first, or a panel reloaded into an empty conversation, is not lost
    without a word."""
    assistant = panel(demo)
    expect(html(assistant)).to_have_attribute(
        "data-pc-storage", "unavailable", timeout=STEP_TIMEOUT_MS
    )
    expect(assistant.locator("[data-pc-storage-note]")).to_contain_text("not being saved")
    expect(assistant.locator("[data-pc-chip]")).to_have_count(0)


def test_storage_that_comes_back_is_used_again(page: Page, origins: Origins) -> None:
    """Workbench (the assistant is the top document, so it may store): while writes
    throw, the panel says `data-pc-storage="unavailable"`; once a save succeeds again
    the mark goes and the conversation is stored."""
    page.context.add_init_script(DENY_STORAGE)
    business = open_workbench(page, origins)
    select_and_ask(business, ROW)
    expect(page.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    expect(html(page)).to_have_attribute("data-pc-storage", "unavailable", timeout=STEP_TIMEOUT_MS)
    page.evaluate("() => window.allowStorage()")
    show_and_expect(page, "applied")
    expect(html(page)).not_to_have_attribute(
        "data-pc-storage", "unavailable", timeout=STEP_TIMEOUT_MS
    )
    expect(page.locator("[data-pc-storage-note]")).to_be_hidden()
    saved = page.evaluate("key => localStorage.getItem(key)", saved_state_key(page))
    assert isinstance(saved, str), saved
    assert ROW in saved, saved


# Another user's saved conversation in this browser (under the key of other credentials),
# and one saved without an owner, before the workbench boots.
OTHERS_SAVED = """
if (location.pathname === "/workbench.html" && !sessionStorage.getItem("planted")) {
  sessionStorage.setItem("planted", "1");
  for (const key of KEYS) {
    localStorage.setItem(key, STATE);
    sessionStorage.setItem(key, STATE);
    sessionStorage.setItem(key + ":draft", "a question the other user typed");
  }
}
"""


def test_another_users_saved_conversation_is_never_shown_and_is_removed(
    page: Page, origins: Origins
) -> None:
    """The browser holds a conversation saved by another user of the workbench (other
    credentials) and one saved under the key without an owner, each with a question
    typed and not sent: the assistant shows none of them and starts its own
    conversation, and all are gone from storage, which holds only this user's."""
    first = open_workbench(page, origins)
    key = saved_state_key(page)
    pin(first, page, ROW)
    ask(page, "a question of the other user's")
    page.wait_for_function(SAVED_HOLDS, arg=["localStorage", key, "of the other user's"])
    state = page.evaluate("key => localStorage.getItem(key)", key)
    config = json.loads(page.evaluate("() => document.getElementById('pc-config').textContent"))
    others = [
        integration.saved_state_key(
            integration.parse_config({**config, "authorization": "Bearer someone-else"})
        ),
        integration.SAVED_STATE_PREFIX,
    ]
    assert key not in others
    # Off the workbench (a document of its origin with no assistant), so nothing saves
    # this user's state again once storage is cleared.
    page.goto(origins.assistant + "/web/styles.css")
    page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
    page.add_init_script(
        OTHERS_SAVED.replace("KEYS", json.dumps(others)).replace("STATE", json.dumps(state))
    )
    open_workbench(page, origins)
    assert page.evaluate("() => sessionStorage.getItem('planted')") == "1"
    expect(html(page)).to_have_attribute("data-pc-state", "bound")
    expect(page.locator('[data-pc-log-kind="question"]')).to_have_count(0)
    expect(page.locator(f'[data-pc-chip="{ROW}"]')).to_have_count(0)
    expect(page.locator("[data-pc-question]")).to_have_value("")
    left = page.evaluate(
        """() => [localStorage, sessionStorage].flatMap((store) =>
             Object.keys(store).filter((k) => k.startsWith("pagecontext:assistant")))"""
    )
    assert set(left) <= {key}, left


# Unmounts the embed and mounts it again with the config block's config, in this document.
MOUNT_AGAIN = """async () => {
  const embed = await import("/web/boot.mjs");
  const config = JSON.parse(document.getElementById("pc-config").textContent);
  embed.unmount();
  await embed.mount(config);
}"""


# Unmounts the embed and mounts it again knowing no user: no owner, no credentials.
MOUNT_FOR_NOBODY = """async () => {
  const embed = await import("/web/boot.mjs");
  const config = JSON.parse(document.getElementById("pc-config").textContent);
  embed.unmount();
  await embed.mount({...config, owner: "", authorization: "", agentAuthorization: ""});
}"""


def test_an_assistant_that_knows_no_user_saves_nothing(page: Page, origins: Origins) -> None:
    """An assistant given neither an owner nor credentials (a sign-in by cookie that set
    no `owner`) would save one conversation for every user of the browser: it saves
    nothing, says so, and removes what earlier users left."""
    first = open_workbench(page, origins)
    key = saved_state_key(page)
    select_and_ask(first, ROW)
    page.wait_for_function(SAVED_HOLDS, arg=["localStorage", key, ROW])
    page.evaluate(MOUNT_FOR_NOBODY)
    wait_bound(page)
    business = page.frame_locator("iframe[data-pc-child]")
    wait_bound(business, connection=2)
    select_and_ask(business, OTHER_ROW)
    expect(page.locator(f'[data-pc-chip="{OTHER_ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    expect(html(page)).to_have_attribute("data-pc-storage", "unavailable", timeout=STEP_TIMEOUT_MS)
    expect(page.locator("[data-pc-storage-note]")).to_be_visible()
    saved = page.evaluate(
        """() => [localStorage, sessionStorage].flatMap((store) =>
             Object.keys(store).filter((k) => k.startsWith("pagecontext:assistant")))"""
    )
    assert saved == [], saved


def test_an_assistant_mounted_again_shows_its_conversation_once(
    page: Page, origins: Origins
) -> None:
    """Workbench: Show me (a highlight and a locate in the conversation), then unmount and
    mount the assistant again in the same document: it binds its page again and shows the
    restored conversation once, not beside what the last mount drew."""
    business = open_workbench(page, origins)
    select_and_ask(business, ROW)
    expect(page.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(page, "applied")
    commands = page.locator('[data-pc-log-kind="command"]')
    expect(commands).to_have_count(2)
    page.evaluate(MOUNT_AGAIN)
    wait_bound(page)
    # The business page stays loaded: a fresh nonce in its URL's fragment makes it
    # announce itself again, and it binds a second connection.
    wait_bound(business, connection=2)
    restored = page.locator('[data-pc-log-kind="command"][data-pc-log-restored="true"]')
    expect(restored).to_have_count(2, timeout=STEP_TIMEOUT_MS)
    expect(commands).to_have_count(2)
