"""Browser bindings: the MicroPython main-thread edge and the Pyodide worker side."""
