"""The interpreter's generic call sites, made to see many types before a user's first
selection does.

Chromium's V8 compiles a hot WebAssembly function a second time, optimized, and inlines
into it the targets each of its indirect calls has had so far (at most four), on the
speculation that the call keeps to them; a call to any other target deoptimizes the
function, which is then compiled again. CPython's interpreter loop
(`_PyEval_EvalFrameDefault`, 79 KB of WebAssembly) is such a function: V8 inlines into it
the generic paths of attribute lookup, calls, `in`, truth, `len` and iteration
(`PyObject_GetAttr`, `PyObject_Vectorcall`, `PySequence_Contains`, `PyObject_IsTrue`,
`PyObject_Size`, `PyObject_GetIter`), each an indirect call through a type's slot. V8
reads an inlined function's recorded targets when the loop is first optimized, during
the boot, and again only when the loop deoptimizes at that function's call. So each of
these calls cost the loop a deoptimization and a new compile (150-500 ms of a core
each) the first time a new type reached it, and that was the user's first selections
(docs/performance.md, "The interpreter's call sites").

Two steps take that cost before the user comes:

- `spread(extra)` runs each generic operation over enough types with different slot
  functions that the targets recorded are more than four: V8 then calls the slot
  without inlining any, so no new type can deoptimize the loop there.
- `provoke()` enters the interpreter loop once per operation, each level from the one
  before through a C function (`map`), so that every level runs the loop's code of the
  moment; then, on the way out, each level performs its operation on a type nothing
  else uses. An optimized loop that still inlines a stale set of targets deoptimizes at
  each of them within one task, and V8 reads the targets `spread` recorded. It only works
  while the loop's optimized code is installed, which Python cannot observe, so the
  worker calls it after each step of its rehearsal and a few times after; where nothing
  is left to deoptimize it costs about a millisecond.

Pure Python, writing only to objects of its own (and to the `extra` objects a caller
passes): elsewhere (CPython, other engines) it is a few milliseconds of work and nothing
more.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import types
import weakref
from collections.abc import Callable, Iterable
from typing import Any

# V8 inlines up to four targets of an indirect call; five or more make it "megamorphic".
MORE_THAN_INLINED = 5
# After its rehearsal, a worker provokes the call sites this many times, this far apart:
# until the loop's optimized code (compiled on other threads) is in place, a provocation
# finds nothing to deoptimize.
PROVOKE_AFTER = 10
PROVOKE_EVERY_MS = 200


class _Plain:
    x = 1

    def method(self, value: object) -> object:
        return value


class _Slots:
    """A class whose instances use the type's own slot functions for every operation."""

    x = 1

    def __getattr__(self, name: str) -> object:
        return 1

    def __setattr__(self, name: str, value: object) -> None:
        pass

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        return 1

    def __contains__(self, item: object) -> bool:
        return False

    def __call__(self, value: object) -> object:
        return value

    def __iter__(self) -> Any:
        return iter(())

    def __getitem__(self, key: object) -> object:
        return 1

    def __setitem__(self, key: object, value: object) -> None:
        pass

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0

    def __lt__(self, other: object) -> bool:
        return False


class _Narrow:
    __slots__ = ("x",)

    def __init__(self) -> None:
        self.x = 1


def _function(value: object) -> object:
    return value


# One operation each, run in loops (`spread`) and once per level (`provoke`). What a
# type does not support raises, and is ignored there: only the call through its slot
# matters.


def _get_attribute(target: Any) -> None:
    _ = target.x


def _set_attribute(target: Any) -> None:
    target.x = 1


def _call(target: Any) -> None:
    target(1)


def _contains(target: Any) -> None:
    _ = 1 in target


def _truth(target: Any) -> None:
    _ = not target


def _length(target: Any) -> None:
    _ = len(target)


def _iterate(target: Any) -> None:
    for _item in target:
        break


def _get_item(target: Any) -> None:
    _ = target[0]


def _set_item(target: Any) -> None:
    target[0] = 1


def _compare(target: Any) -> None:
    _ = target == 1


Operation = Callable[[Any], None]


def samples(extra: Iterable[object] = ()) -> dict[Operation, list[object]]:
    """Each operation with the objects `spread` runs it on: more than four slot functions
    each (`extra`: objects of the host, such as JavaScript proxies, added to all; they
    are written to, so they must be the caller's own)."""
    plain = _Plain()
    slots = _Slots()
    extra = list(extra)
    # Objects of many types: together they reach each slot with more than four functions.
    objects: list[object] = [
        plain,
        _Plain,
        types,
        slots,
        _Narrow(),
        super(_Plain, plain),
        weakref.proxy(plain),
        types.SimpleNamespace(x=1),
        1,
        1.5,
        0j,
        None,
        "text",
        b"bytes",
        bytearray(b"b"),
        [1],
        (1,),
        {1: 1},
        {1},
        frozenset((1,)),
        range(3),
        {1: 1}.keys(),
        collections.deque([1]),
        collections.OrderedDict(a=1),
        types.MappingProxyType({0: 1}),
        *extra,
    ]
    callables: list[object] = [
        len,
        abs,
        repr,
        int,
        str,
        list,
        tuple,
        float,
        bool,
        plain.method,
        _function,
        str.upper,
        functools.partial(max, 0),
        slots,
        *extra,
    ]
    settable: list[object] = [
        plain,
        _Plain,
        types.ModuleType("pagecontext-callsites"),
        weakref.proxy(plain),
        slots,
        _Narrow(),
        types.SimpleNamespace(),
        [1],
        {},
        bytearray(b"b"),
        collections.deque([1]),
        collections.OrderedDict(),
        *extra,
    ]
    return {
        _get_attribute: objects,
        _set_attribute: settable,
        _call: callables,
        _contains: objects,
        _truth: objects,
        _length: objects,
        _iterate: objects,
        _get_item: objects,
        _set_item: settable,
        _compare: objects,
    }


def spread(extra: Iterable[object] = ()) -> None:
    """Run every generic operation over more than four slot functions. The operations
    set an attribute and an item on `extra` too: pass objects of the caller's own."""
    for operation, targets in samples(extra).items():
        for target in targets:
            with contextlib.suppress(Exception):
                operation(target)


def _rare() -> tuple[tuple[Operation, object], ...]:
    """Each operation with an object of a type that nothing else gives it."""
    queue = collections.deque([1])

    class Attributes:
        def __setattr__(self, name: str, value: object) -> None:
            pass

    return (
        (_get_attribute, weakref.proxy(_Plain())),
        (_call, functools.partial(abs)),
        (_contains, queue),
        (_truth, 0j),
        (_length, memoryview(b"")),
        (_iterate, queue),
        (_get_item, types.MappingProxyType({0: 1})),
        (_set_attribute, Attributes()),
        (_set_item, bytearray(1)),
        (_compare, queue),
    )


_LEVELS: tuple[tuple[Operation, object], ...] = ()
_DEPTH = 0


def _level(index: int) -> None:
    # Nothing before the descent calls through a type's slot: the comparison, the
    # subscript and the calls below are the interpreter's specialized forms for an int,
    # a tuple and two builtin classes.
    if index < _DEPTH:
        list(map(_level, (index + 1,)))
        operation, target = _LEVELS[index]
        # Not `contextlib.suppress`: its `__enter__` would run before the operation.
        try:  # noqa: SIM105
            operation(target)
        except Exception:
            pass


def provoke() -> None:
    """Enter the interpreter loop once per operation, then perform each operation on the
    way out (innermost first), each in its own level."""
    global _LEVELS, _DEPTH
    if not _DEPTH:
        _LEVELS = _rare()
        _DEPTH = len(_LEVELS)
    list(map(_level, (0,)))
