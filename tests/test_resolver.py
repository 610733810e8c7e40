"""Tests for pagecontext.resolver: the resolution order of docs/protocol.md section 5."""

from __future__ import annotations

import gc
import tracemalloc
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wire
from pagecontext.errors import LocalProtocolError
from pagecontext.models import REFUSAL_REASONS, dump_message
from pagecontext.resolver import CommandResolver, Resolution
from pagecontext.testing import FakeClock, FakeDom, counter_ids
from pagecontext.tracker import ComponentView, FieldSpec, SelectionTracker
from strategies import MUTATIONS, commands, mutants, stamped
from work import calls_for_each

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


# This module's commands are `cmd-1` unless a test names another id.
command = partial(wire.command, messageId="cmd-1")


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


def test_a_replayed_command_is_remembered_as_the_latest() -> None:
    """An assistant that sends a command again (its receipt was lost) gets the original
    receipt, and the replay keeps that command among the last `remembered`: newer
    commands evict older ones first, so a third send of it is still a replay and its UI
    work is never done twice."""
    page = Page(remembered=2)
    page.select()
    page.resolve(command(messageId="c0"))
    page.resolve(command(messageId="c1"))
    assert page.resolve(command(messageId="c0")).replayed
    page.resolve(command(messageId="c2"))
    again = page.resolve(command(messageId="c0"))
    assert again.replayed
    assert again.apply is None
    assert not page.resolve(command(messageId="c1")).replayed


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


def test_a_revision_evicted_refusal_is_replayed_byte_for_byte() -> None:
    """Step 6 answers are remembered (docs/protocol.md 8.5): the same command again gets
    the original stale-context/revision-evicted receipt, same messageId, as a replay."""
    page = Page(history=2)
    for _ in range(3):
        page.select()
    first = page.resolve(command(basisRevision=1))
    second = page.resolve(command(basisRevision=1))
    assert outcome(first) == ("stale-context", "revision-evicted")
    assert first.receipt is not None
    assert second == Resolution(receipt=first.receipt, apply=None, replayed=True)
    assert second.receipt is not None
    assert dump_message(second.receipt) == dump_message(first.receipt)
    assert page.resolver.counts["replayed"] == 1
    assert page.resolver.counts["revision-evicted"] == 1


def test_a_view_changed_refusal_is_replayed_even_once_the_view_changes_back() -> None:
    """Step 7 answers are remembered (docs/protocol.md section 5 step 4, 8.5): after the
    view returns to the command's basis, the same command is answered with its original
    stale-context/view-changed receipt byte for byte, and nothing is applied."""
    page = Page()
    page.select()
    page.tracker.set_view("table", OTHER_VIEW)
    first = page.resolve(command())
    assert outcome(first) == ("stale-context", "view-changed")
    page.tracker.set_view("table", VIEW)
    second = page.resolve(command())
    assert first.receipt is not None
    assert second == Resolution(receipt=first.receipt, apply=None, replayed=True)
    assert second.receipt is not None
    assert dump_message(second.receipt) == dump_message(first.receipt)
    assert page.dom.highlights == {}
    assert page.resolver.counts["replayed"] == 1
    assert "ok" not in page.resolver.counts
    # A fresh command id on the same basis does apply in the restored view.
    assert outcome(page.resolve(command(messageId="cmd-2"))) == ("applied", "ok")


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
    unknown = command(messageId="c2", target={"componentId": "chart", "resourceRef": "row:1"})
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


# -- acceptance: payloads (16), duplicates (17), the closed set (18), floods (19) ---------

_AIM = {
    "page_instance_ids": st.just("page-A"),
    "conversation_ids": st.just("conv-1"),
    "revision": st.just(1),
}
# Commands the page would resolve past step 3 as they are: any refusal of their mutants
# is the mutation's doing.
ACCEPTABLE = st.one_of(commands(**_AIM), stamped(types=("command",), **_AIM))


def ui_work(dom: FakeDom) -> tuple[object, ...]:
    """Everything the fake DOM has done, to compare before and after."""
    highlights = {component: dict(marks) for component, marks in dom.highlights.items()}
    return highlights, list(dom.located), dict(dom.refreshes)


@pytest.mark.scenario(16, 18)
@pytest.mark.parametrize("mutation", MUTATIONS)
@settings(max_examples=60)
@given(data=st.data())
def test_every_payload_mutation_of_a_command_is_refused_and_nothing_is_applied(
    mutation: str, data: st.DataObject
) -> None:
    """Each mutation kind gets rejected with its payload reason (or dropped without a
    readable id), applies nothing, and a valid command still applies afterwards."""
    mutant = data.draw(mutants(ACCEPTABLE, kinds=(mutation,), refused_only=True))
    page = Page()
    page.select()
    done = ui_work(page.dom)
    resolution = page.resolve(mutant.raw)
    assert resolution.apply is None
    assert ui_work(page.dom) == done
    if resolution.receipt is None:
        assert page.resolver.dropped == 1
    else:
        assert resolution.receipt.status == "rejected"
        assert resolution.receipt.reason in REFUSAL_REASONS
    assert sum(page.resolver.counts.values()) == 1
    assert outcome(page.resolve(command(messageId="fresh-1"))) == ("applied", "ok")


@pytest.mark.scenario(17)
def test_a_duplicate_command_id_gets_its_original_receipt_and_is_applied_once() -> None:
    """Repeats of a refresh, also after other commands and with another body, replay the
    first receipt byte for byte; the component reloads exactly once."""
    page = Page()
    page.select()
    refresh = command(
        messageId="cmd-r", action="refresh", params={}, target={"componentId": "table"}
    )
    first = page.resolve(refresh)
    assert outcome(first) == ("applied", "ok")
    again = [page.resolve(refresh)]
    page.resolve(command(messageId="cmd-other"))
    again.append(page.resolve(refresh))
    # The same id with another body is still the same command: answered, not applied.
    again.append(
        page.resolve(
            command(messageId="cmd-r", target={"componentId": "table", "resourceRef": "row:2"})
        )
    )
    assert first.receipt is not None
    for repeat in again:
        assert repeat == Resolution(receipt=first.receipt, apply=None, replayed=True)
        assert repeat.receipt is not None
        assert dump_message(repeat.receipt) == dump_message(first.receipt)
    assert page.dom.refreshes == {"table": 1}
    assert page.dom.highlights == {"table": {"row:1": "focus"}}
    assert page.resolver.counts["replayed"] == 3


@pytest.mark.scenario(18)
@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"action": "eval", "params": {}}, id="eval"),
        pytest.param({"action": "write", "params": {}}, id="write"),
        pytest.param({"action": "navigate", "params": {}}, id="navigate"),
        pytest.param({"action": "HIGHLIGHT"}, id="case"),
        pytest.param({"action": "highlight "}, id="padded"),
        pytest.param({"action": ""}, id="empty"),
        pytest.param({"action": ["highlight"]}, id="list"),
        pytest.param({"params": {"tone": "focus", "color": "red"}}, id="highlight-extra"),
        pytest.param({"params": {"tone": "focus", "html": "<b>x</b>"}}, id="highlight-html"),
        pytest.param({"params": {"tone": "<script>"}}, id="highlight-tone"),
        pytest.param({"params": {}}, id="highlight-no-tone"),
        pytest.param({"action": "locate", "params": {"tone": "focus"}}, id="locate-extra"),
        pytest.param({"action": "refresh", "params": {"data": "{}"}}, id="refresh-data"),
        pytest.param({"action": "clear-highlight", "params": {"all": "yes"}}, id="clear-extra"),
        pytest.param(
            {"target": {"componentId": "table", "resourceRef": "row:1", "selector": "tr"}},
            id="target-selector",
        ),
        pytest.param({"script": "alert(1)"}, id="script"),
    ],
)
def test_commands_outside_the_closed_set_or_with_extra_params_are_rejected(
    changes: dict[str, Any],
) -> None:
    """rejected/malformed, nothing applied, and the command id is not taken."""
    page = Page()
    page.select()
    resolution = page.resolve(command(**changes))
    assert outcome(resolution) == ("rejected", "malformed")
    assert resolution.apply is None
    assert ui_work(page.dom) == ({}, [], {})
    assert outcome(page.resolve(command())) == ("applied", "ok")


SELECTOR_LIKE = ["tr:nth-child(2)", "<img src=x onerror=alert(1)>", "*", "#id, .cls"]


@pytest.mark.scenario(18)
@pytest.mark.parametrize("ref", SELECTOR_LIKE)
def test_a_selector_like_resource_ref_never_matches_another_row(ref: str) -> None:
    """Only a row registered under exactly that ref is highlighted; no selector matching."""
    page = Page()
    page.select()
    for other in SELECTOR_LIKE:
        target = {"componentId": "table", "resourceRef": other}
        assert outcome(page.resolve(command(messageId=f"miss-{len(other)}", target=target))) == (
            "not-found",
            "not-rendered",
        )
    assert page.dom.highlights == {}
    page.dom.render("table", [ref])
    target = {"componentId": "table", "resourceRef": ref}
    assert outcome(page.resolve(command(messageId="hit", target=target))) == ("applied", "ok")
    assert page.dom.highlights == {"table": {ref: "focus"}}
    for index, other in enumerate(SELECTOR_LIKE):
        if other != ref:
            target = {"componentId": "table", "resourceRef": other}
            resolution = page.resolve(command(messageId=f"again-{index}", target=target))
            assert outcome(resolution) == ("not-found", "not-rendered")
    assert page.dom.highlights == {"table": {ref: "focus"}}


REMEMBERED = (4, 5)  # the kinds of flood_command the page remembers: steps 5-8


def flood_command(index: int) -> object:
    """The index-th of a rotation of commands the page refuses, each with a fresh id."""
    kind = index % 8
    message_id = f"f{index}"
    if kind == 0:
        return command(messageId=message_id, params={"tone": "loud"})  # rejected, not kept
    if kind == 1:
        return {"messageId": f"bad id {index}", "junk": "x" * 50}  # dropped
    if kind == 2:
        return command(messageId=message_id, conversationId="conv-X")
    if kind == 3:
        return command(messageId=message_id, pageInstanceId="page-X")
    if kind == 4:
        return command(messageId=message_id, basisRevision=10**6)  # future, remembered
    if kind == 5:
        target = {"componentId": "table", "resourceRef": f"row:gone{index}"}
        return command(messageId=message_id, target=target)  # not rendered, remembered
    if kind == 6:
        return command(messageId=message_id, target={"componentId": "table", "__proto__": {}})
    return [index]


@pytest.mark.scenario(19)
def test_refusing_a_command_takes_no_more_work_after_thousands_refused() -> None:
    """Bounded in time, counted rather than timed: once the page's memory of receipts is
    full, refusing 1,600 commands (each kind of the flood 200 times) makes as many
    function calls after 13,400 commands as after 5,000, within 1% (the ids' lengths
    differ)."""
    page = Page(remembered=1024)
    page.select()
    for index in range(5000):
        if index % 8 in REMEMBERED:
            page.resolve(flood_command(index))
    early = calls_for_each(page.resolve, [flood_command(i) for i in range(5000, 6600)])
    for index in range(6600, 13_400):
        page.resolve(flood_command(index))
    late = calls_for_each(page.resolve, [flood_command(i) for i in range(13_400, 15_000)])
    assert early * 0.99 <= late <= early * 1.01
    assert page.dom.highlights == {}


@pytest.mark.scenario(19)
def test_a_flood_of_refused_commands_keeps_memory_and_remembered_ids_bounded() -> None:
    """10,000 refused commands: no memory growth over 256 KiB, at most `remembered` ids
    replayable, the original receipt of a kept id replayed, and a fresh command applies."""
    page = Page(remembered=1024)
    page.select()
    # Traced from before the warm-up, so that memory it took and the flood frees counts.
    tracemalloc.start()
    try:
        # Warm up: fill the memory of receipts; from here on nothing may grow.
        for index in range(5000):
            if index % 8 in REMEMBERED:
                page.resolve(flood_command(index))
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        for index in range(5000, 15_000):
            page.resolve(flood_command(index))
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 256 * 1024
    assert page.resolver.dropped == 10_000 // 4  # no readable messageId: kinds 1 and 7
    assert set(page.resolver.counts) == REFUSAL_REASONS & {"malformed", "forbidden-key"} | {
        "conversation-mismatch",
        "page-instance",
        "future-revision",
        "not-rendered",
    }
    # Two of every eight commands are remembered: the last 1,024 of them replay, the
    # one before them resolves anew.
    kept = [index for index in range(15_000) if index % 8 in REMEMBERED]
    assert page.resolve(flood_command(kept[-1024])).replayed
    assert not page.resolve(flood_command(kept[-1025])).replayed
    assert page.dom.highlights == {}
    assert outcome(page.resolve(command(messageId="fresh"))) == ("applied", "ok")
