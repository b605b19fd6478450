"""An app whose tool list changes at run time, for tests of notifications on GET streams."""

from __future__ import annotations

from flask import Flask

from flask_mcp import MCP

mcp = MCP(name="dynamic", version="1.0.0")


@mcp.tool()
def add_tool(name: str) -> str:
    """Register a new tool called ``name``: every session is told the tool list changed."""

    def echo(text: str) -> str:
        return text

    mcp.add_tool(echo, name=name, description=f"Echo, added at run time as {name}.")
    return f"added {name}"


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)


@app.get("/debug/stats")
def debug_stats() -> dict[str, object]:
    """Live-state counters of this worker: open streams and sessions."""
    return mcp.stats()
