"""Hypothesis strategies for raw port messages: well-formed ones of every type, and mutants.

Well-formed: `contexts()`, `selections_cleared()`, `commands()`, `receipts()`,
`conversations()`, `connecteds()`, `bounds()`, `byes()` and `messages()` (any of them)
draw raw dicts that `parse_message` accepts under DEFAULT_LIMITS and that `dump_message` gives back
unchanged. Identities, ids and revisions are strategies, so a test can aim messages at
a binding (`contexts(page_instance_ids=st.just("page-A"))`).

Mutants: `mutants(strategy)` changes a drawn message by one mutation of MUTATIONS at a
drawn place and labels the result `refused` when the mutation certainly makes it
invalid. The label comes from `_SCHEMA` below, which restates the rules of
`pagecontext.models` (keep the two in step); with `refused_only=True` only such
mutations are drawn. `mutated(strategy)` applies one to three mutations and draws only
the raw value; `hostile()` adds values that are not messages at all.
"""

from __future__ import annotations

import copy
import json
import math
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

import wire
from pagecontext.models import DEFAULT_LIMITS, MAX_SAFE_INTEGER

__all__ = [
    "EDGE_INTS",
    "FORBIDDEN_KEYS",
    "LIMITS",
    "MUTATIONS",
    "Mutant",
    "bounds",
    "byes",
    "commands",
    "connecteds",
    "contexts",
    "conversations",
    "hostile",
    "message_ids",
    "messages",
    "mutants",
    "mutated",
    "receipts",
    "revisions",
    "selections_cleared",
    "set_at",
    "stamped",
]

LIMITS: Final = DEFAULT_LIMITS
FORBIDDEN_KEYS: Final = ("__proto__", "constructor", "prototype")
# Integers around the edges of every integer rule: zero, sign, JS safe range, int64.
EDGE_INTS: Final = (
    0,
    -1,
    1,
    2,
    MAX_SAFE_INTEGER,
    2**53,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63),
)
MUTATIONS: Final = (
    "drop-field",
    "add-field",
    "retype",
    "oversize-string",
    "oversize-collection",
    "deep-nesting",
    "non-finite",
    "edge-int",
    "revision-type",
)

Path: TypeAlias = tuple[str | int, ...]
Raw: TypeAlias = dict[str, Any]

# -- well-formed messages ----------------------------------------------------------------

_UTF8 = st.characters(codec="utf-8")  # any code point but lone surrogates
_ASCII = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


def _texts(min_size: int = 0, max_size: int = 16) -> SearchStrategy[str]:
    return st.text(_UTF8, min_size=min_size, max_size=max_size)


_ID_CHARS = string.ascii_letters + string.digits + "_-"


def _padded(text: SearchStrategy[str], length: int) -> SearchStrategy[str]:
    # A long string from a short draw: generating each character would be slow.
    return text.map(lambda head: (head * length)[:length])


def message_ids() -> SearchStrategy[str]:
    """Valid messageIds: 1-64 characters of [A-Za-z0-9_-] (MESSAGE_ID_PATTERN)."""
    short = st.text(_ID_CHARS, min_size=1, max_size=12)
    return st.one_of(short, _padded(short, 64))


def _identifiers() -> SearchStrategy[str]:
    # Mostly short; sometimes exactly at max_id_chars.
    return st.one_of(_texts(1, 12), _texts(1, 12), _padded(_texts(1, 4), LIMITS.max_id_chars))


def revisions() -> SearchStrategy[int]:
    """Valid revisions: small ones mostly, any safe integer, and the largest."""
    return st.one_of(st.integers(1, 8), st.integers(1, MAX_SAFE_INTEGER), st.just(MAX_SAFE_INTEGER))


# A value's numbers are within JavaScript's safe range (models.Scalar); EDGE_INTS
# outside it are the edge-int mutation's.
_SAFE = {"min_value": -MAX_SAFE_INTEGER, "max_value": MAX_SAFE_INTEGER}
_INTS = st.one_of(
    st.integers(**_SAFE), st.sampled_from([v for v in EDGE_INTS if abs(v) <= MAX_SAFE_INTEGER])
)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False, **_SAFE)
_SCALARS: SearchStrategy[Any] = st.one_of(st.none(), st.booleans(), _INTS, _FLOATS, _texts())
_LONG_STRING = st.one_of(_padded(_texts(1, 4), LIMITS.max_string_chars), _padded(_texts(1, 4), 100))
_DATA_SCALARS: SearchStrategy[Any] = st.one_of(_SCALARS, _LONG_STRING)
_DATA_KEYS = _texts(0, 12).filter(lambda key: key not in FORBIDDEN_KEYS)
_FILTER_VALUES = st.one_of(_DATA_SCALARS, st.lists(_SCALARS, max_size=4))
_QUANTITIES = st.fixed_dictionaries({"value": _SCALARS, "unit": _texts(0, 8)})
_SNAPSHOT_VALUES = st.one_of(_DATA_SCALARS, _QUANTITIES)


def _full_map(values: SearchStrategy[Any], size: int) -> SearchStrategy[dict[str, Any]]:
    # Exactly at an entry limit, with cheap keys.
    entries = st.lists(values, min_size=size, max_size=size)
    return entries.map(lambda items: {f"f{index}": item for index, item in enumerate(items)})


_SMALL = st.one_of(st.none(), st.booleans(), st.integers(-9, 9))
_FILTERS = st.one_of(
    st.dictionaries(_DATA_KEYS, _FILTER_VALUES, max_size=6),
    _full_map(_SMALL, LIMITS.max_filter_keys),
)
_SNAPSHOTS = st.one_of(
    st.dictionaries(_DATA_KEYS, _SNAPSHOT_VALUES, max_size=8),
    _full_map(_SMALL, LIMITS.max_snapshot_fields),
)
_OBSERVED_AT = st.datetimes().map(
    lambda at: (
        f"{at.year:04d}-{at.month:02d}-{at.day:02d}T{at.hour:02d}:{at.minute:02d}:"
        f"{at.second:02d}.{at.microsecond // 1000:03d}Z"
    )
)


def _fits(raw: Raw) -> bool:
    size = len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode())
    return size <= LIMITS.max_message_bytes


def _envelope(
    kind: str,
    message_id: SearchStrategy[str] | None,
    page_instance_ids: SearchStrategy[str] | None,
    conversation_ids: SearchStrategy[str] | None,
    optional: dict[str, SearchStrategy[Any]] | None = None,
    **fields: SearchStrategy[Any],
) -> SearchStrategy[Raw]:
    return st.fixed_dictionaries(
        {
            "protocol": st.just("pagecontext"),
            "version": st.just(1),
            "type": st.just(kind),
            "messageId": message_ids() if message_id is None else message_id,
            "pageInstanceId": _identifiers() if page_instance_ids is None else page_instance_ids,
            "conversationId": _identifiers() if conversation_ids is None else conversation_ids,
            **fields,
        },
        optional=optional or {},
    ).filter(_fits)


def contexts(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
    revision: SearchStrategy[int] | None = None,
    component_ids: SearchStrategy[str] | None = None,
    resource_refs: SearchStrategy[str] | None = None,
) -> SearchStrategy[Raw]:
    """Contexts with filters and snapshots of every kind, up to and at the limits."""
    selection = st.fixed_dictionaries(
        {
            "pageId": _identifiers(),
            "componentId": _identifiers() if component_ids is None else component_ids,
            "resourceRef": _identifiers() if resource_refs is None else resource_refs,
            "observedAt": _OBSERVED_AT,
            "filters": _FILTERS,
        },
        optional={"snapshot": _SNAPSHOTS},
    )
    return _envelope(
        "context",
        message_id,
        page_instance_ids,
        conversation_ids,
        selectionRevision=revisions() if revision is None else revision,
        selection=selection,
    )


def selections_cleared(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
    revision: SearchStrategy[int] | None = None,
) -> SearchStrategy[Raw]:
    """selection-cleared messages."""
    return _envelope(
        "selection-cleared",
        message_id,
        page_instance_ids,
        conversation_ids,
        selectionRevision=revisions() if revision is None else revision,
    )


_PARAMS: dict[str, SearchStrategy[dict[str, str]]] = {
    "highlight": st.fixed_dictionaries({"tone": st.sampled_from(["focus", "related"])}),
    "locate": st.just({}),
    "refresh": st.just({}),
    "clear-highlight": st.just({}),
}


_NEEDS_REF = ("highlight", "locate")


def commands(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
    revision: SearchStrategy[int] | None = None,
    component_ids: SearchStrategy[str] | None = None,
    resource_refs: SearchStrategy[str] | None = None,
    actions: Sequence[str] = tuple(_PARAMS),
) -> SearchStrategy[Raw]:
    """Commands of every action with exactly its params: with a resourceRef for the
    actions that point at one object (highlight, locate), with or without one for the
    others."""
    component = {"componentId": _identifiers() if component_ids is None else component_ids}
    ref = {"resourceRef": _identifiers() if resource_refs is None else resource_refs}

    def build(action: str) -> SearchStrategy[Raw]:
        if action in _NEEDS_REF:
            target = st.fixed_dictionaries({**component, **ref})
        else:
            target = st.fixed_dictionaries(component, optional=ref)
        return _envelope(
            "command",
            message_id,
            page_instance_ids,
            conversation_ids,
            basisRevision=revisions() if revision is None else revision,
            action=st.just(action),
            target=target,
            params=_PARAMS[action],
        )

    return st.one_of([build(action) for action in actions])


def receipts(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
    command_ids: SearchStrategy[str] | None = None,
) -> SearchStrategy[Raw]:
    """Receipts of both layers and every status, with or without a detail."""
    fields = {
        "commandId": message_ids() if command_ids is None else command_ids,
        "layer": st.sampled_from(["received", "ui"]),
        "status": st.sampled_from(["applied", "stale-context", "not-found", "rejected"]),
        "reason": st.text(string.ascii_lowercase + string.digits + "-", min_size=1, max_size=64),
    }
    detail = st.one_of(_texts(0, 16), _padded(_texts(1, 4), LIMITS.max_detail_chars))
    return _envelope(
        "receipt",
        message_id,
        page_instance_ids,
        conversation_ids,
        optional={"detail": detail},
        **fields,
    )


def conversations(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
) -> SearchStrategy[Raw]:
    """conversation messages (the envelope's conversationId is the new conversation)."""
    return _envelope("conversation", message_id, page_instance_ids, conversation_ids)


def connecteds(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
) -> SearchStrategy[Raw]:
    """connected messages of either role, with a well-formed nonce."""
    return _envelope(
        "connected",
        message_id,
        page_instance_ids,
        conversation_ids,
        role=st.sampled_from(["page", "assistant"]),
        instanceId=_identifiers(),
        nonce=st.text(_ID_CHARS, min_size=22, max_size=22),  # NONCE_PATTERN
    )


def bounds(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
) -> SearchStrategy[Raw]:
    """bound messages (the embedder bound the port)."""
    return _envelope("bound", message_id, page_instance_ids, conversation_ids)


def byes(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
) -> SearchStrategy[Raw]:
    """bye messages."""
    return _envelope("bye", message_id, page_instance_ids, conversation_ids)


def messages(
    *,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
) -> SearchStrategy[Raw]:
    """A well-formed message of any type."""
    builders = (
        contexts,
        selections_cleared,
        commands,
        receipts,
        conversations,
        connecteds,
        bounds,
        byes,
    )
    return st.one_of(
        [
            builder(
                message_id=message_id,
                page_instance_ids=page_instance_ids,
                conversation_ids=conversation_ids,
            )
            for builder in builders
        ]
    )


# -- the schema the mutations are labelled by -----------------------------------------

_KINDS: Final = frozenset({"none", "bool", "int", "float", "str", "list", "dict"})
_SCALAR: Final = frozenset({"none", "bool", "int", "float", "str"})
_STR: Final = frozenset({"str"})


@dataclass(frozen=True)
class _Field:
    """What the models accept at one key of an object."""

    kinds: frozenset[str] = _STR
    required: bool = True
    shape: str | None = None  # the schema of a dict value: an object or a map
    max_chars: int = LIMITS.max_id_chars
    exact: bool = False  # protocol, version, type: one value only
    revision: bool = False


_LITERAL = _Field(exact=True, max_chars=17)
_MESSAGE_ID = _Field(max_chars=64)
_REVISION = _Field(frozenset({"int"}), revision=True)
_ENVELOPE_FIELDS = {
    "protocol": _LITERAL,
    "version": _Field(frozenset({"int"}), exact=True),
    "type": _LITERAL,
    "messageId": _MESSAGE_ID,
    "pageInstanceId": _Field(),
    "conversationId": _Field(),
}
# Objects are closed (an unknown key is refused); maps ("filters", "snapshot") are open.
_SCHEMA: Final[dict[str, dict[str, _Field]]] = {
    "context": {
        **_ENVELOPE_FIELDS,
        "selectionRevision": _REVISION,
        "selection": _Field(frozenset({"dict"}), shape="selection"),
    },
    "selection": {
        "pageId": _Field(),
        "componentId": _Field(),
        "resourceRef": _Field(),
        "observedAt": _Field(max_chars=24),
        "filters": _Field(frozenset({"dict"}), shape="filters"),
        "snapshot": _Field(frozenset({"dict", "none"}), required=False, shape="snapshot"),
    },
    "quantity": {
        "value": _Field(_SCALAR, max_chars=LIMITS.max_string_chars),
        "unit": _Field(max_chars=LIMITS.max_string_chars),
    },
    "selection-cleared": {**_ENVELOPE_FIELDS, "selectionRevision": _REVISION},
    "receipt": {
        **_ENVELOPE_FIELDS,
        "commandId": _MESSAGE_ID,
        "layer": _LITERAL,
        "status": _LITERAL,
        "reason": _Field(max_chars=64),
        "detail": _Field(
            frozenset({"str", "none"}), required=False, max_chars=LIMITS.max_detail_chars
        ),
    },
    "conversation": _ENVELOPE_FIELDS,
    "command": {
        **_ENVELOPE_FIELDS,
        "basisRevision": _REVISION,
        "action": _LITERAL,
        "target": _Field(frozenset({"dict"}), shape="target"),
        "params": _Field(frozenset({"dict"}), shape="params"),
    },
    "target": {
        "componentId": _Field(),
        "resourceRef": _Field(frozenset({"str", "none"}), required=False),
    },
    "params:highlight": {"tone": _LITERAL},
    "params:other": {},
    "connected": {
        **_ENVELOPE_FIELDS,
        "role": _LITERAL,
        "instanceId": _Field(),
        "nonce": _Field(max_chars=22),
    },
    "bound": _ENVELOPE_FIELDS,
    "bye": _ENVELOPE_FIELDS,
}
_MAPS: Final = {
    "filters": (_SCALAR | {"list"}, LIMITS.max_filter_keys),
    "snapshot": (_SCALAR | {"dict"}, LIMITS.max_snapshot_fields),
}
_KNOWN_NAMES: Final = frozenset(name for fields in _SCHEMA.values() for name in fields)


@dataclass(frozen=True)
class _Slot:
    """A place in a message that holds a value, and what the models accept there."""

    path: Path
    kinds: frozenset[str]  # empty: nothing is accepted (an unknown key)
    required: bool = False
    max_chars: int = LIMITS.max_string_chars
    exact: bool = False
    revision: bool = False
    known: bool = True  # False where the walk left the schema: labels are unknown


@dataclass(frozen=True)
class _Container:
    """A dict in a message: `closed` objects refuse unknown keys, open maps take them."""

    path: Path
    closed: bool
    max_items: int | None = None  # a map's entry limit


_ROOT = _Slot((), frozenset({"dict"}))


def _kind(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "dict"


def _walk(raw: object) -> tuple[list[_Slot], list[_Container]]:
    """Return every value slot (the root first) and every dict of a message."""
    slots = [_ROOT]
    containers: list[_Container] = []
    shape = raw.get("type") if isinstance(raw, dict) else None
    _visit(raw, (), shape if isinstance(shape, str) else None, slots, containers)
    return slots, containers


def _visit(
    value: object,
    path: Path,
    shape: object,
    slots: list[_Slot],
    containers: list[_Container],
) -> None:
    if isinstance(value, list):
        item_kinds = _SCALAR if shape == "filter-list" else _KINDS
        for index, item in enumerate(value):
            known = shape == "filter-list"
            slots.append(_Slot((*path, index), item_kinds, known=known))
            _visit(item, (*path, index), None, slots, containers)
        return
    if not isinstance(value, dict):
        return
    if shape == "params":
        shape = "params:other"
    if isinstance(shape, str) and shape in _SCHEMA:
        fields = _SCHEMA[shape]
        containers.append(_Container(path, closed=True))
        for key, item in value.items():
            field = fields.get(key)
            if field is None:
                slots.append(_Slot((*path, key), frozenset(), known=False))
                _visit(item, (*path, key), None, slots, containers)
                continue
            slots.append(
                _Slot(
                    (*path, key),
                    field.kinds,
                    field.required,
                    field.max_chars,
                    field.exact,
                    field.revision,
                )
            )
            child = field.shape
            if child == "params" and value.get("action") == "highlight":
                child = "params:highlight"
            _visit(item, (*path, key), child, slots, containers)
        return
    if isinstance(shape, str) and shape in _MAPS:
        kinds, limit = _MAPS[shape]
        containers.append(_Container(path, closed=False, max_items=limit))
        for key, item in value.items():
            slots.append(_Slot((*path, key), kinds))
            child = "filter-list" if shape == "filters" else "quantity"
            _visit(item, (*path, key), child, slots, containers)
        return
    containers.append(_Container(path, closed=False))
    for key, item in value.items():
        slots.append(_Slot((*path, key), _KINDS, known=False))
        _visit(item, (*path, key), None, slots, containers)


def _get(raw: object, path: Path) -> Any:
    for step in path:
        raw = raw[step]  # type: ignore[index]
    return raw


def set_at(raw: object, path: Path, value: object) -> object:
    """Set the value at `path`; return the (possibly new) root."""
    if not path:
        return value
    _get(raw, path[:-1])[path[-1]] = value
    return raw


def _delete(raw: object, path: Path) -> None:
    del _get(raw, path[:-1])[path[-1]]


# -- mutations ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """A message changed by one mutation; `refused` when it is certainly invalid now."""

    raw: object
    mutation: str
    path: Path
    refused: bool


def _values_of_kind(kind: str) -> SearchStrategy[Any]:
    return {
        "none": st.none(),
        "bool": st.booleans(),
        "int": _INTS,
        "float": _FLOATS,
        "str": _texts(0, 8),
        "list": st.lists(_SCALARS, max_size=3),
        "dict": st.dictionaries(_DATA_KEYS, _SCALARS, max_size=3),
    }[kind]


def _unknown_keys(closed: bool) -> SearchStrategy[str]:
    forbidden = st.sampled_from(FORBIDDEN_KEYS)
    if not closed:
        return forbidden
    unknown = _texts(1, 12).filter(lambda key: key not in _KNOWN_NAMES)
    return st.one_of(forbidden, unknown)


def _nested(depth: int, pattern: Sequence[bool]) -> object:
    value: object = 1
    for level in range(depth):
        value = {"a": value} if pattern[level % len(pattern)] else [value]
    return value


Draw: TypeAlias = Callable[[SearchStrategy[Any]], Any]
_Mutation: TypeAlias = Callable[[Draw, Any, list[_Slot], list[_Container], bool], Mutant | None]


def _drop_field(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    # Only values in a dict can be dropped as fields; list items are not fields.
    candidates = [s for s in slots if s.path and isinstance(s.path[-1], str)]
    if refused_only:
        candidates = [s for s in candidates if s.required]
    if not candidates:
        return None
    slot = draw(st.sampled_from(candidates))
    _delete(raw, slot.path)
    return Mutant(raw, "drop-field", slot.path, slot.required)


def _add_field(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    if not containers:
        return None
    container = draw(st.sampled_from(containers))
    key = draw(_unknown_keys(container.closed) if refused_only else _unknown_keys(True))
    _get(raw, container.path)[key] = draw(_SCALARS)
    refused = key in FORBIDDEN_KEYS or container.closed
    return Mutant(raw, "add-field", (*container.path, key), refused)


def _retype(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    def others(slot: _Slot) -> list[str]:
        kinds = sorted(_KINDS - {_kind(_get(raw, slot.path))})
        if refused_only and not slot.exact:
            kinds = [kind for kind in kinds if kind not in slot.kinds]
        return kinds

    candidates = [s for s in slots if others(s)]
    if not candidates:
        return None
    slot = draw(st.sampled_from(candidates))
    kind = draw(st.sampled_from(others(slot)))
    raw = set_at(raw, slot.path, draw(_values_of_kind(kind)))
    refused = slot.known and (slot.exact or kind not in slot.kinds)
    return Mutant(raw, "retype", slot.path, refused)


def _oversize_string(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    strings = [s for s in slots if isinstance(_get(raw, s.path), str)]
    keys = [s for s in slots if s.path and isinstance(s.path[-1], str)]
    if not strings and not keys:
        return None
    char = draw(st.one_of(st.just("x"), _UTF8))
    if strings and (not keys or draw(st.booleans())):
        slot = draw(st.sampled_from(strings))
        limits = sorted({slot.max_chars, LIMITS.max_string_chars, LIMITS.max_message_bytes})
        length = draw(st.sampled_from([limit + 1 for limit in limits]))
        raw = set_at(raw, slot.path, char * length)
        return Mutant(raw, "oversize-string", slot.path, refused=True)
    # A key past the string limit: a renamed field or map entry.
    slot = draw(st.sampled_from(keys))
    length = draw(st.sampled_from([LIMITS.max_string_chars + 1, LIMITS.max_message_bytes + 1]))
    parent = _get(raw, slot.path[:-1])
    parent[char * length] = parent.pop(slot.path[-1])
    return Mutant(raw, "oversize-string", slot.path, refused=True)


def _oversize_collection(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    lists = [s for s in slots if isinstance(_get(raw, s.path), list)]
    if not containers and not lists:
        return None
    if containers and (not lists or draw(st.booleans())):
        container = draw(st.sampled_from(containers))
        target = _get(raw, container.path)
        # Just past the map's entry limit, or any extra key in a closed object.
        limit = container.max_items if container.max_items is not None else len(target)
        extra = max(1, limit - len(target) + 1) + draw(st.integers(0, 3))
        for index in range(extra):
            target[f"k{index}-{len(target)}"] = index
        # Certain only where the schema knows the dict: an object, or a map with a limit.
        refused = container.closed or container.max_items is not None
        return Mutant(raw, "oversize-collection", container.path, refused)
    # A list of more values than the message may have bytes.
    slot = draw(st.sampled_from(lists))
    _get(raw, slot.path).extend([0] * (LIMITS.max_message_bytes // 2 + 1))
    return Mutant(raw, "oversize-collection", slot.path, refused=True)


def _deep_nesting(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    candidates = [s for s in slots if s.path]
    if not candidates:
        return None
    slot = draw(st.sampled_from(candidates))
    # Any value is at depth >= 2, so max_depth more levels put the innermost past it.
    depth = LIMITS.max_depth + draw(st.integers(0, 3))
    pattern = draw(st.lists(st.booleans(), min_size=1, max_size=4))
    set_at(raw, slot.path, _nested(depth, pattern))
    return Mutant(raw, "deep-nesting", slot.path, refused=True)


def _non_finite(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    candidates = [s for s in slots if s.path]
    if not candidates:
        return None
    slot = draw(st.sampled_from(candidates))
    set_at(raw, slot.path, draw(st.sampled_from([math.nan, math.inf, -math.inf])))
    return Mutant(raw, "non-finite", slot.path, refused=True)


def _refuses_int(slot: _Slot, value: int) -> bool:
    if not slot.known:
        return False
    if slot.exact:
        return value != 1 or "int" not in slot.kinds  # only version is an int, and it is 1
    if "int" not in slot.kinds:
        return True
    if slot.revision:
        return not 1 <= value <= MAX_SAFE_INTEGER
    return not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def _edge_int(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    def values(slot: _Slot) -> list[int]:
        return [v for v in EDGE_INTS if not refused_only or _refuses_int(slot, v)]

    candidates = [s for s in slots if s.path and values(s)]
    if not candidates:
        return None
    slot = draw(st.sampled_from(candidates))
    value = draw(st.sampled_from(values(slot)))
    set_at(raw, slot.path, value)
    return Mutant(raw, "edge-int", slot.path, _refuses_int(slot, value))


def _revision_type(
    draw: Draw, raw: Any, slots: list[_Slot], containers: list[_Container], refused_only: bool
) -> Mutant | None:
    candidates = [s for s in slots if s.revision]
    if not candidates:
        return None
    slot = draw(st.sampled_from(candidates))
    current = _get(raw, slot.path)
    number = current if _kind(current) == "int" else 1
    value = draw(st.sampled_from([1.0, float(number), True, False, "1", str(number), f" {number}"]))
    set_at(raw, slot.path, value)
    return Mutant(raw, "revision-type", slot.path, refused=True)


_MUTATIONS: Final[dict[str, _Mutation]] = {
    "drop-field": _drop_field,
    "add-field": _add_field,
    "retype": _retype,
    "oversize-string": _oversize_string,
    "oversize-collection": _oversize_collection,
    "deep-nesting": _deep_nesting,
    "non-finite": _non_finite,
    "edge-int": _edge_int,
    "revision-type": _revision_type,
}


def _mutate(draw: Draw, raw: object, kinds: Sequence[str], refused_only: bool) -> Mutant:
    raw = copy.deepcopy(raw)
    slots, containers = _walk(raw)
    first = draw(st.sampled_from(list(kinds)))
    for kind in [first, *(kind for kind in kinds if kind != first)]:
        mutant = _MUTATIONS[kind](draw, raw, slots, containers, refused_only)
        if mutant is not None:
            return mutant
    # Nothing of these kinds applies here (a revision type on a bye, say).
    return Mutant(raw, "none", (), refused=False)


def mutants(
    strategy: SearchStrategy[Any],
    *,
    kinds: Sequence[str] = MUTATIONS,
    refused_only: bool = False,
) -> SearchStrategy[Mutant]:
    """Messages from `strategy`, each changed by one mutation of `kinds`.

    With `refused_only`, only mutations certain to make the message invalid are drawn;
    a message where none of `kinds` applies is left out.
    """

    @st.composite
    def build(draw: st.DrawFn) -> Mutant:
        return _mutate(draw, draw(strategy), kinds, refused_only)

    result = build()
    return result.filter(lambda mutant: mutant.refused) if refused_only else result


def mutated(strategy: SearchStrategy[Any], *, max_mutations: int = 3) -> SearchStrategy[object]:
    """Raw values from `strategy`, each changed by 1 to `max_mutations` mutations."""

    @st.composite
    def build(draw: st.DrawFn) -> object:
        raw = draw(strategy)
        for _ in range(draw(st.integers(1, max_mutations))):
            raw = _mutate(draw, raw, MUTATIONS, refused_only=False).raw
        return raw

    return build()


_FIXED_PARAMS: Final[list[tuple[str, dict[str, str]]]] = [
    ("highlight", {"tone": "focus"}),
    ("highlight", {"tone": "related"}),
    ("locate", {}),
    ("refresh", {}),
    ("clear-highlight", {}),
]
_TYPES: Final = (
    "context",
    "selection-cleared",
    "command",
    "receipt",
    "conversation",
    "connected",
    "bound",
    "bye",
)


def stamped(
    *,
    types: Sequence[str] = _TYPES,
    message_id: SearchStrategy[str] | None = None,
    page_instance_ids: SearchStrategy[str] | None = None,
    conversation_ids: SearchStrategy[str] | None = None,
    revision: SearchStrategy[int] | None = None,
    component_ids: SearchStrategy[str] | None = None,
    resource_refs: SearchStrategy[str] | None = None,
) -> SearchStrategy[Raw]:
    """Cheap well-formed messages of these `types`: the `wire` builders' content with
    drawn ids, identities, revisions, targets, actions and receipt outcomes.

    For long sequences, where drawing rich content for every item would be slow;
    `messages()` draws the content too.
    """
    short = st.text(_ID_CHARS, min_size=1, max_size=8)
    ids = message_ids() if message_id is None else message_id
    stamp = st.fixed_dictionaries(
        {
            "messageId": ids,
            "pageInstanceId": short if page_instance_ids is None else page_instance_ids,
            "conversationId": short if conversation_ids is None else conversation_ids,
        }
    )
    revisions_ = revisions() if revision is None else revision
    components = short if component_ids is None else component_ids
    refs = short if resource_refs is None else resource_refs

    def build(builder: Callable[..., Raw], **fields: SearchStrategy[Any]) -> SearchStrategy[Raw]:
        return st.builds(
            lambda head, body: builder(**head, **body), stamp, st.fixed_dictionaries(fields)
        )

    def target(component: str, ref: str | None) -> dict[str, str]:
        if ref is None:
            return {"componentId": component}
        return {"componentId": component, "resourceRef": ref}

    def selection(component: str, ref: str) -> Raw:
        return wire.selection(componentId=component, resourceRef=ref)

    builders: dict[str, list[SearchStrategy[Raw]]] = {
        "context": [
            build(
                wire.context,
                selectionRevision=revisions_,
                selection=st.builds(selection, components, refs),
            )
        ],
        "selection-cleared": [build(wire.selection_cleared, selectionRevision=revisions_)],
        "command": [
            build(
                wire.command,
                basisRevision=revisions_,
                action=st.just(action),
                params=st.builds(dict, st.just(params)),
                target=st.builds(target, components, st.none() | refs),
            )
            for action, params in _FIXED_PARAMS
        ],
        "receipt": [
            build(
                wire.receipt,
                commandId=ids,
                layer=st.sampled_from(["received", "ui"]),
                status=st.sampled_from(["applied", "stale-context", "not-found", "rejected"]),
            )
        ],
        "conversation": [build(wire.conversation)],
        "connected": [build(wire.connected, role=st.sampled_from(["page", "assistant"]))],
        "bound": [build(wire.bound)],
        "bye": [build(wire.bye)],
    }
    return st.one_of([strategy for kind in types for strategy in builders[kind]])


_JSON: SearchStrategy[Any] = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(_texts(0, 10), children, max_size=4)
    ),
    max_leaves=8,
)
_NOT_JSON: SearchStrategy[Any] = st.sampled_from(
    [math.nan, math.inf, b"bytes", (1, 2), frozenset({1}), object(), 10**5000, "\ud800"]
)


def hostile(strategy: SearchStrategy[Any] | None = None) -> SearchStrategy[object]:
    """Anything a hostile or broken peer might post: mutants of `strategy` (default: any
    message), arbitrary JSON, and values no JSON parser produces."""
    base = messages() if strategy is None else strategy
    return st.one_of(
        mutated(base),
        mutated(base),
        base,
        _JSON,
        st.dictionaries(_texts(0, 12), st.one_of(_JSON, _NOT_JSON), max_size=6),
        _NOT_JSON,
    )
