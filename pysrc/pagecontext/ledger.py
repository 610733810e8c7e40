"""The assistant's receipt ledger: what each command's layers really confirmed (section 6).

This module owns the per-layer record of every command the assistant sent: `pending`
until a receipt arrives on the connection the command was sent on, or `unconfirmed` once
its deadline passes or its connection drops. A business action is recorded the same way,
with the server's answers as its `received` (confirmation issued) and `business` (action
done) layers. Nothing unconfirmed ever turns into
success: a late receipt is recorded as late, beside the `unconfirmed` state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Literal

from pagecontext.errors import LocalProtocolError
from pagecontext.models import ReceiptMessage

__all__ = ["LayerName", "LayerRecord", "LayerState", "ReceiptLedger"]

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


_PENDING = LayerRecord(state="pending")


class ReceiptLedger:
    """Records commands and their receipts per layer. `clock` returns epoch milliseconds."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        deadlines_ms: Mapping[str, float] = _DEFAULT_DEADLINES_MS,
    ) -> None:
        self._clock = clock
        self._deadlines_ms = dict(deadlines_ms)
        self._entries: dict[str, _Entry] = {}
        self._ignored = 0

    @property
    def ignored(self) -> int:
        """Receipts ignored: unknown command, other connection, a layer already settled,
        or (counted by the session through `ignore`) a receipt stamped for another binding."""
        return self._ignored

    def ignore(self) -> None:
        """Count a receipt the caller refused before it reached the ledger."""
        self._ignored += 1

    def record(
        self,
        command_id: str,
        connection_id: int,
        layers: Sequence[LayerName] = ("received", "ui"),
    ) -> None:
        """Record a command as sent now on `connection_id`, every layer pending.

        Raises LocalProtocolError for a command id already recorded or a layer with no
        deadline.
        """
        if command_id in self._entries:
            raise LocalProtocolError(f"can't record command {command_id!r}: already recorded")
        missing = [layer for layer in layers if layer not in self._deadlines_ms]
        if missing:
            raise LocalProtocolError(f"can't record command {command_id!r}: no deadline {missing}")
        self._entries[command_id] = _Entry(
            connection_id=connection_id,
            sent_at=self._clock(),
            layers=dict.fromkeys(layers, _PENDING),
        )

    def on_receipt(self, receipt: ReceiptMessage, connection_id: int) -> LayerRecord | None:
        """Apply a receipt that arrived on `connection_id`; return the layer's new record.

        Returns None (and counts it in `ignored`) for an unknown command, a different
        connection than the command was sent on, a layer the command does not have, or a
        layer already settled.
        """
        entry = self._entries.get(receipt.command_id)
        if entry is None or entry.connection_id != connection_id:
            self._ignored += 1
            return None
        return self._settle(entry, receipt.layer, receipt.status, receipt.reason)

    def settle(
        self, command_id: str, layer: LayerName, status: LayerState, reason: str
    ) -> LayerRecord | None:
        """Apply an outcome that did not come as a page receipt: the server's answer to a
        business action (its `received` and `business` layers). The same rules as
        `on_receipt`: past the deadline it is recorded late, never as success.

        Returns None (and counts it in `ignored`) for an unknown command or layer, or a
        layer already settled.
        """
        entry = self._entries.get(command_id)
        if entry is None:
            self._ignored += 1
            return None
        return self._settle(entry, layer, status, reason)

    def _settle(
        self, entry: _Entry, layer: LayerName, status: LayerState, reason: str
    ) -> LayerRecord | None:
        current = entry.layers.get(layer)
        if current is None:
            self._ignored += 1
            return None
        now = self._clock()
        if current.state == "unconfirmed" and not current.late:
            updated = replace(current, late=True, late_status=status)
        elif current.state != "pending":
            self._ignored += 1
            return None
        elif now > self._deadline(entry, layer):
            # Past the deadline even if expire() has not run yet: late, never success.
            updated = LayerRecord(
                state="unconfirmed",
                reason="deadline",
                late=True,
                late_status=status,
                settled_at=now,
            )
        else:
            updated = LayerRecord(state=status, reason=reason, settled_at=now)
            if layer == "received" and status != "applied":
                # The later layers will not happen, so they share the outcome.
                for later, record in entry.layers.items():
                    if later != "received" and record == _PENDING:
                        entry.layers[later] = updated
        entry.layers[layer] = updated
        return updated

    def expire(self) -> list[tuple[str, LayerName]]:
        """Turn pending layers past their deadline into `unconfirmed`; return those changed."""
        now = self._clock()
        changed: list[tuple[str, LayerName]] = []
        for command_id, entry in self._entries.items():
            for layer, record in entry.layers.items():
                if record.state == "pending" and now > self._deadline(entry, layer):
                    entry.layers[layer] = LayerRecord(
                        state="unconfirmed", reason="deadline", settled_at=now
                    )
                    changed.append((command_id, layer))
        return changed

    def drop_connection(self, connection_id: int) -> None:
        """The connection ended: every pending layer of its commands is `unconfirmed`."""
        now = self._clock()
        for entry in self._entries.values():
            if entry.connection_id != connection_id:
                continue
            for layer, record in entry.layers.items():
                if record.state == "pending":
                    entry.layers[layer] = LayerRecord(
                        state="unconfirmed", reason="connection-closed", settled_at=now
                    )

    def get(self, command_id: str) -> Mapping[LayerName, LayerRecord]:
        """Return the command's records per layer. Raises KeyError for an unknown command."""
        return MappingProxyType(dict(self._entries[command_id].layers))

    def next_deadline(self) -> float | None:
        """Return the earliest deadline (epoch ms) of any pending layer, or None."""
        deadlines = [
            self._deadline(entry, layer)
            for entry in self._entries.values()
            for layer, record in entry.layers.items()
            if record.state == "pending"
        ]
        return min(deadlines, default=None)

    def _deadline(self, entry: _Entry, layer: LayerName) -> float:
        return entry.sent_at + self._deadlines_ms[layer]
