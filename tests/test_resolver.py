"""Tests for pagecontext.resolver: the resolution order of PROTOCOL.md section 5."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagecontext.errors import LocalProtocolError
from pagecontext.models import dump_message
from pagecontext.resolver import CommandResolver, Resolution
from pagecontext.testing import FakeClock, FakeDom, counter_ids
from pagecontext.tracker import ComponentView, FieldSpec, SelectionTracker

VIEW = ComponentView("sales", {"region": ("EU",)}, 1)
OTHER_VIEW = ComponentView("sales", {"region": ("EU",)}, 2)


class Page:
    """A page core: tracker, fake DOM and resolver, bound to page-A / conv-1."""

    def __init__(self, *, history: int = 256, remembered: int = 1024) -> None:
        self.tracker = SelectionTracker(
            page_instance_id="page-A", clock=FakeClock(), history=history
        )
        self.tracker.declare_component("table", [FieldSpec("amount")])
        self.tracker.set_view("table", VIEW)
        self.dom = FakeDom()
        self.dom.render("table", ["row:1", "row:2"])
        self.resolver = CommandResolver(
            tracker=self.tracker,
            rendered=self.dom,
            new_id=counter_ids("r"),
            remembered=remembered,
        )
        self.resolver.bind("page-A", "conv-1")

    def select(self, ref: str = "row:1") -> int:
        return self.tracker.select("table", ref, {"amount": 1})[0]

    def resolve(self, raw: object) -> Resolution:
        """Resolve, and do the UI work when told to, as a binding would."""
        resolution = self.resolver.resolve(raw)
        if resolution.apply is not None:
            self.dom.apply(resolution.apply)
        return resolution


def command(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "protocol": "pagecontext",
        "version": 1,
        "type": "command",
        "messageId": "cmd-1",
        "pageInstanceId": "page-A",
        "conversationId": "conv-1",
        "basisRevision": 1,
        "action": "highlight",
        "target": {"componentId": "table", "resourceRef": "row:1"},
        "params": {"tone": "focus"},
    }
    raw.update(changes)
    return raw


def outcome(resolution: Resolution) -> tuple[str, str]:
    assert resolution.receipt is not None
    return resolution.receipt.status, resolution.receipt.reason


def test_a_valid_command_is_applied_with_an_ok_receipt() -> None:
    """Step 9: applied/ok, the command handed back for the UI work."""
    page = Page()
    page.select()
    resolution = page.resolve(command())
    assert outcome(resolution) == ("applied", "ok")
    assert resolution.apply is not None
    assert resolution.apply.command_id == "cmd-1"
    assert resolution.replayed is False
    assert page.dom.highlights == {"table": {"row:1": "focus"}}


def test_focus_is_exclusive_within_the_component() -> None:
    """A second focus highlight moves focus; related highlights stay."""
    page = Page()
    page.select()
    page.dom.render("table", ["row:3"])
    row3 = {"componentId": "table", "resourceRef": "row:3"}
    row2 = {"componentId": "table", "resourceRef": "row:2"}
    page.resolve(command(messageId="c1"))
    page.resolve(command(messageId="c2", target=row3, params={"tone": "related"}))
    page.resolve(command(messageId="c3", target=row2))
    assert page.dom.highlights == {"table": {"row:3": "related", "row:2": "focus"}}
    clear = command(messageId="c4", action="clear-highlight", params={}, target=row2)
    page.resolve(clear)
    assert page.dom.highlights == {}


def test_receipts_are_stamped_with_the_binding_and_a_fresh_message_id() -> None:
    """A receipt names the command, the received layer and the bound identities."""
    page = Page()
    page.select()
    first = page.resolve(command(messageId="cmd-1")).receipt
    second = page.resolve(command(messageId="cmd-2")).receipt
    assert first is not None
    assert second is not None
    assert dump_message(first) == {
        "protocol": "pagecontext",
        "version": 1,
        "type": "receipt",
        "messageId": "r1",
        "pageInstanceId": "page-A",
        "conversationId": "conv-1",
        "commandId": "cmd-1",
        "layer": "received",
        "status": "applied",
        "reason": "ok",
    }
    assert second.message_id == "r2"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"params": {"tone": "loud"}}, "malformed"),
        ({"action": "write", "params": {}}, "malformed"),
        ({"basisRevision": 1.0}, "malformed"),
        ({"basisRevision": "1"}, "malformed"),
        ({"extra": True}, "malformed"),
        ({"version": 2}, "unsupported-version"),
        ({"target": {"componentId": "table", "__proto__": {}}}, "forbidden-key"),
    ],
)
def test_step1_an_invalid_command_with_a_readable_id_is_rejected(
    changes: dict[str, Any], reason: str
) -> None:
    """Step 1: rejected with the validation reason, nothing applied."""
    page = Page()
    page.select()
    resolution = page.resolve(command(**changes))
    assert outcome(resolution) == ("rejected", reason)
    assert resolution.receipt is not None
    assert resolution.receipt.command_id == "cmd-1"
    assert resolution.apply is None
    assert page.dom.highlights == {}


@pytest.mark.parametrize("raw", [None, "x", [], {"type": "command"}, command(messageId="a b")])
def test_step1_input_without_a_readable_id_is_dropped_and_counted(raw: object) -> None:
    """Step 1: no messageId, no receipt; the drop is counted."""
    page = Page()
    assert page.resolve(raw) == Resolution(receipt=None)
    assert page.resolver.dropped == 1
    assert page.resolver.counts == {"malformed": 1}


def test_a_valid_message_that_is_not_a_command_is_rejected() -> None:
    """A context sent to the page is rejected/not-a-command."""
    page = Page()
    raw = command(type="bye")
    for key in ("basisRevision", "action", "target", "params"):
        del raw[key]
    assert outcome(page.resolve(raw)) == ("rejected", "not-a-command")


def test_step2_another_conversation_is_rejected() -> None:
    """Step 2: rejected/conversation-mismatch."""
    page = Page()
    page.select()
    assert outcome(page.resolve(command(conversationId="conv-OLD"))) == (
        "rejected",
        "conversation-mismatch",
    )


def test_step2_follows_a_conversation_change() -> None:
    """After bind() with a new conversation, the old one is a mismatch and the new one works."""
    page = Page()
    page.select()
    page.resolver.bind("page-A", "conv-2")
    assert outcome(page.resolve(command(messageId="c1"))) == ("rejected", "conversation-mismatch")
    resolution = page.resolve(command(messageId="c2", conversationId="conv-2"))
    assert outcome(resolution) == ("applied", "ok")
    assert resolution.receipt is not None
    assert resolution.receipt.conversation_id == "conv-2"


def test_step3_another_page_instance_is_stale() -> None:
    """Step 3: a command for an earlier load of the page is stale-context/page-instance."""
    page = Page()
    page.select()
    resolution = page.resolve(command(pageInstanceId="page-OLD"))
    assert outcome(resolution) == ("stale-context", "page-instance")
    assert page.dom.highlights == {}


def test_step4_a_repeated_command_gets_its_original_receipt_and_applies_once() -> None:
    """Step 4: the same receipt again, replayed, nothing applied the second time."""
    page = Page()
    page.select()
    first = page.resolve(command(params={"tone": "related"}))
    page.dom.highlights.clear()
    second = page.resolve(command(params={"tone": "related"}))
    assert second == Resolution(receipt=first.receipt, apply=None, replayed=True)
    assert page.dom.highlights == {}
    assert page.resolver.counts["replayed"] == 1
    assert page.resolver.counts["ok"] == 1


def test_step4_replays_a_negative_receipt_too() -> None:
    """A command first found not rendered keeps that answer even once the row appears."""
    page = Page()
    page.select()
    first = page.resolve(command(target={"componentId": "table", "resourceRef": "row:9"}))
    page.dom.render("table", ["row:9"])
    second = page.resolve(command(target={"componentId": "table", "resourceRef": "row:9"}))
    assert outcome(first) == ("not-found", "not-rendered")
    assert second.receipt == first.receipt
    assert second.replayed


def test_commands_refused_before_step4_are_not_remembered() -> None:
    """A mismatch at steps 1-3 does not poison the commandId for the real command."""
    page = Page()
    page.select()
    page.resolve(command(conversationId="conv-OLD"))
    page.resolve(command(pageInstanceId="page-OLD"))
    page.resolve(command(params={}))
    assert outcome(page.resolve(command())) == ("applied", "ok")


def test_remembered_receipts_are_bounded() -> None:
    """Only the last `remembered` commandIds are replayed; older ones resolve anew."""
    page = Page(remembered=2)
    page.select()
    for index in range(3):
        page.resolve(command(messageId=f"c{index}"))
    assert page.resolve(command(messageId="c2")).replayed
    assert not page.resolve(command(messageId="c0")).replayed


def test_step5_a_revision_never_issued_is_rejected() -> None:
    """Step 5: basisRevision above the latest issued is rejected/future-revision."""
    page = Page()
    page.select()
    assert outcome(page.resolve(command(basisRevision=2))) == ("rejected", "future-revision")


def test_step6_an_evicted_revision_is_stale() -> None:
    """Step 6: a basis outside the retained history is stale-context/revision-evicted."""
    page = Page(history=2)
    for _ in range(3):
        page.select()
    assert outcome(page.resolve(command(basisRevision=1))) == (
        "stale-context",
        "revision-evicted",
    )
    assert outcome(page.resolve(command(messageId="c2", basisRevision=2))) == ("applied", "ok")


@pytest.mark.parametrize(
    "new_view",
    [
        ComponentView("sales", {"region": ("EU",)}, 2),
        ComponentView("sales", {"region": ("US",)}, 1),
        ComponentView("sales", {"region": ("EU",), "year": 2024}, 1),
        ComponentView("forecast", {"region": ("EU",)}, 1),
    ],
)
def test_step7_a_changed_view_is_stale(new_view: ComponentView) -> None:
    """Step 7: a new generation, filter or page makes the command stale-context/view-changed."""
    page = Page()
    page.select()
    page.tracker.set_view("table", new_view)
    assert outcome(page.resolve(command())) == ("stale-context", "view-changed")


def test_step7_a_new_selection_in_the_same_view_does_not_make_a_command_stale() -> None:
    """Selecting row 2 after row 1 leaves a command based on row 1's revision applicable."""
    page = Page()
    basis = page.select("row:1")
    page.select("row:2")
    page.tracker.set_view("table", ComponentView("sales", {"region": ("EU",)}, 1))
    assert outcome(page.resolve(command(basisRevision=basis))) == ("applied", "ok")


def test_step8_an_unrendered_target_is_not_found() -> None:
    """Step 8: a target missing from the registry is not-found/not-rendered."""
    page = Page()
    page.select()
    page.dom.remove("table", "row:1")
    assert outcome(page.resolve(command())) == ("not-found", "not-rendered")
    unknown = command(messageId="c2", target={"componentId": "chart"})
    assert outcome(page.resolve(unknown)) == ("not-found", "not-rendered")


def test_a_selector_like_resource_ref_is_looked_up_as_an_id() -> None:
    """A resourceRef shaped like a selector matches nothing unless that exact id is rendered."""
    page = Page()
    page.select()
    target = {"componentId": "table", "resourceRef": "tr, #row\\:1, *"}
    assert outcome(page.resolve(command(target=target))) == ("not-found", "not-rendered")


def test_ui_receipt_is_stamped_for_the_ui_layer() -> None:
    """ui_receipt builds the ui-layer receipt with the bound identities."""
    page = Page()
    receipt = page.resolver.ui_receipt("cmd-1", "applied", "ok", detail="scrolled")
    assert (receipt.layer, receipt.status, receipt.reason, receipt.detail) == (
        "ui",
        "applied",
        "ok",
        "scrolled",
    )
    assert (receipt.page_instance_id, receipt.conversation_id) == ("page-A", "conv-1")


def test_a_repeated_command_replays_the_received_receipt_not_the_ui_one() -> None:
    """After the ui receipt was sent, a repeat still gets the original received receipt."""
    page = Page()
    page.select()
    first = page.resolve(command())
    page.resolver.ui_receipt("cmd-1", "applied", "ok")
    again = page.resolve(command())
    assert again.receipt == first.receipt
    assert again.receipt is not None
    assert again.receipt.layer == "received"


@pytest.mark.parametrize(("reason", "detail"), [("Not OK", None), ("ok", "d" * 201), ("", None)])
def test_ui_receipt_with_invalid_fields_is_a_local_error(reason: str, detail: str | None) -> None:
    """A bad reason code or an overlong detail is our mistake, not a pydantic error."""
    page = Page()
    with pytest.raises(LocalProtocolError):
        page.resolver.ui_receipt("cmd-1", "applied", reason, detail)


def test_resolving_before_bind_is_a_local_error() -> None:
    """The resolver cannot stamp receipts before it knows its binding."""
    tracker = SelectionTracker(page_instance_id="p", clock=FakeClock())
    resolver = CommandResolver(tracker=tracker, rendered=FakeDom(), new_id=counter_ids())
    with pytest.raises(LocalProtocolError, match="unbound"):
        resolver.resolve(command())


def test_a_flood_of_rejected_messages_stays_bounded_and_the_channel_keeps_working() -> None:
    """Thousands of bad messages evict no remembered receipt; valid commands still work."""
    page = Page(remembered=8)
    page.select()
    kept = page.resolve(command(messageId="keep"))
    for index in range(2000):
        page.resolve(command(messageId=f"bad{index}", conversationId="conv-X"))
        page.resolve({"junk": index})
    assert page.resolver.dropped == 2000
    assert page.resolver.counts["conversation-mismatch"] == 2000
    assert page.resolve(command(messageId="keep")) == Resolution(kept.receipt, replayed=True)
    assert outcome(page.resolve(command(messageId="fresh"))) == ("applied", "ok")


FAILURES = (
    "malformed",
    "wrong_conversation",
    "wrong_page",
    "duplicate",
    "future",
    "evicted",
    "view_changed",
    "unrendered",
)
EXPECTED = {
    "malformed": ("rejected", "malformed"),
    "wrong_conversation": ("rejected", "conversation-mismatch"),
    "wrong_page": ("stale-context", "page-instance"),
    "duplicate": ("applied", "ok"),  # the original receipt, replayed
    "future": ("rejected", "future-revision"),
    "evicted": ("stale-context", "revision-evicted"),
    "view_changed": ("stale-context", "view-changed"),
    "unrendered": ("not-found", "not-rendered"),
}


@settings(max_examples=200, deadline=None)
@given(
    failing=st.sets(st.sampled_from(FAILURES)),
    same_view_selections=st.integers(min_value=0, max_value=2),
)
def test_the_receipt_names_the_first_failing_step_in_order(
    failing: set[str], same_view_selections: int
) -> None:
    """For any combination of failures, the receipt is that of the earliest failing step."""
    page = Page(history=3)
    basis = page.select()
    if "duplicate" in failing:
        original = page.resolve(command(messageId="cmd-dup", basisRevision=basis))
        assert outcome(original) == ("applied", "ok")
    if "evicted" in failing:
        for _ in range(3):
            page.select()
    else:
        # New selections in the same view, within the history: never a reason to refuse.
        for _ in range(same_view_selections):
            page.select("row:2")
    if "future" in failing:
        basis = page.tracker.latest_revision + 1
    if "view_changed" in failing:
        page.tracker.set_view("table", OTHER_VIEW)
    raw = command(
        messageId="cmd-dup" if "duplicate" in failing else "cmd-new",
        basisRevision=basis,
        conversationId="conv-X" if "wrong_conversation" in failing else "conv-1",
        pageInstanceId="page-X" if "wrong_page" in failing else "page-A",
        params={"tone": "loud"} if "malformed" in failing else {"tone": "focus"},
        target={
            "componentId": "table",
            "resourceRef": "row:gone" if "unrendered" in failing else "row:1",
        },
    )
    first_failure = next((step for step in FAILURES if step in failing), None)
    resolution = page.resolver.resolve(raw)
    assert outcome(resolution) == EXPECTED.get(first_failure or "", ("applied", "ok"))
    assert resolution.replayed == (first_failure == "duplicate")
    assert (resolution.apply is not None) == (first_failure is None)
    assert resolution.receipt is not None
    assert resolution.receipt.layer == "received"
