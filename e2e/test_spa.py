"""A single-page app mounts and unmounts the embed on its routes: after 100 rounds the
workers are gone, the listeners too, the JS heap has not grown past a bound, and the
next mount binds and works."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route, Worker, expect

from .conftest import STEP_TIMEOUT_MS, Origins, wait_bound
from .helpers import (
    after_collection,
    get,
    html,
    open_workbench,
    panel,
    show_and_expect,
    wait_workers_ended,
)
from .test_boot import MARKS

ROUNDS = 100
ROW = "sales-2026-03-north"
OTHER_ROW = "sales-2026-03-west"
# JS heap growth allowed over the rounds, after a garbage collection: each round builds
# a table, an iframe and a worker, so a leak of any of them would pass this quickly.
MAX_HEAP_GROWTH_BYTES = 8 * 1024 * 1024


# Posts a message a mounted edge would refuse and count (from a window that is not its
# assistant), then a marker after it: messages arrive in order, so when the marker does,
# any edge still listening has counted the first. Returns the count before and after.
WINDOW_MESSAGE_COUNTED = """() => new Promise((resolve) => {
  const root = document.documentElement;
  const before = root.getAttribute("data-pc-window-rejected");
  const marker = (event) => {
    if (event.data !== "spa-marker") return;
    window.removeEventListener("message", marker);
    resolve([before, root.getAttribute("data-pc-window-rejected")]);
  };
  window.addEventListener("message", marker);
  window.postMessage({type: "ready"}, "*");
  window.postMessage("spa-marker", "*");
})"""


def round_trip(page: Page, mounts: int) -> None:
    page.get_by_role("button", name="Sales").click()
    expect(html(page)).to_have_attribute("data-spa-mounts", str(mounts), timeout=STEP_TIMEOUT_MS)
    page.get_by_role("button", name="Home").click()
    expect(html(page)).to_have_attribute("data-spa-unmounts", str(mounts), timeout=STEP_TIMEOUT_MS)
    expect(html(page)).to_have_attribute("data-pc-state", "closed")


def test_mounting_and_unmounting_100_times_leaves_nothing_behind(
    page: Page, origins: Origins
) -> None:
    """After 100 mounts and unmounts no worker or listener is left and the heap stays
    within its bound; the next mount binds and works."""
    page.goto(origins.page + "/examples/spa.html")
    expect(html(page)).to_have_attribute("data-spa-route", "home")
    round_trip(page, 1)  # MicroPython and the edge load once, on the first mount
    before = after_collection(page, "Runtime.getHeapUsage", "usedSize")
    for mounts in range(2, ROUNDS + 2):
        round_trip(page, mounts)
    growth = after_collection(page, "Runtime.getHeapUsage", "usedSize") - before
    print(f"JS heap growth over {ROUNDS} mount/unmount rounds: {growth:,} bytes")
    assert growth < MAX_HEAP_GROWTH_BYTES, f"JS heap grew {growth:,} bytes in {ROUNDS} rounds"
    # Every worker ended with its mount, and no edge listens any more: a window message
    # that a mounted edge would refuse and count is not seen.
    wait_workers_ended(page)
    counted = page.evaluate(WINDOW_MESSAGE_COUNTED)
    assert counted[0] == counted[1], f"a window message was still counted: {counted}"

    # The next mount binds both frames, shares a row and applies a command.
    page.get_by_role("button", name="Sales").click()
    wait_bound(page)
    assistant = panel(page)
    wait_bound(assistant)
    # The probe above sees a mounted edge count the message.
    counted = page.evaluate(WINDOW_MESSAGE_COUNTED)
    assert counted[0] != counted[1], f"a mounted edge did not count the message: {counted}"
    page.locator(f'tr[data-pc-resource-ref="{ROW}"]').click()
    page.get_by_role("button", name="Ask AI").click()
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(assistant, "applied")
    expect(page.locator('[data-pc-highlight="focus"]')).to_have_attribute(
        "data-pc-resource-ref", ROW
    )


def test_an_unmounted_embed_leaves_no_marks_on_the_page(page: Page, origins: Origins) -> None:
    """A page that keeps its view when it unmounts the embed (and mounts it again later)
    keeps no mark of it: the selected row is no longer `aria-selected`, the assistant's
    highlight is gone, and `<html>` and the `closed` event hold no connection or
    revision of the closed embed (a mount after it starts from none); mounted again, a
    row selected then is the only one selected."""
    page.goto(origins.page + "/examples/spa.html")
    page.get_by_role("button", name="Sales").click()
    wait_bound(page)
    assistant = panel(page)
    wait_bound(assistant)
    page.locator(f'tr[data-pc-resource-ref="{ROW}"]').click()
    page.get_by_role("button", name="Ask AI").click()
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(assistant, "applied")
    rows = page.locator("tr[data-pc-resource-ref]")
    expect(rows.and_(page.locator('[data-pc-highlight="focus"]'))).to_have_count(1)
    expect(rows.and_(page.locator('[aria-selected="true"]'))).to_have_count(1)

    expect(html(page)).to_have_attribute("data-pc-shared-revision", "1")
    page.evaluate(
        """() => document.addEventListener("pagecontext:state", (event) => {
             window.lastState = event.detail;
           })"""
    )
    # The module's own unmount: the route's view (the table, the frame) stays.
    page.evaluate("async () => (await import('/web/boot.mjs')).unmount()")
    expect(html(page)).to_have_attribute("data-pc-state", "closed")
    left = page.evaluate(
        """() => ({
             marks: ["connection", "revision", "shared-revision", "child-state"].filter(
               (name) => document.documentElement.hasAttribute(`data-pc-${name}`)),
             state: window.lastState,
           })"""
    )
    assert left == {
        "marks": [],
        "state": {
            "state": "closed",
            "connection": None,
            "revision": None,
            "sharedRevision": None,
            "child": None,
            "error": None,
        },
    }
    expect(rows).to_have_count(3)
    expect(rows.and_(page.locator("[aria-selected]"))).to_have_count(0)
    expect(rows.and_(page.locator("[data-pc-highlight]"))).to_have_count(0)

    page.evaluate(
        """async () => {
             const { mount } = await import("/web/boot.mjs");
             const origin = document.documentElement.dataset.assistantOrigin;
             const childUrl = `${origin}/assistant.html`;
             await mount({ role: "page", peerOrigin: origin, childUrl });
           }"""
    )
    other = page.locator(f'tr[data-pc-resource-ref="{OTHER_ROW}"]')
    other.click()
    expect(other).to_have_attribute("aria-selected", "true")
    expect(rows.and_(page.locator('[aria-selected="true"]'))).to_have_count(1)


def test_a_page_unmounted_in_a_workbench_says_bye_to_its_assistant(
    page: Page, origins: Origins
) -> None:
    """A business page framed by the assistant's workbench unmounts its embed (as a
    single-page app leaving its route does): its worker says `bye` before it ends, so the
    assistant unbinds at once rather than staying bound to a port nobody reads; its
    worker then ends."""
    business = open_workbench(page, origins)
    frame = next(f for f in page.frames if f.url.startswith(origins.page))
    workers = [w for w in page.workers if urlsplit(w.url).netloc == urlsplit(origins.page).netloc]
    assert len(workers) == 1, [w.url for w in page.workers]
    with workers[0].expect_event("close", timeout=STEP_TIMEOUT_MS):
        frame.evaluate("async () => (await import('/web/boot.mjs')).unmount()")
        expect(html(business)).to_have_attribute("data-pc-state", "closed")
        expect(html(page)).to_have_attribute("data-pc-state", "ready", timeout=STEP_TIMEOUT_MS)


def test_a_mount_after_a_deploy_offers_its_assistant_the_files_its_worker_has(
    page: Page, origins: Origins
) -> None:
    """A single-page app mounts the embed under one build, unmounts it, and mounts it
    again after a deploy: the new mount's worker reads the new build's runtime.json, and
    the main thread, which read the earlier one for the edge, offers the assistant's
    worker the files the new worker has, not the earlier build's pins; the assistant's
    worker, of the new build, takes its embedder's copy of the snapshot bundle rather
    than download it. (The assistant's frame has no storage of its own here, as in
    Playwright's contexts: its first mount's worker could not keep what it downloaded.)"""
    runtime_json = f"{origins.page}/py/runtime.json"
    earlier = get(page, runtime_json).json()
    earlier["snapshot"]["sha256"] = "0" * 64  # the earlier build's snapshot

    def serve_earlier(route: Route) -> None:
        route.fulfill(json=earlier, headers={"Cache-Control": "no-cache"})

    page.context.route(runtime_json, serve_earlier)
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    page.goto(origins.page + "/examples/spa.html")
    round_trip(page, 1)  # MicroPython and the edge load once, with the earlier runtime.json
    page.context.unroute(runtime_json)  # the deploy
    page.get_by_role("button", name="Sales").click()
    wait_bound(page)
    wait_bound(panel(page))
    assistants = [w for w in workers if w.url.startswith(origins.assistant)]
    steps = assistants[-1].evaluate(MARKS)
    assert "peer-offered" in steps
    assert (steps["snapshot-opened"], steps["wasm-opened"]) == ("peer", "peer")


def test_an_embed_whose_runtime_did_not_load_fails_loudly_and_mounts_next_time(
    page: Page, origins: Origins
) -> None:
    """The first mount cannot load MicroPython (its module is unreachable): the page
    publishes `failed` with a `runtime:` reason and the app keeps working; the next
    visit to the route mounts again, loads it and binds."""
    blocked = "**/vendor/micropython-*/micropython.mjs"
    page.route(blocked, lambda route: route.abort())
    page.goto(origins.page + "/examples/spa.html")
    page.get_by_role("button", name="Sales").click()
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=STEP_TIMEOUT_MS)
    expect(html(page)).to_have_attribute("data-pc-error", re.compile(r"^runtime: "))
    expect(html(page)).to_have_attribute("data-spa-mounts", "0")
    page.unroute(blocked)
    page.get_by_role("button", name="Sales").click()
    expect(html(page)).to_have_attribute("data-spa-mounts", "1", timeout=STEP_TIMEOUT_MS)
    wait_bound(page)
    wait_bound(panel(page))


@pytest.mark.parametrize(
    ("config", "field", "words"),
    [
        ("{ role: 'page' }", "peerOrigin", "peerOrigin: missing"),
        (
            "{ role: 'page', peerOrigin: location.origin }",
            "peerOrigin",
            "is this frame's own origin",
        ),
        (
            "{ role: 'page', position: 'child', peerOrigin: assistant }",
            "position",
            "no frame embeds",
        ),
    ],
    ids=["no-peer", "own-origin", "child-at-the-top"],
)
def test_a_refused_config_leaves_nothing_mounted_and_the_next_mount_binds(
    page: Page, origins: Origins, config: str, field: str, words: str
) -> None:
    """`mount()` with a config the edge refuses (an option missing, or a placement that
    could never bind: its own origin as the peer, a child in a document no frame embeds)
    resolves with no edge and publishes `failed` with the field at fault; nothing stays
    mounted, so the next `mount()` (the route's own, with its good config) binds both
    frames."""
    page.goto(origins.page + "/examples/spa.html")
    refused = page.evaluate(
        f"""async () => {{
             const {{ mount }} = await import("/web/boot.mjs");
             const assistant = document.documentElement.dataset.assistantOrigin;
             const embed = await mount({config});
             return [embed.edge, Object.keys(embed)];
           }}"""
    )
    assert refused == [None, ["edge", "unmount"]]
    expect(html(page)).to_have_attribute("data-pc-state", "failed")
    expect(html(page)).to_have_attribute("data-pc-error-field", field)
    expect(html(page)).to_have_attribute("data-pc-error", re.compile(re.escape(words)))
    page.get_by_role("button", name="Sales").click()
    expect(html(page)).to_have_attribute("data-spa-mounts", "1", timeout=STEP_TIMEOUT_MS)
    wait_bound(page)
    wait_bound(panel(page))
    # The refused mount's error is not left beside the bound one.
    for name in ("data-pc-error", "data-pc-error-field"):
        expect(html(page)).not_to_have_attribute(name, re.compile(".*"))


def test_mount_says_it_runs_no_apps(page: Page, origins: Origins) -> None:
    """`apps` given to `mount()`, which only a config block runs: the console says so
    rather than leave the modules unrun without a word."""
    page.goto(origins.page + "/examples/spa.html")
    with page.expect_console_message(lambda m: "does not run config.apps" in m.text) as said:
        page.evaluate(
            """async () => {
                 const { mount, unmount } = await import("/web/boot.mjs");
                 const loading = mount({ role: "page", apps: ["sales"] });
                 unmount();
                 await loading;
               }"""
        )
    assert said.value.type == "warning"


def test_an_embed_unmounted_while_it_loads_says_closed(page: Page, origins: Origins) -> None:
    """`unmount()` called while a mount still loads (a route left at once): the mount
    resolves with no edge, and the page says `closed` on `<html>` and in a
    `pagecontext:state` event, as an unmount after binding does."""
    page.goto(origins.page + "/examples/spa.html")
    found = page.evaluate(
        """async () => {
             const { mount, unmount } = await import("/web/boot.mjs");
             const states = [];
             document.addEventListener("pagecontext:state", (e) => states.push(e.detail));
             const loading = mount({ role: "page" });
             unmount();
             const embed = await loading;
             const state = document.documentElement.dataset.pcState;
             return { states, edge: embed.edge, keys: Object.keys(embed), state };
           }"""
    )
    closed = dict.fromkeys(("state", "connection", "revision", "sharedRevision", "child", "error"))
    closed["state"] = "closed"
    assert found == {
        "states": [closed],
        "edge": None,
        "keys": ["edge", "unmount"],
        "state": "closed",
    }
