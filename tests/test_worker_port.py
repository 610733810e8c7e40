"""The worker's port listener (web/worker.mjs, listenPort), run in Node.js."""

from __future__ import annotations

from pathlib import Path

from node import run_node

ROOT = Path(__file__).resolve().parents[1]
LISTEN_PORT = Path(__file__).parent / "worker" / "listen_port.mjs"
# The longest string V8 makes (2**29 - 24 characters on 64-bit machines).
V8_STRING_MAX = 2**29 - 24


def test_a_burst_of_large_contexts_is_read_in_runs_no_string_of_which_outgrows_v8() -> None:
    """A burst of contexts of a million characters each, to a page at the largest
    maxMessageBytes: the listener joins them into runs that stop short of RUN_CHARS
    characters (128 texts near that limit joined past V8's longest string, and the
    RangeError ended the worker), and every message is delivered."""
    result = run_node(str(LISTEN_PORT), str(ROOT))
    runs = result["runs"]
    assert isinstance(runs, list)
    run_chars = result["runChars"]
    assert isinstance(run_chars, int)
    assert run_chars < V8_STRING_MAX
    assert len(runs) >= 2, runs
    assert max(runs) < run_chars, runs
    assert result["messages"] == 20
