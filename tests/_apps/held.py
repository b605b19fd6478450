"""An app for the tests of what one client can hold: streams it stops reading, waits it leaves."""

from __future__ import annotations

import time

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context

mcp = MCP(name="held", version="1.0.0")


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


@mcp.tool(task="optional")
def slow(seconds: float) -> str:
    """Work ``seconds`` (as a task: the task a ``tasks/result`` waits for)."""
    time.sleep(seconds)
    return "slow"


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)


@app.get("/debug/stats")
def debug_stats() -> dict[str, object]:
    """Live-state counters of this worker: open streams, running requests."""
    return mcp.stats()
