"""What the core makes of edge-case input, as JSON: run by CPython (the server, the
built-in agent, the tests) and by Pyodide (the frames' workers), which must agree.

Each case is a context message's JSON text; its outcome is the model each parsing path
returns (its JSON), or the reason it refuses.
"""

from __future__ import annotations

import json

from pagecontext.agui import TaskContext
from pagecontext.errors import MessageRejected
from pagecontext.models import parse_context_json, parse_json, parse_message

_BASE = (
    '{"protocol":"pagecontext","version":1,"type":"context","messageId":"m1",'
    '"pageInstanceId":"p1","conversationId":"c1","selectionRevision":1,'
    '"selection":{"pageId":"sales","componentId":"table","resourceRef":"row-1",'
    '"observedAt":"OBSERVED","filters":{},"snapshot":{"n":VALUE,"s":"TEXT"}}}'
)
_TIME = "2026-03-31T10:00:00.000Z"

TIMES = [
    "2026-03-31T24:00:00.000Z",
    "2026-03-31T23:59:60.000Z",
    "2026-02-29T10:00:00.000Z",
    "2024-02-29T10:00:00.000Z",
    "0000-01-01T00:00:00.000Z",
    "0001-01-01T00:00:00.000Z",
    "9999-12-31T23:59:59.999Z",
    "2026-04-31T10:00:00.000Z",
    "2026-00-10T10:00:00.000Z",
]
VALUES = [
    "0",
    "-0",
    "-0.0",
    "1e308",
    "1e309",
    "-1e309",
    "1.5e-7",
    "5e-324",
    "2.5e-324",
    "9007199254740991",
    "9007199254740992",
    "-9007199254740991",
    "9007199254740991.0",
    "1E2",
    "0.1",
    "123456789012345678901234567890",
    "NaN",
    "Infinity",
]
TEXTS = [
    "plain",
    "\\ud83d",
    "\\ud83d\\ude00",
    "\\u0000",
    "\\u2028",
    "\\ufeff",
]


def _case(observed: str = _TIME, value: str = "1", text: str = "x") -> str:
    return _BASE.replace("OBSERVED", observed).replace("VALUE", value).replace("TEXT", text)


def _fast(text: str) -> str:
    model = parse_context_json(text)
    return "none" if model is None else model.model_dump_json(by_alias=True)


def _full(text: str) -> str:
    try:
        raw = parse_json(text)
    except ValueError:
        return "not-json"
    try:
        return parse_message(raw).model_dump_json(by_alias=True)
    except MessageRejected as refused:
        return "refused:" + refused.reason


def _task(observed: str) -> str:
    try:
        task = TaskContext(
            task_id="t1",
            page_id="sales",
            component_id="table",
            resource_ref="row-1",
            observed_at=observed,
            basis_revision=1,
        )
    except ValueError:
        return "refused"
    return task.model_dump_json(by_alias=True)


def outcomes() -> str:
    """Every case's outcome on this runtime, as JSON."""
    cases = (
        [("observedAt " + t, _case(observed=t)) for t in TIMES]
        + [("number " + v, _case(value=v)) for v in VALUES]
        + [("string " + s, _case(text=s)) for s in TEXTS]
    )
    found = {name: {"fast": _fast(text), "full": _full(text)} for name, text in cases}
    for t in TIMES:
        found["task " + t] = {"task": _task(t)}
    return json.dumps(found, sort_keys=True)
