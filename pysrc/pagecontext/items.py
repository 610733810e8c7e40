"""Context items, trusted instructions, and the registry that holds them per provider.

This module owns what an item is (`ContextItem`: `{type, key?, label?, value?, hidden?,
dismissGroup?}`), what a trusted instruction is (`Instruction`: static text written in
the code, with ids interpolated only when they match `ID_PATTERN`), and the
`ItemRegistry` that decides which items are in play: upsert and deregister by provider,
dedupe across providers by identity (`type:key`, else `type:value`; the first writer
wins), drop items with neither key nor value, and apply the user's dismissals by key and
by `dismissGroup`, which survive re-registration.

The trust tier of anything in the registry comes from the method that registered it:
`register_instructions` is trusted, `register` is untrusted. An item's `type` is only
data; an untrusted item whose type is "instructions" is still untrusted.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, LiteralString, TypeAlias

from pagecontext.errors import LocalProtocolError

__all__ = [
    "ID_PATTERN",
    "ContextItem",
    "Dismissals",
    "Instruction",
    "ItemRegistry",
    "JsonValue",
    "RegistryView",
    "TrustTier",
    "canonical_json",
    "json_copy",
]

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
TrustTier = Literal["trusted", "untrusted"]

ID_PATTERN: Final = r"^[A-Za-z0-9_-]{1,128}$"
_ID_RE: Final = re.compile(ID_PATTERN)
# Anything that could end a line or open a tag in the rendered block; trusted text is
# static, so it is refused outright rather than escaped.
_UNSAFE_TRUSTED_RE: Final = re.compile(r"[<>\x00-\x1f\x7f\x85\u2028\u2029]")


def json_copy(value: object) -> JsonValue:
    """Return a fresh deep copy of `value` as plain JSON data (tuples become lists).

    Raises LocalProtocolError if `value` is not JSON: a non-string key, a non-finite
    float, or an object of another type.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise LocalProtocolError(f"an item value must be JSON, not {value!r}")
        return value
    if isinstance(value, list | tuple):
        return [json_copy(element) for element in value]
    if isinstance(value, dict):
        copied: dict[str, JsonValue] = {}
        for key, element in value.items():
            if not isinstance(key, str):
                raise LocalProtocolError(f"an item value's keys must be strings, not {key!r}")
            copied[key] = json_copy(element)
        return copied
    raise LocalProtocolError(f"an item value must be JSON, not {type(value).__name__}")


def canonical_json(value: JsonValue) -> str:
    """Return `value` as compact JSON with sorted keys: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, kw_only=True)
class ContextItem:
    """One piece of context: a chip for the user and a line for the model.

    `hidden` items go to the model but are not shown as chips; `dismiss_group` lets the
    user dismiss a family of items at once. The value is copied at construction, so a
    caller mutating its own dict later changes nothing here.
    """

    type: str
    key: str | None = None
    label: str | None = None
    value: JsonValue = None
    hidden: bool = False
    dismiss_group: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.type, str) or not self.type:
            raise LocalProtocolError("an item needs a non-empty string type")
        for name in ("key", "label", "dismiss_group"):
            if not isinstance(getattr(self, name), str | None):
                raise LocalProtocolError(f"an item's {name} must be a string or None")
        object.__setattr__(self, "value", json_copy(self.value))

    @property
    def identity(self) -> str | None:
        """Return `type:key`, else `type:value`; None when the item has neither."""
        if self.key is not None:
            return f"{self.type}:{self.key}"
        if self.value is None:
            return None
        shown = self.value if isinstance(self.value, str) else canonical_json(self.value)
        return f"{self.type}:{shown}"

    def to_json(self) -> dict[str, JsonValue]:
        """Return the model-facing fields `{type, key?, label?, value?}`, in that order.

        `hidden` and `dismissGroup` steer the chips in the UI and are not sent.
        """
        line: dict[str, JsonValue] = {"type": self.type}
        if self.key is not None:
            line["key"] = self.key
        if self.label is not None:
            line["label"] = self.label
        if self.value is not None:
            line["value"] = json_copy(self.value)
        return line


@dataclass(frozen=True)
class Instruction:
    """A trusted instruction: one line of static text written in the code.

    Build one with `Instruction("...")` for fixed text, or `Instruction.format(template,
    **ids)` to interpolate ids; each id must match ID_PATTERN. Raises LocalProtocolError
    for text that could break out of the trusted block (a line break or an angle
    bracket) or an id that does not match.
    """

    text: str

    def __post_init__(self) -> None:
        if not self.text or _UNSAFE_TRUSTED_RE.search(self.text):
            raise LocalProtocolError("an instruction is one non-empty line without angle brackets")

    @classmethod
    def format(cls, template: LiteralString, **ids: str) -> Instruction:
        """Return the instruction `template` with `{name}` fields replaced by `ids`.

        Only bare `{name}` fields are allowed (no attributes, indexes, conversions or
        format specs), every field must be given, and every id must match ID_PATTERN;
        raises LocalProtocolError if not, or if the result is not a safe instruction.
        """
        parts: list[str] = []
        for literal, name, spec, conversion in string.Formatter().parse(template):
            parts.append(literal)
            if name is None:
                continue
            if spec or conversion or not name.isidentifier():
                raise LocalProtocolError(f"instruction field {name!r} must be a bare name")
            if name not in ids:
                raise LocalProtocolError(f"instruction field {name!r} was not given")
            given = ids[name]
            if not isinstance(given, str) or not _ID_RE.fullmatch(given):
                raise LocalProtocolError(f"instruction id for {name!r} must match {ID_PATTERN}")
            parts.append(given)
        return cls("".join(parts))


# How many dismissals by key, and by group, are kept: the latest, each list oldest
# first. A user removes chips all day; the saved state must not grow with every one.
MAX_DISMISSALS: Final = 256


def _added(entries: tuple[str, ...], entry: str) -> tuple[str, ...]:
    """`entries` with `entry` as the latest, the oldest dropped past MAX_DISMISSALS."""
    return (*(kept for kept in entries if kept != entry), entry)[-MAX_DISMISSALS:]


def _removed(entries: tuple[str, ...], entry: str) -> tuple[str, ...]:
    return tuple(kept for kept in entries if kept != entry)


@dataclass(frozen=True)
class Dismissals:
    """The user's dismissals, by item key and by dismiss group, each the latest
    MAX_DISMISSALS in the order made; persist and restore it."""

    keys: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    def hides(self, item: ContextItem) -> bool:
        """Return True if `item` is dismissed by its key or its group."""
        return (item.key is not None and item.key in self.keys) or (
            item.dismiss_group is not None and item.dismiss_group in self.groups
        )

    def to_json(self) -> dict[str, list[str]]:
        """Return the dismissals as lists, oldest first, for saved state."""
        return {"keys": list(self.keys), "groups": list(self.groups)}

    @classmethod
    def from_json(cls, saved: Mapping[str, object]) -> Dismissals:
        """Return the dismissals saved by `to_json` (the latest MAX_DISMISSALS of each);
        anything not a string is ignored."""

        def strings(name: str) -> tuple[str, ...]:
            found = saved.get(name)
            if not isinstance(found, list):
                return ()
            # As `_added` one by one would keep them (a repeat counts where it was last
            # made), in one pass: a saved state holds any number.
            latest = dict.fromkeys(entry for entry in reversed(found) if isinstance(entry, str))
            return tuple(list(latest)[:MAX_DISMISSALS][::-1])

        return cls(keys=strings("keys"), groups=strings("groups"))


@dataclass(frozen=True)
class RegistryView:
    """What the registry puts in play now: trusted instructions and untrusted items.

    Both are in registration order of their providers; items are deduped and the
    dismissed ones left out.
    """

    instructions: tuple[Instruction, ...] = ()
    items: tuple[ContextItem, ...] = ()


@dataclass
class _Provider:
    tier: TrustTier
    instructions: tuple[Instruction, ...] = ()
    items: tuple[ContextItem, ...] = ()


@dataclass
class ItemRegistry:
    """Items and instructions by provider id, with dedupe and the user's dismissals."""

    _providers: dict[str, _Provider] = field(default_factory=dict)
    _dismissals: Dismissals = field(default_factory=Dismissals)

    def register(self, provider_id: str, items: Iterable[ContextItem]) -> None:
        """Set `provider_id`'s untrusted items, replacing what it registered before.

        A provider registered again keeps its place (and so its priority in dedupe).
        Raises LocalProtocolError if the id is empty or holds instructions already.
        """
        self._provider(provider_id, "untrusted").items = tuple(items)

    def register_instructions(self, provider_id: str, instructions: Iterable[Instruction]) -> None:
        """Set `provider_id`'s trusted instructions, replacing what it registered before.

        Raises LocalProtocolError if the id is empty or holds untrusted items already.
        """
        found = tuple(instructions)
        if not all(isinstance(entry, Instruction) for entry in found):
            raise LocalProtocolError("register_instructions takes Instruction objects only")
        self._provider(provider_id, "trusted").instructions = found

    def deregister(self, provider_id: str) -> None:
        """Forget everything `provider_id` registered; dismissals stay."""
        self._providers.pop(provider_id, None)

    def dismiss(self, key: str) -> None:
        """Hide every item with `key`, now and after any re-registration."""
        self._dismissals = Dismissals(_added(self._dismissals.keys, key), self._dismissals.groups)

    def dismiss_group(self, group: str) -> None:
        """Hide every item whose dismiss group is `group`, now and later."""
        self._dismissals = Dismissals(self._dismissals.keys, _added(self._dismissals.groups, group))

    def undismiss(self, key: str) -> None:
        """Show the items with `key` again (unless their group is dismissed)."""
        self._dismissals = Dismissals(_removed(self._dismissals.keys, key), self._dismissals.groups)

    def undismiss_group(self, group: str) -> None:
        """Show the items of `group` again (unless their key is dismissed)."""
        self._dismissals = Dismissals(
            self._dismissals.keys, _removed(self._dismissals.groups, group)
        )

    @property
    def dismissals(self) -> Dismissals:
        """The current dismissals, to save."""
        return self._dismissals

    def restore_dismissals(self, dismissals: Dismissals) -> None:
        """Replace the dismissals with saved ones (after the assistant reloads)."""
        self._dismissals = dismissals

    def view(self) -> RegistryView:
        """Return the instructions and the deduped, undismissed items in play now.

        Dedupe comes before dismissal: the first provider's copy of an item decides
        whether it is shown.
        """
        instructions: list[Instruction] = []
        items: list[ContextItem] = []
        seen: set[str] = set()
        for provider in self._providers.values():
            instructions.extend(provider.instructions)
            for item in provider.items:
                identity = item.identity
                if identity is None or identity in seen:
                    continue
                seen.add(identity)
                if not self._dismissals.hides(item):
                    items.append(item)
        return RegistryView(instructions=tuple(instructions), items=tuple(items))

    def _provider(self, provider_id: str, tier: TrustTier) -> _Provider:
        if not isinstance(provider_id, str) or not provider_id:
            raise LocalProtocolError("a provider id is a non-empty string")
        provider = self._providers.setdefault(provider_id, _Provider(tier))
        if provider.tier != tier:
            raise LocalProtocolError(
                f"provider {provider_id!r} is {provider.tier}; it cannot register {tier} entries"
            )
        return provider
