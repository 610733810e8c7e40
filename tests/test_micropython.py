"""The main-thread edge runs under MicroPython: its modules must import there, and the
window rules must decide exactly as they do under CPython."""

from __future__ import annotations

from pathlib import Path

import pytest

from node import run_node
from pagecontext import windowrules as w

ROOT = Path(__file__).resolve().parents[1]
MICROPYTHON = ROOT / "node_modules" / "@micropython" / "micropython-webassembly-pyscript"


def _run_micropython() -> dict[str, object]:
    if not MICROPYTHON.is_dir():
        pytest.fail("node and the npm runtime packages are needed: run `make unit`")
    here = Path(__file__).parent / "micropython"
    return run_node(str(here / "run.mjs"), str(ROOT), str(here / "check_subset.py"))


def test_edge_modules_run_under_micropython_with_the_same_answers() -> None:
    """windowrules and the edge import under MicroPython and agree with CPython."""
    nonce = w.encode_nonce(bytes(range(16)))
    expected = {
        "nonce": nonce,
        "read": nonce,
        "exact": [True, False, False, False, False],
        "allowed": [True, False, False],
        "ready": "ready",
        "connect": "connect",
        "bad": None,
        "edge": "pagecontext:assistant",
    }
    assert _run_micropython() == expected
