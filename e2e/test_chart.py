"""The demo's chart as a first-class component: a mark the user clicks reaches the
assistant with the chart's title, the series, the month and the value with its unit;
highlight and locate work on marks through the same registry as the table's rows, and a
command for a mark the chart no longer draws is `not-found`."""

from __future__ import annotations

import json
import re

from playwright.sync_api import FrameLocator, Locator, Page, expect

from .conftest import STEP_TIMEOUT_MS, Origins
from .helpers import (
    ROW,
    html,
    open_preview,
    panel,
    preview_text,
    scripted_command,
    show_and_expect,
    use_scripted_assistant,
)

CHART = "#sales-chart"
EAST_ROW = "sales-2026-03-east"


def mark(page: Page, ref: str) -> Locator:
    """The chart's mark for `ref` (a bar segment: one sales row)."""
    return page.locator(f'{CHART} [data-pc-resource-ref="{ref}"]')


def mark_values(page: Page, ref: str) -> dict[str, object]:
    """What the mark shows, as the page published it on the mark."""
    values: dict[str, object] = json.loads(mark(page, ref).get_attribute("data-pc-values") or "")
    return values


def test_a_chart_mark_reaches_the_assistant_as_the_user_saw_it(demo: Page) -> None:
    """Click a bar segment, press Ask AI: the chip shows the chart's title, the series,
    the month and the revenue with its unit, and the context names the chart component."""
    title = demo.locator("#sales-chart-title").text_content()
    seen = mark_values(demo, ROW)
    mark(demo, ROW).click()
    demo.get_by_role("button", name="Ask AI").click()
    chip = panel(demo).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="chart"]')).to_have_text(str(title))
    expect(chip.locator('[data-pc-chip-field="series"]')).to_have_text(str(seen["series"]))
    expect(chip.locator('[data-pc-chip-field="month"]')).to_have_text(str(seen["month"]))
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_text(
        f"{seen['revenueEur']} EUR"
    )
    assert (seen["series"], seen["month"]) == ("North", "2026-03")
    open_preview(panel(demo))
    expect(preview_text(panel(demo))).to_contain_text('"component":"sales-chart"')


def test_show_me_highlights_and_locates_the_chart_mark(demo: Page) -> None:
    """Show me for a pinned chart mark: the receipt is `applied`, exactly that mark carries
    the focus highlight, drawn over its selection's mark, and has keyboard focus; the
    table's row of the same sales row is left alone."""
    mark(demo, ROW).click()
    demo.get_by_role("button", name="Ask AI").click()
    assistant = panel(demo)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(assistant, "applied")
    highlighted = demo.locator("[data-pc-highlight]")
    expect(highlighted).to_have_count(1)
    expect(mark(demo, ROW)).to_have_attribute("data-pc-highlight", "focus")
    expect(mark(demo, ROW)).to_be_focused()
    # The mark is also the selected one: its highlight is drawn over the selection's
    # thin dotted line, a solid 3px stroke.
    expect(mark(demo, ROW)).to_have_attribute("aria-selected", "true")
    expect(mark(demo, ROW)).to_have_css("stroke-width", "3px")
    expect(mark(demo, ROW)).to_have_css("stroke-dasharray", "none")


def chromium_name_and_description(page: Page, selector: str) -> tuple[str, str | None]:
    """The accessible name and description Chromium itself gives the element at
    `selector` (its accessibility tree, as a screen reader gets it)."""
    cdp = page.context.new_cdp_session(page)
    try:
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        tree = cdp.send("Accessibility.getPartialAXTree", {"nodeId": node, "fetchRelatives": False})
    finally:
        cdp.detach()
    ax = tree["nodes"][0]
    described = ax.get("description")
    return str(ax.get("name", {}).get("value", "")), described and described.get("value")


def share_mark(demo: Page, assistant: FrameLocator, ref: str, revision: int) -> None:
    """Click the mark `ref`, Ask AI, and wait until the assistant holds that revision."""
    mark(demo, ref).click()
    demo.get_by_role("button", name="Ask AI").click()
    expect(html(assistant)).to_have_attribute(
        "data-context-revision", str(revision), timeout=STEP_TIMEOUT_MS
    )


def send(assistant: FrameLocator, command_id: str, ref: str, basis: int) -> None:
    """Send a highlight of the chart mark `ref` based on revision `basis`."""
    scripted_command(assistant, command_id, "highlight", "sales-chart", ref, basis)


def test_a_command_for_a_mark_no_longer_drawn_is_not_found(demo: Page, origins: Origins) -> None:
    """After a filter change the chart draws other marks: a command based on the new view
    for a mark it no longer draws is `not-found` and nothing is highlighted; one for a
    drawn mark is `applied`; one based on the old view is `stale-context/view-changed`."""
    assistant = use_scripted_assistant(demo, origins)
    share_mark(demo, assistant, ROW, 1)
    context = json.loads(html(assistant).get_attribute("data-context") or "")
    assert context["componentId"] == "sales-chart"
    assert context["snapshot"]["series"] == "North"

    demo.locator('select[name="region"]').select_option("East")
    expect(mark(demo, ROW)).to_have_count(0, timeout=STEP_TIMEOUT_MS)
    # Each segment is named once: by its title (an aria-label too made the title its
    # description, and each segment was read twice).
    name, description = chromium_name_and_description(demo, f'[data-pc-resource-ref="{EAST_ROW}"]')
    assert re.fullmatch(r"East, 2026-03: [0-9]{1,3}(,[0-9]{3})*\.[0-9]{2} EUR", name), name
    assert description is None, description
    share_mark(demo, assistant, EAST_ROW, 2)

    send(assistant, "gone", ROW, 2)
    expect(html(assistant)).to_have_attribute(
        "data-received-gone", "not-found:not-rendered", timeout=STEP_TIMEOUT_MS
    )
    send(assistant, "drawn", EAST_ROW, 2)
    expect(html(assistant)).to_have_attribute(
        "data-ui-drawn", "applied:ok", timeout=STEP_TIMEOUT_MS
    )
    send(assistant, "old", ROW, 1)
    expect(html(assistant)).to_have_attribute(
        "data-received-old", "stale-context:view-changed", timeout=STEP_TIMEOUT_MS
    )
    highlighted = demo.locator("[data-pc-highlight]")
    expect(highlighted).to_have_count(1)
    expect(mark(demo, EAST_ROW)).to_have_attribute("data-pc-highlight", "focus")
