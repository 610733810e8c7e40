"""The channel under attack, in real Chromium frames: hostile frames on every origin,
an assistant that navigates away, a sandboxed assistant bound by its nonce alone,
lookalike origins, stray window messages, and no data ever sent to "*"."""

from __future__ import annotations

import json
import re
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Frame,
    FrameLocator,
    Page,
    Playwright,
    Route,
    expect,
)

from pagecontext.server.app import ServerConfig, create_assistant_app
from pagecontext.server.run import free_port, serve_in_thread

from .conftest import (
    BOOT_TIMEOUT_MS,
    LOCAL_HOSTS,
    ROOT,
    STEP_TIMEOUT_MS,
    Origins,
    wait_bound,
)
from .helpers import (
    OTHER_ROW,
    RENDER_CHILD_FRAME_ANEW,
    ROW,
    ChildNonces,
    diagnose_now,
    fetched,
    html,
    navigate_soon,
    panel,
    pin,
    select_and_ask,
    show_and_expect,
    swap_assistant,
    use_scripted_assistant,
    worker_report,
)

pytestmark = pytest.mark.e2e

# The pages' Content-Security-Policy lets each frame load only its peer's origin
# (`frame-src`), so the browser refuses most hostile frames before any message is sent
# (e2e/test_csp.py proves it). A real page may allow other frames (ads, widgets), so the
# tests that put a frame from a third origin, or a lookalike, inside the page bypass that
# policy: what they prove is that the edge's own checks hold without it.
BEYOND_FRAME_SRC = pytest.mark.browser_context_args(bypass_csp=True)


def add_frame(page: Page, url: str, *, sandbox: str | None = None) -> FrameLocator:
    """Append an iframe loading `url` to the page and return it."""
    page.evaluate(
        """([url, sandbox]) => { const f = document.createElement('iframe');
             if (sandbox !== null) f.setAttribute('sandbox', sandbox);
             f.id = 'hostile'; f.src = url; document.body.append(f); }""",
        [url, sandbox],
    )
    return page.frame_locator("#hostile")


def sent(frame: FrameLocator, key: str) -> int:
    expect(html(frame)).to_have_attribute("data-attack", "sent", timeout=STEP_TIMEOUT_MS)
    return int(html(frame).get_attribute(key) or "0")


def expect_working(page: Page, ref: str = ROW) -> None:
    """The real channel still works: a selection reaches the panel and Show me applies."""
    select_and_ask(page, ref)
    expect(panel(page).locator(f'[data-pc-chip="{ref}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(panel(page), "applied")
    expect(page.locator("[data-pc-highlight]")).to_have_attribute("data-pc-resource-ref", ref)


@BEYOND_FRAME_SRC
@pytest.mark.scenario(4, 9)
@pytest.mark.parametrize("where", ["third", "page", "assistant"])
def test_a_hostile_frame_on_any_origin_is_refused_by_source(
    demo: Page, origins: Origins, where: str
) -> None:
    """A frame from a third origin, or from the page's or the assistant's own origin,
    posts well-formed handshake, context and command messages to both frames: every one
    is refused because of its source, nothing is committed or highlighted, and the bound
    channel keeps working."""
    base = {"third": origins.third, "page": origins.page, "assistant": origins.assistant}[where]
    attacker = add_frame(demo, base + "/e2e/attacker.html")
    to_page, to_panel = sent(attacker, "data-sent-parent"), sent(attacker, "data-sent-sibling")
    assert (to_page, to_panel) == (3, 3)
    expect(html(demo)).to_have_attribute("data-pc-rejected-source", str(to_page))
    expect(html(panel(demo))).to_have_attribute("data-pc-rejected-source", str(to_panel))
    expect(html(demo)).to_have_attribute("data-pc-window-rejected", str(to_page))
    expect(demo.locator("[data-pc-highlight]")).to_have_count(0)
    expect(panel(demo).locator("[data-pc-chip]")).to_have_count(0)
    expect(html(panel(demo))).to_have_attribute("data-pc-connection", "1")
    expect_working(demo)


# The page's worker's `runtime-wanted` marks: one for each port its boot script handed
# it to send the runtime's files on (web/worker.mjs).
RUNTIME_WANTED = """() => performance.getEntriesByName("pagecontext:runtime-wanted").length"""


@BEYOND_FRAME_SRC
@pytest.mark.parametrize("where", ["third", "assistant"])
def test_only_the_child_frame_is_sent_the_runtimes_files(
    demo: Page, origins: Origins, where: str
) -> None:
    """A frame that is not the page's child frame, on a third origin or on the
    assistant's own, asks the page for the runtime's files as the child does: it is
    offered nothing, its request never reaches the page's worker (which was asked once,
    by the real child), the edge counts it as any message from that window, and the
    bound channel keeps working."""
    base = {"third": origins.third, "assistant": origins.assistant}[where]
    attacker = add_frame(demo, base + "/e2e/attacker.html?mode=runtime")
    expect(html(attacker)).to_have_attribute("data-attack", "sent")
    # Its request and the `ready` after it, each refused by the edge as coming from a
    # window that is not the child's: the request was handled before the second.
    expect(html(demo)).to_have_attribute("data-pc-rejected-source", "2")
    # The worker reads messages in order: one forwarded with the request would have come
    # before the selection this commits.
    expect_working(demo)
    [page_worker] = [w for w in demo.workers if w.url.startswith(origins.page)]
    assert page_worker.evaluate(RUNTIME_WANTED) == 1
    assert html(attacker).get_attribute("data-offers") == "0"


def test_the_page_sends_its_child_only_its_own_pinned_files_it_asks_for(
    demo: Page, origins: Origins
) -> None:
    """The page's child frame asks for a file that is not one of the runtime's files,
    then for both of them, and for one of them twice: the page offers the SHA-256s its
    runtime.json pins, sends each of the two once, its bytes the pinned ones, and
    answers the other two wants with no bytes (so the child never waits for them). A
    want it does not answer with bytes does not use up one of the two files."""
    child = use_scripted_assistant(demo, origins)
    other = "0" * 64
    wants = [other, "offered:0", "offered:1", "offered:1"]
    html(child).evaluate("(_, wants) => window.askRuntime(wants)", wants)
    expect(html(child)).to_have_attribute("data-runtime", re.compile("answers"))
    runtime = demo.evaluate("async () => (await fetch('/py/runtime.json')).json()")
    pins = [runtime["snapshot"]["sha256"], runtime["pyodide"]["wasmSha256"]]
    found = json.loads(html(child).get_attribute("data-runtime") or "")
    assert found["offer"] == pins
    answers = sorted(found["answers"], key=json.dumps)
    expected = [[other, None], [pins[0], pins[0]], [pins[1], pins[1]], [pins[1], None]]
    assert answers == sorted(expected, key=json.dumps)


# Whether the worker it is evaluated in sets the mark `name` with the detail `detail`
# (as JSON text): true once it has, false if it has not 10 s later.
MARKED_WITH = """([name, detail]) => new Promise((resolve) => {
  const check = () => {
    if (performance.getEntriesByName(name).some((m) => JSON.stringify(m.detail) === detail)) {
      resolve(true);
    }
  };
  new PerformanceObserver(check).observe({ type: "mark" });
  setTimeout(() => resolve(false), 10000);
  check();
})"""


def test_the_page_closes_a_runtime_port_its_child_is_done_with(
    demo: Page, origins: Origins
) -> None:
    """The page's child frame asks for the runtime's files, wants one that is not among
    them, then says it is done with the port, as a child's worker does once its boot has
    looked for copies: the page's worker closes its end (`runtime-closed`, after one
    want and no file sent) rather than keep it, with its listener, for as long as it
    runs."""
    child = use_scripted_assistant(demo, origins)
    [page_worker] = [w for w in demo.workers if w.url.startswith(origins.page)]
    html(child).evaluate("(_, wants) => window.askRuntime(wants)", ["0" * 64, "done"])
    expect(html(child)).to_have_attribute("data-runtime", re.compile("answers"))
    closed = json.dumps({"wants": 1, "answered": 0}, separators=(",", ":"))
    assert page_worker.evaluate(MARKED_WITH, ["pagecontext:runtime-closed", closed])


def test_the_page_answers_four_requests_for_the_runtime_per_mount(
    demo: Page, origins: Origins
) -> None:
    """The page answers its child's requests for the runtime's files four times per
    mount: the assistant it loaded asked once, and again as it reloaded before the page
    loaded the scripted assistant in its place (a child asks as its boot script starts,
    before its edge can announce itself); of four more, two are offered the files, and
    the fifth and sixth nothing, at once."""
    child = use_scripted_assistant(demo, origins)
    html(child).evaluate("() => window.askOffers(4)")
    expect(html(child)).to_have_attribute("data-offers", "[2,2,0,0]")


def test_a_request_for_the_runtime_with_another_key_is_the_edges_to_refuse(
    demo: Page, origins: Origins
) -> None:
    """Only the exact request a child's boot script posts is answered: with a key more,
    the message is the edge's, which refuses it as `malformed`, and it uses up none of
    the mount's four answers."""
    child = use_scripted_assistant(demo, origins)
    # Two of the mount's four answers are left (the first test above says why).
    before = int(html(demo).get_attribute("data-pc-rejected-malformed") or "0")
    html(child).evaluate("() => window.askOffers(2, {more: 1})")
    expect(html(demo)).to_have_attribute("data-pc-rejected-malformed", str(before + 2))
    html(child).evaluate("() => window.askOffers(1)")
    expect(html(child)).to_have_attribute("data-offers", "[2]")


def test_a_first_port_message_that_is_not_plain_data_closes_the_handshake(
    demo: Page, origins: Origins
) -> None:
    """A child whose first message on the port is not plain data (a Map), then its
    `connected`: the page's handshake refuses the first as it refuses any message that is
    not a valid `connected`, and closes the port, rather than count it and wait on: the
    `connected` after it binds nothing."""
    scripted = f"{origins.assistant}/e2e/scripted-assistant.html?page={origins.page}&first=map"
    demo.evaluate(
        "url => document.querySelector('iframe[data-pc-child]').setAttribute('data-pc-src', url)",
        scripted,
    )
    navigate_soon(demo.frames[1], "location.reload()")
    expect(html(demo)).to_have_attribute(
        "data-pc-rejected-handshake-not-connected", "1", timeout=STEP_TIMEOUT_MS
    )
    expect(html(demo)).to_have_attribute("data-pc-state", "ready")


def test_a_message_event_made_by_script_acts_on_nothing_whatever_its_origin(
    demo: Page, origins: Origins
) -> None:
    """Script in the page's own document dispatches message events that claim to come
    from the assistant's window, with the assistant's origin and with another: both are
    refused as `untrusted` (no browser sent them), the binding is not torn down, and the
    channel keeps working."""
    demo.evaluate(
        """(origins) => {
          const source = document.querySelector("iframe[data-pc-child]").contentWindow;
          for (const origin of origins) {
            const data = {protocol: "pagecontext", version: 1, type: "ready", role: "assistant"};
            window.dispatchEvent(new MessageEvent("message", {data, origin, source}));
          }
        }""",
        [origins.assistant, "https://evil.example"],
    )
    expect(html(demo)).to_have_attribute("data-pc-rejected-untrusted", "2")
    expect(html(demo)).to_have_attribute("data-pc-state", "bound")
    expect_working(demo)


def test_a_window_message_with_a_string_longer_than_any_handshakes_is_not_read(
    demo: Page,
) -> None:
    """The edge reads a window message only as a flat object whose keys and strings are
    at most 256 characters (no handshake's is over 64): a longer one, which MicroPython
    would take seconds to read on the main thread, is not turned into text at all."""
    read = demo.evaluate(
        """() => {
          const ready = {protocol: "pagecontext", version: 1, type: "ready", role: "assistant"};
          const flat = (extra) => globalThis.pagecontextHost.flat({...ready, ...extra});
          return [
            flat({}), flat({x: "a".repeat(256)}), flat({x: "a".repeat(257)}),
            flat({["k".repeat(257)]: 1}), flat({x: "a".repeat(2_000_000)}),
          ].map((text) => (text === null ? null : JSON.parse(text).x?.length ?? 0));
        }"""
    )
    assert read == [0, 256, None, None, None]


@BEYOND_FRAME_SRC
@pytest.mark.scenario(19)
def test_a_flood_of_refused_messages_leaves_the_channel_working(
    demo: Page, origins: Origins, context: BrowserContext
) -> None:
    """10,000 messages from a hostile frame to each frame are all refused and counted;
    a valid selection afterwards is committed and shown, and the JS heap of both frames
    grows by less than 8 MB across the flood (after garbage collection)."""
    sessions = [context.new_cdp_session(demo), context.new_cdp_session(demo.frames[1])]

    def heaps() -> list[float]:
        used = []
        for session in sessions:
            session.send("HeapProfiler.collectGarbage")
            used.append(session.send("Runtime.getHeapUsage")["usedSize"])
        return used

    before = heaps()
    attacker = add_frame(demo, origins.third + "/e2e/attacker.html?mode=flood&n=10000")
    assert sent(attacker, "data-sent-parent") == 10_000
    expect(html(demo)).to_have_attribute(
        "data-pc-rejected-source", "10000", timeout=BOOT_TIMEOUT_MS
    )
    expect(html(panel(demo))).to_have_attribute(
        "data-pc-rejected-source", "10000", timeout=BOOT_TIMEOUT_MS
    )
    expect_working(demo)
    growth = [after - start for start, after in zip(before, heaps(), strict=True)]
    assert all(g < 8 * 1024 * 1024 for g in growth), growth


@BEYOND_FRAME_SRC
@pytest.mark.scenario(10)
def test_an_assistant_that_navigates_away_receives_nothing(demo: Page, origins: Origins) -> None:
    """After binding, the assistant frame navigates itself to another origin: that
    document's handshake is refused by origin, the page unbinds when the bound document
    leaves, and a selection shared afterwards never reaches the new document."""
    navigate_soon(
        demo.frames[1], "location.href = arg", origins.third + "/e2e/attacker.html?mode=ready"
    )
    expect(html(demo)).to_have_attribute("data-pc-rejected-origin", "1", timeout=STEP_TIMEOUT_MS)
    expect(html(demo)).to_have_attribute("data-pc-state", "ready")
    select_and_ask(demo, ROW)
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")
    newcomer = demo.frame_locator("iframe[data-pc-child]")
    # A checkpoint any leak would come before: the page's worker answers a diagnostics
    # request only after the select and the share sent before it (and what they made
    # the edge do), then the page's own window message reaches the newcomer after
    # anything the page posted to it earlier.
    diagnose_now(demo)
    demo.evaluate(
        """() => document.querySelector('iframe[data-pc-child]')
             .contentWindow.postMessage('checkpoint', '*')"""
    )
    expect(html(newcomer)).to_have_attribute("data-received", "1")
    expect(html(newcomer)).to_have_attribute("data-leaked", "0")
    expect(html(demo)).not_to_have_attribute("data-pc-shared-revision", re.compile(".*"))


@BEYOND_FRAME_SRC
@pytest.mark.scenario(12)
def test_a_lookalike_origin_never_binds(demo: Page, origins: Origins) -> None:
    """The assistant's own files, served from a lookalike origin (127.0.0.1 and another
    port, where the real one is localhost), post `ready` from the right frame: refused by
    origin and never bound. (The demo server itself answers only its own host name.)"""
    page = urlsplit(origins.page)
    config = ServerConfig(
        root=ROOT,
        page_port=page.port or 80,
        assistant_host="127.0.0.1",
        assistant_port=free_port(),
    )
    with serve_in_thread([(create_assistant_app(config), config.assistant_port)]):
        demo.evaluate(
            "url => { document.querySelector('iframe[data-pc-child]').src = url; }",
            config.assistant_origin + "/assistant.html",
        )
        expect(html(demo)).to_have_attribute(
            "data-pc-rejected-origin", "1", timeout=BOOT_TIMEOUT_MS
        )
    expect(html(demo)).not_to_have_attribute("data-pc-connection", "2")
    expect(html(demo)).to_have_attribute("data-pc-state", "ready")


@pytest.mark.scenario(14)
def test_window_messages_after_binding_are_ignored(demo: Page, origins: Origins) -> None:
    """Once bound, the bound frames themselves posting context and command messages on
    `window` change nothing: only the port carries data."""
    context = {
        "protocol": "pagecontext", "version": 1, "type": "context", "messageId": "w1",
        "pageInstanceId": "AAAAAAAAAAAAAAAAAAAAAA", "conversationId": "AAAAAAAAAAAAAAAAAAAAAA",
        "selectionRevision": 5,
        "selection": {"pageId": "sales-2026", "componentId": "sales-table",
                      "resourceRef": ROW, "observedAt": "2026-01-01T00:00:00.000Z",
                      "filters": {}},
    }  # fmt: skip
    command = {**context, "type": "command", "messageId": "w2", "basisRevision": 1,
               "action": "highlight", "target": {"componentId": "sales-table",
               "resourceRef": ROW}, "params": {"tone": "focus"}}  # fmt: skip
    del command["selection"], command["selectionRevision"]
    demo.frames[1].evaluate(
        "([origin, a, b]) => { parent.postMessage(a, origin); parent.postMessage(b, origin); }",
        [origins.page, context, command],
    )
    demo.evaluate(
        """([origin, a]) => document.querySelector('iframe[data-pc-child]')
             .contentWindow.postMessage(a, origin)""",
        [origins.assistant, context],
    )
    expect(html(demo)).to_have_attribute("data-pc-rejected-malformed", "2")
    expect(html(panel(demo))).to_have_attribute("data-pc-rejected-malformed", "1")
    expect(demo.locator("[data-pc-highlight]")).to_have_count(0)
    expect(panel(demo).locator("[data-pc-chip]")).to_have_count(0)
    expect_working(demo)


@pytest.mark.scenario(15)
def test_a_null_source_or_a_detached_frame_never_matches(demo: Page, origins: Origins) -> None:
    """A `ready` whose source is null is refused, and once the assistant's iframe is
    detached (its contentWindow null) a null source still never matches it."""
    ready = {"protocol": "pagecontext", "version": 1, "type": "ready", "role": "assistant"}
    script = """([origin, data]) => window.dispatchEvent(
        new MessageEvent('message', {data, origin, source: null}))"""
    demo.evaluate(script, [origins.assistant, ready])
    expect(html(demo)).to_have_attribute("data-pc-rejected-source", "1")
    demo.evaluate("document.querySelector('iframe[data-pc-child]').remove()")
    demo.evaluate(script, [origins.assistant, ready])
    expect(html(demo)).to_have_attribute("data-pc-rejected-source", "2")
    expect(html(demo)).to_have_attribute("data-pc-connection", "1")


@pytest.mark.scenario(11)
def test_a_sandboxed_assistant_binds_by_its_nonce_and_works(
    page: Page, sandboxed_origins: Origins
) -> None:
    """The panel in a sandboxed iframe has an opaque origin ("null"): it binds through
    the nonce alone, receives the context, and its command gets an `applied` receipt."""
    page.goto(sandboxed_origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    expect(html(page)).to_have_attribute("data-pc-child-origin", "opaque")
    assert page.frames[1].evaluate("self.origin") == "null"
    expect_working(page, OTHER_ROW)


@BEYOND_FRAME_SRC
@pytest.mark.scenario(11)
def test_another_opaque_frame_never_binds(page: Page, sandboxed_origins: Origins) -> None:
    """Another sandboxed (opaque-origin) frame posting `ready` and `connect` is refused
    by source: an opaque origin is never enough."""
    page.goto(sandboxed_origins.page + "/")
    wait_bound(page)
    attacker = add_frame(
        page, sandboxed_origins.third + "/e2e/attacker.html", sandbox="allow-scripts"
    )
    to_page = sent(attacker, "data-sent-parent")
    expect(html(page)).to_have_attribute("data-pc-rejected-source", str(to_page))
    expect(html(page)).to_have_attribute("data-pc-connection", "1")
    expect_working(page)


@pytest.mark.scenario(11, 14)
def test_a_reloaded_or_replayed_child_gets_a_fresh_nonce(
    page: Page, sandboxed_origins: Origins
) -> None:
    """The sandboxed panel reloads (its nonce is spent): the page answers with a fresh
    navigation and a new nonce, never a second connect. Loading it again with the used
    nonce in its URL (a replay) binds only after yet another fresh nonce."""
    nonces = ChildNonces(page)
    page.goto(sandboxed_origins.page + "/")
    wait_bound(page)
    [first] = nonces.seen
    navigate_soon(page.frames[1], "location.reload()")
    wait_bound(page, connection=2)
    [_, second] = nonces.seen
    assert second != first

    replay = nonces.urls[-1]
    page.evaluate("url => { document.querySelector('iframe[data-pc-child]').src = url; }", replay)
    wait_bound(page, connection=3)
    third = nonces.seen[-1]
    assert len({first, second, third}) == 3
    # The used nonce never got a connect, so nothing was refused: it was never in play.
    assert (
        page.evaluate("document.documentElement.hasAttribute('data-pc-window-rejected')") is False
    )
    expect_working(page)


def test_an_assistant_loaded_again_adds_nothing_to_the_pages_history(
    page: Page, origins: Origins
) -> None:
    """The assistant's frame reloads and the page loads it again with a fresh nonce: the
    browser's history gains no entry, so Back leaves the page at once, for the page the
    user came from, rather than stopping at the frame's earlier load."""
    before = origins.page + "/py/runtime.json"
    page.goto(before)
    page.goto(origins.page + "/")
    wait_bound(page)
    length = page.evaluate("history.length")
    navigate_soon(page.frames[1], "location.reload()")
    wait_bound(page, connection=2)
    wait_bound(panel(page))
    assert page.evaluate("history.length") == length
    navigate_soon(page, "history.back()")
    expect(page).to_have_url(before, timeout=STEP_TIMEOUT_MS)


# The page moves its child frame to the end of its parent (the same element).
MOVE_CHILD_FRAME = """() => {
  const frame = document.querySelector("iframe[data-pc-child]");
  frame.parentElement.append(frame);
}"""


def back_to_the_page(page: Page, origins: Origins) -> str:
    """Open the page, wait until it is bound, go on to another URL and come back with
    Back (the page loaded anew), until it is bound again; return the other URL."""
    page.goto(origins.page + "/")
    wait_bound(page)
    after = origins.page + "/py/runtime.json"
    page.goto(after)
    page.go_back()
    wait_bound(page)
    return after


def test_back_to_the_page_keeps_the_way_forward(page: Page, origins: Origins) -> None:
    """The user leaves the page and comes back to it with Back: the page is loaded anew,
    its assistant's frame restored by the browser from its history, and loaded again
    with a fresh nonce. That load replaces the frame's entry: Forward still goes to the
    page the user had gone on to."""
    after = back_to_the_page(page, origins)
    wait_bound(panel(page))
    navigate_soon(page, "history.forward()")
    expect(page).to_have_url(after, timeout=STEP_TIMEOUT_MS)


@pytest.mark.parametrize("layout", ["panel", "sandboxed-panel"])
def test_an_assistant_frame_moved_in_a_page_loaded_by_back_binds_again(
    page: Page, request: pytest.FixtureRequest, layout: str
) -> None:
    """In a page the browser loaded anew by Back (its assistant's frame restored from the
    history, then loaded in place with a fresh nonce, its `src` left as it was), the page
    moves the bound frame in its document: the move empties the frame, which is loaded
    again and bound on a new connection. Twice, and Forward still goes on."""
    sandboxed = layout == "sandboxed-panel"
    origins: Origins = request.getfixturevalue("sandboxed_origins" if sandboxed else "origins")
    after = back_to_the_page(page, origins)
    assert page.evaluate("performance.getEntriesByType('navigation')[0].type") == "back_forward"
    for connection in (2, 3):
        page.evaluate(MOVE_CHILD_FRAME)
        wait_bound(page, connection=connection)
    expect_working(page)
    navigate_soon(page, "history.forward()")
    expect(page).to_have_url(after, timeout=STEP_TIMEOUT_MS)


@pytest.mark.parametrize("layout", ["sandboxed-panel", "rendered-anew"])
def test_an_assistant_frame_moved_in_the_page_binds_again(
    page: Page, request: pytest.FixtureRequest, layout: str
) -> None:
    """The page moves its bound assistant's iframe to another place in its document (a
    sandboxed one, or one a framework rendered anew): the frame loads its `src` again,
    and the page binds it on a new connection. A frame that had loaded its child
    without a `src` would load an empty document and never bind again."""
    sandboxed = layout == "sandboxed-panel"
    origins: Origins = request.getfixturevalue("sandboxed_origins" if sandboxed else "origins")
    page.goto(origins.page + "/")
    wait_bound(page)
    connection = 1
    if not sandboxed:
        page.evaluate(RENDER_CHILD_FRAME_ANEW, 1)
        connection = 2
        wait_bound(page, connection=connection)
    page.evaluate(MOVE_CHILD_FRAME)
    wait_bound(page, connection=connection + 1)
    expect_working(page)


@BEYOND_FRAME_SRC
@pytest.mark.scenario(10)
def test_a_sandboxed_assistant_that_navigates_away_is_loaded_again_not_bound(
    page: Page, sandboxed_origins: Origins
) -> None:
    """Scenario 10 with the sandboxed panel, whose origin is opaque: the bound panel
    navigates itself to another origin, whose document (opaque too) posts `ready`. No
    origin tells it apart from the assistant reloading, so the page takes it as that: it
    unbinds the document that left, loads the assistant again from its own
    `data-pc-src` with a fresh nonce (replacing the newcomer), and binds the real
    assistant on a new connection, which works; nothing is refused. (The newcomer could
    not bind in any case: the nonce it would have to answer with is in a URL it never
    had.)"""
    nonces = ChildNonces(page)
    page.goto(sandboxed_origins.page + "/")
    wait_bound(page)
    [first] = nonces.seen
    navigate_soon(
        page.frames[1],
        "location.href = arg",
        sandboxed_origins.third + "/e2e/attacker.html?mode=ready",
    )
    wait_bound(page, connection=2)
    second = nonces.seen[-1]
    assert second != first
    assert nonces.urls[-1].startswith(sandboxed_origins.assistant + "/"), nonces.urls
    # The assistant's document, which took its nonce out of its URL.
    assert page.frames[1].url == nonces.urls[-1].split("#")[0]
    assert (
        page.evaluate("document.documentElement.hasAttribute('data-pc-window-rejected')") is False
    )
    expect_working(page)


@pytest.mark.scenario(11)
def test_a_frame_pointed_at_another_origin_gets_no_nonce(demo: Page, origins: Origins) -> None:
    """Once bound, the page points its assistant frame's data-pc-src at another origin,
    and the assistant reloads: the page does not load that origin with a fresh nonce (in
    an opaque-origin frame it would bind it); it refuses and counts it, loudly."""
    frame = demo.locator("iframe[data-pc-child]")
    elsewhere = origins.third + "/e2e/attacker.html"
    frame.evaluate("(element, url) => element.setAttribute('data-pc-src', url)", elsewhere)
    errors: list[str] = []
    demo.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    navigate_soon(demo.frames[1], "location.reload()")
    expect(html(demo)).to_have_attribute("data-pc-rejected-child-url", "1", timeout=BOOT_TIMEOUT_MS)
    assert origins.third not in (frame.get_attribute("src") or "")
    assert any("data-pc-src must stay on peerOrigin" in error for error in errors), errors


@BEYOND_FRAME_SRC
def test_an_assistant_framed_by_a_page_it_is_not_configured_for_says_so(
    page: Page, origins: Origins
) -> None:
    """The demo's assistant, configured for the page origin, framed by a page of a third
    origin (a host that sends no frame-ancestors, or a page moved to another origin):
    it never binds, and says why in the console, naming both origins."""

    def without_frame_ancestors(route: Route) -> None:
        response = fetched(route)
        policy = response.headers["content-security-policy"]
        kept = "; ".join(d for d in policy.split("; ") if not d.startswith("frame-ancestors"))
        route.fulfill(
            response=response, headers={**response.headers, "content-security-policy": kept}
        )

    page.route(origins.assistant + "/assistant.html*", without_frame_ancestors)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(origins.third + "/e2e/attacker.html?mode=none")
    assistant = add_frame(page, origins.assistant + "/assistant.html")
    expect(html(assistant)).to_have_attribute("data-pc-state", "ready", timeout=BOOT_TIMEOUT_MS)
    said = f"this frame is in a page of {origins.third}, but configured for the page origin"
    assert any(said in e and origins.page in e for e in errors), errors
    expect(html(assistant)).not_to_have_attribute("data-pc-connection", re.compile(".*"))


SPY = """
(() => {
  const received = (window.__pcReceived = []);
  window.addEventListener("message", (event) => {
    if (event.source === window) return;  // a frame's own wake-ups, if any
    let data;
    try { data = JSON.parse(JSON.stringify(event.data)); } catch { data = String(event.data); }
    received.push({origin: event.origin, data});
  }, true);
  const sent = (window.__pcSent = []);
  let host;
  Object.defineProperty(window, 'pagecontextHost', {
    configurable: true,
    get() { return host; },
    set(value) {
      const post = value.post;
      value.post = (target, message, targetOrigin, transfer) => {
        sent.push({targetOrigin, message: JSON.parse(JSON.stringify(message))});
        return post(target, message, targetOrigin, transfer);
      };
      host = value;
    },
  });
})();
"""


@pytest.mark.scenario(13)
@pytest.mark.parametrize("sandboxed", [False, True], ids=["panel", "sandboxed-panel"])
def test_no_selection_or_command_data_is_posted_to_a_window(
    context: BrowserContext,
    request: pytest.FixtureRequest,
    sandboxed: bool,
) -> None:
    """Through a whole session (bind, select, ask, show), every window message either
    frame receives is a handshake message (recorded by a listener in each frame, whatever
    posted it), or the child's one request for the runtime's files, which carries nothing
    else (docs/protocol.md 8.13); the library's window posts (`pagecontextHost.post`,
    spied on) are those, and only `connect` to an opaque child ever names "*" as its
    target origin, which `post` hands to the browser as it is given."""
    origins: Origins = request.getfixturevalue("sandboxed_origins" if sandboxed else "origins")
    context.add_init_script(SPY)
    page = context.new_page()
    page.goto(origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    expect_working(page)
    wanted = {"pagecontextRuntime": "wanted"}
    sent: list[dict[str, Any]] = [
        *page.evaluate("window.__pcSent"),
        *page.frames[1].evaluate("window.__pcSent"),
    ]
    asked = [r for r in sent if r["message"] == wanted]
    assert asked == [{"targetOrigin": origins.page, "message": wanted}], json.dumps(sent)
    records = [r for r in sent if r["message"] != wanted]
    types = sorted(r["message"]["type"] for r in records)
    assert types == ["connect", "ready"], json.dumps(records)
    received: list[dict[str, Any]] = [
        *page.evaluate("window.__pcReceived"),
        *page.frames[1].evaluate("window.__pcReceived"),
    ]
    assert [r for r in received if r["data"] == wanted] == [
        {"origin": "null" if sandboxed else origins.assistant, "data": wanted}
    ], json.dumps(received)
    received = [r for r in received if r["data"] != wanted]
    assert sorted(r["data"]["type"] for r in received) == types, json.dumps(received)
    # `post` gives the browser the target origin it is given, not another.
    given = page.evaluate(
        """() => { let got = null;
             const target = {postMessage: (message, targetOrigin) => { got = targetOrigin; }};
             pagecontextHost.post(target, {}, "https://exact.example", []);
             return got; }"""
    )
    assert given == "https://exact.example"
    for record in records:
        assert set(record["message"]) <= {
            "protocol", "version", "type", "role", "pageInstanceId",
            "assistantInstanceId", "conversationId",
        }  # fmt: skip
        if record["targetOrigin"] == "*":
            assert sandboxed
            assert record["message"]["type"] == "connect"


def diagnose(page: Page | Frame) -> dict[str, int]:
    """Ask the frame's worker for a report after a garbage collection, and read it. The
    report has every count, and a live worker has a heap and Python objects."""
    diagnose_now(page)
    root = page.locator("html")
    report: dict[str, int] = {}
    for key in ("heap-bytes", "heap-in-use", "py-objects", "port-refused", "internal-errors"):
        value = root.get_attribute(f"data-pc-{key}")
        assert value is not None, key
        assert value.isdigit(), (key, value)
        report[key] = int(value)
    assert 0 < report["heap-in-use"] < report["heap-bytes"], report
    assert report["py-objects"] > 0, report
    return report


def open_flooding_page(page: Page, origins: Origins, query: str = "") -> Frame:
    """Open e2e/pages/flooding-page.html (with `query` added) and return its assistant
    frame once the page has its `connected`."""
    page.goto(f"{origins.page}/e2e/flooding-page.html?assistant={origins.assistant}{query}")
    expect(html(page)).to_have_attribute(
        "data-connected", re.compile(".+"), timeout=BOOT_TIMEOUT_MS
    )
    return page.frames[1]


def test_bursts_of_valid_contexts_end_on_the_last_and_leave_the_assistants_memory_as_it_was(
    page: Page, origins: Origins
) -> None:
    """A page that binds the real assistant sends it three bursts of 10,000 valid
    contexts, each in one task: the assistant commits the last revision of each, its
    worker's Pyodide heap grows by less than 2 MiB (a burst never makes Python hold all
    of its text at once), and after the first burst (which commits the context the
    session then holds) the memory in use stays as it was: under 16 KiB more over the
    next 20,000 messages (pydantic-core's string cache kept their ids and stamps, 260 KB
    more, when it cached values too)."""
    assistant = open_flooding_page(page, origins)
    expect(assistant.locator("html")).to_have_attribute("data-pc-state", "bound")
    reports = [diagnose(assistant)]
    for burst in range(3):
        first = 1 + burst * 10_000
        page.evaluate("first => window.flood(first, 10000)", first)
        expect(assistant.locator("html")).to_have_attribute(
            "data-pc-revision", str(first + 9_999), timeout=BOOT_TIMEOUT_MS
        )
        reports.append(diagnose(assistant))
    assert reports[-1]["port-refused"] == 0
    assert reports[-1]["internal-errors"] == 0
    heaps = [report["heap-bytes"] for report in reports]
    assert max(heaps) - heaps[0] < 2 * 1024 * 1024, heaps
    in_use = [report["heap-in-use"] for report in reports]
    assert in_use[3] - in_use[1] < 16 * 1024, in_use


def test_a_number_javascript_cannot_hold_exactly_is_refused_and_the_panel_goes_on(
    page: Page, origins: Origins
) -> None:
    """A bound page sends a context whose snapshot holds 2**64 units (which JavaScript
    writes as the integer 18446744073709552000): the assistant refuses it, counted,
    keeps the revision before it, and draws the next context as ever (it took the
    number before, and the panel then drew nothing more for the conversation)."""
    assistant = html(open_flooding_page(page, origins))
    expect(assistant).to_have_attribute("data-pc-state", "bound")
    page.evaluate("() => window.sendUnits(1, 7)")
    expect(assistant).to_have_attribute("data-pc-revision", "1")
    page.evaluate("() => window.sendUnits(2, 2 ** 64)")
    expect(assistant).to_have_attribute("data-pc-port-refused", "1")
    expect(assistant).to_have_attribute("data-pc-revision", "1")
    page.evaluate("() => window.sendUnits(3, Number.MAX_SAFE_INTEGER)")
    expect(assistant).to_have_attribute("data-pc-revision", "3")
    chip = page.frames[1].locator('[data-pc-chip="sales-row-3"]')
    expect(chip).to_contain_text("9007199254740991 units")


@pytest.mark.scenario(16)
def test_a_bound_page_sending_what_is_no_context_is_refused_and_the_assistant_goes_on(
    page: Page, origins: Origins
) -> None:
    """Scenario 16 from the page's side, in real frames: a page that binds the real
    assistant honestly sends it, in one task, 13 messages that are no valid context (a
    Map, a Date, an ArrayBuffer, a BigInt, NaN and an infinity, nesting 100 deep, an own
    `__proto__` key, 20,000 characters, another conversation, another page instance, a
    revision of 2.5, a command from the page): each is refused and counted, none
    committed, the worker fails in nothing, and the valid context after them is drawn."""
    frame = open_flooding_page(page, origins)
    assistant = html(frame)
    expect(assistant).to_have_attribute("data-pc-state", "bound")
    page.evaluate("() => window.sendUnits(1, 7)")
    expect(assistant).to_have_attribute("data-pc-revision", "1")
    sent = page.evaluate("() => window.sendHostile(2)")
    assert sent == 13
    page.evaluate("() => window.sendUnits(3, 9)")
    expect(assistant).to_have_attribute("data-pc-revision", "3")
    report = worker_report(frame)
    assert report["internalErrors"] == 0, report
    # Not plain data, refused by the worker's walk before Python: the Map, the Date, the
    # ArrayBuffer, the BigInt, and the nesting past the depth limit.
    assert report["notPlainData"] == 5, report
    assert report["contexts"] == {
        "not-json": 2,  # NaN, Infinity
        "forbidden-key": 1,
        "too-large": 1,
        "conversation-mismatch": 1,
        "page-instance": 1,
        "malformed": 1,  # the revision of 2.5
    }, report
    assert report["control"] == {"unexpected-type": 1}, report  # a command from the page
    expect(assistant).to_have_attribute("data-pc-port-refused", str(sent - 5))
    chip = frame.locator('[data-pc-chip="sales-row-3"]')
    expect(chip).to_contain_text("9 units")
    expect(frame.locator("[data-pc-chip]")).to_have_count(1)


def test_an_embedder_that_predates_bound_still_binds_the_assistant(
    page: Page, origins: Origins
) -> None:
    """A page that sends no `bound` after the assistant's `connected` (docs/protocol.md
    8.12): the assistant waits, `connecting`, and the page's first context binds it and
    is committed."""
    assistant = html(open_flooding_page(page, origins, "&legacy=1"))
    expect(assistant).to_have_attribute("data-pc-state", "connecting")
    page.evaluate("() => window.flood(1, 1)")
    expect(assistant).to_have_attribute("data-pc-revision", "1")
    expect(assistant).to_have_attribute("data-pc-state", "bound")
    assert assistant.get_attribute("data-pc-port-refused") in (None, "0")


@pytest.mark.scenario(16, 18, 19)
def test_a_bound_peer_flooding_the_port_is_refused_and_memory_stays_bounded(
    demo: Page, origins: Origins
) -> None:
    """An assistant that binds honestly, then sends 10,000 hostile messages over the port
    (Map, Date, ArrayBuffer, NaN, deep nesting, __proto__, oversize, wrong conversation or
    page, future revision, unknown action, extra params, a selector as resourceRef, a
    float revision), and first a message of shared references that reads as 8^40
    values, on the port and to the page's window, one that reads as 50 MB of text, and
    to the page's window a flat one holding 2 MB of text:
    each is refused with its reason or dropped, its valid command after the flood is
    applied, the Pyodide heap grows by less than 32 MiB and the Python objects alive by
    less than 60,000 (the receipts the page remembers are bounded)."""
    demo.locator(f'tr[data-pc-resource-ref="{ROW}"]').click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")
    before = diagnose(demo)
    hostile = (
        f"{origins.assistant}/e2e/hostile-assistant.html?page={origins.page}"
        f"&n=10000&ref={ROW}&revision=1"
    )
    child = swap_assistant(demo, hostile)
    expect(html(child)).to_have_attribute("data-final", "applied", timeout=BOOT_TIMEOUT_MS)
    expect(demo.locator("[data-pc-highlight]")).to_have_attribute("data-pc-resource-ref", ROW)
    # The window messages: one not a flat object of scalars, one whose string is longer
    # than any handshake's, so not read, and refused.
    expect(html(demo)).to_have_attribute("data-pc-rejected-malformed", "2")
    receipts = json.loads(html(child).get_attribute("data-receipts") or "{}")
    for key in (
        "received:rejected:not-json",
        "received:rejected:too-deep",
        "received:rejected:forbidden-key",
        "received:rejected:too-large",
        "received:rejected:conversation-mismatch",
        "received:stale-context:page-instance",
        "received:rejected:future-revision",
        "received:rejected:malformed",
        "received:not-found:not-rendered",
    ):
        assert receipts.get(key, 0) > 0, (key, receipts)
    assert receipts.get("received:applied:ok") == 1
    after = diagnose(demo)
    assert after["port-refused"] > before["port-refused"]
    assert after["heap-bytes"] - before["heap-bytes"] < 32 * 1024 * 1024, (before, after)
    assert after["py-objects"] - before["py-objects"] < 60_000, (before, after)
    expect(html(demo)).to_have_attribute("data-pc-state", "bound")
    diagnostics = demo.locator("[data-pc-diagnostics]")
    diagnostics.locator("summary").click()
    expect(diagnostics).to_contain_text("forbidden-key")
    expect(diagnostics).to_contain_text("not plain data")


class FrameByProtocol:
    """A frame evaluated through the DevTools protocol, by its target.

    Playwright loses track of the frames of a page the browser restores from its
    back/forward cache (its `frames` lists the main frame only), so a test of that
    restore reaches the assistant's frame (a cross-origin frame: a target of its own) by
    its URL. `wait_for` sends a script that resolves once a selector matches and reads
    the answer when it comes, within a deadline.
    """

    def __init__(self, browser: Browser, page: Page, url_prefix: str) -> None:
        self._page = page
        self._cdp = browser.new_browser_cdp_session()
        targets = self._cdp.send("Target.getTargets")["targetInfos"]
        found = [t for t in targets if t["type"] == "iframe" and t["url"].startswith(url_prefix)]
        assert len(found) == 1, f"no single frame target at {url_prefix}: {targets}"
        attached = self._cdp.send(
            "Target.attachToTarget", {"targetId": found[0]["targetId"], "flatten": False}
        )
        self._session = attached["sessionId"]
        self._answers: dict[int, Any] = {}
        self._cdp.on("Target.receivedMessageFromTarget", self._on_message)
        self._next_id = 0

    def _on_message(self, event: dict[str, Any]) -> None:
        message = json.loads(event["message"])
        if "id" in message:
            self._answers[message["id"]] = message

    def evaluate(self, function: str, arg: object) -> Any:
        """The value of the JavaScript `function` called with `arg` (awaited if it is a
        promise) in the frame."""
        self._next_id += 1
        ident = self._next_id
        expression = f"({function})({json.dumps(arg)})"
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        message = {"id": ident, "method": "Runtime.evaluate", "params": params}
        self._cdp.send(
            "Target.sendMessageToTarget",
            {"sessionId": self._session, "message": json.dumps(message)},
        )
        deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
        while ident not in self._answers:
            assert time.monotonic() < deadline, f"no answer from the frame to {expression!r}"
            # A round trip of the protocol: Playwright delivers the events that came first.
            self._cdp.send("Target.getTargets")
        answer = self._answers.pop(ident)
        assert "exceptionDetails" not in answer["result"], answer
        return answer["result"]["result"].get("value")

    def wait_for(self, selector: str) -> None:
        """Wait until an element matches `selector` in the frame."""
        self.evaluate(
            """(selector) => new Promise((resolve) => {
                 const found = () => document.querySelector(selector) !== null;
                 if (found()) return resolve(true);
                 const watch = new MutationObserver(() => {
                   if (found()) { watch.disconnect(); resolve(true); }
                 });
                 watch.observe(document, { subtree: true, childList: true, attributes: true });
               })""",
            selector,
        )

    def center(self, selector: str) -> tuple[float, float]:
        """The middle of the element `selector`, in the frame's own coordinates."""
        box = self.evaluate(
            """(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
                 return [r.x + r.width / 2, r.y + r.height / 2]; }""",
            selector,
        )
        return box[0], box[1]


def test_a_page_restored_from_the_back_forward_cache_stays_bound_and_works(
    playwright: Playwright, browser_type_launch_args: dict[str, Any], origins: Origins
) -> None:
    """The user leaves the demo and comes back with the browser's back button, and the
    browser restores the page (both frames, both workers) from its back/forward cache:
    the frames are still bound on their first connection, a row selected then reaches
    the assistant, and its Show me highlights the row on the page. (Playwright's
    Chromium runs without that cache unless told otherwise.)"""
    browser = playwright.chromium.launch(
        **browser_type_launch_args, ignore_default_args=["--disable-back-forward-cache"]
    )
    try:
        context = browser.new_context()
        seen: list[str] = []
        context.on("request", lambda request: seen.append(request.url))
        page = context.new_page()
        page.goto(origins.page + "/")
        restored = False
        # A page is restored only if the browser could keep it: one running a script the
        # moment it was left is loaded again instead, and is left again once bound.
        for _ in range(3):
            wait_bound(page)
            wait_bound(panel(page))
            page.evaluate("document.documentElement.setAttribute('data-left', '')")
            page.goto(origins.page + "/py/runtime.json")
            page.go_back(wait_until="commit")
            restored = page.evaluate("document.documentElement.hasAttribute('data-left')")
            if restored:
                break
        assert restored, "the browser never restored the page from its back/forward cache"
        expect(html(page)).to_have_attribute("data-pc-state", "bound")
        expect(html(page)).to_have_attribute("data-pc-connection", "1")
        assistant = FrameByProtocol(browser, page, origins.assistant + "/")
        assistant.wait_for('html[data-pc-state="bound"][data-pc-connection="1"]')

        select_and_ask(page, ROW)
        assistant.wait_for(f'[data-pc-chip="{ROW}"]')
        # A user's click (trusted), at the button's place in the page.
        frame_box = page.locator("iframe[data-pc-child]").bounding_box()
        assert frame_box is not None
        x, y = assistant.center("[data-pc-show]")
        page.mouse.click(frame_box["x"] + x, frame_box["y"] + y)
        expect(page.locator('[data-pc-highlight="focus"]')).to_have_attribute(
            "data-pc-resource-ref", ROW
        )
        assistant.wait_for('[data-pc-receipt][data-pc-receipt-status="applied"]')
    finally:
        browser.close()
    remote = [url for url in seen if urlsplit(url).hostname not in LOCAL_HOSTS]
    assert remote == [], f"requests left the machine: {remote}"


# The page takes the assistant's highlight, leaves at once for a page without the
# assistant, and answers `applied` 300 ms of its own time later: once it is shown again.
LEAVE_WITH_A_HIGHLIGHT_PENDING = """(away) => {
  document.addEventListener("pagecontext:command", (event) => {
    if (event.detail.action !== "highlight") return;
    event.preventDefault();
    const commandId = event.detail.commandId;
    setTimeout(() => document.dispatchEvent(new CustomEvent("pagecontext:command-done",
      {detail: {commandId, status: "applied"}})), 300);
    document.documentElement.setAttribute("data-left", "");
    location.href = away;
  });
}"""


def test_a_command_pending_while_the_page_is_kept_frozen_is_judged_on_the_time_it_ran(
    playwright: Playwright, browser_type_launch_args: dict[str, Any], origins: Origins
) -> None:
    """The page takes a highlight and the user leaves it before it answers; the browser
    keeps the page (both frames, both workers) frozen in its back/forward cache for
    longer than the command's 10 s deadline. Shown again, the page answers 300 ms later:
    the receipt is `applied`, not `unconfirmed`, since the deadline counts only the
    time the two frames ran. (The 11 s away are the scenario itself, not a wait for
    state.)"""
    browser = playwright.chromium.launch(
        **browser_type_launch_args, ignore_default_args=["--disable-back-forward-cache"]
    )
    try:
        page = browser.new_context().new_page()
        page.goto(origins.page + "/")
        wait_bound(page)
        assistant = panel(page)
        wait_bound(assistant)
        pin(page, assistant, ROW)
        page.evaluate(LEAVE_WITH_A_HIGHLIGHT_PENDING, origins.page + "/py/runtime.json")
        with page.expect_navigation(url=origins.page + "/py/runtime.json"):
            assistant.get_by_role("button", name="Show me").click()
        page.wait_for_timeout(11_000)
        page.go_back(wait_until="commit")
        if not page.evaluate("document.documentElement.hasAttribute('data-left')"):
            pytest.skip("the browser did not keep the page in its back/forward cache")
        frame = FrameByProtocol(browser, page, origins.assistant + "/")
        frame.wait_for('[data-pc-receipt][data-pc-receipt-status="applied"]')
        assert "unconfirmed" not in frame.evaluate(
            "() => document.querySelector('[data-pc-receipt]').textContent", None
        )
    finally:
        browser.close()


def test_a_command_that_is_not_plain_data_gets_a_rejected_receipt(
    demo: Page, origins: Origins
) -> None:
    """A command whose messageId can be read but which holds a value JSON cannot carry
    (undefined, a BigInt) or that is not plain data (a Map, a Date) is answered `rejected`
    with its reason, as one that does not validate is, not dropped in silence; nothing
    is highlighted; one that has no readable messageId, or that the page's realm cannot
    deserialize at all (a WebAssembly.Module from another agent cluster), is counted
    once."""
    demo.locator(f'tr[data-pc-resource-ref="{ROW}"]').click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")
    scripted = f"{origins.assistant}/e2e/scripted-assistant.html?page={origins.page}"
    assistant = swap_assistant(demo, scripted)
    expect(html(assistant)).to_have_attribute("data-scripted", "connected", timeout=BOOT_TIMEOUT_MS)
    before = diagnose(demo)
    demo.frames[1].evaluate(
        """(ref) => {
          const command = (messageId, target) => ({type: "command", messageId, basisRevision: 1,
            action: "highlight", target, params: {tone: "focus"}});
          sendRaw(command("u-1", {componentId: "sales-table", resourceRef: undefined}));
          sendRaw(command("u-2", {componentId: "sales-table", resourceRef: 1n}));
          sendRaw(command("u-3", new Map([["componentId", "sales-table"]])));
          sendRaw(command("u-4", {componentId: "sales-table", resourceRef: ref, at: new Date()}));
          sendRaw({...command(undefined, {componentId: "sales-table", resourceRef: undefined})});
          // A value the page's realm cannot even deserialize: it arrives as messageerror.
          const module = new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));
          sendRaw(command("u-6", {componentId: "sales-table", resourceRef: module}));
          sendCommand("u-5", "highlight", "sales-table", "no-such-row", 1);
        }""",
        ROW,
    )
    # The last, a valid command: answered after everything sent before it.
    expect(html(assistant)).to_have_attribute(
        "data-received-u-5", "not-found:not-rendered", timeout=STEP_TIMEOUT_MS
    )
    for command_id, reason in (
        ("u-1", "not-json"),
        ("u-2", "not-json"),
        ("u-3", "not-plain"),
        ("u-4", "not-plain"),
    ):
        expect(html(assistant)).to_have_attribute(
            f"data-received-{command_id}", f"rejected:{reason}", timeout=STEP_TIMEOUT_MS
        )
    expect(demo.locator("[data-pc-highlight]")).to_have_count(0)
    after = diagnose(demo)
    assert after["port-refused"] - before["port-refused"] == 6, (before, after)
