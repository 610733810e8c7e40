"""The Content-Security-Policy of the demo pages, and the middleware that sends it.

One policy per HTML document, chosen by where the document runs:

- Scripts and workers come only from the document's own origin (`'self'`); WebAssembly
  may be compiled (`'wasm-unsafe-eval'`: Pyodide and MicroPython are wasm). No
  `'unsafe-eval'`, no `'unsafe-inline'`, no `blob:`.
- Frames name exact origins: the business page may frame only its assistant, and be
  framed only by it (the assistant's workbench embeds the page); the assistant may frame
  only the page (the workbench) and be framed only by it.
- No plugins (`object-src 'none'`) and no `<base>` (`base-uri 'none'`): nothing a
  document could be made to load or resolve against another place.
- Trusted Types enforced (`require-trusted-types-for 'script'`): a string never reaches
  an HTML or script sink. The only policy a document may make is pagecontext's
  (`trusted-types pagecontext`), and it makes one URL, the worker's (web/boot.mjs), so a
  script injected into either document cannot write markup or start a script by URL.
- Connections (`fetch`, XHR) name exact origins too: each document and worker its own
  origin; the assistant's also the page's (its action API) and its agent's. `data:` is
  allowed (a restoring worker reads the empty standard library it is handed as one);
  nothing can be sent there. So a script running in either frame cannot send what it
  reads anywhere else with fetch, XHR, EventSource or WebSocket (an image, a font or a
  navigation are other ways out, which no directive here closes).
- A sandboxed panel (an opaque origin) cannot start a worker from its own origin's URL,
  so its document alone also allows `data:` workers (docs/security.md says what that
  costs), and names its own origin for its connections, which `'self'` does not match
  in an opaque origin.

The static bundle (`pagecontext.server.bundle`) writes the same policies for a static
host to send; this module is the one place they are spelled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pagecontext.windowrules import is_exact_origin

__all__ = [
    "TRUSTED_TYPES",
    "CspMiddleware",
    "agent_url_problem",
    "assistant_connects",
    "assistant_policy",
    "connect_src",
    "origin_of",
    "page_policy",
    "policy",
    "worker_policy",
]

SCRIPT_SRC: Final = "script-src 'self' 'wasm-unsafe-eval'"
WORKER_SRC: Final = "worker-src 'self'"
# The sandboxed panel's worker starts from a data: URL that imports the real worker.
SANDBOXED_WORKER_SRC: Final = "worker-src 'self' data:"
# Trusted Types: no string reaches a script or HTML sink of the document (innerHTML,
# a script's src, a worker's URL, ...); the one policy allowed, pagecontext's own
# (web/boot.mjs), makes one TrustedScriptURL, its worker's.
TRUSTED_TYPES: Final = "require-trusted-types-for 'script'; trusted-types pagecontext"
# What every document's policy adds (a worker has neither plugins nor a base URL to set,
# and no DOM for Trusted Types to guard).
DOCUMENT_ONLY: Final = f"object-src 'none'; base-uri 'none'; {TRUSTED_TYPES}"


def origin_of(url: str) -> str:
    """The origin of the absolute http(s) URL `url` as a policy names it
    (``scheme://host[:port]``: the host in lower case, and in ASCII, an international
    name as its IDNA form, which is what the browser fetches), or "" for a path (the
    document's own origin), no URL, or a URL with no host or a port that is not one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return ""
    try:
        host, port = parts.hostname, parts.port
        ascii_host = host.encode("idna").decode("ascii") if host else ""
    except (ValueError, UnicodeError):
        return ""
    if not ascii_host:
        return ""
    if ":" in ascii_host:  # an IPv6 address, which no source expression can name
        ascii_host = f"[{ascii_host}]"
    return f"{parts.scheme}://{ascii_host}" + (f":{port}" if port is not None else "")


def agent_url_problem(url: str) -> str | None:
    """Why the absolute agent URL `url` cannot be written into the assistant's page and
    policy, or None (also for a path, which is on the assistant's own origin): its origin
    must be one the policy names as the browser fetches it, a host in lower-case ASCII
    letters, digits, dots and hyphens or an IPv4 address in full, and a port if any;
    and it names no user or password (the page is public)."""
    if not url.startswith(("http://", "https://")):
        return None
    netloc = urlsplit(url).netloc
    if "@" in netloc:
        return "the agent URL must name no user or password (it is written into the public page)"
    if netloc.startswith("["):
        return (
            "an IPv6 address names no origin the assistant's policy can allow: use a host "
            "name or an IPv4 address"
        )
    if netloc.endswith(":"):
        return "the agent URL's ':' is followed by no port"
    origin = origin_of(url)
    default = ":443" if origin.startswith("https:") else ":80"
    if not netloc.isascii() or not is_exact_origin(origin.removesuffix(default)):
        return (
            "the agent URL's host must be as a browser writes it, which the assistant's "
            "policy then names: ASCII letters, digits, dots and hyphens (an international "
            "name in its xn-- form), or an IPv4 address in full"
        )
    return None


def connect_src(*origins: str) -> str:
    """`connect-src`: the document's or worker's own origin, `data:`, and `origins`
    (exact origins, each once; "" is left out)."""
    listed = ["'self'", "data:", *dict.fromkeys(origin for origin in origins if origin)]
    return "connect-src " + " ".join(listed)


def worker_policy(*origins: str) -> str:
    """The policy of every JavaScript response: a worker started from a URL runs under
    the policy of its script's response (frames mean nothing in a worker). It may
    connect to its own origin and to `origins`."""
    return f"{SCRIPT_SRC}; {WORKER_SRC}; {connect_src(*origins)}"


def policy(
    *, frames: str, framed_by: str, data_workers: bool = False, connects: tuple[str, ...] = ()
) -> str:
    """Return the policy of a document that may frame only `frames`, be framed only by
    `framed_by` and connect only to its own origin and `connects` (exact origins),
    optionally allowing `data:` workers."""
    workers = SANDBOXED_WORKER_SRC if data_workers else WORKER_SRC
    return (
        f"{SCRIPT_SRC}; {workers}; frame-src {frames}; frame-ancestors {framed_by}; "
        f"{connect_src(*connects)}; {DOCUMENT_ONLY}"
    )


def page_policy(assistant_origin: str) -> str:
    """The business page's policy: it frames its assistant and is framed only by it, and
    connects to its own origin only."""
    return policy(frames=assistant_origin, framed_by=assistant_origin)


def assistant_connects(page_origin: str, assistant_origin: str, agent_url: str) -> tuple[str, ...]:
    """Where the assistant (its document, and its worker) connects besides its own
    origin: itself by name (for an opaque, sandboxed document), the page's origin (the
    action API) and its agent's (`agent_url`: a path is on its own origin; "" is none)."""
    return (assistant_origin, page_origin, origin_of(agent_url))


def assistant_policy(
    page_origin: str, assistant_origin: str, agent_url: str, *, sandboxed: bool = False
) -> str:
    """The assistant's policy (panel and workbench): it frames the page and is framed only
    by it, and connects to `assistant_connects`. `sandboxed` is for the panel in a
    sandboxed iframe, which needs `data:` workers."""
    return policy(
        frames=page_origin,
        framed_by=page_origin,
        data_workers=sandboxed,
        connects=assistant_connects(page_origin, assistant_origin, agent_url),
    )


class CspMiddleware:
    """Adds ``Content-Security-Policy``: ``policy_for(path)`` to every HTML response,
    `scripts` (a `worker_policy`) to every JavaScript response.

    A document takes its policy from its own response. So does a worker started from a
    URL: without the header on its script, the worker (Pyodide and all it loads) would
    run under no policy at all, whatever the document's. On a script a document imports,
    the header has no effect.
    """

    def __init__(self, app: ASGIApp, *, policy_for: Callable[[str], str], scripts: str) -> None:
        self.app = app
        self.policy_for = policy_for
        self.scripts = scripts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                media_type = headers.get("content-type", "").split(";")[0].strip()
                if media_type == "text/html":
                    headers["Content-Security-Policy"] = self.policy_for(scope["path"])
                elif media_type == "text/javascript":
                    headers["Content-Security-Policy"] = self.scripts
            await send(message)

        await self.app(scope, receive, send_with_policy)
