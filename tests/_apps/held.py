"""An app for the tests of what one client can hold: streams it stops reading, waits it leaves."""

from __future__ import annotations

import time
import typing as t

from flask import Flask
from werkzeug.wsgi import ClosingIterator

from flask_mcp import MCP
from flask_mcp import Context
from tests._apps import add_tool_adder

mcp = MCP(name="held", version="1.0.0")
add_tool_adder(mcp)


@mcp.tool()
def flood(count: int, size: int, ctx: Context) -> str:
    """Report progress ``count`` times, each with a message of ``size`` bytes."""
    message = "x" * size
    for step in range(count):
        ctx.progress(step + 1, count, message)
    return "flooded"


@mcp.tool()
def nap(seconds: float, ctx: Context) -> str:
    """Work ``seconds`` (with a ``Context``: a call that may stream)."""
    time.sleep(seconds)
    return "napped"


@mcp.tool()
def big(size: int) -> str:
    """Return ``size`` bytes (no ``Context``: answered with one JSON response)."""
    return "x" * size


@mcp.tool(task="optional")
def slow(seconds: float) -> str:
    """Work ``seconds`` (as a task: the task a ``tasks/result`` waits for)."""
    time.sleep(seconds)
    return "slow"


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)
#: POSTs whose response the server has written (or given up) and closed.
posts_closed = [0]


def count_closed(wsgi_app: t.Any) -> t.Any:
    """Count in ``posts_closed`` the POSTs whose response the server closed."""

    def middleware(environ: t.Any, start_response: t.Any) -> t.Any:
        body = wsgi_app(environ, start_response)
        if environ["REQUEST_METHOD"] != "POST":
            return body
        return ClosingIterator(body, lambda: posts_closed.__setitem__(0, posts_closed[0] + 1))

    return middleware


app.wsgi_app = count_closed(app.wsgi_app)  # type: ignore[method-assign]


@app.get("/debug/stats")
def debug_stats() -> dict[str, object]:
    """Live-state counters of this worker: open streams, running requests, POSTs closed."""
    return {**mcp.stats(), "posts_closed": posts_closed[0]}
