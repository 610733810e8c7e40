"""Each core module says what it offers: its `__all__` names what exists in it, and every
public class and function it defines."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import pagecontext

# The core: what runs the same under CPython and Pyodide (and, for some, MicroPython);
# the browser bindings and the server are applications of it.
CORE = sorted(
    info.name
    for info in pkgutil.walk_packages(pagecontext.__path__, "pagecontext.")
    if not info.name.startswith(("pagecontext.browser", "pagecontext.server"))
    and not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", CORE)
def test_a_core_modules_all_names_what_it_defines(name: str) -> None:
    """`__all__` is there, names only what the module has, once each, and leaves out no
    public class or function defined in it."""
    module = importlib.import_module(name)
    offered = getattr(module, "__all__", None)
    assert isinstance(offered, list), f"{name} has no __all__"
    assert len(set(offered)) == len(offered), f"{name}.__all__ names one twice"
    assert [item for item in offered if not hasattr(module, item)] == []
    defined = {
        item
        for item, value in vars(module).items()
        if not item.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == name
    }
    assert sorted(defined - set(offered)) == []
