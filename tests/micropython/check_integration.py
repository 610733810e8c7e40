# Run by MicroPython (run.mjs) and by CPython (tests/test_micropython.py runs both and
# compares): the integration surface's rules give the same answers, word for word.
import json

from pagecontext import integration as i

PAGE = "http://127.0.0.1:8000"
ASSISTANT = "http://localhost:8001"
EMBEDDER = {"role": "page", "position": "embedder", "peerOrigin": ASSISTANT}
CONFIGS = (
    EMBEDDER,
    {
        "role": "page",
        "position": "embedder",
        "peerOrigin": ASSISTANT,
        "childUrl": ASSISTANT + "/assistant.html",
        "share": "select",
        "limits": {"maxStringChars": 512},
        "history": 32,
        "timeouts": {"bootMs": 5000, "childMs": 2000},
        "apps": ["sales"],
    },
    {"role": "page", "position": "embedder", "peerOrigin": "*"},
    {"role": "page", "position": "embedder", "peerOrigin": PAGE, "limits": {"maxIdChars": True}},
    {"role": "page", "position": "embedder", "peerOrigin": PAGE, "childUrl": PAGE + ".x/"},
    {"role": "page", "position": "embedder", "peerOrigin": PAGE, "timeouts": {"bootMs": 1.5}},
    {"role": "page", "position": "embedder", "peerOrigin": PAGE, "apps": ["a-b"]},
    {"role": "page", "peerOrigin": PAGE},
    {
        "role": "assistant",
        "position": "child",
        "peerOrigin": PAGE,
        "agentUrl": "/agent",
        "authorization": "Bearer abc",
    },
    {"role": "assistant", "position": "child", "peerOrigin": PAGE, "agentUrl": "//x"},
    [],
    {"role": "assistant", "position": "child", "peerOrigin": PAGE, "owner": 7},
)
# Whose saved state: by owner, by credentials, by page origin.
OWNED = (
    {"role": "assistant", "position": "child", "peerOrigin": PAGE, "owner": "alice"},
    {"role": "assistant", "position": "child", "peerOrigin": PAGE, "authorization": "Bearer a"},
    {"role": "assistant", "position": "child", "peerOrigin": ASSISTANT, "owner": "alice"},
    {"role": "assistant", "position": "child", "peerOrigin": PAGE},
)
SELECTS = (
    {"componentId": "c", "resourceRef": "r", "values": {"a": 1.5, "b": None, "c": True}},
    {"componentId": "c", "resourceRef": "r", "values": [1]},
    {"componentId": "c", "resourceRef": ""},
    {"componentId": "c", "resourceRef": "r", "extra": 1},
)
DONES = (
    {"commandId": "c1", "status": "not-found"},
    {"commandId": "c1", "status": "applied", "reason": "drawn-by-page"},
    {"commandId": "c1", "status": "rejected"},
    {"commandId": "c1", "status": "applied", "reason": "Bad"},
)

# Cell texts: a template's lines and indentation, a no-break space, a next line (U+0085).
PANEL = (
    "North\u202eweiver rof galf\u202c",
    "\u2066a\u2069\u2067b\u2068\u202a\u202b\u202d",
    "a\x00b",
    "\u200f\u061c\u2028",
    "North\U000e0049\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f \u20ac",
    "\U0001f3f4\U000e0049\U000e007f\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e0078\U000e0078\U000e007f",
    "\U0001f3f4\U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065\U000e007f\U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f",
    "\U0001f600\U000e0100\U000e01ef\ufe0f \u2764\ufe0f\u200d\U0001f525 a\u200b\u200b\ufeffb\u200cc",
    "x\U000e0148\u200b\U000e0169 n\u2062\u2063o \U0001d173\u3164 a\u2062b",
    "x\ufe03\u200e\ufe05 a\u00ad\u00adb \U000e00e6\U000e00e7 a\u200e\u200fb",
)
# Blocks with right-to-left strings on item lines, escaped quotes and backslashes in them.
ISOLATED = (
    '<pagecontext-data>\n- {"f":{"\u05e2\u05d9\u05e8":"\u05ea\u05dc \\"\u05d0",'
    '"x":["a","\u0628\\\\"]}}\nq',
    '- {"type":"text","value":"ASCII"}',
    "",
)
SHOWN = ("\n    Pallet jack\n  ", "a\t\r\n\fb", "  ", "1\u00a0000 \u20ac", "a\x85 b")


def outcome(parse, raw):
    try:
        result = parse(raw)
    except i.ConfigError as error:
        return ["ConfigError", error.field, str(error)]
    except ValueError as error:
        return ["ValueError", str(error)]
    return ["ok", list(result) if isinstance(result, tuple) else result]


VIEWS = (
    ('{"region": "North", "months": ["2026-01"], "x": 1.5}', "7"),
    (None, None),
    ('{"a": {"b": 1}}', "1"),
    ("{}", "1e3"),
    ("nope", "1"),
)
# (declared fields a selection has no value for, its values not shared)
MISSPELLED = (
    (["revnueEur"], ["revenueEur"]),
    (["onhand"], ["onHand", "note"]),
    (["changePct"], ["reviewer"]),
    (["series"], ["chart"]),
    (["unit_price", "qty"], ["unitPrice", "quantity"]),
    ([], ["total"]),
)
cases = {
    "misspelled": [i.misspelled_fields(missing, unshared) for missing, unshared in MISSPELLED],
    "view": [outcome(lambda raw: i.parse_view(raw[0], raw[1]), raw) for raw in VIEWS],
    "config": [outcome(i.parse_config, raw) for raw in CONFIGS],
    "select": [outcome(i.parse_select, raw) for raw in SELECTS],
    "done": [outcome(i.parse_command_done, raw) for raw in DONES],
    "savedKeys": [i.saved_state_key(i.parse_config(raw)) for raw in OWNED],
    "onOrigin": [i.url_on_origin(u, ASSISTANT) for u in (ASSISTANT + "/a", ASSISTANT + "x/")],
    "shown": [i.shown_text(t) for t in SHOWN],
    "panel": [i.panel_text(t) for t in PANEL],
    "isolated": [i.isolated_strings(t) for t in ISOLATED],
}
print("RESULT " + json.dumps(cases))
