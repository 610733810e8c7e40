# Executed by MicroPython (see run.mjs): the edge's modules import, and the window rules
# give the same answers as under CPython, where this script runs too, without the edge
# (tests/test_micropython.py compares them).
import json

from pagecontext import windowrules as w

try:
    import pagecontext.browser.edge as edge
except ImportError:  # CPython: no `js` module to import the edge with
    edge = None

PAGE = "http://127.0.0.1:8000"
CHILD = "http://localhost:8001/a.html"
nonce = w.encode_nonce(bytes(range(16)))
origins = (PAGE, PAGE + "/", "null", "HTTP://x", "http://a:0")
lookalikes = (PAGE, "http://127.0.0.1:80000", "https://127.0.0.1:8000")
cases = {
    "nonce": nonce,
    "read": w.read_nonce(w.child_url(CHILD + "#x", nonce)[len(CHILD) :]),
    "exact": [w.is_exact_origin(o) for o in origins],
    "allowed": [w.origin_allowed(o, PAGE) for o in lookalikes],
    "ready": w.handshake_type(w.ready_message("assistant")),
    "connect": w.handshake_type(w.connect_message("assistant", "abc", "def")),
    "bad": w.handshake_type({"protocol": "pagecontext", "version": 1, "type": "ready", "role": 1}),
}
if edge is not None:
    cases["edge"] = edge.SAVED_STATE_PREFIX
    # The conversation a saved state continues: only one of this build's format.
    cases["saved"] = [
        edge._saved_conversation(text)
        for text in (
            '{"conversationId": "abc"}',
            '{"format": 1, "conversationId": "abc"}',
            '{"format": 2, "conversationId": "abc"}',
            '{"format": true, "conversationId": "abc"}',
            '{"format": 1.0, "conversationId": "abc"}',
        )
    ]
print("RESULT " + json.dumps(cases))
