"""Steps the browser suites share: select and ask, show, wait for receipts, ask the
agent, and the loopback-only admin API."""

from __future__ import annotations

import json
import urllib.request

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


def ask(assistant: Page | FrameLocator, question: str, *, until: str = "done") -> Locator:
    """Type and send `question`; return its answer's entry once its state is `until`
    ("running", "done" or "failed"). The question's own entry is shown first."""
    questions = assistant.locator('[data-pc-log-kind="question"]')
    answers = assistant.locator('[data-pc-log-kind="answer"]')
    before = questions.count(), answers.count()
    assistant.locator("[data-pc-question]").fill(question)
    assistant.get_by_role("button", name="Send").click()
    expect(questions.nth(before[0])).to_contain_text(question, timeout=STEP_TIMEOUT_MS)
    answer = answers.nth(before[1])
    expect(answer).to_have_attribute("data-pc-answer-state", until, timeout=STEP_TIMEOUT_MS)
    return answer


def question_entry(assistant: Page | FrameLocator, index: int = -1) -> Locator:
    """The conversation's question entry at `index` (default: the last)."""
    questions = assistant.locator('[data-pc-log-kind="question"]')
    return questions.last if index == -1 else questions.nth(index)


def admin(origins: Origins, method: str, path: str, body: object = None) -> dict[str, object]:
    """Call the page origin's loopback-only admin API from this process; return its JSON."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        origins.page + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    assert isinstance(answer, dict)
    return answer
