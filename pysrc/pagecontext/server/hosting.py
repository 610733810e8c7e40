"""A built bundle served on this machine as a static host serves it (`pagecontext serve`).

What a host such as Netlify or Cloudflare Pages does with the bundle's files, and no
more: each file under its name, `/` and a page's pretty URL (`/assistant`) as its
`.html`, a file's brotli variant to a browser that takes br, `404.html` (with 404) for a
missing file, and the headers of every `_headers` rule the requested path matches. The
rules file and hidden files are the host's own, never served. No pagecontext server code
runs: no API, no agent, no page filled per request. A page of one's own put in the
bundle is tried so under the policies a deployment sends.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final
from urllib.parse import urlsplit

import anyio
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pagecontext.server.app import brotli_variant_response
from pagecontext.server.site import OUTPUT_KINDS, output_kind

__all__ = [
    "BundleError",
    "HeaderRule",
    "bundle_app",
    "bundle_origins",
    "origin_port",
    "read_headers",
]

HEADERS_PATH: Final = "_headers"
POLICY_HEADER: Final = "content-security-policy"

_log = logging.getLogger(__name__)


class BundleError(ValueError):
    """The folder is not a bundle `serve` can serve; the message says why and what to do."""


@dataclass(frozen=True)
class HeaderRule:
    """One rule of a `_headers` file: a URL path pattern, and the headers sent with the
    response to every path it matches."""

    pattern: str
    headers: tuple[tuple[str, str], ...]

    def matches(self, path: str) -> bool:
        """The pattern is the path, or ends in `*` and the path starts with what comes
        before it (`/web/*`; `/*` matches every path)."""
        if self.pattern.endswith("*"):
            return path.startswith(self.pattern[:-1])
        return path == self.pattern


def read_headers(text: str) -> list[HeaderRule]:
    """The rules of a `_headers` file: a path pattern (starting with `/`) on a line of
    its own, then its headers on indented lines, `Name: value`. Blank lines and `#`
    comments may come anywhere. Raises ValueError naming the line of anything else."""
    rules: list[HeaderRule] = []
    pattern: str | None = None
    headers: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not line[0].isspace():
            if not stripped.startswith("/"):
                raise ValueError(f"line {number}: a rule's path must start with /: {stripped!r}")
            if pattern is not None:
                rules.append(HeaderRule(pattern, tuple(headers)))
            pattern, headers = stripped, []
            continue
        name, colon, value = stripped.partition(":")
        if pattern is None or not colon or not name.strip():
            raise ValueError(f"line {number}: not a header of a rule: {stripped!r}")
        headers.append((name.strip(), value.strip()))
    if pattern is not None:
        rules.append(HeaderRule(pattern, tuple(headers)))
    return rules


def bundle_origins(folder: Path) -> tuple[str, str]:
    """The page and assistant origins the bundle in `folder` was built for (its
    `manifest.json`), each on this machine. Raises BundleError otherwise."""
    try:
        listed = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        site = output_kind(folder) == "site"
        what = OUTPUT_KINDS["site"] if site else "no bundle (no manifest.json)"
        raise BundleError(
            f"{folder} holds {what}: `pagecontext build NEWDIR` writes a bundle into a "
            "new or empty folder"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise BundleError(f"{folder}/manifest.json cannot be read: {error}") from None
    origins = listed.get("origins") if isinstance(listed, dict) else None
    if not isinstance(origins, dict) or not all(
        isinstance(origins.get(role), str) for role in ("page", "assistant")
    ):
        raise BundleError(
            f"{folder}/manifest.json names no origins (a bundle of an earlier version): "
            "build it again"
        )
    page, assistant = origins["page"], origins["assistant"]
    for origin in (page, assistant):
        parts = urlsplit(origin)
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost"):
            raise BundleError(
                f"{folder} was built for {page} and {assistant}: `serve` serves a bundle "
                "built for this machine (`pagecontext build` with --page-origin and "
                "--assistant-origin on http://127.0.0.1 and http://localhost, the default)"
            )
    return page, assistant


def origin_port(origin: str) -> int:
    """The port an http origin is served on."""
    return urlsplit(origin).port or 80


class _BundleFiles(StaticFiles):
    """The bundle's files, as a static host serves them (the module's docstring)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(directory=folder, html=True, follow_symlink=False)
        self.folder = folder

    def lookup_path(self, path: str) -> tuple[str, os.stat_result | None]:
        """StaticFiles' lookup, but not of what the host keeps to itself (the rules file,
        hidden files), judged by the file the path resolves to: a link in the folder to
        one of them is not served either."""
        full, found = super().lookup_path(path)
        if found is None:
            return full, found
        inside = PurePosixPath(
            Path(os.path.realpath(full)).relative_to(os.path.realpath(self.folder)).as_posix()
        )
        if str(inside) == HEADERS_PATH or any(part.startswith(".") for part in inside.parts):
            return "", None
        return full, found

    async def get_response(self, path: str, scope: Scope) -> Response:
        parts = PurePosixPath(path).parts
        if parts and "." not in parts[-1]:
            # A page at its pretty URL (`/assistant` for `/assistant.html`).
            try:
                _full, found = await anyio.to_thread.run_sync(self.lookup_path, path + ".html")
            except (ValueError, OSError):
                found = None
            if found is not None and stat.S_ISREG(found.st_mode):
                path += ".html"
        variant = await brotli_variant_response(self, path, scope)
        if variant is not None:
            return variant
        return await super().get_response(path, scope)


def _served_path(path: str) -> str:
    """The URL path of the file a request for `path` is answered with, as StaticFiles
    resolves it: empty, `.` and `..` segments dropped (`/assistant/` and
    `/web/../assistant.html` are `/assistant` and `/assistant.html`)."""
    return posixpath.normpath("/" + "/".join(part for part in path.split("/") if part))


class _Rules:
    """The rules of a folder's `_headers`, read again whenever the file changes, so that
    a rule added or edited while `serve` runs applies to the next request, as it would
    after a deploy."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / HEADERS_PATH
        self.read_as: tuple[int, int, int] | None = None
        self.rules: list[HeaderRule] = []

    def current(self) -> list[HeaderRule]:
        """The rules as the file holds them now. Raises BundleError if it is missing or
        not a rules file."""
        try:
            found = self.path.stat()
            read_as = (found.st_mtime_ns, found.st_size, found.st_ino)
            if read_as != self.read_as:
                self.rules = read_headers(self.path.read_text(encoding="utf-8"))
                self.read_as = read_as
        except (OSError, UnicodeDecodeError) as error:
            raise BundleError(f"{self.path} cannot be read: {error}") from None
        except ValueError as error:
            raise BundleError(f"{self.path}: {error}") from None
        return self.rules


class _RuleHeaders:
    """Sends with each response the headers of every rule the path of the file it
    serves matches (not the path as requested: `/assistant/` is the page `/assistant`,
    with its policy). A header that two matching rules name is sent once, their values
    joined by a comma in the file's order, as Netlify and Cloudflare Pages send it.

    A `_headers` edited into something that is no rules file answers every request 500,
    saying why (a host would refuse the deploy), rather than serve with rules it no
    longer holds. A page (`.html`) no rule gives a Content-Security-Policy is served,
    and said once in the log: a deployment would send it with none."""

    def __init__(self, app: ASGIApp, rules: _Rules) -> None:
        self.app = app
        self.rules = rules
        self.said: set[str] = set()

    def _say_once(self, text: str) -> None:
        if text not in self.said:
            self.said.add(text)
            _log.warning("pagecontext serve: %s", text)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            rules = self.rules.current()
        except BundleError as error:
            self._say_once(str(error))
            response = PlainTextResponse(f"pagecontext serve: {error}\n", status_code=500)
            await response(scope, receive, send)
            return
        served = _served_path(scope["path"])
        values: dict[str, list[str]] = {}
        for rule in rules:
            if rule.matches(served):
                for name, value in rule.headers:
                    values.setdefault(name.lower(), []).append(value)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, given in values.items():
                    headers[name] = ", ".join(given)
                page = headers.get("content-type", "").startswith("text/html")
                if page and message["status"] == 200 and POLICY_HEADER not in values:
                    self._say_once(
                        f"{served} is served with no Content-Security-Policy: no rule of "
                        f'{self.rules.path.name} gives it one (docs/deploy.md, "Your own pages")'
                    )
            await send(message)

        await self.app(scope, receive, send_with_headers)


def bundle_app(folder: Path) -> Starlette:
    """The ASGI app serving the bundle in `folder` (either origin's: they serve the same
    files). Raises BundleError if its `_headers` is missing or not a rules file."""
    rules = _Rules(folder)
    rules.current()
    return Starlette(
        routes=[Mount("/", app=_BundleFiles(folder))],
        middleware=[Middleware(_RuleHeaders, rules=rules)],
    )
