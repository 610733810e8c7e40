"""Tests for pagecontext.models: the wire shapes and parse_message's refusals."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagecontext.errors import MessageRejected
from pagecontext.models import (
    DEFAULT_LIMITS,
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    REFUSAL_REASONS,
    ByeMessage,
    CommandMessage,
    ConnectedMessage,
    ContextMessage,
    ConversationMessage,
    Limits,
    Quantity,
    ReceiptMessage,
    SelectionClearedMessage,
    Target,
    dump_message,
    parse_context_json,
    parse_json,
    parse_message,
)
from wire import (
    bye,
    command,
    connected,
    context,
    conversation,
    receipt,
    selection_cleared,
    with_selection,
    without,
)


def rejection(raw: object, limits: Limits | None = None) -> tuple[str, str | None]:
    with pytest.raises(MessageRejected) as caught:
        parse_message(raw, limits or DEFAULT_LIMITS)
    return caught.value.reason, caught.value.message_id


def test_context_round_trips_through_parse_and_dump() -> None:
    """A valid context parses to ContextMessage and dumps back to the same dict."""
    raw = context()
    message = parse_message(raw)
    assert isinstance(message, ContextMessage)
    assert message.selection_revision == 3
    assert message.selection.snapshot == {
        "amount": Quantity(value=12.5, unit="EUR"),
        "name": "Acme",
    }
    assert dump_message(message) == raw


@pytest.mark.parametrize(
    ("raw", "model"),
    [
        (selection_cleared(selectionRevision=4), SelectionClearedMessage),
        (conversation(), ConversationMessage),
        (bye(), ByeMessage),
        (
            receipt(layer="ui", status="not-found", reason="not-rendered", detail="row gone"),
            ReceiptMessage,
        ),
        (connected(role="assistant", instanceId="asst-1", nonce="A" * 22), ConnectedMessage),
        (command(), CommandMessage),
    ],
)
def test_every_message_type_round_trips(raw: dict[str, Any], model: type[object]) -> None:
    """Each message type parses to its model and dumps back unchanged."""
    message = parse_message(raw)
    assert isinstance(message, model)
    assert dump_message(message) == raw


def test_optional_fields_are_left_out_of_the_dump_but_none_data_is_kept() -> None:
    """Unset optional fields vanish from the dump; None values inside data stay."""
    raw = with_selection(snapshot={"note": None, "q": {"value": None, "unit": "pcs"}})
    assert dump_message(parse_message(raw))["selection"]["snapshot"] == {  # type: ignore[index]
        "note": None,
        "q": {"value": None, "unit": "pcs"},
    }
    bare = command(action="clear-highlight", params={}, target={"componentId": "table"})
    assert dump_message(parse_message(bare))["target"] == {"componentId": "table"}
    minimal = context()
    del minimal["selection"]["snapshot"]
    assert "snapshot" not in dump_message(parse_message(minimal))["selection"]  # type: ignore[operator]


@pytest.mark.parametrize(("action", "params"), [("highlight", {"tone": "focus"}), ("locate", {})])
def test_a_command_that_points_at_an_object_needs_its_resource_ref(
    action: str, params: dict[str, str]
) -> None:
    """highlight and locate without target.resourceRef point at nothing: malformed."""
    bare = command(action=action, params=params, target={"componentId": "table"})
    with pytest.raises(MessageRejected) as refused:
        parse_message(bare)
    assert refused.value.reason == "malformed"


def test_command_id_is_the_message_id() -> None:
    """A command's commandId is its messageId."""
    message = parse_message(command(messageId="cmd-9"))
    assert isinstance(message, CommandMessage)
    assert message.command_id == "cmd-9"


def test_models_build_from_snake_case_names_in_python() -> None:
    """Python code builds messages by field name, with protocol and version defaulted."""
    message = CommandMessage(
        message_id="c1",
        page_instance_id="p",
        conversation_id="c",
        basis_revision=1,
        action="refresh",
        target=Target(component_id="chart"),
        params={},
    )
    assert dump_message(message)["protocol"] == "pagecontext"
    assert dump_message(message)["version"] == 1


@pytest.mark.parametrize(
    ("params", "action"),
    [
        ({"tone": "focus"}, "highlight"),
        ({"tone": "related"}, "highlight"),
        ({}, "locate"),
        ({"focus": "keep"}, "locate"),
        ({}, "refresh"),
        ({}, "clear-highlight"),
    ],
)
def test_each_action_accepts_its_fixed_params(params: dict[str, str], action: str) -> None:
    """Every action of the closed set parses with exactly its params."""
    assert isinstance(parse_message(command(action=action, params=params)), CommandMessage)


@pytest.mark.parametrize(
    ("action", "params"),
    [
        ("highlight", {}),
        ("highlight", {"tone": "loud"}),
        ("highlight", {"tone": "focus", "color": "red"}),
        ("locate", {"tone": "focus"}),
        ("locate", {"focus": "move"}),
        ("locate", {"focus": "keep", "tone": "focus"}),
        ("refresh", {"focus": "keep"}),
        ("refresh", {"data": "x"}),
        ("clear-highlight", {"all": "yes"}),
        ("eval", {}),
        ("write", {}),
    ],
)
def test_commands_outside_the_closed_set_or_with_extra_params_are_malformed(
    action: str, params: dict[str, str]
) -> None:
    """Unknown actions and wrong or extra params are rejected as malformed."""
    assert rejection(command(action=action, params=params)) == ("malformed", "msg-1")


def test_a_selector_like_resource_ref_is_only_data() -> None:
    """A resourceRef that looks like a CSS selector or HTML parses as an opaque id."""
    ref = '<img src=x onerror=alert(1)> #row, tr[data-x="1"]'
    message = parse_message(command(target={"componentId": "table", "resourceRef": ref}))
    assert isinstance(message, CommandMessage)
    assert message.target.resource_ref == ref


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(without(context(), "selection"), id="missing"),
        pytest.param(context(extra="x"), id="extra-top"),
        pytest.param(with_selection(extra="x"), id="extra-nested"),
        pytest.param(
            with_selection(snapshot={"q": {"value": 1, "unit": "u", "x": 1}}), id="extra-q"
        ),
        pytest.param(context(message_id="msg-1"), id="snake-case-key"),
        pytest.param(context(selectionRevision=3.0), id="revision-float"),
        pytest.param(context(selectionRevision=-1), id="revision-negative"),
        pytest.param(context(selectionRevision=0), id="revision-zero"),
        pytest.param(context(selectionRevision="3"), id="revision-string"),
        pytest.param(context(selectionRevision=True), id="revision-bool"),
        pytest.param(context(selectionRevision=MAX_SAFE_INTEGER + 1), id="revision-unsafe"),
        pytest.param(selection_cleared(selectionRevision=0), id="c0"),
        pytest.param(context(type="telemetry"), id="unknown-type"),
        pytest.param(without(context(), "type"), id="no-type"),
        pytest.param(context(pageInstanceId=""), id="empty-id"),
        pytest.param(context(pageInstanceId=7), id="id-int"),
        pytest.param(with_selection(observedAt="2024-05-06T07:08:09Z"), id="no-millis"),
        pytest.param(with_selection(observedAt="2024-05-06T07:08:09.123+00:00"), id="offset"),
        pytest.param(with_selection(observedAt="2024-05-06T07:08:09.123Z\n"), id="newline"),
        pytest.param(
            with_selection(observedAt="\uff12\uff1024-05-06T07:08:09.123Z"), id="wide-digit"
        ),
        pytest.param(with_selection(filters={"a": {"b": 1}}), id="nested-filter"),
        pytest.param(with_selection(filters={"a": [[1]]}), id="list-in-list"),
        pytest.param(with_selection(snapshot={"a": [1]}), id="list-in-snapshot"),
        pytest.param(context(protocol="other"), id="other-protocol"),
        pytest.param(without(context(), "protocol"), id="no-protocol"),
        pytest.param(without(context(), "version"), id="no-version"),
        pytest.param(receipt(commandId="c", layer="ui", reason="Not OK"), id="reason-code"),
        pytest.param(receipt(commandId="c", layer="business"), id="receipt-layer"),
    ],
)
def test_invalid_payloads_are_malformed(raw: dict[str, Any]) -> None:
    """Missing, extra and wrongly typed fields are rejected as malformed, never coerced."""
    assert rejection(raw) == ("malformed", "msg-1")


@pytest.mark.parametrize(
    "observed_at",
    [
        "2024-13-01T00:00:00.000Z",
        "2024-00-10T00:00:00.000Z",
        "2023-02-29T00:00:00.000Z",
        "2024-04-31T00:00:00.000Z",
        "2024-01-01T24:00:00.000Z",
        "2024-01-01T23:60:00.000Z",
        "2024-01-01T23:59:60.000Z",
        "0000-01-01T00:00:00.000Z",
        "9999-99-99T99:99:99.999Z",
    ],
)
def test_an_observed_at_that_is_no_real_time_is_malformed(observed_at: str) -> None:
    """observedAt must name a real UTC date and time, not just match the digit pattern."""
    assert rejection(with_selection(observedAt=observed_at)) == ("malformed", "msg-1")


@pytest.mark.parametrize(
    "observed_at",
    ["2024-02-29T23:59:59.999Z", "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"],
)
def test_real_observed_at_times_at_the_edges_are_accepted(observed_at: str) -> None:
    """A leap day and the first and last representable instants are real times."""
    message = parse_message(with_selection(observedAt=observed_at))
    assert isinstance(message, ContextMessage)
    assert message.selection.observed_at == observed_at


@pytest.mark.parametrize("version", [2, 0, 1.0, True, "1", None])
def test_a_version_other_than_the_integer_1_is_unsupported(version: object) -> None:
    """Only the integer 1 is version 1: 1.0 and True are not."""
    assert rejection(context(version=version)) == ("unsupported-version", "msg-1")


@pytest.mark.parametrize("key", ["__proto__", "constructor", "prototype"])
def test_prototype_keys_are_forbidden_at_any_depth(key: str) -> None:
    """Keys that reach Object.prototype in JS are refused wherever they appear."""
    assert rejection(context(**{key: {}})) == ("forbidden-key", "msg-1")
    assert rejection(with_selection(filters={key: 1})) == ("forbidden-key", "msg-1")


@pytest.mark.parametrize("key", ["__proto__", "constructor", "prototype"])
@pytest.mark.parametrize("where", ["filters", "snapshot"])
def test_the_fast_context_path_refuses_prototype_keys_also_when_escaped(
    key: str, where: str
) -> None:
    """The JSON fast path finds a forbidden key written as it is, and also one written
    with escapes, which only a walk of the decoded message can see."""
    plain = json.dumps(with_selection(**{where: {key: "x"}}), separators=(",", ":"))
    escaped = plain.replace(f'"{key}"', '"' + "".join(f"\\u{ord(c):04x}" for c in key) + '"')
    assert escaped != plain
    assert len(plain) < DEFAULT_LIMITS.max_string_chars
    for text in (plain, escaped):
        assert json.loads(text) == json.loads(plain)
        assert parse_context_json(text) is None
    assert isinstance(parse_context_json(plain.replace(key, "region")), ContextMessage)


@pytest.mark.parametrize("length", [1024, 1025])
def test_the_fast_context_path_keeps_the_string_limit_in_a_long_text(length: int) -> None:
    """A message longer than the string limit is measured string by string."""
    text = json.dumps(with_selection(filters={"note": "n" * length}), separators=(",", ":"))
    accepted = parse_context_json(text)
    assert isinstance(accepted, ContextMessage) is (length <= DEFAULT_LIMITS.max_string_chars)


@pytest.mark.parametrize("length", [1024, 1025])
def test_a_quantity_unit_over_the_string_limit_is_refused_on_both_paths(length: int) -> None:
    """A snapshot quantity's unit is a string like any other (docs/protocol.md 8.3): one
    over max_string_chars is refused by the JSON fast path (None) and by parse_message
    (over-limit); one exactly at the limit is taken by both."""
    raw = with_selection(snapshot={"amount": {"value": 1, "unit": "u" * length}})
    text = json.dumps(raw, separators=(",", ":"))
    fast = parse_context_json(text)
    if length <= DEFAULT_LIMITS.max_string_chars:
        assert isinstance(fast, ContextMessage)
        assert fast == parse_message(raw)
    else:
        assert fast is None
        assert rejection(raw) == ("over-limit", "msg-1")


@pytest.mark.parametrize(
    ("value", "spelled"),
    # As JSON.stringify writes it, and as other serializers may: shorter than Python's.
    [(1e-7, "1e-7"), (100000.0, "1e5"), (1e-7, "1E-7")],
)
def test_the_fast_context_path_measures_the_size_as_parse_message_does(
    value: float, spelled: str
) -> None:
    """A number written shorter than Python writes it (1e-7 for 1e-07, 1e5 for
    100000.0): a text just under the size limit so written, which parse_message refuses
    as too large once written by Python, is no context on the fast path either."""
    snapshot: dict[str, object] = {f"f{index}": value for index in range(60)}
    filters: dict[str, object] = {}

    def javascript(raw: dict[str, Any]) -> str:
        return json.dumps(raw, separators=(",", ":")).replace(json.dumps(value), spelled)

    size = DEFAULT_LIMITS.max_message_bytes - 32
    room = size - len(javascript(with_selection(filters=filters, snapshot=snapshot)))
    while room > 0:
        key = f"k{len(filters)}"
        overhead = len(key) + 5 + (1 if filters else 0)  # "key":"…" and a comma
        filters[key] = "x" * min(1000, room - overhead)
        room -= len(filters[key]) + overhead  # type: ignore[arg-type]
    text = javascript(with_selection(filters=filters, snapshot=snapshot))
    assert len(text.encode()) == size
    with pytest.raises(MessageRejected) as refused:
        parse_message(json.loads(text))
    assert refused.value.reason == "too-large"
    assert parse_context_json(text) is None


def test_an_exponent_like_string_keeps_a_long_context_on_the_fast_path() -> None:
    """Strings such as a UUID's "550e8400" or "SKU 3E" are no numbers: a long context
    holding them is taken on the fast path, as parse_message takes it."""
    filters: dict[str, object] = {
        f"k{index}": f"550e8400-e29b-41d4-a716-44665544{index:04d} SKU 3E " + "x" * 800
        for index in range(10)
    }
    raw = with_selection(filters=filters)
    text = json.dumps(raw, separators=(",", ":"))
    assert len(text) * 4 > DEFAULT_LIMITS.max_message_bytes
    fast = parse_context_json(text)
    assert isinstance(fast, ContextMessage)
    assert fast == parse_message(raw)


def test_snapshot_values_keep_their_json_types_on_both_paths() -> None:
    """An integer stays an int and 1.0 a float, true a bool, "1" a string, an object a
    Quantity: from a dict (parse_message) and from JSON text (the fast path) alike."""
    snapshot = {
        "int": 1,
        "float": 1.5,
        "whole float": 1.0,
        "bool": True,
        "text": "1",
        "none": None,
        "quantity": {"value": 2.0, "unit": "EUR"},
        "flag": {"value": False, "unit": "set"},
    }
    raw = with_selection(snapshot=snapshot)
    slow = parse_message(raw)
    fast = parse_context_json(json.dumps(raw, separators=(",", ":")))
    for message in (slow, fast):
        assert isinstance(message, ContextMessage)
        assert message.selection.snapshot is not None
        kinds = {key: type(value) for key, value in message.selection.snapshot.items()}
        assert kinds == {
            "int": int,
            "float": float,
            "whole float": float,
            "bool": bool,
            "text": str,
            "none": type(None),
            "quantity": Quantity,
            "flag": Quantity,
        }
        assert message.selection.snapshot["quantity"] == Quantity(value=2.0, unit="EUR")
        assert type(message.selection.snapshot["flag"].value) is bool  # type: ignore[union-attr]
    assert fast == slow
    assert dump_message(slow)["selection"]["snapshot"] == snapshot  # type: ignore[index]


def test_nesting_deeper_than_the_limit_is_refused() -> None:
    """A value nested past max_depth is refused before validation."""
    deep: object = 1
    for _ in range(8):
        deep = [deep]
    assert rejection(with_selection(filters={"a": deep})) == ("too-deep", "msg-1")


# A context nesting 4 deep by objects only (a quantity in the snapshot: message,
# selection, snapshot, quantity) and one nesting 4 deep by an array only (a list in the
# filters: message, selection, filters, list).
BY_OBJECTS = with_selection(filters={"year": 2024}, snapshot={"q": {"value": 1, "unit": "u"}})
BY_ARRAYS = with_selection(filters={"region": ["EU"]}, snapshot={"name": "Acme"})


@pytest.mark.parametrize("raw", [BY_OBJECTS, BY_ARRAYS], ids=["objects", "arrays"])
def test_nesting_exactly_at_the_depth_limit_is_accepted_and_one_deeper_is_too_deep(
    raw: dict[str, Any],
) -> None:
    """Depth counts the message object as 1 (docs/protocol.md 8.3): a message as deep as
    max_depth parses, one level over it is too-deep, whether objects or arrays nest."""
    assert isinstance(parse_message(raw, Limits(max_depth=4)), ContextMessage)
    assert rejection(raw, Limits(max_depth=3)) == ("too-deep", "msg-1")


def test_a_self_referencing_value_is_refused_as_too_deep() -> None:
    """A cyclic structure ends the walk instead of recursing forever."""
    raw = context()
    raw["selection"]["filters"]["loop"] = raw["selection"]["filters"]
    assert rejection(raw) == ("too-deep", "msg-1")


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), float("-inf"), {1, 2}, (1, 2), b"bytes", object()],
)
def test_non_json_values_are_refused(value: object) -> None:
    """NaN, Infinity and values JSON cannot carry are refused as not-json."""
    assert rejection(with_selection(filters={"a": value})) == ("not-json", "msg-1")


def test_non_string_keys_are_refused() -> None:
    """A dict with a non-string key is not a JSON object."""
    assert rejection(with_selection(filters={1: "a"})) == ("not-json", "msg-1")


def test_a_lone_surrogate_is_refused() -> None:
    """A string that is not valid Unicode text is refused as not-json."""
    assert rejection(with_selection(filters={"a": "\ud800"})) == ("not-json", "msg-1")


def test_a_message_over_the_byte_limit_is_too_large() -> None:
    """The serialized size counts UTF-8 bytes against max_message_bytes."""
    raw = with_selection(filters={"a": "é" * 1000})  # 2,000 bytes of text
    assert rejection(raw, Limits(max_message_bytes=2000)) == ("too-large", "msg-1")
    assert isinstance(parse_message(raw, Limits(max_message_bytes=4000)), ContextMessage)


def compact_size(raw: dict[str, Any]) -> int:
    """The message's size as parse_message measures it: compact JSON by Python, UTF-8."""
    return len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def test_a_message_of_exactly_the_byte_limit_is_accepted_and_one_byte_more_is_too_large() -> None:
    """The size limit is inclusive (docs/protocol.md 8.3): a message whose compact JSON is
    max_message_bytes UTF-8 bytes long parses; one byte more is too-large."""
    filters: dict[str, object] = {f"k{index}": "é" * 500 for index in range(15)}
    filters["pad"] = ""
    filters["pad"] = "x" * (
        DEFAULT_LIMITS.max_message_bytes - compact_size(with_selection(filters=filters))
    )
    raw = with_selection(filters=filters)
    assert compact_size(raw) == DEFAULT_LIMITS.max_message_bytes
    assert isinstance(parse_message(raw), ContextMessage)
    filters["pad"] += "x"  # type: ignore[operator]
    longer = with_selection(filters=filters)
    assert compact_size(longer) == DEFAULT_LIMITS.max_message_bytes + 1
    assert rejection(longer) == ("too-large", "msg-1")


def test_an_integer_too_long_to_serialize_is_too_large() -> None:
    """An int past Python's digit limit is refused, not a ValueError escaping."""
    assert rejection(with_selection(filters={"a": 10**5000})) == ("too-large", "msg-1")


def test_a_huge_collection_is_refused_before_it_is_serialized() -> None:
    """More values than bytes allowed is too large, however small each value."""
    raw = with_selection(filters={"a": [0] * 20_000})
    assert rejection(raw) == ("too-large", "msg-1")


def test_a_string_over_the_limit_is_over_limit() -> None:
    """Any string, key or value, longer than max_string_chars is over-limit."""
    assert rejection(with_selection(filters={"a": "x" * 1025})) == ("over-limit", "msg-1")
    assert rejection(with_selection(filters={"k" * 1025: 1})) == ("over-limit", "msg-1")
    assert isinstance(parse_message(with_selection(filters={"a": "x" * 1024})), ContextMessage)


def test_an_id_over_the_limit_is_over_limit() -> None:
    """Ids longer than max_id_chars are over-limit; at the limit they pass."""
    assert rejection(with_selection(resourceRef="r" * 257)) == ("over-limit", "msg-1")
    assert rejection(context(conversationId="c" * 257)) == ("over-limit", "msg-1")
    assert isinstance(parse_message(with_selection(resourceRef="r" * 256)), ContextMessage)


def test_collections_over_the_limits_are_over_limit() -> None:
    """filters over max_filter_keys and snapshot over max_snapshot_fields are refused."""
    many_filters = {f"f{i}": i for i in range(33)}
    many_fields = {f"s{i}": i for i in range(65)}
    assert rejection(with_selection(filters=many_filters)) == ("over-limit", "msg-1")
    assert rejection(with_selection(snapshot=many_fields)) == ("over-limit", "msg-1")


def test_limits_are_configurable() -> None:
    """A stricter Limits refuses what the defaults accept."""
    raw = context()
    assert rejection(raw, Limits(max_filter_keys=2)) == ("over-limit", "msg-1")
    assert rejection(raw, Limits(max_id_chars=3)) == ("over-limit", "msg-1")


def test_a_receipt_detail_over_the_configured_limit_is_over_limit() -> None:
    """max_detail_chars bounds a receipt's detail, as every limit is: over the default
    (200) or a configured one, `over-limit`; within a configured one, accepted."""
    raw = receipt(commandId="c", layer="ui", detail="d" * 50)
    assert rejection(raw, Limits(max_detail_chars=10)) == ("over-limit", "msg-1")
    longer = receipt(commandId="c", layer="ui", detail="d" * 201)
    assert rejection(longer) == ("over-limit", "msg-1")
    parsed = parse_message(longer, Limits(max_detail_chars=300))
    assert isinstance(parsed, ReceiptMessage)
    assert parsed.detail == "d" * 201


@pytest.mark.parametrize("raw", [None, [], "context", 42, {"messageId": 5}])
def test_a_message_without_a_readable_id_is_rejected_without_one(raw: object) -> None:
    """Non-objects and unreadable messageIds give a rejection with message_id None."""
    assert rejection(raw) == ("malformed", None)


@pytest.mark.parametrize("message_id", ["", "a" * 65, "has space", "semi;colon", "ü"])
def test_an_invalid_message_id_is_never_echoed(message_id: str) -> None:
    """A messageId that breaks its pattern is not attached to the rejection."""
    assert rejection(context(messageId=message_id)) == ("malformed", None)


def test_a_message_id_is_attached_even_when_the_version_is_wrong() -> None:
    """The rejection carries a valid messageId whatever else failed."""
    assert rejection(context(version=2, messageId="x_Y-9")) == ("unsupported-version", "x_Y-9")


def test_parsing_never_mutates_the_input() -> None:
    """parse_message leaves the raw value as it was."""
    raw = context()
    before = copy.deepcopy(raw)
    parse_message(raw)
    assert raw == before


json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200)
@given(raw=json_values | st.dictionaries(st.text(max_size=12), json_values, max_size=8))
def test_arbitrary_input_is_parsed_or_rejected_with_a_pagecontext_error(raw: object) -> None:
    """Whatever arrives, parse_message returns a model or raises MessageRejected only."""
    reason = "parsed"
    try:
        parse_message(raw)
    except MessageRejected as rejected:
        reason = rejected.reason
    assert reason in REFUSAL_REASONS | {"parsed"}


@pytest.mark.parametrize(
    "text",
    [
        # pydantic-core's recursion limit counts from the first nested value.
        "[" * (MAX_JSON_DEPTH + 2) + "]" * (MAX_JSON_DEPTH + 2),
        # An escaped lone surrogate sends it to Python's parser: the depth is counted first.
        '["\\ud83d", ' + "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1) + "]",
        "[" * 50_000 + "]" * 50_000,
    ],
)
def test_json_from_outside_nested_too_deep_is_refused(text: str) -> None:
    """Deeper than MAX_JSON_DEPTH is a ValueError on both paths, never a parse that
    recurses thousands deep (in WebAssembly, a fatal stack overflow)."""
    with pytest.raises(ValueError, match=r"recursion limit|nested deeper"):
        parse_json(text)


def test_json_from_outside_reads_lone_surrogates_and_brackets_in_strings() -> None:
    """What JSON allows comes back as json.loads reads it: an escaped lone surrogate, and
    brackets inside strings, which the depth count skips."""
    text = '{"delta": "ok \\ud83d", "note": "' + "[" * 500 + '\\"]"}'
    assert parse_json(text) == json.loads(text)
    nested = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(nested) == json.loads(nested)


def test_json_from_outside_reads_a_string_left_open_to_the_end() -> None:
    """A string left open runs to the end of the text for the depth count: the brackets
    and escaped quotes after its quote are not nesting (the text is refused as not JSON,
    not as nested too deep), and it is read once, not again from each quote inside it
    (whose time grew with the square of the text's length: 3.6 s for 32 KB)."""
    text = '["\\ud800' + '\\"[' * (MAX_JSON_DEPTH + 1)
    with pytest.raises(ValueError, match="Unterminated string"):
        parse_json(text)


@pytest.mark.parametrize(
    "selection",
    [
        {"filters": {"n": MAX_SAFE_INTEGER + 1}},
        {"filters": {"n": [1, -(2**64)]}},
        {"snapshot": {"units": 2**64}},
        {"snapshot": {"units": {"value": -(MAX_SAFE_INTEGER + 1), "unit": "units"}}},
        {"snapshot": {"units": 1e300}},
        {"snapshot": {"units": -9007199254740992.0}},
    ],
)
def test_a_number_javascript_cannot_hold_exactly_is_refused(selection: dict[str, Any]) -> None:
    """An integer past Number.MAX_SAFE_INTEGER, or a float as large (which is one), is
    no value of the protocol: the page's JavaScript would round it, and one from Python
    would reach JavaScript as a BigInt, which no JSON carries. Refused on both paths,
    as `malformed`; the largest safe numbers are taken."""
    raw = with_selection(context(), **selection)
    assert parse_context_json(json.dumps(raw)) is None
    assert rejection(raw)[0] == "malformed"
    safe = json.loads(
        json.dumps(raw)
        .replace(str(MAX_SAFE_INTEGER + 1), str(MAX_SAFE_INTEGER))
        .replace(str(2**64), str(MAX_SAFE_INTEGER))
        .replace("1e+300", "1e+15")
        .replace("9007199254740992.0", "9007199254740991.0")
    )
    assert isinstance(parse_context_json(json.dumps(safe)), ContextMessage)
    assert isinstance(parse_message(safe), ContextMessage)
