"""The main-thread edge runs under MicroPython: its modules must import there, and the
window rules must decide exactly as they do under CPython."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pagecontext import windowrules as w

ROOT = Path(__file__).resolve().parents[1]
MICROPYTHON = ROOT / "node_modules" / "@micropython" / "micropython-webassembly-pyscript"


def _run_micropython() -> dict[str, object]:
    node = shutil.which("node")
    if node is None or not MICROPYTHON.is_dir():
        pytest.fail("node and the npm runtime packages are needed: run `make unit`")
    here = Path(__file__).parent / "micropython"
    out = subprocess.run(
        [node, str(here / "run.mjs"), str(ROOT), str(here / "check_subset.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    result: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    return result


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
