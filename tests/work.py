"""How much work code does, counted rather than timed: the Python and C function calls
CPython's profiler sees. A count is the same on every run of the same code, whatever
else the machine is doing, so a test may compare two counts exactly: the garbage
collector is kept from running while it counts, since a collection calls the finalizers
of whatever earlier code left behind (a generator's close, a `__del__`)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

__all__ = ["calls_for_each"]


def calls_for_each(handle: Callable[[Any], object], items: Iterable[object]) -> int:
    """The function calls `handle` makes, in this thread, over all of `items` (each
    handed to it in turn)."""
    counted = 0

    def profile(_frame: FrameType, event: str, _arg: object) -> None:
        nonlocal counted
        if event in ("call", "c_call"):
            counted += 1

    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    try:
        for item in items:
            handle(item)
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    return counted
