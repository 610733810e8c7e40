"""The wire models of docs/protocol.md and the one function that admits a raw message.

This module owns the shape of every message on the bound port (sections 3-5 of
docs/protocol.md), the configurable payload limits, and `parse_message`, the single gate a
raw value passes before any other code looks at it. Fields are snake_case in Python and
camelCase on the wire; validation is strict (a revision given as a float, bool or string
is rejected, never coerced) and nothing extra is accepted anywhere.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Annotated, Final, Literal, Self, TypeAlias, TypeGuard

import pydantic_core
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.types import AllowInfNan
from pydantic_core import ErrorDetails

from pagecontext.errors import MessageRejected
from pagecontext.windowrules import NONCE_CHARS, PROTOCOL, VERSION

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "MESSAGE_ID_PATTERN",
    "NONCE_PATTERN",
    "PROTOCOL",
    "RECEIPT_REASONS",
    "REFUSAL_REASONS",
    "VERSION",
    "Action",
    "BoundMessage",
    "ByeMessage",
    "CommandMessage",
    "ConnectedMessage",
    "ContextMessage",
    "ConversationMessage",
    "Limits",
    "Message",
    "Quantity",
    "Reason",
    "ReceiptMessage",
    "ReceiptStatus",
    "Role",
    "Scalar",
    "Selection",
    "SelectionClearedMessage",
    "SnapshotValue",
    "Target",
    "WireModel",
    "dump_message",
    "escapes_surrogate",
    "first_problem",
    "is_reason",
    "parse_context_json",
    "parse_json",
    "parse_message",
    "problem_text",
    "unreadable",
]

MAX_SAFE_INTEGER: Final = 2**53 - 1
# The reasons of the receipts a page sends (docs/protocol.md section 8.4), refusals of
# section 8.3 among them. A page may name its own for a command it carried out itself.
RECEIPT_REASONS: Final = frozenset(
    {
        "ok",
        "not-a-command",
        "conversation-mismatch",
        "page-instance",
        "future-revision",
        "revision-evicted",
        "view-changed",
        "not-rendered",
        "no-refresh",
        "not-focusable",
        "not-scrolled",
    }
)
# Every reason a port message may be refused with (docs/protocol.md section 8.3): those
# of `parse_message`, and `not-plain`, which only the receiving worker's plain-data
# check finds (`unreadable`).
REFUSAL_REASONS: Final = frozenset(
    {
        "malformed",
        "forbidden-key",
        "too-deep",
        "not-json",
        "not-plain",
        "too-large",
        "unsupported-version",
        "over-limit",
    }
)

MESSAGE_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# 128 random bits in base64url without padding are exactly NONCE_CHARS (22) characters.
NONCE_PATTERN = rf"^[A-Za-z0-9_-]{{{NONCE_CHARS}}}$"
_REASON_PATTERN = r"^[a-z0-9-]{1,64}$"
# [0-9] rather than \d: pydantic's Rust regex engine treats \d as any Unicode digit.
_OBSERVED_AT_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"
_MESSAGE_ID_RE = re.compile(MESSAGE_ID_PATTERN)
# Keys that would reach Object.prototype if a peer's JS ever merged the payload.
_FORBIDDEN_KEYS = frozenset({"__proto__", "constructor", "prototype"})
# Each as a JSON string, as it appears in JSON text when it has no escapes.
_FORBIDDEN_KEYS_QUOTED = tuple(f'"{key}"' for key in sorted(_FORBIDDEN_KEYS))


@dataclass(frozen=True)
class Limits:
    """Payload limits applied by `parse_message` (docs/protocol.md section 4 defaults).

    Depth counts nested objects and arrays: the message object itself is depth 1.
    """

    max_id_chars: int = 256
    max_filter_keys: int = 32
    max_snapshot_fields: int = 64
    max_string_chars: int = 1024
    max_message_bytes: int = 16384
    max_depth: int = 8
    max_detail_chars: int = 200


DEFAULT_LIMITS = Limits()

# The model config is strict, so `str | bool | int | float | None` never coerces: True is
# not 1, "1" is not 1, and 1.0 is not accepted where an int is required. A number is at
# most MAX_SAFE_INTEGER either way, as JavaScript holds every integer exactly only up to
# there (Number.MAX_SAFE_INTEGER): a larger integer would be rounded by the page's
# JavaScript, or, from Python, reach JavaScript as a BigInt, which no JSON carries. A
# float that large is an integer too (every double above 2**53 is).
_SafeInt = Annotated[int, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
_FiniteFloat = Annotated[
    float, AllowInfNan(False), Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)
]
Scalar: TypeAlias = str | bool | _SafeInt | _FiniteFloat | None
Revision = Annotated[int, Field(ge=1, le=MAX_SAFE_INTEGER)]
MessageId = Annotated[str, StringConstraints(pattern=MESSAGE_ID_PATTERN)]
# Ids are opaque data: only their length is bounded (by Limits.max_id_chars, after
# validation). A resourceRef that looks like a selector is still just an id.
Identifier = Annotated[str, StringConstraints(min_length=1)]
Role = Literal["page", "assistant"]
Action = Literal["highlight", "locate", "refresh", "clear-highlight"]
ReceiptStatus = Literal["applied", "stale-context", "not-found", "rejected"]


def _exactly_an_int(value: object) -> object:
    if type(value) is not int:
        raise ValueError("must be an integer")  # pydantic wants ValueError
    return value


def _is_none(value: object) -> bool:
    return value is None


def _real_time(text: str) -> str:
    # The pattern admits "2024-13-45T99:99:99.999Z"; a time the user saw must exist.
    # Hour 24 is refused here: Python 3.14's fromisoformat (the workers') reads it as the
    # next day's midnight, 3.11's (the server's) refuses it, and both must agree.
    try:
        if text[11:13] == "24":
            raise ValueError
        datetime.fromisoformat(text[:-1])
    except ValueError:
        raise ValueError("observedAt is not a real UTC date and time") from None
    return text


# A reason: a word of lower-case letters, digits and hyphens (a receipt's, a server's
# refusal), never free text.
Reason = Annotated[str, StringConstraints(pattern=_REASON_PATTERN)]
_REASON_RE = re.compile(_REASON_PATTERN)


def is_reason(value: object) -> TypeGuard[str]:
    """True if `value` is a `Reason`: a word, where another may be free text."""
    return isinstance(value, str) and _REASON_RE.fullmatch(value) is not None


ObservedAt = Annotated[
    str, StringConstraints(pattern=_OBSERVED_AT_PATTERN), AfterValidator(_real_time)
]


class WireModel(BaseModel):
    """The base of every model on the wire or in a JSON body: frozen, strict, nothing
    extra, snake_case in Python and camelCase in JSON."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        # JSON keys only: pydantic-core's string cache (16,384 strings) would otherwise
        # keep the values of the last messages, ids and stamps that never repeat, so a
        # worker's memory in use grew for the first ~40,000 messages before it filled.
        cache_strings="keys",
    )


class Quantity(WireModel):
    """A snapshot value with its unit, as the user saw it."""

    value: Scalar
    unit: str


# A snapshot value: a quantity (a JSON object) or a scalar. Strict, a JSON value matches
# one member at most, except an integer, which float also takes: int comes first, as
# in the smart mode's choice. Tried left to right, objects first, validation is about
# a fifth faster than the smart mode's search for the best match.
SnapshotValue: TypeAlias = Annotated[Quantity | Scalar, Field(union_mode="left_to_right")]


class Selection(WireModel):
    """What the user selected: a reference to re-query plus what they saw, and when."""

    page_id: Identifier
    component_id: Identifier
    resource_ref: Identifier
    observed_at: ObservedAt
    filters: dict[str, Scalar | list[Scalar]]
    snapshot: dict[str, SnapshotValue] | None = Field(default=None, exclude_if=_is_none)


class Target(WireModel):
    """The object a command points at; no resourceRef means the component itself."""

    component_id: Identifier
    resource_ref: Identifier | None = Field(default=None, exclude_if=_is_none)


class _Envelope(WireModel):
    # protocol and version default so Python code need not repeat them; on the wire
    # their presence and exact values are checked by parse_message before validation.
    protocol: Literal["pagecontext"] = PROTOCOL
    # BeforeValidator: from JSON text, pydantic admits `true` and `1.0` as Literal[1].
    version: Annotated[Literal[1], BeforeValidator(_exactly_an_int)] = VERSION
    message_id: MessageId
    page_instance_id: Identifier
    conversation_id: Identifier


class ContextMessage(_Envelope):
    """page -> assistant: the user's selection at `selection_revision`."""

    type: Literal["context"] = "context"
    selection_revision: Revision
    selection: Selection


class SelectionClearedMessage(_Envelope):
    """page -> assistant: the user cleared the selection; the revision still increases."""

    type: Literal["selection-cleared"] = "selection-cleared"
    selection_revision: Revision


class ReceiptMessage(_Envelope):
    """page -> assistant: the outcome of a command at one layer."""

    type: Literal["receipt"] = "receipt"
    command_id: MessageId
    layer: Literal["received", "ui"]
    status: ReceiptStatus
    reason: Reason
    # Its length is the limits' (`max_detail_chars`, `over-limit`), as every other one is.
    detail: str | None = Field(default=None, exclude_if=_is_none)


class ConversationMessage(_Envelope):
    """assistant -> page: the user started a new conversation.

    The envelope's `conversation_id` IS the new conversation id: the message carries no
    separate field for it, and every later page message is stamped with it.
    """

    type: Literal["conversation"] = "conversation"


# A `locate`'s params that leave the keyboard's focus where it is: the assistant sends
# them for a locate the user did not ask for with a press of their own (an agent's).
KEEP_FOCUS: Final[Mapping[str, str]] = MappingProxyType({"focus": "keep"})


class CommandMessage(_Envelope):
    """assistant -> page: one UI command from the closed set, bound to a revision."""

    type: Literal["command"] = "command"
    basis_revision: Revision
    action: Action
    target: Target
    params: dict[str, str]

    @property
    def command_id(self) -> str:
        """The command's id, which is its messageId."""
        return self.message_id

    @model_validator(mode="after")
    def _params_fit_action(self) -> Self:
        # highlight and locate point at one object: without a resourceRef there is none.
        if self.action in ("highlight", "locate") and self.target.resource_ref is None:
            raise ValueError(f"{self.action} needs target.resourceRef")
        # Params are fixed per action (docs/protocol.md section 5): nothing else may ride along.
        if self.action == "highlight":
            if set(self.params) != {"tone"} or self.params["tone"] not in ("focus", "related"):
                raise ValueError('highlight takes exactly {"tone": "focus" | "related"}')
        elif self.action == "locate":
            # `{}` moves the keyboard's focus to the object; `{"focus": "keep"}` leaves it
            # where the user has it (docs/protocol.md 8.16).
            if self.params and self.params != KEEP_FOCUS:
                raise ValueError('locate takes {} or exactly {"focus": "keep"}')
        elif self.params:
            raise ValueError(f"{self.action} takes no params")
        return self


class ConnectedMessage(_Envelope):
    """child -> embedder, first message on the port: who the child is, and its nonce."""

    type: Literal["connected"] = "connected"
    role: Role
    instance_id: Identifier
    nonce: Annotated[str, StringConstraints(pattern=NONCE_PATTERN)]


class BoundMessage(_Envelope):
    """embedder -> child, first message on the port after `connected`: the embedder
    checked the child's nonce and identities and bound the port (docs/protocol.md 8.12)."""

    type: Literal["bound"] = "bound"


class ByeMessage(_Envelope):
    """Either side: the connection is closing."""

    type: Literal["bye"] = "bye"


Message = Annotated[
    ContextMessage
    | SelectionClearedMessage
    | ReceiptMessage
    | ConversationMessage
    | CommandMessage
    | ConnectedMessage
    | BoundMessage
    | ByeMessage,
    Field(discriminator="type"),
]

# Built once: constructing a TypeAdapter is expensive, validating with it is not.
_MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)


class _CheckFailedError(Exception):
    """Internal: a raw value failed a check; carries the reason code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_message(raw: object, limits: Limits = DEFAULT_LIMITS) -> Message:
    """Validate a raw port message and return it as a model.

    Raises MessageRejected with reason "malformed", "forbidden-key", "too-deep",
    "not-json", "too-large", "unsupported-version" or "over-limit"; its `message_id` is
    set whenever the raw value carried a valid messageId.
    """
    message_id = _readable_message_id(raw)
    try:
        if not isinstance(raw, dict):
            raise _CheckFailedError("malformed")
        longest_string = _inspect_json(raw, limits)
        _check_size(raw, limits)
        _check_envelope(raw)
        message = _MESSAGE_ADAPTER.validate_python(raw, by_alias=True, by_name=False)
        _check_limits(message, longest_string, limits)
    except _CheckFailedError as refusal:
        raise MessageRejected(refusal.reason, message_id) from None
    except ValidationError:
        raise MessageRejected("malformed", message_id) from None
    return message


# A number with an exponent JavaScript's JSON.stringify does not write: an upper-case E,
# or one with no sign (it writes 1e-7 and, past 1e21, 1e+21). Only a number token: in
# compact JSON one follows `:`, `,` or `[` (a string's "550e8400" or "SKU 3E" is none).
_NOT_JS_EXPONENT: Final = re.compile(r"[:,\[]-?[0-9]+(?:\.[0-9]+)?(?:E|e[0-9])")
# The deepest a valid context message nests (message, selection, filters, a list in
# them); with a smaller depth limit the fast path below is not taken.
_CONTEXT_DEPTH: Final = 4
# Longer than any field name and any messageId: with a string limit at least this long,
# only the free-form strings can break it, and the fast path checks those.
_FIELD_NAME_CHARS: Final = 64


def parse_context_json(text: str, limits: Limits = DEFAULT_LIMITS) -> ContextMessage | None:
    """Return the context message `text` (compact JSON) holds, if it passes every check.

    The fast path for the message that floods the port: the JSON text is validated
    in one pass by pydantic-core, then the checks the schema does not cover (keys and
    string lengths inside filters and snapshot, the size of the text, the limits) run
    on the model. None means the text was not shown to be a valid context message;
    `parse_message(json.loads(text))` then gives the reason it is refused, or the
    message of another type. Never None for a message `parse_message` would refuse
    for a reason this path does not know, and never a model where it would refuse.
    """
    if (
        limits.max_depth < _CONTEXT_DEPTH
        or limits.max_string_chars < _FIELD_NAME_CHARS
        # Escaped lone surrogates ("\ud800") are not text; parse_message refuses them.
        or escapes_surrogate(text)
    ):
        return None
    # The size limit is on the message as Python writes it (parse_message), which can
    # be a byte longer per small exponent than JavaScript's text: 1e-07 for 1e-7. Other
    # spellings of a number (1e5, 1E-7, which JavaScript never writes) can be longer
    # still as Python writes them (100000.0): near the limit, parse_message decides.
    if len(text) * 4 > limits.max_message_bytes and (
        len(text.encode("utf-8")) + text.count("e-") > limits.max_message_bytes
        or _NOT_JS_EXPONENT.search(text) is not None
    ):
        return None
    try:
        message = ContextMessage.model_validate_json(text, by_alias=True, by_name=False)
        if not {"protocol", "version", "type"} <= message.model_fields_set:
            return None
        longest = 0 if _strings_within_limits(text, limits) else _longest_string(message)
        _check_limits(message, longest, limits)
    except (ValidationError, _CheckFailedError):
        return None
    return message


def _strings_within_limits(text: str, limits: Limits) -> bool:
    """True if no string in the JSON `text` can be a forbidden key or over the string
    limit, seen from the text alone: a string decoded from JSON is never longer than
    the text, and without escapes a forbidden key appears in it as it is."""
    if len(text) > limits.max_string_chars or "\\" in text:
        return False
    # A loop, not all() over a generator: this runs on every context, and is faster.
    for quoted in _FORBIDDEN_KEYS_QUOTED:  # noqa: SIM110
        if quoted in text:
            return False
    return True


def _longest_string(message: ContextMessage) -> int:
    """The longest id, free-form key or string in a context message (field names and
    patterned strings are shorter than `_FIELD_NAME_CHARS`); raises on a forbidden key."""
    selection = message.selection
    longest = max(map(len, _identifiers(message)))
    for key, value in selection.filters.items():
        if key in _FORBIDDEN_KEYS:
            raise _CheckFailedError("forbidden-key")
        longest = max(longest, len(key))
        if type(value) is str:
            longest = max(longest, len(value))
        elif type(value) is list:
            for item in value:
                if type(item) is str:
                    longest = max(longest, len(item))
    for key, field in (selection.snapshot or {}).items():
        if key in _FORBIDDEN_KEYS:
            raise _CheckFailedError("forbidden-key")
        longest = max(longest, len(key))
        if type(field) is Quantity:
            longest = max(longest, len(field.unit))
            field = field.value
        if type(field) is str:
            longest = max(longest, len(field))
    return longest


def dump_message(message: Message) -> dict[str, object]:
    """Return the message as a JSON-compatible dict with camelCase keys.

    Optional fields that are unset are left out; None values inside filters and
    snapshots are kept, since they are data.
    """
    return message.model_dump(mode="json")


# The deepest JSON from outside that is read. CPython's own parser, in WebAssembly,
# overflows the JavaScript stack on a few thousand nested brackets: a fatal error of the
# whole runtime, not a RecursionError. pydantic-core's parser stops at this depth.
MAX_JSON_DEPTH: Final = 200
# What the depth count reads, left to right, each character once: a JSON string (to
# skip; one left open runs to the end of the text, rather than be tried again from each
# quote inside it, which took time growing with the square of the text's length), or a
# bracket.
_JSON_TOKEN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


def escapes_surrogate(text: str) -> bool:
    """True if JSON `text` may escape a surrogate (`\\ud800` to `\\udfff`), which
    pydantic-core's parser refuses when it stands alone."""
    return "\\ud" in text or "\\uD" in text


def parse_json(text: str | bytes) -> object:
    """Parse JSON text from outside (an agent, a server, the browser's storage), nested
    at most MAX_JSON_DEPTH deep. Raises ValueError if it is not JSON or nested deeper.

    pydantic-core's parser refuses an escaped lone surrogate, which JSON allows (and
    JavaScript writes for a character cut in two); such text is read by Python's parser,
    its depth counted first.
    """
    try:
        # Keys only in pydantic-core's string cache, as for the wire models (WireModel).
        return pydantic_core.from_json(text, cache_strings="keys")
    except ValueError:
        raw = text.decode("utf-8", "surrogatepass") if isinstance(text, bytes) else text
        if not escapes_surrogate(raw):
            raise
    depth = deepest = 0
    for token in _JSON_TOKEN.findall(raw):
        if token in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in ("]", "}"):
            depth -= 1
    if deepest > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH}")
    return json.loads(raw)


def problem_text(problem: ErrorDetails, whole: str) -> str:
    """One problem pydantic found in a value from outside, as `where: what` for the
    person who sent it (`whole` names the value itself), in the sender's words: a value
    that should be an object says so, not which model would have read it."""
    where = ".".join(str(part) for part in problem["loc"]) or whole
    if problem["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return f"{where}: should be a JSON object"
    return f"{where}: {problem['msg']}"


def first_problem(error: ValidationError, whole: str) -> str:
    """The first problem of `error` (`problem_text`), with how many more there are."""
    problems = error.errors(include_url=False)
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return problem_text(problems[0], whole) + more


def unreadable(head: object, reason: str) -> MessageRejected:
    """The rejection of a port message the worker could not read as plain data (`reason`:
    "not-json", "not-plain", "too-deep", "too-large"), as `parse_message` raises it: with
    the messageId of `head`, its envelope's scalar fields, if that is a valid one."""
    return MessageRejected(reason, _readable_message_id(head))


def _readable_message_id(raw: object) -> str | None:
    if not isinstance(raw, dict):
        return None
    candidate = raw.get("messageId")
    if isinstance(candidate, str) and _MESSAGE_ID_RE.fullmatch(candidate):
        return candidate
    return None


def _inspect_json(raw: dict[object, object], limits: Limits) -> int:
    """Check keys, depth and value types in one walk; return the longest string seen."""
    # A JSON value needs at least one byte, so more nodes than bytes is already too
    # large: the node budget bounds the walk's time before the exact size is measured.
    longest, _ = _walk(raw, 1, limits, limits.max_message_bytes)
    return longest


def _walk(value: object, depth: int, limits: Limits, budget: int) -> tuple[int, int]:
    """Return (longest string or key, remaining node budget) below `value`.

    Recursive with exact type checks: this runs on every port message, and it is twice
    as fast as an explicit stack. Depth is checked before descending, so the recursion
    is at most `limits.max_depth` deep.
    """
    kind = type(value)
    budget -= 1
    if budget < 0:
        raise _CheckFailedError("too-large")
    if kind is str:
        return len(value), budget  # type: ignore[arg-type]  # kind is str
    if kind is int or kind is bool or value is None:
        return 0, budget
    if kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]  # kind is float
            raise _CheckFailedError("not-json")
        return 0, budget
    longest = 0
    if kind is dict:
        if depth > limits.max_depth:
            raise _CheckFailedError("too-deep")
        for key, item in value.items():  # type: ignore[attr-defined]  # kind is dict
            if type(key) is not str:
                raise _CheckFailedError("not-json")
            if key in _FORBIDDEN_KEYS:
                raise _CheckFailedError("forbidden-key")
            found, budget = _walk(item, depth + 1, limits, budget)
            longest = max(longest, len(key), found)
        return longest, budget
    if kind is list:
        if depth > limits.max_depth:
            raise _CheckFailedError("too-deep")
        for item in value:  # type: ignore[attr-defined]  # kind is list
            found, budget = _walk(item, depth + 1, limits, budget)
            longest = max(longest, found)
        return longest, budget
    raise _CheckFailedError("not-json")


def _check_size(raw: dict[object, object], limits: Limits) -> None:
    try:
        text = json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        # Only an int past Python's digit limit gets here (values were checked first).
        raise _CheckFailedError("too-large") from None
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        # A lone surrogate (possible in a JS string) is not valid Unicode text.
        raise _CheckFailedError("not-json") from None
    if size > limits.max_message_bytes:
        raise _CheckFailedError("too-large")


def _check_envelope(raw: dict[object, object]) -> None:
    if raw.get("protocol") != PROTOCOL or "version" not in raw:
        raise _CheckFailedError("malformed")
    version = raw["version"]
    # type() rather than ==: 1.0 == 1 and True == 1 in Python, but neither is version 1.
    if type(version) is not int or version != VERSION:
        raise _CheckFailedError("unsupported-version")


def _check_limits(message: Message, longest_string: int, limits: Limits) -> None:
    if longest_string > limits.max_string_chars:
        raise _CheckFailedError("over-limit")
    if max(map(len, _identifiers(message))) > limits.max_id_chars:
        raise _CheckFailedError("over-limit")
    if isinstance(message, ContextMessage):
        selection = message.selection
        if len(selection.filters) > limits.max_filter_keys:
            raise _CheckFailedError("over-limit")
        if selection.snapshot is not None and len(selection.snapshot) > limits.max_snapshot_fields:
            raise _CheckFailedError("over-limit")
    if (
        isinstance(message, ReceiptMessage)
        and message.detail is not None
        and len(message.detail) > limits.max_detail_chars
    ):
        raise _CheckFailedError("over-limit")


def _identifiers(message: Message) -> tuple[str, ...]:
    # A tuple, not a generator: this runs twice on every context message.
    common = (message.page_instance_id, message.conversation_id)
    if isinstance(message, ContextMessage):
        selection = message.selection
        return (*common, selection.page_id, selection.component_id, selection.resource_ref)
    if isinstance(message, CommandMessage):
        target = message.target
        if target.resource_ref is not None:
            return (*common, target.component_id, target.resource_ref)
        return (*common, target.component_id)
    if isinstance(message, ConnectedMessage):
        return (*common, message.instance_id)
    return common
