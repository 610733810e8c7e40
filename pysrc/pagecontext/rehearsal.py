"""A selection's whole path, rehearsed on sessions of its own before a user makes one.

A browser worker restored from its memory snapshot has run almost none of the code a
selection needs: the first real selection pays for compiling each WebAssembly function
on its path, and runs them in the runtime's baseline tier, so it took ~100 ms more than
the ones after it (docs/performance.md). `rehearsal()` walks that path on a page session
and an assistant session joined by an in-memory link that carries JSON text, as the
browser's port listener does: an object selected and shared, the context committed, the
panel's state and conversation log built, "Show me" sent, applied on a fake DOM and
answered with receipts. Its sessions are its own: nothing reaches the frame's session,
the page, the other frame or a model.

`rehearse_handshake()` does the same for a binding: a worker runs it while it waits
for its child's `connected`, so that checking it and answering `bound` do not pay for
that code's first run (30-50 ms, docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from pagecontext.models import Scalar
from pagecontext.session import Effect, Refresh
from pagecontext.testing import ChannelPair, Side

__all__ = ["ROUNDS", "rehearsal", "rehearse_handshake"]

ROUNDS = 3
# A component like a business page's table: filtered, with values in units.
_COMPONENT = "rehearsal-table"
_REFS = ("row:1", "row:2", "row:3")
_FILTERS: dict[str, Scalar | list[Scalar]] = {
    "region": "North",
    "month": ["2026-01", "2026-12"],
}
_SHAREABLE = (("region", None), ("month", None), ("unitsSold", "units"), ("revenueEur", "EUR"))


class _Pair(ChannelPair):
    """A pair whose assistant builds the panel's messages as its worker does: once per
    step that asked for them, not once per `Refresh`."""

    def __init__(self) -> None:
        self.refreshes: set[Literal["state", "persist"]] = set()
        super().__init__(as_text=True)

    def run(self, side: Side, effects: Iterable[Effect]) -> None:
        effects = list(effects)
        for effect in effects:
            if isinstance(effect, Refresh):
                self.refreshes.add(effect.kind)
        super().run(side, [effect for effect in effects if not isinstance(effect, Refresh)])

    def posted(self) -> list[dict[str, object]]:
        """What a worker would have posted since the last call, and forget it."""
        posted = [message for _side, message in self.sent] + self.page_edge
        posted += [self.assistant.edge_message(kind) for kind in sorted(self.refreshes)]
        self.sent.clear()
        self.page_edge.clear()
        self.refreshes.clear()
        return posted


def rehearse_handshake(embedder: Side) -> ChannelPair:
    """Bind a page session and an assistant session of its own, `embedder` embedding the
    other, over an in-memory link that carries JSON text (the child's `connected`
    checked, `bound` answered and taken); return them, bound."""
    return ChannelPair(embedder=embedder, as_text=True)


def rehearsal(rounds: int = ROUNDS) -> Iterator[list[dict[str, object]]]:
    """Run the path `rounds` times, yielding after each step (a selection shared, the
    context delivered, "Show me" sent, its commands delivered and answered) what a
    worker would have posted in it, for the worker to convert as it converts what it
    posts. Run one step per task, so a real message never waits for more than one."""
    pair = _Pair()
    pair.render(_COMPONENT, _REFS, page_id="rehearsal", filters=_FILTERS, shareable=_SHAREABLE)
    # "What the AI sees" open, so that composing it is rehearsed too.
    pair.run("assistant", pair.assistant.show_preview(True))
    shown: dict[str, str] = {}
    for index in range(rounds):
        ref = _REFS[index % len(_REFS)]
        values: dict[str, Scalar] = {"region": "North", "month": "2026-03"}
        values.update(unitsSold=120 + index, revenueEur=15_300.5 + index)
        pair.run("page", pair.page.on_select(_COMPONENT, ref, values))
        pair.run("page", pair.page.share())
        yield pair.posted()
        pair.pump()
        yield pair.posted()
        pair.run("assistant", pair.assistant.show())
        yield pair.posted()
        pair.pump()
        shown, changed = pair.assistant.composer.log_changes(shown)
        yield [*pair.posted(), {"kind": "log", "ids": list(shown), "changed": changed}]
