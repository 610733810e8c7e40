"""The page's command resolver: the normative resolution order of docs/protocol.md section 5.

This module owns the decision on every command that reaches the page: which receipt it
gets at the `received` layer, whether the UI work may happen, and the replay of the
original receipt for a repeated commandId. The UI work itself is the caller's.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from pydantic import ValidationError

from pagecontext.errors import LocalProtocolError, MessageRejected
from pagecontext.models import (
    DEFAULT_LIMITS,
    CommandMessage,
    Limits,
    ReceiptMessage,
    ReceiptStatus,
    parse_message,
)
from pagecontext.tracker import SelectionTracker

__all__ = ["CommandResolver", "RenderedObjects", "Resolution"]


class RenderedObjects(Protocol):
    """The page's own registry of what is rendered now."""

    def is_rendered(self, component_id: str, resource_ref: str | None) -> bool:
        """Return whether the object (or, for None, the component itself) is rendered."""
        ...


@dataclass(frozen=True)
class Resolution:
    """The outcome of one command.

    `receipt` is the `received`-layer receipt to send (None only when the input was
    dropped). `apply` is the command to carry out, set only when it was applied at the
    received layer; the caller does the UI work and then sends `ui_receipt(...)`.
    `replayed` marks a repeated commandId answered with its original receipt.
    """

    receipt: ReceiptMessage | None
    apply: CommandMessage | None = None
    replayed: bool = False


class CommandResolver:
    """Resolves commands against the tracker's revisions and the rendered objects.

    Receipts are remembered for the last `remembered` commandIds that got past steps 1-3
    (a command for another conversation or page instance is not this page's command, so
    it never takes a place in the memory, and a flood of such messages cannot evict
    real receipts).
    """

    def __init__(
        self,
        *,
        tracker: SelectionTracker,
        rendered: RenderedObjects,
        new_id: Callable[[], str],
        limits: Limits = DEFAULT_LIMITS,
        remembered: int = 1024,
    ) -> None:
        self._tracker = tracker
        self._rendered = rendered
        self._new_id = new_id
        self._limits = limits
        self._remembered_size = remembered
        self._receipts: OrderedDict[str, ReceiptMessage] = OrderedDict()
        self._page_instance_id: str | None = None
        self._conversation_id: str | None = None
        self._counts: Counter[str] = Counter()
        self._dropped = 0

    @property
    def dropped(self) -> int:
        """How many inputs were dropped without a receipt (no readable messageId)."""
        return self._dropped

    @property
    def counts(self) -> Mapping[str, int]:
        """Outcomes per reason code; a replay counts as "replayed"."""
        return MappingProxyType(self._counts)

    @property
    def conversation_id(self) -> str | None:
        """The conversation served (the last `bind`'s), or None before any."""
        return self._conversation_id

    def bind(self, page_instance_id: str, conversation_id: str) -> None:
        """Serve this page instance and conversation (again on a `conversation` message)."""
        self._page_instance_id = page_instance_id
        self._conversation_id = conversation_id

    def resolve(self, raw: object) -> Resolution:
        """Resolve one raw port message by docs/protocol.md section 5, steps 1-9, in order.

        Returns the Resolution. Raises LocalProtocolError if called before bind().
        """
        if self._page_instance_id is None or self._conversation_id is None:
            raise LocalProtocolError("can't resolve a command in state unbound: call bind()")
        # 1. Not a valid command: rejected if a messageId can be read, else dropped.
        try:
            command = parse_message(raw, self._limits)
        except MessageRejected as rejected:
            return self.refuse(rejected)
        if not isinstance(command, CommandMessage):
            return self._answer(command.message_id, "rejected", "not-a-command")
        # 2. Another conversation.
        if command.conversation_id != self._conversation_id:
            return self._answer(command.command_id, "rejected", "conversation-mismatch")
        # 3. Another page instance (an earlier load of this page, typically).
        if command.page_instance_id != self._page_instance_id:
            return self._answer(command.command_id, "stale-context", "page-instance")
        # 4. Seen before: the original receipt again, nothing applied.
        original = self._receipts.get(command.command_id)
        if original is not None:
            self._receipts.move_to_end(command.command_id)
            self._counts["replayed"] += 1
            return Resolution(receipt=original, replayed=True)
        # 5. A revision this page never issued.
        basis = command.basis_revision
        if basis > self._tracker.latest_revision:
            return self._remember(self._answer(command.command_id, "rejected", "future-revision"))
        # 6. Out of the retained history.
        if not self._tracker.is_retained(basis):
            return self._remember(
                self._answer(command.command_id, "stale-context", "revision-evicted")
            )
        # 7. The component's view changed since the basis (a new selection alone does not).
        component_id = command.target.component_id
        if self._tracker.view_at(basis, component_id) != self._tracker.current_view(component_id):
            return self._remember(self._answer(command.command_id, "stale-context", "view-changed"))
        # 8. The target is not rendered now (looked up in the registry, never as a selector).
        if not self._rendered.is_rendered(component_id, command.target.resource_ref):
            return self._remember(self._answer(command.command_id, "not-found", "not-rendered"))
        # 9. Apply.
        applied = self._answer(command.command_id, "applied", "ok", apply=command)
        return self._remember(applied)

    def refuse(self, rejected: MessageRejected) -> Resolution:
        """Step 1 for a message that is not a valid command: answered `rejected` with its
        reason if its messageId can be read, else dropped; counted either way. Raises
        LocalProtocolError if called before bind()."""
        if self._page_instance_id is None or self._conversation_id is None:
            raise LocalProtocolError("can't refuse a command in state unbound: call bind()")
        if rejected.message_id is None:
            self._dropped += 1
            self._counts[rejected.reason] += 1
            return Resolution(receipt=None)
        return self._answer(rejected.message_id, "rejected", rejected.reason)

    def ui_receipt(
        self,
        command_id: str,
        status: ReceiptStatus,
        reason: str,
        detail: str | None = None,
    ) -> ReceiptMessage:
        """Return the `ui`-layer receipt for a command whose UI work the caller finished.

        It is not remembered for replay: a repeated commandId is answered with its
        original `received` receipt (docs/protocol.md section 4) and its UI work is never
        done twice. Raises LocalProtocolError before bind() or for an invalid reason or
        detail.
        """
        return self._receipt(command_id, "ui", status, reason, detail)

    def _answer(
        self,
        command_id: str,
        status: ReceiptStatus,
        reason: str,
        apply: CommandMessage | None = None,
    ) -> Resolution:
        self._counts[reason] += 1
        receipt = self._receipt(command_id, "received", status, reason, None)
        return Resolution(receipt=receipt, apply=apply)

    def _remember(self, resolution: Resolution) -> Resolution:
        receipt = resolution.receipt
        assert receipt is not None  # only answered resolutions are remembered
        self._receipts[receipt.command_id] = receipt
        while len(self._receipts) > self._remembered_size:
            self._receipts.popitem(last=False)
        return resolution

    def _receipt(
        self,
        command_id: str,
        layer: str,
        status: ReceiptStatus,
        reason: str,
        detail: str | None,
    ) -> ReceiptMessage:
        if self._page_instance_id is None or self._conversation_id is None:
            raise LocalProtocolError("can't build a receipt in state unbound: call bind()")
        if detail is not None and len(detail) > self._limits.max_detail_chars:
            raise LocalProtocolError("can't build a receipt: detail over the limit")
        try:
            return ReceiptMessage.model_validate(
                {
                    "message_id": self._new_id(),
                    "page_instance_id": self._page_instance_id,
                    "conversation_id": self._conversation_id,
                    "command_id": command_id,
                    "layer": layer,
                    "status": status,
                    "reason": reason,
                    "detail": detail,
                }
            )
        except ValidationError as error:
            raise LocalProtocolError(f"can't build a receipt: {error}") from None
