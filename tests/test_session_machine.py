"""A state machine over a bound ChannelPair: users, pages and the transport in any order.

Each rule is one thing that happens in a tab: the user selects, shares, clears, asks,
presses Show me, starts a new conversation or removes the chip; the page renders again;
the agent calls a page tool; the port delivers some of what is on its way (in order, per
direction); the clock moves and the assistant's timer fires; the page's edge finishes a
command's UI work (or never does); the child frame reloads, a side says `bye`, and the
embedder binds the child again. After every step the machine checks what
docs/protocol.md promises:

- the assistant's revision never goes back for a page instance (section 4, 8.7), and a
  context it pins is one the bound page instance sent in its conversation (8.6a);
- the page applies only commands of its bound conversation and page instance, whose
  component shows the view of their basis revision and renders their target
  (section 5, steps 2-9), and none twice (step 4, 8.5);
- a settled layer never changes, except to record a late receipt beside `unconfirmed`
  (section 6, 8.6); `applied` comes only from a receipt on time, on the command's
  connection, and a `ui` layer `applied` only for UI work the page did;
- once the assistant's timer fires, no layer past its deadline is pending (section 6),
  and no command of a connection that ended is pending (section 2, step 7);
- a repeated command gets its first receipt again, and a command one `ui` receipt at
  most (8.5); the page shares a revision once per binding and conversation (8.7);
- once the port is quiet on a binding, the assistant holds what the page sent last on
  it (section 4, 8.7), and its chip says whether its page reloaded since;
- every mark on the page was drawn in the conversation the page serves (8.14).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from pagecontext.ledger import LayerName, LayerRecord
from pagecontext.session import Effect, StartRun, ToEdge
from pagecontext.testing import ChannelPair, Side

COMPONENTS = ("orders", "totals")
ROWS = ("row:1", "row:2", "row:3", "row:4")
FILTERS: tuple[dict[str, Any], ...] = (
    {"region": "EU"},
    {"region": "UK"},
    {"region": ["EU", "UK"], "open": True},
)
SHAREABLE = [("amount", "EUR"), ("status", None)]
AT = "2026-05-01T09:30:00.000Z"
# The ledger's default deadlines per layer (docs/protocol.md section 6).
DEADLINES_MS: Mapping[str, float] = {"received": 3000, "ui": 10000}
# How far the clock moves at once: within, at and just past each deadline.
CLOCK_STEPS_MS = (1, 100, 500, 1000, 2999, 3000, 3001, 7000, 10_000, 10_001)

# A component's view as the page shows it: page, filters (as JSON) and data generation.
View = tuple[str, str, int]


@dataclass
class PageModel:
    """What one page document shows and selected, kept apart from the page session."""

    instance_id: str
    views: dict[str, View] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)
    rendered: dict[str, set[str]] = field(default_factory=dict)
    # The components' views as each revision was issued.
    history: dict[int, dict[str, View]] = field(default_factory=dict)
    latest: int = 0
    # Commands the page resolved as `applied`.
    applied: set[str] = field(default_factory=set)


@dataclass
class Sent:
    """A command the assistant recorded: when, and on which link (None: never sent)."""

    at: float
    link: int | None


class Tab(ChannelPair):
    """A ChannelPair whose page edge does a command's UI work when told to (or never),
    which delivers messages one at a time if asked, and which records what it delivered
    and what the page's DOM fake did."""

    def __init__(self, *, embedder: Side, as_text: bool) -> None:
        # Every message put on a link: (link, sender, message).
        self.posted: list[tuple[int, Side, dict[str, object]]] = []
        # Every message delivered: (link, receiver, message, clock).
        self.delivered: list[tuple[int, Side, dict[str, object], float]] = []
        # `apply` instructions the page's edge holds, with the page instance and the
        # conversation they are for.
        self.edge_work: list[tuple[str, str, dict[str, object]]] = []
        # Commands whose UI work the DOM fake did: (page instance, conversation, status,
        # the `apply` instruction).
        self.dom_done: list[tuple[str, str, str, dict[str, object]]] = []
        # Called with each `apply` instruction as the page session hands it to its edge.
        self.checks_apply: list[Callable[[Mapping[str, object]], None]] = []
        self._replaying = False
        super().__init__(embedder=embedder, as_text=as_text)

    def link(self, side: Side) -> int | None:
        """The link `side` is attached to now, or None."""
        return self._port[side]

    def live(self, link: int | None) -> bool:
        return link is not None and link not in self._closed_links

    def in_flight(self) -> int:
        """How many queued messages would still be delivered."""
        return sum(1 for link, to, _ in self._queue if self.live(link) and self._port[to] == link)

    def replay(self, to: Side, message: Mapping[str, object]) -> None:
        """Queue `message` to `to` again on the current link, as a peer that repeats
        itself would (not recorded in `posted`)."""
        self._replaying = True
        try:
            self.post(to, message)
        finally:
            self._replaying = False

    def _send(self, sender: Side, message: dict[str, object]) -> None:
        port = self._port[sender]
        if port is not None and port not in self._closed_links and not self._replaying:
            self.posted.append((port, sender, json.loads(json.dumps(message))))
        super()._send(sender, message)

    def _delivering(self, link: int, to: Side, message: dict[str, object]) -> None:
        self.delivered.append((link, to, message, self.clock.now_ms))

    def _apply(self, instruction: Mapping[str, object]) -> None:
        for check in self.checks_apply:
            check(instruction)
        conversation = self.page.resolver.conversation_id
        assert conversation is not None
        self.edge_work.append((self.page.page_instance_id, conversation, dict(instruction)))

    def run(self, side: Side, effects: Iterable[Effect]) -> None:
        done = list(effects)
        if side == "page" and any(
            isinstance(effect, ToEdge) and effect.message.get("kind") == "conversation"
            for effect in done
        ):
            # The page's code, told the conversation changed, drops the UI work it had not
            # done yet (the edge takes the marks off the page).
            self.edge_work.clear()
        super().run(side, done)

    def finish_ui(self, index: int, page_says_not_found: bool) -> None:
        """The page's edge finishes one command's UI work: stale if the component shows
        another generation than the command was checked against, else done in the DOM
        fake (or, if the page's own code took it, reported not found)."""
        instance, conversation, instruction = self.edge_work.pop(index)
        if instance != self.page.page_instance_id:
            return  # that document is gone, and its edge with it
        command_id = str(instruction["commandId"])
        component_id = str(instruction["componentId"])
        view = self.page.tracker.current_view(component_id)
        if view is None or view.generation != instruction["generation"]:
            self.run("page", self.page.on_ui_done(command_id, "stale-context", "view-changed"))
            return
        if page_says_not_found:
            self.run("page", self.page.on_ui_done(command_id, "not-found", "page-defined"))
            return
        status, reason = self.dom.apply_instruction(instruction)
        self.dom_done.append((instance, conversation, status, instruction))
        self._ui_done(command_id, status, reason)


def _view(page_id: str, filters: Mapping[str, Any], generation: int) -> View:
    return (page_id, json.dumps(filters, sort_keys=True), generation)


class SessionMachine(RuleBasedStateMachine):
    """Users, pages and the transport in any order, over one tab's ChannelPair."""

    def __init__(self) -> None:
        super().__init__()
        self.tab: Tab
        self.page_model: PageModel
        self.reloads = 0
        self.conversations = 1
        # The assistant document's commands, by id.
        self.commands: dict[str, Sent] = {}
        self.command_ids: re.Pattern[str] = re.compile(r"a\d+")
        # Every layer record of the assistant's commands as the last step left it.
        self.records: dict[tuple[str, LayerName], LayerRecord] = {}
        # The assistant's last revision per page instance, and the highest revision it
        # pinned per page instance (kept across a reload that restores its saved state).
        self.last_revision: dict[str, int] = {}
        self.pinned_floor: dict[str, int] = {}
        self.pinned_seen: object = None
        # The answer running: its run id, and the task pinned as it was asked.
        self.run_id: str | None = None
        self.task: tuple[str, int] | None = None
        self.calls = 0
        self.ticked_at: float | None = None
        # The child frame holds a new document that no handshake has bound yet.
        self.child_unbound = False

    # -- set-up ---------------------------------------------------------------------------

    @initialize(embedder=st.sampled_from(["page", "assistant"]), as_text=st.booleans())
    def bind(self, embedder: Side, as_text: bool) -> None:
        self.tab = Tab(embedder=embedder, as_text=as_text)
        self.tab.checks_apply.append(self.check_apply)
        self.page_model = PageModel(self.tab.page.page_instance_id)
        self.render_all()
        # The user starts from the second row shared with the assistant.
        for row in ("row:1", "row:2"):
            self.tab.run("page", self.tab.page.on_select("orders", row, {"amount": 1}))
            self.issued(self.tab.last_edge("page", "selected")["revision"])
            self.share()
            self.tab.pump()

    def render_all(self) -> None:
        for component_id in COMPONENTS:
            self.render_view(component_id, set(ROWS), 0, 1)

    def render_view(self, component_id: str, rows: set[str], filters: int, generation: int) -> None:
        chosen = FILTERS[filters]
        self.tab.render(
            component_id,
            sorted(rows),
            filters=chosen,
            generation=generation,
            shareable=SHAREABLE,
        )
        self.page_model.views[component_id] = _view("orders", chosen, generation)
        self.page_model.generations[component_id] = generation
        self.page_model.rendered[component_id] = set(rows)

    @property
    def child(self) -> Side:
        return "assistant" if self.tab.embedder == "page" else "page"

    # -- the user, on the page -------------------------------------------------------------

    @rule(data=st.data(), component=st.sampled_from(COMPONENTS), shared=st.booleans())
    def user_selects_a_row(self, data: st.DataObject, component: str, shared: bool) -> None:
        rows = sorted(self.page_model.rendered.get(component, ()))
        if not rows:
            return
        row = data.draw(st.sampled_from(rows))
        amount = data.draw(st.integers(0, 10_000))
        self.tab.run("page", self.tab.page.on_select(component, row, {"amount": amount}))
        revision = self.tab.last_edge("page", "selected")["revision"]
        self.issued(revision)
        if shared:
            self.share()

    @rule(shared=st.booleans())
    def user_clears_the_selection(self, shared: bool) -> None:
        before = self.tab.page.tracker.latest_revision
        self.tab.run("page", self.tab.page.clear_selection())
        if self.tab.page.tracker.latest_revision != before:
            self.issued(self.tab.page.tracker.latest_revision)
        if shared:
            self.share()

    def issued(self, revision: int, views: Mapping[str, View] | None = None) -> None:
        """The page issued `revision`, in `views` (default: the views shown now)."""
        model = self.page_model
        assert revision == model.latest + 1, "revisions go up by one per page instance"
        model.latest = revision
        model.history[revision] = dict(model.views if views is None else views)

    @rule()
    def user_asks_ai_to_share(self) -> None:
        self.share()

    def share(self) -> None:
        """The page shares its selection; one whose component has stopped declaring a
        field of it goes as a new revision, checked against the views it was made in."""
        self.tab.run("page", self.tab.page.share())
        self.narrowed()

    def narrowed(self) -> None:
        """Note the revisions a share issued (here, or as the page took a `bound` or
        `conversation` message) for a selection its component narrowed: in the views of
        the revision before."""
        model = self.page_model
        while self.tab.page.tracker.latest_revision > model.latest:
            self.issued(model.latest + 1, model.history[model.latest])

    @rule(
        component=st.sampled_from(COMPONENTS),
        rows=st.sets(st.sampled_from(ROWS)),
        filters=st.integers(0, len(FILTERS) - 1),
        new_data=st.booleans(),
    )
    def page_renders_again(
        self, component: str, rows: set[str], filters: int, new_data: bool
    ) -> None:
        """The component renders other rows, another filter (new data: a new generation)
        or the same data again."""
        shown = self.page_model.views.get(component)
        generation = self.page_model.generations[component]
        changed = shown is None or json.dumps(FILTERS[filters], sort_keys=True) != shown[1]
        self.render_view(component, rows, filters, generation + (changed or new_data))

    @rule(component=st.sampled_from(COMPONENTS))
    def page_takes_a_component_off(self, component: str) -> None:
        """The component leaves the document: commands for it are stale until it renders
        again."""
        self.tab.page.on_gone([component])
        for ref in self.page_model.rendered.pop(component, set()):
            self.tab.dom.remove(component, ref)
        self.page_model.views.pop(component, None)

    @rule(component=st.sampled_from(COMPONENTS), amount=st.booleans())
    def component_declares_other_shareable_fields(self, component: str, amount: bool) -> None:
        """The component stops (or starts again) declaring `amount` shareable."""
        if component in self.page_model.views:
            self.tab.page.declare(component, SHAREABLE if amount else SHAREABLE[1:])

    # -- the user, in the assistant --------------------------------------------------------

    @rule()
    def user_presses_show_me(self) -> None:
        pinned = self.tab.assistant.pinned if self.tab.assistant.chip_shown else None
        self.tab.run("assistant", self.tab.assistant.show())
        new = self.note_new_commands()
        if pinned is None:
            assert new == [], "Show me without a chip sends nothing"
            return
        assert len(new) == 2
        for command_id in new:
            self.check_sent_for(command_id, pinned.page_instance_id, pinned.selection_revision)

    @precondition(lambda self: self.run_id is None)
    @rule()
    def user_asks_a_question(self) -> None:
        assistant = self.tab.assistant
        pinned = assistant.pinned if assistant.chip_shown else None
        effects = assistant.ask("What about it?", AT, shown=assistant.shown_chip)
        self.tab.run("assistant", effects)
        [start] = [effect for effect in effects if isinstance(effect, StartRun)]
        self.run_id = start.run_id
        self.task = None if pinned is None else (pinned.page_instance_id, pinned.selection_revision)
        self.agent_says({"type": "RUN_STARTED", **self.run_ids()})

    def run_ids(self) -> dict[str, object]:
        return {"threadId": self.tab.assistant.conversation_id, "runId": self.run_id}

    def agent_says(self, *events: dict[str, object]) -> None:
        assert self.run_id is not None
        text = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
        self.tab.run("assistant", self.tab.assistant.on_agent_text(self.run_id, text))

    @precondition(lambda self: self.run_id is not None)
    @rule(
        tool=st.sampled_from(["highlight", "locate", "refresh"]),
        component=st.sampled_from(COMPONENTS),
        row=st.sampled_from(ROWS),
    )
    def agent_calls_a_page_tool(self, tool: str, component: str, row: str) -> None:
        """The agent points at a row (perhaps one not rendered): the command is for the
        question's task, whatever was selected since (section 7)."""
        arguments: dict[str, object] = {"componentId": component}
        if tool != "refresh":
            arguments["resourceRef"] = row
        if tool == "highlight":
            arguments["tone"] = "related"
        self.calls += 1
        call_id = f"call_{self.calls}"
        self.agent_says(
            {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": tool},
            {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": json.dumps(arguments)},
            {"type": "TOOL_CALL_END", "toolCallId": call_id},
        )
        new = self.note_new_commands()
        if self.task is None:
            assert new == [], "a question with no pinned selection sends no command"
            return
        [command_id] = new
        self.check_sent_for(command_id, *self.task)

    @precondition(lambda self: self.run_id is not None)
    @rule()
    def agent_answer_ends(self) -> None:
        assert self.run_id is not None
        self.agent_says({"type": "RUN_FINISHED", **self.run_ids()})
        self.tab.run("assistant", self.tab.assistant.on_agent_end(self.run_id))
        assert self.tab.assistant.answering is None
        self.run_id = self.task = None

    @rule()
    def user_starts_a_new_conversation(self) -> None:
        assistant = self.tab.assistant
        busy = assistant.busy
        self.conversations += 1
        conversation_id = f"conv-{self.conversations}"
        self.tab.run("assistant", assistant.new_conversation(conversation_id))
        if busy:
            assert assistant.conversation_id != conversation_id
        else:
            assert assistant.conversation_id == conversation_id

    @rule(removed=st.booleans())
    def user_removes_the_chip_or_brings_it_back(self, removed: bool) -> None:
        assistant = self.tab.assistant
        self.tab.run(
            "assistant", assistant.remove_chip(None) if removed else assistant.restore_chips()
        )

    def note_new_commands(self) -> list[str]:
        """The commands the assistant recorded since the last call, oldest first."""
        binding = self.tab.assistant.binding
        link = self.tab.link("assistant") if binding is not None else None
        new = [
            str(entry["id"])
            for entry in self.tab.assistant.composer.log
            if entry["kind"] == "command"
            and self.command_ids.fullmatch(str(entry["id"]))
            and str(entry["id"]) not in self.commands
        ]
        for command_id in new:
            self.commands[command_id] = Sent(self.tab.clock.now_ms, link)
        return new

    def check_sent_for(self, command_id: str, page_instance_id: str, revision: int) -> None:
        """The command is recorded pending, and, if it went out, names that page instance
        and basis revision."""
        layers = self.tab.assistant.ledger.get(command_id)
        assert {name: record.state for name, record in layers.items()} == {
            "received": "pending",
            "ui": "pending",
        }
        sent = [m for side, m in self.tab.sent if m.get("messageId") == command_id]
        if self.commands[command_id].link is None:
            assert sent == [], "a command issued while unbound is never sent"
            return
        [command] = sent
        assert (command["pageInstanceId"], command["basisRevision"]) == (
            page_instance_id,
            revision,
        )
        assert command["conversationId"] == self.tab.assistant.conversation_id

    # -- the transport, the clock, the page's edge -----------------------------------------

    @rule(
        to=st.sampled_from(["page", "assistant"]),
        count=st.integers(1, 3),
        edge_keeps_up=st.booleans(),
    )
    def port_delivers_a_few_to_one_side(self, to: Side, count: int, edge_keeps_up: bool) -> None:
        """Some of what is on its way to one side arrives; the rest comes later, in order."""
        self.tab.pump(only=to, limit=count)
        self.narrowed()
        if edge_keeps_up:
            self.page_edge_finishes_every_ui_step()

    @rule(to=st.sampled_from([None, "page", "assistant"]), edge_keeps_up=st.booleans())
    def port_delivers_everything(self, to: Side | None, edge_keeps_up: bool) -> None:
        """Everything on its way (to one side, or both until the port is quiet) arrives;
        the page's edge may do each command's UI work as it comes."""
        self.tab.pump(only=to)
        while edge_keeps_up and self.tab.edge_work:
            self.page_edge_finishes_every_ui_step()
            self.tab.pump(only=to)
        self.narrowed()

    @rule(ms=st.sampled_from(CLOCK_STEPS_MS), timer_fires=st.booleans())
    def clock_advances(self, ms: int, timer_fires: bool) -> None:
        """Time passes; the assistant's timer may fire (it does at a deadline, in the
        worker), or not yet."""
        self.tab.clock.advance(ms)
        if timer_fires:
            self.assistants_timer_fires()

    @rule(
        edge_keeps_up=st.booleans(),
        receipts_on_time=st.booleans(),
        timer_first=st.booleans(),
    )
    def time_passes_every_deadline(
        self, edge_keeps_up: bool, receipts_on_time: bool, timer_first: bool
    ) -> None:
        """The page takes what is on its way and answers; its receipts reach the assistant
        at once, or only once every deadline has passed (before or after its timer
        fired). Once the timer fired past every deadline, no command is left pending
        (section 6)."""
        self.port_delivers_everything(None if receipts_on_time else "page", edge_keeps_up)
        self.clock_advances(10_001, timer_fires=timer_first)
        self.port_delivers_everything(None, edge_keeps_up)
        self.assistants_timer_fires()
        for command_id in self.commands:
            layers = self.tab.assistant.ledger.get(command_id)
            assert all(record.state != "pending" for record in layers.values()), layers

    def assistants_timer_fires(self) -> None:
        self.tab.run("assistant", self.tab.assistant.tick())
        self.ticked_at = self.tab.clock.now_ms
        self.check_no_layer_pending_past_its_deadline()

    @precondition(lambda self: bool(self.tab.edge_work))
    @rule(data=st.data(), page_says_not_found=st.booleans())
    def page_edge_finishes_a_ui_step(self, data: st.DataObject, page_says_not_found: bool) -> None:
        """The page's edge finishes one command's UI work, in any order; the others wait
        (a page's own code may never answer)."""
        index = data.draw(st.integers(0, len(self.tab.edge_work) - 1))
        self.tab.finish_ui(index, page_says_not_found)

    def page_edge_finishes_every_ui_step(self) -> None:
        while self.tab.edge_work:
            self.tab.finish_ui(0, page_says_not_found=False)

    # -- documents and bindings -----------------------------------------------------------

    @rule(
        event=st.sampled_from(
            ["page says bye", "assistant says bye", "child reloads", "child reloads restored"]
        ),
        binds=st.sampled_from(["at once", "as the port delivers", "later"]),
    )
    def a_document_leaves_or_reloads(self, event: str, binds: str) -> None:
        """A side's document goes away and says `bye` (the page's, or the assistant's), or
        the child frame loads a new document: a new page instance, or an assistant with
        its saved state (same conversation) or with none (a new one). The embedder binds
        the new document at once, with the handshake's messages still on their way, or
        later."""
        if event.endswith("bye"):
            side: Side = "page" if event.startswith("page") else "assistant"
            session = self.tab.page if side == "page" else self.tab.assistant
            self.tab.run(side, session.bye())
            return
        self.child_document_reloads(restored=event.endswith("restored"))
        if binds != "later":
            self.embedder_binds_the_child(deliver=binds == "at once")

    def child_document_reloads(self, *, restored: bool) -> None:
        self.reloads += 1
        self.child_unbound = True
        if self.child == "page":
            instance_id = f"page-{self.reloads + 1}"
            self.tab.reload_page(instance_id)
            self.page_model = PageModel(instance_id)
            self.render_all()
            return
        saved = [m for m in self.tab.assistant_edge if m.get("kind") == "persist"]
        instance_id = f"asst-{self.reloads + 1}"
        if restored and saved:
            self.tab.reload_assistant(instance_id)
            self.tab.assistant.restore(json.loads(str(saved[-1]["text"])))
        else:
            self.conversations += 1
            self.tab.reload_assistant(instance_id, f"conv-{self.conversations}")
        # What a reloaded assistant knows of the page instance's revisions is its restored
        # chip's (8.7); one with no chip saved starts from nothing.
        chip = self.tab.assistant.pinned
        self.pinned_floor = {} if chip is None else {chip.page_instance_id: chip.selection_revision}
        self.last_revision.clear()
        self.commands.clear()
        self.records.clear()
        self.command_ids = re.compile(re.escape(instance_id) + r"-\d+")
        self.run_id = self.task = None
        self.ticked_at = None
        self.pinned_seen = self.tab.assistant.pinned

    @precondition(lambda self: self.child_unbound)
    @rule(deliver=st.booleans())
    def embedder_binds_the_child_later(self, deliver: bool) -> None:
        self.embedder_binds_the_child(deliver=deliver)

    def embedder_binds_the_child(self, *, deliver: bool) -> None:
        """The new document's `ready` came: the embedder loads it with a fresh nonce and
        the two bind (here or as the port delivers `connected` and `bound`)."""
        self.child_unbound = False
        self.tab.handshake(deliver=deliver)
        self.narrowed()

    @rule(data=st.data())
    def an_earlier_command_arrives_again(self, data: st.DataObject) -> None:
        """A command the page may have seen comes again on the current link: it is
        answered with its first receipt and never applied twice (step 4)."""
        sent = [m for side, m in self.tab.sent if side == "assistant" and m["type"] == "command"]
        if sent:
            self.tab.replay("page", data.draw(st.sampled_from(sent)))

    @rule(data=st.data())
    def an_earlier_context_arrives_again(self, data: st.DataObject) -> None:
        """A page that repeats itself sends one of its earlier contexts of this
        conversation again (the last one, if it sent no other): a same or older revision
        never overwrites what the assistant holds (section 4, 8.7)."""
        sent = [
            m
            for side, m in self.tab.sent
            if side == "page"
            and m["type"] in ("context", "selection-cleared")
            and m["pageInstanceId"] == self.tab.page.page_instance_id
            and m["conversationId"] == self.tab.assistant.conversation_id
        ]
        if sent:
            self.tab.replay("assistant", data.draw(st.sampled_from(sent[:-1] or sent)))

    # -- the checks -----------------------------------------------------------------------

    def check_apply(self, instruction: Mapping[str, object]) -> None:
        """The page hands its edge a command only if every step of section 5 lets it."""
        page = self.tab.page
        model = self.page_model
        command_id = str(instruction["commandId"])
        [command] = [
            m
            for side, m in self.tab.sent
            if side == "assistant" and m["type"] == "command" and m["messageId"] == command_id
        ][:1]
        assert page.binding is not None
        assert command["conversationId"] == page.binding.conversation_id
        assert command["pageInstanceId"] == model.instance_id == page.page_instance_id
        basis = command["basisRevision"]
        assert isinstance(basis, int)
        assert instruction["basisRevision"] == basis
        target = command["target"]
        assert isinstance(target, dict)
        component = str(target["componentId"])
        assert basis in model.history, "a revision this page instance issued"
        assert model.views.get(component) is not None, f"{command_id} for a component not shown"
        assert model.history[basis].get(component) == model.views.get(component), (
            f"{command_id} applied though its view changed since revision {basis}"
        )
        ref = target.get("resourceRef")
        assert ref is None or ref in model.rendered.get(component, ())
        assert command_id not in model.applied, f"{command_id} applied twice"
        model.applied.add(command_id)

    def check_no_layer_pending_past_its_deadline(self) -> None:
        if self.ticked_at is None:
            return
        for command_id, sent in self.commands.items():
            for layer, record in self.tab.assistant.ledger.get(command_id).items():
                if record.state == "pending":
                    assert sent.at + DEADLINES_MS[layer] >= self.ticked_at, (
                        f"{command_id} {layer} still pending past its deadline"
                    )

    @invariant()
    def settled_layers_never_change_and_success_is_earned(self) -> None:
        ledger = self.tab.assistant.ledger
        done = {
            instruction["commandId"]
            for _, _, status, instruction in self.tab.dom_done
            if status == "applied"
        }
        resolved = {
            command_id
            for receipt in (m for _, side, m in self.tab.posted if side == "page")
            if receipt["type"] == "receipt"
            and receipt["layer"] == "received"
            and receipt["status"] == "applied"
            for command_id in [receipt["commandId"]]
        }
        for command_id, sent in self.commands.items():
            layers = ledger.get(command_id)
            for layer, record in layers.items():
                before = self.records.get((command_id, layer))
                if before is not None and before.state != "pending":
                    assert (record.state, record.reason, record.settled_at) == (
                        before.state,
                        before.reason,
                        before.settled_at,
                    ), f"{command_id} {layer} changed after it settled: {before} -> {record}"
                    if before.late:
                        assert record == before
                assert not (record.late and record.state != "unconfirmed")
                received = layers["received"]
                if layer == "ui" and received.state not in ("pending", "applied"):
                    # The UI work will not happen, or was reported unconfirmed (8.6).
                    assert record.state == received.state, f"{command_id}: {layers}"
                self.records[(command_id, layer)] = record
                if record.state != "applied":
                    continue
                assert sent.link is not None, "a command never sent is never applied"
                on_time = [
                    delivered_at
                    for link, to, m, delivered_at in self.tab.delivered
                    if to == "assistant"
                    and link == sent.link
                    and m["type"] == "receipt"
                    and m["commandId"] == command_id
                    and m["layer"] == layer
                    and m["status"] == "applied"
                    and delivered_at <= sent.at + DEADLINES_MS[layer]
                ]
                assert on_time, f"{command_id} {layer} applied with no receipt on time"
                if layer == "ui":
                    assert layers["received"].state == "applied"
                    assert command_id in done, f"{command_id} ui applied, but no UI work done"
                else:
                    assert command_id in resolved

    @invariant()
    def the_page_shares_a_revision_once_per_binding_and_conversation(self) -> None:
        """On one link and conversation, each share is of a newer revision (8.7)."""
        last: dict[tuple[int, object], int] = {}
        for link, side, message in self.tab.posted:
            if side != "page" or message["type"] not in ("context", "selection-cleared"):
                continue
            revision = message["selectionRevision"]
            assert isinstance(revision, int)
            key = (link, message["conversationId"])
            assert revision > last.get(key, 0), f"revision {revision} shared again on {key}"
            last[key] = revision

    @invariant()
    def a_command_of_a_connection_that_ended_is_not_pending(self) -> None:
        """In-flight commands of an old connection become unconfirmed (section 2, step 7;
        8.6: a command issued while unbound waits only for its deadline)."""
        assistant = self.tab.assistant
        link = self.tab.link("assistant") if assistant.binding is not None else None
        for command_id, sent in self.commands.items():
            if sent.link is None or sent.link == link:
                continue
            for layer, record in assistant.ledger.get(command_id).items():
                assert record.state != "pending", f"{command_id} {layer} pending on an old link"

    @invariant()
    def the_page_does_a_commands_ui_work_at_most_once(self) -> None:
        ids = [instruction["commandId"] for _, _, _, instruction in self.tab.dom_done]
        assert len(ids) == len(set(ids))

    @invariant()
    def every_mark_on_the_page_is_of_the_conversation_it_serves(self) -> None:
        """A new conversation takes the marks of the one left off the page (8.14)."""
        page = self.tab.page
        drawn = {
            (instruction["componentId"], instruction["resourceRef"])
            for instance, conversation, status, instruction in self.tab.dom_done
            if instance == page.page_instance_id
            and conversation == page.resolver.conversation_id
            and instruction["action"] == "highlight"
            and status == "applied"
        }
        for component_id, marks in self.tab.dom.highlights.items():
            for ref in marks:
                assert (component_id, ref) in drawn, f"{component_id} {ref} marked"

    @invariant()
    def a_repeated_command_gets_its_first_receipt_and_no_second_ui_receipt(self) -> None:
        """Per page instance, every `received` receipt of a command that passed steps 1-3
        is the first one again, and a command has one `ui` receipt at most (8.5)."""
        first: dict[tuple[object, object], dict[str, object]] = {}
        ui: set[tuple[object, object]] = set()
        for side, message in self.tab.sent:
            if side != "page" or message["type"] != "receipt":
                continue
            key = (message["pageInstanceId"], message["commandId"])
            if message["layer"] == "ui":
                assert key not in ui, f"a second ui receipt for {key}"
                ui.add(key)
            elif message["reason"] not in ("conversation-mismatch", "page-instance"):
                assert first.setdefault(key, message) == message

    @invariant()
    def the_assistants_revision_never_goes_back(self) -> None:
        assistant = self.tab.assistant
        binding = assistant.binding
        if binding is not None:
            instance = binding.page_instance_id
            last = assistant.receiver.last_revision
            assert last >= self.last_revision.get(instance, 0)
            self.last_revision[instance] = last
        pinned = assistant.pinned
        if pinned is self.pinned_seen or pinned is None:
            self.pinned_seen = pinned
            return
        self.pinned_seen = pinned
        instance = pinned.page_instance_id
        assert pinned.selection_revision >= self.pinned_floor.get(instance, 0)
        self.pinned_floor[instance] = pinned.selection_revision
        # A context taken from the port: the bound page instance sent it, so, in the
        # assistant's conversation, and it is the receiver's last revision.
        assert binding is not None
        assert instance == binding.page_instance_id
        assert pinned.conversation_id == assistant.conversation_id
        assert pinned.selection_revision == assistant.receiver.last_revision
        sent = [
            m
            for side, m in self.tab.sent
            if side == "page"
            and m["type"] == "context"
            and m["pageInstanceId"] == instance
            and m["selectionRevision"] == pinned.selection_revision
        ]
        wire = json.loads(pinned.model_dump_json(by_alias=True, exclude_none=True))
        assert any(m["selection"] == wire["selection"] for m in sent)

    @invariant()
    def a_quiet_binding_ends_on_what_the_page_shared_last(self) -> None:
        tab, assistant = self.tab, self.tab.assistant
        page_binding, binding = tab.page.binding, assistant.binding
        link = tab.link("page")
        if (
            tab.in_flight()
            or page_binding is None
            or binding is None
            or link != tab.link("assistant")
            or not tab.live(link)
            or page_binding.conversation_id != assistant.conversation_id
        ):
            return
        shared = [
            m
            for on, side, m in tab.posted
            if on == link
            and side == "page"
            and m["type"] in ("context", "selection-cleared")
            and m["conversationId"] == assistant.conversation_id
        ]
        if not shared:
            return
        last = shared[-1]
        assert assistant.receiver.last_revision == last["selectionRevision"]
        pinned = assistant.pinned
        if last["type"] == "selection-cleared":
            assert pinned is None
        else:
            assert pinned is not None
            assert pinned.page_instance_id == tab.page.page_instance_id
            wire = json.loads(pinned.model_dump_json(by_alias=True, exclude_none=True))
            assert wire["selection"] == last["selection"]
            assert not assistant.pinned_restored

    @invariant()
    def the_chip_says_whether_its_page_reloaded(self) -> None:
        chip = self.tab.assistant.state().message["chip"]
        binding = self.tab.assistant.binding
        if isinstance(chip, dict):
            assert chip["pageReloaded"] == (
                binding is not None and binding.page_instance_id != chip["pageInstanceId"]
            )


SessionMachine.TestCase.settings = settings(
    # A quarter of the profile's examples (tests/conftest.py): each is a run of many steps.
    max_examples=max(settings().max_examples // 4, 1),
    stateful_step_count=40,
)
TestAnyInterleavingKeepsTheProtocolsPromises = SessionMachine.TestCase
