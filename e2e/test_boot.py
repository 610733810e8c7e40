"""The core's workers boot from the build's memory snapshot (web/worker.mjs), and boot
normally, after saying why, when the snapshot is missing or damaged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import (
    BrowserContext,
    BrowserType,
    ConsoleMessage,
    Page,
    Route,
    Worker,
    expect,
)

from pagecontext.browser import callsites
from pagecontext.server import site
from pagecontext.server.chromium import MARK_DETAIL_JS

from .conftest import BOOT_TIMEOUT_MS, STEP_TIMEOUT_MS, Origins, remote_requests, wait_bound
from .helpers import (
    ROW,
    ask,
    fetched,
    get,
    html,
    open_workbench,
    panel,
    select_and_ask,
    show_and_expect,
    wait_workers_ended,
)

# Each worker's boot steps: performance.mark("pagecontext:<step>", {detail}).
MARKS = """() => Object.fromEntries(performance.getEntriesByType("mark")
  .filter((m) => m.name.startsWith("pagecontext:"))
  .map((m) => [m.name.slice("pagecontext:".length), m.detail]))"""
STDLIB = "python_stdlib.zip"
ROOT = Path(__file__).resolve().parents[1]
# What a restored worker downloads only if Python reads it (web/snapshot.mjs, lazyFile).
LAZY = (STDLIB, "/vendor/snapshot/pagecontext-files-")
# The URLs a worker has requested (Resource Timing).
RESOURCES = """() => performance.getEntriesByType("resource").map((r) => r.name)"""
# The steps only a restore has (the bench times them).
RESTORE_STEPS = ["runtime-imported", "wasm-instantiated", "prerun", "snapshot-placed"]
# The two files a child's worker may take from its embedder: the runtime's wasm and the
# snapshot bundle's parts.
RUNTIME_FILES = re.compile(
    r"/pyodide\.asm\.wasm$|/vendor/snapshot/pagecontext-[0-9a-f]+-[0-9]+\.bin$"
)
STEPS = ["worker-start", "runtime-loaded", "packages-loaded", "module-imported", "worker-started"]


def _boot_marks(workers: list[Worker]) -> list[dict[str, Any]]:
    marks = [worker.evaluate(MARKS) for worker in workers]
    assert len(marks) == 2, "one core worker per frame"
    for steps in marks:
        assert all(step in steps for step in STEPS), steps
    return marks


def _visit(page: Page, origins: Origins) -> list[dict[str, Any]]:
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    page.goto(origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    return _boot_marks(workers)


def test_both_workers_restore_the_snapshot(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """Page and panel: Python comes from the snapshot, with nothing left to install, and
    a whole conversation (a selection, a command and its receipt, a question and the
    agent's streamed answer) never reads the standard library zip or the installed files
    the bundle leaves out, so neither is downloaded. The page keeps the bundle and the
    runtime's wasm in the Cache API, and its next visit reads both from there. The
    panel, a frame of another site, takes both from the page (`peer`) on each visit:
    the assistant's server is never asked for them. The page requests the wasm once:
    what it keeps is the response it compiled."""
    lazy: list[str] = []
    context.on("request", lambda r: lazy.append(r.url) if any(n in r.url for n in LAZY) else None)
    page_wasm: list[str] = []
    assistant_runtime: list[str] = []

    def runtime_request(url: str) -> None:
        if url.startswith(origins.page) and url.endswith("/pyodide.asm.wasm"):
            page_wasm.append(url)
        if url.startswith(origins.assistant) and RUNTIME_FILES.search(url):
            assistant_runtime.append(url)

    context.on("request", lambda r: runtime_request(r.url))
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    first = _visit(page, origins)
    for steps in first:
        assert steps["runtime-loaded"] == "snapshot"
        assert "snapshot-failed" not in steps
        assert all(step in steps for step in RESTORE_STEPS), steps
    select_and_ask(page, ROW)
    show_and_expect(panel(page), "applied")
    answer = ask(panel(page), "Why is this row so high?")
    expect(answer.locator("[data-pc-answer-text]")).to_contain_text(f"About {ROW}")
    expect(html(panel(page))).to_have_attribute("data-pc-answering", "false")
    assert lazy == []
    for steps in _boot_marks(workers):
        assert "stdlib-loaded" not in steps
        assert "site-packages-loaded" not in steps
    page_worker = next(w for w in page.workers if w.url.startswith(origins.page))
    page_worker.evaluate(MARK_DETAIL_JS, "pagecontext:snapshot-kept")
    # Pyodide compiled the server's response, and the Cache API kept that same body.
    assert len(page_wasm) == 1, page_wasm
    again = context.new_page()
    second = _visit(again, origins)
    for visit, page_copy in ((first, "network"), (second, "cache")):
        for file in ("snapshot-opened", "wasm-opened"):
            assert sorted(steps[file] for steps in visit) == sorted([page_copy, "peer"])
    assert all(steps["runtime-loaded"] == "snapshot" for steps in second)
    assert assistant_runtime == []


def test_a_child_with_storage_of_its_own_still_takes_its_embedders_copies(
    browser_type: BrowserType,
    browser_type_launch_args: dict[str, Any],
    origins: Origins,
    tmp_path: Path,
) -> None:
    """In a browser that gives a frame of another site storage of its own (partitioned
    by the top site: a profile that allows third-party cookies; Playwright's own
    contexts block it), the panel looks in its own Cache API first, finds nothing there,
    and takes the runtime's files from the page on every visit: it keeps none of them,
    so that its restore never runs beside the page's (docs/performance.md). The
    assistant's server is never asked for them, and the page reads its own copies on
    its second visit."""
    profile = tmp_path / "profile"
    (profile / "Default").mkdir(parents=True)
    third_party = {"cookie_controls_mode": 0, "block_third_party_cookies": False}
    (profile / "Default" / "Preferences").write_text(json.dumps({"profile": third_party}))
    context = browser_type.launch_persistent_context(str(profile), **browser_type_launch_args)
    try:
        requested: list[str] = []
        context.on("request", lambda r: requested.append(r.url))
        page = context.new_page()
        workers: list[Worker] = []
        page.on("worker", lambda worker: workers.append(worker))
        first = _visit(page, origins)
        # The profile gave the panel its storage (else no worker of it would keep anything).
        [child] = [frame for frame in page.frames if frame.url.startswith(origins.assistant)]
        assert child.evaluate("() => caches.open('probe').then(() => true, () => false)")
        for worker in workers:
            worker.evaluate(MARK_DETAIL_JS, "pagecontext:snapshot-kept")
        second = _visit(context.new_page(), origins)
    finally:
        context.close()
    # The page's worker: the server's copies, then its own; the panel's: the page's, twice.
    for visit, copies in ((first, ["network", "peer"]), (second, ["cache", "peer"])):
        for file in ("snapshot-opened", "wasm-opened"):
            assert sorted(steps[file] for steps in visit) == copies, (file, visit)
        assert all(steps["runtime-loaded"] == "snapshot" for steps in visit)
    assistant_runtime = [u for u in requested if u.startswith(origins.assistant)]
    assert [u for u in assistant_runtime if RUNTIME_FILES.search(u)] == []
    assert remote_requests(requested) == []


# From the page's main thread: each copy the worker kept in the Cache API changed, as a
# script of the page's origin could: one byte flipped, or the whole of it garbage.
SWAP_CACHED = """async (garbage) => {
  const runtime = await (await fetch("/py/runtime.json")).json();
  const cache = await caches.open("pagecontext-snapshot");
  const urls = [runtime.snapshot.parts[0], runtime.pyodide.indexURL + "pyodide.asm.wasm"];
  for (const url of urls.map((u) => new URL(u, location.href).href)) {
    const kept = await cache.match(url);
    if (!kept) return `not kept: ${url}`;
    let bytes = new TextEncoder().encode("not a bundle");
    if (!garbage) {
      bytes = new Uint8Array(await kept.arrayBuffer());
      bytes[bytes.length - 1] ^= 1;
    }
    await cache.put(url, new Response(bytes));
  }
  return "changed";
}"""


@pytest.mark.parametrize("garbage", [False, True])
def test_a_cached_copy_that_is_not_the_pinned_bytes_is_never_used(
    page: Page, context: BrowserContext, origins: Origins, garbage: bool
) -> None:
    """The bundle and the runtime's wasm the page's worker kept in the Cache API, each
    changed by one byte, or replaced by bytes that do not even parse: the next visit
    refuses both copies (their SHA-256 is not the one runtime.json pins), reads both
    from the server, still restores (its global fetch the browser's again), and works."""
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    _visit(page, origins)
    page_worker = next(w for w in page.workers if w.url.startswith(origins.page))
    page_worker.evaluate(MARK_DETAIL_JS, "pagecontext:snapshot-kept")
    assert page.evaluate(SWAP_CACHED, garbage) == "changed"
    again = context.new_page()
    [steps] = [m for m in _visit(again, origins) if "cache-refused" in m]
    assert (steps["snapshot-opened"], steps["wasm-opened"]) == ("network", "network")
    assert steps["runtime-loaded"] == "snapshot"
    # The boot that refused them left the worker's fetch as it found it, the browser's.
    [refusing] = [w for w in again.workers if w.url.startswith(origins.page)]
    assert refusing.evaluate("() => String(self.fetch).includes('[native code]')")
    select_and_ask(again, ROW)
    show_and_expect(panel(again), "applied")


@pytest.mark.parametrize("layout", ["sandboxed-panel", "workbench"])
def test_every_child_takes_its_embedders_copies(
    page: Page, request: pytest.FixtureRequest, layout: str
) -> None:
    """The panel sandboxed in an opaque origin, and the business page framed by the
    assistant's workbench (the page the child, the assistant the embedder): each child's
    worker takes both files from its embedder, which its own server never sends."""
    sandboxed = layout == "sandboxed-panel"
    origins: Origins = request.getfixturevalue("sandboxed_origins" if sandboxed else "origins")
    child_origin = origins.assistant if sandboxed else origins.page
    served: list[str] = []
    page.context.on(
        "request", lambda r: served.append(r.url) if RUNTIME_FILES.search(r.url) else None
    )
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    if sandboxed:
        page.goto(origins.page + "/")
        wait_bound(page)
        wait_bound(panel(page))
    else:
        open_workbench(page, origins)
    [child] = [w for w in workers if w.url.startswith(child_origin) or w.url.startswith("data:")]
    steps = child.evaluate(MARKS)
    assert (steps["snapshot-opened"], steps["wasm-opened"]) == ("peer", "peer")
    assert [url for url in served if url.startswith(child_origin)] == []


# Each mark of the worker's named `pagecontext:<name>`: [startTime, detail].
MARKS_NAMED = """(name) => performance.getEntriesByName("pagecontext:" + name)
  .map((m) => [m.startTime, m.detail])"""


def _child_boot(page: Page, origins: Origins, mode: str) -> tuple[dict[str, Any], Worker]:
    """The assistant's worker's boot steps, framed by e2e/pages/runtime-embedder.html,
    which answers its request for the runtime's files as `mode` says; and the worker."""
    with page.expect_worker() as started:
        page.goto(
            f"{origins.page}/e2e/runtime-embedder.html?assistant={origins.assistant}&mode={mode}"
        )
    expect(html(page)).to_have_attribute("data-asked", "1")
    worker = started.value
    worker.evaluate(MARK_DETAIL_JS, "pagecontext:worker-started")
    marks: dict[str, Any] = worker.evaluate(MARKS)
    return marks, worker


def test_a_child_keeps_a_fragment_that_is_not_a_nonce(page: Page, origins: Origins) -> None:
    """A child frame loaded with a fragment of its own (a route), not a nonce's: its edge
    removes only a nonce from the URL, so the fragment is still there once it runs."""
    page.goto(
        f"{origins.page}/e2e/runtime-embedder.html?assistant={origins.assistant}"
        "&mode=silent&hash=/orders"
    )
    child = page.frame_locator("iframe")
    expect(html(child)).to_have_attribute("data-pc-state", "ready", timeout=BOOT_TIMEOUT_MS)
    frame = next(f for f in page.frames if f.url.startswith(origins.assistant))
    assert frame.evaluate("() => location.hash") == "#/orders"


@pytest.mark.parametrize("mode", ["flipped", "garbage"])
def test_an_embedders_copy_that_is_not_the_pinned_bytes_is_never_used(
    page: Page, origins: Origins, mode: str
) -> None:
    """An embedder answers its child's request for the runtime's files with the pins of
    the build and then other bytes: its own files with one byte changed, or bytes that
    are not even a bundle or a wasm. The child's worker refuses both copies before
    reading them (`peer-refused`, with each URL: their SHA-256 is not the one its own
    runtime.json pins), reads both from its own server, and restores."""
    steps, worker = _child_boot(page, origins, mode)
    expect(html(page)).to_have_attribute("data-answered", "bytes")
    runtime = page.evaluate("async () => (await fetch('/py/runtime.json')).json()")
    own = [origins.assistant + runtime["snapshot"]["parts"][0]]
    own.append(origins.assistant + runtime["pyodide"]["indexURL"] + "pyodide.asm.wasm")
    refused = sorted(detail for _at, detail in worker.evaluate(MARKS_NAMED, "peer-refused"))
    assert refused == sorted(own)
    assert "peer-offered" in steps
    opened = [detail for _at, detail in worker.evaluate(MARKS_NAMED, "snapshot-opened")]
    assert (opened, steps["wasm-opened"]) == (["network"], "network")
    assert steps["runtime-loaded"] == "snapshot"


@pytest.mark.parametrize("mode", ["silent", "withheld", "idle"])
def test_an_embedder_that_sends_nothing_is_not_waited_for(
    page: Page, origins: Origins, mode: str
) -> None:
    """An embedder that never answers its child's request (one of an earlier version),
    offers the files and then never sends them, or keeps saying they are coming while
    its boot reads nothing more: the child's worker waits for the offer (500 ms) or for
    the bytes (10 s from its want), no longer, then reads both from its own server, and
    restores; an embedder that offered is told that the child is done with its port."""
    steps, worker = _child_boot(page, origins, mode)
    assert ("peer-silent" in steps) == (mode == "silent")
    assert ("peer-offered" in steps) == (mode != "silent")
    assert "peer-refused" not in steps
    assert (steps["snapshot-opened"], steps["wasm-opened"]) == ("network", "network")
    assert steps["runtime-loaded"] == "snapshot"
    if mode != "silent":
        # It told the embedder it no longer waits as it gave up, before it read the
        # bundle from its own server, so that the embedder closes its end and sends
        # nothing more.
        expect(html(page)).to_have_attribute("data-done", "true")
        done_at = float(html(page).get_attribute("data-done-at") or "inf")
        origin = float(worker.evaluate("() => performance.timeOrigin"))
        [[opened_at, _]] = worker.evaluate(MARKS_NAMED, "snapshot-opened")
        assert done_at < origin + opened_at
    # It did wait (timers never fire early), and gave up on its own timer, not on the
    # restore's (its restore was not given up: "runtime-loaded" above): an embedder
    # that never offered, at 500 ms, sooner than the 10 s it gives one that did.
    [[asked, _]] = worker.evaluate(MARKS_NAMED, "runtime-offered")
    [[gave_up, _]] = worker.evaluate(
        MARKS_NAMED, "peer-silent" if mode == "silent" else "peer-offered"
    )
    [[opened, _]] = worker.evaluate(MARKS_NAMED, "snapshot-opened")
    assert "snapshot-failed" not in steps
    if mode == "silent":
        assert 499 <= gave_up - asked < 9_999
    else:
        assert opened - gave_up >= 9_999


@pytest.mark.parametrize(("mode", "after_s"), [("downloading", 12), ("slow", 72)])
def test_a_child_waits_for_an_embedder_still_downloading(
    page: Page, origins: Origins, mode: str, after_s: int
) -> None:
    """An embedder whose boot is still downloading the runtime (a slow first visit) says
    so each second, with how much it has read: its child's worker waits for it past the
    10 s it gives a quiet one, takes both files from it once they come (12 s after its
    wants; on a link slow enough that they come 72 s after, past a minute, it does not
    give up and download the same 9 MB again beside it), asks its own server for
    neither, and tells the embedder it is done."""
    steps, worker = _child_boot(page, origins, mode)
    expect(html(page)).to_have_attribute(
        "data-answered", "bytes", timeout=after_s * 1000 + STEP_TIMEOUT_MS
    )
    assert "peer-refused" not in steps
    assert (steps["snapshot-opened"], steps["wasm-opened"]) == ("peer", "peer")
    assert steps["runtime-loaded"] == "snapshot"
    [[offered, _]] = worker.evaluate(MARKS_NAMED, "peer-offered")
    [[opened, _]] = worker.evaluate(MARKS_NAMED, "snapshot-opened")
    assert opened - offered >= after_s * 1000 - 1
    own = worker.evaluate(RESOURCES)
    assert not [url for url in own if RUNTIME_FILES.search(url)]
    expect(html(page)).to_have_attribute("data-done", "true")


def test_a_slow_first_visit_restores_the_snapshot_in_both_frames(
    page: Page, origins: Origins
) -> None:
    """A first visit of the assistant's workbench over a link of 2 Mbit/s (its frame
    throttled through the DevTools protocol, and its workers with it; the business page
    it frames, of another site, not): the workbench's worker reads its 9 MB of runtime
    files for more than 30 s, and its restore goes on while they come (it is given up
    only after 30 s in which nothing comes). The business page's worker, loaded at once,
    waits for the workbench's copies for as long as its boot is still reading them,
    more than the 10 s it gives an embedder that has gone quiet, and takes both from it
    rather than download them beside it."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": 20,
            "downloadThroughput": 250_000,
            "uploadThroughput": 250_000,
        },
    )
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    page.goto(origins.assistant + "/workbench.html")
    slow = 3 * BOOT_TIMEOUT_MS
    wait_bound(page, timeout_ms=slow)
    wait_bound(page.frame_locator("iframe[data-pc-child]"), timeout_ms=slow)
    [embedder] = [w for w in workers if w.url.startswith(origins.assistant)]
    [child] = [w for w in workers if w.url.startswith(origins.page)]
    own, its = _boot_marks([embedder, child])
    for steps in (own, its):
        assert "snapshot-failed" not in steps
        assert steps["runtime-loaded"] == "snapshot"
    assert (own["snapshot-opened"], own["wasm-opened"]) == ("network", "network")
    assert (its["snapshot-opened"], its["wasm-opened"]) == ("peer", "peer")
    [[started, _]] = embedder.evaluate(MARKS_NAMED, "worker-start")
    [[restored, _]] = embedder.evaluate(MARKS_NAMED, "runtime-loaded")
    assert restored - started > 30_000
    [[offered, _]] = child.evaluate(MARKS_NAMED, "peer-offered")
    [[opened, _]] = child.evaluate(MARKS_NAMED, "snapshot-opened")
    assert opened - offered > 10_000
    read = child.evaluate(RESOURCES)
    assert not [url for url in read if RUNTIME_FILES.search(url)]


def test_each_worker_rehearses_a_selection_without_touching_the_conversation(
    page: Page, origins: Origins
) -> None:
    """After binding, each worker rehearses a selection's and a command's path on
    sessions of its own (pagecontext.rehearsal), then provokes the interpreter's call
    sites (pagecontext.browser.callsites): both finish, and the frames show nothing of
    them: no chip, no revision, an empty conversation, no highlighted row. The page's
    worker, an embedder waiting for its child, rehearsed a binding before its own. The
    first real selection and Show me then work as usual."""
    workers: list[Worker] = []
    page.on("worker", lambda worker: workers.append(worker))
    page.goto(origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    assert len(workers) == 2
    page_worker = next(w for w in workers if w.url.startswith(origins.page))
    handshake = page_worker.evaluate(MARK_DETAIL_JS, "pagecontext:handshake-rehearsed")
    assert 0 < handshake["longest"] == handshake["ms"], handshake
    for worker in workers:
        spent = worker.evaluate(MARK_DETAIL_JS, "pagecontext:rehearsed")
        assert spent["ms"] > 0, spent
        assert 0 < spent["longest"] <= spent["ms"], spent
        # After the spread, after each of the rehearsal's steps, and PROVOKE_AFTER times.
        provoked = worker.evaluate(MARK_DETAIL_JS, "pagecontext:call-sites-provoked")
        assert provoked["provoked"] > callsites.PROVOKE_AFTER, provoked
        assert 0 < provoked["longest"] <= provoked["ms"], provoked
        # It wrote to objects of its own only, none of the worker's globals.
        touched = "() => [Object, JSON, Array, Array.of, Map].filter((g) => 'x' in g || 0 in g)"
        assert worker.evaluate(touched) == []
    assistant = panel(page)
    expect(assistant.locator("[data-pc-chip]")).to_have_count(0)
    expect(assistant.locator("[data-pc-log-kind]")).to_have_count(0)
    expect(html(assistant)).to_have_attribute("data-pc-revision", "0")
    expect(page.locator("[data-pc-highlight]")).to_have_count(0)
    select_and_ask(page, ROW)
    expect(assistant.locator(f'[data-pc-chip="{ROW}"]')).to_be_visible()
    expect(html(assistant)).to_have_attribute("data-pc-revision", "1")
    show_and_expect(assistant, "applied")


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_without_a_good_snapshot_the_workers_boot_normally(
    page: Page, context: BrowserContext, origins: Origins, damage: str
) -> None:
    """A 404, or the bundle cut short: each worker logs why, boots Pyodide with the wheels
    instead, and the frames bind and work as usual."""

    def spoil(route: Route) -> None:
        if damage == "missing":
            route.fulfill(status=404, body="")
            return
        body = fetched(route).body()
        route.fulfill(body=body[: len(body) // 2], content_type="application/octet-stream")

    context.route("**/vendor/snapshot/*", spoil)
    workers: list[Worker] = []
    warnings: list[str] = []

    def record(message: ConsoleMessage) -> None:
        if message.type == "warning" and "boot snapshot" in message.text:
            warnings.append(message.text)

    stdlib: list[str] = []
    context.on("request", lambda r: stdlib.append(r.url) if STDLIB in r.url else None)
    page.on("worker", lambda worker: workers.append(worker))
    page.on("console", record)
    page.goto(origins.page + "/")
    wait_bound(page)
    wait_bound(panel(page))
    for steps in _boot_marks(workers):
        assert steps["runtime-loaded"] == "fresh"
        assert steps["snapshot-failed"]
    assert len(warnings) == 2
    assert len(stdlib) == 2, "a normal boot installs the standard library, in each frame"
    select_and_ask(page, ROW)
    show_and_expect(panel(page), "applied")


def test_a_restore_that_stalls_is_given_up_for_a_normal_boot(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The page's snapshot bundle is asked for and never answered: 30 s in which no byte
    of the runtime's files comes, and the worker gives its restore up (`snapshot-failed`,
    naming the stall), boots Pyodide normally, and the page binds and works."""
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    context.route(f"{origins.page}/vendor/snapshot/*.bin", hold)
    with page.expect_worker(lambda w: w.url.startswith(origins.page)) as started:
        page.goto(origins.page + "/")
    worker = started.value
    # Within 90 s, or the test fails rather than wait for ever for a mark never made.
    failed = worker.evaluate(
        f"""(name) => Promise.race([({MARK_DETAIL_JS})(name), new Promise((resolve) =>
          setTimeout(() => resolve("no such mark in 90 s"), 90000))])""",
        "pagecontext:snapshot-failed",
    )
    assert held, "the bundle was asked for"
    assert "no progress in 30000 ms" in failed
    [[began, _]] = worker.evaluate(MARKS_NAMED, "worker-start")
    [[gave_up, _]] = worker.evaluate(MARKS_NAMED, "snapshot-failed")
    assert 30_000 <= gave_up - began < 60_000
    # The held requests went with the restore (its signal aborted them); what the
    # page's worker sends its child from now on is its server's.
    context.unroute(f"{origins.page}/vendor/snapshot/*.bin")
    wait_bound(page)
    wait_bound(panel(page))
    assert worker.evaluate(MARKS)["runtime-loaded"] == "fresh"
    select_and_ask(page, ROW)
    show_and_expect(panel(page), "applied")


def test_micropython_is_served_as_its_package_with_the_compile_hint_first(
    page: Page, origins: Origins
) -> None:
    """The main thread's MicroPython module is the pinned package's file, byte for byte,
    after one line: V8's compile hint, which has it compiled off the main thread."""
    runtime = get(page, origins.page + "/py/runtime.json").json()
    served = get(page, origins.page + runtime["micropython"]["module"]).body()
    package = ROOT / "node_modules" / site.MICROPYTHON_PACKAGE / "micropython.mjs"
    assert served == site.COMPILE_HINT + package.read_bytes()


def test_the_edge_runs_only_the_builds_bytecode(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """runtime.json names a digest for every file of the edge and the apps, and each is
    the served file's; an edge module whose bytes are not the build's (one byte
    changed on its way) is not run: the page fails with the file's URL."""
    runtime = get(page, origins.page + "/py/runtime.json").json()
    for part, names, suffix in (("edge", "files", ""), ("apps", "modules", ".mpy")):
        section = runtime[part]
        assert set(section["integrity"]) == set(section[names]), part
        for name in section[names]:
            body = get(page, origins.page + section["base"] + name + suffix).body()
            assert section["integrity"][name] == site.sri(body), name

    target = f"{origins.page}/py/edge/pagecontext/browser/edge.mpy"

    def tampered(route: Route) -> None:
        body = bytearray(fetched(route).body())
        body[-1] ^= 1
        route.fulfill(status=200, body=bytes(body), content_type="application/octet-stream")

    context.route(target, tampered)
    page.goto(origins.page + "/")
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=BOOT_TIMEOUT_MS)
    expect(html(page)).to_have_attribute(
        "data-pc-error", re.compile(r"^runtime: .*edge\.mpy: not loaded or not the build's bytes")
    )


def test_an_app_the_build_names_no_digest_for_is_never_fetched_nor_run(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """runtime.json names no digest for the page's app (`sales`, as a stale `.mpy` left
    on a server would be): its bytecode is not fetched, nor run, and the console names
    the file; the edge, whose files all have their digest, still binds."""
    target = f"{origins.page}/py/runtime.json"

    def without_the_apps_digest(route: Route) -> None:
        runtime = fetched(route).json()
        del runtime["apps"]["integrity"]["sales"]
        route.fulfill(status=200, json=runtime)

    context.route(target, without_the_apps_digest)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    with page.expect_event("pageerror", timeout=BOOT_TIMEOUT_MS) as caught:
        page.goto(origins.page + "/")
    assert "/py/apps/sales.mpy: not one of the build's files" in str(caught.value)
    wait_bound(page)
    assert not [url for url in requested if url.endswith("/sales.mpy")], requested


def test_a_server_without_this_builds_files_is_named_in_the_failure(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """The page's versioned files are gone from the server (a new build deployed over the
    one the page was loaded from): the snapshot answers 404, so the worker boots without
    it, and the wheels' lock answers with an error page. The worker fails naming the
    lock's URL and status, not with the error page read as JSON."""
    context.route(f"{origins.page}/vendor/snapshot/*", lambda route: route.fulfill(status=404))
    context.route(
        re.compile(r"/py/pyodide-lock[^/]*\.json$"),
        lambda route: route.fulfill(
            status=404, content_type="text/html", body="<!doctype html><title>Not found</title>"
        ),
    )
    page.goto(origins.page + "/")
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=BOOT_TIMEOUT_MS)
    expect(html(page)).to_have_attribute(
        "data-pc-error",
        re.compile(r"^worker: Error: http://[^ ]+/py/pyodide-lock[^ ]*\.json: HTTP 404"),
    )


def test_a_wheel_that_does_not_load_fails_the_boot_with_its_reason(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """No snapshot, and pydantic-core's wheel answers 404: the page's worker fails at
    once with the reason (the package did not load), not with the import error after it.
    The failed worker is ended, its runtime's memory with it, though the page stays."""
    context.route(f"{origins.page}/vendor/snapshot/*", lambda route: route.fulfill(status=404))
    context.route(f"{origins.page}/wheels/pydantic_core*", lambda route: route.fulfill(status=404))
    page.goto(origins.page + "/")
    expect(html(page)).to_have_attribute("data-pc-state", "failed", timeout=BOOT_TIMEOUT_MS)
    expect(html(page)).to_have_attribute(
        "data-pc-error", re.compile(r"^worker: .*packages did not load: .*pydantic.core")
    )
    wait_workers_ended(page, origins.page)
    expect(html(page)).to_have_attribute("data-pc-state", "failed")


def test_a_runtime_wasm_served_with_another_content_type_still_boots(
    page: Page, context: BrowserContext, origins: Origins
) -> None:
    """A static host that serves `.wasm` as `application/octet-stream` (many do): both
    workers still compile the runtime's wasm, from the server on this first visit, and
    the frames bind and work."""
    relabelled: list[str] = []

    def octet_stream(route: Route) -> None:
        response = fetched(route)
        headers = {**response.headers, "content-type": "application/octet-stream"}
        relabelled.append(route.request.url)
        route.fulfill(response=response, headers=headers)

    context.route("**/*.wasm", octet_stream)
    marks = _visit(page, origins)
    assert any(url.endswith("/pyodide.asm.wasm") for url in relabelled), relabelled
    assert [m["wasm-opened"] for m in marks if "wasm-opened" in m][:1] == ["network"]
    select_and_ask(page, ROW)
    show_and_expect(panel(page), "applied")
