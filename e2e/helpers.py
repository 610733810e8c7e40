"""Steps the browser suites share: select and ask, show, wait for receipts."""

from __future__ import annotations

from playwright.sync_api import FrameLocator, Locator, Page, expect

from .conftest import STEP_TIMEOUT_MS, Origins, wait_bound

ROW = "sales-2026-03-north"
OTHER_ROW = "sales-2026-05-east"


def panel(page: Page) -> FrameLocator:
    """The assistant panel of the demo page."""
    return page.frame_locator("iframe[data-pc-assistant]")


def select_and_ask(page: Page | FrameLocator, ref: str) -> None:
    """Click the row `ref`, then "Ask AI"."""
    page.locator(f'tr[data-pc-resource-ref="{ref}"]').click()
    page.get_by_role("button", name="Ask AI").click()


def receipt(assistant: Page | FrameLocator) -> Locator:
    return assistant.locator("[data-pc-receipt]")


def show_and_expect(assistant: Page | FrameLocator, status: str) -> None:
    """Press Show me and wait for the receipt status the panel then shows."""
    assistant.get_by_role("button", name="Show me").click()
    expect(receipt(assistant)).to_have_attribute(
        "data-pc-receipt-status", status, timeout=STEP_TIMEOUT_MS
    )


def html(target: Page | FrameLocator) -> Locator:
    return target.locator("html")


def open_workbench(page: Page, origins: Origins) -> FrameLocator:
    """Open the assistant workbench, wait until it and its business page are bound, and
    return the business page's frame."""
    page.goto(origins.assistant + "/workbench.html")
    business = page.frame_locator("iframe[data-pc-child]")
    wait_bound(page)
    wait_bound(business)
    return business
