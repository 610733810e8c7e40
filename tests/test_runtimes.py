"""The core on the two runtimes it runs on: CPython (the server, the built-in agent, these
tests) and Pyodide (the frames' workers, a newer Python), given the same edge cases,
must accept and refuse the same messages and read them as the same values."""

from __future__ import annotations

import json
from pathlib import Path

from node import run_node
from runtimes import checks

ROOT = Path(__file__).resolve().parents[1]
RUNTIMES = Path(__file__).resolve().parent / "runtimes"


def test_the_workers_and_the_server_read_edge_cases_alike() -> None:
    """Times (hour 24, a leap second, days a month does not have), numbers (past what
    JavaScript holds, -0, beyond a double, NaN) and strings (half a character, NUL,
    separators), each through both parsing paths and the agent's task."""
    if not (ROOT / "build" / "wheels" / ".stamp").exists():
        raise AssertionError("the browser wheels are needed: run `make unit`")
    pyodide = run_node(str(RUNTIMES / "run.mjs"), str(ROOT))
    here = json.loads(checks.outcomes())
    there = pyodide["outcomes"]
    assert isinstance(there, dict)
    assert there.keys() == here.keys()
    differ = {
        name: {"cpython": here[name], "pyodide": there[name]}
        for name in here
        if here[name] != there[name]
    }
    assert not differ, (pyodide["version"], differ)
    # The cases reach both outcomes: some are read, some refused.
    assert any(outcome.get("full", "").startswith("refused:") for outcome in here.values())
    assert any(outcome.get("fast", "none") != "none" for outcome in here.values())
