"""The assistant's context receiver: which page contexts it commits (docs/protocol.md section 4).

This module owns the assistant's committed context and revision monotonicity: a context
is committed only from the bound page instance and conversation, with a revision greater
than the last accepted one. Same or older revisions never overwrite; the last one sent
again, the same selection (the page shares a revision again after a new conversation or
binding), changes nothing and is not refused.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pagecontext.errors import MessageRejected
from pagecontext.models import (
    DEFAULT_LIMITS,
    ContextMessage,
    Limits,
    Message,
    Selection,
    SelectionClearedMessage,
    parse_message,
)

__all__ = ["Accepted", "ContextReceiver", "ReceiveResult", "Refused", "Repeated"]


@dataclass(frozen=True)
class Accepted:
    """The message was committed (a context) or recorded (a selection-cleared)."""

    message: ContextMessage | SelectionClearedMessage


@dataclass(frozen=True)
class Refused:
    """The message changed nothing; `reason` is a short code."""

    reason: str


@dataclass(frozen=True)
class Repeated:
    """The message is the last one committed or recorded, sent again: the same revision
    and the same selection (or none, for a selection-cleared). It changes nothing."""

    message: ContextMessage | SelectionClearedMessage


ReceiveResult = Accepted | Refused | Repeated


class ContextReceiver:
    """Commits the page's contexts, newest revision only, for one bound page instance."""

    def __init__(self, *, limits: Limits = DEFAULT_LIMITS) -> None:
        self._limits = limits
        self._page_instance_id: str | None = None
        self._conversation_id: str | None = None
        self._last_revision = 0
        self._committed: ContextMessage | None = None
        self._counts: Counter[str] = Counter()

    @property
    def committed(self) -> ContextMessage | None:
        """The committed context; None before any or after a selection-cleared."""
        return self._committed

    @property
    def last_revision(self) -> int:
        """The last accepted revision of the bound page instance; 0 before any."""
        return self._last_revision

    @property
    def page_instance_id(self) -> str | None:
        """The page instance this receiver was last bound to; None before any."""
        return self._page_instance_id

    @property
    def cleared_at(self) -> tuple[str, int] | None:
        """(page instance, revision) if the last message accepted was a
        selection-cleared, as `resume_cleared` takes it back; else None."""
        if self._committed is not None or self._page_instance_id is None:
            return None
        if self._last_revision == 0:
            return None
        return (self._page_instance_id, self._last_revision)

    @property
    def counts(self) -> Mapping[str, int]:
        """Refusals per reason code."""
        return MappingProxyType(self._counts)

    def bind(self, page_instance_id: str, conversation_id: str) -> None:
        """Accept messages from this page instance, stamped with this conversation.

        Call it on binding and on every conversation change. A different page instance
        starts a new revision sequence (its revisions count from 1 again), so the last
        revision and the committed context are reset; the same page instance keeps them,
        and older revisions still never overwrite.
        """
        if page_instance_id != self._page_instance_id:
            self._last_revision = 0
            self._committed = None
        self._page_instance_id = page_instance_id
        self._conversation_id = conversation_id

    # After a child reload the call site reads better as a rebind; the rule is the same.
    rebind = bind

    def resume(self, message: ContextMessage) -> None:
        """Take `message`, the context committed before the assistant reloaded (restored
        from its saved state), as the last one of the bound page instance, if it is that
        instance's and newer than what this receiver has: the same revision with another
        selection, or an older one, is then `stale-revision`, as it was before the
        reload. Call it after `bind`."""
        if (
            message.page_instance_id == self._page_instance_id
            and message.selection_revision > self._last_revision
        ):
            self._last_revision = message.selection_revision
            self._committed = message

    def resume_cleared(self, page_instance_id: str, revision: int) -> None:
        """Take `revision`, a selection-cleared of `page_instance_id` accepted before the
        assistant reloaded (`cleared_at`, saved), as the last one of the bound page
        instance, with nothing committed, if it is that instance's and newer than what
        this receiver has: as `resume` does for a context. Call it after `bind`."""
        if page_instance_id == self._page_instance_id and revision > self._last_revision:
            self._last_revision = revision
            self._committed = None

    def receive(self, raw: object) -> ReceiveResult:
        """Check a raw port message and commit it if it passes; return the outcome.

        Refusal reasons: the MessageRejected reason, "unexpected-type", "unbound",
        "page-instance", "conversation-mismatch", "stale-revision".
        """
        try:
            message = parse_message(raw, self._limits)
        except MessageRejected as rejected:
            return self._refuse(rejected.reason)
        return self.admit(message)

    def admit(self, message: Message) -> ReceiveResult:
        """Commit a message that already passed `parse_message` (or its fast path for
        contexts, `parse_context_json`) if it is for the bound page and newer.

        Refusal reasons: "unexpected-type", "unbound", "page-instance",
        "conversation-mismatch", "stale-revision". The last revision sent again with the
        same selection is Repeated, not refused.
        """
        if not isinstance(message, ContextMessage | SelectionClearedMessage):
            return self._refuse("unexpected-type")
        if self._page_instance_id is None:
            return self._refuse("unbound")
        if message.page_instance_id != self._page_instance_id:
            return self._refuse("page-instance")
        if message.conversation_id != self._conversation_id:
            return self._refuse("conversation-mismatch")
        if message.selection_revision <= self._last_revision:
            if message.selection_revision == self._last_revision and self._is_committed(message):
                return Repeated(message)
            return self._refuse("stale-revision")
        self._last_revision = message.selection_revision
        self._committed = message if isinstance(message, ContextMessage) else None
        return Accepted(message)

    def _is_committed(self, message: ContextMessage | SelectionClearedMessage) -> bool:
        """Whether `message` holds what was committed last (nothing, for a clear)."""
        if isinstance(message, SelectionClearedMessage):
            return self._committed is None
        committed = self._committed
        # `==` first (it is quick, and what it finds unequal is): only a selection it
        # finds equal is compared by type as well.
        return (
            committed is not None
            and committed.selection == message.selection
            and _exact(committed.selection) == _exact(message.selection)
        )

    def _refuse(self, reason: str) -> Refused:
        self._counts[reason] += 1
        return Refused(reason)


def _exact(selection: Selection) -> str:
    """`selection` as canonical JSON: equal only for the same values of the same types
    (Python finds `1 == True == 1.0`; JSON writes `1`, `true` and `1.0`)."""
    return json.dumps(selection.model_dump(mode="json"), sort_keys=True)
