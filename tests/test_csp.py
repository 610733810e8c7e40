"""The demo's Content-Security-Policy (server/csp.py): the policies, and which responses
carry them."""

from __future__ import annotations

from pathlib import Path

from clients import assistant_client, page_client
from pagecontext.server.app import ServerConfig
from pagecontext.server.csp import TRUSTED_TYPES, WORKER_POLICY, assistant_policy, page_policy

PAGE = "http://127.0.0.1:8000"
ASSISTANT = "http://localhost:8001"


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
    workers come from 'self', wasm may compile, nothing else is allowed; both documents
    enforce Trusted Types and allow one policy name, pagecontext's."""
    assert TRUSTED_TYPES == "require-trusted-types-for 'script'; trusted-types pagecontext"
    assert page_policy(ASSISTANT) == (
        "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; "
        f"frame-src {ASSISTANT}; frame-ancestors {ASSISTANT}; object-src 'none'; base-uri 'none'; "
        f"{TRUSTED_TYPES}"
    )
    assert assistant_policy(PAGE) == (
        "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; "
        f"frame-src {PAGE}; frame-ancestors {PAGE}; object-src 'none'; base-uri 'none'; "
        f"{TRUSTED_TYPES}"
    )
    assert assistant_policy(PAGE, sandboxed=True) == (
        "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' data:; "
        f"frame-src {PAGE}; frame-ancestors {PAGE}; object-src 'none'; base-uri 'none'; "
        f"{TRUSTED_TYPES}"
    )
    for policy in (page_policy(ASSISTANT), assistant_policy(PAGE), WORKER_POLICY):
        assert "unsafe-eval'" not in policy.replace("'wasm-unsafe-eval'", "")
        assert "blob:" not in policy
        assert "unsafe-inline" not in policy


def test_html_and_scripts_carry_the_policy_and_nothing_else_does(tmp_path: Path) -> None:
    """Each origin's pages get its policy, JavaScript the worker policy, JSON none."""
    config = ServerConfig(root=_root(tmp_path))
    with page_client(config) as page:
        assert page.get("/").headers["content-security-policy"] == page_policy(ASSISTANT)
        assert page.get("/web/worker.mjs").headers["content-security-policy"] == WORKER_POLICY
        assert "content-security-policy" not in page.get("/py/runtime.json").headers
    with assistant_client(config) as assistant:
        for path in ("/assistant.html", "/workbench.html"):
            sent = assistant.get(path).headers
            assert sent["content-security-policy"] == assistant_policy(PAGE), path
            assert "cross-origin-opener-policy" not in sent
            assert "cross-origin-embedder-policy" not in sent


def test_only_the_sandboxed_panel_allows_data_workers(tmp_path: Path) -> None:
    """With the panel sandboxed, its page alone adds data: workers."""
    config = ServerConfig(root=_root(tmp_path), sandboxed_panel=True)
    with assistant_client(config) as assistant:
        panel = assistant.get("/assistant.html").headers["content-security-policy"]
        workbench = assistant.get("/workbench.html").headers["content-security-policy"]
    assert panel == assistant_policy(PAGE, sandboxed=True)
    assert workbench == assistant_policy(PAGE)
