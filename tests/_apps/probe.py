"""An MCP app that reports what Flask-MCP learns from the WSGI server it runs on."""

from __future__ import annotations

from flask import Flask
from flask import request

from flask_mcp import MCP
from flask_mcp.runtime import concurrency as _concurrency
from flask_mcp.transport import listen

mcp = MCP(name="probe", version="1.0.0")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)


@app.get("/probe")
def probe() -> dict[str, object]:
    """The server as Flask-MCP sees it: stream capacity, threads, the client's connection."""
    environ = request.environ
    connection = _concurrency.client_socket(environ)
    return {
        "capacity": _concurrency.stream_capacity(environ),
        "threads": _concurrency.server_threads(environ),
        "gevent": _concurrency.gevent_active(),
        "connection": type(connection).__name__,
        "gone": listen.client_gone(connection),
    }
