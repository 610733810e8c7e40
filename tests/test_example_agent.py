"""The docs' example of an external agent (`e2e/agents.py`, `ExternalAgent`) refuses a
run that a page of another origin, or a sandboxed (opaque-origin) panel, makes a browser
send: CORS keeps such a page from reading the answer, not the agent from running."""

from __future__ import annotations

import json

import pytest
from e2e.agents import ExternalAgent
from starlette.testclient import TestClient

ASSISTANT = "http://localhost:8001"
RUN = {
    "threadId": "t",
    "runId": "r",
    "state": {},
    "messages": [{"id": "m", "role": "user", "content": "Why?"}],
    "tools": [],
    "context": [],
    "forwardedProps": {},
}


@pytest.mark.parametrize("origin", ["https://evil.example", "null"])
def test_a_run_posted_from_another_origin_is_refused_unread(origin: str) -> None:
    agent = ExternalAgent(ASSISTANT)
    client = TestClient(agent.app())
    # A "simple" request: no preflight, so the browser sends it whatever the CORS answer.
    answer = client.post(
        "/agent",
        content=json.dumps(RUN),
        headers={"Origin": origin, "Content-Type": "text/plain;charset=UTF-8"},
    )
    assert answer.status_code == 403
    assert answer.json() == {"error": "forbidden", "reason": "foreign-origin"}
    assert agent.inputs == []


@pytest.mark.parametrize("origin", [ASSISTANT, None])
def test_the_assistant_origin_and_a_client_without_origin_are_answered(
    origin: str | None,
) -> None:
    agent = ExternalAgent(ASSISTANT)
    client = TestClient(agent.app())
    headers = {"Content-Type": "application/json"} | ({"Origin": origin} if origin else {})
    answer = client.post("/agent", content=json.dumps(RUN), headers=headers)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert len(agent.inputs) == 1
