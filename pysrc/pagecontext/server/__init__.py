"""The demo server: the page and assistant origins, the demo data, and running both.

Starlette on uvicorn (the `server` extra). Nothing in the core imports from here.
"""
