"""Tests for pagecontext.redact: secrets by schema, everything without one, no mutation."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagecontext.block import render_block
from pagecontext.items import ContextItem, Instruction, JsonValue
from pagecontext.redact import (
    REDACTED,
    SECRET,
    ItemSchema,
    redact_item,
    redact_items,
    redact_value,
)

PASSWORD = "hunter2-Sup3r-S3cret"
FORM = {
    "customer": "ACME",
    "discount": 12.5,
    "card": {"number": PASSWORD, "holder": "J. Doe"},
    "notes": [PASSWORD, {"pin": PASSWORD}],
    "active": True,
    "visits": 3,
    "closed": None,
}
FORM_SCHEMA = ItemSchema.of(public=["customer", "discount", "card"], secret=["card.number"])


def test_secret_fields_become_the_secret_marker() -> None:
    """A declared secret path is replaced even below a public one; undeclared are redacted."""
    assert redact_value(FORM, FORM_SCHEMA) == {
        "customer": "ACME",
        "discount": 12.5,
        "card": {"number": SECRET, "holder": "J. Doe"},
        "notes": [REDACTED, {"pin": REDACTED}],
        "active": REDACTED,
        "visits": REDACTED,
        "closed": REDACTED,
    }


def test_without_a_schema_every_value_is_redacted() -> None:
    """No schema: each leaf becomes "[redacted]"; objects and arrays keep their shape."""
    assert redact_value(FORM, None) == {
        "customer": REDACTED,
        "discount": REDACTED,
        "card": {"number": REDACTED, "holder": REDACTED},
        "notes": [REDACTED, {"pin": REDACTED}],
        "active": REDACTED,
        "visits": REDACTED,
        "closed": REDACTED,
    }
    assert redact_value(None, None) == REDACTED


def test_a_public_array_shares_its_elements_and_the_empty_path_the_whole_value() -> None:
    """Array elements take the array's sensitivity; "" names the whole value."""
    assert redact_value({"tags": ["a", {"b": 1}]}, ItemSchema.of(public=["tags"])) == {
        "tags": ["a", {"b": 1}]
    }
    assert redact_value("plain", ItemSchema.of(public=[""])) == "plain"
    assert redact_value("plain", ItemSchema.of(secret=[""])) == SECRET


def test_a_key_holding_a_dot_is_named_only_by_a_tuple() -> None:
    """The string path a.b names {"a": {"b": ...}}, never the key "a.b"; the tuple
    ("a.b",) names that key and nothing else."""
    value = {"a.b": "x", "a": {"b": "y"}}
    assert redact_value(value, ItemSchema.of(public=["a.b"])) == {
        "a.b": REDACTED,
        "a": {"b": "y"},
    }
    assert redact_value(value, ItemSchema.of(public=[("a.b",)])) == {
        "a.b": "x",
        "a": {"b": REDACTED},
    }
    assert redact_value(value, ItemSchema.of(public=[""], secret=[("a.b",)])) == {
        "a.b": SECRET,
        "a": {"b": "y"},
    }


def test_a_secret_path_reaches_into_every_element_of_an_array() -> None:
    """Elements are read at their array's path: rows.password is every row's password."""
    rows = {"rows": [{"user": "a", "password": "hunter2"}, {"user": "b", "password": "x"}]}
    schema = ItemSchema.of(public=["rows"], secret=["rows.password"])
    assert redact_value(rows, schema) == {
        "rows": [{"user": "a", "password": SECRET}, {"user": "b", "password": SECRET}]
    }
    nested = {"form": [[{"card": "4111", "name": "Ana"}]]}
    assert redact_value(nested, ItemSchema.of(public=[""], secret=["form.card"])) == {
        "form": [[{"card": SECRET, "name": "Ana"}]]
    }


def test_redaction_never_mutates_its_input() -> None:
    """The item and its value are unchanged after redaction; a new item comes back."""
    item = ContextItem(type="form", key="f", value=FORM)
    before = copy.deepcopy(item)
    redacted = redact_item(item, {"form": FORM_SCHEMA})
    assert item == before
    assert redacted is not item
    assert FORM["card"] == {"number": PASSWORD, "holder": "J. Doe"}  # type: ignore[comparison-overlap]


def test_an_item_without_a_value_is_left_as_it_is() -> None:
    """Nothing to redact: the same item comes back, with no value added."""
    item = ContextItem(type="reference", key="row-42")
    assert redact_item(item, {}) is item


@pytest.mark.parametrize("value", [0, False, "", 0.0])
def test_an_item_with_a_falsy_value_is_still_redacted(value: JsonValue) -> None:
    """Only a missing value (None) is left as it is: 0, false and "" are values, and
    without a schema each leaf of them becomes "[redacted]"."""
    item = ContextItem(type="form", key="f", value=value)
    redacted = redact_item(item, {})
    assert redacted.value == REDACTED
    assert (redacted.type, redacted.key) == ("form", "f")


@pytest.mark.parametrize(
    "schema",
    [
        ItemSchema.of(public=["pw"], secret=["pw"]),
        ItemSchema.of(public=[("pw",)], secret=["pw"]),
        ItemSchema.of(public=["pw", ""], secret=[("pw",)]),
    ],
    ids=["strings", "tuple-and-string", "under-a-public-whole"],
)
def test_a_path_declared_both_public_and_secret_is_secret(schema: ItemSchema) -> None:
    """The secret declaration wins over a public one of the same path, however the path
    is written: the value is replaced by "[secret]"."""
    assert schema.fields[("pw",)] == "secret"
    assert redact_value({"pw": PASSWORD}, schema) == {"pw": SECRET}


def test_schemas_are_looked_up_by_item_type() -> None:
    """Each item is redacted by the schema for its type, or fully without one."""
    out = redact_items(
        [ContextItem(type="form", value=FORM), ContextItem(type="other", value={"x": 1})],
        {"form": FORM_SCHEMA},
    )
    assert out[1].value == {"x": REDACTED}
    assert out[0].value["customer"] == "ACME"  # type: ignore[index,call-overload]


@pytest.mark.scenario(21)
def test_a_secret_from_an_unsaved_form_never_reaches_the_block() -> None:
    """The plain secret appears nowhere in the rendered block, with or without a schema."""
    form = ContextItem(type="form", key="unsaved", label="Unsaved order", value=FORM)
    for schemas in ({"form": FORM_SCHEMA}, {}):
        block = render_block([Instruction("Be brief.")], redact_items([form], schemas))
        assert PASSWORD not in block
        assert "hunter2" not in block


leaves = st.none() | st.booleans() | st.integers() | st.text()
values: st.SearchStrategy[JsonValue] = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)


def leaves_of(value: JsonValue) -> list[JsonValue]:
    """Every leaf of `value`: strings, numbers, booleans and nulls alike."""
    if isinstance(value, dict):
        return [leaf for child in value.values() for leaf in leaves_of(child)]
    if isinstance(value, list):
        return [leaf for child in value for leaf in leaves_of(child)]
    return [value]


@pytest.mark.scenario(21)
@settings(max_examples=200)
@given(values)
def test_without_a_schema_no_leaf_survives(value: JsonValue) -> None:
    """Fail closed: every leaf of any value comes out as "[redacted]", the input unchanged."""
    before = copy.deepcopy(value)
    redacted = redact_value(value, None)
    assert value == before
    assert all(leaf == REDACTED for leaf in leaves_of(redacted))
    assert len(leaves_of(redacted)) == len(leaves_of(value))
