"""The two Starlette apps of the demo: the business page and the assistant panel.

This module owns the server configuration (`ServerConfig`), what each origin
serves, and the HTTP policy shared by both: MIME types, cache headers,
compression and `X-Content-Type-Options`. The page and the assistant live on
two different origins so that the browser enforces the boundary the protocol
relies on. The only cross-origin calls are the assistant's to the page origin's
resource and action APIs (`pagecontext.server.api`), which answer CORS for the
assistant origin alone; the assistant origin also serves the agent (`POST /agent`).

The Content-Security-Policy each response carries is `pagecontext.server.csp`'s.
"""

from __future__ import annotations

import html
import json
import mimetypes
import os
import re
import secrets
import stat
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import anyio
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import PathLike, StaticFiles
from starlette.types import ASGIApp, Lifespan, Message, Receive, Scope, Send

from pagecontext.confirmations import ConfirmationRegistry
from pagecontext.server import access
from pagecontext.server.agent_endpoint import HttpResourceReader, ResourceReader, agent_endpoint
from pagecontext.server.api import api_routes, sales_answer
from pagecontext.server.bodies import BODY_SECONDS, CLIENT_GONE, RefusedBodyMiddleware
from pagecontext.server.csp import (
    CspMiddleware,
    agent_url_problem,
    assistant_connects,
    assistant_policy,
    page_policy,
    worker_policy,
)
from pagecontext.server.data import create_demo_db

__all__ = [
    "ServerConfig",
    "brotli_variant_response",
    "create_assistant_app",
    "create_page_app",
    "fill_template",
    "http_origin",
]

# Registered at import because FileResponse asks `mimetypes`, and the system
# tables disagree between machines (.mjs and .wasm are often missing, and .py
# is text/x-python, which browsers download instead of showing).
for _type, _extension in (
    ("application/wasm", ".wasm"),
    ("text/javascript", ".mjs"),
    ("text/javascript", ".js"),
    ("text/plain", ".py"),
    ("application/zip", ".whl"),
    ("application/json", ".json"),
    ("application/zip", ".zip"),
):
    mimetypes.add_type(_type, _extension)

NO_CACHE: Final = "no-cache"
PAGE_CACHE: Final = "private, no-cache"
# A page that carries the user's credentials (the assistant's panel and workbench): kept
# in no cache, not even the browser's own.
CREDENTIAL_PAGE_CACHE: Final = "no-store"
IMMUTABLE: Final = "public, max-age=31536000, immutable"

PAGE_TEMPLATE_TOKEN: Final = "{{PAGE_ORIGIN}}"
ASSISTANT_TEMPLATE_TOKEN: Final = "{{ASSISTANT_ORIGIN}}"
# Replaced by the sandbox attribute of the assistant panel's iframe when the panel runs
# sandboxed (an opaque origin), else by nothing.
SANDBOX_TEMPLATE_TOKEN: Final = "{{PANEL_SANDBOX}}"
# Replaced by web/panel.html, the assistant panel's controls.
PANEL_TEMPLATE_TOKEN: Final = "{{PANEL}}"
# Replaced by the agent URL, escaped for a JSON string inside a <script> element.
AGENT_URL_TEMPLATE_TOKEN: Final = "{{AGENT_URL}}"
# Replaced by the signed-in demo user's Authorization header value, escaped the same way.
AUTHORIZATION_TEMPLATE_TOKEN: Final = "{{AUTHORIZATION}}"
AGENT_AUTHORIZATION_TEMPLATE_TOKEN: Final = "{{AGENT_AUTHORIZATION}}"
DEFAULT_AGENT_PATH: Final = "/agent"


def http_origin(host: str, port: int) -> str:
    """The origin a browser writes for `http://host:port`: without the port when it is
    80, http's default (`http://127.0.0.1:80` would match no message's origin)."""
    return f"http://{host}" if port == 80 else f"http://{host}:{port}"


@dataclass(frozen=True, init=False)
class ServerConfig:
    """Where the two origins listen and where their files come from.

    `build_dir` defaults to ``root / "build"`` and `db_path` to
    ``build_dir / "demo.db"``. `agent_url` points the assistant at an external AG-UI
    agent; None means the built-in one at ``/agent`` on the assistant origin.
    `demo_user` is the demo user the assistant acts for (``access.DEMO_TOKENS``).
    `body_seconds` is the longest a request body may take to arrive (then 408).
    """

    root: Path
    build_dir: Path
    db_path: Path
    page_host: str
    page_port: int
    assistant_host: str
    assistant_port: int
    bind_host: str
    sandboxed_panel: bool
    agent_url: str | None
    demo_user: str
    body_seconds: float

    def __init__(
        self,
        *,
        root: Path,
        build_dir: Path | None = None,
        db_path: Path | None = None,
        page_host: str = "127.0.0.1",
        page_port: int = 8000,
        assistant_host: str = "localhost",
        assistant_port: int = 8001,
        bind_host: str = "127.0.0.1",
        sandboxed_panel: bool = False,
        agent_url: str | None = None,
        demo_user: str = "ana",
        body_seconds: float = BODY_SECONDS,
    ) -> None:
        if demo_user not in access.DEMO_TOKENS:
            known = ", ".join(sorted(access.DEMO_TOKENS))
            raise ValueError(f"unknown demo user {demo_user!r}: one of {known}")
        problem = agent_url_problem(agent_url) if agent_url else None
        if problem is not None:
            raise ValueError(f"{problem}: {agent_url!r}")
        # A hand-written __init__ because the defaults of build_dir and db_path
        # derive from other fields, which dataclass defaults cannot express.
        build = build_dir if build_dir is not None else root / "build"
        values = {
            "root": root,
            "build_dir": build,
            "db_path": db_path if db_path is not None else build / "demo.db",
            "page_host": page_host,
            "page_port": page_port,
            "assistant_host": assistant_host,
            "assistant_port": assistant_port,
            "bind_host": bind_host,
            "sandboxed_panel": sandboxed_panel,
            "agent_url": agent_url,
            "demo_user": demo_user,
            "body_seconds": body_seconds,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def page_origin(self) -> str:
        """The page's origin, e.g. ``http://127.0.0.1:8000``."""
        return http_origin(self.page_host, self.page_port)

    @property
    def assistant_origin(self) -> str:
        """The assistant's origin, e.g. ``http://localhost:8001``."""
        return http_origin(self.assistant_host, self.assistant_port)

    @property
    def assistant_agent_url(self) -> str:
        """The agent URL the assistant calls: `agent_url`, or ``/agent`` (built in)."""
        return self.agent_url if self.agent_url is not None else DEFAULT_AGENT_PATH

    @property
    def authorization(self) -> str:
        """The Authorization header value the assistant sends the action API for
        `demo_user`."""
        return f"Bearer {access.DEMO_TOKENS[self.demo_user]}"

    @property
    def agent_authorization(self) -> str:
        """The one the assistant hands its agent for `demo_user`: the user's read token,
        which the action API refuses."""
        return f"Bearer {access.DEMO_READ_TOKENS[self.demo_user]}"

    @property
    def site_dir(self) -> Path:
        """The built static bundle: ``build_dir / "site"``."""
        return self.build_dir / "site"


def _accepts_brotli(scope: Scope) -> bool:
    """Return True if the request's Accept-Encoding names br."""
    for name, value in scope.get("headers", []):
        if name == b"accept-encoding":
            return b"br" in {part.strip().split(b";")[0] for part in value.split(b",")}
    return False


async def brotli_variant_response(files: StaticFiles, path: str, scope: Scope) -> Response | None:
    """The brotli variant `<path>.br` of `files`, sent as `path` with `Content-Encoding:
    br`, if there is one, the request is a GET or a HEAD and the browser takes br; else
    None (another method is the caller's to refuse, 405)."""
    if scope["method"] not in ("GET", "HEAD"):
        return None
    if path.endswith(".br") or not _accepts_brotli(scope):
        return None
    try:
        full_path, stat_result = await anyio.to_thread.run_sync(files.lookup_path, path + ".br")
    except (ValueError, OSError):
        # A path no file can have (a NUL, a name too long): the caller's own response
        # answers it, 404 with or without the variant's name.
        return None
    if stat_result is None or not stat.S_ISREG(stat_result.st_mode):
        return None
    response = files.file_response(full_path, stat_result, scope)
    media_type, _ = mimetypes.guess_type(path)
    response.headers["Content-Type"] = media_type or "application/octet-stream"
    response.headers["Content-Encoding"] = "br"
    response.headers["Vary"] = "Accept-Encoding"
    return response


class _BuildStaticFiles(StaticFiles):
    """StaticFiles with one Cache-Control policy, tolerant of a missing folder.

    Starlette's `check_config` turns a missing directory into a 500 on the first
    request; here it is an ordinary 404, because the build folder may appear
    after the server started (`make` running alongside).
    """

    def __init__(self, *, directory: Path, cache_control: str, follow_symlink: bool) -> None:
        super().__init__(directory=directory, check_dir=False, follow_symlink=follow_symlink)
        self.cache_control = cache_control

    async def check_config(self) -> None:
        return None

    async def get_response(self, path: str, scope: Scope) -> Response:
        """Serve the brotli variant `<path>.br` when there is one and the browser takes br."""
        variant = await brotli_variant_response(self, path, scope)
        if variant is not None:
            return variant
        return await super().get_response(path, scope)

    def file_response(
        self,
        full_path: PathLike,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = self.cache_control
        # These are public, static files. A sandboxed (opaque-origin) frame fetches its
        # own scripts, runtime and wheels as cross-origin requests, so they say so.
        response.headers["Access-Control-Allow-Origin"] = "*"
        return response


def _static_routes(config: ServerConfig) -> list[BaseRoute]:
    """The static mounts both origins share."""
    site = config.site_dir
    # (url prefix, folder, cache policy). The site `make` assembles holds files, not
    # links: a link in it that leads out of its folder is not followed (one to a file
    # the server's user can read would be served to anyone).
    mounts = (
        ("/web", config.root / "web", NO_CACHE),
        ("/py", site / "py", NO_CACHE),
        ("/vendor", site / "vendor", IMMUTABLE),
        ("/wheels", site / "wheels", IMMUTABLE),
    )
    return [
        Mount(
            prefix,
            app=_BuildStaticFiles(
                directory=folder, cache_control=cache_control, follow_symlink=False
            ),
        )
        for prefix, folder, cache_control in mounts
    ]


def _json_string_text(value: str) -> str:
    """Return `value` as the inside of a JSON string that cannot end a <script> element."""
    quoted = json.dumps(value, ensure_ascii=True)[1:-1]
    return quoted.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def fill_template(
    text: str,
    *,
    root: Path,
    page_origin: str,
    assistant_origin: str,
    sandboxed_panel: bool,
    agent_url: str,
    authorization: str,
    agent_authorization: str,
) -> str:
    """Return a page template (index.html, web/assistant.html, web/workbench.html) with
    its tokens replaced: the panel's controls, the origins, the panel's sandbox, the
    agent URL, the Authorization header values for the action API and for the agent
    ("" for none). The demo server and the
    static bundle (`pagecontext.server.bundle`) both fill their pages here."""
    sandbox = 'sandbox="allow-scripts"' if sandboxed_panel else ""
    if PANEL_TEMPLATE_TOKEN in text:
        # The panel's controls, one file for both pages that show them.
        text = text.replace(
            PANEL_TEMPLATE_TOKEN, (root / "web" / "panel.html").read_text(encoding="utf-8")
        )
    for token, value in (
        (PAGE_TEMPLATE_TOKEN, html.escape(page_origin)),
        (ASSISTANT_TEMPLATE_TOKEN, html.escape(assistant_origin)),
        (SANDBOX_TEMPLATE_TOKEN, sandbox),
        (AGENT_URL_TEMPLATE_TOKEN, _json_string_text(agent_url)),
        (AUTHORIZATION_TEMPLATE_TOKEN, _json_string_text(authorization)),
        (AGENT_AUTHORIZATION_TEMPLATE_TOKEN, _json_string_text(agent_authorization)),
    ):
        text = text.replace(token, value)
    return text


def _render_template(path: Path, config: ServerConfig) -> Response:
    """Serve an HTML file with its tokens (origins, panel sandbox) replaced, or a 404."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return HTMLResponse("Not Found", status_code=404)
    filled = fill_template(
        text,
        root=config.root,
        page_origin=config.page_origin,
        assistant_origin=config.assistant_origin,
        sandboxed_panel=config.sandboxed_panel,
        agent_url=config.assistant_agent_url,
        authorization=config.authorization,
        agent_authorization=config.agent_authorization,
    )
    # A page that carries the user's credentials is stored nowhere; the others, in the
    # browser's own cache (revalidated on every visit), a shared cache never.
    credentials = AUTHORIZATION_TEMPLATE_TOKEN in text
    cache = CREDENTIAL_PAGE_CACHE if credentials else PAGE_CACHE
    return HTMLResponse(filled, headers={"Cache-Control": cache})


class _NoSniffMiddleware:
    """Adds ``X-Content-Type-Options: nosniff`` to every HTTP response.

    Without it a browser may guess that a text file is a script and run it.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["X-Content-Type-Options"] = "nosniff"
            await send(message)

        await self.app(scope, receive, send_with_header)


# A Host header: a name or an IPv4 address, or an IPv6 address in brackets; a port.
_HOST_HEADER: Final = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::[0-9]{1,5})?")


class _OwnHostMiddleware:
    """Answers only requests whose Host is `origin`'s host, with any port (any other, or
    one that is no host, gets a 400 that names the origin to open, so that a page opened
    under another name for the same machine, `localhost` for `127.0.0.1`, says what to
    use instead)."""

    def __init__(self, app: ASGIApp, origin: str) -> None:
        self.app = app
        self.host = (urlsplit(origin).hostname or "").lower()
        self.refusal = PlainTextResponse(
            "Invalid host header: this server answers only as " + origin, status_code=400
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            found = _HOST_HEADER.fullmatch(Headers(scope=scope).get("host", "").lower())
            if found is None or found.group(1).strip("[]") != self.host:
                await self.refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _epoch_ms() -> float:
    return time.time() * 1000


def _steady_epoch_ms() -> Callable[[], float]:
    """A clock of epoch milliseconds that never goes back: the wall clock read once, then
    the monotonic clock's progress. Confirmation tokens expire by it: the wall clock set
    back (an NTP step, a virtual machine resumed) must not lengthen a token's life."""
    wall, start = _epoch_ms(), time.monotonic()
    return lambda: wall + (time.monotonic() - start) * 1000


def _confirmation_token() -> str:
    return secrets.token_urlsafe(32)


def _build_app(
    routes: Sequence[BaseRoute],
    *,
    origin: str,
    csp: Callable[[str], str],
    scripts: str,
    lifespan: Lifespan[Starlette] | None = None,
) -> Starlette:
    """Assemble an origin's app: its own routes, the shared static mounts, the policy
    (`csp` gives the Content-Security-Policy of the HTML document at a path, `scripts`
    that of every script, its workers'). It answers
    only requests for its own `host`: a page whose name an attacker rebinds to this
    machine's address (DNS rebinding) gets a 400, not the admin API or a bearer token."""
    # Outside the host check, so that its 400 forbids sniffing like every other answer.
    middleware = [
        Middleware(RefusedBodyMiddleware),
        Middleware(_NoSniffMiddleware),
        Middleware(_OwnHostMiddleware, origin=origin),
        Middleware(CspMiddleware, policy_for=csp, scripts=scripts),
        Middleware(GZipMiddleware, minimum_size=1000),
    ]
    return Starlette(
        routes=list(routes),
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers=CLIENT_GONE,
    )


def create_page_app(
    config: ServerConfig,
    *,
    clock: Callable[[], float] | None = None,
    token_factory: Callable[[], str] | None = None,
) -> Starlette:
    """The business page's origin: ``/``, the example pages of ``web/examples`` under
    ``/examples/``, ``/api/sales``, the resource, action and admin
    APIs (`pagecontext.server.api`) and the static mounts.

    The demo database is created at startup if it is missing. `clock` (epoch ms) and
    `token_factory` default to the system clock and `secrets.token_urlsafe`; tests
    inject their own. Given no `clock`, confirmation tokens expire by a clock that never
    goes back (`_steady_epoch_ms`), whatever is done to the system clock.
    """
    now = clock if clock is not None else _epoch_ms
    confirmations = ConfirmationRegistry(
        clock=clock if clock is not None else _steady_epoch_ms(),
        token_factory=token_factory if token_factory is not None else _confirmation_token,
    )

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        create_demo_db(config.db_path)
        yield

    def index(_request: Request) -> Response:
        return _render_template(config.root / "index.html", config)

    def example(request: Request) -> Response:
        # Only a page that is in web/examples, named exactly: the name is never a path.
        folder = config.root / "web" / "examples"
        name = request.path_params["name"]
        if name not in {path.name for path in folder.glob("*.html")}:
            return HTMLResponse("Not Found", status_code=404)
        return _render_template(folder / name, config)

    def sales(request: Request) -> Response:
        return sales_answer(config.db_path, request.query_params.multi_items())

    # Plain `def` endpoints: Starlette runs them in a worker thread, so file and
    # SQLite reads never block the event loop.
    routes: list[BaseRoute] = [
        Route("/", index, methods=["GET"]),
        Route("/examples/{name}", example, methods=["GET"]),
        Route("/api/sales", sales, methods=["GET"]),
        *api_routes(
            config.db_path,
            assistant_origin=config.assistant_origin,
            confirmations=confirmations,
            clock=now,
            body_seconds=config.body_seconds,
        ),
        *_static_routes(config),
    ]
    policy = page_policy(config.assistant_origin)
    return _build_app(
        routes,
        origin=config.page_origin,
        csp=lambda _path: policy,
        scripts=worker_policy(),
        lifespan=lifespan,
    )


def create_assistant_app(
    config: ServerConfig, *, resource_reader: ResourceReader | None = None
) -> Starlette:
    """The assistant's origin: the panel ``/assistant.html``, the workbench
    ``/workbench.html`` (the assistant embedding the business page), the built-in agent
    ``POST /agent`` and the static mounts.

    The agent re-reads rows with `resource_reader`, by default over HTTP from the page
    origin's resource API; tests inject one that calls the page app directly.
    """
    reader = (
        resource_reader if resource_reader is not None else HttpResourceReader(config.page_origin)
    )

    def assistant(_request: Request) -> Response:
        return _render_template(config.root / "web" / "assistant.html", config)

    def workbench(_request: Request) -> Response:
        return _render_template(config.root / "web" / "workbench.html", config)

    def home(_request: Request) -> Response:
        return RedirectResponse("/assistant.html", headers={"Cache-Control": NO_CACHE})

    routes: list[BaseRoute] = [
        Route("/", home, methods=["GET"]),
        Route("/assistant.html", assistant, methods=["GET"]),
        Route("/workbench.html", workbench, methods=["GET"]),
        Route(
            DEFAULT_AGENT_PATH,
            agent_endpoint(
                reader, origin=config.assistant_origin, body_seconds=config.body_seconds
            ),
            methods=["POST"],
        ),
        *_static_routes(config),
    ]
    origins = (config.page_origin, config.assistant_origin, config.assistant_agent_url)
    policy = assistant_policy(*origins)
    # Only the panel runs sandboxed; the workbench keeps the strict policy.
    panel_policy = assistant_policy(*origins, sandboxed=config.sandboxed_panel)
    return _build_app(
        routes,
        origin=config.assistant_origin,
        csp=lambda path: panel_policy if path == "/assistant.html" else policy,
        scripts=worker_policy(*assistant_connects(*origins)),
    )
