"""MCP semantics: what a server offers and how each method answers.

- :mod:`.declarations` and :mod:`.registry`: the decorators and the records of tools,
  resources, templates, prompts and completions; :mod:`.handlers` inspects handlers;
- :mod:`.call`: one request (:class:`~flask_mcp.server.call.Call`) and the handler running now;
- :mod:`.dispatcher` and :mod:`.methods`: the method table, built from the registry and the
  server info alone;
- :mod:`.context`: the ``Context`` a handler receives; :mod:`.mrtr` and :mod:`.sealing`:
  the 2026-07-28 multi-round back-channel; :mod:`.uri_template` and
  :mod:`.resource_security`: resource templates.

This layer reads no request and never looks up the app (no ``flask.request``, no
``current_app``): a call carries its app's state.
"""

from __future__ import annotations

__all__: list[str] = []
