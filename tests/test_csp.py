"""The demo's Content-Security-Policy (server/csp.py): the policies, and which responses
carry them."""

from __future__ import annotations

from pathlib import Path

import pytest

from clients import assistant_client, page_client
from pagecontext.server.app import ServerConfig
from pagecontext.server.csp import (
    TRUSTED_TYPES,
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


def test_an_international_agent_name_is_sent_in_ascii(tmp_path: Path) -> None:
    """A header is Latin-1: the agent's international host name goes into the policy as
    its IDNA form (which the browser fetches), and the pages are served."""
    config = ServerConfig(root=_root(tmp_path), agent_url="https://агент.example/agent")
    with assistant_client(config) as assistant:
        response = assistant.get("/assistant.html")
    assert response.status_code == 200
    assert "https://xn--80agg6aza.example;" in response.headers["content-security-policy"]


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
