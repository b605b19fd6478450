"""An app whose tools change at run time through any of its workers (Redis backend).

``add_shouter(name)`` registers :func:`shout` under ``name`` in the worker that
serves the call; the other workers replay it (flask_mcp.server.shared_registry).
Every tool answers with the pid of the worker that ran it.
"""

from __future__ import annotations

import os

from flask import Flask

from flask_mcp import MCP

mcp = MCP(name="shared-tools", version="1.0.0")


def shout(text: str) -> dict[str, object]:
    """Shout ``text`` back, with the worker's pid."""
    return {"text": text.upper(), "pid": os.getpid()}


@mcp.tool()
def add_shouter(name: str) -> dict[str, object]:
    """Register shout() as a new tool named ``name``."""
    mcp.add_tool(shout, name=name, tags={"shouting"})
    return {"pid": os.getpid()}


@mcp.tool()
def remove_shouter(name: str) -> dict[str, object]:
    """Remove a tool."""
    return {"removed": mcp.remove_tool(name), "pid": os.getpid()}


@mcp.tool()
def set_shouting(enabled: bool) -> dict[str, object]:
    """Enable or disable every tool tagged "shouting"."""
    if enabled:
        mcp.enable(tags=["shouting"])
    else:
        mcp.disable(tags=["shouting"])
    return {"pid": os.getpid()}


@mcp.tool()
def whoami() -> dict[str, object]:
    """The pid of the worker."""
    return {"pid": os.getpid()}


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)
