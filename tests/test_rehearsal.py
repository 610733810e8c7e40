"""The rehearsal a browser worker runs after its first binding (pagecontext.rehearsal):
it walks the whole path of a selection and a command, and its sessions are its own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from pagecontext.rehearsal import ROUNDS, rehearsal, rehearse_handshake
from pagecontext.session import Effect
from pagecontext.testing import ChannelPair, Side


def _kind(message: dict[str, object]) -> object:
    return message.get("type") or message.get("kind")


def test_each_round_commits_a_context_and_applies_show_me() -> None:
    """Every round shares a new revision, which the assistant commits and shows as its
    chip; its "Show me" is applied on the page and answered with applied receipts; the
    panel's log holds the command, and "What the AI sees" the context. Each round is four
    steps, one yield each."""
    steps = list(rehearsal())
    assert len(steps) == 4 * ROUNDS
    for index in range(ROUNDS):
        shared, committed, sent, answered = steps[4 * index : 4 * index + 4]
        revision = index + 1
        contexts = [m for m in shared if _kind(m) == "context"]
        assert [m["selectionRevision"] for m in contexts] == [revision]
        states = [m for m in committed if _kind(m) == "state"]
        chip = states[-1]["chip"]
        assert isinstance(chip, dict)
        assert chip["revision"] == revision
        assert chip["resourceRef"] == contexts[0]["selection"]["resourceRef"]  # type: ignore[index]
        assert f'"{chip["resourceRef"]}"' in str(states[-1]["preview"]), "composed, as if open"
        assert Counter(str(m["action"]) for m in sent if _kind(m) == "command") == {
            "highlight": 1,
            "locate": 1,
        }
        receipts = [m for m in answered if _kind(m) == "receipt"]
        assert {(m["layer"], m["status"]) for m in receipts} == {
            ("received", "applied"),
            ("ui", "applied"),
        }
        assert len(receipts) == 4
        logs = [m for m in answered if _kind(m) == "log"]
        assert len(logs) == 1
        assert logs[0]["changed"], "the command's entry is redrawn"


def _counted(
    receive: Callable[[str], list[Effect]], texts: list[str]
) -> Callable[[str], list[Effect]]:
    def counted(text: str) -> list[Effect]:
        texts.append(text)
        return receive(text)

    return counted


def test_a_text_link_delivers_what_a_data_link_does() -> None:
    """ChannelPair(as_text=True) hands each message to `on_port_json` as its JSON text,
    as the browser's workers do; the sessions end in the same state as over data."""
    ends = []
    for as_text in (False, True):
        pair = ChannelPair(as_text=as_text)
        texts: list[str] = []  # what reached the sessions as JSON text
        for session in (pair.page, pair.assistant):
            session.on_port_json = _counted(session.on_port_json, texts)  # type: ignore[method-assign]
        pair.render("orders", ["row:1", "row:2"], shareable=[("amount", "EUR")])
        pair.run("page", pair.page.on_select("orders", "row:2", {"amount": 1250}))
        pair.run("page", pair.page.share())
        pair.pump()
        pair.run("assistant", pair.assistant.show())
        pair.pump()
        state = pair.assistant.edge_message("state")
        ends.append((state["chip"], state["command"], pair.dom.highlights))
        # The context, two commands and four receipts: each as text, or none.
        assert len(texts) == (7 if as_text else 0)
    assert ends[0] == ends[1]
    chip, command, highlights = ends[1]
    assert isinstance(chip, dict)
    assert chip["resourceRef"] == "row:2"
    assert isinstance(command, dict)
    assert command["ui"]["state"] == "applied"  # type: ignore[index]
    assert highlights == {"orders": {"row:2": "focus"}}


@pytest.mark.parametrize("embedder", ["page", "assistant"])
def test_a_handshake_rehearsal_binds_sessions_of_its_own(embedder: Side) -> None:
    """`rehearse_handshake` binds a page and an assistant of its own, either one the
    embedder: the child's `connected` and the embedder's `bound`, and nothing else, on
    its in-memory link."""
    pair = rehearse_handshake(embedder)
    assert pair.page.binding is not None
    assert pair.assistant.binding is not None
    assert [(side, message["type"]) for side, message in pair.sent] == [
        ("page" if embedder == "assistant" else "assistant", "connected"),
        (embedder, "bound"),
    ]
