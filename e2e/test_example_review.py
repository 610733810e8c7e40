"""The review example (web/examples/review.html), a page built only from the documented
integration surface: select a month, ask about it, and have the assistant show it."""

from __future__ import annotations

import json
import re

from playwright.sync_api import BrowserContext, Page, Worker, expect

from .conftest import STEP_TIMEOUT_MS, Origins, wait_bound
from .helpers import (
    ROW,
    ask,
    expect_no_csp_violations,
    html,
    panel,
    question_entry,
    receipt,
    show_and_expect,
    system_colour,
    watch_csp,
)

MONTHS = "#review-months"


def open_review(page: Page, origins: Origins) -> None:
    """Open the example and wait until it and its assistant are bound."""
    page.goto(origins.page + "/examples/review.html")
    wait_bound(page)
    wait_bound(panel(page))


def test_select_ask_and_show_a_month(page: Page, context: BrowserContext, origins: Origins) -> None:
    """Click a month and ask: the chip shows what the page shows for it (with its own
    change on the month before, in %); a question sends that month's block and the agent
    answers about it; Show me is `applied`, the page drew the highlight itself and
    pagecontext moved focus to the month. Under the page's Content-Security-Policy,
    nothing was refused."""
    watch_csp(context)
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    open_review(page, origins)
    item = page.locator(f'{MONTHS} [data-pc-resource-ref="{ROW}"]')
    seen = json.loads(item.get_attribute("data-pc-values") or "")
    item.click()
    expect(page.locator("#review-detail")).to_have_attribute("data-month", ROW)
    page.get_by_role("button", name="Ask AI").click()
    assistant = panel(page)
    chip = assistant.locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_text(
        f"{seen['revenueEur']} EUR"
    )
    expect(chip.locator('[data-pc-chip-field="changePct"]')).to_have_text(f"{seen['changePct']} %")

    answer = ask(assistant, "Why did this month change?")
    expect(answer).to_have_attribute("data-pc-answer-about", ROW)
    sent = question_entry(assistant).locator("pre").text_content() or ""
    assert f'"resourceRef":"{ROW}"' in sent
    assert '"component":"review-months"' in sent

    show_and_expect(assistant, "applied")
    expect(item).to_have_class("is-pointed-at")
    expect(item).to_be_focused()
    expect(page.locator("[data-pc-highlight]")).to_have_count(0)
    # A new conversation: the page takes away the marks it drew for the answers cleared
    # (`pagecontext:conversation`); the user's selection stays.
    assistant.get_by_role("button", name="New conversation").click()
    expect(page.locator(".is-pointed-at")).to_have_count(0, timeout=STEP_TIMEOUT_MS)
    expect(item).to_have_attribute("aria-current", "true")
    expect_no_csp_violations(page, workers)


def test_a_month_the_assistant_points_at_is_marked_and_the_users_selection_stays(
    page: Page, origins: Origins
) -> None:
    """The page takes the assistant's highlight of another month (its own
    `pagecontext:command` listener): that month is marked, while the detail, the
    current month and what Ask AI shares stay the one the user selected."""
    open_review(page, origins)
    months = page.locator(f"{MONTHS} [data-pc-resource-ref]")
    expect(months).to_have_count(12)
    chosen = months.nth(0)
    other = str(months.nth(3).get_attribute("data-pc-resource-ref"))
    chosen.click()
    selected = str(chosen.get_attribute("data-pc-resource-ref"))
    expect(page.locator("#review-detail")).to_have_attribute("data-month", selected)
    page.evaluate(
        """(ref) => document.dispatchEvent(new CustomEvent("pagecontext:command", {
             cancelable: true,
             detail: {commandId: "pointed", action: "highlight", componentId: "review-months",
                      resourceRef: ref, tone: "related"}}))""",
        other,
    )
    expect(page.locator(f'{MONTHS} [data-pc-resource-ref="{other}"]')).to_have_class(
        re.compile("is-pointed-at")
    )
    expect(page.locator("#review-detail")).to_have_attribute("data-month", selected)
    expect(chosen).to_have_attribute("aria-current", "true")
    # The selection's bar, of 3:1 against the list (its tint alone is not).
    expect(chosen).to_have_css("box-shadow", re.compile(r"rgb\(67, 56, 202\).*inset"))
    page.get_by_role("button", name="Ask AI").click()
    chip = panel(page).locator(f'[data-pc-chip="{selected}"]')
    expect(chip).to_be_visible(timeout=STEP_TIMEOUT_MS)


def test_forced_colours_show_the_selected_month_under_the_assistants_mark(
    page: Page, origins: Origins
) -> None:
    """In forced colours (a Windows contrast theme), which drop the selected month's
    tint: it takes the system's selected-item colours, also while the assistant's mark
    is on it."""
    page.emulate_media(forced_colors="active")
    open_review(page, origins)
    months = page.locator(f"{MONTHS} [data-pc-resource-ref]")
    chosen = months.nth(0)
    chosen.click()
    expect(chosen).to_have_attribute("aria-current", "true")
    selected = system_colour(page, "SelectedItem")
    expect(chosen).to_have_css("background-color", selected)
    expect(months.nth(3)).not_to_have_css("background-color", selected)
    page.get_by_role("button", name="Ask AI").click()
    assistant = panel(page)
    expect(assistant.locator("[data-pc-chip]")).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(assistant, "applied")
    expect(chosen).to_have_class(re.compile("is-pointed-at"))
    expect(chosen).to_have_css("background-color", selected)


def test_a_mark_for_another_selection_takes_the_other_marks_away(
    page: Page, origins: Origins
) -> None:
    """The page draws the assistant's marks itself: a highlight for another selection
    revision than its marks' (the command's `basisRevision`), newer or older, takes them
    away, one for the same revision adds to them (docs/protocol.md 8.15)."""
    open_review(page, origins)
    months = page.locator(f"{MONTHS} [data-pc-resource-ref]")
    expect(months).to_have_count(12)
    refs = [str(months.nth(index).get_attribute("data-pc-resource-ref")) for index in (1, 2, 3)]
    point = """([id, ref, revision]) => document.dispatchEvent(new CustomEvent(
         "pagecontext:command", {cancelable: true, detail: {commandId: id,
         action: "highlight", componentId: "review-months", resourceRef: ref,
         tone: "related", basisRevision: revision}}))"""
    page.evaluate(point, ["first", refs[0], 1])
    page.evaluate(point, ["newer", refs[1], 2])
    page.evaluate(point, ["same", refs[2], 2])
    pointed = page.locator(f"{MONTHS} .is-pointed-at")
    expect(pointed).to_have_count(2)
    expect(pointed.nth(0)).to_have_attribute("data-pc-resource-ref", refs[1])
    expect(pointed.nth(1)).to_have_attribute("data-pc-resource-ref", refs[2])
    page.evaluate(point, ["older", refs[0], 1])
    expect(pointed).to_have_count(1)
    expect(pointed).to_have_attribute("data-pc-resource-ref", refs[0])


def test_the_keyboard_selection_reaches_the_assistant_and_a_filter_makes_it_stale(
    page: Page, origins: Origins
) -> None:
    """Arrow keys move the page's own selection, which it reports with
    `pagecontext:select`: the assistant gets the month the page shows. After the user
    picks another region, Show me for that month is `stale-context`, nothing drawn."""
    open_review(page, origins)
    months = page.locator(f"{MONTHS} [data-pc-resource-ref]")
    expect(months).to_have_count(12)
    second = months.nth(1).get_attribute("data-pc-resource-ref")
    page.locator(MONTHS).focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#review-detail")).to_have_attribute("data-month", str(second))
    expect(html(page)).to_have_attribute("data-pc-revision", "2")
    page.get_by_role("button", name="Ask AI").click()
    assistant = panel(page)
    chip = assistant.locator(f'[data-pc-chip="{second}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="region"]')).to_have_text("North")

    page.locator("#review-region").select_option("East")
    expect(page.locator(f'{MONTHS} [data-pc-resource-ref="{second}"]')).to_have_count(0)
    assistant.get_by_role("button", name="Show me").click()
    expect(receipt(assistant)).to_have_attribute(
        "data-pc-receipt-status", "stale-context", timeout=STEP_TIMEOUT_MS
    )
    expect(receipt(assistant)).to_contain_text("view-changed")
    expect(page.locator(".is-pointed-at")).to_have_count(0)
