"""Runs a Node.js script of the test suite and reads the JSON it prints on its RESULT line."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest


def run_node(*args: str) -> dict[str, object]:
    """Run `node *args`; return the JSON after "RESULT " on its output. Fails the test if
    Node.js is missing or the script fails."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node and the npm runtime packages are needed: run `make unit`")
    out = subprocess.run(
        [node, *args], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    # Lines end at "\n" only: JSON.stringify writes U+2028 and U+2029 as they are.
    line = next(line for line in out.split("\n") if line.startswith("RESULT "))
    result: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    return result
