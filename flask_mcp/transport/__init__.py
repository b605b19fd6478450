"""Streamable HTTP: the only code that reads ``flask.request`` or builds a ``Response``.

- :mod:`.views`: the endpoint (POST, GET, DELETE) and the checks every request passes;
  :mod:`.handshake`: the handshake era's ladder (sessions, ``initialize``, GET streams);
  :mod:`.stateless`: the 2026-07-28 ladder (``_meta``, ``Mcp-*`` headers, version);
- :mod:`.runner`: the one runner both ladders hand their call to;
- :mod:`.sse`: SSE framing and the one stream loop; :mod:`.listen`: ``subscriptions/listen``;
- :mod:`.security`, :mod:`.responses`, :mod:`.auth` (the bearer token of a request,
  ``current_auth()``, the metadata routes) and :mod:`.environment` (the request context a
  spawned handler runs in).
"""

from __future__ import annotations

__all__: list[str] = []
