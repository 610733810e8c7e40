"""What a receipt costs the assistant's core as the conversation grows, natively.

Drives the two sessions through a ChannelPair (pagecontext.testing) on CPython. Each
sample is one "Show me": the assistant sends its two commands, the page answers each
with its receipts, and after each receipt the assistant builds what its worker posts to
the panel (the state, the log entries that changed, the saved state) and arms its
deadline timer. Samples are taken after 0, 100, 1,000 and 5,000 earlier commands (the
log keeps 100 entries; the ledger's records grow with every command).

    PYTHONPATH=pysrc .venv/bin/python bench/session.py [--out FILE]

Prints a table (median microseconds per Show me) and writes JSON. Run it in two
checkouts to compare builds: it uses only the sessions' public API.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from results_file import write_results

from pagecontext.session import AssistantSession, Effect, Refresh
from pagecontext.testing import ChannelPair, Side

ROWS: Final = ["row:1", "row:2", "row:3"]
SAMPLES: Final = 200
EARLIER: Final = (0, 100, 1_000, 5_000)


class BenchPair(ChannelPair):
    """A ChannelPair whose assistant refreshes the panel as its worker does: once per
    batch of effects that asked for it, through `panel`."""

    panel: Panel | None = None

    def run(self, side: Side, effects: Iterable[Effect]) -> None:
        effects = list(effects)
        super().run(side, [effect for effect in effects if not isinstance(effect, Refresh)])
        if self.panel is not None and any(isinstance(effect, Refresh) for effect in effects):
            self.panel.refresh()


def bound_pair() -> BenchPair:
    """A bound pair whose assistant has pinned row:2."""
    pair = BenchPair()
    pair.render("orders", ROWS, filters={}, shareable=[("amount", "EUR")])
    pair.run("page", pair.page.on_select("orders", "row:2", {"amount": 1250}))
    pair.run("page", pair.page.share())
    pair.pump()
    return pair


class Panel:
    """What the assistant's worker builds for the panel after a receipt."""

    def __init__(self, assistant: AssistantSession) -> None:
        self.assistant = assistant
        self.shown: dict[str, str] = {}
        self.changed: list[Any] = []

    def refresh(self) -> None:
        assistant = self.assistant
        assistant.edge_message("state")
        composer: Any = assistant.composer
        if hasattr(composer, "log_changes"):
            self.shown, self.changed = composer.log_changes(self.shown)
        else:  # builds whose worker serialized every entry on each refresh
            log = composer.log
            shown = {str(entry["id"]): json.dumps(entry, sort_keys=True) for entry in log}
            self.changed = [
                entry for entry in log if self.shown.get(entry["id"]) != shown[entry["id"]]
            ]
            self.shown = shown
        persist = assistant.edge_message("persist")
        if "value" in persist:  # builds that left the saved state's JSON to the worker
            json.dumps(persist["value"])
        assistant.ledger.next_deadline()


def show_me(pair: BenchPair) -> None:
    """One Show me: its commands delivered, the receipts back, the panel refreshed."""
    pair.run("assistant", pair.assistant.show())
    pair.pump()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/session.json"))
    args = parser.parse_args(argv)
    pair = bound_pair()
    results: dict[str, Any] = {"samples_each": SAMPLES, "after_earlier_commands": {}}
    done = 0
    print("one Show me (2 commands, their receipts, a panel refresh per receipt), CPython")
    for earlier in EARLIER:
        while done < earlier:
            show_me(pair)
            done += 2
        pair.panel = Panel(pair.assistant)
        times = []
        for _ in range(SAMPLES):
            start = time.perf_counter()
            show_me(pair)
            times.append((time.perf_counter() - start) * 1e6)
            done += 2
        pair.panel = None
        median = statistics.median(times)
        results["after_earlier_commands"][str(earlier)] = {
            "median_us": round(median, 1),
            "min_us": round(min(times), 1),
            "max_us": round(max(times), 1),
        }
        print(f"  after {earlier:>5} earlier commands: median {median:8.0f} us")
    write_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
