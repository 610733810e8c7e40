"""The `pagecontext` command run as a user runs it: its own process, from the source."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

PYSRC = Path(__file__).resolve().parents[1] / "pysrc"


@contextlib.contextmanager
def pagecontext_running(*args: str) -> Iterator[subprocess.Popen[str]]:
    """`python -m pagecontext ARGS...` started with its output piped, as text; killed on
    the way out if it is still running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pagecontext", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PYSRC)},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def first_line(process: subprocess.Popen[str], seconds: float = 15) -> str:
    """The first line `process` writes to its output within `seconds` ("" if none)."""
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + seconds
    line = ""
    while not line and time.monotonic() < deadline:
        if selector.select(timeout=0.1):
            line = process.stdout.readline()
    return line


def stopped(process: subprocess.Popen[str], signum: signal.Signals) -> tuple[int, str]:
    """Send `signum` to `process` and wait for it to end: its exit code and its error
    output."""
    process.send_signal(signum)
    _, err = process.communicate(timeout=15)
    return process.returncode, err
