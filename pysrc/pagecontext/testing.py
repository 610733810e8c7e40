"""Fakes that ship with the library: a port pair, a DOM registry, a clock and ids.

They let a page core and an assistant core talk without a browser, in tests of this
project and of projects that use it.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable

from pagecontext.models import CommandMessage, ReceiptStatus
from pagecontext.resolver import RenderedObjects

__all__ = ["FakeClock", "FakeDom", "FakePort", "counter_ids", "port_pair"]


class FakePort:
    """One end of a fake MessageChannel; create them with `port_pair()`."""

    def __init__(self) -> None:
        self.peer: FakePort | None = None
        self.closed = False
        self._inbox: list[dict[str, object]] = []

    def post(self, message: dict[str, object]) -> None:
        """Queue a deep copy of `message` to the peer.

        The JSON round trip stands in for structured clone: the receiver never shares
        objects with the sender. Like a real port, a closed channel drops it silently.
        """
        if self.closed or self.peer is None or self.peer.closed:
            return
        self.peer._inbox.append(json.loads(json.dumps(message)))

    def drain(self) -> list[dict[str, object]]:
        """Return and forget the messages received so far, oldest first."""
        messages, self._inbox = self._inbox, []
        return messages

    def close(self) -> None:
        """Close this end: nothing more is sent from or delivered to it."""
        self.closed = True
        self._inbox.clear()


def port_pair() -> tuple[FakePort, FakePort]:
    """Return two entangled ports."""
    first, second = FakePort(), FakePort()
    first.peer, second.peer = second, first
    return first, second


class FakeDom(RenderedObjects):
    """A fake registry of rendered objects per component, recording the UI work done.

    Implements `pagecontext.resolver.RenderedObjects`. A component counts as rendered
    once `render` was called for it.
    """

    def __init__(self) -> None:
        self._rendered: dict[str, set[str]] = {}
        self.highlights: dict[str, dict[str, str]] = {}
        self.located: list[tuple[str, str]] = []
        self.refreshes: Counter[str] = Counter()

    def render(self, component_id: str, refs: Iterable[str]) -> None:
        """Render these objects in the component (added to those already rendered)."""
        self._rendered.setdefault(component_id, set()).update(refs)

    def remove(self, component_id: str, ref: str) -> None:
        """Stop rendering one object, and drop its highlight."""
        self._rendered.get(component_id, set()).discard(ref)
        self.highlights.get(component_id, {}).pop(ref, None)

    def is_rendered(self, component_id: str, resource_ref: str | None) -> bool:
        """Return whether the object (or, for None, the component) is rendered."""
        refs = self._rendered.get(component_id)
        if refs is None:
            return False
        return resource_ref is None or resource_ref in refs

    def apply(self, command: CommandMessage) -> tuple[ReceiptStatus, str]:
        """Do the command's UI work; return the `ui`-layer (status, reason).

        highlight and locate need a rendered resourceRef; `focus` is exclusive within
        the component; clear-highlight clears the component; refresh counts a reload.
        """
        component_id = command.target.component_id
        ref = command.target.resource_ref
        if not self.is_rendered(component_id, ref):
            return "not-found", "not-rendered"
        if command.action in ("highlight", "locate") and ref is None:
            return "rejected", "no-resource-ref"
        if command.action == "highlight" and ref is not None:
            tone = command.params["tone"]
            marks = self.highlights.setdefault(component_id, {})
            if tone == "focus":
                for other in [key for key, value in marks.items() if value == "focus"]:
                    del marks[other]
            marks[ref] = tone
        elif command.action == "locate" and ref is not None:
            self.located.append((component_id, ref))
        elif command.action == "clear-highlight":
            self.highlights.pop(component_id, None)
        elif command.action == "refresh":
            self.refreshes[component_id] += 1
        return "applied", "ok"


class FakeClock:
    """A clock in epoch milliseconds that moves only when told to."""

    def __init__(self, start_ms: float = 1_700_000_000_000.0) -> None:
        self.now_ms = start_ms

    def __call__(self) -> float:
        return self.now_ms

    def advance(self, ms: float) -> None:
        """Move the clock forward by `ms` milliseconds."""
        self.now_ms += ms


def counter_ids(prefix: str = "m") -> Callable[[], str]:
    """Return a function giving deterministic ids: "m1", "m2", ..."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"
