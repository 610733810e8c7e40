"""Single-use confirmation tokens for business actions.

This module owns the rule that a business write happens only after the user confirmed
that very action: when the user confirms, the server issues a token bound to
(task id, user, action, resource ref) with an expiry; the action consumes it once.

Rules:
- A token is spent by its first presentation, whether it succeeds or not: a token
  shown with another task, user, action or ref is refused *and* spent, so a leaked
  token cannot be probed for the binding it holds. The user confirms again. A spent
  token is refused as `used` afterwards, an expired one as `expired`.
- Refusal reasons, checked in this order: `unknown` (never issued, or forgotten to keep
  the registry bounded), `used`, `expired`, `wrong-task`, `wrong-user`, `wrong-action`,
  `wrong-ref`.
- Bounded: at most `max_live_per_user` unspent tokens per user (issuing one more drops
  that user's oldest, so no user's confirmations push out another's), at most
  `max_live` in all (the oldest is dropped, expired ones first), and `max_spent`
  remembered spent ones; a forgotten token reads as `unknown`.
- An action that did not happen after its token was spent (its write failed before
  anything was written) may `refund` it: the token is live again, with its binding and
  expiry, so that the user's confirmation holds for a retry.
- Only a SHA-256 digest of each token is kept, so the registry never holds a usable
  token and a lookup's timing says nothing about one.

Pure: the clock (epoch ms) and the token factory are injected; the server passes
`secrets.token_urlsafe`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from pagecontext.errors import LocalProtocolError, PagecontextError

__all__ = [
    "DEFAULT_TTL_MS",
    "ConfirmationBinding",
    "ConfirmationRefused",
    "ConfirmationRegistry",
    "IssuedConfirmation",
    "RefusalReason",
    "SpentConfirmation",
]

DEFAULT_TTL_MS: Final = 120_000.0
_DEFAULT_MAX_LIVE: Final = 1024
_DEFAULT_MAX_LIVE_PER_USER: Final = 16
_DEFAULT_MAX_SPENT: Final = 4096

RefusalReason = Literal[
    "unknown", "used", "expired", "wrong-task", "wrong-user", "wrong-action", "wrong-ref"
]


@dataclass(frozen=True)
class ConfirmationBinding:
    """What a token confirms: one action on one resource, for one user, in one task."""

    task_id: str
    user: str
    action: str
    resource_ref: str


@dataclass(frozen=True)
class IssuedConfirmation:
    """A token handed to the user's assistant, and when it stops working (epoch ms)."""

    token: str
    expires_at_ms: float


class ConfirmationRefused(PagecontextError):  # noqa: N818 - reads as the outcome it is
    """A confirmation token was not accepted; `reason` says why (see module docstring)."""

    def __init__(self, reason: RefusalReason) -> None:
        super().__init__(f"confirmation refused: {reason}")
        self.reason: RefusalReason = reason


@dataclass(frozen=True)
class _Live:
    binding: ConfirmationBinding
    expires_at_ms: float


@dataclass(frozen=True)
class SpentConfirmation:
    """A token `consume` spent, which `refund` can make live again."""

    key: str
    live: _Live


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ConfirmationRegistry:
    """Issues and consumes single-use confirmation tokens (rules in the module docstring)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        token_factory: Callable[[], str],
        ttl_ms: float = DEFAULT_TTL_MS,
        max_live: int = _DEFAULT_MAX_LIVE,
        max_live_per_user: int = _DEFAULT_MAX_LIVE_PER_USER,
        max_spent: int = _DEFAULT_MAX_SPENT,
    ) -> None:
        if ttl_ms <= 0 or max_live < 1 or max_live_per_user < 1 or max_spent < 1:
            raise LocalProtocolError(
                "ttl_ms, max_live, max_live_per_user and max_spent must be positive"
            )
        self._clock = clock
        self._token_factory = token_factory
        self._ttl_ms = ttl_ms
        self._max_live = max_live
        self._max_live_per_user = max_live_per_user
        self._max_spent = max_spent
        self._live: OrderedDict[str, _Live] = OrderedDict()
        # Spent or expired tokens, by digest, with the reason a later presentation gets.
        self._spent: OrderedDict[str, RefusalReason] = OrderedDict()

    def __len__(self) -> int:
        """The number of unspent tokens held."""
        return len(self._live)

    def issue(self, binding: ConfirmationBinding) -> IssuedConfirmation:
        """Issue a fresh token for `binding`; return it with its expiry.

        Raises LocalProtocolError if the token factory repeats a token it gave before
        (a broken factory must not re-arm a spent token).
        """
        now = self._clock()
        token = self._token_factory()
        key = _digest(token)
        if key in self._live or key in self._spent:
            raise LocalProtocolError("the token factory returned a token it gave before")
        self._drop_expired(now)
        while len(self._live) >= self._max_live:
            self._live.popitem(last=False)
        expires_at_ms = now + self._ttl_ms
        self._live[key] = _Live(binding, expires_at_ms)
        self._keep_per_user(binding.user, key)
        return IssuedConfirmation(token, expires_at_ms)

    def consume(self, token: str, binding: ConfirmationBinding) -> SpentConfirmation:
        """Spend `token` for `binding`; return it spent (for `refund`) if it confirms
        exactly that, else raise.

        Raises ConfirmationRefused with the first reason that applies.
        """
        key = _digest(token)
        spent = self._spent.get(key)
        if spent is not None:
            raise ConfirmationRefused(spent)
        live = self._live.pop(key, None)
        if live is None:
            raise ConfirmationRefused("unknown")
        if self._clock() >= live.expires_at_ms:
            self._remember(key, "expired")
            raise ConfirmationRefused("expired")
        self._remember(key, "used")
        held = live.binding
        checks: tuple[tuple[RefusalReason, bool], ...] = (
            ("wrong-task", held.task_id == binding.task_id),
            ("wrong-user", held.user == binding.user),
            ("wrong-action", held.action == binding.action),
            ("wrong-ref", held.resource_ref == binding.resource_ref),
        )
        for reason, matches in checks:
            if not matches:
                raise ConfirmationRefused(reason)
        return SpentConfirmation(key, live)

    def refund(self, spent: SpentConfirmation) -> None:
        """Make a token `consume` spent live again, with its binding and expiry: the
        action it confirmed did not happen. Nothing if it was forgotten since."""
        if self._spent.get(spent.key) == "used":
            del self._spent[spent.key]
            self._live[spent.key] = spent.live
            self._keep_per_user(spent.live.binding.user, spent.key)

    def _keep_per_user(self, user: str, key: str) -> None:
        """Forget `user`'s oldest live tokens but `key` (the one just issued or
        refunded) past max_live_per_user."""
        theirs = [k for k, live in self._live.items() if live.binding.user == user and k != key]
        for old in theirs[: max(0, len(theirs) + 1 - self._max_live_per_user)]:
            del self._live[old]

    def _remember(self, key: str, reason: RefusalReason) -> None:
        self._spent[key] = reason
        while len(self._spent) > self._max_spent:
            self._spent.popitem(last=False)

    def _drop_expired(self, now: float) -> None:
        expired = [key for key, live in self._live.items() if now >= live.expires_at_ms]
        for key in expired:
            del self._live[key]
            self._remember(key, "expired")
