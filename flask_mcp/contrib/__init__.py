"""Optional integrations, each imported only by the apps that use it.

- :mod:`flask_mcp.contrib.ratelimit`: rate limits per principal, session and
  tool (extra ``ratelimit``, the ``limits`` library);
- :mod:`flask_mcp.contrib.opentelemetry`: one span per MCP request and the MCP
  metrics of the OpenTelemetry semantic conventions (extra ``otel``);
- :mod:`flask_mcp.contrib.prometheus`: request, error, session, stream and task
  metrics at a path of the app (extra ``prometheus``);
- :mod:`flask_mcp.contrib.celery`: task handlers on Celery workers (extra ``celery``);
- :mod:`flask_mcp.contrib.views`: tools from existing Flask views (extra ``views``).

Each is built on the public hooks: :meth:`flask_mcp.MCP.middleware` and the
blinker signals of :mod:`flask_mcp.signals`.
"""

from __future__ import annotations

__all__: list[str] = []
