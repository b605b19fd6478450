"""An app whose tool list changes at run time, for tests of notifications on GET streams."""

from __future__ import annotations

from flask import Flask

from flask_mcp import MCP
from tests._apps import add_tool_adder

mcp = MCP(name="dynamic", version="1.0.0")


add_tool_adder(mcp)


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)


@app.get("/debug/stats")
def debug_stats() -> dict[str, object]:
    """Live-state counters of this worker: open streams and sessions."""
    return mcp.stats()
