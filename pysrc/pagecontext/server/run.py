"""Running the two origins: one process, one event loop, two uvicorn servers.

This module owns the lifecycle of the demo server: checking that both ports are
free before anything starts, starting the page and assistant servers together,
announcing readiness, and shutting both down on Ctrl-C or SIGTERM (`serve`), or
on request from another thread (`start_in_thread`, for tests; `serve_in_thread`,
for any apps, used by the e2e suite and the benchmarks with their extra pages).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import signal
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Generator, Sequence
from types import TracebackType
from typing import Final

import uvicorn
from starlette.types import ASGIApp

from pagecontext.server.app import ServerConfig, create_assistant_app, create_page_app
from pagecontext.server.data import DatabaseShapeError, create_demo_db

__all__ = [
    "PortUnavailableError",
    "RunningServer",
    "free_port",
    "port_problem",
    "serve",
    "serve_apps",
    "serve_in_thread",
    "start_in_thread",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
# A port, the host or the database cannot be used: one line says which.
EXIT_PORT_UNAVAILABLE: Final = 2

_POLL_SECONDS: Final = 0.01
# How long a stop waits for requests under way (a body still arriving, an agent's
# answer streaming) before it ends them.
GRACEFUL_SECONDS: Final = 3


class PortUnavailableError(RuntimeError):
    """A port the demo needs is taken; the message names it and the option to change."""


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on `host` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def _bind_problem(host: str, port: int) -> OSError | socket.gaierror | None:
    """Why `host`:`port` cannot be bound, or None if it can."""
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        )[0]
    except socket.gaierror as error:
        return error
    # SO_REUSEADDR as uvicorn sets it, so a port in TIME_WAIT after a previous
    # run counts as free, and only a live listener counts as taken.
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            return error
        return None


def _resolved(host: str, family: int = 0) -> list[str] | None:
    """The addresses this machine resolves `host` to, each once, or None if it does not."""
    try:
        found = socket.getaddrinfo(host, None, family, socket.SOCK_STREAM)
    except socket.gaierror:
        return None
    return list(dict.fromkeys(str(address[0]).split("%")[0] for *_rest, address in found))


def _outside(addresses: Sequence[str]) -> str | None:
    """The first of `addresses` that is not this machine's loopback, or None."""
    return next((a for a in addresses if not ipaddress.ip_address(a).is_loopback), None)


def _outside_address(host: str) -> str | None:
    """An address `host` resolves to that is not this machine's loopback, or None (also
    when it does not resolve: binding it then says so)."""
    return _outside(_resolved(host) or [])


def _assistant_problem(config: ServerConfig) -> str | None:
    """Why a browser would not reach the assistant's server at the assistant origin's
    host name, or None. Both servers listen on `bind_host` (uvicorn binds a name's
    IPv4 address); the browser resolves `localhost` and `*.localhost` to the loopback
    itself, and any other name as the system does."""
    host = config.assistant_host
    if host == "localhost" or host.endswith(".localhost"):
        addresses: list[str] | None = ["127.0.0.1", "::1"]
    else:
        addresses = _resolved(host)
    if addresses is None:
        return f"pagecontext: cannot resolve --assistant-host {host!r}"
    outside = _outside(addresses)
    if outside is not None:
        return (
            f"pagecontext: --assistant-host {host!r} is {outside}, not this machine's "
            "loopback: the demo serves this machine only"
        )
    listening = _resolved(config.bind_host, socket.AF_INET)
    if listening and listening[0] not in addresses:
        return (
            f"pagecontext: --assistant-host {host!r} is {', '.join(addresses)}, where the "
            f"servers do not listen: they listen on {listening[0]} (--host "
            f"{config.bind_host!r})"
        )
    return None


def port_problem(config: ServerConfig) -> str | None:
    """Return a one-line message if the configured ports cannot be used, else None.

    Raises ValueError for port 0: the origins are part of the protocol (the page
    and the assistant check each other's exact origin), so they must be known
    before the servers start.
    """
    if config.page_port == 0 or config.assistant_port == 0:
        raise ValueError("the page and assistant ports must be explicit (not 0)")
    if config.page_port == config.assistant_port:
        return (
            f"pagecontext: the page and the assistant need two different ports "
            f"(both are {config.page_port})"
        )
    outside = _outside_address(config.bind_host)
    if outside is not None:
        # Its users' tokens are published (access.DEMO_TOKENS): anyone who reached it
        # could read every row and flag them as the demo's user.
        return (
            f"pagecontext: --host {config.bind_host!r} is {outside}, not this machine's "
            "loopback: the demo's users have published tokens, so it serves this machine only"
        )
    assistant = _assistant_problem(config)
    if assistant is not None:
        return assistant
    for port, option in (
        (config.page_port, "--page-port"),
        (config.assistant_port, "--assistant-port"),
    ):
        problem = _bind_problem(config.bind_host, port)
        if isinstance(problem, socket.gaierror):
            return f"pagecontext: cannot resolve --host {config.bind_host!r}: {problem.strerror}"
        if problem is not None and problem.errno == errno.EADDRINUSE:
            return (
                f"pagecontext: port {port} on {config.bind_host} is already in use "
                f"(use {option} to choose another)"
            )
        if problem is not None:
            return (
                f"pagecontext: cannot listen on {config.bind_host} port {port} "
                f"({option}): {problem.strerror}"
            )
    return None


def _without_cancelled_requests(record: logging.LogRecord) -> bool:
    """Leave out uvicorn's traceback of a request a stop ended (after GRACEFUL_SECONDS,
    or at a second Ctrl-C): its line "Cancel N running task(s)" says so already."""
    error = record.exc_info[1] if record.exc_info else None
    return not isinstance(error, asyncio.CancelledError)


# What uvicorn says of a request to upgrade its connection to a WebSocket, which neither
# origin serves (it is answered as the HTTP request it also is). Any web page can have
# its visitor's browser try one, without a preflight: each try would write these two
# lines into the demo's terminal, the second advising to install a WebSocket library.
_UPGRADE_WARNINGS: Final = ("Unsupported upgrade request.", "No supported WebSocket library")


def _without_upgrade_warnings(record: logging.LogRecord) -> bool:
    """Leave out uvicorn's warnings of a WebSocket request (`_UPGRADE_WARNINGS`)."""
    return not record.getMessage().startswith(_UPGRADE_WARNINGS)


class _ServerWithoutSignals(uvicorn.Server):
    """A uvicorn server that leaves signal handling to `_Servers`.

    Each uvicorn server installs its own handlers, so with two servers the second
    replaces the first's and only one would stop; uvicorn also re-raises the
    signal after shutdown, which would end the process with a traceback.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _demo_apps(config: ServerConfig) -> list[tuple[ASGIApp, int]]:
    return [
        (create_page_app(config), config.page_port),
        (create_assistant_app(config), config.assistant_port),
    ]


class _Servers:
    """Servers for (app, port) pairs on one host, started and stopped together."""

    def __init__(self, apps: Sequence[tuple[ASGIApp, int]], host: str) -> None:
        self.servers = [
            _ServerWithoutSignals(
                uvicorn.Config(
                    app,
                    host=host,
                    port=port,
                    log_level="warning",
                    timeout_graceful_shutdown=GRACEFUL_SECONDS,
                )
            )
            for app, port in apps
        ]
        # Made by uvicorn.Config, which sets up uvicorn's logging.
        for unsaid in (_without_cancelled_requests, _without_upgrade_warnings):
            logging.getLogger("uvicorn.error").addFilter(unsaid)
        self.failed = False

    def request_exit(self) -> None:
        """Ask both servers to stop; a second request stops without waiting."""
        for server in self.servers:
            if server.should_exit:
                server.force_exit = True
            server.should_exit = True

    async def _serve_one(self, server: uvicorn.Server) -> None:
        try:
            await server.serve()
        except SystemExit:
            # uvicorn exits the process when it cannot bind or its lifespan
            # fails (after logging why); here that stops the other server too.
            self.failed = True
            self.request_exit()

    async def _announce(self, on_ready: Callable[[], None]) -> None:
        while not all(server.started for server in self.servers):
            if any(server.should_exit for server in self.servers):
                return
            await asyncio.sleep(_POLL_SECONDS)
        on_ready()

    async def run(self, on_ready: Callable[[], None]) -> int:
        """Serve until asked to exit; return the process exit code."""
        await asyncio.gather(
            *(self._serve_one(server) for server in self.servers),
            self._announce(on_ready),
        )
        return EXIT_FAILED if self.failed else EXIT_OK


def serve(config: ServerConfig, *, ready: Callable[[], None] | None = None) -> int:
    """Run both origins in the foreground until Ctrl-C or SIGTERM; return an exit code.

    Creates the demo database if it is missing. Returns 2 (after one line on
    stderr) if a port is taken, the host cannot be listened on or the database cannot
    be used (another application's, with a table of the demo's of another shape), 1 if
    a server failed to start, 0 after a clean shutdown. `ready` is called once both
    servers accept connections.
    """
    problem = port_problem(config)
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_PORT_UNAVAILABLE
    try:
        create_demo_db(config.db_path)
    except (OSError, sqlite3.Error, DatabaseShapeError) as error:
        print(f"pagecontext: cannot use the database {config.db_path}: {error}", file=sys.stderr)
        return EXIT_PORT_UNAVAILABLE
    return _in_the_foreground(
        _Servers(_demo_apps(config), config.bind_host),
        f"pagecontext demo: page {config.page_origin}/  "
        f"assistant {config.assistant_origin}/  (Ctrl-C to stop)\n"
        f"serving {config.root}",
        ready,
    )


def serve_apps(apps: Sequence[tuple[ASGIApp, int]], *, host: str, started: str) -> int:
    """Serve each (app, port) on `host` in the foreground until Ctrl-C or SIGTERM, as
    `serve` does, and print `started` once all accept connections; return an exit code:
    2 (after one line on stderr) if a port is taken, 1 if a server failed to start, 0
    after a clean shutdown."""
    for _app, port in apps:
        problem = _bind_problem(host, port)
        if problem is not None:
            why = "already in use" if problem.errno == errno.EADDRINUSE else problem.strerror
            print(
                f"pagecontext: cannot listen on {host} port {port}: {why} (the port is its "
                "origin's, fixed in the bundle: stop what listens there, or build the bundle "
                "for other origins)",
                file=sys.stderr,
            )
            return EXIT_PORT_UNAVAILABLE
    return _in_the_foreground(_Servers(apps, host), started, None)


def _in_the_foreground(servers: _Servers, started: str, ready: Callable[[], None] | None) -> int:
    def on_ready() -> None:
        print(started, flush=True)
        if ready is not None:
            ready()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        handled = (signal.SIGINT, signal.SIGTERM)
        for signum in handled:
            loop.add_signal_handler(signum, servers.request_exit)
        try:
            return await servers.run(on_ready)
        finally:
            for signum in handled:
                loop.remove_signal_handler(signum)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        # Ctrl-C in the instant before the loop's handler was installed.
        return EXIT_OK


class RunningServer:
    """Servers running in a background thread; stop with `stop()` or `with`."""

    def __init__(self, apps: Sequence[tuple[ASGIApp, int]], host: str) -> None:
        self._servers = _Servers(apps, host)
        self._ready = threading.Event()
        self._exit_code: int | None = None
        self._thread = threading.Thread(
            target=self._run, name="pagecontext-demo-server", daemon=True
        )

    def _run(self) -> None:
        self._exit_code = asyncio.run(self._servers.run(self._ready.set))

    def _start(self, timeout: float) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(_POLL_SECONDS):
            if not self._thread.is_alive():
                raise RuntimeError(
                    f"the server stopped during startup (exit code {self._exit_code})"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"the server did not start within {timeout} s")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop both servers and wait for the thread to end. Idempotent."""
        self._servers.request_exit()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def start_in_thread(config: ServerConfig, *, timeout: float = 10.0) -> RunningServer:
    """Start both origins in a background thread; return once both accept connections.

    Creates the demo database if it is missing. Raises PortUnavailableError if a
    port is taken, DatabaseShapeError for a database of another shape, ValueError for
    port 0, and RuntimeError or TimeoutError if the
    servers do not come up.
    """
    problem = port_problem(config)
    if problem is not None:
        raise PortUnavailableError(problem)
    create_demo_db(config.db_path)
    return serve_in_thread(_demo_apps(config), host=config.bind_host, timeout=timeout)


def serve_in_thread(
    apps: Sequence[tuple[ASGIApp, int]], *, host: str = "127.0.0.1", timeout: float = 30.0
) -> RunningServer:
    """Serve each (app, port) on `host` from a background thread; return once all
    accept connections. Raises RuntimeError or TimeoutError if they do not come up."""
    running = RunningServer(apps, host)
    running._start(timeout)
    return running
