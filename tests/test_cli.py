"""The `pagecontext` command line and running both origins (run.py)."""

from __future__ import annotations

import contextlib
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from clients import assistant_client
from commands import first_line, pagecontext_running, stopped
from pagecontext.cli import demo_config, find_repo_root, main
from pagecontext.server.app import ServerConfig
from pagecontext.server.run import PortUnavailableError, free_port, port_problem, start_in_thread
from pagecontext.server.site import OUTPUT_MARK, SiteError

# This checkout: the repository the build commands read.
REPOSITORY = Path(__file__).resolve().parent.parent


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A minimal repository: the two HTML templates the server renders, and an
    assembled site's runtime description."""
    (tmp_path / "index.html").write_text("<p>page {{PAGE_ORIGIN}}</p>")
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "assistant.html").write_text("<p>panel {{ASSISTANT_ORIGIN}}</p>")
    (tmp_path / "build" / "site" / "py").mkdir(parents=True)
    (tmp_path / "build" / "site" / "py" / "runtime.json").write_text("{}")
    return tmp_path


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port with a live listener on 127.0.0.1, as another program would hold it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def _demo_args(root: Path, page_port: int, assistant_port: int) -> list[str]:
    return [
        "demo",
        "--root",
        str(root),
        "--db",
        str(root / "demo.db"),
        "--page-port",
        str(page_port),
        "--assistant-port",
        str(assistant_port),
    ]


def test_taken_page_port_exits_2_with_one_line(
    root: Path, taken_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A page port already in use ends the demo with exit code 2 and one line naming it."""
    assert main(_demo_args(root, taken_port, free_port())) == 2
    err = capsys.readouterr().err
    assert err == (
        f"pagecontext: port {taken_port} on 127.0.0.1 is already in use "
        "(use --page-port to choose another)\n"
    )


def test_taken_assistant_port_names_its_option(
    root: Path, taken_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A taken assistant port points at --assistant-port."""
    assert main(_demo_args(root, free_port(), taken_port)) == 2
    assert capsys.readouterr().err.strip().endswith("(use --assistant-port to choose another)")


def test_same_port_for_both_origins_exits_2(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The page and the assistant cannot share a port."""
    port = free_port()
    assert main(_demo_args(root, port, port)) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize("port", ["0", "65536", "http"])
def test_invalid_port_is_a_usage_error(root: Path, port: str) -> None:
    """Port numbers outside 1-65535 are rejected by argument parsing (exit code 2)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--root", str(root), "--page-port", port])
    assert exit_info.value.code == 2


def test_no_command_prints_help_and_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    """`pagecontext` alone prints the usage and fails."""
    assert main([]) == 2
    assert "demo" in capsys.readouterr().err


def test_root_without_index_html_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --root without index.html is reported in one line before anything starts."""
    assert main(["demo", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "no index.html" in err


def test_a_demo_without_its_site_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repository whose site was never assembled is reported in one line, exit 1,
    before any server starts (it would serve pages whose runtime is missing)."""
    (tmp_path / "index.html").write_text("<!doctype html>")
    ports = ["--page-port", "1", "--assistant-port", "2"]
    assert main(["demo", "--root", str(tmp_path), *ports]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"no site in {tmp_path / 'build' / 'site'}" in err


def test_find_repo_root_walks_up_to_index_html(root: Path) -> None:
    """The repository root is the nearest folder above holding index.html and web/."""
    deep = root / "pysrc" / "pagecontext"
    deep.mkdir(parents=True)
    assert find_repo_root(deep / "cli.py") == root


def test_start_in_thread_serves_both_origins_and_stops(root: Path) -> None:
    """Both origins answer while running and stop accepting connections after stop()."""
    config = ServerConfig(root=root, page_port=free_port(), assistant_port=free_port())
    with start_in_thread(config) as running:
        page = httpx.get(f"{config.page_origin}/", timeout=5)
        assert page.text == f"<p>page {config.page_origin}</p>"
        sales = httpx.get(f"{config.page_origin}/api/sales?region=East", timeout=5)
        assert len(sales.json()["rows"]) == 12
        assistant = f"http://127.0.0.1:{config.assistant_port}/assistant.html"
        host = {"Host": f"{config.assistant_host}:{config.assistant_port}"}
        panel = httpx.get(assistant, headers=host, timeout=5)
        assert panel.text == f"<p>panel {config.assistant_origin}</p>"
        # Another host name for the same address: a DNS-rebinding page's request.
        rebound = httpx.get(assistant, headers={"Host": "rebind.example.test"}, timeout=5)
        assert rebound.status_code == 400
    assert not running._thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{config.page_origin}/", timeout=1)


def test_start_in_thread_refuses_a_taken_port(root: Path, taken_port: int) -> None:
    """start_in_thread raises instead of starting half of the demo."""
    config = ServerConfig(root=root, page_port=free_port(), assistant_port=taken_port)
    with pytest.raises(PortUnavailableError, match="--assistant-port"):
        start_in_thread(config)


def test_start_in_thread_requires_explicit_ports(root: Path) -> None:
    """Port 0 is refused: the origins must be known before the servers start."""
    with pytest.raises(ValueError, match="explicit"):
        start_in_thread(ServerConfig(root=root, page_port=0, assistant_port=free_port()))


@pytest.mark.parametrize(
    ("signum", "stalled"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
)
def test_demo_stops_cleanly_on_signal(root: Path, signum: signal.Signals, stalled: bool) -> None:
    """Ctrl-C or SIGTERM stops both servers with exit code 0 and no traceback; a request
    whose body is still arriving is ended after GRACEFUL_SECONDS, in one line, rather
    than waited for until its body's own timeout."""
    page_port, assistant_port = free_port(), free_port()
    with pagecontext_running(*_demo_args(root, page_port, assistant_port)) as process:
        assert first_line(process) == (
            f"pagecontext demo: page http://127.0.0.1:{page_port}/  "
            f"assistant http://localhost:{assistant_port}/  (Ctrl-C to stop)\n"
        )
        # The checkout it serves, web/examples/ included (`--root`, else the package's).
        assert process.stdout is not None
        assert process.stdout.readline() == f"serving {root}\n"
        assert httpx.get(f"http://127.0.0.1:{page_port}/", timeout=5).status_code == 200
        with contextlib.ExitStack() as stack:
            if stalled:
                client = stack.enter_context(socket.create_connection(("127.0.0.1", page_port)))
                client.sendall(
                    f"POST /api/actions/flag HTTP/1.1\r\nHost: 127.0.0.1:{page_port}\r\n"
                    "Authorization: Bearer pc-demo-token-ana\r\nExpect: 100-continue\r\n"
                    "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n".encode()
                )
                # The server asks for the body once the endpoint reads it: the request
                # is under way, and stays so with one byte of its 100.
                client.settimeout(10)
                assert client.recv(64).startswith(b"HTTP/1.1 100 Continue")
                client.sendall(b"{")
            code, err = stopped(process, signum)
    assert code == 0
    assert "Traceback" not in err
    assert ("Cancel 1 running task(s)" in err) is stalled, err


def _served_config(root: Path, extra: list[str]) -> tuple[int, ServerConfig | None]:
    """What `pagecontext demo --root ROOT EXTRA...` would serve: (0, its config), or
    (the usage error's exit code, None)."""
    config = demo_config(["--root", str(root), *extra])
    return (config, None) if isinstance(config, int) else (0, config)


def test_agent_url_comes_from_the_flag_then_the_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--agent-url wins over $PAGECONTEXT_AGENT_URL; with neither, the built-in /agent."""
    monkeypatch.delenv("PAGECONTEXT_AGENT_URL", raising=False)
    builtin = _served_config(root, [])[1]
    assert builtin is not None
    assert builtin.assistant_agent_url == "/agent"
    monkeypatch.setenv("PAGECONTEXT_AGENT_URL", "http://127.0.0.1:9000/run")
    env = _served_config(root, [])[1]
    assert env is not None
    assert env.agent_url == "http://127.0.0.1:9000/run"
    flag = _served_config(root, ["--agent-url", "https://agents.test/a"])[1]
    assert flag is not None
    assert flag.agent_url == "https://agents.test/a"


def test_a_bad_agent_url_is_a_usage_error(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A URL that is neither http(s) nor a path is refused, from the flag or the environment."""
    with pytest.raises(SystemExit) as caught:
        main(["demo", "--root", str(root), "--agent-url", "javascript:alert(1)"])
    assert caught.value.code == 2
    monkeypatch.setenv("PAGECONTEXT_AGENT_URL", "ftp://x")
    assert _served_config(root, []) == (2, None)
    assert "PAGECONTEXT_AGENT_URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    "url",
    [
        "//evil.example/agent",
        "/\\evil.example/agent",
        "http://",
        "https:///run",
        "http://agents.example/run",  # another machine, in clear text
        "https://agent.example.com:99999/run",  # no such port
        "https://agent.example.com:abc/run",
        "https://agent.example.com:0/run",
        "https://agent.example.com/run\x00",  # a control character
    ],
)
def test_an_agent_url_without_a_host_is_refused(root: Path, url: str) -> None:
    """ "//host/x" and "/\\host/x" are another host to a browser, not a path on the
    assistant origin; an http(s) URL names its host and a port that exists, and plain
    http only this machine's; no control character is written into a page."""
    with pytest.raises(SystemExit) as caught:
        main(["demo", "--root", str(root), "--agent-url", url])
    assert caught.value.code == 2


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[::1]:9000/agent", "an IPv6 address names no origin the assistant's policy"),
        ("https://[2001:db8::1]/agent", "an IPv6 address names no origin the assistant's policy"),
        ("https://agent.example.com:/run", "':' is followed by no port"),
    ],
)
def test_an_agent_url_the_assistants_policy_cannot_name_is_refused(
    root: Path, capsys: pytest.CaptureFixture[str], url: str, said: str
) -> None:
    """The assistant's connect-src lists the agent's origin: one its source expressions
    cannot name (an IPv6 address, a ':' with no port) would have every request refused,
    so it is refused here, in one line."""
    with pytest.raises(SystemExit) as caught:
        main(["demo", "--root", str(root), "--agent-url", url])
    assert caught.value.code == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize(
    "url",
    [
        "https://svc:S3CRET@agent.example.com/agent",
        "https://svc@agent.example.com/agent",
        "http://:S3CRET@127.0.0.1:9000/run",
    ],
)
def test_an_agent_url_with_a_user_or_password_is_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    """The agent URL is written into the assistant's page, which anyone may read, and a
    browser refuses to fetch a URL with credentials in it: `demo` and `build` refuse it."""
    started: list[object] = []
    monkeypatch.setattr("pagecontext.server.run.serve", started.append)
    monkeypatch.setattr("pagecontext.server.bundle.build_bundle", lambda *a, **k: started.append(a))
    for command in (["demo", "--root", str(root)], ["build", str(root / "out")]):
        with pytest.raises(SystemExit) as caught:
            main([*command, "--agent-url", url])
        assert caught.value.code == 2
        err = capsys.readouterr().err
        assert "the agent URL must name no user or password" in err
    assert started == []


@pytest.mark.parametrize(
    "command",
    [["demo"], ["assemble", "--out", "site", "--wheels", "wheels"], ["build", "out"]],
    ids=["demo", "assemble", "build"],
)
def test_a_root_that_is_not_the_repository_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """`--root` naming a folder that does not exist, or is not the repository: each
    command says so and how to mend it, not a missing npm package found on the way."""
    missing = tmp_path / "nonexistent"
    assert main([*command, "--root", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"pagecontext: no index.html in {missing} (use --root to point at the repository)\n"
    )


def test_the_two_origins_need_two_host_names(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An assistant host the same as the page's is refused: the two must differ."""
    args = [*_demo_args(root, free_port(), free_port()), "--host", "localhost"]
    assert main(args) == 2
    assert "--assistant-host must differ from --host" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--host", "no-such-host.invalid", "cannot resolve --host 'no-such-host.invalid'"),
        ("--host", "0.0.0.0", "--host '0.0.0.0' is 0.0.0.0, not this machine's loopback"),
        ("--db", "/etc/passwd/demo.db", "cannot use the database /etc/passwd/demo.db"),
        (
            "--assistant-host",
            "192.0.2.1",
            "--assistant-host '192.0.2.1' is 192.0.2.1, not this machine's loopback",
        ),
        (
            "--assistant-host",
            "no-such-host.invalid",
            "cannot resolve --assistant-host 'no-such-host.invalid'",
        ),
        # localhost is 127.0.0.1 to a browser, where nothing listens: the servers do on
        # 127.0.0.2.
        (
            "--host",
            "127.0.0.2",
            "--assistant-host 'localhost' is 127.0.0.1, ::1, where the servers do not "
            "listen: they listen on 127.0.0.2 (--host '127.0.0.2')",
        ),
    ],
)
def test_a_host_or_database_that_cannot_be_used_is_one_line(
    root: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, said: str
) -> None:
    """Not a port "already in use", not a traceback: one line naming the option."""
    args = _demo_args(root, free_port(), free_port())
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert said in err


@pytest.mark.parametrize(
    ("host", "assistant_host"),
    [("127.0.0.1", "localhost"), ("localhost", "127.0.0.1"), ("127.0.0.1", "panel.localhost")],
)
def test_an_assistant_host_the_browser_reaches_where_the_servers_listen_is_taken(
    root: Path, host: str, assistant_host: str
) -> None:
    """A browser resolves `localhost` and `*.localhost` to the loopback itself, and the
    servers listen on --host's IPv4 address: each pair here reaches both servers."""
    config = ServerConfig(
        root=root,
        page_host=host,
        bind_host=host,
        page_port=free_port(),
        assistant_host=assistant_host,
        assistant_port=free_port(),
    )
    assert port_problem(config) is None


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--host", "::1", "--host '::1': an IPv6 address names no origin here"),
        ("--assistant-host", "", "--assistant-host '': not a host name of an exact origin"),
        ("--assistant-host", "assistant_host", "'assistant_host': not a host name"),
        ("--host", "-page", "--host '-page': not a host name of an exact origin"),
        ("--host", "127.1", "--host '127.1': an IPv4 address written as a browser writes it"),
        ("--host", "0x7f.0.0.1", "'0x7f.0.0.1': an IPv4 address written as a browser"),
        ("--host", "2130706433", "'2130706433': an IPv4 address written as a browser"),
        ("--host", "01.02.03.04", "'01.02.03.04': an IPv4 address written as a browser"),
        ("--assistant-host", "foo..bar", "'foo..bar': not a host name of an exact origin"),
    ],
)
def test_a_host_that_makes_no_exact_origin_is_refused_in_one_line(
    root: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    value: str,
    said: str,
) -> None:
    """The origins are compared exactly, by the browser and by the server: a host that
    makes none is refused before anything starts."""
    code, served = _served_config(root, [f"{option}={value}"])
    assert (code, served) == (2, None)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert said in err


def test_host_names_are_taken_in_lower_case(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Browsers send an origin's host in lower case: `Localhost` serves
    http://localhost:8001, whose requests it then accepts; `LOCALHOST` and `localhost`
    are one host name, which the two origins cannot share."""
    code, served = _served_config(root, ["--host", "127.0.0.1", "--assistant-host", "Localhost"])
    assert code == 0
    assert served is not None
    assert (served.assistant_host, served.assistant_origin) == (
        "localhost",
        "http://localhost:8001",
    )
    with assistant_client(served) as client:
        response = client.post("/agent", content=b"{}", headers={"Origin": "http://localhost:8001"})
    assert response.status_code == 200
    same, _ = _served_config(root, ["--host", "LOCALHOST", "--assistant-host", "localhost"])
    assert same == 2
    assert "--assistant-host must differ from --host" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("table", "said"),
    [
        (
            "sales (id INTEGER PRIMARY KEY, customer TEXT, amount REAL)",
            "table sales has no column ref, region, month, units_sold, revenue_eur"
            " (it has id, customer, amount)",
        ),
        (
            "notes (id INTEGER PRIMARY KEY, body TEXT)",
            "it holds tables of another application (notes) and none of the demo's:"
            " name a new file",
        ),
    ],
)
def test_a_database_of_another_shape_is_refused_untouched(
    root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    said: str,
) -> None:
    """--db naming another application's database, whose `sales` table is not the
    demo's, or which holds tables and none named as the demo's: one line saying so, exit
    2, and the database as it was (no table added, nothing changed)."""

    async def no_serving(*_args: object) -> int:
        # Were the database taken, the servers would end at once instead of serving.
        return 0

    monkeypatch.setattr("pagecontext.server.run._Servers.run", no_serving)
    db = root / "dash.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE " + table)
    connection.close()
    before = db.read_bytes()
    args = _demo_args(root, free_port(), free_port())
    args[args.index("--db") + 1] = str(db)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"cannot use the database {db}: {said}" in err
    assert db.read_bytes() == before


def test_an_unknown_demo_user_is_a_usage_error(root: Path) -> None:
    """An unknown demo user is a usage error, and the config refuses it too."""
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--root", str(root), "--user", "eve"])
    assert exited.value.code == 2
    with pytest.raises(ValueError, match="unknown demo user 'eve'"):
        ServerConfig(root=root, demo_user="eve")


def test_the_assistant_page_carries_the_demo_users_authorization(root: Path) -> None:
    """The assistant page carries the chosen demo user's authorization."""
    (root / "web").mkdir(exist_ok=True)
    (root / "web" / "assistant.html").write_text('{"authorization": "{{AUTHORIZATION}}"}')
    with assistant_client(ServerConfig(root=root, demo_user="ben")) as client:
        text = client.get("/assistant.html").text
    assert text == '{"authorization": "Bearer pc-demo-token-ben"}'


# A build whose first step is ended by SIGTERM (as `timeout` or a cancelled CI job sends
# it), after the new folder beside OUTDIR was made.
_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    import pagecontext.server.bundle as bundle
    from pagecontext.cli import main

    def terminated(root, folder, *_args, **_kwargs):
        (folder / "partial").write_text("half a bundle")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)

    bundle.assemble_into = terminated
    sys.exit(main(["build", sys.argv[1], "--root", sys.argv[2]]))
    """
)


def test_sigterm_during_a_build_removes_what_it_wrote_and_exits_143(tmp_path: Path) -> None:
    out = tmp_path / "work" / "dist"
    out.parent.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(out), str(REPOSITORY)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPOSITORY / "pysrc"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 143, done.stderr
    assert done.stderr == "pagecontext: terminated\n"
    # No `.dist-new-*` folder left beside OUTDIR.
    assert list(out.parent.iterdir()) == []


def test_build_steps_go_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def first_step_then_fail(_root: Path, _folder: Path, _wheels: Path, step: object) -> None:
        assert callable(step)
        step("the runtimes and the wheels")
        raise SiteError("stopped here")

    monkeypatch.setattr("pagecontext.server.bundle.assemble_into", first_step_then_fail)
    assert main(["build", str(tmp_path / "dist"), "--root", str(REPOSITORY)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "pagecontext: the runtimes and the wheels...",
        "pagecontext: cannot build the bundle: stopped here",
    ]


def _output(folder: Path, *files: str) -> Path:
    for name in (OUTPUT_MARK, *files):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}")
    return folder


def _listing(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.mark.parametrize(
    ("command", "earlier", "said"),
    [
        (
            "build",
            ("py/runtime.json", "wheels/x.whl"),
            "holds the site `pagecontext assemble` wrote",
        ),
        ("assemble", ("manifest.json", "CNAME"), "holds a bundle `pagecontext build` wrote"),
        # The same kind: past the check, as far as the wheels.
        ("build", ("manifest.json",), "no wheel in"),
    ],
)
def test_an_output_is_replaced_only_by_the_command_that_wrote_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    earlier: tuple[str, ...],
    said: str,
) -> None:
    """`build` never replaces the demo's site, nor `assemble` a bundle (both carry the
    output mark: either would be gone, whole, after a slip in OUTDIR); each still
    replaces its own. The output is left as it was."""
    out = _output(tmp_path / "out", *earlier)
    before = _listing(out)
    # No wheels: a command that got past the check fails on them instead.
    (tmp_path / "no-wheels").mkdir()
    args = ["build", str(out)] if command == "build" else ["assemble", "--out", str(out)]
    assert main([*args, "--wheels", str(tmp_path / "no-wheels"), "--root", str(REPOSITORY)]) == 1
    assert said in capsys.readouterr().err.splitlines()[-1]
    assert _listing(out) == before


def test_a_websocket_any_page_can_open_writes_nothing_into_the_terminal(root: Path) -> None:
    """Any web page can have its visitor's browser try a WebSocket to either origin (no
    preflight, no CORS): the request is answered as the HTTP request it is, and writes
    nothing into the demo's terminal (uvicorn warns twice for each, advising to install a
    WebSocket library the demo has no use for)."""
    page_port, assistant_port = free_port(), free_port()
    with pagecontext_running(*_demo_args(root, page_port, assistant_port)) as process:
        assert first_line(process).startswith("pagecontext demo: ")
        for host, port in (("127.0.0.1", page_port), ("localhost", assistant_port)):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
                client.sendall(
                    f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    "Origin: https://elsewhere.example\r\nConnection: Upgrade\r\n"
                    "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode()
                )
                assert client.recv(64).startswith(b"HTTP/1.1 ")
        code, err = stopped(process, signal.SIGTERM)
    assert (code, err) == (0, "")
