"""Secret redaction of item values, by a schema per item type, failing closed.

This module owns which parts of an untrusted item's value may reach the model. A schema
(`ItemSchema`) declares paths in the value as "public" (sent as is, with everything
below it but the secret paths) or "secret" (replaced by SECRET, which wins). Every leaf
no declared path covers is replaced by REDACTED, and an item whose type has no schema
has every leaf replaced: what nobody declared shareable is never shared. The item's
type, key and label are kept; a provider must not put secrets there. Inputs are never
mutated: redaction returns new items with new values.

A path is the keys from the value down to a part, as a tuple (`("values", "margin")`)
or, for keys without dots, as one dot-separated string (`"values.margin"`); the empty
tuple or string is the whole value. A key holding a dot is named only by a tuple, so
`"a.b"` never names the key `"a.b"`. Elements of arrays have no names of their own:
they are read at their array's path, so `"rows.password"` names the password of every
element of `rows`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final, Literal

from pagecontext.items import ContextItem, JsonValue

__all__ = [
    "REDACTED",
    "SECRET",
    "ItemSchema",
    "Sensitivity",
    "redact_item",
    "redact_items",
    "redact_value",
]

SECRET: Final = "[secret]"
REDACTED: Final = "[redacted]"
Sensitivity = Literal["public", "secret"]
Path = tuple[str, ...]


@dataclass(frozen=True)
class ItemSchema:
    """The sensitivity of paths in one item type's value; undeclared leaves are redacted."""

    fields: Mapping[Path, Sensitivity]

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    @classmethod
    def of(cls, public: Iterable[str | Path] = (), secret: Iterable[str | Path] = ()) -> ItemSchema:
        """Return a schema with `public` and `secret` paths; a path in both is secret."""
        fields: dict[Path, Sensitivity] = dict.fromkeys(map(_path, public), "public")
        fields.update(dict.fromkeys(map(_path, secret), "secret"))
        return cls(fields)


def _path(path: str | Path) -> Path:
    if isinstance(path, tuple):
        return path
    return tuple(path.split(".")) if path else ()


def redact_value(value: JsonValue, schema: ItemSchema | None) -> JsonValue:
    """Return a redacted copy of `value`: SECRET for secret paths, REDACTED undeclared.

    With no schema every leaf (string, number, boolean or null) becomes REDACTED;
    objects and arrays keep their shape, so the model still sees which fields exist.
    """
    fields: Mapping[Path, Sensitivity] = schema.fields if schema is not None else {}
    return _redact(value, (), fields, public=False)


def redact_item(item: ContextItem, schemas: Mapping[str, ItemSchema]) -> ContextItem:
    """Return a copy of `item` with its value redacted by the schema for its type.

    An item without a value has nothing to redact and is returned as it is.
    """
    if item.value is None:
        return item
    return replace(item, value=redact_value(item.value, schemas.get(item.type)))


def redact_items(
    items: Iterable[ContextItem], schemas: Mapping[str, ItemSchema]
) -> list[ContextItem]:
    """Return redacted copies of `items`, in order."""
    return [redact_item(item, schemas) for item in items]


def _redact(
    value: JsonValue, path: Path, fields: Mapping[Path, Sensitivity], public: bool
) -> JsonValue:
    # A secret path wins over a public path above it: "form" public with
    # "form.password" secret still hides the password.
    declared = fields.get(path)
    if declared == "secret":
        return SECRET
    public = public or declared == "public"
    if isinstance(value, dict):
        return {key: _redact(child, (*path, key), fields, public) for key, child in value.items()}
    if isinstance(value, list):
        # Array elements are read at their array's path.
        return [_redact(child, path, fields, public) for child in value]
    return value if public else REDACTED
