"""The static bundle (`python -m pagecontext build`) served as static hosts serve it, on
two origins: the page's by Python's http.server, sending only the headers the bundle's
`_headers` file names, the assistant's by `pagecontext serve`'s app, which does the same
(and sends brotli variants). No demo server code runs; the demo flow works under the
bundle's policy."""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from pagecontext.cli import main
from pagecontext.server.chromium import MARK_DETAIL_JS
from pagecontext.server.hosting import HeaderRule, bundle_app, bundle_origins, read_headers
from pagecontext.server.run import free_port, serve_in_thread

from .conftest import ROOT, STEP_TIMEOUT_MS
from .helpers import ROW, document_policy, expect_no_csp_violations, watched_demo_flow

pytestmark = pytest.mark.e2e

# What a module script and streaming wasm compilation require, whatever the system says.
MIME_TYPES = {".mjs": "text/javascript", ".wasm": "application/wasm", ".json": "application/json"}


class StaticHandler(http.server.SimpleHTTPRequestHandler):
    """http.server's file handler, with the MIME types a module script and wasm need and
    the headers of the bundle's `_headers` file."""

    rules: ClassVar[tuple[HeaderRule, ...]] = ()

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        return MIME_TYPES.get(Path(path).suffix) or super().guess_type(path)

    def end_headers(self) -> None:
        path = self.path.split("?", 1)[0]
        for rule in self.rules:
            if rule.matches(path):
                for name, value in rule.headers:
                    self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@dataclass(frozen=True)
class BundleOrigins:
    page: str
    assistant: str
    out: Path


@pytest.fixture(scope="session")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BundleOrigins]:
    """The bundle built for two free ports, served from one folder on both origins: the
    page's by Python's http.server, the assistant's by `pagecontext serve`'s app. The
    bundle works on either; the demo flow crosses both."""
    out = tmp_path_factory.mktemp("bundle") / "site"
    ports = free_port(), free_port()
    page, assistant = f"http://127.0.0.1:{ports[0]}", f"http://localhost:{ports[1]}"
    code = main(["build", str(out), "--page-origin", page, "--assistant-origin", assistant])
    assert code == 0
    assert bundle_origins(out) == (page, assistant)
    handler = type(
        "Handler", (StaticHandler,), {"rules": tuple(read_headers((out / "_headers").read_text()))}
    )
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", ports[0]), functools.partial(handler, directory=str(out))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with serve_in_thread([(bundle_app(out), ports[1])]):
        yield BundleOrigins(page, assistant, out)
    server.shutdown()
    server.server_close()


def test_the_bundle_names_its_files_by_content_and_sends_the_documented_policy(
    bundle: BundleOrigins,
) -> None:
    """Only the pages and the demo data keep their names; the pages load their script and
    stylesheet with integrity, and each page is sent exactly the documented policy."""
    expected = {
        bundle.page + "/": (bundle.assistant, "/index.html"),
        bundle.assistant + "/assistant.html": (bundle.page, "/assistant.html"),
        bundle.assistant + "/workbench.html": (bundle.page, "/workbench.html"),
    }
    listed = json.loads((bundle.out / "manifest.json").read_text())
    for url, (frames, _name) in expected.items():
        with urllib.request.urlopen(url) as response:
            policy = response.headers["Content-Security-Policy"]
            text = response.read().decode()
        connects = "" if frames == bundle.assistant else f"{bundle.assistant} {bundle.page}"
        assert policy == document_policy(frames, connects=connects), url
        if url == bundle.page + "/":
            # What an integrator's own page is sent, named in the manifest.
            assert listed["policies"]["page"] == policy
        elif url.endswith("/assistant.html"):
            # What an app serving the assistant's page filled for its user sends with it.
            assert listed["policies"]["assistant"] == policy
        assert 'integrity="sha384-' in text
        assert "{{" not in text
    scripts = {
        value
        for rule in read_headers((bundle.out / "_headers").read_text())
        for header, value in rule.headers
        if rule.pattern == "/web/*" and header == "Content-Security-Policy"
    }
    assert scripts == {listed["policies"]["scripts"]}
    web = sorted(p.name for p in (bundle.out / "web").iterdir())
    assert [name.split("-")[0] for name in web] == ["boot", "snapshot", "styles", "worker"]
    assert all(len(name.split("-")[1].split(".")[0]) == 16 for name in web)
    assert not (bundle.out / "py" / "runtime.json").exists()
    # What a host answers for a missing file, rather than the business page and 200.
    assert "Not found" in (bundle.out / "404.html").read_text()


def test_the_bundle_names_no_path_of_the_machine_it_was_built_on(bundle: BundleOrigins) -> None:
    """No file of the bundle, the boot snapshot's memory included, holds the checkout's
    path: it would tell every visitor where (and often under whose name) it was built,
    and builds of the same sources in two places would differ."""
    checkout = str(ROOT).encode()
    naming = [
        path.relative_to(bundle.out).as_posix()
        for path in sorted(bundle.out.rglob("*"))
        if path.is_file() and checkout in path.read_bytes()
    ]
    assert naming == []


def test_the_demo_flow_runs_from_the_bundle(
    page: Page, context: BrowserContext, bundle: BundleOrigins
) -> None:
    """Served by http.server: both frames boot from the snapshot and bind, a selected row
    reaches the panel, Show me is `applied`, and nothing raised a CSP violation. (A
    static host serves no agent: the flow asks none.)"""
    workers = watched_demo_flow(page, context, bundle.page + "/", question=False)
    expect(page.locator("[data-pc-highlight]")).to_have_attribute("data-pc-resource-ref", ROW)
    expect_no_csp_violations(page, workers)
    for worker in workers:
        loaded = worker.evaluate(MARK_DETAIL_JS, "pagecontext:runtime-loaded")
        assert loaded == "snapshot"


def test_the_bundle_filters_on_the_page(page: Page, bundle: BundleOrigins) -> None:
    """A static host answers /api/sales with every row, whatever the query: the page
    applies its filters itself."""
    page.goto(bundle.page + "/")
    rows = page.locator("#sales-table tbody tr[data-pc-resource-ref]")
    expect(rows).to_have_count(60, timeout=STEP_TIMEOUT_MS)
    page.locator("select[name=region]").select_option("North")
    expect(rows).to_have_count(12, timeout=STEP_TIMEOUT_MS)
