"""The page integration surface in Chromium (docs/integration.md): a bad config fails
loudly and names its field; `pagecontext:state` follows the connection and the
selection; a page that keeps its own selection shares it with `pagecontext:select`; a
page that carries out a command itself gets an honest receipt; share mode `select`."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import BrowserContext, FrameLocator, Page, Route, expect

from .conftest import BOOT_TIMEOUT_MS, STEP_TIMEOUT_MS, Origins, wait_bound
from .helpers import (
    EDGE_STARTED,
    OTHER_ROW,
    RENDER_CHILD_FRAME_ANEW,
    ROW,
    HeldWasm,
    after_collection,
    after_console_settles,
    assistant_timeouts,
    diagnose_now,
    fetched,
    html,
    navigate_soon,
    open_preview,
    panel,
    pin,
    preview_text,
    receipt,
    said_in_console,
    scripted_command,
    select_and_ask,
    show_and_expect,
    use_scripted_assistant,
    worker_report,
    worker_script,
)

# Every `pagecontext:state` detail carries these keys, in this order.
STATE_KEYS = ("state", "connection", "revision", "sharedRevision", "child", "error")
RECORD_STATES = """
window.__pcStates = [];
document.addEventListener("pagecontext:state", (event) => window.__pcStates.push(event.detail));
"""


def quick_child_report(origins: Origins, child_url: str, child_ms: int = 500) -> str:
    """A configured page of the page's origin framing `child_url`, which reports its
    child `silent` past `child_ms`."""
    config = {
        "role": "page",
        "peerOrigin": origins.assistant,
        "childUrl": child_url,
        "timeouts": {"childMs": child_ms},
    }
    return f"{origins.page}/e2e/configured.html?frame=1&config={quote(json.dumps(config))}"


def child_reports(page: Page) -> list[str | None]:
    """The `child` values of the `pagecontext:state` details recorded (RECORD_STATES),
    each once per run of equal ones: what the page reported of its child, in order."""
    states: list[dict[str, Any]] = page.evaluate("window.__pcStates")
    return [
        s["child"] for i, s in enumerate(states) if i == 0 or states[i - 1]["child"] != s["child"]
    ]


def assert_last_state_failed(page: Page, error: str) -> None:
    """The last `pagecontext:state` detail the page recorded is `failed` with `error`,
    every other key null."""
    expected = {**dict.fromkeys(STATE_KEYS), "state": "failed", "error": error}
    assert page.evaluate("window.__pcStates.at(-1)") == expected


def failed_with(page: Page, field: str) -> str:
    """Wait for `failed` with a reason naming `field`; return the reason."""
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=BOOT_TIMEOUT_MS)
    error = html(page).get_attribute("data-pc-error") or ""
    assert error.startswith(f"config: {field}: "), error
    return error


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"peerOrigin": "{assistant}/"}, "peerOrigin"),
        ({"peerOrigin": "*"}, "peerOrigin"),
        ({"peerOrigin": "{assistant}", "share": "always"}, "share"),
        ({"peerOrigin": "{assistant}", "limits": {"maxRows": 5}}, "limits.maxRows"),
        # Below what the assistant's own commands need: every one would be refused.
        ({"peerOrigin": "{assistant}", "limits": {"maxIdChars": 16}}, "limits.maxIdChars"),
        ({"peerOrigin": "{assistant}", "position": "top"}, "position"),
        ({"peerOrigin": "{assistant}", "timeouts": {"bootMs": 0}}, "timeouts.bootMs"),
        ({"peerOrigin": "{assistant}", "childUrl": "http://elsewhere.test/a"}, "childUrl"),
        ({"peerOrigin": "{assistant}", "assistantUrl": "{assistant}/"}, "assistantUrl"),
        # Valid options, but an embedder page without its <iframe data-pc-child>.
        ({"peerOrigin": "{assistant}"}, "position"),
    ],
)
def test_a_bad_config_fails_loudly_naming_the_field(
    page: Page, origins: Origins, config: dict[str, Any], field: str
) -> None:
    """The page publishes data-pc-state="failed" with the reason naming the option, the
    same in `pagecontext:state`, and logs it as an error; `data-pc-position` holds a
    position a frame takes, or nothing. The user reads that the page is not set up for
    the assistant, not that a reload would help."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.add_init_script(RECORD_STATES)
    text = json.dumps({"role": "page", **config}).replace("{assistant}", origins.assistant)
    page.goto(f"{origins.page}/e2e/configured.html?config={quote(text)}")
    error = failed_with(page, field)
    expect(html(page)).to_have_attribute("data-pc-error-field", field)
    assert_last_state_failed(page, error)
    assert any(error in message for message in errors), errors
    position = page.evaluate("() => document.documentElement.dataset.pcPosition ?? null")
    assert position in (None, "embedder"), position
    expect(page.locator("[data-pc-state-text]")).to_have_text(
        "The assistant could not start: it is not set up correctly on this page"
    )


def test_a_boot_timeout_tells_the_user_the_assistant_is_slow_and_it_still_binds(
    page: Page, origins: Origins
) -> None:
    """A page whose worker is not ready within `timeouts.bootMs` publishes `failed`
    (`boot-timeout`) and tells its user the assistant is taking longer than usual, not
    to reload (which would start the runtime's download again); ready later, it binds."""
    config = {
        "role": "page",
        "peerOrigin": origins.assistant,
        "childUrl": origins.assistant + "/assistant.html",
        "timeouts": {"bootMs": 1},
    }
    page.goto(f"{origins.page}/e2e/configured.html?frame=1&config={quote(json.dumps(config))}")
    expect(html(page)).to_have_attribute(
        "data-pc-error", re.compile("^boot-timeout: "), timeout=BOOT_TIMEOUT_MS
    )
    words = page.locator("[data-pc-state-text]")
    expect(words).to_have_text(SLOW_START)
    wait_bound(page)
    expect(words).to_have_text("Assistant connected")


# Said past the boot's timeout, with how much of the runtime is downloaded on a slow
# first visit.
SLOW_START = re.compile(
    r"^The assistant is taking longer than usual to start…( \(\d*0% downloaded\))?$"
)


def test_a_slow_first_visit_says_how_much_of_the_runtime_is_downloaded(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """A first visit whose download of the runtime is held up (its wasm held, the rest
    read) says how much of the runtime's files it has downloaded, on <html
    data-pc-boot-progress> and in the state's words; once the runtime is in, the words
    are the usual ones and the progress is gone."""
    held = HeldWasm(context, origins)
    held.goto(page, origins.page + "/")
    root = html(page)
    expect(root).to_have_attribute(
        "data-pc-boot-progress", re.compile(r"^\d+$"), timeout=STEP_TIMEOUT_MS
    )
    percent = int(root.get_attribute("data-pc-boot-progress") or "")
    assert 0 < percent < 100, percent
    words = page.locator("[data-pc-state-text]")
    expect(words).to_have_text(re.compile(r"^Connecting… \(\d*0% downloaded\)$"))
    held.release()
    wait_bound(page)
    expect(root).not_to_have_attribute("data-pc-boot-progress", re.compile(".*"))
    expect(words).to_have_text("Assistant connected")


# The failure's red, of the connection's dot (web/styles.css).
FAILED_DOT = "rgb(239, 68, 68)"


def expect_a_slow_start(assistant: FrameLocator) -> None:
    """The assistant reports a boot timeout and still says it is starting, its dot not
    the failure's red."""
    expect(html(assistant)).to_have_attribute(
        "data-pc-error", re.compile("^boot-timeout: "), timeout=BOOT_TIMEOUT_MS
    )
    expect(assistant.locator("[data-pc-state-text]")).to_have_text(SLOW_START)
    starting = assistant.locator(".pc-starting")
    expect(starting).to_be_visible()
    expect(starting).to_have_text("The assistant is starting…")
    expect(assistant.locator(".pc-dot")).not_to_have_css("background-color", FAILED_DOT)


def test_an_assistant_past_its_boot_timeout_still_says_it_is_starting(
    page: Page, origins: Origins
) -> None:
    """An assistant whose worker is not ready within `timeouts.bootMs` keeps saying, in
    its context area, that it is starting (a boot timeout is not final), its dot not the
    failure's red; bound later, the panel is drawn."""
    page.context.route(f"{origins.assistant}/assistant.html*", assistant_timeouts(bootMs=1))
    page.goto(origins.page + "/")
    assistant = panel(page)
    expect_a_slow_start(assistant)
    starting = assistant.locator(".pc-starting")
    wait_bound(assistant)
    expect(starting).to_have_count(0)
    expect(assistant.locator("[data-pc-chips] .pc-empty")).to_be_visible()


def test_a_failure_after_a_boot_timeout_replaces_it(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """A boot timeout is not final, and a failure after it is: an assistant whose
    worker's script does not load past its boot timeout reports that failure, and its
    panel no longer says it is starting."""
    held: list[Route] = []
    context.route(worker_script(origins.assistant), lambda route: held.append(route))
    context.route(f"{origins.assistant}/assistant.html*", assistant_timeouts(bootMs=1))
    page.goto(origins.page + "/")
    assistant = panel(page)
    expect_a_slow_start(assistant)
    assert len(held) == 1, held
    held[0].fulfill(status=404, body="")
    expect(html(assistant)).to_have_attribute("data-pc-error", re.compile("^worker: "))
    expect(assistant.locator("[data-pc-state-text]")).to_have_text(
        "The assistant could not start: reload the page to try again"
    )
    expect(assistant.locator(".pc-starting")).to_be_hidden()
    expect(assistant.locator(".pc-dot")).to_have_css("background-color", FAILED_DOT)


@pytest.mark.parametrize("agent_url", ["http://[::1/agent", "http://localhost:8000:9000/agent"])
def test_an_agent_url_the_browser_cannot_parse_fails_loudly(
    page: Page, origins: Origins, agent_url: str
) -> None:
    """An assistant's agentUrl that the config's own checks let through but the browser's
    URL parser refuses is a config error naming agentUrl, at once, not a start that
    throws and a boot timeout a minute later."""
    config = {
        "role": "assistant",
        "position": "child",
        "peerOrigin": origins.assistant,
        "agentUrl": agent_url,
    }
    page.add_init_script(RECORD_STATES)
    page.goto(f"{origins.page}/e2e/configured.html?config={quote(json.dumps(config))}")
    error = failed_with(page, "agentUrl")
    assert agent_url in error, error
    expect(html(page)).to_have_attribute("data-pc-error-field", "agentUrl")
    assert_last_state_failed(page, error)


def test_an_assistant_page_without_the_panel_fails_loudly(page: Page, origins: Origins) -> None:
    """An assistant's page that lacks the panel's required elements fails at once, naming
    what is missing, rather than failing inside its start with no reason published."""
    config = {"role": "assistant", "position": "child", "peerOrigin": origins.page}
    page.add_init_script(RECORD_STATES)
    page.goto(f"{origins.assistant}/e2e/configured.html?config={quote(json.dumps(config))}")
    error = failed_with(page, "role")
    assert "missing [data-pc-chips], [data-pc-show], [data-pc-receipt]" in error, error
    assert_last_state_failed(page, error)


def test_a_config_that_is_not_a_json_object_fails_loudly(page: Page, origins: Origins) -> None:
    """Text that is not a JSON object fails before Python starts, saying where the config
    is, and logs it with `console.error` as every failure is (not as an uncaught error)."""
    errors: list[str] = []
    uncaught: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: uncaught.append(str(error)))
    page.goto(f"{origins.page}/e2e/configured.html?config={quote('[1, 2]')}")
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=BOOT_TIMEOUT_MS)
    expect(html(page)).to_have_attribute(
        "data-pc-error", re.compile(r"^config: the <script.* \(it holds an array\)$")
    )
    page.wait_for_function("() => document.readyState === 'complete'")
    assert any(m.startswith("pagecontext: config: the <script") for m in errors), errors
    assert uncaught == []


# In the top frame: the order in which its state changed and its child frame was given
# a URL to load.
RECORD_CHILD_LOAD = """
if (window.top === window) {
  window.__pcOrder = [];
  new MutationObserver((records) => {
    for (const record of records) {
      const element = record.target;
      if (element === document.documentElement && record.attributeName === "data-pc-state") {
        window.__pcOrder.push("state:" + element.getAttribute("data-pc-state"));
      } else if (record.attributeName === "src" && element.matches("[data-pc-child]")) {
        window.__pcOrder.push("child-loaded");
      }
    }
  }).observe(document, {subtree: true, attributeFilter: ["data-pc-state", "src"]});
}
"""


def _child_load_order(page: Page) -> list[str]:
    """What the top frame recorded, up to and including its child's first load."""
    order: list[str] = page.evaluate("window.__pcOrder")
    assert "child-loaded" in order, order
    return order[: order.index("child-loaded") + 1]


def test_a_business_page_loads_its_assistant_once_its_runtime_is_up(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """By default (`childLoad: "staggered"`) the assistant's frame waits for the page's
    Python runtime: while the page's worker waits for its wasm, the frame has no URL;
    once the runtime is instantiated it loads, before the page's core is ready, and the
    two bind."""
    held = HeldWasm(context, origins)
    page.add_init_script(RECORD_CHILD_LOAD)
    held.goto(page, origins.page + "/")
    assert page.locator("[data-pc-child]").get_attribute("src") is None
    held.release()
    wait_bound(page)
    wait_bound(panel(page))
    assert _child_load_order(page)[-2:] == ["state:booting", "child-loaded"]


def test_a_page_may_load_its_assistant_at_once(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """With `childLoad: "at-once"` the assistant's frame loads as the edge starts, while
    the page's worker still waits for its wasm, and the two bind as usual."""
    held = HeldWasm(context, origins)
    config = {
        "role": "page",
        "peerOrigin": origins.assistant,
        "childUrl": origins.assistant + "/assistant.html",
        "childLoad": "at-once",
    }
    query = quote(json.dumps(config))
    held.goto(page, f"{origins.page}/e2e/configured.html?frame=1&config={query}")
    expect(page.locator("[data-pc-child]")).to_have_attribute(
        "src", re.compile("^" + re.escape(origins.assistant + "/assistant.html#pc-nonce="))
    )
    held.release()
    wait_bound(page)
    wait_bound(panel(page))


def test_a_child_that_loads_before_its_nonce_binds_once_given_one(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The assistant's document loads before the page gave it a nonce (the iframe's own
    `src`, as a frame restored by a back navigation has): its `ready` binds nothing and
    breaks nothing (the page never reports `failed`); once the page's runtime is up, the
    page gives it a nonce and the two bind, connection 1."""
    page.add_init_script(RECORD_STATES)
    held = HeldWasm(context, origins)
    # The child's document waits until the page listens, so that its `ready` reaches it.
    documents: list[Route] = []
    context.route(f"{origins.assistant}/assistant.html", lambda route: documents.append(route))
    config = {
        "role": "page",
        "peerOrigin": origins.assistant,
        "childUrl": origins.assistant + "/assistant.html",
    }
    query = quote(json.dumps(config))
    url = f"{origins.page}/e2e/configured.html?frame=1&src=1&config={query}"
    held.goto(page, url, wait_for_load=False)  # its load waits for the held child
    assert len(documents) == 1, documents
    documents[0].fallback()
    # The child's edge has begun: it announced itself while the page had no nonce.
    expect(html(panel(page))).to_have_attribute("data-pc-position", "child")
    child = next(frame for frame in page.frames if frame.url.startswith(origins.assistant))
    child.wait_for_function(EDGE_STARTED, timeout=BOOT_TIMEOUT_MS)
    held.release()
    wait_bound(page)
    wait_bound(panel(page))
    states = [state["state"] for state in page.evaluate("window.__pcStates")]
    assert states == ["booting", "ready", "bound"], states


@pytest.mark.parametrize("renders", [1, 2])
def test_a_child_frame_the_page_renders_anew_binds_again(demo: Page, renders: int) -> None:
    """The page replaces its bound assistant's iframe with a new element, as a
    framework's render does (its `data-pc-child` and `data-pc-src`, no `src`), once, or
    twice in two tasks in a row (before the first new frame has loaded anything). The
    page binds the last frame (connection 2, the new document's connection 1) and its
    commands apply."""
    wait_bound(panel(demo))
    demo.evaluate(RENDER_CHILD_FRAME_ANEW, renders)
    wait_bound(demo, 2)
    assistant = panel(demo)
    wait_bound(assistant)
    pin(demo, assistant, ROW)
    show_and_expect(assistant, "applied")
    expect(demo.locator("iframe[data-pc-child]")).to_have_count(1)


def test_a_child_that_does_not_answer_is_reported_and_binds_when_it_comes(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The assistant's document does not come (held here, as a server that is down): past
    `timeouts.childMs` the page says so, in the console (naming the frame's URL), on
    `<html data-pc-child-state="silent">` and in `pagecontext:state`, without failing.
    When the document comes, the frames bind as usual and the report is withdrawn."""
    page.add_init_script(RECORD_STATES)
    documents: list[Route] = []
    child_url = origins.assistant + "/assistant.html"
    context.route(child_url, lambda route: documents.append(route))
    silent = lambda message: message.type == "warning" and child_url in message.text  # noqa: E731
    with page.expect_console_message(silent, timeout=BOOT_TIMEOUT_MS):
        page.goto(quick_child_report(origins, child_url), wait_until="commit")
        expect(html(page)).to_have_attribute(
            "data-pc-child-state", "silent", timeout=BOOT_TIMEOUT_MS
        )
    expect(html(page)).to_have_attribute("data-pc-state", "ready")
    expect(html(page)).not_to_have_attribute("data-pc-error", re.compile(".*"))
    last = page.evaluate("window.__pcStates.at(-1)")
    assert (last["state"], last["child"], last["error"]) == ("ready", "silent", None), last
    words = page.locator("[data-pc-state-text]")
    expect(words).to_have_text("The assistant is not answering")
    assert len(documents) == 1, documents
    documents[0].fallback()
    wait_bound(page)
    wait_bound(panel(page))
    expect(html(page)).not_to_have_attribute("data-pc-child-state", re.compile(".*"))
    expect(words).to_have_text("Assistant connected")
    assert child_reports(page) == [None, "silent", None]


def refuse_child(page: Page, origins: Origins, child_ms: int) -> str:
    """Load a page (reporting its child silent past `child_ms`) whose child answers and
    sends a Map first on the port, which the page's worker refuses; wait for the page to
    report it refused, in its console and on `<html data-pc-child-state>`. Return the
    child's URL."""
    page.add_init_script(RECORD_STATES)
    child_url = f"{origins.assistant}/e2e/scripted-assistant.html?page={origins.page}&first=map"
    refused = lambda message: (  # noqa: E731
        message.type == "error" and "handshake was refused (not-connected)" in message.text
    )
    with page.expect_console_message(refused, timeout=BOOT_TIMEOUT_MS):
        page.goto(quick_child_report(origins, child_url, child_ms), wait_until="commit")
        expect(html(page)).to_have_attribute(
            "data-pc-child-state", "refused", timeout=BOOT_TIMEOUT_MS
        )
    return child_url


# Prepended to the page's worker: it holds back each `unbound` to its edge, and what
# it posts after it, until the edge hands it a port (the `port` the edge sends for a
# child's `ready` with its nonce), so that the edge takes that `unbound` after the new
# document announced itself, as it does when the worker is slow to answer.
HOLD_UNBOUND_UNTIL_THE_NEXT_PORT = """(() => {
  const send = self.postMessage.bind(self);
  let held = null;
  self.postMessage = (message, ...rest) => {
    if (held === null && message?.kind === "unbound") held = [];
    if (held === null) send(message, ...rest);
    else held.push([message, rest]);
  };
  self.addEventListener("message", (event) => {
    if (held === null || event.data?.kind !== "port") return;
    for (const [message, rest] of held.splice(0)) send(message, ...rest);
    held = null;
  });
})();
"""

# A page's own timer, armed once the page is bound again: it fires after any timer of the
# same length the page's edge armed before it.
AFTER = """(ms) => new Promise((resolve) => setTimeout(resolve, ms))"""


def test_a_reloaded_child_bound_again_is_not_reported_silent_later(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The child reloads itself, and the page's worker's `unbound` for the binding that
    ended reaches the edge after the new document announced itself: the page binds the
    new document and does not report it silent `timeouts.childMs` later."""
    page.add_init_script(RECORD_STATES)

    def hold(route: Route) -> None:
        response = fetched(route)
        route.fulfill(response=response, body=HOLD_UNBOUND_UNTIL_THE_NEXT_PORT + response.text())

    context.route(worker_script(origins.page), hold)
    child_ms = 2000
    page.goto(quick_child_report(origins, origins.assistant + "/assistant.html", child_ms))
    wait_bound(page)
    navigate_soon(page.frames[1], "location.reload()")
    wait_bound(page, 2)
    reported = len(child_reports(page))
    page.evaluate(AFTER, child_ms)
    expect(html(page)).to_have_attribute("data-pc-state", "bound")
    expect(html(page)).not_to_have_attribute("data-pc-child-state", re.compile(".*"))
    assert "silent" not in child_reports(page)[reported:], child_reports(page)


def test_a_child_whose_handshake_is_refused_is_reported_refused(
    page: Page, origins: Origins
) -> None:
    """The child answers, and its first message on the port is not a `connected` (a
    Map): the page's worker refuses the handshake. The page says so at once, in the
    console (naming the frame's URL and the reason), on
    `<html data-pc-child-state="refused">` and in `pagecontext:state`. Reloaded as an
    assistant that binds, the child answers again, and the report is withdrawn."""
    # Reported silent only past the boot timeout: not while the assistant that replaces
    # it below boots.
    refuse_child(page, origins, BOOT_TIMEOUT_MS)
    expect(html(page)).to_have_attribute("data-pc-rejected-handshake-not-connected", "1")
    expect(html(page)).to_have_attribute("data-pc-state", "ready")
    assert child_reports(page) == [None, "refused"]
    words = page.locator("[data-pc-state-text]")
    expect(words).to_have_text("The assistant could not connect to this page")
    page.evaluate(
        "url => document.querySelector('iframe[data-pc-child]').setAttribute('data-pc-src', url)",
        origins.assistant + "/assistant.html",
    )
    navigate_soon(page.frames[1], "location.reload()")
    wait_bound(page)
    expect(html(page)).not_to_have_attribute("data-pc-child-state", re.compile(".*"))
    assert child_reports(page) == [None, "refused", None]
    expect(words).to_have_text("Assistant connected")


def test_a_refused_child_reloaded_while_its_server_is_down_is_reported_silent(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The refused child's user reloads it, and its server is down: the refused document
    is gone, and the page reports the frame silent past `timeouts.childMs`, as for a
    first load, not refused for good."""
    child_url = refuse_child(page, origins, 500)
    document = child_url.split("?")[0]
    context.route(
        lambda url: url.startswith(document), lambda route: route.abort("connectionrefused")
    )
    child = next(frame for frame in page.frames if frame.url.startswith(document))
    navigate_soon(child, "location.reload()")
    expect(html(page)).to_have_attribute("data-pc-child-state", "silent", timeout=BOOT_TIMEOUT_MS)
    assert child_reports(page)[-2:] == ["refused", "silent"]
    expect(html(page)).to_have_attribute("data-pc-state", "ready")


# Renders a table of `rows` rows anew `times` times, each in a task of its own, in a
# container of its own (no component): what a page refreshing a large view does.
RENDER_TABLES = """async ([rows, times]) => {
  const host = document.body.appendChild(document.createElement("div"));
  for (let render = 0; render < times; render += 1) {
    const table = document.createElement("table");
    for (let row = 0; row < rows; row += 1) {
      const tr = table.appendChild(document.createElement("tr"));
      tr.appendChild(document.createElement("td")).textContent = String(row);
      tr.appendChild(document.createElement("td")).textContent = String(render);
    }
    host.replaceChildren(table);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  host.remove();
}"""


def test_what_the_page_takes_out_of_its_document_is_not_kept_alive(demo: Page) -> None:
    """The page renders a 2,000-row table anew 40 times: after a full garbage
    collection it holds no more nodes than before (each table is 10,001). The embedder
    watches the document for its frame being replaced; what the page takes out is not
    kept for it."""
    before = after_collection(demo, "Memory.getDOMCounters", "nodes")
    demo.evaluate(RENDER_TABLES, [2000, 40])
    after = after_collection(demo, "Memory.getDOMCounters", "nodes")
    assert after - before < 10_001, (before, after)
    expect(html(demo)).to_have_attribute("data-pc-state", "bound")


def test_a_bound_child_that_reloads_and_does_not_come_back_is_reported(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The bound assistant reloads and its server is down (its document's request
    fails): the page, unbound, says past `timeouts.childMs` that the child is silent,
    in the console and on `<html data-pc-child-state>`, as for a first load, rather than
    "Connecting…" for good."""
    child_url = origins.assistant + "/assistant.html"
    page.goto(quick_child_report(origins, child_url))
    wait_bound(page)
    wait_bound(panel(page))
    context.route(child_url, lambda route: route.abort("connectionrefused"))
    child = next(frame for frame in page.frames if frame.url.startswith(origins.assistant))
    silent = lambda message: message.type == "warning" and child_url in message.text  # noqa: E731
    with page.expect_console_message(silent, timeout=BOOT_TIMEOUT_MS):
        navigate_soon(child, "location.reload()")
        expect(html(page)).to_have_attribute(
            "data-pc-child-state", "silent", timeout=BOOT_TIMEOUT_MS
        )
    expect(html(page)).to_have_attribute("data-pc-state", "ready")
    expect(html(page)).not_to_have_attribute("data-pc-error", re.compile(".*"))


def test_a_page_whose_core_fails_still_loads_its_assistant(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The assistant never waits for a runtime that will not come: when the page's worker
    cannot load Pyodide, the page reports `failed` (the worker fails before the page's
    edge listens; its message waits for the edge) and its assistant frame loads and
    boots all the same. The assistant does not claim to be bound (nothing acknowledged
    its `connected`): it says it waits for the page."""
    context.route(f"{origins.page}/vendor/**/pyodide.mjs", lambda route: route.abort())
    page.add_init_script(RECORD_CHILD_LOAD)
    page.goto(origins.page + "/")
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=BOOT_TIMEOUT_MS)
    expect(html(page)).to_have_attribute("data-pc-error", re.compile(r"^worker: "))
    # It answered the page's connect, and no `bound` comes from a worker that never ran.
    child = html(panel(page))
    expect(child).to_have_attribute("data-pc-state", "connecting", timeout=BOOT_TIMEOUT_MS)
    assert child.get_attribute("data-pc-connection") is None
    expect(panel(page).locator("[data-pc-state-text]")).to_have_text("Waiting for the page…")
    expect(page.locator("[data-pc-state-text]")).to_have_text(
        "The assistant could not start: reload the page to try again"
    )
    assert _child_load_order(page)[-2:] == ["state:failed", "child-loaded"]


def test_a_worker_script_that_does_not_load_fails_the_page_at_once(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """A worker whose script does not load (here a 404) fails the page with a `worker:`
    reason as soon as its `error` event comes, not at the boot timeout, and reports it by
    `pagecontext:state`; the assistant frame loads all the same."""
    context.route(
        f"{origins.page}/web/worker.mjs",
        lambda route: route.fulfill(status=404, body="not here"),
    )
    page.add_init_script(RECORD_STATES)
    page.goto(origins.page + "/")
    expect(html(page)).to_have_attribute(
        "data-pc-error", re.compile(r"^worker: "), timeout=BOOT_TIMEOUT_MS
    )
    expect(html(page)).to_have_attribute("data-pc-state", "failed")
    last = page.evaluate("window.__pcStates.at(-1)")
    assert (last["state"], last["error"]) == ("failed", html(page).get_attribute("data-pc-error"))
    expect(html(panel(page))).to_have_attribute(
        "data-pc-position", "child", timeout=BOOT_TIMEOUT_MS
    )


def test_a_bound_worker_stopped_by_an_uncaught_error_is_ended_and_its_page_stays_failed(
    page: Page, origins: Origins
) -> None:
    """The page's worker, bound, stops on an uncaught error: the page says `failed` with
    the error, once, and stays so (what the worker still posts as it is ended, the
    `unbound` its `bye` makes, does not undo it), in words that say it stopped, not
    that it could not start; the worker is ended, and the assistant, told `bye`, waits
    for its page again."""
    page.add_init_script(RECORD_STATES)
    page.goto(origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    [worker] = [w for w in page.workers if w.url.startswith(origins.page)]
    with worker.expect_event("close", timeout=STEP_TIMEOUT_MS):
        worker.evaluate("setTimeout(() => { throw new Error('stopped here'); })")
    expect(html(panel(page))).to_have_attribute("data-pc-state", "ready")
    expect(html(page)).to_have_attribute("data-pc-state", "failed")
    expect(html(page)).to_have_attribute("data-pc-error", re.compile("^worker: .*stopped here"))
    # It had started: it stopped.
    expect(page.locator("[data-pc-state-text]")).to_have_text(
        "The assistant stopped: reload the page to try again"
    )
    states = [state["state"] for state in page.evaluate("window.__pcStates")]
    assert states[-1] == "failed", states
    assert states.count("failed") == 1, states


def test_a_bound_assistant_whose_worker_stopped_is_reported_not_answering(
    page: Page, origins: Origins
) -> None:
    """The assistant's worker, bound, stops on an uncaught error: the assistant says it
    stopped; the page, told `bye`, waits for its child again, and past
    `timeouts.childMs` says the assistant is not answering, not "Connecting…" for good."""
    page.add_init_script(RECORD_STATES)
    page.goto(quick_child_report(origins, origins.assistant + "/assistant.html", 1000))
    wait_bound(page)
    assistant = panel(page)
    wait_bound(assistant)
    [worker] = [w for w in page.workers if w.url.startswith(origins.assistant)]
    with worker.expect_event("close", timeout=STEP_TIMEOUT_MS):
        worker.evaluate("setTimeout(() => { throw new Error('stopped here'); })")
    expect(html(assistant)).to_have_attribute("data-pc-state", "failed")
    expect(assistant.locator("[data-pc-state-text]")).to_have_text(
        "The assistant stopped: reload the page to try again"
    )
    expect(html(page)).to_have_attribute("data-pc-child-state", "silent", timeout=STEP_TIMEOUT_MS)
    expect(html(page)).to_have_attribute("data-pc-state", "ready")
    expect(page.locator("[data-pc-state-text]")).to_have_text("The assistant is not answering")
    assert child_reports(page)[-2:] == [None, "silent"]


def test_a_child_the_pages_policy_will_not_frame_is_said_to_be_set_up_wrong(
    page: Page, origins: Origins
) -> None:
    """The page's `frame-src` leaves out the assistant's origin: the frame never loads,
    the console names the block, and past `timeouts.childMs` the page says it is not set
    up correctly (a reload would not mend it), not only that the assistant is silent."""
    url = quick_child_report(origins, origins.assistant + "/assistant.html")

    def other_frames(route: Route) -> None:
        response = fetched(route)
        policy = {"content-security-policy": "frame-src 'self'"}
        route.fulfill(response=response, headers={**response.headers, **policy})

    page.route(lambda address: address == url, other_frames)
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.goto(url)
    expect(html(page)).to_have_attribute("data-pc-child-state", "silent", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("[data-pc-state-text]")).to_have_text(
        "The assistant could not start: it is not set up correctly on this page"
    )
    named = f"pagecontext: the page's Content-Security-Policy frame-src blocked {origins.assistant}"
    assert any(error.startswith(named) for error in errors), errors


def test_a_workbench_whose_page_is_silent_waits_for_the_page(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The assistant's workbench frames the business page, whose server is down: past
    `timeouts.childMs` it reports its child silent, and its words still say it waits for
    the page, not that the assistant (itself) is not answering."""
    workbench = origins.assistant + "/workbench.html"
    peer = f'"peerOrigin": "{origins.page}",'

    def quick_report(route: Route) -> None:
        response = fetched(route)
        assert peer in response.text()
        body = response.text().replace(peer, peer + ' "timeouts": {"childMs": 500},')
        route.fulfill(response=response, body=body)

    page.route(workbench, quick_report)
    context.route(origins.page + "/", lambda route: route.abort("connectionrefused"))
    page.goto(workbench)
    expect(html(page)).to_have_attribute("data-pc-child-state", "silent", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("[data-pc-state-text]")).to_have_text("Waiting for the page…")


def test_state_events_follow_the_connection_and_the_selection(page: Page, origins: Origins) -> None:
    """`pagecontext:state` goes booting, ready, bound (connection 1), then carries the
    selection's revision and the revision shared with the assistant. The assistant, the
    child, is `connecting` between its `connected` and the page's `bound`."""
    page.add_init_script(RECORD_STATES)
    page.goto(origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    select_and_ask(page, ROW)
    expect(panel(page).locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    states: list[dict[str, Any]] = page.evaluate("window.__pcStates")
    assert all(list(s) == list(STATE_KEYS) for s in states), states
    assert (states[0]["connection"], states[0]["revision"], states[0]["error"]) == (None,) * 3
    order = [
        s["state"] for i, s in enumerate(states) if i == 0 or states[i - 1]["state"] != s["state"]
    ]
    assert order == ["booting", "ready", "bound"], states
    last = states[-1]
    assert (last["state"], last["connection"], last["revision"]) == ("bound", 1, 1), states
    assert last["sharedRevision"] == 1, states
    assistant = next(frame for frame in page.frames if frame.url.startswith(origins.assistant))
    child: list[dict[str, Any]] = assistant.evaluate("window.__pcStates")
    child_order = [
        s["state"] for i, s in enumerate(child) if i == 0 or child[i - 1]["state"] != s["state"]
    ]
    assert child_order == ["booting", "ready", "connecting", "bound"], child


def test_a_page_that_keeps_its_selection_shares_it_by_event(demo: Page) -> None:
    """`pagecontext:select` then `pagecontext:share`: the chip shows the page's values with
    the component's units and nothing it does not declare shareable; a select for an
    unknown component is refused and counted, and changes nothing."""
    demo.evaluate(
        """ref => {
          const values = {region: "East", month: "2026-05", unitsSold: 12, revenueEur: 3.5,
                          internalNote: "not shareable"};
          document.dispatchEvent(new CustomEvent("pagecontext:select",
            {detail: {componentId: "sales-table", resourceRef: ref, values}}));
          document.dispatchEvent(new CustomEvent("pagecontext:share"));
        }""",
        OTHER_ROW,
    )
    chip = panel(demo).locator(f'[data-pc-chip="{OTHER_ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_text("12 units")
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_text("3.5 EUR")
    expect(chip.locator('[data-pc-chip-field="internalNote"]')).to_have_count(0)
    demo.evaluate(
        """() => document.dispatchEvent(new CustomEvent("pagecontext:select",
             {detail: {componentId: "no-such-table", resourceRef: "x"}}))"""
    )
    expect(html(demo)).to_have_attribute("data-pc-refused-select", "1")
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")
    # A number that is not finite is refused, not shared as null.
    for value in ("NaN", "Infinity"):
        demo.evaluate(
            """([ref, value]) => document.dispatchEvent(new CustomEvent("pagecontext:select",
                 {detail: {componentId: "sales-table", resourceRef: ref,
                           values: {unitsSold: Number(value)}}}))""",
            [OTHER_ROW, value],
        )
    expect(html(demo)).to_have_attribute("data-pc-refused-select", "3")
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")


def test_a_field_the_page_stops_declaring_never_leaves_it(demo: Page) -> None:
    """The table stops declaring `revenueEur` shareable and declares `unitsSold` with
    another unit, and reports no render: the row selected before is shared without
    either (a new revision, as the page narrowed it); a row selected after is shared as
    the table declares it now."""
    table = demo.locator('[data-pc-component="sales-table"]')
    demo.locator(f'tr[data-pc-resource-ref="{ROW}"]').click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "1", timeout=STEP_TIMEOUT_MS)
    table.evaluate("t => t.setAttribute('data-pc-shareable', 'region month unitsSold:boxes')")
    demo.get_by_role("button", name="Ask AI").click()
    chip = panel(demo).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="region"]')).to_have_text("North")
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_count(0)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_count(0)

    select_and_ask(demo, OTHER_ROW)
    chip = panel(demo).locator(f'[data-pc-chip="{OTHER_ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "3", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_text(re.compile(" boxes$"))
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_count(0)


def known_components(page: Page) -> int:
    """How many components the page's worker knows (its diagnostics, fresh)."""
    count: int = worker_report(page)["components"]
    return count


def test_a_field_the_page_stops_declaring_before_a_queued_share_goes_never_leaves(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The user selects a row and asks while nothing is bound yet (the page's runtime
    still loading), so the share waits for the binding; the table then stops declaring
    `revenueEur`, with no render and no click. What goes once bound is a new revision
    without it: the worker learns each change of `data-pc-shareable` as it happens."""
    held = HeldWasm(context, origins)
    held.goto(page, origins.page + "/")
    select_and_ask(page, ROW)
    page.locator('[data-pc-component="sales-table"]').evaluate(
        "t => t.setAttribute('data-pc-shareable', 'region month unitsSold:units')"
    )
    held.release()
    chip = panel(page).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=BOOT_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_count(1)
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_count(0)


def test_a_share_reads_what_the_component_in_the_document_declares(demo: Page) -> None:
    """The row is selected; the table is then given a new element declaring fewer fields
    (set before it entered the document, so no change of the attribute is seen), and
    the user asks before its render is reported: what goes is what the element in the
    document declares, not the one the table had."""
    demo.locator(f'tr[data-pc-resource-ref="{ROW}"]').click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "1", timeout=STEP_TIMEOUT_MS)
    demo.locator('[data-pc-component="sales-table"]').evaluate(
        """t => { const narrower = t.cloneNode(true);
             narrower.setAttribute('data-pc-shareable', 'region month');
             t.replaceWith(narrower); }"""
    )
    demo.get_by_role("button", name="Ask AI").click()
    chip = panel(demo).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="month"]')).to_have_count(1)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_count(0)
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_count(0)


def test_a_component_given_a_new_element_or_taken_off_keeps_no_stale_state(
    demo: Page,
) -> None:
    """The table is given a new element of its id and the chart reports a render before
    it: the table is not forgotten, and once it reports for itself its new rows are the
    ones clicked and highlighted. Taken off the page with a row selected and
    highlighted, it is forgotten at the chart's next report and the row loses both
    marks; put back and reported, it works as before."""

    table = '[data-pc-component="sales-table"]'
    render_chart = """() => document.querySelector('[data-pc-component="sales-chart"]')
        .dispatchEvent(new CustomEvent("pagecontext:rendered"))"""
    demo.locator(table).evaluate("t => t.replaceWith(t.cloneNode(true))")
    demo.evaluate(render_chart)
    assert known_components(demo) == 2
    demo.locator(table).dispatch_event("pagecontext:rendered")
    row = demo.locator(f'{table} tr[data-pc-resource-ref="{ROW}"]')
    pin(demo, panel(demo), ROW)
    show_and_expect(panel(demo), "applied")
    expect(row).to_have_attribute("aria-selected", "true")
    expect(row).to_have_attribute("data-pc-highlight", "focus")
    demo.locator(table).evaluate(
        "t => { window.__table = t; window.__row = t.querySelector('[aria-selected=true]');"
        " t.remove(); }"
    )
    demo.evaluate(render_chart)
    assert known_components(demo) == 1
    marks = "() => [window.__row.getAttribute('aria-selected'), window.__row.dataset.pcHighlight]"
    # Not selected (a selectable object says `false`), and not highlighted.
    assert demo.evaluate(marks) == ["false", None]
    demo.evaluate(
        """() => { const chart = '[data-pc-component="sales-chart"]';
             document.querySelector(chart).after(window.__table);
             window.__table.dispatchEvent(new CustomEvent("pagecontext:rendered")); }"""
    )
    assert known_components(demo) == 2
    pin(demo, panel(demo), OTHER_ROW)
    show_and_expect(panel(demo), "applied")
    expect(demo.locator('[aria-selected="true"]')).to_have_count(1)


def test_components_taken_off_the_page_are_forgotten(demo: Page) -> None:
    """A dashboard adds 20 widgets of ids made as they come, each reported rendered,
    then closes them all: at its next reported render neither the edge nor the worker
    keeps them (the worker's count of components is back to the page's two), and the
    page goes on working."""

    assert known_components(demo) == 2
    demo.evaluate(
        """() => { for (let i = 0; i < 20; i += 1) {
             const widget = document.createElement("div");
             widget.className = "closing-widget";
             widget.dataset.pcComponent = `widget-${i}`;
             widget.dataset.pcFilters = "{}";
             widget.dataset.pcGeneration = "1";
             const item = document.createElement("p");
             item.dataset.pcResourceRef = `item-${i}`;
             widget.append(item);
             document.body.append(widget);
             widget.dispatchEvent(new CustomEvent("pagecontext:rendered"));
           } }"""
    )
    assert known_components(demo) == 22
    demo.evaluate(
        """() => { document.querySelectorAll(".closing-widget").forEach((w) => w.remove());
             document.querySelector('[data-pc-component="sales-table"]')
               .dispatchEvent(new CustomEvent("pagecontext:rendered")); }"""
    )
    assert known_components(demo) == 2
    pin(demo, panel(demo), ROW)
    show_and_expect(panel(demo), "applied")


def test_a_click_on_a_row_over_the_assistants_limits_is_refused_and_keeps_the_selection(
    demo: Page,
) -> None:
    """A row whose shared cell holds a string over the protocol's 1,024 characters: the
    assistant would refuse its context and answer nothing, so the page refuses the
    click (counted, logged) and marks the row selected before again; the chip and what
    a question is about stay that row, never a row the page no longer shows selected."""
    table = '[data-pc-component="sales-table"]'
    row = demo.locator(f'{table} tr[data-pc-resource-ref="{ROW}"]')
    other = demo.locator(f'{table} tr[data-pc-resource-ref="{OTHER_ROW}"]')
    chip = pin(demo, panel(demo), ROW)
    expect(chip).to_have_attribute("data-pc-chip-revision", "1")
    messages = said_in_console(demo)
    other.locator('[data-pc-field="region"]').evaluate(
        "cell => cell.setAttribute('data-pc-value', JSON.stringify('x'.repeat(1025)))"
    )
    other.click()
    expect(html(demo)).to_have_attribute("data-pc-refused-select", "1")
    expect(row).to_have_attribute("aria-selected", "true")
    expect(other).not_to_have_attribute("aria-selected", "true")
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")
    assert any("over the limits the assistant applies" in text for text in messages), messages
    demo.get_by_role("button", name="Ask AI").click()
    # The page's worker has taken the click: a share it made would be on <html> by now.
    diagnose_now(demo)
    expect(html(demo)).to_have_attribute("data-pc-shared-revision", "1")
    expect(chip).to_have_attribute("data-pc-chip-revision", "1")
    expect(panel(demo).locator(f'[data-pc-chip="{OTHER_ROW}"]')).to_have_count(0)
    # The same for an object the table does not render (`pagecontext:select`), which
    # unmarks the row on its way: the row is marked again.
    demo.evaluate(
        """() => document.dispatchEvent(new CustomEvent("pagecontext:select", {detail: {
             componentId: "sales-table", resourceRef: "sales-2099-01-nowhere",
             values: {region: "x".repeat(1025)}}}))"""
    )
    expect(html(demo)).to_have_attribute("data-pc-refused-select", "2")
    expect(row).to_have_attribute("aria-selected", "true")
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")


def test_a_row_whose_values_are_not_a_json_object_of_scalars_is_not_selected(
    demo: Page,
) -> None:
    """A row's `data-pc-values` that does not parse, or holds an object: a click on it is
    refused and counted, the console says why, and the row selected before stays
    selected, rather than the row being shared without those values."""
    table = '[data-pc-component="sales-table"]'
    row = demo.locator(f'{table} tr[data-pc-resource-ref="{ROW}"]')
    other = demo.locator(f'{table} tr[data-pc-resource-ref="{OTHER_ROW}"]')
    row.click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")
    messages = said_in_console(demo)
    for count, values in enumerate(["{note: 'x'}", '{"note": {"x": 1}}'], start=1):
        other.evaluate("(row, values) => row.setAttribute('data-pc-values', values)", values)
        other.click()
        expect(html(demo)).to_have_attribute("data-pc-refused-select", str(count))
    expect(row).to_have_attribute("aria-selected", "true")
    expect(other).not_to_have_attribute("aria-selected", "true")
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")
    assert sum("not a JSON object of scalars" in text for text in messages) == 2, messages


def test_a_shareable_unit_written_apart_from_its_field_is_said_in_the_console(
    demo: Page,
) -> None:
    """`data-pc-shareable` with a space after a field's colon (`unitsSold: units`) is
    taken as written, the field shared with no unit, and the console says so once, not
    at every render."""
    table = demo.locator('[data-pc-component="sales-table"]')
    messages = said_in_console(demo)
    with demo.expect_console_message(lambda m: "unitsSold:" in m.text) as warned:
        table.evaluate(
            """(table) => table.setAttribute("data-pc-shareable",
                 "region month unitsSold: units revenueEur:EUR")"""
        )
    assert warned.value.type == "warning"
    assert "sales-table" in warned.value.text
    table.evaluate("""(table) => table.dispatchEvent(new CustomEvent("pagecontext:rendered"))""")
    chip = pin(demo, panel(demo), ROW)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_text("4231")
    diagnose_now(demo)
    assert sum("unitsSold:" in text for text in messages) == 1, messages


def test_integration_events_are_taken_without_bubbles(demo: Page) -> None:
    """A CustomEvent does not bubble unless told to: a `pagecontext:select` dispatched on
    the row itself selects it, and a `pagecontext:rendered` on the component is read
    (here refused and counted, its filters not JSON), neither bubbling."""
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    row.evaluate(
        """(row, ref) => row.dispatchEvent(new CustomEvent("pagecontext:select",
             {detail: {componentId: "sales-table", resourceRef: ref}}))""",
        ROW,
    )
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")
    expect(row).to_have_attribute("aria-selected", "true")
    demo.locator('[data-pc-component="sales-table"]').evaluate(
        """table => { table.setAttribute("data-pc-filters", "{not json");
             table.dispatchEvent(new CustomEvent("pagecontext:rendered")); }"""
    )
    expect(html(demo)).to_have_attribute("data-pc-refused-rendered", "1")


def test_a_select_event_reads_the_rendered_row_as_a_click_does(demo: Page) -> None:
    """`pagecontext:select` with no values, for a rendered row: the chip shows the row's
    cells, as a click would share them, and `aria-selected` moves from the clicked row to
    it. For a row not rendered (a list scrolled away), nothing is read and no row stays
    marked selected."""
    table = '[data-pc-component="sales-table"]'
    row = demo.locator(f'{table} tr[data-pc-resource-ref="{ROW}"]')
    other = demo.locator(f'{table} tr[data-pc-resource-ref="{OTHER_ROW}"]')
    row.click()
    expect(row).to_have_attribute("aria-selected", "true")
    select_event = """ref => {
      document.dispatchEvent(new CustomEvent("pagecontext:select",
        {detail: {componentId: "sales-table", resourceRef: ref}}));
      document.dispatchEvent(new CustomEvent("pagecontext:share"));
    }"""
    demo.evaluate(select_event, OTHER_ROW)
    expect(other).to_have_attribute("aria-selected", "true")
    expect(row).not_to_have_attribute("aria-selected", "true")
    units = json.loads(
        other.locator('[data-pc-field="unitsSold"]').get_attribute("data-pc-value") or ""
    )
    chip = panel(demo).locator(f'[data-pc-chip="{OTHER_ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="region"]')).to_have_text("East")
    expect(chip.locator('[data-pc-chip-field="month"]')).to_have_text("2026-05")
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_text(f"{units} units")
    away = "sales-2026-12-nowhere"
    demo.evaluate(select_event, away)
    chip = panel(demo).locator(f'[data-pc-chip="{away}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "3", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator("[data-pc-chip-field]")).to_have_count(0)
    expect(demo.locator(f'{table} [aria-selected="true"]')).to_have_count(0)


# A long list's row element given to another object (`[element, ref]`), and the render
# reported.
RECYCLE = """([element, ref]) => {
  element.setAttribute("data-pc-resource-ref", ref);
  element.closest("[data-pc-component]")
    .dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
}"""


def test_a_row_recycled_for_another_object_loses_its_marks(demo: Page) -> None:
    """A long list reuses a row's element for another object and reports the render: the
    element no longer carries the highlight and the selection it had for the old one, so
    the user never sees the assistant point at an object it did not name. A row that
    keeps its object keeps its marks."""
    assistant = panel(demo)
    select_and_ask(demo, ROW)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(assistant, "applied")
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    expect(row).to_have_attribute("data-pc-highlight", "focus")
    expect(row).to_have_attribute("aria-selected", "true")
    element = row.element_handle()
    demo.evaluate(
        """() => document.querySelector('[data-pc-component="sales-table"]')
             .dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}))"""
    )
    assert element.get_attribute("data-pc-highlight") == "focus"
    demo.evaluate(RECYCLE, [element, "sales-2026-12-recycled"])
    recycled = demo.locator('tr[data-pc-resource-ref="sales-2026-12-recycled"]')
    expect(recycled).not_to_have_attribute("data-pc-highlight", re.compile(".*"))
    expect(recycled).not_to_have_attribute("aria-selected", "true")


def test_the_selected_row_is_selected_again_in_the_view_a_filter_gives_it(
    demo: Page,
) -> None:
    """The page builds its rows again under another filter that keeps the selected row:
    the new element is the one marked selected (the element it replaced is gone with its
    mark), and the row is selected again in the new view, so "Ask AI" shares it with the
    filters the user sees and Show me for it is `applied`, not `stale-context`. A render
    that keeps the view (a list made anew with the same data) selects nothing again."""
    table = '[data-pc-component="sales-table"]'
    row = demo.locator(f'{table} tr[data-pc-resource-ref="{ROW}"]')
    assistant = panel(demo)
    chip = assistant.locator(f'[data-pc-chip="{ROW}"]')
    select_and_ask(demo, ROW)
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(row).to_have_attribute("aria-selected", "true")
    before = row.element_handle()
    demo.locator('select[name="region"]').select_option("North")
    expect(demo.locator(f"{table} tbody tr")).to_have_count(12, timeout=STEP_TIMEOUT_MS)
    assert before.evaluate("element => element.isConnected") is False
    expect(row).to_have_attribute("aria-selected", "true")
    expect(demo.locator(f'{table} [aria-selected="true"]')).to_have_count(1)
    expect(html(demo)).to_have_attribute("data-pc-revision", "2", timeout=STEP_TIMEOUT_MS)
    # Shared when the user asks (share mode "ask"): the chip is still the one shared.
    expect(html(demo)).to_have_attribute("data-pc-shared-revision", "1")
    # Rebuilt by the page's own hand, as a framework would: an element as rendered, in
    # the same view.
    demo.evaluate(
        """ref => {
          const old = document.querySelector(`tr[data-pc-resource-ref="${ref}"]`);
          const fresh = old.cloneNode(true);
          fresh.setAttribute("aria-selected", "false");
          old.replaceWith(fresh);
          fresh.closest("[data-pc-component]")
            .dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
        }""",
        ROW,
    )
    expect(row).to_have_attribute("aria-selected", "true")
    demo.locator("[data-pc-ask]").click()
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(html(demo)).to_have_attribute("data-pc-revision", "2")
    expect(chip.locator(".pc-chip-meta")).to_contain_text('region="North"')
    show_and_expect(assistant, "applied")
    expect(row).to_have_attribute("data-pc-highlight", "focus")


def test_a_selection_the_page_gave_values_for_is_not_selected_again_by_a_render(
    demo: Page,
) -> None:
    """A selection made with `pagecontext:select` and values of the page's own stays as
    the page made it through a render in another view (the values are the page's to give
    again): no new revision, and Show me for it is `stale-context` (`view-changed`)."""
    table = '[data-pc-component="sales-table"]'
    assistant = panel(demo)
    demo.evaluate(
        """ref => document.dispatchEvent(new CustomEvent("pagecontext:select", {detail: {
          componentId: "sales-table", resourceRef: ref, values: {note: "picked"}}}))""",
        ROW,
    )
    expect(html(demo)).to_have_attribute("data-pc-revision", "1", timeout=STEP_TIMEOUT_MS)
    demo.locator("[data-pc-ask]").click()
    chip = assistant.locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    demo.locator('select[name="region"]').select_option("North")
    expect(demo.locator(f"{table} tbody tr")).to_have_count(12, timeout=STEP_TIMEOUT_MS)
    expect(demo.locator(f'{table} tr[data-pc-resource-ref="{ROW}"]')).to_have_attribute(
        "aria-selected", "true"
    )
    show_and_expect(assistant, "stale-context")
    expect(receipt(assistant)).to_have_text(
        "Not done: the page shows other data since: share it again from the page"
        " [highlight: stale-context (view-changed)]"
    )
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")


def test_a_cells_text_is_shared_as_the_page_shows_it(demo: Page) -> None:
    """A cell without `data-pc-value` is shared by its text as the browser shows it: a
    template's line breaks and indentation around and inside it are one space or none,
    in the chip and in what the model is given; a no-break space stays."""
    cell = demo.locator(f'tr[data-pc-resource-ref="{ROW}"] [data-pc-field="region"]')
    cell.evaluate(
        """cell => {
          cell.removeAttribute("data-pc-value");
          cell.textContent = "\\n        North\\n        \\u00a0Coast\\t  \\n      ";
        }"""
    )
    select_and_ask(demo, ROW)
    chip = panel(demo).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    shown = chip.locator('[data-pc-chip-field="region"]')
    assert shown.evaluate("element => element.textContent") == "North \u00a0Coast"
    open_preview(panel(demo))
    text = preview_text(panel(demo)).evaluate("element => element.textContent")
    assert '"region":"North \u00a0Coast"' in text


def test_the_receipt_line_names_a_locate_that_could_not_focus(demo: Page) -> None:
    """Show me on a row that cannot take the focus (no `tabindex`): the row is
    highlighted (`applied`), and the panel's receipt line also says the locate was
    `not-found` (`not-focusable`), not the highlight's outcome alone. A row that can
    take it shows the highlight's line only."""
    assistant = panel(demo)
    select_and_ask(demo, OTHER_ROW)
    expect(assistant.locator(f'[data-pc-chip="{OTHER_ROW}"]')).to_be_visible(
        timeout=STEP_TIMEOUT_MS
    )
    show_and_expect(assistant, "applied")
    # Once the locate sent with it has settled too, the line still names the highlight
    # alone: the row took the focus.
    expect(receipt(assistant)).to_have_attribute(
        "data-pc-receipt-locate", "applied", timeout=STEP_TIMEOUT_MS
    )
    expect(receipt(assistant)).to_have_text("Highlighted on the page [highlight: applied (ok)]")
    demo.evaluate(
        "ref => document.querySelector(`tr[data-pc-resource-ref='${ref}']`)"
        ".removeAttribute('tabindex')",
        ROW,
    )
    select_and_ask(demo, ROW)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(assistant, "applied")
    expect(receipt(assistant)).to_have_text(
        "Highlighted on the page [highlight: applied (ok)]; the keyboard's focus could not"
        " move to it [locate: not-found (not-focusable)]",
        timeout=STEP_TIMEOUT_MS,
    )
    expect(receipt(assistant)).to_have_attribute("data-pc-receipt-locate", "not-found")
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    expect(row).to_have_attribute("data-pc-highlight", "focus")


def test_a_rendered_event_off_its_component_is_refused_and_counted(demo: Page) -> None:
    """`pagecontext:rendered` dispatched on the document, or on a row inside the
    component, reports no component: each is refused and counted, and the component's
    objects stay as reported (a row selected after it is still shared)."""
    demo.evaluate(
        """() => {
          document.dispatchEvent(new CustomEvent("pagecontext:rendered"));
          document.querySelector('[data-pc-component="sales-table"] tr[data-pc-resource-ref]')
            .dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
        }"""
    )
    expect(html(demo)).to_have_attribute("data-pc-refused-rendered", "2")
    select_and_ask(demo, ROW)
    expect(panel(demo).locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)


def share_two_rows(demo: Page, assistant: FrameLocator) -> None:
    """Select and share ROW, then OTHER_ROW: the scripted `assistant` holds revision 2."""
    for revision, ref in enumerate((ROW, OTHER_ROW), start=1):
        select_and_ask(demo, ref)
        expect(html(assistant)).to_have_attribute(
            "data-context-revision", str(revision), timeout=STEP_TIMEOUT_MS
        )


TAKE_HIGHLIGHTS = """answer => {
  window.__pcCommands = [];
  document.addEventListener("pagecontext:command", (event) => {
    window.__pcCommands.push(event.detail);
    if (event.detail.action !== "highlight") return;  // locate: pagecontext does it
    event.preventDefault();
    const row = event.target.querySelector(
      `[data-pc-resource-ref="${CSS.escape(event.detail.resourceRef)}"]`);
    row.classList.add("page-highlight");
    if (answer) document.dispatchEvent(new CustomEvent("pagecontext:command-done",
      {detail: {commandId: event.detail.commandId, status: "applied"}}));
  });
}"""


def test_a_page_that_highlights_itself_answers_and_gets_an_applied_receipt(demo: Page) -> None:
    """The page cancels `pagecontext:command` for highlight, draws its own highlight and
    answers `pagecontext:command-done`: the receipt is `applied`, pagecontext set no
    highlight of its own, and the command's detail named the pinned row."""
    demo.evaluate(TAKE_HIGHLIGHTS, True)
    select_and_ask(demo, ROW)
    assistant = panel(demo)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(assistant, "applied")
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    expect(row).to_have_class("page-highlight")
    expect(demo.locator("[data-pc-highlight]")).to_have_count(0)
    commands: list[dict[str, Any]] = demo.evaluate("window.__pcCommands")
    highlight = next(c for c in commands if c["action"] == "highlight")
    assert (highlight["componentId"], highlight["resourceRef"]) == ("sales-table", ROW)
    assert highlight["tone"] == "focus"
    # An answer for a command the page did not take is refused, and counted.
    demo.evaluate(
        """() => document.dispatchEvent(new CustomEvent("pagecontext:command-done",
             {detail: {commandId: "never-sent", status: "applied"}}))"""
    )
    expect(html(demo)).to_have_attribute("data-pc-refused-command-done", "1")


def test_a_highlight_the_page_draws_for_another_selection_takes_pagecontexts_marks_away(
    demo: Page, origins: Origins
) -> None:
    """pagecontext marks a row of the table for the first selection; then a component
    that draws the assistant's highlights itself (it takes `pagecontext:command` and
    answers `applied`) draws one for the second: pagecontext's mark in the table goes,
    as it would for a highlight it drew itself (docs/protocol.md 8.15)."""
    demo.evaluate(NESTED)
    demo.evaluate(
        """() => document.querySelector('[data-pc-component="inner"]').addEventListener(
          "pagecontext:command", (event) => {
            event.preventDefault();
            event.target.closest('[data-pc-component]').querySelector(
              `[data-pc-resource-ref="${CSS.escape(event.detail.resourceRef)}"]`
            ).classList.add("page-highlight");
            document.dispatchEvent(new CustomEvent("pagecontext:command-done",
              {detail: {commandId: event.detail.commandId, status: "applied"}}));
          })"""
    )
    assistant = use_scripted_assistant(demo, origins)
    share_two_rows(demo, assistant)
    scripted_command(assistant, "table", "highlight", "sales-table", ROW, 1)
    expect(html(assistant)).to_have_attribute(
        "data-ui-table", "applied:ok", timeout=STEP_TIMEOUT_MS
    )
    marks = demo.locator("[data-pc-highlight]")
    expect(marks).to_have_count(1)
    scripted_command(assistant, "inner", "highlight", "inner", "i:1", 2)
    expect(html(assistant)).to_have_attribute(
        "data-ui-inner", "applied:ok", timeout=STEP_TIMEOUT_MS
    )
    expect(demo.locator('[data-pc-resource-ref="i:1"]')).to_have_class("page-highlight")
    expect(marks).to_have_count(0)


# The table's rows carry their ref under a misspelled attribute, and it reports a render.
MISSPELLED_REFS = """() => {
  const table = document.querySelector('[data-pc-component="sales-table"]');
  for (const row of table.querySelectorAll("[data-pc-resource-ref]")) {
    row.setAttribute("data-pc-resourceref", row.getAttribute("data-pc-resource-ref"));
    row.removeAttribute("data-pc-resource-ref");
  }
  table.dispatchEvent(new CustomEvent("pagecontext:rendered"));
}"""


def test_a_click_in_a_component_with_no_objects_says_so_once(demo: Page) -> None:
    """The page misspells its objects' attribute: a click on a row selects nothing, and
    the console says once that the component reports no objects."""
    demo.evaluate(MISSPELLED_REFS)
    said = "pagecontext: a click in component sales-table selected nothing: it reports no objects"
    warned = said_in_console(demo)
    row = demo.locator(f'tr[data-pc-resourceref="{ROW}"]')
    with demo.expect_console_message(lambda message: message.text.startswith(said)):
        row.click()
    row.click()
    demo.get_by_role("button", name="Ask AI").click()
    expect(html(demo)).not_to_have_attribute("data-pc-revision", re.compile(".*"))
    after_console_settles(demo)
    assert sum(text.startswith(said) for text in warned) == 1, warned


def test_misspelled_markup_of_a_component_is_said_once_in_the_console(demo: Page) -> None:
    """The table's `data-pc-shareable` is misspelled: a click on a row says once that the
    table has an attribute pagecontext does not read, and that it declares no field, so
    its values are not shared (the chip shows none). Declared again with one field
    misspelled: the field with no value and the value not shared are said once, and the
    chip shows the other fields only."""
    table = '[data-pc-component="sales-table"]'
    said = said_in_console(demo)
    demo.evaluate(
        """(table) => {
          const element = document.querySelector(table);
          element.setAttribute("data-pc-shareble", element.getAttribute("data-pc-shareable"));
          element.removeAttribute("data-pc-shareable");
          element.dispatchEvent(new CustomEvent("pagecontext:rendered"));
        }""",
        table,
    )
    unread = (
        "pagecontext: component sales-table has data-pc-shareble, which pagecontext does"
        " not read there"
    )
    none = (
        "pagecontext: component sales-table declares no field shareable (data-pc-shareable);"
        " these of its values are not shared: month, region, revenueEur, unitsSold"
    )
    select_and_ask(demo, ROW)
    chip = panel(demo).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_be_visible(timeout=STEP_TIMEOUT_MS)
    expect(chip.locator("[data-pc-chip-field]")).to_have_count(0)
    demo.locator(f'{table} tr[data-pc-resource-ref="sales-2026-03-south"]').click()
    after_console_settles(demo)
    assert sum(text.startswith(unread) for text in said) == 1, said
    assert sum(text.startswith(none) for text in said) == 1, said
    demo.evaluate(
        """(table) => document.querySelector(table).setAttribute("data-pc-shareable",
             "region month unitsSold:units revnueEur:EUR")""",
        table,
    )
    misspelled = (
        "pagecontext: data-pc-shareable of component sales-table names revnueEur, which this"
        " selection has no value for; these of its values are not shared: revenueEur"
    )
    select_and_ask(demo, ROW)
    expect(chip.locator("[data-pc-chip-field]")).to_have_count(3, timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="revenueEur"]')).to_have_count(0)
    demo.locator(f'{table} tr[data-pc-resource-ref="sales-2026-03-south"]').click()
    after_console_settles(demo)
    assert sum(text.startswith(misspelled) for text in said) == 1, said
    assert sum(text.startswith(unread) for text in said) == 1, said


def test_a_value_kept_on_the_page_beside_a_field_an_object_lacks_is_not_said(
    demo: Page,
) -> None:
    """A correct page: every row of the table has a value it keeps to itself (a `note`
    cell, not declared shareable), and one row has no `unitsSold`, a declared field. A
    click on that row says nothing in the console: the note is not written like the
    field. A `unitsSld` cell in another row is, and is said."""
    said = said_in_console(demo)
    demo.evaluate(
        """([ref, other]) => {
          const table = document.querySelector('[data-pc-component="sales-table"]');
          for (const row of table.querySelectorAll("tr[data-pc-resource-ref]")) {
            const note = document.createElement("td");
            note.setAttribute("data-pc-field", "note");
            note.textContent = "checked";
            row.append(note);
          }
          table.querySelector(`tr[data-pc-resource-ref="${ref}"] [data-pc-field="unitsSold"]`)
            .remove();
          table.querySelector(`tr[data-pc-resource-ref="${other}"] [data-pc-field="unitsSold"]`)
            .setAttribute("data-pc-field", "unitsSld");
          table.dispatchEvent(new CustomEvent("pagecontext:rendered"));
        }""",
        [ROW, OTHER_ROW],
    )
    demo.locator(f'tr[data-pc-resource-ref="{ROW}"]').click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "1", timeout=STEP_TIMEOUT_MS)
    after_console_settles(demo)
    assert [text for text in said if text.startswith("pagecontext:")] == [], said
    demo.locator(f'tr[data-pc-resource-ref="{OTHER_ROW}"]').click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "2", timeout=STEP_TIMEOUT_MS)
    after_console_settles(demo)
    misspelled = (
        "pagecontext: data-pc-shareable of component sales-table names unitsSold, which this"
        " selection has no value for; these of its values are not shared: unitsSld"
    )
    assert [text for text in said if text.startswith("pagecontext:")] == [
        misspelled + " (a name misspelled in data-pc-shareable, data-pc-field or data-pc-values?)"
    ], said


def test_a_page_that_takes_a_command_and_never_answers_leaves_it_unconfirmed(
    demo: Page,
) -> None:
    """A page that cancels `pagecontext:command` and never answers: no UI receipt is sent
    for it, so the assistant records it `unconfirmed` at its deadline, never `applied`;
    the page's console says which command it took and did not answer."""
    demo.evaluate(TAKE_HIGHLIGHTS, False)
    select_and_ask(demo, ROW)
    assistant = panel(demo)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    said = re.compile(
        r"^pagecontext: the page took highlight command \S+ \(it cancelled pagecontext:command\)"
        r" and has not answered it with pagecontext:command-done after 10 s"
    )
    with demo.expect_console_message(
        lambda message: message.type == "warning" and said.match(message.text) is not None,
        timeout=STEP_TIMEOUT_MS,
    ):
        assistant.get_by_role("button", name="Show me").click()
        expect(receipt(assistant)).to_have_attribute(
            "data-pc-receipt-status", "unconfirmed", timeout=STEP_TIMEOUT_MS
        )
    expect(demo.locator("[data-pc-highlight]")).to_have_count(0)


def open_share_select(page: Page, origins: Origins) -> None:
    """Open a configured page with `"share": "select"` and its assistant, once both are
    bound."""
    config = {
        "role": "page",
        "peerOrigin": origins.assistant,
        "childUrl": origins.assistant + "/assistant.html",
        "share": "select",
    }
    page.goto(f"{origins.page}/e2e/configured.html?frame=1&config={quote(json.dumps(config))}")
    wait_bound(page)
    wait_bound(panel(page))


@pytest.mark.parametrize(
    ("filters", "shown"),
    [
        # An order a MicroPython dict does not keep (it reads region, status, to, from).
        (
            '{"status": "open", "from": "2026-01", "to": "2026-06", "region": "North"}',
            'filters: status="open", from="2026-01", to="2026-06", region="North" ·',
        ),
        # A trailing comma: no JSON to JavaScript's JSON.parse, as which the edge reads
        # the attribute (MicroPython's own reader took it): the render is refused, and
        # the selection goes in the view the component last reported (none).
        ('{"status": "open",}', "filters: none ·"),
    ],
)
def test_share_mode_select_shares_every_selection(
    page: Page, origins: Origins, filters: str, shown: str
) -> None:
    """A page configured with `"share": "select"` and a `childUrl` binds its assistant, and
    a selection alone reaches it, with no Ask AI, its filters in the page's order
    (filters JavaScript would not read are refused, never read otherwise)."""
    open_share_select(page, origins)
    page.evaluate(
        """(filters) => {
          const table = document.querySelector('[data-pc-component="orders"]');
          table.setAttribute("data-pc-filters", filters);
          table.dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
          document.dispatchEvent(new CustomEvent("pagecontext:select",
            {detail: {componentId: "orders", resourceRef: "order-7",
                      values: {status: "open", total: 12.5}}}));
        }""",
        filters,
    )
    chip = panel(page).locator('[data-pc-chip="order-7"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="total"]')).to_have_text("12.5 EUR")
    expect(chip.locator(".pc-chip-meta")).to_contain_text(shown)
    expect(html(page)).to_have_attribute("data-pc-shared-revision", "1")


def test_a_table_of_thousands_of_rows_is_selected_and_highlighted_by_its_ref(
    demo: Page,
) -> None:
    """The demo table built anew with 3,000 rows: a click on one deep in it shares that
    row, Show me highlights it and no other, and a click on a row of the old table's
    that is gone selects nothing new."""
    table = '[data-pc-component="sales-table"]'
    old = demo.locator(f'{table} tr[data-pc-resource-ref="{ROW}"]').element_handle()
    demo.evaluate(
        """(table) => {
          const element = document.querySelector(table);
          const rows = [];
          for (let i = 0; i < 3000; i += 1) {
            const row = document.createElement("tr");
            row.setAttribute("data-pc-resource-ref", `many-${i}`);
            row.tabIndex = -1;
            const cell = document.createElement("td");
            cell.setAttribute("data-pc-field", "unitsSold");
            cell.setAttribute("data-pc-value", String(i));
            cell.textContent = String(i);
            row.append(cell);
            rows.push(row);
          }
          element.querySelector("tbody").replaceChildren(...rows);
          element.setAttribute("data-pc-generation", "99");
          element.dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
        }""",
        table,
    )
    # Put back in the table unreported (a click on a detached row would never reach the
    # page's listener): the registry does not hold it, so the click selects nothing, and
    # the click after it is the first selection (revision 1, not 2).
    old.evaluate(
        """(row, table) => {
          document.querySelector(table).querySelector("tbody").append(row);
          row.click();
        }""",
        table,
    )
    # Clicked on the row itself: a pointer at its middle would land on the table, beside
    # its one cell, in the table's four columns.
    demo.locator('tr[data-pc-resource-ref="many-2718"]').evaluate("row => row.click()")
    expect(html(demo)).to_have_attribute("data-pc-revision", "1", timeout=STEP_TIMEOUT_MS)
    demo.locator("[data-pc-ask]").click()
    assistant = panel(demo)
    chip = assistant.locator('[data-pc-chip="many-2718"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="unitsSold"]')).to_have_text("2718 units")
    show_and_expect(assistant, "applied")
    marks = demo.locator("[data-pc-highlight]")
    expect(marks).to_have_count(1)
    expect(demo.locator('tr[data-pc-resource-ref="many-2718"]')).to_have_attribute(
        "data-pc-highlight", "focus"
    )


def test_an_object_whose_ref_holds_a_nul_is_selected_and_highlighted(
    demo: Page, origins: Origins
) -> None:
    """A ref the page's JavaScript gave a NUL (`setAttribute`) is a ref as any other: a
    click selects that object, the context names it whole, and a command for it
    highlights it; a command for what precedes the NUL finds no object (MicroPython
    hands JavaScript a string only up to a NUL)."""
    nul_ref = OTHER_ROW + "\u0000x"
    demo.evaluate(
        """([other, ref]) => {
          const row = document.querySelector(`tr[data-pc-resource-ref="${other}"]`);
          row.setAttribute("data-pc-resource-ref", ref);
          row.closest("[data-pc-component]")
            .dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
          row.click();
        }""",
        [OTHER_ROW, nul_ref],
    )
    expect(html(demo)).to_have_attribute("data-pc-revision", "1", timeout=STEP_TIMEOUT_MS)
    assistant = use_scripted_assistant(demo, origins)
    demo.locator("[data-pc-ask]").click()
    expect(html(assistant)).to_have_attribute("data-context-revision", "1", timeout=STEP_TIMEOUT_MS)
    assert (
        json.loads(html(assistant).get_attribute("data-context") or "{}")["resourceRef"] == nul_ref
    )
    scripted_command(assistant, "n-1", "highlight", "sales-table", OTHER_ROW, 1)
    expect(html(assistant)).to_have_attribute(
        "data-received-n-1", re.compile("^not-found:"), timeout=STEP_TIMEOUT_MS
    )
    expect(demo.locator("[data-pc-highlight]")).to_have_count(0)
    scripted_command(assistant, "n-2", "highlight", "sales-table", nul_ref, 1)
    expect(html(assistant)).to_have_attribute("data-ui-n-2", "applied:ok", timeout=STEP_TIMEOUT_MS)
    marked = demo.evaluate(
        "() => [...document.querySelectorAll('[data-pc-highlight]')]"
        ".map(element => element.getAttribute('data-pc-resource-ref'))"
    )
    assert marked == [nul_ref]


def test_the_selected_row_recycled_away_and_back_is_marked_selected_again(demo: Page) -> None:
    """A list recycles the selected row's element for another object, resetting the
    `aria-selected` of what it recycles (as a list that writes its rows' attributes
    does), then recycles it back for the selected object: it is marked selected again."""
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    row.click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(row).to_have_attribute("aria-selected", "true")
    element = row.element_handle()
    recycle = """([element, ref]) => {
      element.setAttribute("data-pc-resource-ref", ref);
      element.setAttribute("aria-selected", "false");
      element.closest("[data-pc-component]")
        .dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
    }"""
    demo.evaluate(recycle, [element, "sales-2026-12-recycled"])
    demo.evaluate(recycle, [element, ROW])
    expect(row).to_have_attribute("aria-selected", "true")
    expect(html(demo)).to_have_attribute("data-pc-revision", "1")


def test_a_highlights_description_goes_when_its_row_is_recycled_after_the_page_unmarked_it(
    demo: Page,
) -> None:
    """Show me highlights a row, and the user then selects another. The page takes the
    highlight off that row itself, then recycles the row's element for another object:
    the description the highlight gave it ("Highlighted by the assistant", which a
    screen reader says) goes too, not left on an object the assistant never named."""
    select_and_ask(demo, ROW)
    assistant = panel(demo)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(assistant, "applied")
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    expect(row).to_have_attribute("aria-description", "Highlighted by the assistant")
    demo.locator(f'tr[data-pc-resource-ref="{OTHER_ROW}"]').click()
    expect(html(demo)).to_have_attribute("data-pc-revision", "2", timeout=STEP_TIMEOUT_MS)
    element = row.element_handle()
    element.evaluate('element => element.removeAttribute("data-pc-highlight")')
    demo.evaluate(RECYCLE, [element, "sales-2026-12-recycled"])
    recycled = demo.locator('tr[data-pc-resource-ref="sales-2026-12-recycled"]')
    expect(recycled).not_to_have_attribute("aria-description", re.compile(".*"))


# The orders table of `configured.html` rendered with its one row, order-7, in a view
# ([filters, generation, total]).
RENDER_ORDER = """([filters, generation, total]) => {
  const table = document.querySelector('[data-pc-component="orders"]');
  table.querySelector("tbody").innerHTML =
    `<tr data-pc-resource-ref="order-7" tabindex="-1" aria-selected="false">
       <td data-pc-field="status">open</td>
       <td data-pc-field="total" data-pc-value="${total}">${total}</td></tr>`;
  table.setAttribute("data-pc-filters", filters);
  table.setAttribute("data-pc-generation", String(generation));
  table.dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
}"""


def test_share_mode_select_shares_the_selection_again_in_a_new_view(
    page: Page, origins: Origins
) -> None:
    """With `"share": "select"`, a render of the selected row's component in another
    view (other filters, a new generation, new values) selects the row again and shares
    it at once, with no click and no Ask AI: the chip shows the new values and filters,
    the panel says so once, and Show me for it is `applied`."""
    open_share_select(page, origins)
    render = RENDER_ORDER
    page.evaluate(render, ['{"status": "open"}', 1, 12.5])
    row = page.locator('tr[data-pc-resource-ref="order-7"]')
    row.click()
    assistant = panel(page)
    chip = assistant.locator('[data-pc-chip="order-7"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="total"]')).to_have_text("12.5 EUR")
    page.evaluate(render, ['{"status": "any"}', 2, 13])
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="total"]')).to_have_text("13 EUR")
    expect(chip.locator(".pc-chip-meta")).to_contain_text('filters: status="any" ·')
    expect(html(page)).to_have_attribute("data-pc-shared-revision", "2")
    expect(row).to_have_attribute("aria-selected", "true")
    announce = assistant.locator("[data-pc-announce]")
    said = "announce => announce.textContent"
    expect(announce).to_have_text("Context updated: order-7")
    # Filters that JavaScript reads as equal and the page's worker does not (1 and true
    # are two views): each is a new view, selected again. Said once, not at every render
    # (the words are not repeated with a mark that makes a screen reader say them again).
    page.evaluate(render, ['{"status": 1}', 3, 13])
    expect(chip).to_have_attribute("data-pc-chip-revision", "3", timeout=STEP_TIMEOUT_MS)
    page.evaluate(render, ['{"status": true}', 3, 13])
    expect(chip).to_have_attribute("data-pc-chip-revision", "4", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator(".pc-chip-meta")).to_contain_text("filters: status=true ·")
    assert announce.evaluate(said) == "Context updated: order-7"
    show_and_expect(assistant, "applied")
    expect(row).to_have_attribute("data-pc-highlight", "focus")


def test_a_refused_selection_a_newer_one_replaced_keeps_the_row_followed(
    page: Page, origins: Origins
) -> None:
    """Two renders of the selected row in one task, each in a new view: the first with a
    total past the numbers JavaScript keeps exact (its selection is refused), the second
    with a valid one. The refusal comes after the newer selection was sent, and changes
    nothing: the row stays selected and shared as the second render shows it, and a
    render in a fourth view selects it again and shares it, as any render does."""
    open_share_select(page, origins)
    page.evaluate(RENDER_ORDER, ['{"status": "open"}', 1, 12.5])
    row = page.locator('tr[data-pc-resource-ref="order-7"]')
    row.click()
    chip = panel(page).locator('[data-pc-chip="order-7"]')
    expect(chip).to_have_attribute("data-pc-chip-revision", "1", timeout=STEP_TIMEOUT_MS)
    page.evaluate(
        f"""(views) => {{
          const render = {RENDER_ORDER};
          for (const view of views) render(view);
        }}""",
        [['{"status": "any"}', 2, "12345678901234567890"], ['{"status": "all"}', 3, 13]],
    )
    expect(html(page)).to_have_attribute("data-pc-refused-select", "1", timeout=STEP_TIMEOUT_MS)
    expect(chip).to_have_attribute("data-pc-chip-revision", "2", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="total"]')).to_have_text("13 EUR")
    expect(row).to_have_attribute("aria-selected", "true")
    page.evaluate(RENDER_ORDER, ['{"status": "closed"}', 4, 14])
    expect(chip).to_have_attribute("data-pc-chip-revision", "3", timeout=STEP_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="total"]')).to_have_text("14 EUR")
    expect(chip.locator(".pc-chip-meta")).to_contain_text('filters: status="closed" ·')
    expect(row).to_have_attribute("aria-selected", "true")


def test_a_component_with_bad_view_attributes_is_refused_and_keeps_its_view(
    demo: Page,
) -> None:
    """A render reported with a generation that is not a whole number is refused and
    counted; the table keeps the view it had, so Show me for its row still applies."""
    select_and_ask(demo, ROW)
    assistant = panel(demo)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    demo.evaluate(
        """() => {
          const table = document.getElementById("sales-table");
          table.setAttribute("data-pc-generation", "next");
          table.dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
        }"""
    )
    expect(html(demo)).to_have_attribute("data-pc-refused-rendered", "1")
    show_and_expect(assistant, "applied")
    expect(demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')).to_have_attribute(
        "data-pc-highlight", "focus"
    )


@pytest.mark.parametrize("filters", [None, '{"status": {"in": ["open"]}}'])
def test_a_component_that_renders_again_before_the_highlight_gets_stale_context(
    demo: Page, filters: str | None
) -> None:
    """The table renders a new view (its generation moves on) after the page's worker
    checked a command against the old one and before the highlight is drawn: the row is
    not highlighted as if it were the old view's, and the `ui` receipt says
    `stale-context` (`view-changed`); also when the new view's filters do not parse (the
    generation is read on its own)."""
    select_and_ask(demo, ROW)
    assistant = panel(demo)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    # A listener that does not take the command over, and renders meanwhile.
    demo.evaluate(
        """(filters) => {
          const table = document.getElementById("sales-table");
          table.addEventListener("pagecontext:command", () => {
            const next = Number(table.getAttribute("data-pc-generation")) + 1;
            table.setAttribute("data-pc-generation", String(next));
            if (filters !== null) table.setAttribute("data-pc-filters", filters);
          }, {once: true});
        }""",
        filters,
    )
    show_and_expect(assistant, "stale-context")
    expect(receipt(assistant)).to_have_text(re.compile(r"\(view-changed\)"))
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    expect(row).not_to_have_attribute("data-pc-highlight", re.compile("."))


# An outer component with one object, and a component nested in it with another.
NESTED = """() => {
  const component = (name) => {
    const element = document.createElement("div");
    Object.assign(element.dataset, {pcComponent: name, pcPage: "nested", pcFilters: "{}",
      pcGeneration: "1", pcShareable: "name"});
    return element;
  };
  const object = (ref, name) => {
    const element = document.createElement("p");
    Object.assign(element.dataset, {pcResourceRef: ref, pcValues: JSON.stringify({name})});
    element.textContent = name;
    return element;
  };
  const outer = component("outer");
  const inner = component("inner");
  inner.append(object("i:1", "i"));
  outer.append(object("o:1", "o"), inner);
  document.body.append(outer);
  for (const element of [outer, inner]) {
    element.dispatchEvent(new CustomEvent("pagecontext:rendered", {bubbles: true}));
  }
}"""


def test_a_nested_component_keeps_its_objects_to_itself(demo: Page, origins: Origins) -> None:
    """A component inside another: its objects are its own, so a focus highlight in the
    outer component, for the same selection, leaves the inner one's focus alone."""
    demo.evaluate(NESTED)
    assistant = use_scripted_assistant(demo, origins)
    select_and_ask(demo, ROW)
    expect(html(assistant)).to_have_attribute("data-context-revision", "1", timeout=STEP_TIMEOUT_MS)
    inner = demo.locator('[data-pc-resource-ref="i:1"]')
    outer = demo.locator('[data-pc-resource-ref="o:1"]')
    for command_id, component, element in (("in", "inner", inner), ("out", "outer", outer)):
        ref = element.get_attribute("data-pc-resource-ref")
        scripted_command(assistant, command_id, "highlight", component, ref, 1)
        expect(html(assistant)).to_have_attribute(
            f"data-ui-{command_id}", "applied:ok", timeout=STEP_TIMEOUT_MS
        )
        expect(element).to_have_attribute("data-pc-highlight", "focus")
    expect(inner).to_have_attribute("data-pc-highlight", "focus")


def test_a_highlight_for_an_older_selection_takes_the_newer_marks_away(
    demo: Page, origins: Origins
) -> None:
    """Two selections, then a highlight for the second and one for the first (a Show me
    for a chip brought back): the page shows the last one's mark only, whichever
    revision is the greater (docs/protocol.md 8.15)."""
    assistant = use_scripted_assistant(demo, origins)
    share_two_rows(demo, assistant)
    marks = demo.locator("[data-pc-highlight]")
    for command_id, ref, revision in (("newer", OTHER_ROW, 2), ("older", ROW, 1)):
        scripted_command(assistant, command_id, "highlight", "sales-table", ref, revision)
        expect(html(assistant)).to_have_attribute(
            f"data-ui-{command_id}", "applied:ok", timeout=STEP_TIMEOUT_MS
        )
        expect(marks).to_have_count(1)
        expect(marks).to_have_attribute("data-pc-resource-ref", ref)


def test_a_row_selected_and_asked_about_before_the_edge_listens_is_shared(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """A page renders its rows itself, before pagecontext's MicroPython has loaded (held
    here): the user clicks a row and asks about it at once. Neither is lost: once the
    edge runs it takes both, in order, and the assistant shows the row's chip once bound."""
    held: list[Route] = []
    module = f"{origins.page}/vendor/micropython-*/micropython.mjs"
    context.route(module, lambda route: held.append(route))
    config = {
        "role": "page",
        "peerOrigin": origins.assistant,
        "childUrl": origins.assistant + "/assistant.html",
    }
    url = f"{origins.page}/e2e/configured.html?frame=1&config={quote(json.dumps(config))}"
    with context.expect_event(
        "request", lambda request: request.url.endswith("/micropython.mjs"), timeout=BOOT_TIMEOUT_MS
    ):
        page.goto(url, wait_until="commit")
    page.evaluate(
        """() => {
          const table = document.querySelector('[data-pc-component="orders"]');
          table.setAttribute("data-pc-generation", "1");
          table.tBodies[0].innerHTML = '<tr data-pc-resource-ref="order-7" tabindex="-1">' +
            '<td data-pc-field="status">open</td>' +
            '<td data-pc-field="total" data-pc-value="12.5">12.50</td></tr>';
        }"""
    )
    page.locator('tr[data-pc-resource-ref="order-7"]').click()
    page.evaluate("() => document.dispatchEvent(new CustomEvent('pagecontext:share'))")
    assert page.evaluate("performance.getEntriesByName('pagecontext:edge-started').length") == 0
    assert len(held) == 1, held
    held[0].fallback()
    wait_bound(page)
    chip = panel(page).locator('[data-pc-chip="order-7"]')
    expect(chip).to_be_visible(timeout=BOOT_TIMEOUT_MS)
    expect(chip.locator('[data-pc-chip-field="total"]')).to_contain_text("12.5")
    expect(html(page)).to_have_attribute("data-pc-revision", "1")


def test_a_cleared_selection_takes_the_chip_away(demo: Page) -> None:
    """The page clears its selection (`pagecontext:clear`) and the user asks: the
    assistant no longer shows the row's chip, and the row is no longer marked selected."""
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')
    select_and_ask(demo, ROW)
    chip = panel(demo).locator(f'[data-pc-chip="{ROW}"]')
    expect(chip).to_be_visible(timeout=STEP_TIMEOUT_MS)
    expect(row).to_have_attribute("aria-selected", "true")
    demo.evaluate("() => document.dispatchEvent(new CustomEvent('pagecontext:clear'))")
    expect(html(demo)).to_have_attribute("data-pc-revision", "2")
    expect(row).not_to_have_attribute("aria-selected", "true")
    demo.get_by_role("button", name="Ask AI").click()
    expect(html(demo)).to_have_attribute("data-pc-shared-revision", "2")
    expect(chip).to_have_count(0, timeout=STEP_TIMEOUT_MS)


def test_a_ui_receipt_says_applied_only_for_what_the_user_can_see(
    demo: Page, origins: Origins
) -> None:
    """A row that is in the document but drawn nowhere (`hidden`), or drawn unseen
    (`visibility: hidden`, `opacity: 0` on its table, a box with no area: its cells not
    drawn), is `not-found` (`not-rendered`)
    on the `ui` layer, and carries no highlight; a `locate` of a row
    that cannot take the keyboard's focus (no `tabindex`) is `not-found`
    (`not-focusable`); the same row with its `tabindex` is located, focused and
    `applied`."""
    assistant = use_scripted_assistant(demo, origins)
    select_and_ask(demo, ROW)
    expect(html(assistant)).to_have_attribute("data-context-revision", "1", timeout=STEP_TIMEOUT_MS)
    row = demo.locator(f'tr[data-pc-resource-ref="{ROW}"]')

    def send(command_id: str, action: str) -> None:
        scripted_command(assistant, command_id, action, "sales-table", ROW, 1)

    def receipts(command_id: str, received: str, ui: str) -> None:
        root = html(assistant)
        expect(root).to_have_attribute(f"data-ui-{command_id}", ui, timeout=STEP_TIMEOUT_MS)
        expect(root).to_have_attribute(f"data-received-{command_id}", received)

    row.evaluate("element => { element.hidden = true; }")
    send("hidden", "highlight")
    receipts("hidden", "applied:ok", "not-found:not-rendered")
    expect(row).not_to_have_attribute("data-pc-highlight", re.compile("."))
    row.evaluate("element => { element.hidden = false; element.style.visibility = 'hidden'; }")
    send("invisible", "highlight")
    receipts("invisible", "applied:ok", "not-found:not-rendered")
    row.evaluate("element => { element.style.visibility = ''; }")
    row.evaluate("element => { element.closest('table').style.opacity = '0'; }")
    send("transparent", "highlight")
    receipts("transparent", "applied:ok", "not-found:not-rendered")
    expect(row).not_to_have_attribute("data-pc-highlight", re.compile("."))
    row.evaluate("element => { element.closest('table').style.opacity = ''; }")
    # Its cells not drawn: the row is laid out, but its box has no area.
    row.evaluate("element => element.querySelectorAll('td').forEach((td) => { td.hidden = true; })")
    send("empty", "highlight")
    receipts("empty", "applied:ok", "not-found:not-rendered")
    expect(row).not_to_have_attribute("data-pc-highlight", re.compile("."))
    row.evaluate(
        "element => element.querySelectorAll('td').forEach((td) => { td.hidden = false; })"
    )
    row.evaluate("element => element.removeAttribute('tabindex')")
    send("unfocusable", "locate")
    receipts("unfocusable", "applied:ok", "not-found:not-focusable")
    expect(row).not_to_be_focused()
    row.evaluate("element => element.setAttribute('tabindex', '-1')")
    send("located", "locate")
    receipts("located", "applied:ok", "applied:ok")
    expect(row).to_be_focused()
    send("shown", "highlight")
    receipts("shown", "applied:ok", "applied:ok")
    expect(row).to_have_attribute("data-pc-highlight", "focus")
