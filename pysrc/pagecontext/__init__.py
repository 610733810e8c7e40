"""pagecontext: hand an embedded AI assistant exactly what the user is looking at.

The core modules at this level are sans-IO and run on CPython and on Pyodide; the
browser bindings live in `pagecontext.browser`, the demo server in `pagecontext.server`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
