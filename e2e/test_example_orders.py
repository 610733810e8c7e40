"""The orders example (web/examples/orders.html), a page built only from the documented
integration surface: select an order, ask about it, and have the assistant show it."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .conftest import STEP_TIMEOUT_MS, Origins, wait_bound
from .helpers import ask, html, panel, question_entry, receipt, show_and_expect

ORDER = "order-1042"


def open_orders(page: Page, origins: Origins) -> None:
    """Open the example and wait until it and its assistant are bound."""
    page.goto(origins.page + "/examples/orders.html")
    wait_bound(page)
    wait_bound(panel(page))


def test_select_ask_and_show_an_order(page: Page, origins: Origins) -> None:
    """Click an order and ask: the chip shows what the page lists for it, with the total
    in EUR; a question sends that order's block; Show me is `applied`, and the page drew
    the highlight itself and pagecontext moved focus to the order."""
    open_orders(page, origins)
    item = page.locator(f'#orders-list [data-pc-resource-ref="{ORDER}"]')
    item.click()
    expect(page.locator("#order-detail")).to_have_attribute("data-order", ORDER)
    page.get_by_role("button", name="Ask AI").click()
    assistant = panel(page)
    chip = assistant.locator(f'[data-pc-chip="{ORDER}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="customer"]')).to_have_text("ACME GmbH")
    expect(chip.locator('[data-pc-chip-field="total"]')).to_have_text("1250.5 EUR")

    ask(assistant, "Why is this order still open?", until="done")
    sent = question_entry(assistant).locator("pre").text_content() or ""
    assert ORDER in sent
    assert '"customer":"ACME GmbH"' in sent

    show_and_expect(assistant, "applied")
    expect(item).to_have_class("is-pointed-at")
    expect(item).to_be_focused()
    expect(page.locator("[data-pc-highlight]")).to_have_count(0)


def test_the_keyboard_selection_reaches_the_assistant_and_a_filter_makes_it_stale(
    page: Page, origins: Origins
) -> None:
    """Arrow keys move the page's own selection, which it reports with
    `pagecontext:select`: the assistant gets the order the page shows. After the user
    filters the list, Show me for that order is `stale-context`, and nothing is drawn."""
    open_orders(page, origins)
    page.locator("#orders-list").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#order-detail")).to_have_attribute("data-order", ORDER)
    expect(html(page)).to_have_attribute("data-pc-revision", "2")
    page.get_by_role("button", name="Ask AI").click()
    assistant = panel(page)
    chip = assistant.locator(f'[data-pc-chip="{ORDER}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="status"]')).to_have_text("open")

    page.locator("#orders-status").select_option("shipped")
    expect(page.locator("#orders-list [data-pc-resource-ref]")).to_have_count(2)
    assistant.get_by_role("button", name="Show me").click()
    expect(receipt(assistant)).to_have_attribute(
        "data-pc-receipt-status", "stale-context", timeout=STEP_TIMEOUT_MS
    )
    expect(receipt(assistant)).to_contain_text("view-changed")
    expect(page.locator(".is-pointed-at")).to_have_count(0)
