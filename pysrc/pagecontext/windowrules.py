"""The window-level handshake rules (docs/protocol.md section 2, steps 1-5).

Owns what travels on `window.postMessage`: the `ready` and `connect` messages, the
exact-origin rule, and the single-use nonce carried in the child's URL fragment. The
main-thread edge runs this module under MicroPython and the CPython core imports it,
so each rule lives here once. It is therefore written in the subset both run: no
`typing`, `re`, `dataclasses` or `__future__` imports, no regular expressions.
"""

# For the type checker only: MicroPython has no typing and never evaluates annotations.
try:  # noqa: SIM105 - MicroPython has no contextlib either
    from typing import Final
except ImportError:
    pass

__all__ = [
    "NONCE_BYTES",
    "NONCE_CHARS",
    "NONCE_PREFIX",
    "PROTOCOL",
    "ROLES",
    "VERSION",
    "child_url",
    "connect_message",
    "connect_target",
    "encode_nonce",
    "ends_in_a_number",
    "handshake_type",
    "is_b64url",
    "is_exact_origin",
    "is_full_ipv4",
    "is_instance_id",
    "origin_allowed",
    "read_nonce",
    "ready_message",
    "ready_origin_ok",
]

PROTOCOL: Final = "pagecontext"
VERSION: Final = 1
ROLES = ("page", "assistant")
NONCE_BYTES = 16
NONCE_CHARS = 22  # 16 bytes in unpadded base64url
NONCE_PREFIX = "#pc-nonce="

_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_HOST_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789.-"
_HEX = "0123456789abcdef"
_DIGITS = "0123456789"


def is_b64url(text: object, min_len: int, max_len: int) -> bool:
    """Return True if `text` is min_len..max_len characters of the base64url alphabet."""
    if not isinstance(text, str) or not min_len <= len(text) <= max_len:
        return False
    return all(ch in _B64URL for ch in text)


def is_instance_id(text: object) -> bool:
    """Return True if `text` is an id a handshake may name (an instance or a
    conversation): 1-64 characters of the base64url alphabet."""
    return is_b64url(text, 1, 64)


def encode_nonce(raw: bytes) -> str:
    """Return the unpadded base64url text of NONCE_BYTES random bytes.

    Raises ValueError if `raw` is not exactly NONCE_BYTES long.
    """
    if len(raw) != NONCE_BYTES:
        raise ValueError("a nonce is " + str(NONCE_BYTES) + " random bytes")
    out = []
    bits = 0
    acc = 0
    for byte in raw:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 6:
            bits -= 6
            out.append(_B64URL[(acc >> bits) & 63])
    if bits:
        out.append(_B64URL[(acc << (6 - bits)) & 63])
    return "".join(out)


def read_nonce(fragment: object) -> str | None:
    """Return the nonce carried by a URL fragment such as `#pc-nonce=...`, else None."""
    if not isinstance(fragment, str) or not fragment.startswith(NONCE_PREFIX):
        return None
    nonce = fragment[len(NONCE_PREFIX) :]
    return nonce if is_b64url(nonce, NONCE_CHARS, NONCE_CHARS) else None


def child_url(url: str, nonce: str) -> str:
    """Return the child's URL carrying `nonce` in its fragment (any old fragment dropped)."""
    cut = url.find("#")
    base = url if cut < 0 else url[:cut]
    return base + NONCE_PREFIX + nonce


def is_exact_origin(origin: object) -> bool:
    """Return True if `origin` is a serialized http(s) origin: scheme://host[:port].

    Lower-case only, no path, no trailing slash, no user info, and never the scheme's
    default port (:443, :80), which a browser leaves out of every origin it writes: a
    configured origin with it would match no message. `"null"` is never one.
    """
    if not isinstance(origin, str):
        return False
    if origin.startswith("https://"):
        rest = origin[8:]
        default = "443"
    elif origin.startswith("http://"):
        rest = origin[7:]
        default = "80"
    else:
        return False
    host = rest
    colon = rest.rfind(":")
    if colon >= 0:
        host = rest[:colon]
        port = rest[colon + 1 :]
        # ASCII digits only: str.isdigit() also takes "²", which int() then refuses.
        digits = all(ch in _DIGITS for ch in port)
        if not port or not digits or port[0] == "0" or port == default or int(port) > 65535:
            return False
    if not host or host[0] in ".-" or host[-1] in ".-":
        return False
    if not all(ch in _HOST_CHARS for ch in host):
        return False
    if ".." in host:
        return False  # an empty label
    # A host whose last label is a number is an IPv4 address, which a browser writes in
    # full (127.1, 0x7f.0.0.1 and 2130706433 are all 127.0.0.1): any other spelling is
    # an origin no browser sends.
    return not ends_in_a_number(host) or is_full_ipv4(host)


def ends_in_a_number(host: str) -> bool:
    """True if the last label of `host` is a number (decimal, or hex after `0x`): a
    browser reads such a host as an IPv4 address."""
    last = host.rsplit(".", 1)[-1]
    if last.startswith("0x"):
        return all(ch in _HEX for ch in last[2:])
    return last != "" and all(ch in _DIGITS for ch in last)


def is_full_ipv4(host: str) -> bool:
    """True if `host` is an IPv4 address as a browser writes it: four decimal numbers
    from 0 to 255, none with a zero before it."""
    parts = host.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part or not all(ch in _DIGITS for ch in part):
            return False
        if (part[0] == "0" and part != "0") or int(part) > 255:
            return False
    return True


def origin_allowed(origin: object, configured: str) -> bool:
    """Return True only if a message's origin is exactly the configured origin.

    Exact string equality: scheme, host, port and case all count, and a configured
    origin that is not a well-formed origin (such as `"null"` or `"*"`) allows nothing.
    """
    return isinstance(origin, str) and is_exact_origin(configured) and origin == configured


def ready_origin_ok(origin: object, configured: str, opaque_child: bool) -> bool:
    """Return True if a `ready` came from the origin the embedder expects of its child.

    A child the embedder sandboxed itself (no `allow-same-origin`) has an opaque origin
    and reports `"null"`: that is accepted for such a child only, and its identity then
    rests on `event.source` and the nonce. `"null"` is never an allowlist entry.
    """
    if opaque_child:
        return origin == "null"
    return origin_allowed(origin, configured)


def connect_target(configured: str, opaque_child: bool) -> str:
    """Return the targetOrigin for `connect`: the exact origin, or `"*"` for an opaque
    child (an exact target never matches it). `connect` carries no selection data."""
    return "*" if opaque_child else configured


def handshake_type(data: object) -> str | None:
    """Return "ready" or "connect" if `data` is a well-formed handshake message, else None.

    A handshake message is a dict with exactly the keys of its type: `ready` carries
    {protocol, version, type, role}; `connect` adds the embedder's identities.
    """
    if not isinstance(data, dict):
        return None
    if data.get("protocol") != PROTOCOL or type(data.get("version")) is not int:
        return None
    if data.get("version") != VERSION or data.get("role") not in ROLES:
        return None
    kind = data.get("type")
    if not all(isinstance(key, str) for key in data):
        return None  # not a JS object's keys, and sorted() could not compare them
    keys = sorted(data.keys())
    if kind == "ready" and keys == ["protocol", "role", "type", "version"]:
        return "ready"
    if kind != "connect":
        return None
    page_keys = ["pageInstanceId", "protocol", "role", "type", "version"]
    if data["role"] == "page" and keys == page_keys:
        return "connect" if is_instance_id(data["pageInstanceId"]) else None
    assistant_keys = ["assistantInstanceId", "conversationId"] + page_keys[1:]  # noqa: RUF005 - MicroPython has no unpacking in literals
    if data["role"] == "assistant" and keys == assistant_keys:
        ok = is_instance_id(data["assistantInstanceId"]) and is_instance_id(data["conversationId"])
        return "connect" if ok else None
    return None


def ready_message(role: str) -> dict[str, object]:
    """Return the `ready` message a child posts to its embedder."""
    return {"protocol": PROTOCOL, "version": VERSION, "type": "ready", "role": role}


def connect_message(
    role: str, instance_id: str, conversation_id: str | None = None
) -> dict[str, object]:
    """Return the `connect` message an embedder posts with the port it transfers.

    The page sends its pageInstanceId; an assistant embedder sends its instance id
    and its current conversationId.
    """
    msg: dict[str, object] = {"protocol": PROTOCOL, "version": VERSION, "type": "connect"}
    msg["role"] = role
    if role == "page":
        msg["pageInstanceId"] = instance_id
    else:
        msg["assistantInstanceId"] = instance_id
        msg["conversationId"] = conversation_id
    return msg
