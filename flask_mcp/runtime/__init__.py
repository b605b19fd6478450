"""Process-local machinery: the per-app state, the runs of requests, the supervisor.

- :mod:`.state`: :class:`~flask_mcp.runtime.state.AppState`, made once per app and
  carried by every call;
- :mod:`.runs`: runs of requests, their outboxes, the in-flight table, stream slots;
- :mod:`.supervisor`: request timeouts and session expiry, one loop per app and process;
- :mod:`.concurrency`: greenlets on gevent, threads elsewhere, and the client's socket;
- :mod:`.notify`: notifications sent outside a request.

Nothing here knows MCP methods or reads a request.
"""

from __future__ import annotations

__all__: list[str] = []
