"""The assistant's receipt ledger: what each command's layers really confirmed (section 6).

This module owns the per-layer record of every command the assistant sent: `pending`
until a receipt arrives on the connection the command was sent on, or `unconfirmed` once
its deadline passes or its connection drops. A business action is recorded the same way,
with the server's answers as its `received` (confirmation issued) and `business` (action
done) layers. Nothing unconfirmed ever turns into
success: a late receipt is recorded as late, beside the `unconfirmed` state. A `received`
layer that ends unconfirmed ends the later layers with it (docs/protocol.md 8.6).

The ledger remembers the last CAPACITY commands: the oldest whose layers have all left
`pending` are forgotten as new ones are recorded, and a receipt for a forgotten command
is ignored like one for an unknown command. Its work per message does not grow with the
conversation: the deadline checks look only at the commands still pending, and
`take_changed` names the commands whose records changed, so the caller copies only those.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from types import MappingProxyType
from typing import Final, Literal

from pagecontext.errors import LocalProtocolError
from pagecontext.models import ReceiptMessage

__all__ = ["CAPACITY", "LayerName", "LayerRecord", "LayerState", "ReceiptLedger"]

# Commands remembered. At least the conversation log's length (composer.MAX_LOG_HELD),
# so that every command the log shows keeps its records.
CAPACITY: Final = 1_000

LayerName = Literal["received", "ui", "business"]
LayerState = Literal["pending", "applied", "stale-context", "not-found", "rejected", "unconfirmed"]

_DEFAULT_DEADLINES_MS: Mapping[str, float] = MappingProxyType(
    {"received": 3000, "ui": 10000, "business": 10000}
)


@dataclass(frozen=True)
class LayerRecord:
    """One layer of one command.

    `reason` is the receipt's reason, or "deadline" / "connection-closed" for an
    unconfirmed layer. `late` and `late_status` record a receipt that came after the
    layer was unconfirmed; `settled_at` is when the state left `pending` (epoch ms).
    """

    state: LayerState
    reason: str | None = None
    late: bool = False
    late_status: str | None = None
    settled_at: float | None = None


@dataclass
class _Entry:
    connection_id: int
    sent_at: float
    layers: dict[LayerName, LayerRecord]
    deadlines_ms: Mapping[str, float]
    # A layer whose request went out after the command's (`start`): when it did.
    started: dict[LayerName, float] = field(default_factory=dict)


_PENDING = LayerRecord(state="pending")


def _expired(now: float) -> LayerRecord:
    return LayerRecord(state="unconfirmed", reason="deadline", settled_at=now)


class ReceiptLedger:
    """Records commands and their receipts per layer. `clock` returns epoch milliseconds."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        deadlines_ms: Mapping[str, float] = _DEFAULT_DEADLINES_MS,
        capacity: int = CAPACITY,
    ) -> None:
        self._clock = clock
        self._deadlines_ms = dict(deadlines_ms)
        self._capacity = capacity
        self._entries: dict[str, _Entry] = {}
        # The commands with a pending layer, and those whose records changed since the
        # last take_changed(): ordered sets (dicts to None), oldest first.
        self._pending: dict[str, None] = {}
        self._changed: dict[str, None] = {}
        self._ignored = 0

    @property
    def ignored(self) -> int:
        """Receipts ignored: unknown command, other connection, a layer already settled,
        or (counted by the session through `ignore`) a receipt stamped for another binding."""
        return self._ignored

    @property
    def settling(self) -> bool:
        """Whether a command or an action has a layer still pending."""
        return bool(self._pending)

    def ignore(self) -> None:
        """Count a receipt the caller refused before it reached the ledger."""
        self._ignored += 1

    def record(
        self,
        command_id: str,
        connection_id: int,
        layers: Sequence[LayerName] = ("received", "ui"),
        deadlines_ms: Mapping[str, float] | None = None,
    ) -> None:
        """Record a command as sent now on `connection_id`, every layer pending, with the
        ledger's deadlines or its own (`deadlines_ms`, per layer).

        Raises LocalProtocolError for a command id already recorded or a layer with no
        deadline.
        """
        if command_id in self._entries:
            raise LocalProtocolError(f"can't record command {command_id!r}: already recorded")
        deadlines = self._deadlines_ms if deadlines_ms is None else deadlines_ms
        missing = [layer for layer in layers if layer not in deadlines]
        if missing:
            raise LocalProtocolError(f"can't record command {command_id!r}: no deadline {missing}")
        self._entries[command_id] = _Entry(
            connection_id=connection_id,
            sent_at=self._clock(),
            layers=dict.fromkeys(layers, _PENDING),
            deadlines_ms=deadlines,
        )
        self._pending[command_id] = None
        self._changed[command_id] = None
        self._forget_oldest()

    def restore(
        self, command_id: str, connection_id: int, layers: Mapping[LayerName, LayerRecord]
    ) -> None:
        """Record a command of an earlier document (a saved conversation) with its layers
        as they ended, so that what is learned of it later (a business action checked
        with the server) is recorded as for any other: late, never as success. Nothing
        for an id already recorded or a layer still pending."""
        if command_id in self._entries or any(r.state == "pending" for r in layers.values()):
            return
        self._entries[command_id] = _Entry(
            connection_id=connection_id,
            sent_at=self._clock(),
            layers=dict(layers),
            deadlines_ms=self._deadlines_ms,
        )
        self._forget_oldest()

    def found_later(self, command_id: str, layer: LayerName) -> LayerRecord | None:
        """A layer recorded late as `not-found` (asked, the server had no record of it
        yet) that the server now shows done: recorded late as `applied` instead, still
        `unconfirmed`, never success. None, and nothing changed, for any other layer."""
        entry = self._entries.get(command_id)
        current = entry.layers.get(layer) if entry is not None else None
        if entry is None or current is None or current.late_status != "not-found":
            return None
        updated = replace(current, late_status="applied")
        self._set(command_id, entry, layer, updated)
        return updated

    def start(self, command_id: str, layer: LayerName) -> None:
        """The request that settles `layer` of `command_id` went out now, after the
        command's own (a business action's second step): its deadline counts from now.
        Nothing for an unknown command or a layer that is not pending."""
        entry = self._entries.get(command_id)
        if entry is None or entry.layers.get(layer) != _PENDING:
            return
        entry.started[layer] = self._clock()

    def _forget_oldest(self) -> None:
        """Forget the oldest settled commands past the capacity (pending ones stay)."""
        excess = len(self._entries) - self._capacity
        if excess <= 0:
            return
        # Among the oldest `excess + pending` commands, at least `excess` are settled,
        # unless more than the capacity are pending.
        window = islice(self._entries, excess + len(self._pending))
        settled = [command_id for command_id in window if command_id not in self._pending]
        for command_id in settled[:excess]:
            del self._entries[command_id]
            self._changed.pop(command_id, None)

    def take_changed(self) -> list[str]:
        """Return the commands whose records changed since the last call (recorded,
        settled, expired, dropped), oldest first, and start over."""
        changed = list(self._changed)
        self._changed.clear()
        return changed

    def _set(self, command_id: str, entry: _Entry, layer: LayerName, record: LayerRecord) -> None:
        entry.layers[layer] = record
        self._changed[command_id] = None
        if all(other.state != "pending" for other in entry.layers.values()):
            self._pending.pop(command_id, None)

    def on_receipt(self, receipt: ReceiptMessage, connection_id: int) -> LayerRecord | None:
        """Apply a receipt that arrived on `connection_id`; return the layer's new record.

        Returns None (and counts it in `ignored`) for an unknown command, a different
        connection than the command was sent on, a layer the command does not have, a
        layer already settled, or a layer after `received` while `received` is pending.
        """
        entry = self._entries.get(receipt.command_id)
        if entry is None or entry.connection_id != connection_id:
            self._ignored += 1
            return None
        return self._settle(
            receipt.command_id, entry, receipt.layer, receipt.status, receipt.reason
        )

    def settle(
        self, command_id: str, layer: LayerName, status: LayerState, reason: str
    ) -> LayerRecord | None:
        """Apply an outcome that did not come as a page receipt: the server's answer to a
        business action (its `received` and `business` layers). The same rules as
        `on_receipt`: past the deadline it is recorded late, never as success.

        Returns None (and counts it in `ignored`) for an unknown command or layer, a layer
        already settled, or a layer after `received` while `received` is pending.
        """
        entry = self._entries.get(command_id)
        if entry is None:
            self._ignored += 1
            return None
        return self._settle(command_id, entry, layer, status, reason)

    def _settle(
        self, command_id: str, entry: _Entry, layer: LayerName, status: LayerState, reason: str
    ) -> LayerRecord | None:
        current = entry.layers.get(layer)
        if current is None:
            self._ignored += 1
            return None
        now = self._clock()
        received = entry.layers.get("received")
        if layer != "received" and received is not None and received.state == "pending":
            if now <= self._deadline(entry, "received"):
                # A later layer's outcome before `received`: a page answers `received`
                # first on the ordered port, so this one skipped it, and whatever
                # `received` then says must not be outranked by a success recorded now.
                self._ignored += 1
                return None
            # `received` is past its deadline (expire() has not run yet): it ends
            # unconfirmed, and the later layers with it, before this outcome is taken.
            self._set(command_id, entry, "received", _expired(now))
            self._end_later_layers(entry, _expired(now))
            current = entry.layers[layer]
        if current.state == "unconfirmed" and not current.late:
            updated = replace(current, late=True, late_status=status)
        elif current.state != "pending":
            self._ignored += 1
            return None
        elif now > self._deadline(entry, layer) and status != "unconfirmed":
            # Past the deadline even if expire() has not run yet: late, never success.
            # (No answer, `unconfirmed`, is no late answer: past the deadline it ends the
            # layer as the deadline would, with its own reason, and not late, so that a
            # business action whose request failed as its deadline passed can still be
            # checked with the server.)
            updated = LayerRecord(
                state="unconfirmed",
                reason="deadline",
                late=True,
                late_status=status,
                settled_at=now,
            )
            if layer == "received":
                self._end_later_layers(entry, _expired(now))
        else:
            updated = LayerRecord(state=status, reason=reason, settled_at=now)
            if layer == "received" and status != "applied":
                # The later layers will not happen, so they share the outcome.
                self._end_later_layers(entry, updated)
        self._set(command_id, entry, layer, updated)
        return updated

    @staticmethod
    def _end_later_layers(entry: _Entry, record: LayerRecord) -> list[LayerName]:
        """Settle the pending layers after `received` with `record`, once `received`
        ended with anything but an on-time `applied`: their work will not happen, or was
        already reported unconfirmed (a `ui` receipt after that is late, never success).
        Returns the layers settled."""
        ended: list[LayerName] = []
        for later, current in entry.layers.items():
            if later != "received" and current.state == "pending":
                entry.layers[later] = record
                ended.append(later)
        return ended

    def expire(self) -> list[tuple[str, LayerName]]:
        """Turn pending layers past their deadline into `unconfirmed`; return those changed."""
        now = self._clock()
        changed: list[tuple[str, LayerName]] = []
        for command_id in list(self._pending):
            entry = self._entries[command_id]
            for layer in list(entry.layers):
                if entry.layers[layer].state != "pending" or now <= self._deadline(entry, layer):
                    continue
                expired = _expired(now)
                ended = self._end_later_layers(entry, expired) if layer == "received" else []
                self._set(command_id, entry, layer, expired)
                changed += [(command_id, name) for name in (layer, *ended)]
        return changed

    def drop_connection(self, connection_id: int) -> None:
        """The connection ended: every pending layer of its commands is `unconfirmed`."""
        now = self._clock()
        dropped = LayerRecord(state="unconfirmed", reason="connection-closed", settled_at=now)
        for command_id in list(self._pending):
            entry = self._entries[command_id]
            if entry.connection_id != connection_id:
                continue
            for layer, record in list(entry.layers.items()):
                if record.state == "pending":
                    self._set(command_id, entry, layer, dropped)

    def get(self, command_id: str) -> Mapping[LayerName, LayerRecord]:
        """Return the command's records per layer. Raises KeyError for an unknown command."""
        return MappingProxyType(dict(self._entries[command_id].layers))

    def next_deadline(self) -> float | None:
        """Return the earliest deadline (epoch ms) of any pending layer, or None."""
        deadlines = [
            self._deadline(entry, layer)
            for entry in map(self._entries.__getitem__, self._pending)
            for layer, record in entry.layers.items()
            if record.state == "pending"
        ]
        return min(deadlines, default=None)

    @staticmethod
    def _deadline(entry: _Entry, layer: LayerName) -> float:
        return entry.started.get(layer, entry.sent_at) + entry.deadlines_ms[layer]
