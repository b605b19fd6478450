"""The official ``mcp`` SDK server with the same ``add`` tool, served by uvicorn.

``BENCH_SDK_MODE`` picks the transport mode, as a user of the SDK would:

- ``default``: ``streamable_http_app()`` (sessions, an SSE stream per POST);
- ``json``: ``streamable_http_app(json_response=True)`` (sessions, JSON bodies);
- ``stateless-json``: ``stateless_http=True, json_response=True``.

Run: ``BENCH_SDK_MODE=json uvicorn benchmarks.apps.sdk_app:app``.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

MODES = {
    "default": {},
    "json": {"json_response": True},
    "stateless-json": {"stateless_http": True, "json_response": True},
}

MODE = os.environ.get("BENCH_SDK_MODE", "default")
if MODE not in MODES:
    raise SystemExit(f"BENCH_SDK_MODE must be one of {', '.join(MODES)}, not {MODE!r}")

server = MCPServer("sdk-bench", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


app = server.streamable_http_app(**MODES[MODE])  # type: ignore[arg-type]
