"""Steps the browser suites share: select and ask, show, wait for receipts, ask the
agent, and the loopback-only admin API."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from typing import Any

from playwright.sync_api import (
    APIResponse,
    BrowserContext,
    Frame,
    FrameLocator,
    Locator,
    Page,
    Request,
    Route,
    Worker,
    expect,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from pagecontext import integration

from .conftest import BOOT_TIMEOUT_MS, STEP_TIMEOUT_MS, Origins, wait_bound

ROW = "sales-2026-03-north"
OTHER_ROW = "sales-2026-05-east"

# Playwright's own requests (a route's fetch, `page.request`) keep their connections
# open between requests; uvicorn closes one left idle for 5 s, and a request sent on it
# as it closes is reset (ECONNRESET). A browser sends such a GET again on a new
# connection (RFC 9112, 9.3.1), and so do these: all of them are GETs.
RESENDS = 2


def fetched(route: Route) -> APIResponse:
    """The server's response to the request `route` holds."""
    return route.fetch(max_retries=RESENDS)


def get(page: Page, url: str) -> APIResponse:
    """The server's response to a GET of `url`, outside the page's frames."""
    return page.request.get(url, max_retries=RESENDS)


def document_policy(frames: str, *, workers: str = "'self'", connects: str = "") -> str:
    """The documented policy of a page that frames, and is framed by, only `frames`, and
    connects to its own origin and `connects` (origins, space-separated)."""
    return (
        f"script-src 'self' 'wasm-unsafe-eval'; worker-src {workers}; "
        f"frame-src {frames}; frame-ancestors {frames}; "
        f"connect-src 'self' data:{' ' + connects if connects else ''}; "
        "object-src 'none'; base-uri 'none'; "
        "require-trusted-types-for 'script'; trusted-types pagecontext"
    )


def scripts_policy(connects: str = "") -> str:
    """The documented policy of every script (its workers'), connecting to its own origin
    and `connects`."""
    return (
        "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; "
        f"connect-src 'self' data:{' ' + connects if connects else ''}"
    )


def panel(page: Page) -> FrameLocator:
    """The assistant panel of the demo page."""
    return page.frame_locator("iframe[data-pc-child]")


def select_and_ask(page: Page | FrameLocator, ref: str) -> None:
    """Click the row `ref`, then "Ask AI"."""
    page.locator(f'tr[data-pc-resource-ref="{ref}"]').click()
    page.get_by_role("button", name="Ask AI").click()


def pin(page: Page | FrameLocator, assistant: Page | FrameLocator, ref: str) -> Locator:
    """Click the row `ref` and "Ask AI"; return the assistant's chip for it, once shown."""
    select_and_ask(page, ref)
    chip = assistant.locator(f'[data-pc-chip="{ref}"]')
    expect(chip).to_be_visible(timeout=STEP_TIMEOUT_MS)
    return chip


def receipt(assistant: Page | FrameLocator) -> Locator:
    return assistant.locator("[data-pc-receipt]")


def show_and_expect(assistant: Page | FrameLocator, status: str) -> None:
    """Press Show me and wait for the receipt of the command it sent to show `status`.

    The receipt keeps showing the previous command until the new one is drawn, so the
    new command is told apart by its id (data-pc-receipt-command, set with its status)."""
    shown = receipt(assistant)
    before = shown.get_attribute("data-pc-receipt-command")
    # Any command id but the one shown before the press.
    other = re.compile(".+" if before is None else rf"^(?!{re.escape(before)}$).+")
    try:
        assistant.get_by_role("button", name="Show me").click()
    except PlaywrightTimeoutError as error:
        raise AssertionError(
            f"Show me could not be pressed; {where_it_stands(assistant)}"
        ) from error
    try:
        expect(shown).to_have_attribute("data-pc-receipt-command", other, timeout=STEP_TIMEOUT_MS)
    except AssertionError:
        # No command of this press is shown: say where the panel stands, and whether
        # the press reached the log (a command entry) or the page (its highlight).
        commands = assistant.locator('[data-pc-log-kind="command"]').count()
        raise AssertionError(
            f"Show me was pressed, and no receipt of its command is shown; "
            f"{where_it_stands(assistant)}; commands in the log: {commands}"
        ) from None
    command = shown.get_attribute("data-pc-receipt-command")
    expect(shown).to_have_attribute("data-pc-receipt-status", status, timeout=STEP_TIMEOUT_MS)
    # The status is still that of the new command, not of a later one.
    expect(shown).to_have_attribute("data-pc-receipt-command", command or "")


def where_it_stands(frame: Page | FrameLocator) -> str:
    """What a frame's `<html>` says of its state, for a failure's message; or that its
    document did not answer within 2 s (its main thread held, no frame drawn)."""
    root = frame.locator("html")
    names = ("state", "connection", "answering", "internal-errors", "revision")
    try:
        found = {name: root.get_attribute(f"data-pc-{name}", timeout=2000) for name in names}
    except PlaywrightTimeoutError:
        return "its document did not answer within 2 s"
    return f"its document says {found}"


# Evaluated in a document: whether its pagecontext edge has started.
EDGE_STARTED = "() => performance.getEntriesByName('pagecontext:edge-started').length > 0"


class HeldWasm:
    """Holds the page's runtime wasm (a first visit fetches it) until `release()`."""

    def __init__(self, context: BrowserContext, origins: Origins) -> None:
        self.context = context
        self.origin = origins.page
        self.routes: list[Route] = []
        # A plain function: Playwright marks the handler it is given.
        context.route(f"{self.origin}/vendor/**/pyodide.asm.wasm", lambda r: self.routes.append(r))

    def _is_wasm(self, request: Request) -> bool:
        return request.url.startswith(self.origin) and request.url.endswith("/pyodide.asm.wasm")

    def goto(self, page: Page, url: str, *, wait_for_load: bool = True) -> None:
        """Load `url` and return once the page's worker asked for its wasm (held) and
        the page's edge has started (and, unless told not to, the page has loaded)."""
        with self.context.expect_event("request", self._is_wasm, timeout=BOOT_TIMEOUT_MS):
            page.goto(url, wait_until="load" if wait_for_load else "commit")
        page.wait_for_function(EDGE_STARTED, timeout=BOOT_TIMEOUT_MS)

    def release(self) -> None:
        assert len(self.routes) == 1, self.routes
        self.routes[0].fallback()


# The page renders its assistant's iframe anew, as a framework does (a new element with
# its `data-pc-child` and `data-pc-src`, no `src`), the given number of times, each in a
# task of its own.
RENDER_CHILD_FRAME_ANEW = """async (renders) => {
  for (let render = 0; render < renders; render += 1) {
    const old = document.querySelector("iframe[data-pc-child]");
    const frame = document.createElement("iframe");
    frame.setAttribute("data-pc-child", "");
    frame.setAttribute("data-pc-src", old.getAttribute("data-pc-src"));
    frame.title = old.title;
    old.replaceWith(frame);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}"""


class ChildNonces:
    """The URLs with a nonce that `page`'s child frames were loaded with, in order: each
    URL the browser reports a frame below the top one navigated to (the page's edge
    loads a frame again by replacing its URL, so its `src` keeps the first one)."""

    def __init__(self, page: Page) -> None:
        self.urls: list[str] = []
        page.on("framenavigated", self._record)

    def _record(self, frame: Frame) -> None:
        url = frame.url
        if frame.parent_frame is not None and "#pc-nonce=" in url and self.urls[-1:] != [url]:
            self.urls.append(url)

    @property
    def seen(self) -> list[str]:
        """The nonces, in order."""
        return [url.partition("#pc-nonce=")[2] for url in self.urls]


def after_collection(page: Page, method: str, field: str) -> int:
    """`field` of what the DevTools protocol's `method` answers for `page` after a full
    garbage collection: the JS heap in use (`Runtime.getHeapUsage`, `usedSize`), the
    DOM nodes held (`Memory.getDOMCounters`, `nodes`)."""
    session = page.context.new_cdp_session(page)
    try:
        session.send("HeapProfiler.collectGarbage")
        value = session.send(method)[field]
    finally:
        session.detach()
    assert isinstance(value, int | float)
    return int(value)


def preview_text(assistant: Page | FrameLocator) -> Locator:
    """The text of the panel's "What the AI sees"."""
    return assistant.locator("[data-pc-preview] pre")


def open_preview(assistant: Page | FrameLocator) -> None:
    """Open "What the AI sees" and wait for the worker's text in it (composed only while
    it is open)."""
    preview = assistant.locator("[data-pc-preview]")
    # Opened as its summary's click opens it (a `toggle` event follows either way): in
    # two CI runs a click on the summary left it closed (never in a run of it alone).
    preview.evaluate("details => { details.open = true; }")
    try:
        expect(preview).to_have_attribute(
            "data-pc-preview-composed", "true", timeout=STEP_TIMEOUT_MS
        )
    except AssertionError:
        # Say what the panel knows: whether it is open, and the worker's own errors.
        root = assistant.locator("html")
        raise AssertionError(
            "the preview was not composed: open="
            f"{preview.evaluate('details => details.open')}, internal errors "
            f"{root.get_attribute('data-pc-internal-errors')}"
        ) from None


def worker_script(origin: str = "") -> re.Pattern[str]:
    """The URL of pagecontext's worker script (`/web/worker.mjs`, or its built name with
    a digest), on `origin` if one is given."""
    return re.compile(re.escape(origin) + r"/web/worker(-[0-9a-f]+)?\.mjs$")


def assistant_timeouts(**timeouts: int) -> Callable[[Route], None]:
    """A route handler for the assistant's page that serves it with `timeouts` in its
    config (`bootMs=1`, say)."""

    def configured(route: Route) -> None:
        response = fetched(route)
        text = response.text()
        given = '"role": "assistant",'
        assert given in text
        limits = f" {json.dumps({'timeouts': timeouts})[1:-1]},"
        route.fulfill(response=response, body=text.replace(given, given + limits))

    return configured


def system_colour(page: Page, name: str) -> str:
    """The colour the browser resolves the CSS system colour `name` (`SelectedItem`,
    `Canvas`, ...) to in `page`, as `getComputedStyle` gives colours."""
    colour: str = page.evaluate(
        """(name) => {
             const probe = document.createElement("span");
             probe.style.backgroundColor = name;
             document.body.append(probe);
             const colour = getComputedStyle(probe).backgroundColor;
             probe.remove();
             return colour;
           }""",
        name,
    )
    return colour


def wait_workers_ended(page: Page, origin: str = "") -> None:
    """Wait until every worker of `page` (whose script is on `origin`, if given) has
    ended. A worker's end reaches Playwright as an event: a worker still listed is waited
    for until it closes (which takes it off the list), and one that never does fails on
    the timeout."""
    while left := [w for w in page.workers if w.url.startswith(origin)]:
        with left[0].expect_event("close", timeout=STEP_TIMEOUT_MS):
            pass


def html(target: Page | Frame | FrameLocator) -> Locator:
    return target.locator("html")


def diagnose_now(frame: Page | Frame) -> None:
    """Ask the frame's worker for a fresh report, and wait until `<html>` shows it: the
    worker makes it after everything sent to it before, so it is also a checkpoint."""
    seq = frame.evaluate("pagecontext.diagnose()")
    expect(frame.locator("html")).to_have_attribute("data-pc-diagnostics-seq", str(seq))


def worker_report(frame: Page | Frame) -> dict[str, Any]:
    """The frame's full diagnostics (`pagecontext.diagnostics`), fresh (`diagnose_now`)."""
    diagnose_now(frame)
    report: dict[str, Any] = json.loads(frame.evaluate("JSON.stringify(pagecontext.diagnostics)"))
    return report


def saved_state_key(assistant: Page | Frame) -> str:
    """The storage key the assistant in `assistant` saves its conversation under: the
    core's `saved_state_key` of the config its page serves."""
    raw = assistant.evaluate("() => document.getElementById('pc-config').textContent")
    return integration.saved_state_key(integration.parse_config(json.loads(raw)))


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
    try:
        expect(questions.nth(before[0])).to_contain_text(question, timeout=STEP_TIMEOUT_MS)
    except AssertionError:
        # Not sent: the panel says why (the context changed as it was sent, say), and
        # its document where it stands.
        where = where_it_stands(assistant)
        if "did not answer" in where:
            raise AssertionError(f"the question was not sent; {where}") from None
        said = assistant.locator("[data-pc-announce]").text_content()
        field = assistant.locator("[data-pc-question]").input_value()
        raise AssertionError(
            f"the question was not sent; the panel said: {said!r}; {where}; "
            f"its field holds {field!r}; questions shown: {questions.count()}"
        ) from None
    answer = answers.nth(before[1])
    if until != "running":
        # Wait for the end, then say how it ended if that was not the one expected.
        expect(answer).not_to_have_attribute(
            "data-pc-answer-state", "running", timeout=STEP_TIMEOUT_MS
        )
        state = answer.get_attribute("data-pc-answer-state")
        assert state == until, f"the answer is {state}: {answer.text_content()}"
    expect(answer).to_have_attribute("data-pc-answer-state", until)
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


# Counts the Content-Security-Policy violations of a document and publishes the count on
# its <html data-csp-violations> (and the violations on window.__cspViolations). Added
# with BrowserContext.add_init_script, which the policy does not govern.
CSP_WATCH_DOCUMENT = """
(() => {
  const seen = (window.__cspViolations = []);
  const publish = () => {
    const root = document.documentElement;
    if (root) root.dataset.cspViolations = String(seen.length);
  };
  addEventListener("securitypolicyviolation", (event) => {
    const { violatedDirective, blockedURI, sourceFile, lineNumber } = event;
    seen.push(`${violatedDirective} ${blockedURI} ${sourceFile}:${lineNumber}`);
    publish();
  });
  addEventListener("DOMContentLoaded", publish);
})();
"""
# The same, for a worker: prepended to its script (see watch_csp).
CSP_WATCH_WORKER = (
    "self.__cspViolations = []; self.addEventListener('securitypolicyviolation', (event) => "
    "self.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI} "
    "${event.sourceFile}:${event.lineNumber}`));\n"
)


def watch_csp(context: BrowserContext) -> None:
    """Record the CSP violations of every document and every pagecontext worker of
    `context`: documents publish theirs on <html data-csp-violations>, workers keep them
    in `self.__cspViolations`. The worker's script is served as it is, headers and all,
    with the listener prepended."""
    context.add_init_script(CSP_WATCH_DOCUMENT)

    def prepend(route: Route) -> None:
        response = fetched(route)
        route.fulfill(response=response, body=CSP_WATCH_WORKER + response.text())

    context.route(worker_script(), prepend)


def worker_violations(worker: Worker) -> list[str]:
    """The CSP violations a watched worker has seen."""
    seen: list[str] = worker.evaluate("self.__cspViolations")
    return seen


def expect_no_csp_violations(page: Page, workers: list[Worker]) -> None:
    """No document of `page` and none of its two core `workers` saw a CSP violation
    (they are watched with watch_csp)."""
    for frame in page.frames:
        if frame.url.startswith("http"):
            expect(frame.locator("html")).to_have_attribute("data-csp-violations", "0")
    assert len(workers) == 2, "one core worker per frame"
    for worker in workers:
        assert worker_violations(worker) == [], (worker.url, worker_violations(worker))


def watched_demo_flow(
    page: Page, context: BrowserContext, url: str, *, question: bool = True
) -> list[Worker]:
    """Watch CSP violations (watch_csp), open the demo page at `url`, wait until both
    frames are bound, select a row, Ask AI, Show me, wait for `applied`, and (with
    `question`) ask the agent a question, answered; return the core workers that
    started."""
    watch_csp(context)
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    page.goto(url)
    wait_bound(page)
    wait_bound(panel(page))
    select_and_ask(page, ROW)
    expect(panel(page).locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(panel(page), "applied")
    if question:
        ask(panel(page), "Why is this row so high?")
    return workers


def use_scripted_assistant(demo: Page, origins: Origins) -> FrameLocator:
    """Replace the demo's panel with an assistant that sends the commands a test asks for
    (e2e/pages/scripted-assistant.html: `sendCommand` in its frame, receipts published
    on its `<html>`)."""
    scripted = f"{origins.assistant}/e2e/scripted-assistant.html?page={origins.page}"
    child = swap_assistant(demo, scripted)
    expect(html(child)).to_have_attribute("data-scripted", "connected", timeout=BOOT_TIMEOUT_MS)
    return child


def scripted_command(
    assistant: FrameLocator,
    command_id: str,
    action: str,
    component_id: str,
    ref: str | None,
    basis: int,
) -> None:
    """Have the scripted assistant (`use_scripted_assistant`) send the command
    `command_id`: `action` on `ref` of `component_id`, based on revision `basis`."""
    html(assistant).evaluate(
        "(_, args) => window.sendCommand(...args)", [command_id, action, component_id, ref, basis]
    )


def navigate_soon(target: Page | Frame, navigation: str, arg: object = None) -> None:
    """Run `navigation` (`location.reload()`, `history.back()`, `location.href = arg`, ...)
    in `target`, with `arg`, in a task after this call's answer: a navigation that starts
    while the call is answered destroys the context it runs in, and the call fails. A
    function, not an expression: Playwright evaluates an expression with eval(), which a
    page's policy may refuse."""
    target.evaluate(f"arg => {{ setTimeout(() => {{ {navigation}; }}); }}", arg)


def swap_assistant(page: Page, url: str, connection: int = 2) -> FrameLocator:
    """Point the demo's panel frame at `url` (on the assistant's origin), reload it, wait
    until the page binds it as connection `connection`, and return it."""
    page.evaluate(
        "url => document.querySelector('iframe[data-pc-child]').setAttribute('data-pc-src', url)",
        url,
    )
    navigate_soon(page.frames[1], "location.reload()")
    wait_bound(page, connection=connection)
    return panel(page)


def said_in_console(page: Page) -> list[str]:
    """Every console message `page` says from now on, each added as it comes."""
    texts: list[str] = []
    page.on("console", lambda message: texts.append(message.text))
    return texts


def after_console_settles(page: Page) -> None:
    """Return once every console message said before this call has been heard: they
    come in order, so once a marker said now is here, any before it is."""
    with page.expect_console_message(lambda message: message.text == "settled"):
        page.evaluate("console.warn('settled')")
