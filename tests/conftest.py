"""Hypothesis profiles for the unit tests, and the two demo origins in process.

`ci` is in force by default: 2,000 examples for every property that does not set its own
`max_examples`, no deadline (CI machines are slow and shared). `PAGECONTEXT_FUZZ=1`
loads `fuzz`, the same with 50,000 examples, for a long run by hand or on a schedule.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from starlette.testclient import TestClient

from clients import assistant_client, page_client
from pagecontext.server.agent_endpoint import HttpResourceReader
from pagecontext.server.app import ServerConfig, create_assistant_app, create_page_app
from pagecontext.testing import FakeClock, counter_ids

# A loopback client address: the admin API answers only loopback clients.
LOOPBACK = ("127.0.0.1", 50000)

settings.register_profile(
    "ci",
    max_examples=2000,
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("fuzz", settings.get_profile("ci"), max_examples=50_000)
settings.load_profile("fuzz" if os.environ.get("PAGECONTEXT_FUZZ") == "1" else "ci")


class _PageAppReader(HttpResourceReader):
    """The HTTP reader, with its requests sent to the page app in process."""

    def __init__(self, page: TestClient) -> None:
        super().__init__("http://testserver")
        self._page = page

    def _get(self, path: str, authorization: str) -> tuple[int, dict[str, object]]:
        response = self._page.get(
            f"/api/resources/{path}", headers={"Authorization": authorization}
        )
        return response.status_code, response.json()


@pytest.fixture
def demo_config(tmp_path: Path) -> ServerConfig:
    """A server config over an empty site in `tmp_path`; the demo database is made at
    startup, at `config.db_path`."""
    (tmp_path / "index.html").write_text("<!doctype html>")
    (tmp_path / "web").mkdir()
    return ServerConfig(root=tmp_path)


@pytest.fixture
def origins(demo_config: ServerConfig) -> Iterator[tuple[TestClient, TestClient]]:
    """(page, assistant) clients: the agent reads rows from the page app."""
    config = demo_config
    page_app = create_page_app(config, clock=FakeClock(), token_factory=counter_ids("tok"))
    with page_client(config, page_app, client=LOOPBACK) as page:
        assistant_app = create_assistant_app(config, resource_reader=_PageAppReader(page))
        with assistant_client(config, assistant_app) as assistant:
            yield page, assistant
