"""The `pagecontext` command line: `demo` serves the two origins, `assemble` builds the
site the demo server serves, `build` writes the static bundle for any static host.

This module owns argument parsing and turning failures into one-line messages and
exit codes. The server is imported only when a command needs it, so `--help`
works without the `server` extra.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

# Standard library only, like the rest of what --help needs.
from pagecontext.server.access import DEMO_TOKENS

if TYPE_CHECKING:
    from pagecontext.server.app import ServerConfig

__all__ = ["demo_config", "find_repo_root", "main"]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
# 128 + SIGTERM, as a shell reports a process SIGTERM ended.
EXIT_TERMINATED = 128 + signal.SIGTERM
AGENT_URL_ENV = "PAGECONTEXT_AGENT_URL"


def find_repo_root(start: Path | None = None) -> Path:
    """Return the nearest folder at or above `start` holding index.html and web/.

    `start` defaults to this package's folder; without a match, the current
    working directory is returned (the caller checks it).
    """
    here = (start or Path(__file__)).resolve()
    for folder in (here, *here.parents):
        if (folder / "index.html").is_file() and (folder / "web").is_dir():
            return folder
    return Path.cwd()


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, got {port}")
    return port


def _agent_url(text: str) -> str:
    from urllib.parse import urlsplit

    absolute = text.startswith(("http://", "https://"))
    # "//host/x" is a URL on another host, not a path on the assistant origin; so is
    # "/\\host/x", which browsers read the same way.
    path = text.startswith("/") and text[1:2] not in ("/", "\\")
    try:
        # `port` raises ValueError for a port that is not a number from 0 to 65535.
        host = urlsplit(text).hostname if absolute and urlsplit(text).port != 0 else None
    except ValueError:
        host = None
    printable = all(c.isprintable() and not c.isspace() for c in text)
    if not (path or host) or not printable:
        raise argparse.ArgumentTypeError(
            f"the agent URL must be an http(s) URL with a host, or a path on the "
            f"assistant origin: {text!r}"
        )
    from pagecontext.server.csp import agent_url_problem

    # Written into the assistant's page, which anyone may read, and its origin into the
    # page's policy, which must name it as the browser fetches it.
    problem = agent_url_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{problem}: {text!r}")
    if _in_clear_text(text, host):
        # The user's read token goes to the agent with every run: never in clear text
        # over a network.
        raise argparse.ArgumentTypeError(
            f"an agent on another machine must be reached over https: {text!r}"
        )
    return text


# Hosts an agent or an origin may be reached on over plain http: this machine.
_LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})
# The port an origin leaves unwritten, by scheme.
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _in_clear_text(url: str, host: str | None) -> bool:
    """True if `url`, whose host is `host`, is plain http to another machine than this
    one (not one of _LOOPBACK_HOSTS): what the user's credentials must never cross."""
    return url.startswith("http://") and host not in _LOOPBACK_HOSTS


def _on_this_machine(origin: str) -> bool:
    """True if the exact origin `origin` is one of this machine's (a loopback host)."""
    from urllib.parse import urlsplit

    return urlsplit(origin).hostname in _LOOPBACK_HOSTS


def _origin(text: str) -> str:
    """Return `text` if it is an origin as a browser writes it (exact, its host as
    `_host_problem` asks, no default port) and https unless its host is this machine."""
    from pagecontext.windowrules import is_exact_origin

    scheme, _, rest = text.partition("://")
    host, _, port = rest.partition(":")
    if not is_exact_origin(text):
        default = scheme in _DEFAULT_PORTS and port == str(_DEFAULT_PORTS[scheme])
        if default and is_exact_origin(f"{scheme}://{host}"):
            raise argparse.ArgumentTypeError(
                f"{text!r} names its scheme's default port: write it without the "
                f"port, {scheme}://{host}, as browsers do"
            )
        # The host's own problem, when that is all that is wrong with the text (not a
        # path, a trailing slash, upper case, user info).
        shaped = scheme in _DEFAULT_PORTS and host == host.lower()
        shaped = shaped and not any(mark in rest for mark in "/?#@")
        problem = _host_problem(host) if shaped else None
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{text!r}: {problem}")
        raise argparse.ArgumentTypeError(
            f"not an exact origin (scheme://host[:port], lower case, no path or "
            f"trailing slash): {text!r}"
        )
    if _in_clear_text(text, host):
        # What the user sees, and the credentials a deployment gives the assistant, would
        # cross the network in clear text.
        raise argparse.ArgumentTypeError(f"an origin on another machine must be https: {text!r}")
    return text


def _host_problem(host: str) -> str | None:
    """Why `host` (lower case) cannot be the host of an origin the demo serves or a
    bundle is built for, or None if it can."""
    from pagecontext.windowrules import ends_in_a_number, is_exact_origin, is_full_ipv4

    if ":" in host or host.startswith("["):
        return "an IPv6 address names no origin here: use a host name or an IPv4 address"
    if not host.isascii():
        try:
            written = host.encode("idna").decode("ascii")
        except UnicodeError:
            written = "its xn-- form"
        return f"an international name is written as browsers write it, {written}"
    if is_exact_origin(f"http://{host}"):
        return None
    # Why not (the rule itself is is_exact_origin's).
    if ends_in_a_number(host) and not is_full_ipv4(host):
        return (
            "an IPv4 address written as a browser writes it, in full: four numbers, "
            "no zero before one"
        )
    return (
        "not a host name of an exact origin (letters, digits, dots and hyphens, "
        "not starting or ending with a dot or hyphen, no two dots in a row)"
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pagecontext",
        description="Hand an embedded AI assistant exactly what the user is looking at.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser("demo", help="serve the demo page and assistant on two origins")
    demo.add_argument(
        "--host",
        default="127.0.0.1",
        help="host the servers bind to and the page origin uses: a host name (taken in "
        "lower case, as browsers write origins) or an IPv4 address, of this machine's "
        "loopback (the demo's users have published tokens); an IPv6 address names no "
        "origin here and is refused (default: %(default)s)",
    )
    demo.add_argument(
        "--page-port",
        type=_port,
        default=8000,
        help="port of the page origin (http://HOST:PORT) (default: %(default)s)",
    )
    demo.add_argument(
        "--assistant-host",
        default="localhost",
        help="host name of the assistant origin, as --host; must differ from --host so "
        "the browser keeps the two apart, and reach the address the servers listen on "
        "(--host's; a browser takes localhost and *.localhost as 127.0.0.1) "
        "(default: %(default)s)",
    )
    demo.add_argument(
        "--assistant-port",
        type=_port,
        default=8001,
        help="port of the assistant origin (http://ASSISTANT-HOST:PORT) (default: %(default)s)",
    )
    demo.add_argument(
        "--db", type=Path, default=None, help="SQLite demo database (default: ROOT/build/demo.db)"
    )
    demo.add_argument(
        "--root",
        type=Path,
        default=None,
        help="folder holding index.html, web/ (its examples/ served at /examples/) and "
        "the site `make` builds in build/site (default: found from the package)",
    )
    demo.add_argument(
        "--sandboxed-panel",
        action="store_true",
        help="run the assistant panel in a sandboxed iframe (an opaque origin, bound by "
        "its nonce alone)",
    )

    demo.add_argument(
        "--agent-url",
        type=_agent_url,
        default=None,
        help="an external AG-UI agent for the assistant to call instead of the built-in "
        f"one at /agent (default: ${AGENT_URL_ENV} if set)",
    )

    demo.add_argument(
        "--user",
        choices=sorted(DEMO_TOKENS),
        default="ana",
        help="the demo user the assistant acts for: ana reads every region and may flag "
        "rows; ben reads North and South only and may not flag (default: %(default)s)",
    )

    assemble = commands.add_parser(
        "assemble", help="assemble everything the browser loads into one folder"
    )
    assemble.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the site folder to write: new, empty, or one written before (it is replaced "
        "once the new site is complete)",
    )
    assemble.add_argument(
        "--wheels", type=Path, required=True, help="folder of the downloaded browser wheels"
    )
    assemble.add_argument(
        "--root", type=Path, default=None, help="the repository (default: found from the package)"
    )

    build = commands.add_parser(
        "build",
        help="write the static bundle (the demo pages and everything they load) for any "
        "static host",
        description="Write a self-contained static bundle into OUTDIR: the runtimes, the "
        "wheels, the boot script, the edge, the worker's snapshot, content-hashed file "
        "names, integrity hashes, and the demo pages filled for the two origins. Serve "
        "the folder on both origins, with the headers in OUTDIR/_headers "
        "(docs/deploy.md).",
    )
    build.add_argument(
        "outdir",
        type=Path,
        metavar="OUTDIR",
        help="the folder to write: new, empty, or a bundle written before (it is replaced "
        "once the new bundle is complete; a failed build leaves it as it was)",
    )
    build.add_argument(
        "--page-origin",
        type=_origin,
        default="http://127.0.0.1:8000",
        help="the exact origin the business page is served from, as a browser writes it "
        "(no default port; https unless the host is 127.0.0.1 or localhost); the "
        "assistant accepts and frames only this origin (default: %(default)s)",
    )
    build.add_argument(
        "--assistant-origin",
        type=_origin,
        default="http://localhost:8001",
        help="the exact origin the assistant is served from, as --page-origin; the page "
        "frames, and is framed by, only this origin (default: %(default)s)",
    )
    agent = build.add_mutually_exclusive_group()
    agent.add_argument(
        "--agent-url",
        type=_agent_url,
        default=None,
        help="the AG-UI agent the assistant calls; a static host has none, so name one "
        "that answers CORS for the assistant origin. It is written into the public "
        "assistant page: it must hold no secret (default: /agent on the assistant origin)",
    )
    agent.add_argument(
        "--no-agent",
        action="store_true",
        help='an assistant with no agent (its agentUrl is ""): it asks nothing, and answers '
        'every question at once with "This assistant has no agent to ask" (no-agent); the '
        "rest of the panel works as with one",
    )
    build.add_argument(
        "--keep-previous",
        action="store_true",
        help="keep the versioned files (web/, py/, vendor/, wheels/) of the bundle OUTDIR "
        "held before, beside the new ones, so that pages loaded from it keep working "
        "after the new bundle replaces it; only that one earlier build is kept "
        "(docs/deploy.md, Deploying a new version)",
    )
    build.add_argument(
        "--wheels",
        type=Path,
        default=None,
        help="folder of the downloaded browser wheels (default: ROOT/build/wheels)",
    )
    build.add_argument(
        "--root", type=Path, default=None, help="the repository (default: found from the package)"
    )

    serve = commands.add_parser(
        "serve",
        help="serve a built bundle on this machine, on the origins it was built for, as a "
        "static host serves it",
        description="Serve the bundle in DIR (`pagecontext build DIR`, for origins on this "
        "machine: the default) on its page and assistant origins, as a static host serves "
        "it: its files, the headers its _headers file lists, brotli variants, 404.html. "
        "No API and no agent: a page of your own copied into DIR is tried under the "
        "policies a deployment sends (docs/deploy.md). The ports are the origins' own, "
        "fixed in the bundle: to serve on others, build it for them (`pagecontext build "
        "DIR --page-origin ... --assistant-origin ...`).",
    )
    serve.add_argument("folder", type=Path, metavar="DIR", help="the bundle's folder")
    return parser


def _repository(args: argparse.Namespace) -> Path | None:
    """The repository `--root` names (else the one found from the package), or None
    after one line saying it is not one."""
    root: Path = args.root if args.root is not None else find_repo_root()
    if not (root / "index.html").is_file():
        print(
            f"pagecontext: no index.html in {root} (use --root to point at the repository)",
            file=sys.stderr,
        )
        return None
    return root


def demo_config(argv: Sequence[str]) -> ServerConfig | int:
    """The config `pagecontext demo ARGV...` serves, or the exit code of the usage error
    it said in one line (argparse's own errors exit, as `main` does)."""
    return _demo_config(_build_parser().parse_args(["demo", *argv]))


def _demo(args: argparse.Namespace) -> int:
    config = _demo_config(args)
    if isinstance(config, int):
        return config
    from pagecontext.server.run import serve

    site = config.site_dir
    if not (site / "py" / "runtime.json").is_file():
        print(
            f"pagecontext: no site in {site}: run `make` in the repository first (it "
            "assembles it), or `pagecontext assemble --out` it there",
            file=sys.stderr,
        )
        return 1
    return serve(config)


def _demo_config(args: argparse.Namespace) -> ServerConfig | int:
    root = _repository(args)
    if root is None:
        return EXIT_USAGE

    agent_url: str | None = args.agent_url
    if agent_url is None and os.environ.get(AGENT_URL_ENV):
        try:
            agent_url = _agent_url(os.environ[AGENT_URL_ENV])
        except argparse.ArgumentTypeError as error:
            print(f"pagecontext: ${AGENT_URL_ENV}: {error}", file=sys.stderr)
            return EXIT_USAGE

    # Browsers write an origin's host in lower case; the origins are compared exactly.
    host, assistant_host = args.host.lower(), args.assistant_host.lower()
    for option, name in (("--host", host), ("--assistant-host", assistant_host)):
        problem = _host_problem(name)
        if problem is not None:
            print(f"pagecontext: {option} {name!r}: {problem}", file=sys.stderr)
            return EXIT_USAGE

    if assistant_host == host:
        print(
            "pagecontext: --assistant-host must differ from --host: the two origins need "
            "two host names",
            file=sys.stderr,
        )
        return EXIT_USAGE

    from pagecontext.server.app import ServerConfig

    return ServerConfig(
        root=root,
        db_path=args.db,
        page_host=host,
        page_port=args.page_port,
        assistant_host=assistant_host,
        assistant_port=args.assistant_port,
        bind_host=host,
        sandboxed_panel=args.sandboxed_panel,
        agent_url=agent_url,
        demo_user=args.user,
    )


def _assemble(args: argparse.Namespace) -> int:
    import subprocess

    from pagecontext.server.compress import brotli_cache
    from pagecontext.server.site import SiteError, assemble

    root = _repository(args)
    if root is None:
        return EXIT_USAGE
    held = _names_in(args.out)
    try:
        _runtime, compressed = assemble(
            root, args.out, args.wheels, _step, brotli_cache=brotli_cache(root)
        )
    except (SiteError, subprocess.CalledProcessError, OSError) as error:
        print(f"pagecontext: cannot assemble the site: {error}", file=sys.stderr)
        return 1
    _note_removed(args.out, held, "the assembly", "site")
    for path, size, packed in compressed:
        print(f"  {path.name}: {size:,} -> {packed:,} bytes")
    return 0


def _build(args: argparse.Namespace) -> int:
    import subprocess

    from pagecontext.server.bundle import build_bundle
    from pagecontext.server.compress import brotli_cache
    from pagecontext.server.site import SiteError

    if args.page_origin == args.assistant_origin:
        print("pagecontext: the page and the assistant need two origins", file=sys.stderr)
        return EXIT_USAGE
    if _on_this_machine(args.page_origin) != _on_this_machine(args.assistant_origin):
        # One origin given and the other left at its default: a bundle whose page frames
        # (and hands the selection to) whatever answers on the visitor's own machine.
        print(
            "pagecontext: the page and the assistant origins must both be on this machine "
            f"or both elsewhere (got {args.page_origin} and {args.assistant_origin}): "
            "give --page-origin and --assistant-origin together",
            file=sys.stderr,
        )
        return EXIT_USAGE
    out: Path = args.outdir
    root = _repository(args)
    if root is None:
        return EXIT_USAGE
    wheels: Path = args.wheels if args.wheels is not None else root / "build" / "wheels"
    held = _names_in(out)
    try:
        bundle = build_bundle(
            root,
            out,
            wheels,
            page_origin=args.page_origin,
            assistant_origin=args.assistant_origin,
            agent_url="" if args.no_agent else args.agent_url,
            brotli_cache=brotli_cache(root),
            keep=args.keep_previous,
            progress=_step,
        )
    except (SiteError, subprocess.CalledProcessError, OSError) as error:
        print(f"pagecontext: cannot build the bundle: {error}", file=sys.stderr)
        return 1
    if bundle.kept is not None:
        if bundle.kept.found:
            print(
                f"pagecontext: kept {bundle.kept.files:,} files "
                f"({bundle.kept.bytes / 1e6:.1f} MB) of the earlier bundle, for its pages "
                "still open"
            )
        else:
            print(f"pagecontext: {out} held no earlier bundle: nothing kept")
    _note_removed(out, held, "the build", "bundle")
    print(
        f"pagecontext: wrote {bundle.out}: serve it on {bundle.page_origin} and "
        f"{bundle.assistant_origin} with the headers in {bundle.out / '_headers'}"
    )
    if (
        args.agent_url is None
        and not args.no_agent
        and not _on_this_machine(bundle.assistant_origin)
    ):
        # The default suits the demo server, which answers /agent; a static host does not.
        print(
            f"pagecontext: note: its assistant calls {bundle.assistant_origin}/agent, which a "
            "static host does not answer: give --agent-url (an agent that answers CORS for "
            "the assistant origin) or --no-agent",
            file=sys.stderr,
        )
    return 0


def _serve(args: argparse.Namespace) -> int:
    from pagecontext.server.hosting import BundleError, bundle_app, bundle_origins, origin_port
    from pagecontext.server.run import serve_apps

    folder: Path = args.folder
    try:
        page, assistant = bundle_origins(folder)
        app = bundle_app(folder)
    except BundleError as error:
        print(f"pagecontext: {error}", file=sys.stderr)
        return EXIT_USAGE
    # Two origins on one port (127.0.0.1:8000 and localhost:8000) are one server: the two
    # serve the same files.
    ports = sorted({origin_port(page), origin_port(assistant)})
    return serve_apps(
        [(app, port) for port in ports],
        host="127.0.0.1",
        started=f"pagecontext serve: {folder}: page {page}/  assistant {assistant}/  "
        "(Ctrl-C to stop)",
    )


def _note_removed(out: Path, held: set[str], writer: str, output: str) -> None:
    """Name on stderr what `out` held (`held`, its names before `writer` replaced it) and
    holds no longer: files put there since the earlier `output` (a host's CNAME, say),
    replaced with it, as docs/deploy.md says, but never without a word."""
    gone = sorted(held - _names_in(out))
    if gone:
        print(
            f"pagecontext: note: {out} held {', '.join(gone)}, which {writer} does not "
            f"write: removed with the earlier {output} (keep such files elsewhere and copy "
            f"them in after each {writer.split()[-1]})",
            file=sys.stderr,
        )


def _names_in(folder: Path) -> set[str]:
    """The names in `folder` (none if it is no folder, or one that cannot be listed: the
    command that writes it then says why, in its own words)."""
    try:
        return {entry.name for entry in folder.iterdir()} if folder.is_dir() else set()
    except OSError:
        return set()


def _step(step: str) -> None:
    # Progress, not output: on stderr, so that stdout holds the result alone (the line
    # naming what was written) for a script or a log that keeps it.
    print(f"pagecontext: {step}...", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default: sys.argv[1:]); return the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    commands = {"demo": _demo, "assemble": _assemble, "build": _build, "serve": _serve}
    command = commands.get(args.command)
    if command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    # demo and serve stop on SIGTERM themselves (run.py). For assemble and build, SIGTERM
    # (`timeout`, a CI job cancelled, `kill`) is Ctrl-C's exception, so that the folder
    # being written is removed and the Node.js child is killed, not left behind.
    previous = None
    if command in (_assemble, _build) and threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return command(args)
    except KeyboardInterrupt:
        # assemble and build leave their output folder as it was.
        print("pagecontext: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _Terminated:
        print("pagecontext: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class _Terminated(BaseException):
    """SIGTERM arrived during assemble or build (a BaseException, as KeyboardInterrupt
    is: no `except Exception` on the way takes it for an error of its own)."""


def _terminated(_signum: int, _frame: object) -> None:
    raise _Terminated
