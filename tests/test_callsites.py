"""The interpreter's call sites: `spread` reaches each generic operation's slot with more
functions than V8 inlines, and `provoke` performs each operation once, in its own level of
the interpreter, innermost first, after every level is entered."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from pagecontext.browser import callsites

# The slots each operation calls, by the special methods that define them in Python.
SLOTS = {
    callsites._get_attribute: ("__getattribute__", "__getattr__"),
    callsites._set_attribute: ("__setattr__",),
    callsites._call: ("__call__",),
    callsites._contains: ("__contains__",),
    callsites._truth: ("__bool__", "__len__"),
    callsites._length: ("__len__",),
    callsites._iterate: ("__iter__",),
    callsites._get_item: ("__getitem__",),
    callsites._set_item: ("__setitem__",),
    callsites._compare: ("__eq__",),
}


def slot_owner(target: object, names: tuple[str, ...]) -> type | None:
    """The class whose slot function the operation calls on `target`: the first in its
    type's method resolution order that defines one of `names`."""
    for klass in type(target).__mro__:
        if any(name in vars(klass) for name in names):
            return klass
    return None


def test_every_operation_reaches_more_slot_functions_than_v8_inlines() -> None:
    """Each operation reaches more slot functions than V8 inlines at one call site."""
    samples = callsites.samples()
    assert set(samples) == set(SLOTS)
    for operation, targets in samples.items():
        owners = {slot_owner(target, SLOTS[operation]) for target in targets} - {None}
        assert len(owners) >= callsites.MORE_THAN_INLINED, (operation.__name__, owners)


def test_extra_objects_join_every_operation() -> None:
    """Objects passed in are among the targets of every operation."""
    extra = object()
    samples = callsites.samples([extra])
    assert set(samples) == set(SLOTS)
    for targets in samples.values():
        assert any(target is extra for target in targets)


def test_spread_runs_every_operation_and_changes_nothing_outside() -> None:
    """`spread` reaches the objects given and sets nothing on the module it reads."""
    calls: list[tuple[str, object]] = []

    class Recorder:
        """An object of the host's: it records the operations that reach it."""

        def __getattr__(self, name: str) -> object:
            calls.append(("get", name))
            return 1

        def __call__(self, value: object) -> object:
            calls.append(("call", value))
            return value

    callsites.spread([Recorder()])
    assert ("get", "x") in calls
    assert ("call", 1) in calls
    assert not hasattr(types, "x")  # the module it reads is not written to


def test_each_rare_operation_is_one_of_the_spread_ones_once() -> None:
    """The rare operations are the spread ones, each exactly once."""
    operations = [operation for operation, _target in callsites._rare()]
    assert sorted(op.__name__ for op in operations) == sorted(op.__name__ for op in SLOTS)


def test_provoke_enters_every_level_before_the_first_operation_innermost_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each operation runs in its own level, innermost first once all are entered; one
    that raises stops none of the others."""
    events: list[tuple[str, int]] = []

    def operation(number: int) -> Any:
        def run(target: object) -> None:
            events.append(("operation", number))
            # How deep the interpreter is: each level is its own frame, further down.
            events.append(("depth", len(_frames())))
            if number == 1:
                raise ValueError("a type that does not support the operation")

        return run

    levels = tuple((operation(number), object()) for number in range(4))
    monkeypatch.setattr(callsites, "_LEVELS", levels)
    monkeypatch.setattr(callsites, "_DEPTH", len(levels))
    callsites.provoke()
    order = [number for kind, number in events if kind == "operation"]
    assert order == [3, 2, 1, 0]  # innermost first; the one that raised stopped nothing
    depths = [depth for kind, depth in events if kind == "depth"]
    assert depths == sorted(depths, reverse=True)
    assert len(set(depths)) == len(depths)


def _frames() -> list[object]:
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


def test_provoke_builds_its_levels_once() -> None:
    """`provoke` builds its levels once, one per operation, and reuses them after."""
    callsites.provoke()
    levels = callsites._LEVELS
    callsites.provoke()
    assert callsites._LEVELS is levels
    assert callsites._DEPTH == len(levels) == len(SLOTS)
