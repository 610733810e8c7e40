"""Tests for pagecontext.integration: the config object and the integration events."""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any

import pytest

import wire
from pagecontext.block import render_block
from pagecontext.integration import (
    _UNSEEN_RANGES,
    _ZERO_WIDTH,
    DEFAULT_HISTORY,
    LIMIT_FIELDS,
    LIMIT_MIN,
    PLAIN_DATA_MAX_DEPTH,
    TIMEOUTS,
    ConfigError,
    authorization_parts,
    filters_in_page_order,
    isolated_strings,
    panel_text,
    parse_command_done,
    parse_config,
    parse_filters,
    parse_select,
    parse_view,
    saved_state_key,
    shown_text,
    url_on_origin,
)
from pagecontext.items import ContextItem
from pagecontext.models import Limits, parse_message
from pagecontext.session import PageSession

ASSISTANT = "https://assistant.example.com"
PAGE: dict[str, Any] = {"role": "page", "position": "embedder", "peerOrigin": ASSISTANT}


def config_with(**changes: Any) -> dict[str, Any]:
    return {**PAGE, **changes}


def test_a_minimal_config_is_completed_with_the_defaults() -> None:
    """role, position and peerOrigin suffice; every other option gets its default."""
    assert parse_config(PAGE) == {
        **PAGE,
        "childUrl": None,
        "childLoad": "staggered",
        "share": "ask",
        "limits": {},
        "history": DEFAULT_HISTORY,
        "timeouts": dict(TIMEOUTS),
        "apps": [],
        "agentUrl": "",
        "authorization": "",
        "agentAuthorization": "",
        "owner": "",
    }


def test_every_option_is_read_and_limits_become_limits_fields() -> None:
    """A full config comes back as given, its limits named as Limits' fields."""
    checked = parse_config(
        config_with(
            childUrl=ASSISTANT + "/assistant.html?x=1",
            childLoad="at-once",
            share="select",
            limits={"maxStringChars": 512, "maxSnapshotFields": 16},
            history=64,
            timeouts={"bootMs": 5000, "childMs": 2000, "agentIdleMs": 90000},
            apps=["orders", "_shop2"],
        )
    )
    assert checked["childUrl"] == ASSISTANT + "/assistant.html?x=1"
    assert checked["childLoad"] == "at-once"
    assert checked["share"] == "select"
    assert checked["limits"] == {"max_string_chars": 512, "max_snapshot_fields": 16}
    assert checked["history"] == 64
    assert checked["timeouts"] == {"bootMs": 5000, "childMs": 2000, "agentIdleMs": 90000}
    assert checked["apps"] == ["orders", "_shop2"]
    limits = Limits(**checked["limits"])
    assert (limits.max_string_chars, limits.max_snapshot_fields) == (512, 16)


@pytest.mark.parametrize("agent_url", ["", "/agent", "http://localhost:9000/run"])
def test_an_assistant_names_its_agent_and_authorization(agent_url: str) -> None:
    """An assistant's config may give the agent's URL (a path or http(s)) and the
    Authorization value it sends; both come back as given."""
    assistant = {**PAGE, "role": "assistant", "agentUrl": agent_url, "authorization": "Bearer x"}
    checked = parse_config(assistant)
    assert (checked["agentUrl"], checked["authorization"]) == (agent_url, "Bearer x")


def test_a_saved_state_is_keyed_by_its_owner_and_the_page_origin() -> None:
    """The assistant's saved conversation is found again only by the same owner on the
    same page origin: with `owner`, across credentials (a token refreshed); without, by
    its credentials. The key never holds a credential or the owner's name."""

    def key(**options: Any) -> str:
        return saved_state_key(parse_config({**PAGE, "role": "assistant", **options}))

    alice = key(owner="alice", authorization="Bearer one")
    assert alice.startswith("pagecontext:assistant:")
    assert key(owner="alice", authorization="Bearer two") == alice
    assert key(owner="bob", authorization="Bearer one") != alice
    assert key(owner="alice", peerOrigin="https://other.example.com") != alice
    by_token = key(authorization="Bearer one", agentAuthorization="Bearer read")
    assert key(authorization="Bearer one", agentAuthorization="Bearer read") == by_token
    assert key(authorization="Bearer two", agentAuthorization="Bearer read") != by_token
    assert key(authorization="Bearer one") != by_token
    # An owner is never read as credentials, nor the other way round.
    assert key(owner="Bearer one\n") != key(authorization="Bearer one")
    # Nobody to keep it for: no key, nothing saved.
    assert key() == ""
    for secret in ("alice", "Bearer", "one"):
        assert secret not in alice
        assert secret not in by_token


@pytest.mark.parametrize(("role", "default"), [("page", "staggered"), ("assistant", "at-once")])
def test_a_business_page_staggers_its_assistants_boot(role: str, default: str) -> None:
    """By default a page embedding its assistant loads it once the page's own runtime is
    up; an assistant workbench loads the business page it frames at once. Either may be
    chosen explicitly."""
    assert parse_config(config_with(role=role))["childLoad"] == default
    for chosen in ("staggered", "at-once"):
        assert parse_config(config_with(role=role, childLoad=chosen))["childLoad"] == chosen


def test_a_child_accepts_a_child_url_it_does_not_use() -> None:
    """With position "auto" one config serves the page on its own and framed by a
    workbench, so a child's config may name the assistant it would embed."""
    checked = parse_config(config_with(position="child", childUrl=ASSISTANT + "/a"))
    assert checked["childUrl"] == ASSISTANT + "/a"


def test_every_limit_name_sets_a_limits_field() -> None:
    """The config's limit names cover Limits exactly, so no limit is unreachable."""
    assert set(LIMIT_FIELDS.values()) == {f.name for f in dataclasses.fields(Limits)}


def test_the_checked_limits_and_history_build_a_page_session() -> None:
    """What parse_config returns is what PageSession takes (the worker passes it on)."""
    checked = parse_config(config_with(limits={"maxIdChars": 64}, history=8))
    session = PageSession(
        page_instance_id="page1",
        clock=lambda: 0.0,
        new_id=lambda: "id",
        limits=Limits(**checked["limits"]),
        history=checked["history"],
    )
    assert session.page_instance_id == "page1"


def test_the_depth_limit_goes_up_to_what_the_receiving_worker_reads() -> None:
    """`maxDepth` may be raised to the depth past which the receiving worker refuses a
    port message as not plain data (docs/protocol.md 8.3), and no further: a deeper
    limit would promise messages that never reach the check."""
    limits = parse_config(config_with(limits={"maxDepth": PLAIN_DATA_MAX_DEPTH}))["limits"]
    assert limits == {"max_depth": PLAIN_DATA_MAX_DEPTH}
    with pytest.raises(ConfigError):
        parse_config(config_with(limits={"maxDepth": PLAIN_DATA_MAX_DEPTH + 1}))


def test_the_least_limits_take_every_message_an_assistant_sends_the_page() -> None:
    """A page configured with the least limits parse_config takes still reads what an
    assistant sends it, with ids as long as the two frames make them: a command of each
    action, `conversation` and `bye`; and, at the least size, a command naming a component
    and an object of 256 characters each (the default id limit), ASCII or of four bytes
    each in UTF-8."""
    least = Limits(**parse_config(config_with(limits=LIMIT_MIN))["limits"])
    ids = {
        key: secrets.token_urlsafe(16) for key in ("messageId", "pageInstanceId", "conversationId")
    }
    target = {"componentId": secrets.token_urlsafe(16), "resourceRef": secrets.token_urlsafe(16)}
    sent = [
        wire.command(**ids, action=action, target=target, params=params)
        for action, params in (
            ("highlight", {"tone": "related"}),
            ("locate", {}),
            ("refresh", {}),
            ("clear-highlight", {}),
        )
    ]
    sent += [wire.conversation(**ids), wire.bye(**ids)]
    for raw in sent:
        assert parse_message(raw, least).type == raw["type"]
    smallest = Limits(max_message_bytes=LIMIT_MIN["maxMessageBytes"])
    for char in ("r", "\U0001f600"):
        long_target = {"componentId": char * 256, "resourceRef": char * 256}
        raw = wire.command(**ids, action="highlight", target=long_target, params={"tone": "focus"})
        assert parse_message(raw, smallest).type == "command"


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ([], "config", "must be an object"),
        ({"position": "embedder", "peerOrigin": ASSISTANT}, "role", "missing"),
        (config_with(role="admin"), "role", '"page", "assistant"'),
        (config_with(position="top"), "position", '"auto" (the default), "embedder", "child"'),
        # The boot script resolves "auto" from whether the frame is framed: a config
        # checked on its own is told so.
        (config_with(position="auto"), "position", "must be resolved"),
        ({"role": "page", "peerOrigin": ASSISTANT}, "position", "must be resolved"),
        ({"role": "page", "position": "child"}, "peerOrigin", "missing"),
        (config_with(peerOrigin="*"), "peerOrigin", "exact origin"),
        (config_with(peerOrigin="null"), "peerOrigin", "exact origin"),
        (config_with(peerOrigin=ASSISTANT + "/"), "peerOrigin", "no trailing slash"),
        (config_with(peerOrigin="HTTPS://Assistant.example.com"), "peerOrigin", "lower-case"),
        # A browser never writes the default port: such a peer would match no message.
        (config_with(peerOrigin=ASSISTANT + ":443"), "peerOrigin", "no default port"),
        (config_with(childUrl="https://evil.example.com/a"), "childUrl", ASSISTANT),
        (config_with(childUrl=ASSISTANT + ".evil.com/a"), "childUrl", "on peerOrigin"),
        (config_with(childUrl="/assistant.html"), "childUrl", "absolute URL"),
        (config_with(childLoad="later"), "childLoad", '"staggered", "at-once"'),
        (config_with(share="always"), "share", '"ask", "select"'),
        (config_with(limits=[]), "limits", "must be an object"),
        (config_with(limits={"maxRows": 5}), "limits.maxRows", "unknown limit"),
        (config_with(limits={"maxIdChars": 0}), "limits.maxIdChars", "from 22 to"),
        (config_with(limits={"maxIdChars": 21}), "limits.maxIdChars", "from 22 to"),
        (config_with(limits={"maxStringChars": 21}), "limits.maxStringChars", "from 22 to"),
        (config_with(limits={"maxDepth": 1}), "limits.maxDepth", "from 2 to"),
        # Deeper than 16, a port message is refused as not plain data, whatever the limit.
        (config_with(limits={"maxDepth": 17}), "limits.maxDepth", "from 2 to 16"),
        (config_with(limits={"maxMessageBytes": 4095}), "limits.maxMessageBytes", "from 4096"),
        (config_with(limits={"maxFilterKeys": 0}), "limits.maxFilterKeys", "from 1 to"),
        (config_with(limits={"maxIdChars": True}), "limits.maxIdChars", "whole number"),
        (config_with(limits={"maxIdChars": 2.5}), "limits.maxIdChars", "whole number"),
        (config_with(history=0), "history", "from 1 to"),
        (config_with(timeouts={"bootMs": -1}), "timeouts.bootMs", "from 1 to"),
        (config_with(timeouts={"childMs": 0}), "timeouts.childMs", "from 1 to"),
        (config_with(timeouts={"childMs": 600001}), "timeouts.childMs", "from 1 to"),
        (config_with(timeouts={"childMs": True}), "timeouts.childMs", "whole number"),
        (config_with(timeouts={"ackMs": 5}), "timeouts.ackMs", "unknown timeout"),
        (config_with(apps="sales"), "apps", "list of module names"),
        (config_with(apps=["sales; import os"]), "apps[0]", "not a module name"),
        (config_with(peerorigin=ASSISTANT), "peerorigin", "unknown option"),
        (config_with(agentUrl="/agent"), "agentUrl", "only an assistant reads it"),
        (config_with(role="assistant", agentUrl="javascript:x"), "agentUrl", "http(s) URL"),
        (config_with(role="assistant", agentUrl="//evil.example/"), "agentUrl", "a path"),
        (config_with(role="assistant", agentUrl="http://"), "agentUrl", "http(s) URL"),
        (config_with(role="assistant", authorization=7), "authorization", "header's value"),
        (config_with(role="assistant", limits={}), "limits", "only a page"),
        (config_with(agentAuthorization="Bearer r"), "agentAuthorization", "only an assistant"),
        (
            config_with(role="assistant", authorization="Bearer u", agentAuthorization="Bearer u"),
            "agentAuthorization",
            "read-only",
        ),
        (
            config_with(role="assistant", authorization="Bearer u", agentAuthorization="bearer u"),
            "agentAuthorization",
            "read-only",
        ),
        (
            config_with(
                role="assistant", authorization="Bearer u", agentAuthorization="Bearer  u "
            ),
            "agentAuthorization",
            "read-only",
        ),
        (config_with(owner="alice"), "owner", "only an assistant reads it"),
        (config_with(authorization="Bearer u"), "authorization", "only an assistant reads it"),
        (config_with(role="assistant", owner=7), "owner", "naming the signed-in user"),
        (config_with(role="assistant", owner="a" * 257), "owner", "at most 256"),
        (config_with(role="assistant", history=64), "history", "only a page"),
        (config_with(role="assistant", share="ask"), "share", "only a page"),
    ],
)
def test_a_bad_config_names_the_field_and_why(raw: object, field: str, words: str) -> None:
    """Each wrong option is refused with ConfigError naming it, and a message saying why."""
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    assert caught.value.field == field
    assert str(caught.value).startswith(field + ": ")
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (ASSISTANT, True),
        (ASSISTANT + "/", True),
        (ASSISTANT + "/assistant.html#x", True),
        (ASSISTANT + "?a=1", True),
        (ASSISTANT + ":443/", False),
        (ASSISTANT + ".evil.com/", False),
        (ASSISTANT + "@evil.com/", False),
        ("http://assistant.example.com/", False),
        (None, False),
    ],
)
def test_a_url_is_on_an_origin_only_with_exactly_that_origin(url: object, expected: bool) -> None:
    """url_on_origin compares the whole origin and needs a separator after it."""
    assert url_on_origin(url, ASSISTANT) is expected


def test_a_select_detail_gives_component_ref_and_values() -> None:
    """A well-formed pagecontext:select detail is returned as its three parts."""
    detail = {"componentId": "orders", "resourceRef": "order-7", "values": {"total": 12.5}}
    assert parse_select(detail) == ("orders", "order-7", {"total": 12.5})
    assert parse_select({"componentId": "orders", "resourceRef": "order-7"})[2] == {}


@pytest.mark.parametrize(
    ("detail", "words"),
    [
        (None, "detail must be"),
        ({"componentId": "", "resourceRef": "r"}, "detail.componentId"),
        ({"componentId": "c", "resourceRef": 7}, "detail.resourceRef"),
        ({"componentId": "c", "resourceRef": "r" * 257}, "detail.resourceRef"),
        ({"componentId": "c", "resourceRef": "r", "values": [1]}, "detail.values"),
        ({"componentId": "c", "resourceRef": "r", "values": {"a": {"b": 1}}}, "detail.values.a"),
        ({"componentId": "c", "resourceRef": "r", "values": {"a": float("nan")}}, "values.a"),
        ({"componentId": "c", "resourceRef": "r", "snapshot": {}}, "detail.snapshot"),
    ],
)
def test_a_bad_select_detail_is_refused_naming_the_field(detail: object, words: str) -> None:
    """Anything but {componentId, resourceRef, values of scalars} raises ValueError."""
    with pytest.raises(ValueError, match=words.replace(".", r"\.")):
        parse_select(detail)


def test_a_command_done_detail_defaults_its_reason_by_status() -> None:
    """applied defaults to reason ok, not-found to not-rendered; a given reason is kept."""
    assert parse_command_done({"commandId": "c1", "status": "applied"}) == ("c1", "applied", "ok")
    assert parse_command_done({"commandId": "c1", "status": "not-found"})[2] == "not-rendered"
    done = {"commandId": "c1", "status": "not-found", "reason": "filtered-out"}
    assert parse_command_done(done) == ("c1", "not-found", "filtered-out")


@pytest.mark.parametrize(
    "detail",
    [
        {"commandId": "c1", "status": "stale-context"},
        {"commandId": "c1", "status": "rejected"},
        {"commandId": "c1"},
        {"status": "applied"},
        {"commandId": "c1", "status": "applied", "reason": "Not OK"},
        {"commandId": "c1", "status": "applied", "reason": "x" * 65},
        {"commandId": "c1", "status": "applied", "detail": "done"},
    ],
)
def test_a_page_can_only_report_applied_or_not_found(detail: dict[str, Any]) -> None:
    """The page reports its UI work; any other status, or a bad reason, is refused."""
    with pytest.raises(ValueError, match="detail"):
        parse_command_done(detail)


def test_a_components_view_attributes_give_filters_and_generation() -> None:
    """data-pc-filters and data-pc-generation are read as given; absent, they mean no
    filters and generation 0."""
    filters = '{"region": "North", "months": ["2026-01", "2026-02"], "all": false}'
    assert parse_view(filters, "12") == (
        {"region": "North", "months": ["2026-01", "2026-02"], "all": False},
        12,
    )
    assert parse_view(None, None) == ({}, 0)


@pytest.mark.parametrize(
    ("filters", "generation", "words"),
    [
        ("not json", "1", "data-pc-filters must be a JSON object"),
        ("[1]", "1", "data-pc-filters must be a JSON object"),
        ('{"a": {"b": 1}}', "1", "data-pc-filters.a"),
        ('{"a": [[1]]}', "1", "data-pc-filters.a"),
        ("{}", "", "data-pc-generation"),
        ("{}", "1.5", "data-pc-generation"),
        ("{}", "-1", "data-pc-generation"),
        ("{}", "9007199254740992", "data-pc-generation"),
    ],
)
def test_bad_view_attributes_are_refused_naming_the_attribute(
    filters: str, generation: str, words: str
) -> None:
    """Filters that are not a flat JSON object, or a generation that is not a safe whole
    number, raise ValueError naming the attribute (the edge then keeps the last view)."""
    with pytest.raises(ValueError, match=words.replace(".", r"\.")):
        parse_view(filters, generation)


def test_filters_keep_the_attributes_order() -> None:
    """The worker reads a component's filters in the page's order (the chip shows them
    so, and the model gets them so)."""
    text = '{"to": "2026-06", "from": "2026-01", "region": "North"}'
    assert list(parse_filters(text)) == ["to", "from", "region"]
    checked = {"region": "North", "from": "2026-01", "to": "2026-06"}
    assert list(filters_in_page_order(text, checked)) == ["to", "from", "region"]


@pytest.mark.parametrize(
    ("text", "checked"),
    [
        # Text MicroPython's JSON reader takes and CPython's refuses: the edge's filters.
        ('{"region": "North",}', {"region": "North"}),
        ('{"month": 03}', {"month": 3}),
        ('{"q": "a\nb"}', {"q": "a\nb"}),  # a raw line break inside the string
        ('{"n": 1.}', {"n": 1.0}),
        # Read as other filters than the edge's: the edge's stand.
        ('{"n": 2}', {"n": 1}),
    ],
)
def test_filters_the_worker_reads_otherwise_stay_as_the_edge_checked_them(
    text: str, checked: dict[str, Any]
) -> None:
    """Filters the worker refuses or reads otherwise stay as the edge checked them."""
    assert filters_in_page_order(text, checked) is checked


@pytest.mark.parametrize(
    "agent_url",
    [
        # The browser's URL parser reads a backslash as a slash, and drops tabs and line
        # breaks: each of these resolves to another host, which would get the agent's
        # credential.
        "/\\evil.example/agent",
        "/\t/evil.example/agent",
        "/\n/evil.example/agent",
        "/\r/evil.example/agent",
        "http:\\\\evil.example/agent",
        "/agent run",
        7,
        None,
        ["/agent"],
    ],
)
def test_an_agent_url_that_could_resolve_elsewhere_is_refused(agent_url: object) -> None:
    """An agentUrl holding a backslash or white space, or that is not a string, is a
    ConfigError naming agentUrl (not another exception, which the panel's MicroPython
    could not read, and not a path the browser would resolve to another host)."""
    with pytest.raises(ConfigError) as caught:
        parse_config(config_with(role="assistant", agentUrl=agent_url))
    assert caught.value.field == "agentUrl"


@pytest.mark.parametrize("app", [7, None, "", "1sales", "../sales", ".sales"])
def test_an_app_that_is_not_a_module_name_is_refused(app: object) -> None:
    """Each of `apps` names one of the page's own modules, which the edge fetches by that
    name: anything but a Python module name (not a string, empty, starting with a digit
    or a dot, a path) is a ConfigError naming its index."""
    with pytest.raises(ConfigError) as caught:
        parse_config(config_with(apps=["sales", app]))
    assert caught.value.field == "apps[1]"
    assert parse_config(config_with(apps=["sales", "_report2"]))["apps"] == ["sales", "_report2"]


def test_an_authorization_is_read_alike_under_cpython_and_micropython() -> None:
    """Only HTTP's white space (spaces, tabs) goes from around an Authorization value's
    parts: CPython's `str.strip()` also strips a no-break space, MicroPython's does not,
    and the edge (MicroPython) would take as another credential one that the action API
    (CPython) reads as the user's own."""
    assert authorization_parts(" Bearer \t u \t") == ("bearer", "u")
    assert authorization_parts("Bearer u\u00a0") == ("bearer", "u\u00a0")
    assert authorization_parts("Bearer u\x85") == ("bearer", "u\x85")


def test_a_cells_text_is_shared_as_the_browser_shows_it() -> None:
    """A cell's text leaves as the user sees it: its runs of spaces, tabs and line breaks
    one space, none at either end. A no-break space, and any other character CPython
    alone takes for white space, is text and stays (the edge's MicroPython reads it
    alike: tests/test_micropython.py)."""
    assert shown_text("\n        Pallet jack\n      ") == "Pallet jack"
    assert shown_text("SKU-102 ") == "SKU-102"
    assert shown_text("a \t\r\n\f b") == "a b"
    assert shown_text(" \n ") == ""
    assert shown_text("1\u00a0000\u00a0\u20ac") == "1\u00a0000\u00a0\u20ac"
    assert shown_text("a\x85 b") == "a\x85 b"


def test_right_to_left_strings_of_an_item_line_are_isolated_and_the_text_kept() -> None:
    """Each JSON string of an item line that holds more than ASCII is a part of its own
    (the panel draws it in a <bdi>), escaped quotes and backslashes inside it included;
    the parts make the text again, and lines that are not item lines stay whole."""
    block = (
        "<pagecontext-data>\n"
        '- {"filters":{"مدينة":"القاهرة","to":"2026-12"},'
        '"m":["يناير","a\\"b","א\\\\"]}\n'
        'a question about "القاهرة"'
    )
    parts = isolated_strings(block)
    assert "".join(part for part, _ in parts) == block
    assert [part for part, isolate in parts if isolate] == [
        '"مدينة"',
        '"القاهرة"',
        '"يناير"',
        '"א\\\\"',
    ]
    assert isolated_strings('- {"type":"text","value":"ASCII only"}') == [
        ['- {"type":"text","value":"ASCII only"}', False]
    ]


def test_every_character_the_panel_shows_in_runs_is_escaped_for_the_model() -> None:
    """The panel's characters that draw as nothing (`integration._UNSEEN_RANGES`,
    `_ZERO_WIDTH`) are a twin of part of the block's escaped set (`pagecontext.block`):
    each one reaches the model escaped, so "What the AI sees" shows it as the panel
    does."""
    unseen = [chr(code) for first, last in _UNSEEN_RANGES for code in range(first, last + 1)]
    unseen += list(_ZERO_WIDTH)
    block = render_block([], [ContextItem(type="text", value="".join(unseen))])
    raw = [f"U+{ord(char):04X}" for char in unseen if char in block]
    assert raw == []


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # Bytes carried in variation selectors after an emoji ("emoji smuggling").
        ("\U0001f600\U000e0148\U000e0169", "\U0001f600[U+E0148][U+E0169]"),
        ("North\ufe0f\ufe0f", "North[U+FE0F][U+FE0F]"),
        ("a\u200b\u2060\u200cb", "a[U+200B][U+2060][U+200C]b"),
        # Of any mix: selectors and zero-width characters alternating are one run.
        ("x\U000e0148\u200b\U000e0169\u200b", "x[U+E0148][U+200B][U+E0169][U+200B]"),
        # The other characters that draw as nothing: invisible operators, deprecated
        # format controls, the Hangul filler, the combining grapheme joiner.
        ("n\u2062\u2063\u2062o", "n[U+2062][U+2063][U+2062]o"),
        ("n\u206a\u3164\u034fo", "n[U+206A][U+3164][U+034F]o"),
        ("\ufe0f\u200d\u200d", "[U+FE0F][U+200D][U+200D]"),
        # Soft hyphens, and the unassigned default-ignorables past the tags.
        ("a\u00ad\u00adb", "a[U+00AD][U+00AD]b"),
        ("x\U000e00e6\U000e0f00", "x[U+E00E6][U+E0F00]"),
        # A direction mark between them does not end the run, and stays as it is.
        ("x\ufe03\u200e\ufe05\u200f\u061c\ufe07", "x[U+FE03]\u200e[U+FE05]\u200f\u061c[U+FE07]"),
        # One alone is how scripts and emoji are written: an emoji's selector, the
        # joiner of an emoji's sequence (after a selector), a Persian non-joiner.
        ("\u2764\ufe0f\u200d\U0001f525", "\u2764\ufe0f\u200d\U0001f525"),
        ("\U0001f3f3\ufe0f\u200d\U0001f308", "\U0001f3f3\ufe0f\u200d\U0001f308"),
        ("a\u2062b", "a\u2062b"),
        ("Stra\u00dfen\u00adbahn", "Stra\u00dfen\u00adbahn"),
        ("a\u200e\u200fb", "a\u200e\u200fb"),
        ("\u2764\ufe0f\u200e\u200d\U0001f525", "\u2764\ufe0f\u200e\u200d\U0001f525"),
        (
            "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
            "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
        ),
        ("\u845b\U000e0100", "\u845b\U000e0100"),
    ],
)
def test_the_panel_shows_runs_of_characters_that_draw_as_nothing(text: str, shown: str) -> None:
    """Two or more characters that draw as nothing (variation selectors, zero-width and
    other format characters, of any mix) in a row can carry data the model would get:
    the panel shows them as code points; one alone stays as written, and so does an
    emoji's selector and joiner."""
    assert panel_text(text) == shown
