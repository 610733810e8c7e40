"""Secret redaction of item values, by a schema per item type, failing closed.

This module owns which parts of an untrusted item's value may reach the model. A schema
(`ItemSchema`) declares paths in the value as "public" (sent as is, with everything
below it but the secret paths) or "secret" (replaced by SECRET, which wins). Every leaf
no declared path covers is replaced by REDACTED, and an item whose type has no schema
has every leaf replaced: what nobody declared shareable is never shared. The item's
type, key and label are kept; a provider must not put secrets there. Inputs are never
mutated: redaction returns new items with new values.

Paths are dot-separated object keys (`"values.margin"`); the empty path `""` is the
whole value. A key that itself contains a dot cannot be named, and elements of arrays
have no names: both take the sensitivity of what encloses them, or fail closed.
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


@dataclass(frozen=True)
class ItemSchema:
    """The sensitivity of paths in one item type's value; undeclared leaves are redacted."""

    fields: Mapping[str, Sensitivity]

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    @classmethod
    def of(cls, public: Iterable[str] = (), secret: Iterable[str] = ()) -> ItemSchema:
        """Return a schema with `public` and `secret` paths; a path in both is secret."""
        fields: dict[str, Sensitivity] = dict.fromkeys(public, "public")
        fields.update(dict.fromkeys(secret, "secret"))
        return cls(fields)


def redact_value(value: JsonValue, schema: ItemSchema | None) -> JsonValue:
    """Return a redacted copy of `value`: SECRET for secret paths, REDACTED undeclared.

    With no schema every leaf (string, number, boolean or null) becomes REDACTED;
    objects and arrays keep their shape, so the model still sees which fields exist.
    """
    fields: Mapping[str, Sensitivity] = schema.fields if schema is not None else {}
    return _redact(value, "", fields, public=False)


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
    value: JsonValue, path: str | None, fields: Mapping[str, Sensitivity], public: bool
) -> JsonValue:
    # A secret path wins over a public path above it: "form" public with
    # "form.password" secret still hides the password.
    declared = fields.get(path) if path is not None else None
    if declared == "secret":
        return SECRET
    public = public or declared == "public"
    if isinstance(value, dict):
        return {
            key: _redact(child, _child_path(path, key), fields, public)
            for key, child in value.items()
        }
    if isinstance(value, list):
        # Array elements have no names to declare: they take their array's sensitivity.
        return [_redact(child, None, fields, public) for child in value]
    return value if public else REDACTED


def _child_path(path: str | None, key: str) -> str | None:
    if path is None:
        return None
    return f"{path}.{key}" if path else key
