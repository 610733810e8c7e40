"""Tests for pagecontext.windowrules: nonces, exact origins and the handshake messages."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagecontext import handshake
from pagecontext.windowrules import (
    NONCE_BYTES,
    NONCE_CHARS,
    child_url,
    connect_message,
    connect_target,
    encode_nonce,
    handshake_type,
    is_b64url,
    is_exact_origin,
    origin_allowed,
    read_nonce,
    ready_message,
    ready_origin_ok,
)

B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
ORIGIN = "http://127.0.0.1:8000"
nonce_bytes = st.binary(min_size=NONCE_BYTES, max_size=NONCE_BYTES)


def fragment(url: str) -> str:
    return url[url.index("#") :]


# -- nonces ------------------------------------------------------------------------------


@settings(max_examples=100)
@given(raw=nonce_bytes)
def test_a_nonce_is_22_base64url_characters_of_its_bytes(raw: bytes) -> None:
    """encode_nonce is unpadded base64url: 22 characters that decode to the same bytes."""
    nonce = encode_nonce(raw)
    assert len(nonce) == NONCE_CHARS == 22
    assert set(nonce) <= set(B64URL)
    assert nonce == base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert base64.urlsafe_b64decode(nonce + "==") == raw


@pytest.mark.parametrize("size", [0, 15, 17, 32])
def test_a_nonce_must_be_exactly_16_bytes(size: int) -> None:
    """Any other length is refused rather than padded or cut."""
    with pytest.raises(ValueError, match="16 random bytes"):
        encode_nonce(bytes(size))


@settings(max_examples=100)
@given(raw=nonce_bytes, url=st.text(max_size=40))
def test_the_child_url_carries_a_nonce_that_reads_back(raw: bytes, url: str) -> None:
    """read_nonce(child_url(url, nonce)'s fragment) is the nonce, whatever the URL held."""
    nonce = encode_nonce(raw)
    built = child_url(url, nonce)
    assert read_nonce(fragment(built)) == nonce
    assert handshake.read_nonce(fragment(built)) == nonce
    assert built.count("#") == 1


def test_the_child_url_drops_any_old_fragment() -> None:
    """An old fragment (even an old nonce) never survives into the new URL."""
    old, new = encode_nonce(bytes(16)), encode_nonce(b"\xff" * 16)
    url = child_url(child_url("https://app.example/panel?x=1#top", old), new)
    assert url == f"https://app.example/panel?x=1#pc-nonce={new}"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "#",
        "#pc-nonce=",
        "pc-nonce=" + "A" * 22,  # not a fragment
        "#pc-nonce=" + "A" * 21,
        "#pc-nonce=" + "A" * 23,
        "#pc-nonce=" + "A" * 21 + "=",
        "#pc-nonce=" + "A" * 21 + "+",
        "#pc-nonce=" + "A" * 21 + "/",
        "#pc-nonce=" + "A" * 21 + "\u0410",  # Cyrillic A
        "#pc-nonce=" + "A" * 22 + "&x=1",
        "#PC-NONCE=" + "A" * 22,
        "#x=1&pc-nonce=" + "A" * 22,
    ],
)
def test_read_nonce_refuses_anything_but_one_well_formed_nonce(text: str) -> None:
    """Only `#pc-nonce=` followed by exactly 22 base64url characters is a nonce."""
    assert read_nonce(text) is None


@pytest.mark.parametrize("value", [None, 22, b"#pc-nonce=AAAAAAAAAAAAAAAAAAAAAA"])
def test_read_nonce_refuses_non_strings(value: object) -> None:
    """A non-string location.hash holds no nonce."""
    assert read_nonce(value) is None


@settings(max_examples=100)
@given(
    text=st.text(max_size=40)
    # Mostly the alphabet, around the length bounds, with a few characters outside it.
    | st.text(alphabet=st.sampled_from(B64URL + "+/=\u00e9"), max_size=40)
    | st.text(alphabet=st.sampled_from(B64URL), min_size=28, max_size=33)
)
def test_is_b64url_accepts_exactly_the_alphabet(text: str) -> None:
    """is_b64url agrees with a plain alphabet check within its length bounds."""
    expected = 1 <= len(text) <= 30 and all(ch in B64URL for ch in text)
    assert is_b64url(text, 1, 30) is expected


# -- origins -----------------------------------------------------------------------------


def test_the_configured_origin_is_allowed() -> None:
    """The exact configured string passes."""
    assert origin_allowed(ORIGIN, ORIGIN) is True
    assert origin_allowed("https://app.example", "https://app.example") is True


@pytest.mark.scenario(12)
@pytest.mark.parametrize(
    "origin",
    [
        "https://127.0.0.1:8000",  # other scheme
        "http://127.0.0.1:8001",  # other port
        "http://127.0.0.1",  # default port
        "http://localhost:8000",  # same machine, other host
        "http://127.0.0.1:8000.evil.com",  # suffix
        "http://127.0.0.1:800",  # prefix
        "http://127.0.0.1:80000",
        "HTTP://127.0.0.1:8000",  # upper case
        "http://127.0.0.1:8000/",  # trailing slash
        "http://127.0.0.1:8000/panel",  # path
        "http://a@127.0.0.1:8000",  # userinfo
        " http://127.0.0.1:8000",
        "http://127.0.0.1:8000 ",
        "http://127.0.0.1:\uff18\uff10\uff10\uff10",  # full-width digits
        "null",
        "*",
        "",
        None,
        8000,
        b"http://127.0.0.1:8000",
        ["http://127.0.0.1:8000"],
    ],
)
def test_lookalike_origins_are_refused(origin: object) -> None:
    """Anything but the exact configured string is refused."""
    assert origin_allowed(origin, ORIGIN) is False


@pytest.mark.scenario(13)
def test_connect_is_posted_to_the_exact_origin_unless_the_child_is_opaque() -> None:
    """`connect` goes to the configured origin; `"*"` only for a child the embedder
    sandboxed itself, whose opaque origin no exact target matches (connect carries no
    selection data)."""
    assert connect_target(ORIGIN, opaque_child=False) == ORIGIN
    assert connect_target(ORIGIN, opaque_child=True) == "*"


@pytest.mark.scenario(11, 12)
@pytest.mark.parametrize("configured", ["null", "*", "", "http://*", "http://127.0.0.1:8000/"])
def test_a_configured_wildcard_or_null_allows_nothing(configured: str) -> None:
    """A configured origin that is not a well-formed origin allows nothing, not even itself."""
    for origin in (configured, ORIGIN, "null", "*"):
        assert origin_allowed(origin, configured) is False


@pytest.mark.scenario(11)
def test_a_ready_says_null_only_for_a_child_the_embedder_sandboxed_itself() -> None:
    """The embedder's check of a child's `ready`: `"null"` only from a child it sandboxed
    without allow-same-origin (whose identity then rests on the source and the nonce),
    never from one it did not; a sandboxed child reporting a real origin, or any other
    origin than the configured one, is refused too."""
    assert ready_origin_ok(ORIGIN, ORIGIN, False) is True
    assert ready_origin_ok("null", ORIGIN, True) is True
    assert ready_origin_ok("null", ORIGIN, False) is False
    assert ready_origin_ok("null", "null", False) is False
    assert ready_origin_ok(ORIGIN, ORIGIN, True) is False
    for lookalike in (ORIGIN + "/", "HTTP://127.0.0.1:8000", "http://127.0.0.1:80", None):
        assert ready_origin_ok(lookalike, ORIGIN, False) is False


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:8000",
        "https://app.example",
        "https://app.example:8443",
        "http://app.example:443",
        "http://a-b.example:65535",
        "http://localhost",
        "http://10.0.0.255:8000",
        "https://a.0xzz",  # a last label that is no number: a host name
    ],
)
def test_well_formed_origins_are_exact_origins(origin: str) -> None:
    """Lower-case scheme://host[:port] with no path is an exact origin."""
    assert is_exact_origin(origin) is True


@pytest.mark.scenario(12)
@pytest.mark.parametrize(
    "origin",
    [
        "null",
        "*",
        "file://",
        "ftp://app.example",
        "https://",
        "https://:443",
        "https://app.example:",
        "https://app.example:0",
        "https://app.example:0443",
        # A scheme's default port, which no browser writes: it could never match.
        "https://app.example:443",
        "http://app.example:80",
        "https://app.example:65536",
        "https://app.example:-1",
        "https://app.example:\uff18\uff10",  # full-width digits
        "https://app.example:\u00b2",  # superscript 2: a digit to str.isdigit, not to int()
        "https://App.example",
        "https://app.example/",
        "https://app.example?x",
        "https://app.example#x",
        "https://user@app.example",
        "https://.app.example",
        "https://app.example.",
        "https://-app.example",
        "https://[::1]:8000",  # IPv6 literals are not supported
        "https://app.example:8000:8000",
        "https://a..example",  # an empty label
        # IPv4 addresses as no browser writes them (each is 127.0.0.1 or 1.2.3.4).
        "http://127.1:8000",
        "http://0x7f.0.0.1:8000",
        "http://2130706433:8000",
        "https://1.2.3.04",
        "https://1.2.3.256",
        None,
        443,
    ],
)
def test_malformed_origins_are_not_exact_origins(origin: object) -> None:
    """Anything else is not an exact origin, so it can never be configured."""
    assert is_exact_origin(origin) is False


@settings(max_examples=300)
@given(
    origin=st.one_of(
        st.text(max_size=30),
        # The configured origins themselves, and near misses of them.
        st.sampled_from([ORIGIN, "http://a:1", "null", "*", ORIGIN + "/", "http://a:01"]),
        st.builds(lambda rest: "http://" + rest, st.text(max_size=20)),
        # Origins a page could be configured with, well-formed or nearly.
        st.builds(
            lambda scheme, host, port: f"{scheme}://{host}{port}",
            st.sampled_from(["http", "https", "HTTP", "ftp"]),
            st.from_regex(r"[a-zA-Z0-9.\-]{1,15}", fullmatch=True),
            st.sampled_from(["", ":1", ":8000", ":443", ":80", ":65535", ":65536", ":0", ":"]),
        ),
        st.builds(
            lambda port: "http://a:" + port,
            # Digits of other scripts are digits to str.isdigit(), not to an origin.
            st.text(alphabet=st.sampled_from("0123456789:a \u00b2\u0663\uff18"), max_size=6),
        ),
    ),
    configured=st.sampled_from([ORIGIN, "null", "*", "http://a:1"]),
)
def test_origin_rules_answer_a_bool_for_any_text(origin: str, configured: str) -> None:
    """The rules never raise: any text is either exactly the configured origin or refused;
    and what is taken for an exact origin is one as a URL parser reads it too (an http(s)
    scheme, a lower-case host, a port that exists, nothing after them)."""
    exact = is_exact_origin(origin)
    assert isinstance(exact, bool)
    if exact:
        parts = urlsplit(origin)
        assert parts.scheme in ("http", "https")
        assert f"{parts.scheme}://{parts.netloc}" == origin
        assert parts.hostname == parts.netloc.split(":")[0] == parts.netloc.split(":")[0].lower()
        assert parts.port is None or 0 < parts.port < 65536
        assert (parts.path, parts.query, parts.fragment) == ("", "", "")
        assert parts.username is None
    allowed = origin_allowed(origin, configured)
    assert allowed is (origin == configured and configured not in ("null", "*"))


# -- handshake messages ------------------------------------------------------------------


def test_well_formed_handshake_messages_are_recognised() -> None:
    """ready and both shapes of connect, as this module builds them, are recognised."""
    assert handshake_type(ready_message("page")) == "ready"
    assert handshake_type(ready_message("assistant")) == "ready"
    assert handshake_type(connect_message("page", "page-1")) == "connect"
    assert handshake_type(connect_message("assistant", "asst_1", "conv-1")) == "connect"


READY: dict[str, Any] = ready_message("assistant")
PAGE_CONNECT: dict[str, Any] = connect_message("page", "page-1")
ASSISTANT_CONNECT: dict[str, Any] = connect_message("assistant", "asst-1", "conv-1")
# No JS object has a non-string key, but a Python caller may pass one.
NON_STRING_KEY: dict[object, object] = {"protocol": "pagecontext", "version": 1, 1: "x"}
NON_STRING_KEY.update(type="ready", role="assistant")


@pytest.mark.parametrize(
    "data",
    [
        {**READY, "extra": 1},
        {**READY, "pageInstanceId": "page-1"},  # ready carries no identity
        NON_STRING_KEY,
        {**PAGE_CONNECT, "conversationId": "conv-1"},
        {**PAGE_CONNECT, "assistantInstanceId": "page-1"},
        {**ASSISTANT_CONNECT, "pageInstanceId": "page-1"},
        {**ASSISTANT_CONNECT, "nonce": "A" * 22},  # the nonce never travels on window
        {k: v for k, v in READY.items() if k != "role"},
        {k: v for k, v in PAGE_CONNECT.items() if k != "pageInstanceId"},
        {k: v for k, v in ASSISTANT_CONNECT.items() if k != "conversationId"},
    ],
)
def test_handshake_messages_with_other_keys_are_refused(data: dict[object, object]) -> None:
    """A handshake message has exactly the keys of its type."""
    assert handshake_type(data) is None


@pytest.mark.parametrize("version", [1.0, True, "1", 2, 0, None])
@pytest.mark.parametrize("message", [READY, PAGE_CONNECT, ASSISTANT_CONNECT])
def test_handshake_messages_of_another_version_are_refused(
    message: dict[str, Any], version: object
) -> None:
    """Version is the int 1: not 1.0, not True, not "1"."""
    assert handshake_type({**message, "version": version}) is None


@pytest.mark.parametrize("role", ["Page", "ASSISTANT", "agent", "", None, 1, ["page"]])
@pytest.mark.parametrize("message", [READY, PAGE_CONNECT, ASSISTANT_CONNECT])
def test_handshake_messages_with_an_unknown_role_are_refused(
    message: dict[str, Any], role: object
) -> None:
    """Only the two roles exist."""
    assert handshake_type({**message, "role": role}) is None


def test_a_connect_must_match_its_role() -> None:
    """A page connect names a page instance; an assistant connect names its own ids."""
    assert handshake_type({**PAGE_CONNECT, "role": "assistant"}) is None
    assert handshake_type({**ASSISTANT_CONNECT, "role": "page"}) is None


@pytest.mark.parametrize(
    "changes",
    [
        {"protocol": "PageContext"},
        {"protocol": None},
        {"type": "connected"},
        {"type": "Ready"},
        {"type": None},
    ],
)
def test_handshake_messages_of_another_protocol_or_type_are_refused(
    changes: dict[str, object],
) -> None:
    """protocol and type are exact strings."""
    assert handshake_type({**READY, **changes}) is None
    assert handshake_type({**PAGE_CONNECT, **changes}) is None


BAD_IDS: list[object] = ["", "a" * 65, "page 1", "page/1", "page.1", "página", None, 7, ["p"]]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_connect_messages_with_bad_ids_are_refused(bad: object) -> None:
    """Ids are 1-64 base64url characters."""
    assert handshake_type({**PAGE_CONNECT, "pageInstanceId": bad}) is None
    assert handshake_type({**ASSISTANT_CONNECT, "assistantInstanceId": bad}) is None
    assert handshake_type({**ASSISTANT_CONNECT, "conversationId": bad}) is None


def test_a_64_character_id_is_the_longest_accepted() -> None:
    """The id bound is inclusive."""
    assert handshake_type({**PAGE_CONNECT, "pageInstanceId": "a" * 64}) == "connect"


@pytest.mark.parametrize("data", [None, "ready", 1, ["ready"], READY.items()])
def test_non_dict_handshake_data_is_refused(data: object) -> None:
    """Only a plain object can be a handshake message."""
    assert handshake_type(data) is None


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))


@settings(max_examples=100)
@given(
    base=st.sampled_from([READY, PAGE_CONNECT, ASSISTANT_CONNECT]),
    changes=st.dictionaries(
        st.sampled_from(
            [
                "protocol",
                "version",
                "type",
                "role",
                "pageInstanceId",
                "assistantInstanceId",
                "conversationId",
                "nonce",
            ]
        ),
        json_scalars
        # Values a well-formed message may hold, so that changes can keep it well formed.
        | st.sampled_from(["pagecontext", 1, "ready", "connect", "page", "assistant"])
        | st.text(alphabet=st.sampled_from(B64URL), min_size=1, max_size=64),
        max_size=3,
    ),
)
def test_handshake_type_accepts_exactly_the_well_formed_messages(
    base: dict[str, Any], changes: dict[str, object]
) -> None:
    """Any change to a valid message is refused unless the result is itself well formed."""
    data = {**base, **changes}
    role, keys = data.get("role"), set(data)
    envelope_ok = (
        data.get("protocol") == "pagecontext"
        and type(data.get("version")) is int  # True == 1 in Python, but is no version
        and data.get("version") == 1
        and role in ("page", "assistant")
    )
    ids_ok = all(
        is_b64url(data[key], 1, 64)
        for key in ("pageInstanceId", "assistantInstanceId", "conversationId")
        if key in data
    )
    if envelope_ok and data.get("type") == "ready" and keys == set(READY):
        expected: str | None = "ready"
    elif (
        envelope_ok
        and data.get("type") == "connect"
        and ids_ok
        and keys == set(PAGE_CONNECT if role == "page" else ASSISTANT_CONNECT)
    ):
        expected = "connect"
    else:
        expected = None
    assert handshake_type(data) == expected
