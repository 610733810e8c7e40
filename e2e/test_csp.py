"""The demo under its Content-Security-Policy, in real Chromium: every page and script
sends exactly the documented policy, a full demo flow raises no violation in any frame
or worker, and the policy refuses what it names (eval, blob: workers, foreign frames)."""

from __future__ import annotations

import re
import urllib.request

import pytest
from playwright.sync_api import BrowserContext, Page, Route, Worker, expect

from pagecontext.server.chromium import MARK_DETAIL_JS

from .conftest import STEP_TIMEOUT_MS, Origins, wait_bound
from .helpers import (
    ROW,
    document_policy,
    expect_no_csp_violations,
    fetched,
    html,
    open_workbench,
    panel,
    scripts_policy,
    select_and_ask,
    show_and_expect,
    watch_csp,
    watched_demo_flow,
    worker_violations,
)

pytestmark = pytest.mark.e2e


def headers(url: str) -> dict[str, str]:
    with urllib.request.urlopen(url) as response:
        return {name.lower(): value for name, value in response.headers.items()}


def test_every_page_and_script_sends_exactly_the_documented_policy(origins: Origins) -> None:
    """The page frames and is framed by the assistant origin only, the assistant's panel
    and workbench the page origin only; scripts carry the worker policy; no page sends
    COOP or COEP."""
    assistant_connects = f"{origins.assistant} {origins.page}"
    expected = {
        origins.page + "/": document_policy(origins.assistant),
        origins.assistant + "/assistant.html": document_policy(
            origins.page, connects=assistant_connects
        ),
        origins.assistant + "/workbench.html": document_policy(
            origins.page, connects=assistant_connects
        ),
        origins.page + "/web/worker.mjs": scripts_policy(),
        origins.assistant + "/web/boot.mjs": scripts_policy(assistant_connects),
    }
    for url, policy in expected.items():
        sent = headers(url)
        assert sent.get("content-security-policy") == policy, url
        assert "cross-origin-opener-policy" not in sent, url
        assert "cross-origin-embedder-policy" not in sent, url
    assert "content-security-policy" not in headers(origins.page + "/py/runtime.json")


def test_only_the_sandboxed_panel_may_start_a_data_worker(sandboxed_origins: Origins) -> None:
    """With --sandboxed-panel, the panel's document also allows data: workers (its opaque
    origin cannot start one from a URL); the workbench and the page keep the strict policy."""
    origins = sandboxed_origins
    connects = f"{origins.assistant} {origins.page}"
    panel_policy = document_policy(origins.page, workers="'self' data:", connects=connects)
    assert headers(origins.assistant + "/assistant.html")["content-security-policy"] == (
        panel_policy
    )
    assert headers(origins.assistant + "/workbench.html")["content-security-policy"] == (
        document_policy(origins.page, connects=connects)
    )
    assert headers(origins.page + "/")["content-security-policy"] == (
        document_policy(origins.assistant)
    )


def test_a_full_demo_flow_raises_no_violation(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """Boot from the snapshot, bind, select, ask, show (`applied`): no frame and no
    worker reports a CSP violation, Trusted Types enforced in both documents. The watch
    itself works: eval in a worker and a worker started from a string in the page are
    refused and counted."""
    workers = watched_demo_flow(page, context, origins.page + "/")
    expect_no_csp_violations(page, workers)

    refused = workers[0].evaluate(
        """() => new Promise((resolve) => setTimeout(() => {
             try { eval("1"); resolve(false); } catch { resolve(true); } }))"""
    )
    assert refused is True
    assert [v.split()[:2] for v in worker_violations(workers[0])] == [["script-src", "eval"]]
    refused_worker = page.evaluate(
        """() => { try { new Worker("/web/worker.mjs"); return false; } catch { return true; } }"""
    )
    assert refused_worker is True
    expect(html(page)).to_have_attribute("data-csp-violations", "1")
    assert page.evaluate("window.__cspViolations[0]").startswith("require-trusted-types-for")


def test_no_frame_or_worker_can_connect_to_another_origin(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """connect-src: after a demo flow that asked the agent (and raised no violation), a
    script running in either document or either core worker, as an injected one would,
    cannot fetch from a third origin: refused, and reported as a connect-src
    violation."""
    workers = watched_demo_flow(page, context, origins.page + "/")
    expect_no_csp_violations(page, workers)
    attempt = "(url) => fetch(url).then(() => false, () => true)"
    target = origins.third + "/e2e/attacker.html"
    assistant = next(frame for frame in page.frames if frame.url.startswith(origins.assistant))
    for frame in (page.main_frame, assistant):
        assert frame.evaluate(attempt, target) is True, frame.url
        expect(frame.locator("html")).to_have_attribute("data-csp-violations", "1")
        assert frame.evaluate("window.__cspViolations")[0].split()[0] == "connect-src"
    for worker in workers:
        assert worker.evaluate(attempt, target) is True, worker.url
        assert [v.split()[0] for v in worker_violations(worker)] == ["connect-src"]


def test_a_script_in_the_page_can_neither_write_markup_nor_start_a_script(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """Trusted Types, enforced in both documents of a bound demo: a script running there
    (as an injected one would) cannot set innerHTML from a string, cannot start a worker
    from a URL, and cannot make a policy of its own, neither a new name nor
    pagecontext's, which the boot script has taken."""
    workers = watched_demo_flow(page, context, origins.page + "/")
    attempts = """() => {
      const refused = (attempt) => { try { attempt(); return false; } catch { return true; } };
      return [
        refused(() => { document.body.innerHTML = "<p>x</p>"; }),
        refused(() => new Worker("/web/worker.mjs", { type: "module" })),
        refused(() => trustedTypes.createPolicy("other", { createHTML: (s) => s })),
        refused(() => trustedTypes.createPolicy("pagecontext", { createHTML: (s) => s })),
      ];
    }"""
    assistant = next(frame for frame in page.frames if frame.url.startswith(origins.assistant))
    for frame in (page.main_frame, assistant):
        assert frame.evaluate(attempts) == [True, True, True, True], frame.url
        # Each refusal was reported as a violation of the document's policy, and the
        # flow before them raised none.
        expect(frame.locator("html")).to_have_attribute("data-csp-violations", "4")
        directives = [v.split()[0] for v in frame.evaluate("window.__cspViolations")]
        assert directives == ["require-trusted-types-for"] * 2 + ["trusted-types"] * 2
    assert len(workers) == 2


def test_a_single_page_app_has_pagecontexts_policy_name_before_it_mounts(
    page: Page, origins: Origins
) -> None:
    """A single-page app that imports the boot script as it loads and mounts the embed
    later (its route): the policy name is taken when the module loads, so a script that
    runs before the mount cannot make a `pagecontext` policy that writes markup."""
    page.goto(origins.page + "/examples/spa.html")
    expect(html(page)).to_have_attribute("data-spa-route", "home")
    expect(html(page)).not_to_have_attribute("data-pc-state", re.compile(".*"))
    taken = page.evaluate(
        """() => { try { trustedTypes.createPolicy("pagecontext", { createHTML: (s) => s });
                         return false; } catch { return true; } }"""
    )
    assert taken is True


def open_under_policy(page: Page, origins: Origins, allowed: str, refused: str) -> list[str]:
    """Open the demo page with `allowed` in its policy replaced by `refused`; wait for it to
    fail. Return the console's errors, as they come."""
    url = origins.page + "/"

    def changed_policy(route: Route) -> None:
        response = fetched(route)
        sent = response.headers["content-security-policy"]
        assert allowed in sent
        policy = sent.replace(allowed, refused)
        route.fulfill(
            response=response, headers={**response.headers, "content-security-policy": policy}
        )

    page.route(url, changed_policy)
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.goto(url)
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=STEP_TIMEOUT_MS)
    return errors


def test_a_page_whose_trusted_types_refuse_pagecontext_fails_loudly(
    page: Page, origins: Origins
) -> None:
    """A page that enforces Trusted Types and allows other policy names only: the worker
    cannot start, and the page says why and how to allow it (failed, data-pc-error,
    console.error) instead of staying `booting`, and tells its user the page is not set up
    for the assistant; its own apps still draw its rows."""
    errors = open_under_policy(
        page, origins, "trusted-types pagecontext", "trusted-types dashboard"
    )
    reason = html(page).get_attribute("data-pc-error") or ""
    assert reason.startswith("worker: the browser refused to start the worker")
    assert "its trusted-types directive must allow the name pagecontext" in reason
    assert f"pagecontext: {reason}" in errors
    # Its user reads that the page is not set up for the assistant: a reload would not help.
    expect(page.locator("[data-pc-state-text]")).to_have_text(
        "The assistant could not start: it is not set up correctly on this page"
    )
    expect(page.locator("tbody [data-pc-resource-ref]")).to_have_count(60, timeout=STEP_TIMEOUT_MS)


@pytest.mark.parametrize(
    ("allowed", "refused", "said"),
    [
        (
            "script-src 'self' 'wasm-unsafe-eval'",
            "script-src 'self'",
            "script-src blocked 'wasm-eval'",
        ),
        (
            "connect-src 'self' data:",
            "connect-src data:",
            "connect-src blocked {page}/py/runtime.json",
        ),
    ],
)
def test_a_page_whose_policy_blocks_pagecontext_names_the_block(
    page: Page, origins: Origins, allowed: str, refused: str, said: str
) -> None:
    """A page whose policy leaves out what pagecontext needs (`'wasm-unsafe-eval'` for
    MicroPython, its own origin in `connect-src`): the page fails, the console names the
    directive and what it blocked, and its user reads that the page is not set up for
    the assistant (a reload would not help), not "reload the page to try again"."""
    errors = open_under_policy(page, origins, allowed, refused)
    expect(page.locator("[data-pc-state-text]")).to_have_text(
        "The assistant could not start: it is not set up correctly on this page"
    )
    named = f"pagecontext: the page's Content-Security-Policy {said.format(page=origins.page)}: "
    assert any(error.startswith(named) for error in errors), errors


# Every console.error of the page, kept as it is made.
RECORD_ERRORS = """
window.__errors = [];
const error = console.error.bind(console);
console.error = (...parts) => { window.__errors.push(parts.join(" ")); error(...parts); };
"""

# The page adds a policy of its own that blocks images, then shows an image of its own;
# resolves with the block's directive once it is reported (after pagecontext's own
# listener, added before, has seen it).
BLOCKED_IMAGE = """() => new Promise((resolve) => {
  const meta = document.createElement("meta");
  meta.httpEquiv = "Content-Security-Policy";
  meta.content = "img-src 'none'";
  document.head.append(meta);
  const reported = (event) => resolve(event.effectiveDirective);
  document.addEventListener("securitypolicyviolation", reported, { once: true });
  const logo = document.createElement("img");
  logo.src = "/brand/logo.png";
  document.body.append(logo);
})"""


def test_a_block_of_the_pages_own_is_not_taken_for_pagecontexts(
    page: Page, origins: Origins
) -> None:
    """The page's policy blocks an image of its own, on pagecontext's origin: pagecontext
    does not name it as a block of its own, nor say it is not set up correctly."""
    page.add_init_script(RECORD_ERRORS)
    page.goto(origins.page + "/")
    wait_bound(page)
    assert page.evaluate(BLOCKED_IMAGE) == "img-src"
    errors: list[str] = page.evaluate("window.__errors")
    assert not [e for e in errors if "Content-Security-Policy" in e], errors
    expect(page.locator("[data-pc-state-text]")).to_have_text("Assistant connected")


def test_the_fresh_boot_raises_no_violation(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """Without the snapshot both workers boot Pyodide normally (loading the wheels and
    pydantic-core's library): the demo flow still raises no violation."""
    context.route("**/vendor/snapshot/**", lambda route: route.fulfill(status=404))
    workers = watched_demo_flow(page, context, origins.page + "/")
    marks = [w.evaluate(MARK_DETAIL_JS, "pagecontext:runtime-loaded") for w in workers]
    assert marks == ["fresh", "fresh"]
    expect_no_csp_violations(page, workers)


def test_the_sandboxed_panel_raises_no_violation(
    page: Page, context: BrowserContext, sandboxed_origins: Origins
) -> None:
    """The panel in a sandboxed iframe starts its worker from a data: URL, which its
    policy alone allows: the flow raises no violation, and that worker may not eval.
    (It asks no question: an opaque origin reaches no agent, docs/agent.md.)"""
    workers = watched_demo_flow(page, context, sandboxed_origins.page + "/", question=False)
    expect_no_csp_violations(page, workers)
    panel_worker = next(w for w in workers if w.url.startswith("data:"))
    refused = panel_worker.evaluate(
        """() => new Promise((resolve) => setTimeout(() => {
             try { eval("1"); resolve(false); } catch { resolve(true); } }))"""
    )
    assert refused is True


def test_the_workbench_raises_no_violation(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The other topology: the assistant's workbench frames the page; the flow raises
    no violation in either document or worker."""
    watch_csp(context)
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    business = open_workbench(page, origins)
    select_and_ask(business, ROW)
    expect(page.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible(timeout=STEP_TIMEOUT_MS)
    show_and_expect(page, "applied")
    expect(html(page)).to_have_attribute("data-csp-violations", "0")
    expect(html(business)).to_have_attribute("data-csp-violations", "0")
    assert len(workers) == 2
    for worker in workers:
        assert worker_violations(worker) == [], worker.url


def test_the_page_frames_only_its_assistant(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """A frame from a third origin, or from the page's own origin, added to the page is
    refused by `frame-src`: the page counts two violations, neither frame loads, and the
    bound channel never hears from them."""
    watch_csp(context)
    page.goto(origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    for base in (origins.third, origins.page):
        page.evaluate(
            """url => { const f = document.createElement('iframe');
                 f.src = url; document.body.append(f); }""",
            base + "/e2e/attacker.html",
        )
    expect(html(page)).to_have_attribute("data-csp-violations", "2", timeout=STEP_TIMEOUT_MS)
    refused = [v.split()[:2] for v in page.evaluate("window.__cspViolations")]
    # A cross-origin blocked URL is reported as its origin alone.
    assert [directive for directive, _url in refused] == ["frame-src", "frame-src"]
    assert refused[0][1].startswith(origins.third)
    assert refused[1][1].startswith(origins.page)
    assert not any("attacker.html" in frame.url for frame in page.frames)
    assert page.locator("html").get_attribute("data-pc-window-rejected") is None


def test_a_foreign_origin_cannot_frame_the_page_the_panel_or_the_workbench(
    page: Page, origins: Origins
) -> None:
    """A page on a third origin frames the business page, the assistant panel and the
    workbench: `frame-ancestors` refuses each (no clickjacking of the panel's buttons,
    and no assistant that binds a page nobody sees): none of them loads there."""
    page.goto(origins.third + "/e2e/none")
    urls = [
        origins.page + "/",
        origins.assistant + "/assistant.html",
        origins.assistant + "/workbench.html",
    ]
    page.evaluate(
        """urls => Promise.all(urls.map((url) => new Promise((resolve) => {
             const frame = document.createElement("iframe");
             frame.addEventListener("load", resolve, { once: true });
             frame.src = url;
             document.body.append(frame);
           })))""",
        urls,
    )
    children = page.main_frame.child_frames
    assert len(children) == 3, [frame.url for frame in children]
    for frame in children:
        assert not frame.url.startswith((origins.page, origins.assistant)), frame.url
