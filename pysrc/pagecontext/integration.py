"""The rules of the page integration surface: the config object and the events' details.

Owns what a page hands pagecontext in its own terms, checked before anything is used:

- the config object (the JSON in `<script type="application/json" id="pc-config">`):
  role, position, the peer's exact origin, the child URL and when it loads, the share
  mode, limits, timeouts and the page's own modules; for an assistant, its agent URL,
  the Authorization it sends and whose conversation it saves (`saved_state_key`).
  `parse_config` returns it complete, with
  defaults, or raises `ConfigError` naming the first field that is wrong;
- a component's view attributes (`data-pc-filters`, `data-pc-generation`), and the
  detail of `pagecontext:select` (a page that keeps the selection in its own state
  reports it) and of `pagecontext:command-done` (a page that carried out a command itself
  reports the outcome); each parser returns the checked values or raises `ValueError`.

docs/integration.md describes every option. The main-thread edge runs this module under
MicroPython and the CPython tests import it, so it is written in the subset both run,
like `windowrules`: no `typing`, `re`, `dataclasses` or `__future__` imports.
"""

import json
from binascii import hexlify
from hashlib import sha256

from pagecontext.windowrules import NONCE_CHARS, ROLES, is_exact_origin

# For the type checker only: MicroPython has no typing and never evaluates annotations.
try:  # noqa: SIM105 - MicroPython has no contextlib either
    from typing import Any, TypeGuard
except ImportError:
    pass

__all__ = [
    "CHILD_LOADS",
    "DEFAULT_CHILD_LOAD",
    "DEFAULT_HISTORY",
    "HISTORY_MAX",
    "LAYER_STATES",
    "LIMIT_FIELDS",
    "LIMIT_MAX",
    "LIMIT_MAX_OF",
    "LIMIT_MIN",
    "LISTED_REASONS",
    "MAX_AUTHORIZATION_CHARS",
    "MAX_GENERATION",
    "MAX_ID_CHARS",
    "PLAIN_DATA_MAX_DEPTH",
    "POSITIONS",
    "SAVED_STATE_FORMAT",
    "SAVED_STATE_PREFIX",
    "SHARE_MODES",
    "STOPPED",
    "TIMEOUTS",
    "TIMEOUT_MAX",
    "UI_REASONS",
    "UI_STATUSES",
    "VARIATION_SELECTORS",
    "ConfigError",
    "action_checkable",
    "action_unsent",
    "authorization_parts",
    "command_standing",
    "filters_in_page_order",
    "is_layer_view",
    "is_scalar",
    "isolated_strings",
    "misspelled_fields",
    "panel_text",
    "parse_command_done",
    "parse_config",
    "parse_filters",
    "parse_generation",
    "parse_select",
    "parse_view",
    "reason_listed",
    "saved_state_key",
    "saved_state_readable",
    "shown_text",
    "url_on_origin",
]

POSITIONS = ("embedder", "child")
SHARE_MODES = ("ask", "select")
# When an embedder loads its child: "staggered" once its own Python runtime is
# instantiated (the heaviest step of its boot), or its core is ready or has failed, so
# the two frames' heaviest boot steps do not share the cores; "at-once" as soon as the
# edge starts.
CHILD_LOADS = ("staggered", "at-once")
# A business page's own boot comes first; an assistant workbench loads the business page
# it frames at once.
DEFAULT_CHILD_LOAD = {"page": "staggered", "assistant": "at-once"}
# The config's limit names and the `pagecontext.models.Limits` fields they set.
LIMIT_FIELDS = {
    "maxIdChars": "max_id_chars",
    "maxFilterKeys": "max_filter_keys",
    "maxSnapshotFields": "max_snapshot_fields",
    "maxStringChars": "max_string_chars",
    "maxMessageBytes": "max_message_bytes",
    "maxDepth": "max_depth",
    "maxDetailChars": "max_detail_chars",
}
LIMIT_MAX = 1048576
# A port message nested deeper than this (the message object counted as 1) is not plain
# data to the worker that receives it, refused before validation (docs/protocol.md 8.3,
# `too-deep`): no `maxDepth` can let one through.
PLAIN_DATA_MAX_DEPTH = 16
# The most a limit may be, where it is less than LIMIT_MAX.
LIMIT_MAX_OF = {"maxDepth": PLAIN_DATA_MAX_DEPTH}
# The least a limit may be, where it is more than 1: below it, the page would refuse the
# assistant's own messages. The two frames make their ids as nonces are made (16 random
# bytes, NONCE_CHARS characters), a command's target is an object in the message (depth
# 2), and a command naming a component and an object of 256 characters each is some
# 800 bytes, or 2,400 where each character takes four bytes in UTF-8 (an emoji, most
# of CJK's rarer characters).
LIMIT_MIN = {
    "maxIdChars": NONCE_CHARS,
    "maxStringChars": NONCE_CHARS,
    "maxDepth": 2,
    "maxMessageBytes": 4096,
}
DEFAULT_HISTORY = 256
HISTORY_MAX = 65536
# Timeouts in milliseconds, with their defaults.
TIMEOUTS = {"bootMs": 60000, "childMs": 30000, "agentIdleMs": 60000}
TIMEOUT_MAX = 600000
# The failure code of an answer the user stopped (the session's, the panel's words).
STOPPED = "stopped"
UI_STATUSES = ("applied", "not-found")
# Where a receipt layer stands (ledger.LayerState).
LAYER_STATES = ("pending", "applied", "stale-context", "not-found", "rejected", "unconfirmed")
UI_REASONS = {"applied": "ok", "not-found": "not-rendered"}
# The reasons pagecontext itself gives each state of a command's layer: the page's
# resolver and edge (docs/protocol.md 8.3, 8.4) and the assistant's ledger (8.6). A
# reason with another state came from a page's own code (`pagecontext:command-done`),
# even if it reads as one of these: `not-found` with `connection-closed` is no ledger's
# word, nor `not-found` with `page-instance` a page reloaded since.
LISTED_REASONS = {
    "applied": ("ok",),
    "stale-context": ("page-instance", "revision-evicted", "view-changed"),
    "not-found": ("not-rendered", "not-focusable", "not-scrolled", "no-refresh"),
    "rejected": (
        "malformed",
        "unsupported-version",
        "too-large",
        "too-deep",
        "forbidden-key",
        "not-json",
        "not-plain",
        "over-limit",
        "not-a-command",
        "conversation-mismatch",
        "future-revision",
    ),
    "unconfirmed": ("deadline", "connection-closed", "assistant-reloaded"),
}
MAX_ID_CHARS = 256
_KEYS = (
    "role",
    "position",
    "peerOrigin",
    "childUrl",
    "childLoad",
    "share",
    "limits",
    "history",
    "timeouts",
    "apps",
    "agentUrl",
    "authorization",
    "agentAuthorization",
    "owner",
)
# The options only an assistant reads.
_ASSISTANT_KEYS = ("agentUrl", "authorization", "agentAuthorization", "owner")
# The options only a page reads (an assistant takes the protocol's default limits).
_PAGE_KEYS = ("share", "limits", "history")
MAX_AUTHORIZATION_CHARS = 4096
# The assistant's saved state (the conversation) is stored under this prefix and a digest
# of whose it is: see saved_state_key.
SAVED_STATE_PREFIX = "pagecontext:assistant"
# The format of the assistant's saved state, written into each save. A state of another
# format (a later build's, read after a rollback) is neither restored nor continued: the
# assistant starts a new conversation rather than misread it. A state saved before the
# format was written has this one's shape.
SAVED_STATE_FORMAT = 1
_NAME_START = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_NAME_CHARS = _NAME_START + "0123456789"
_REASON_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-"


class ConfigError(ValueError):
    """The config object is wrong; `field` names the option, the message says why."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(field + ": " + problem)
        self.field = field
        self.problem = problem


def _bounded_int(field: str, value: object, low: int, high: int) -> int:
    # bool is an int subclass in both Pythons; a limit of `true` is not a number.
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(field, "must be a whole number from " + str(low) + " to " + str(high))
    return value


def _choice(field: str, value: object, allowed: tuple[str, ...], named: str = "") -> str:
    """`value` if it is one of `allowed`; else ConfigError listing them (`named`: what
    the message lists instead)."""
    if value not in allowed:
        quoted = named or ", ".join('"' + item + '"' for item in allowed)
        raise ConfigError(field, "must be one of " + quoted + ", got " + _shown(value))
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _object(field: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(field, "must be an object")
    return value


def url_on_origin(url: object, origin: str) -> bool:
    """Return True if `url` is an absolute URL on exactly `origin` (a path may follow)."""
    if not isinstance(url, str) or not is_exact_origin(origin):
        return False
    if url == origin:
        return True
    return url.startswith(origin) and url[len(origin)] in "/?#"


def parse_config(raw: object) -> dict[str, Any]:
    """Return the config object checked and complete (every option, defaults filled in).

    `position` must already be resolved: the boot script turns a missing or `"auto"`
    position into `"embedder"` or `"child"` before the edge starts. Raises ConfigError,
    naming the field, for an unknown option or a value that is missing or wrong.
    """
    config = _object("config", raw)
    for key in config:
        if key not in _KEYS:
            raise ConfigError(str(key), "unknown option (options: " + ", ".join(_KEYS) + ")")
    if "role" not in config:
        raise ConfigError("role", 'missing: "page" or "assistant"')
    role = _choice("role", config["role"], ROLES)
    # "auto" (the default) is resolved by the boot script before the config gets here.
    if config.get("position", "auto") == "auto":
        raise ConfigError(
            "position",
            '"auto" (the default) must be resolved to "embedder" or "child" before'
            " parse_config (the boot script resolves it from whether the frame is framed)",
        )
    position = _choice(
        "position", config.get("position"), POSITIONS, '"auto" (the default), "embedder", "child"'
    )
    if "peerOrigin" not in config:
        raise ConfigError("peerOrigin", "missing: the exact origin of the other frame")
    peer = config["peerOrigin"]
    if not is_exact_origin(peer):
        raise ConfigError(
            "peerOrigin",
            "must be an exact origin such as https://assistant.example.com "
            "(lower-case scheme, host and port; no default port, no path, no trailing slash,"
            " never * or null)"
            ", got " + _shown(peer),
        )
    child_url = config.get("childUrl")
    # A child ignores it: with position "auto" one config serves both placements.
    if child_url is not None and not url_on_origin(child_url, peer):
        raise ConfigError(
            "childUrl",
            "must be an absolute URL on peerOrigin " + peer + ", got " + _shown(child_url),
        )
    child_load = config.get("childLoad", DEFAULT_CHILD_LOAD[role])
    child_load = _choice("childLoad", child_load, CHILD_LOADS)
    share = _choice("share", config.get("share", "ask"), SHARE_MODES)
    limits = {}
    for name, value in _object("limits", config.get("limits", {})).items():
        if name not in LIMIT_FIELDS:
            names = ", ".join(sorted(LIMIT_FIELDS))
            raise ConfigError("limits." + str(name), "unknown limit (limits: " + names + ")")
        low = LIMIT_MIN.get(name, 1)
        high = LIMIT_MAX_OF.get(name, LIMIT_MAX)
        limits[LIMIT_FIELDS[name]] = _bounded_int("limits." + name, value, low, high)
    history = _bounded_int("history", config.get("history", DEFAULT_HISTORY), 1, HISTORY_MAX)
    timeouts = dict(TIMEOUTS)
    for name, value in _object("timeouts", config.get("timeouts", {})).items():
        if name not in TIMEOUTS:
            names = ", ".join(sorted(TIMEOUTS))
            raise ConfigError("timeouts." + str(name), "unknown timeout (timeouts: " + names + ")")
        timeouts[name] = _bounded_int("timeouts." + name, value, 1, TIMEOUT_MAX)
    for key in _ASSISTANT_KEYS:
        if role != "assistant" and key in config:
            raise ConfigError(key, "only an assistant reads it (role is " + role + ")")
    for key in _PAGE_KEYS:
        if role != "page" and key in config:
            raise ConfigError(key, "only a page reads it (role is " + role + ")")
    agent_url = config.get("agentUrl", "")
    if not _is_agent_url(agent_url):
        raise ConfigError(
            "agentUrl",
            "must be a path such as /agent or an http(s) URL, or empty; got " + _shown(agent_url),
        )
    # The user's own credential (the action API), and the one the agent is handed: it
    # must not be able to act (a read-only token), since the agent's tools are not the
    # user's confirmation.
    credentials: dict[str, str] = {}
    for key in ("authorization", "agentAuthorization"):
        value = config.get(key, "")
        if not isinstance(value, str) or len(value) > MAX_AUTHORIZATION_CHARS:
            raise ConfigError(
                key,
                "must be the Authorization header's value, at most "
                + str(MAX_AUTHORIZATION_CHARS)
                + " characters",
            )
        credentials[key] = value
    if credentials["agentAuthorization"] and (
        authorization_parts(credentials["agentAuthorization"])
        == authorization_parts(credentials["authorization"])
    ):
        raise ConfigError(
            "agentAuthorization",
            "must not be the user's own authorization: give the agent a read-only one",
        )
    owner = config.get("owner", "")
    if not isinstance(owner, str) or len(owner) > MAX_ID_CHARS:
        raise ConfigError(
            "owner",
            "must be a string of at most "
            + str(MAX_ID_CHARS)
            + " characters naming the signed-in user, or empty",
        )
    apps = config.get("apps", [])
    if not isinstance(apps, list):
        raise ConfigError("apps", "must be a list of module names")
    for index, app in enumerate(apps):
        if not _is_name(app):
            raise ConfigError("apps[" + str(index) + "]", "not a module name: " + _shown(app))
    return {
        "role": role,
        "position": position,
        "peerOrigin": peer,
        "childUrl": child_url,
        "childLoad": child_load,
        "share": share,
        "limits": limits,
        "history": history,
        "timeouts": timeouts,
        "apps": list(apps),
        "agentUrl": agent_url,
        "authorization": credentials["authorization"],
        "agentAuthorization": credentials["agentAuthorization"],
        "owner": owner,
    }


def authorization_parts(value: str) -> tuple[str, str]:
    """An Authorization value as the action API reads it: (its scheme, lower-cased; its
    token, without the spaces around it). `Bearer t`, `bearer t` and `Bearer  t ` are one
    credential. Only spaces and tabs are stripped (HTTP's own white space): `str.strip()`
    strips more under CPython (a no-break space) than under MicroPython, and the edge's
    config check would then read a credential otherwise than the action API does."""
    scheme, _, token = value.strip(" \t").partition(" ")
    return scheme.lower(), token.strip(" \t")


def saved_state_readable(saved: object) -> bool:
    """True if `saved` (the saved state, parsed) is a JSON object of this build's format."""
    if not isinstance(saved, dict):
        return False
    found = saved.get("format", SAVED_STATE_FORMAT)
    # Not True, nor 1.0: JSON's `true` and `1.0` are not this format.
    return type(found) is int and found == SAVED_STATE_FORMAT


def saved_state_key(config: "dict[str, Any]") -> str:
    """The storage key of an assistant's saved state: the prefix and a digest of whose
    conversation it is, the page origin it serves and its `owner` (the signed-in user),
    or without an owner the credentials it was given. A browser used by another user, or
    the assistant embedded by another page origin, finds no saved state of theirs; the
    digest keeps the credentials themselves out of storage. `config` is parse_config's.

    An assistant given neither an owner nor credentials (a sign-in by cookie that did not
    set `owner`) knows no user to keep a conversation for: its key is "", and it saves
    nothing, since every user of the browser would find it."""
    if not (config["owner"] or config["authorization"] or config["agentAuthorization"]):
        return ""
    who = config["owner"] or config["authorization"] + "\n" + config["agentAuthorization"]
    text = config["peerOrigin"] + "\n" + ("owner:" if config["owner"] else "credentials:") + who
    digest = sha256(text.encode()).digest()
    return SAVED_STATE_PREFIX + ":" + hexlify(digest[:16]).decode()


def _is_agent_url(value: object) -> bool:
    # Checked here because the edge resolves it with `new URL()`, which throws on
    # malformed input, and MicroPython cannot catch a JavaScript exception.
    if not isinstance(value, str) or any(ch in value for ch in " \t\r\n\\"):
        return False
    if value == "" or (value.startswith("/") and not value.startswith("//")):
        return True
    for scheme in ("http://", "https://"):
        if value.startswith(scheme) and len(value) > len(scheme) and value[len(scheme)] != "/":
            return True
    return False


def _is_name(value: object) -> bool:
    if not isinstance(value, str) or not value or value[0] not in _NAME_START:
        return False
    return all(ch in _NAME_CHARS for ch in value)


def _identifier(field: str, value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_CHARS:
        raise ValueError(field + " must be a string of 1 to " + str(MAX_ID_CHARS) + " characters")
    return value


def is_scalar(value: object) -> bool:
    """True for a JSON scalar: None, a bool, a str, an int, or a finite float."""
    if value is None or isinstance(value, (bool, str, int)):
        return True
    # A float from JSON is finite, but a page's number may still be NaN or an infinity.
    return isinstance(value, float) and value == value and value - value == 0.0


# The white space a browser collapses in text that wraps as usual (`white-space:
# normal`): a no-break space is not among it, and stays.
_COLLAPSED_SPACE = ("\t", "\n", "\r", "\f")


def shown_text(text: str) -> str:
    """An element's text as the browser shows it: each run of spaces, tabs and line
    breaks one space, none at either end. A cell written over several lines, as templates
    write it, is its words; the same rule under CPython and MicroPython, whose
    `str.split()` tell white space apart differently."""
    for space in _COLLAPSED_SPACE:
        text = text.replace(space, " ")
    return " ".join(word for word in text.split(" ") if word)


# The controls that embed, override or isolate a stretch of text's direction (U+202A to
# U+202E, U+2066 to U+2069): in a page's value or an agent's answer they would show its
# characters in another order than the one they are in ("flag" read as "galf").
_DIRECTION_CONTROLS = tuple(
    chr(code) for code in list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A))
)


def panel_text(text: str) -> str:
    """`text` as the assistant's panel shows it: a direction control as its code point
    (`[U+202E]`), a tag character outside a flag's tag sequence too (`_shown_tags`),
    and a NUL as its symbol (MicroPython hands a string to JavaScript only up to one), so
    that what the panel shows reads in the order it is in, and no words spelled in tags
    are kept from the user while the model gets them. The context block escapes the same
    characters for the model (pagecontext.block)."""
    text = text.replace("\x00", "\u2400")
    for control in _DIRECTION_CONTROLS:
        if control in text:
            text = text.replace(control, f"[U+{ord(control):04X}]")
    # Every tag character (U+E0000 to U+E007F) is written in UTF-8 from these bytes: a
    # text without them (nearly every one) is not read character by character.
    written = text.encode()
    if b"\xf3\xa0\x80" in written or b"\xf3\xa0\x81" in written:
        text = _shown_tags(text)
    if any(lead in written for lead in _UNSEEN_LEADS):
        text = _shown_unseen_runs(text)
    return text


# Characters that draw as nothing, and mean something one at a time only: a variation
# selector picks how the character before it is drawn (an emoji's U+FE0F, an
# ideograph's U+E0100 and after), a zero-width space, joiner or non-joiner, word joiner
# or U+FEFF goes between two characters, and the other default-ignorable and format
# characters below (the soft hyphen, the combining grapheme joiner, the Hangul fillers,
# Khmer's inherent vowels, the Mongolian selectors, the invisible operators, the
# deprecated format controls, U+FFF0-U+FFF8, the Egyptian, shorthand and musical format
# controls, and the unassigned rest of U+E0000-U+E0FFF) each mark up the one character
# beside it. A run of two or more of them, of any mix, draws as nothing and carries
# nothing a script or an emoji needs, but can carry data ("emoji smuggling": a byte per
# selector after one emoji), which the model would get (escaped) and the user never
# see: such a run is shown as code points, as tag characters are. One alone stays, and
# so does the one pair an emoji needs: a presentation selector, then the joiner to the
# next emoji (U+2764 U+FE0F U+200D U+1F525). The direction marks (U+200E, U+200F,
# U+061C) stay as they are, but do not end a run. (A label is not cut before a variation
# selector either: pagecontext.budget.)
VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
_ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")
_OTHER_UNSEEN = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2061, 0x2065),
    (0x206A, 0x206F),
    (0x3164, 0x3164),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    # The rest of U+E0000-U+E0FFF past the tags and the selectors: default-ignorable,
    # drawn as nothing, and escaped for the model (pagecontext.block) all the same.
    (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
)
_UNSEEN_RANGES = VARIATION_SELECTORS + _OTHER_UNSEEN
# Selectors with a direction mark between each (U+FE03 U+200E U+FE05 U+200E ...) draw as
# nothing all the same.
_MARKS = ("\u200e", "\u200f", "\u061c")
_EMOJI_JOINS = ("\ufe0e\u200d", "\ufe0f\u200d")
# The first bytes of their UTF-8: a text without any (nearly every one) is not read
# character by character.
_UNSEEN_LEADS = (
    b"\xef\xb8",
    b"\xf3\xa0",
    b"\xc2\xad",
    b"\xe2\x80\x8b",
    b"\xe2\x80\x8c",
    b"\xe2\x80\x8d",
    b"\xef\xbb\xbf",
    b"\xcd\x8f",
    b"\xe1\x85",
    b"\xe1\x9e\xb4",
    b"\xe1\x9e\xb5",
    b"\xe1\xa0",
    b"\xe2\x81",
    b"\xe3\x85\xa4",
    b"\xef\xbe\xa0",
    b"\xef\xbf",
    b"\xf0\x93\x90",
    b"\xf0\x9b\xb2",
    b"\xf0\x9d\x85",
)


def _unseen(char: str) -> bool:
    """True for a character that draws as nothing (above)."""
    if char in _ZERO_WIDTH:
        return True
    code = ord(char)
    return any(first <= code <= last for first, last in _UNSEEN_RANGES)


def _shown_unseen_runs(text: str) -> str:
    """`text` with each run of two or more characters that draw as nothing, of any mix,
    written as code points (`[U+FE0F][U+200B]`), but an emoji's selector and joiner. A
    direction mark inside a run stays as it is, and the run goes on after it."""
    parts: list[str] = []
    run: list[str] = []
    for char in text + " ":
        if _unseen(char) or (run and char in _MARKS):
            run.append(char)
            continue
        unseen = "".join(c for c in run if c not in _MARKS)
        if len(unseen) > 1 and unseen not in _EMOJI_JOINS:
            parts.extend(c if c in _MARKS else f"[U+{ord(c):04X}]" for c in run)
        else:
            parts.extend(run)
        run = []
        parts.append(char)
    return "".join(parts)[:-1]


def isolated_strings(text: str) -> list[list[Any]]:
    """`text` (a context block, or a text that holds one) cut into [part, isolate] pairs
    whose parts make `text` again: each JSON string of an item line (`- ` and one JSON
    object) that holds more than ASCII is a part of its own, with isolate True. The panel
    shows each such part in its own bidirectional isolate (`<bdi>`): a right-to-left key
    and its value, or two right-to-left items of a list, are then drawn in the order the
    model reads them, rather than as one right-to-left run that the Unicode bidirectional
    algorithm draws in reverse (`"مدينة":"القاهرة"` read as `"القاهرة":"مدينة"`). A line of
    ASCII alone (nearly every one) is not read byte by byte."""
    parts: list[list[Any]] = []
    plain: list[str] = []
    for index, line in enumerate(text.split("\n")):
        if index:
            plain.append("\n")
        written = line.encode()
        if not line.startswith("- ") or len(written) == len(line):
            plain.append(line)
            continue
        # Bytes, found and indexed in constant time under MicroPython too (its str is
        # UTF-8, indexed from the start); a quote or backslash byte is never inside a
        # longer character's UTF-8.
        at = 0
        start = written.find(b'"')
        while start >= 0:
            end = start + 1
            while True:
                end = written.find(b'"', end)
                if end < 0:
                    break
                slashes = 0
                while written[end - 1 - slashes] == 0x5C:
                    slashes += 1
                if slashes % 2 == 0:
                    break
                end += 1
            if end < 0:
                break
            end += 1
            string = written[start:end]
            if len(string) != len(string.decode()):
                plain.append(written[at:start].decode())
                parts.append(["".join(plain), False])
                plain = []
                parts.append([string.decode(), True])
                at = end
            start = written.find(b'"', end)
        plain.append(written[at:].decode())
    parts.append(["".join(plain), False])
    return [part for part in parts if part[0]]


# Unicode's tag characters (U+E0000 to U+E007F) spell ASCII that no browser draws: in a
# page's value they would carry text the user never sees in the chip, while the model
# gets it. The one use they keep is the emoji tag sequences Unicode recommends (RGI):
# the flags of England, Scotland and Wales (U+1F3F4, the tags of "gbeng", "gbsct" or
# "gbwls", U+E007F), each drawn as its flag. Any other run after U+1F3F4 is drawn as a
# black flag with its tags unseen, so it is shown as code points too.
_TAG_FIRST = "\U000e0000"
_TAG_LAST = "\U000e007f"
_TAG_BASE = "\U0001f3f4"
_FLAG_TAGS = tuple(
    "".join(chr(0xE0000 + ord(letter)) for letter in name) + _TAG_LAST
    for name in ("gbeng", "gbsct", "gbwls")
)


def _shown_tags(text: str) -> str:
    """`text` with each tag character written as its code point (`[U+E0049]`), but for
    the runs of them that make a flag's tag sequence (`_FLAG_TAGS`)."""
    parts: list[str] = []
    run: list[str] = []
    before = ""
    for char in text + " ":
        if _TAG_FIRST <= char <= _TAG_LAST:
            run.append(char)
            continue
        if run:
            tags = "".join(run)
            if before == _TAG_BASE and tags in _FLAG_TAGS:
                parts.append(tags)
            else:
                parts.extend(f"[U+{ord(tag):04X}]" for tag in run)
            run = []
        parts.append(char)
        before = char
    return "".join(parts)[:-1]


def _values(field: str, raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(field + " must be an object of field -> scalar")
    for name, value in raw.items():
        if not isinstance(name, str) or not is_scalar(value):
            raise ValueError(field + "." + str(name) + " must be a string, number, bool or null")
    return raw


def _detail(detail: object, event: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """Return an event's detail if it is an object with no key but `keys`."""
    if not isinstance(detail, dict):
        raise ValueError("detail must be an object with " + ", ".join(keys))
    for key in detail:
        if key not in keys:
            raise ValueError("detail." + str(key) + " is not part of " + event)
    return detail


MAX_GENERATION = 9007199254740991  # 2**53 - 1: a safe integer in JavaScript too


def _folded(name: str) -> str:
    """`name` as a misspelling would not change it: lower case, no `-` or `_`."""
    return name.lower().replace("-", "").replace("_", "")


def _within_two_edits(a: str, b: str) -> bool:
    """Whether `a` becomes `b` by at most two letters inserted, removed or changed."""
    if abs(len(a) - len(b)) > 2:
        return False
    before = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        now = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            now[j] = min(before[j] + 1, now[j - 1] + 1, before[j - 1] + cost)
        if min(now) > 2:
            return False
        before = now
    return before[-1] <= 2


def misspelled_fields(missing: list[str], unshared: list[str]) -> list[list[str]]:
    """The fields a component declares shareable that a selection has no value for
    (`missing`), each with the values it has but does not share (`unshared`) that look
    like the same name written otherwise (`onhand` and `onHand`, `revnueEur` and
    `revenueEur`: one in another case, or one or two letters apart), as
    [missing name, unshared name] pairs; a pair of unlike names is none (a value the page
    keeps to itself, a field one object does not have)."""
    pairs: list[list[str]] = []
    for name in missing:
        for other in unshared:
            a, b = _folded(name), _folded(other)
            if a == b or (min(len(a), len(b)) > 3 and _within_two_edits(a, b)):
                pairs.append([name, other])
    return pairs


def parse_view(filters_text: object, generation_text: object) -> tuple[dict[str, Any], int]:
    """Return (filters, generation) from a component's `data-pc-filters` and
    `data-pc-generation` attributes (None when absent: no filters, generation 0).

    Filters are a JSON object of scalars or lists of scalars; the generation is a whole
    number written in decimal. Raises ValueError, naming the attribute, otherwise.
    """
    return parse_filters(filters_text), parse_generation(generation_text)


def parse_filters(filters_text: object) -> dict[str, Any]:
    """Return the filters of a component's `data-pc-filters` attribute (None when
    absent: none), in the attribute's order where the dict keeps it (CPython's does,
    MicroPython's not). Raises ValueError, naming the attribute, unless it is a JSON
    object of scalars or lists of scalars."""
    filters: object = {}
    if filters_text is not None:
        try:
            filters = json.loads(filters_text)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            filters = None
    if not isinstance(filters, dict):
        raise ValueError("data-pc-filters must be a JSON object")
    for name, value in filters.items():
        items = value if isinstance(value, list) else [value]
        if not all(is_scalar(item) for item in items):
            raise ValueError("data-pc-filters." + name + " must be a scalar or a list of scalars")
    return filters


def filters_in_page_order(text: object, checked: dict[str, Any]) -> dict[str, Any]:
    """`checked`, the filters the edge read from a `data-pc-filters` text (MicroPython's
    dicts keep no order), in the order of that text where this reader takes the text as
    the same filters; else `checked` as it is. The edge reads the text as JavaScript's
    JSON.parse does, which CPython's reader may still read otherwise (it takes NaN):
    the edge accepted it, so the view stands, its filters in no particular order."""
    try:
        ordered = parse_filters(text)
    except ValueError:
        return checked
    return ordered if ordered == checked else checked


def parse_generation(generation_text: object) -> int:
    """Return the generation from a component's `data-pc-generation` attribute (None when
    absent: 0). Raises ValueError unless it is a whole number written in decimal."""
    if generation_text is None:
        return 0
    text = str(generation_text)
    ok = 1 <= len(text) <= 16 and all(ch in "0123456789" for ch in text)
    if not ok or int(text) > MAX_GENERATION:
        raise ValueError("data-pc-generation must be a whole number, got " + _shown(text))
    return int(text)


def parse_select(detail: object) -> tuple[str, str, dict[str, Any]]:
    """Return (componentId, resourceRef, values) from a `pagecontext:select` detail.

    `values` (optional) is a flat object of field -> JSON scalar. Raises ValueError,
    naming the field, for anything else.
    """
    found = _detail(detail, "pagecontext:select", ("componentId", "resourceRef", "values"))
    component_id = _identifier("detail.componentId", found.get("componentId"))
    resource_ref = _identifier("detail.resourceRef", found.get("resourceRef"))
    return component_id, resource_ref, _values("detail.values", found.get("values", {}))


def parse_command_done(detail: object) -> tuple[str, str, str]:
    """Return (commandId, status, reason) from a `pagecontext:command-done` detail.

    `status` is "applied" or "not-found"; `reason` is a short code (lower-case letters,
    digits, hyphens; at most 64), "ok" or "not-rendered" when omitted. Raises ValueError,
    naming the field, for anything else.
    """
    found = _detail(detail, "pagecontext:command-done", ("commandId", "status", "reason"))
    command_id = _identifier("detail.commandId", found.get("commandId"))
    status = found.get("status")
    if status not in UI_STATUSES:
        raise ValueError('detail.status must be "applied" or "not-found"')
    reason = found.get("reason", UI_REASONS[status])
    ok = isinstance(reason, str) and 1 <= len(reason) <= 64
    if not ok or not all(ch in _REASON_CHARS for ch in reason):
        raise ValueError("detail.reason must be 1-64 of a-z, 0-9 and -")
    return command_id, status, reason


def is_layer_view(view: Any) -> "TypeGuard[dict[str, Any]]":
    """True if `view` is a receipt layer as the assistant saves and draws it: an object
    with a `state` of LAYER_STATES, `late` a boolean if given, `reason` and `lateStatus`
    strings or null. A saved one that is not is read as lost with the old document."""
    if not isinstance(view, dict) or view.get("state") not in LAYER_STATES:
        return False
    if not isinstance(view.get("late", False), bool):
        return False
    return all(
        view.get(name) is None or isinstance(view.get(name), str)
        for name in ("reason", "lateStatus")
    )


def action_checkable(view: Any) -> bool:
    """True if the server may be asked whether a business action happened, by the view
    of its `business` layer: unconfirmed with no late word, or only "not found" (a flag
    request on its way, from this document or another, may be written since); "flagged
    later" is the last word."""
    if not is_layer_view(view) or view["state"] != "unconfirmed":
        return False
    return not view.get("late") or view.get("lateStatus") == "not-found"


def action_unsent(entry: Any) -> bool:
    """True if a confirmed business action was never sent to be carried out: its request
    for a confirmation got no answer in time (its `received` layer unconfirmed: no
    answer, a timeout, the deadline, a reload) or failed on the server (`http-5xx`), so
    no token came to send it with (a token that comes late is never used). Nothing was
    asked of the server in this action's name but the confirmation; the user may be
    offered it again (not after a refusal the server meant: `no-permission`, say)."""
    view = entry.get("received") if isinstance(entry, dict) else None
    if not is_layer_view(view):
        return False
    failed = view["state"] == "rejected" and str(view.get("reason") or "").startswith("http-5")
    if view["state"] != "unconfirmed" and not failed:
        return False
    # Flagged after all, as a check found (another tab's confirmation of the same
    # proposal): it was asked for, and is not to be offered again.
    business = entry.get("business")
    return not (
        is_layer_view(business) and business.get("late") and business.get("lateStatus") == "applied"
    )


def reason_listed(state: Any, reason: Any) -> bool:
    """True if `reason` is one pagecontext itself gives a command's layer in `state`
    (LISTED_REASONS); False for a page's own word, or a listed word with another state."""
    return reason in LISTED_REASONS.get(state, ())


def command_standing(entry: Any, later: str) -> Any:
    """The receipt view that says where a logged command (`later` "ui") or business
    action ("business") stands: its `later` layer once it left pending; else its
    `received` layer if that did not apply (the later one then will not happen); else
    pending. A `received` that applied says only that the page (or the server) took
    it, never that it was done."""
    view = entry.get(later)
    if isinstance(view, dict) and view.get("state") not in (None, "pending"):
        return view
    view = entry.get("received")
    if isinstance(view, dict) and view.get("state") not in (None, "pending", "applied"):
        return view
    return {"state": "pending"}
