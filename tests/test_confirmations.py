"""Tests for pagecontext.confirmations: single use, expiry, binding, bounded size."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagecontext.confirmations import (
    DEFAULT_TTL_MS,
    ConfirmationBinding,
    ConfirmationRefused,
    ConfirmationRegistry,
)
from pagecontext.errors import LocalProtocolError
from pagecontext.testing import FakeClock, counter_ids

BINDING = ConfirmationBinding(
    task_id="task-1", user="ana", action="flag", resource_ref="sales-2026-03-north"
)


def registry(
    ttl_ms: float = DEFAULT_TTL_MS, max_live: int = 1024, max_spent: int = 4096
) -> tuple[ConfirmationRegistry, FakeClock]:
    clock = FakeClock()
    tokens = ConfirmationRegistry(
        clock=clock,
        token_factory=counter_ids("tok"),
        ttl_ms=ttl_ms,
        max_live=max_live,
        max_spent=max_spent,
    )
    return tokens, clock


def refusal(registry: ConfirmationRegistry, token: str, binding: ConfirmationBinding) -> str:
    with pytest.raises(ConfirmationRefused) as caught:
        registry.consume(token, binding)
    return caught.value.reason


def test_a_token_confirms_its_binding_once() -> None:
    """The first use with the same binding succeeds; the second is refused as used."""
    tokens, clock = registry()
    issued = tokens.issue(BINDING)
    assert issued.expires_at_ms == clock.now_ms + DEFAULT_TTL_MS
    tokens.consume(issued.token, BINDING)
    assert refusal(tokens, issued.token, BINDING) == "used"
    assert len(tokens) == 0


def test_an_unknown_token_is_refused() -> None:
    """A token the registry never issued is refused as unknown."""
    tokens, _ = registry()
    tokens.issue(BINDING)
    assert refusal(tokens, "forged", BINDING) == "unknown"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"task_id": "task-2"}, "wrong-task"),
        ({"user": "ben"}, "wrong-user"),
        ({"action": "delete"}, "wrong-action"),
        ({"resource_ref": "sales-2026-04-north"}, "wrong-ref"),
    ],
)
def test_a_token_for_another_binding_is_refused_and_spent(
    change: dict[str, str], reason: str
) -> None:
    """Another task, user, action or ref is refused, and the token cannot be used after."""
    tokens, _ = registry()
    issued = tokens.issue(BINDING)
    assert refusal(tokens, issued.token, dataclasses.replace(BINDING, **change)) == reason
    assert refusal(tokens, issued.token, BINDING) == "used"


def test_a_token_expires_at_its_deadline() -> None:
    """One millisecond before the expiry it works; at the expiry it is refused as expired."""
    tokens, clock = registry(ttl_ms=1000)
    early = tokens.issue(BINDING)
    late = tokens.issue(BINDING)
    clock.advance(999)
    tokens.consume(early.token, BINDING)
    clock.advance(1)
    assert refusal(tokens, late.token, BINDING) == "expired"
    assert refusal(tokens, late.token, BINDING) == "expired"


def test_expired_tokens_are_dropped_and_still_read_as_expired() -> None:
    """Issuing drops expired tokens from the live set; presenting one says expired."""
    tokens, clock = registry(ttl_ms=1000)
    old = tokens.issue(BINDING)
    clock.advance(1000)
    tokens.issue(BINDING)
    assert len(tokens) == 1
    assert refusal(tokens, old.token, BINDING) == "expired"


def test_the_registry_stays_bounded() -> None:
    """Past max_live the oldest unspent token is forgotten (unknown); the newest work."""
    tokens, _ = registry(max_live=3, max_spent=2)
    issued = [tokens.issue(BINDING) for _ in range(5)]
    assert len(tokens) == 3
    assert refusal(tokens, issued[0].token, BINDING) == "unknown"
    for token in issued[2:]:
        tokens.consume(token.token, BINDING)
    # Only the last two spent tokens are remembered; the first spent one reads unknown.
    assert refusal(tokens, issued[2].token, BINDING) == "unknown"
    assert refusal(tokens, issued[4].token, BINDING) == "used"


def test_a_user_asking_for_many_tokens_drops_only_their_own() -> None:
    """Past max_live_per_user a user's own oldest token is forgotten; another user's
    confirmation, issued before all of them, still works."""
    tokens = ConfirmationRegistry(
        clock=FakeClock(), token_factory=counter_ids("tok"), max_live=8, max_live_per_user=3
    )
    other = dataclasses.replace(BINDING, user="ben")
    theirs = tokens.issue(other)
    mine = [tokens.issue(BINDING) for _ in range(20)]
    assert len(tokens) == 4
    assert refusal(tokens, mine[16].token, BINDING) == "unknown"
    tokens.consume(theirs.token, other)
    for token in mine[17:]:
        tokens.consume(token.token, BINDING)
    # A refund counts too: the user's oldest live token makes room for it.
    held = [tokens.issue(BINDING) for _ in range(3)]
    spent = tokens.consume(held[0].token, BINDING)
    tokens.issue(BINDING)
    tokens.refund(spent)
    assert len(tokens) == 3
    assert refusal(tokens, held[1].token, BINDING) == "unknown"
    tokens.consume(held[0].token, BINDING)


def test_a_repeating_token_factory_is_a_local_error() -> None:
    """A factory that repeats a token must not re-arm it."""
    tokens = ConfirmationRegistry(clock=FakeClock(), token_factory=lambda: "same")
    tokens.issue(BINDING)
    with pytest.raises(LocalProtocolError):
        tokens.issue(BINDING)


@pytest.mark.parametrize("reason", ["used", "expired"])
def test_a_factory_repeating_a_spent_or_expired_token_does_not_re_arm_it(reason: str) -> None:
    """A token already spent (or expired) and so no longer live is still one the factory
    gave before: issuing it again is a local error, and the token stays refused."""
    clock = FakeClock()
    tokens = ConfirmationRegistry(clock=clock, token_factory=lambda: "same", ttl_ms=1000)
    issued = tokens.issue(BINDING)
    if reason == "used":
        tokens.consume(issued.token, BINDING)
    else:
        clock.advance(1000)
        assert refusal(tokens, issued.token, BINDING) == "expired"
    assert len(tokens) == 0
    with pytest.raises(LocalProtocolError, match="gave before"):
        tokens.issue(BINDING)
    assert len(tokens) == 0
    assert refusal(tokens, issued.token, BINDING) == reason


def test_bad_settings_are_a_local_error() -> None:
    """A zero ttl or bound is refused at construction."""
    for ttl_ms, max_live, max_spent in ((0, 1, 1), (1, 0, 1), (1, 1, 0)):
        with pytest.raises(LocalProtocolError):
            registry(ttl_ms=ttl_ms, max_live=max_live, max_spent=max_spent)
    with pytest.raises(LocalProtocolError):
        ConfirmationRegistry(clock=FakeClock(), token_factory=str, max_live_per_user=0)


def test_the_registry_keeps_no_usable_token() -> None:
    """Only digests are held: no issued token appears in the registry's state."""
    tokens, _ = registry()
    issued = tokens.issue(BINDING)
    assert issued.token not in repr(vars(tokens))


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["issue", "use", "replay", "tick"]), max_size=40))
def test_no_token_is_ever_accepted_twice(steps: list[str]) -> None:
    """Whatever the order of issues, uses, replays and time, each token succeeds at most once."""
    tokens, clock = registry(ttl_ms=5000, max_live=4, max_spent=4)
    issued: list[str] = []
    accepted: list[str] = []
    for step in steps:
        if step == "issue":
            issued.append(tokens.issue(BINDING).token)
        elif step == "tick":
            clock.advance(2000)
        elif issued:
            token = issued[-1] if step == "use" else issued[0]
            try:
                tokens.consume(token, BINDING)
            except ConfirmationRefused:
                continue
            accepted.append(token)
    assert len(accepted) == len(set(accepted))


def test_a_refunded_token_is_live_again_with_its_binding_and_expiry() -> None:
    """An action that did not happen gives its spent token back: it confirms the same
    binding once more, no other, and still expires when it would have."""
    clock = FakeClock(0.0)
    tokens = ConfirmationRegistry(clock=clock, token_factory=counter_ids("t"), ttl_ms=1000)
    issued = tokens.issue(BINDING)
    spent = tokens.consume(issued.token, BINDING)
    with pytest.raises(ConfirmationRefused, match="used"):
        tokens.consume(issued.token, BINDING)
    tokens.refund(spent)
    again = tokens.consume(issued.token, BINDING)
    tokens.refund(again)
    clock.advance(1000)
    with pytest.raises(ConfirmationRefused, match="expired"):
        tokens.consume(issued.token, BINDING)
