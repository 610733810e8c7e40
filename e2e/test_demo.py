"""The foundation slice in real Chromium frames on two origins: bind, select, ask,
show, honest receipts, and nothing applied to a page instance a command was not for."""

from __future__ import annotations

from urllib.parse import urlsplit

from playwright.sync_api import FrameLocator, Page, expect

from .conftest import BOOT_TIMEOUT_MS, STEP_TIMEOUT_MS, Origins, wait_bound

ROW = "sales-2026-03-north"


def panel(page: Page) -> FrameLocator:
    return page.frame_locator("iframe[data-pc-assistant]")


def select_and_ask(page: Page | FrameLocator, ref: str) -> None:
    page.locator(f'tr[data-pc-resource-ref="{ref}"]').click()
    page.get_by_role("button", name="Ask AI").click()


def test_both_frames_bind_and_the_nonce_leaves_the_url(demo: Page, origins: Origins) -> None:
    """The page and its assistant panel, on two origins, both reach `bound`; the child
    removed the single-use nonce from its URL."""
    expect(demo.locator("html")).to_have_attribute("data-pc-state", "bound")
    expect(panel(demo).locator("html")).to_have_attribute("data-pc-state", "bound")
    child = demo.frames[1]
    assert child.url == origins.assistant + "/assistant.html"
    assert demo.url == origins.page + "/"


def test_chip_shows_the_selected_row_as_the_user_saw_it(demo: Page) -> None:
    """Select a row, press Ask AI: the chip shows that row, its values with units, revision 1."""
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    units = row.locator('[data-pc-field="unitsSold"]').get_attribute("data-pc-value")
    revenue = row.locator('[data-pc-field="revenueEur"]').get_attribute("data-pc-value")
    select_and_ask(demo, ROW)
    chip = panel(demo).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_text(f"{units} units")
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_text(f"{revenue} EUR")
    expect(chip.locator('[data-pc-chip-field="region"]')).to_have_text("North")
    expect(chip).to_contain_text('from="2026-01"')


def test_show_me_highlights_the_row_with_an_applied_receipt(demo: Page) -> None:
    """Show me: the receipt is `applied` and exactly the pinned row carries the focus highlight."""
    select_and_ask(demo, ROW)
    assistant = panel(demo)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    assistant.get_by_role("button", name="Show me").click()
    expect(assistant.locator("[data-pc-receipt]")).to_have_attribute(
        "data-pc-receipt-status", "applied", timeout=STEP_TIMEOUT_MS
    )
    highlighted = demo.locator("[data-pc-highlight]")
    expect(highlighted).to_have_count(1)
    expect(highlighted).to_have_attribute("data-pc-resource-ref", ROW)
    expect(highlighted).to_have_attribute("data-pc-highlight", "focus")
    expect(highlighted).to_be_focused()


def test_selection_made_while_python_boots_is_not_lost(page: Page, origins: Origins) -> None:
    """A row selected and shared before the frames are bound reaches the assistant once they are."""
    page.goto(origins.page + "/")
    page.locator(f'tr[data-pc-resource-ref="{ROW}"]').wait_for(timeout=BOOT_TIMEOUT_MS)
    state_at_click = page.locator("html").get_attribute("data-pc-state")
    select_and_ask(page, ROW)
    wait_bound(page)
    chip = panel(page).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=BOOT_TIMEOUT_MS)
    # The worker takes seconds to boot, the edge milliseconds: the click came first.
    assert state_at_click in ("booting", "ready")


def test_commands_for_a_reloaded_page_are_stale_and_not_applied(
    page: Page, origins: Origins
) -> None:
    """The workbench keeps its pinned context while the page reloads: Show me then gets
    `stale-context` (page-instance) and nothing is highlighted on the new page."""
    page.goto(origins.assistant + "/workbench.html")
    child = page.frame_locator("iframe[data-pc-child]")
    wait_bound(page)
    wait_bound(child)
    select_and_ask(child, ROW)
    expect(page.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    page.get_by_role("button", name="Show me").click()
    expect(page.locator("[data-pc-receipt]")).to_have_attribute(
        "data-pc-receipt-status", "applied", timeout=STEP_TIMEOUT_MS
    )

    page.frames[1].evaluate("location.reload()")
    wait_bound(page, connection=2)
    wait_bound(child)
    expect(child.locator(f'tr[data-pc-resource-ref="{ROW}"]')).to_be_visible()
    page.get_by_role("button", name="Show me").click()
    receipt = page.locator("[data-pc-receipt]")
    expect(receipt).to_have_attribute(
        "data-pc-receipt-status", "stale-context", timeout=STEP_TIMEOUT_MS
    )
    expect(receipt).to_contain_text("page-instance")
    expect(child.locator("[data-pc-highlight]")).to_have_count(0)


def test_every_request_stays_on_this_machine(demo: Page, requests_stay_local: list[str]) -> None:
    """Runtimes, wheels and data all come from the two local origins (the guard fixture
    also fails any test whose browser reaches elsewhere)."""
    paths = {urlsplit(url).path for url in requests_stay_local}
    assert any(p.endswith("/pyodide.asm.wasm") for p in paths)
    assert any(p.endswith("/micropython.wasm") for p in paths)
    assert any("/wheels/" in p and "pydantic_core" in p for p in paths)
    hosts = {urlsplit(url).netloc for url in requests_stay_local if url.startswith("http")}
    assert {urlsplit(demo.url).netloc} < hosts
    assert all(host.split(":")[0] in ("127.0.0.1", "localhost") for host in hosts)
