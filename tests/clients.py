"""Test clients of the two origins' apps, each addressed by its own host name: the apps
refuse a request for any other host (a DNS-rebinding page's)."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient
from starlette.types import ASGIApp

from pagecontext.server.app import ServerConfig, create_assistant_app, create_page_app


def page_client(config: ServerConfig, app: ASGIApp | None = None, **options: Any) -> TestClient:
    """A client of the page origin's app (`app`, or one made from `config`)."""
    served = app if app is not None else create_page_app(config)
    return TestClient(served, base_url=config.page_origin, **options)


def assistant_client(
    config: ServerConfig, app: ASGIApp | None = None, **options: Any
) -> TestClient:
    """A client of the assistant origin's app (`app`, or one made from `config`)."""
    served = app if app is not None else create_assistant_app(config)
    return TestClient(served, base_url=config.assistant_origin, **options)
