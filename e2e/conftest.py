"""Fixtures for the browser suites: the demo server on two real origins, a third
origin for hostile frames, Debian's Chromium, and a guard that fails any test whose
browser sent a request off this machine."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import BrowserContext, Frame, FrameLocator, Page, Request, expect
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from pagecontext.server.app import ServerConfig, create_assistant_app, create_page_app
from pagecontext.server.chromium import CHROMIUM_ARGS, chromium_executable
from pagecontext.server.data import create_demo_db
from pagecontext.server.run import free_port, serve_in_thread

from .agents import ExternalAgent, Stall

ROOT = Path(__file__).resolve().parents[1]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
# Python boots in two workers on a 2-core machine: binding can take several seconds.
BOOT_TIMEOUT_MS = 60_000
STEP_TIMEOUT_MS = 15_000


@dataclass(frozen=True)
class Origins:
    """The URLs of one running demo (page and assistant origins) and of a third origin.

    `flag_stall` holds the page origin's `POST /api/actions/flag` while armed; `agent` is
    the external AG-UI agent the assistant calls, when the demo was started with one.
    """

    page: str
    assistant: str
    third: str
    flag_stall: Stall
    agent: ExternalAgent | None = None


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch the configured Chromium (PAGECONTEXT_CHROMIUM; empty for Playwright's own)."""
    args = {**browser_type_launch_args, "args": list(CHROMIUM_ARGS)}
    path = chromium_executable()
    if path is not None:
        args["executable_path"] = path
    return args


def _with_test_pages(app: Starlette) -> Starlette:
    """Serve e2e/pages under /e2e/ too, beside `app` rather than inside it: hostile
    frames need every origin in play, and a hostile page is not sent the demo's
    Content-Security-Policy (its inline scripts would not run under it). The demo's
    database is created before, since a mounted app's lifespan does not run."""
    pages = Mount("/e2e", StaticFiles(directory=ROOT / "e2e" / "pages"))
    return Starlette(routes=[pages, Mount("", app=app)])


def _origins(
    tmp_path_factory: pytest.TempPathFactory,
    *,
    sandboxed_panel: bool,
    external_agent: bool = False,
    no_agent: bool = False,
) -> Iterator[Origins]:
    site = ROOT / "build" / "site"
    if not (site / "py" / "runtime.json").is_file():
        pytest.exit("build/site is missing: run the e2e suite through `make test`", 2)
    assistant_port, agent_port = free_port(), free_port()
    agent = ExternalAgent(f"http://localhost:{assistant_port}") if external_agent else None
    config = ServerConfig(
        root=ROOT,
        db_path=tmp_path_factory.mktemp("db") / "demo.db",
        page_port=free_port(),
        assistant_port=assistant_port,
        sandboxed_panel=sandboxed_panel,
        agent_url=(
            ""
            if no_agent
            else f"http://127.0.0.1:{agent_port}/agent"
            if agent is not None
            else None
        ),
    )
    create_demo_db(config.db_path)
    third_port = free_port()
    third = Starlette()
    stall = Stall(_with_test_pages(create_page_app(config)), "/api/actions/flag")
    apps: list[tuple[ASGIApp, int]] = [
        (stall, config.page_port),
        (_with_test_pages(create_assistant_app(config)), config.assistant_port),
        (_with_test_pages(third), third_port),
    ]
    if agent is not None:
        apps.append((agent.app(), agent_port))
    with serve_in_thread(apps):
        try:
            yield Origins(
                config.page_origin,
                config.assistant_origin,
                f"http://127.0.0.1:{third_port}",
                stall,
                agent,
            )
        finally:
            # Nothing stays held: a held request's wait ends before the servers stop.
            stall.release()
            if agent is not None:
                agent.gate.set()


@pytest.fixture(scope="session")
def origins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Origins]:
    """The demo on free ports (page on 127.0.0.1, assistant on localhost) and a third
    origin; every origin also serves the hostile test pages under /e2e/."""
    yield from _origins(tmp_path_factory, sandboxed_panel=False)


@pytest.fixture(scope="session")
def agent_origins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Origins]:
    """The demo with its assistant pointed at an external AG-UI agent (`--agent-url`)."""
    yield from _origins(tmp_path_factory, sandboxed_panel=False, external_agent=True)


@pytest.fixture(scope="session")
def no_agent_origins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Origins]:
    """The demo with an assistant that has no agent (`--no-agent`: `agentUrl` is "")."""
    yield from _origins(tmp_path_factory, sandboxed_panel=False, no_agent=True)


@pytest.fixture(scope="session")
def sandboxed_origins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Origins]:
    """The same, with the assistant panel in a sandboxed, opaque-origin iframe."""
    yield from _origins(tmp_path_factory, sandboxed_panel=True)


@pytest.fixture(autouse=True)
def requests_stay_local(context: BrowserContext) -> Iterator[list[str]]:
    """Record every request the browser makes; fail the test if one leaves this machine."""
    seen: list[str] = []

    def record(request: Request) -> None:
        seen.append(request.url)

    context.on("request", record)
    yield seen
    remote = remote_requests(seen)
    assert remote == [], f"requests left the machine: {remote}"


def remote_requests(urls: list[str]) -> list[str]:
    """The URLs among `urls` that leave this machine (data:, blob: and about: never do)."""
    return [
        url
        for url in urls
        if urlsplit(url).scheme not in ("data", "blob", "about")
        and urlsplit(url).hostname not in LOCAL_HOSTS
    ]


def wait_bound(
    target: Page | Frame | FrameLocator, connection: int = 1, timeout_ms: int = BOOT_TIMEOUT_MS
) -> None:
    """Wait until a document publishes that its connection number `connection` is bound."""
    selector = f'html[data-pc-state="bound"][data-pc-connection="{connection}"]'
    if isinstance(target, FrameLocator):
        target.locator(selector).wait_for(state="attached", timeout=timeout_ms)
    else:
        target.wait_for_selector(selector, state="attached", timeout=timeout_ms)


@pytest.fixture
def demo(page: Page, origins: Origins) -> Page:
    """The demo page with its assistant panel, both frames bound, and its table and
    chart drawn (each publishes how many objects it drew)."""
    page.goto(origins.page + "/")
    wait_bound(page)
    wait_bound(page.frame_locator("iframe[data-pc-child]"))
    expect(page.locator("#sales-table")).to_have_attribute(
        "data-demo-rows", re.compile("[0-9]+"), timeout=STEP_TIMEOUT_MS
    )
    expect(page.locator("#sales-chart")).to_have_attribute(
        "data-demo-marks", re.compile("[0-9]+"), timeout=STEP_TIMEOUT_MS
    )
    return page
