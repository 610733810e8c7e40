"""The demo's Content-Security-Policy (server/csp.py): the policies, and which responses
carry them."""

from __future__ import annotations

from pathlib import Path

import pytest

from clients import assistant_client, page_client
from pagecontext.server.app import ServerConfig
from pagecontext.server.csp import (
    TRUSTED_TYPES,
    agent_url_problem,
    assistant_policy,
    connect_src,
    origin_of,
    page_policy,
    worker_policy,
)

PAGE = "http://127.0.0.1:8000"
ASSISTANT = "http://localhost:8001"
AGENT = "https://agent.example"


def _root(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text("<!doctype html><p>page</p>")
    web = tmp_path / "web"
    web.mkdir()
    for name in ("assistant.html", "workbench.html", "panel.html"):
        (web / name).write_text("<!doctype html><p>assistant</p>")
    (web / "worker.mjs").write_text("export {};\n")
    site = tmp_path / "build" / "site" / "py"
    site.mkdir(parents=True)
    (site / "runtime.json").write_text("{}")
    return tmp_path


def test_the_policies_name_exact_origins_and_nothing_unsafe() -> None:
    """The page frames and is framed by the assistant only, and the reverse; scripts and
    workers come from 'self', wasm may compile, nothing else is allowed; the page
    connects to its own origin only, the assistant also to the page's and its agent's;
    both documents enforce Trusted Types and allow one policy name, pagecontext's."""
    assert TRUSTED_TYPES == "require-trusted-types-for 'script'; trusted-types pagecontext"
    assert page_policy(ASSISTANT) == (
        "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; "
        f"frame-src {ASSISTANT}; frame-ancestors {ASSISTANT}; connect-src 'self' data:; "
        f"object-src 'none'; base-uri 'none'; {TRUSTED_TYPES}"
    )
    assert assistant_policy(PAGE, ASSISTANT, "/agent") == (
        "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; "
        f"frame-src {PAGE}; frame-ancestors {PAGE}; connect-src 'self' data: {ASSISTANT} {PAGE}; "
        f"object-src 'none'; base-uri 'none'; {TRUSTED_TYPES}"
    )
    assert assistant_policy(PAGE, ASSISTANT, AGENT + "/run?x=1", sandboxed=True) == (
        "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' data:; "
        f"frame-src {PAGE}; frame-ancestors {PAGE}; "
        f"connect-src 'self' data: {ASSISTANT} {PAGE} {AGENT}; "
        f"object-src 'none'; base-uri 'none'; {TRUSTED_TYPES}"
    )
    assert worker_policy() == (
        "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; connect-src 'self' data:"
    )
    policies = (page_policy(ASSISTANT), assistant_policy(PAGE, ASSISTANT, ""), worker_policy())
    for policy in policies:
        assert "unsafe-eval'" not in policy.replace("'wasm-unsafe-eval'", "")
        assert "blob:" not in policy
        assert "unsafe-inline" not in policy
        assert "*" not in policy


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("/agent", ""),
        ("", ""),
        ("https://agent.example/run", "https://agent.example"),
        ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
        ("https://user:secret@agent.example:8443/x?y#z", "https://agent.example:8443"),
        ("data:text/plain,x", ""),
        ("https://Agent.EXAMPLE/run", "https://agent.example"),
        ("https://агент.example/agent", "https://xn--80agg6aza.example"),
        ("https://bücher.example:8443/", "https://xn--bcher-kva.example:8443"),
        ("https://agent.example:99999/", ""),
    ],
)
def test_an_agents_origin_is_its_urls_or_none(url: str, origin: str) -> None:
    """A path is the assistant's own origin (nothing to add); an absolute URL adds its
    origin, without credentials, path or query; anything else adds nothing."""
    assert origin_of(url) == origin
    assert connect_src(origin_of(url), PAGE, PAGE) == " ".join(
        ["connect-src 'self' data:", *([origin] if origin else []), PAGE]
    )


def test_html_and_scripts_carry_the_policy_and_nothing_else_does(tmp_path: Path) -> None:
    """Each origin's pages get its policy, JavaScript the worker policy, JSON none."""
    config = ServerConfig(root=_root(tmp_path))
    with page_client(config) as page:
        assert page.get("/").headers["content-security-policy"] == page_policy(ASSISTANT)
        assert page.get("/web/worker.mjs").headers["content-security-policy"] == worker_policy()
        assert "content-security-policy" not in page.get("/py/runtime.json").headers
    with assistant_client(config) as assistant:
        for path in ("/assistant.html", "/workbench.html"):
            sent = assistant.get(path).headers
            assert sent["content-security-policy"] == assistant_policy(PAGE, ASSISTANT, "/agent")
            assert "cross-origin-opener-policy" not in sent
            assert "cross-origin-embedder-policy" not in sent
        script = assistant.get("/web/worker.mjs").headers["content-security-policy"]
        assert script == worker_policy(ASSISTANT, PAGE)


def test_only_the_sandboxed_panel_allows_data_workers(tmp_path: Path) -> None:
    """With the panel sandboxed, its page alone adds data: workers."""
    config = ServerConfig(root=_root(tmp_path), sandboxed_panel=True)
    with assistant_client(config) as assistant:
        panel = assistant.get("/assistant.html").headers["content-security-policy"]
        workbench = assistant.get("/workbench.html").headers["content-security-policy"]
    assert panel == assistant_policy(PAGE, ASSISTANT, "/agent", sandboxed=True)
    assert workbench == assistant_policy(PAGE, ASSISTANT, "/agent")


@pytest.mark.parametrize(
    "url",
    [
        "https://агент.example/agent",  # written as the browser fetches it: xn--80agg6aza
        "https://faß.de/agent",  # IDNA 2003 and the browser's UTS 46 differ here
        "https://%61gent.example/agent",
        "https://evil.example\\.agent.example/agent",
        "https://127.1/agent",
        "https://0x7f000001/agent",
        "https://a..b.example/agent",
        "https://a;sandbox/agent",
        "https://svc:S3CRET@agent.example/agent",
        "http://[::1]:9000/agent",
        "https://agent.example:/agent",
    ],
)
def test_an_agent_url_the_policy_cannot_name_is_refused(tmp_path: Path, url: str) -> None:
    """The agent's origin goes into the assistant's policy, and its URL into the public
    page: a host not written as the browser writes it (which the policy would then name
    wrongly, or break), an IPv6 address, a ':' with no port, or credentials, is refused
    when the server is configured, never served as a broken policy."""
    assert agent_url_problem(url) is not None
    with pytest.raises(ValueError, match="agent"):
        ServerConfig(root=_root(tmp_path), agent_url=url)


def test_an_agent_url_on_a_default_port_or_with_upper_case_is_named_as_browsers_do() -> None:
    """An explicit default port, or upper case in the host, is fine: the policy names
    the origin as the browser fetches it."""
    for url in ("https://agent.example:443/run", "https://Agent.Example/run"):
        assert agent_url_problem(url) is None
    assert origin_of("https://Agent.Example/run") == "https://agent.example"


def test_the_assistant_connects_to_an_external_agents_origin(tmp_path: Path) -> None:
    """With `agent_url` elsewhere, the assistant's documents and scripts add its origin;
    the page's do not."""
    config = ServerConfig(root=_root(tmp_path), agent_url=AGENT + "/agui")
    with assistant_client(config) as assistant:
        sent = assistant.get("/assistant.html").headers["content-security-policy"]
        script = assistant.get("/web/worker.mjs").headers["content-security-policy"]
    assert f"connect-src 'self' data: {ASSISTANT} {PAGE} {AGENT};" in sent
    assert script == worker_policy(ASSISTANT, PAGE, AGENT)
    with page_client(config) as page:
        assert AGENT not in page.get("/").headers["content-security-policy"]
