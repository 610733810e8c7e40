"""The built-in deterministic agent: explains a sales row from live, authorized data.

`explain` decides what to say and which tools to call (pure); `run` turns that into
AG-UI events for one run (pure); the HTTP edge (`pagecontext.server.agent_endpoint`)
reads the run input, re-reads the row through the resource API and streams the events.
"""

__all__: list[str] = []
