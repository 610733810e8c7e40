"""`pagecontext serve`: a built bundle served on this machine as a static host serves it,
with the headers its `_headers` lists, and nothing of the demo server."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import brotli
import httpx2 as httpx
import pytest
from starlette.testclient import TestClient

from commands import first_line, pagecontext_running, stopped
from pagecontext.cli import main
from pagecontext.server.app import IMMUTABLE, NO_CACHE
from pagecontext.server.bundle import NOT_FOUND_PAGE, headers_file
from pagecontext.server.hosting import (
    BundleError,
    HeaderRule,
    bundle_app,
    bundle_origins,
    read_headers,
)
from pagecontext.server.run import free_port

PAGE_POLICY = "script-src 'self'; frame-src http://localhost:8001"
ASSISTANT_POLICY = "script-src 'self'; frame-ancestors http://127.0.0.1:8000"
SCRIPTS_POLICY = "script-src 'self' 'wasm-unsafe-eval'"
BOOT = b"export const boot = 1;\n" * 50


def write_bundle(folder: Path, page: str, assistant: str) -> Path:
    """A bundle's shape, as `pagecontext build` writes it, with small files."""
    (folder / "web").mkdir(parents=True)
    (folder / "index.html").write_text("<p>the page</p>")
    (folder / "assistant.html").write_text("<p>the assistant</p>")
    (folder / "web" / "boot-0123.mjs").write_bytes(BOOT)
    (folder / "web" / "boot-0123.mjs.br").write_bytes(brotli.compress(BOOT))
    (folder / "404.html").write_text(NOT_FOUND_PAGE)
    (folder / ".pagecontext-output").write_text("the build's marker")
    policies = {"/": PAGE_POLICY, "/index.html": PAGE_POLICY, "/assistant.html": ASSISTANT_POLICY}
    (folder / "_headers").write_text(headers_file(policies, SCRIPTS_POLICY))
    origins = {"page": page, "assistant": assistant}
    (folder / "manifest.json").write_text(json.dumps({"origins": origins}))
    return folder


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_bundle(tmp_path / "dist", "http://127.0.0.1:8000", "http://localhost:8001")


@pytest.fixture
def client(bundle: Path) -> TestClient:
    return TestClient(bundle_app(bundle), base_url="http://127.0.0.1:8000")


def test_each_page_is_sent_the_policy_its_rule_names(client: TestClient) -> None:
    """`/` is index.html, a page is served at its name and at its pretty URL, each with
    the headers of every rule the file it serves matches, nosniff included: a page asked
    for with a trailing slash, or by a path that climbs back to it, is sent its own
    policy, never none or the scripts' (which names no `frame-ancestors`)."""
    for path, text, policy in (
        ("/", "the page", PAGE_POLICY),
        ("/index.html", "the page", PAGE_POLICY),
        ("/assistant.html", "the assistant", ASSISTANT_POLICY),
        ("/assistant", "the assistant", ASSISTANT_POLICY),
        ("/assistant/", "the assistant", ASSISTANT_POLICY),
        ("/assistant.html/", "the assistant", ASSISTANT_POLICY),
        ("/index.html/", "the page", PAGE_POLICY),
        ("/web/..%2fassistant.html", "the assistant", ASSISTANT_POLICY),
        ("/web/%2e%2e/assistant.html", "the assistant", ASSISTANT_POLICY),
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert text in response.text, path
        assert response.headers["content-type"].startswith("text/html"), path
        assert response.headers["content-security-policy"] == policy, path
        assert response.headers["cache-control"] == NO_CACHE, path
        assert response.headers["x-content-type-options"] == "nosniff", path


def test_a_script_goes_as_javascript_with_the_workers_policy_in_brotli_when_taken(
    client: TestClient,
) -> None:
    """A versioned script: text/javascript, the scripts' policy, cached for good; its
    brotli variant to a browser that takes br (decoded, the same bytes), the file itself
    to one that does not."""
    taken = client.get("/web/boot-0123.mjs", headers={"Accept-Encoding": "gzip, br"})
    plain = client.get("/web/boot-0123.mjs", headers={"Accept-Encoding": "identity"})
    for response in (taken, plain):
        assert response.status_code == 200
        assert response.content == BOOT
        assert response.headers["content-type"].startswith("text/javascript")
        assert response.headers["content-security-policy"] == SCRIPTS_POLICY
        assert response.headers["cache-control"] == IMMUTABLE
    assert taken.headers["content-encoding"] == "br"
    assert taken.headers["vary"] == "Accept-Encoding"
    assert "content-encoding" not in plain.headers


def test_what_the_bundle_does_not_hold_or_keeps_to_itself_is_not_found(
    bundle: Path, client: TestClient, tmp_path: Path
) -> None:
    """A missing file is 404.html with 404, never the page with 200; the rules file, the
    output's hidden marker (or a link in the folder to either), a path climbing out and a
    link pointing out are not served; nothing but GET and HEAD is answered. Each answer
    forbids MIME sniffing."""
    outside = tmp_path / "secret.txt"
    outside.write_text("not the bundle's")
    (bundle / "web" / "linked.txt").symlink_to(outside)
    (bundle / "web" / "rules.txt").symlink_to(bundle / "_headers")
    (bundle / "web" / "marker.txt").symlink_to(bundle / ".pagecontext-output")
    for path in (
        "/web/gone-4567.mjs",
        "/_headers",
        "/.pagecontext-output",
        "/web/linked.txt",
        "/web/rules.txt",
        "/web/marker.txt",
        "/web/..%2f..%2fsecret.txt",
        "/../secret.txt",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.text == NOT_FOUND_PAGE, path
        assert response.headers["x-content-type-options"] == "nosniff", path
    for path in ("/", "/web/boot-0123.mjs"):
        refused = client.post(path, content=b"x", headers={"Accept-Encoding": "br"})
        assert refused.status_code == 405, path
        assert refused.headers["x-content-type-options"] == "nosniff", path


def test_the_rules_read_back_as_the_build_writes_them() -> None:
    """`read_headers` reads the build's `_headers` into its rules, in order, with blank
    lines and comments anywhere; a rule matches its path exactly, or by the prefix
    before its `*`."""
    text = "# the bundle's\n\n" + headers_file({"/index.html": PAGE_POLICY}, SCRIPTS_POLICY)
    rules = read_headers(text)
    assert rules[0] == HeaderRule("/*", (("X-Content-Type-Options", "nosniff"),))
    assert rules[1] == HeaderRule(
        "/index.html", (("Content-Security-Policy", PAGE_POLICY), ("Cache-Control", NO_CACHE))
    )
    assert [rule.pattern for rule in rules][-4:] == ["/web/*", "/py/*", "/vendor/*", "/wheels/*"]
    web = rules[-4]
    assert web.matches("/web/boot-0123.mjs")
    assert not web.matches("/webby.html")
    assert not rules[1].matches("/index.html/")


def test_a_header_two_rules_name_is_sent_once_with_both_values(tmp_path: Path) -> None:
    """Two rules that match one path and name the same header: it is sent once, their
    values joined by a comma in the file's order, as Netlify and Cloudflare Pages do."""
    folder = write_bundle(tmp_path / "dist", "http://127.0.0.1:8000", "http://localhost:8001")
    with (folder / "_headers").open("a") as rules:
        rules.write("/web/*\n  X-Robots-Tag: noindex\n/web/boot-*\n  x-robots-tag: nofollow\n")
    client = TestClient(bundle_app(folder), base_url="http://127.0.0.1:8000")
    response = client.get("/web/boot-0123.mjs")
    assert response.headers.get_list("x-robots-tag") == ["noindex, nofollow"]
    assert response.headers["content-security-policy"] == SCRIPTS_POLICY


def test_a_rule_added_while_serving_applies_to_the_next_request(
    bundle: Path, client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A page of one's own and its rule, added while `serve` runs: the next request gets
    the rule's headers, as it would after a deploy. A page no rule gives a policy is
    served, and said once in the log."""
    (bundle / "orders.html").write_text("<p>my page</p>")
    with caplog.at_level("WARNING", logger="pagecontext.server.hosting"):
        for _ in range(2):
            response = client.get("/orders.html")
            assert response.status_code == 200
            assert "content-security-policy" not in response.headers
    said = [r.getMessage() for r in caplog.records if "orders.html" in r.getMessage()]
    assert said == [
        "pagecontext serve: /orders.html is served with no Content-Security-Policy: no rule of"
        ' _headers gives it one (docs/deploy.md, "Your own pages")'
    ]
    with (bundle / "_headers").open("a") as rules:
        rules.write(f"/orders.html\n  Content-Security-Policy: {PAGE_POLICY}\n")
    assert client.get("/orders.html").headers["content-security-policy"] == PAGE_POLICY
    # The build's own pages are given theirs: nothing said of them.
    assert client.get("/").headers["content-security-policy"] == PAGE_POLICY
    assert [r for r in caplog.records if "index.html" in r.getMessage()] == []


def test_a_rules_file_edited_into_another_shape_answers_500_saying_why(
    bundle: Path, client: TestClient
) -> None:
    """`_headers` edited into something that is no rules file: every request is answered
    500 with why, not served with rules the file no longer holds; mended, it serves."""
    rules = bundle / "_headers"
    good = rules.read_text()
    rules.write_text(good + "orders.html\n  X-A: 1\n")
    response = client.get("/")
    assert response.status_code == 500
    assert "a rule's path must start with /" in response.text
    assert "content-security-policy" not in response.headers
    rules.write_text(good + "/orders.html\n  X-A: 1\n")
    assert client.get("/").headers["content-security-policy"] == PAGE_POLICY


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  X-A: 1\n", "line 1: not a header of a rule"),
        ("/x\n  no colon here\n", "line 2: not a header of a rule"),
        ("/x\n  : empty name\n", "line 2: not a header of a rule"),
        ("x.html\n  X-A: 1\n", "line 1: a rule's path must start with /"),
    ],
)
def test_a_rules_file_of_another_shape_is_refused_naming_its_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_headers(text)


def test_only_a_bundle_built_for_this_machine_is_served(tmp_path: Path) -> None:
    """The origins come from the bundle's manifest.json: none named, or origins on
    another machine, each says why and what to do (none there:
    `test_serve_refuses_a_folder_that_is_no_bundle_in_one_line`)."""
    (tmp_path / "manifest.json").write_text(json.dumps({"boot": {}}))
    with pytest.raises(BundleError, match="names no origins"):
        bundle_origins(tmp_path)
    deployed = write_bundle(
        tmp_path / "deployed", "https://sales.example.com", "https://assistant.example.com"
    )
    with pytest.raises(BundleError, match=r"was built for https://sales\.example\.com and"):
        bundle_origins(deployed)
    (deployed / "_headers").write_text("index.html\n")
    with pytest.raises(BundleError, match="_headers: line 1"):
        bundle_app(deployed)


@pytest.mark.parametrize(
    ("held", "said"),
    [
        ((), "holds no bundle (no manifest.json)"),
        (("py/runtime.json",), "holds the site `pagecontext assemble` wrote"),
    ],
)
def test_serve_refuses_a_folder_that_is_no_bundle_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], held: tuple[str, ...], said: str
) -> None:
    """A folder without a bundle, or with the demo server's site: one line saying what
    it holds and how a bundle is written (`build` refuses the site: it is no bundle)."""
    for name in held:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    assert main(["serve", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pagecontext: ")
    assert err.count("\n") == 1
    assert said in err
    assert "`pagecontext build NEWDIR` writes a bundle into a new or empty folder" in err


def test_serve_on_a_port_in_use_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A port of the bundle's origins already taken (another `serve`, the demo): exit 2,
    one line naming the port and what to do, since `serve` takes no port of its own."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        folder = write_bundle(
            tmp_path / "dist", f"http://127.0.0.1:{port}", f"http://localhost:{free_port()}"
        )
        assert main(["serve", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"pagecontext: cannot listen on 127.0.0.1 port {port}: already in use")
    assert "build the bundle for other origins" in err


def test_serve_answers_on_both_origins_and_stops_cleanly(tmp_path: Path) -> None:
    """`pagecontext serve DIR` listens on both ports of the origins DIR was built for,
    says so in one line, serves each page there with its policy, and stops on SIGTERM
    with exit code 0."""
    page_port, assistant_port = free_port(), free_port()
    page, assistant = f"http://127.0.0.1:{page_port}", f"http://localhost:{assistant_port}"
    folder = write_bundle(tmp_path / "dist", page, assistant)
    with pagecontext_running("serve", str(folder)) as process:
        assert first_line(process) == (
            f"pagecontext serve: {folder}: page {page}/  assistant {assistant}/  (Ctrl-C to stop)\n"
        )
        served = httpx.get(f"http://127.0.0.1:{page_port}/", timeout=5)
        assert served.headers["content-security-policy"] == PAGE_POLICY
        served = httpx.get(f"http://127.0.0.1:{assistant_port}/assistant", timeout=5)
        assert served.headers["content-security-policy"] == ASSISTANT_POLICY
        code, err = stopped(process, signal.SIGTERM)
    assert code == 0
    assert "Traceback" not in err
