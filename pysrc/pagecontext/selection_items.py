"""A committed selection as context items: a reference first, then a snapshot.

This module owns how a `Selection` (docs/protocol.md) becomes model-facing items. The
reference item (`type "reference"`) says what to re-query: page, component and
resourceRef, with a label for the chip. The snapshot item (`type "snapshot"`) says
only what the agent cannot re-read: what the user saw, with units, under which filters,
at `observedAt`. Both are untrusted page data, and both share a dismiss group, so
dismissing the selection's chip dismisses both. `snapshot_schema` declares which of
their fields may be shared; snapshot values not declared public are redacted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

from pagecontext.items import ContextItem, JsonValue
from pagecontext.models import Quantity, Scalar, Selection
from pagecontext.redact import ItemSchema

__all__ = [
    "REFERENCE_TYPE",
    "SNAPSHOT_TYPE",
    "object_key",
    "reference_schema",
    "selection_items",
    "snapshot_schema",
]

REFERENCE_TYPE: Final = "reference"
SNAPSHOT_TYPE: Final = "snapshot"


def selection_items(selection: Selection, label: str) -> list[ContextItem]:
    """Return the selection's reference item, then its snapshot item if it has one.

    Both are keyed by the selected object (`["page","component","resourceRef"]` as
    compact JSON, so no id can forge another), and grouped under that key for dismissal.
    The types differ, so dedupe keeps both.
    """
    key = _selection_key(selection)
    reference = ContextItem(
        type=REFERENCE_TYPE,
        key=key,
        label=label,
        value={
            "page": selection.page_id,
            "component": selection.component_id,
            "resourceRef": selection.resource_ref,
        },
        dismiss_group=key,
    )
    if selection.snapshot is None:
        return [reference]
    values: dict[str, JsonValue] = {
        name: _snapshot_value(value) for name, value in selection.snapshot.items()
    }
    filters: dict[str, JsonValue] = {
        name: list(value) if isinstance(value, list) else value
        for name, value in selection.filters.items()
    }
    snapshot = ContextItem(
        type=SNAPSHOT_TYPE,
        key=key,
        label=label,
        value={"observedAt": selection.observed_at, "values": values, "filters": filters},
        dismiss_group=key,
    )
    return [reference, snapshot]


def reference_schema() -> ItemSchema:
    """Return the schema of reference items: every field of a reference is public."""
    return ItemSchema.of(public=[""])


def snapshot_schema(public: Iterable[str] = (), secret: Iterable[str] = ()) -> ItemSchema:
    """Return the schema of snapshot items with the given snapshot fields.

    `observedAt` and the filters are public; each named snapshot field is public or
    secret as given (with its unit); any other snapshot field is redacted.
    """
    # Tuples: a field's name may hold a dot.
    return ItemSchema.of(
        public=["observedAt", "filters", *(("values", name) for name in public)],
        secret=[("values", name) for name in secret],
    )


def object_key(page_id: str, component_id: str, resource_ref: str) -> str:
    """The key of a selected object's items (and its chip): its ids as a compact JSON
    array. Ids may hold "/" or anything else: a JSON array cannot be forged by one id."""
    return json.dumps(
        [page_id, component_id, resource_ref], ensure_ascii=False, separators=(",", ":")
    )


def _selection_key(selection: Selection) -> str:
    return object_key(selection.page_id, selection.component_id, selection.resource_ref)


def _snapshot_value(value: Scalar | Quantity) -> JsonValue:
    if isinstance(value, Quantity):
        return {"value": value.value, "unit": value.unit}
    return value
