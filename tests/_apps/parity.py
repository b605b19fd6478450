"""An app for comparing what a client sees of one tool called plainly and as a task,
over stdio and HTTP (tests/test_e2e_parity.py).

Served as ``flask --app tests._apps.parity mcp stdio`` and ``tests._apps.parity:app``.
"""

from __future__ import annotations

import time
import typing as t

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import ToolError

mcp = MCP(name="parity", version="1.0.0")
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


@mcp.tool(task="optional")
def logs(ctx: Context) -> str:
    """Log once at every level, then report progress twice."""
    for level in LEVELS:
        ctx.log(level, f"at {level}", logger="parity")
    ctx.progress(1, 2, "half")
    ctx.progress(2, 2, "all")
    return "logged"


@mcp.tool(task="optional")
def same(n: int, text: str) -> dict[str, t.Any]:
    """Return the arguments as they came: integers of any size, any text."""
    return {"n": n, "text": text}


@mcp.tool(task="optional")
def vetoed(ctx: Context) -> str:
    """Run until stopped (at most 30 s); the middleware refuses every call of it after."""
    for _ in range(3000):
        if ctx.cancelled:
            return "stopped"
        time.sleep(0.01)
    return "ran"


@mcp.tool(task="required")
def vetoed_before() -> str:
    """Run as a task only; the middleware refuses every call of it before it runs."""
    return "ran"


@mcp.middleware
def veto(call: t.Any, call_next: t.Any) -> t.Any:
    """Refuse a call of ``vetoed_before`` with a ``ToolError`` before ``call_next``, and
    one of ``vetoed`` once ``call_next`` returned."""
    if call.name == "vetoed_before":
        raise ToolError("vetoed before the call")
    result = call_next(call)
    if call.name == "vetoed":
        raise ToolError("vetoed after the call")
    return result


def create_app() -> Flask:
    """The app, as ``flask --app tests._apps.parity`` finds it."""
    app = Flask(__name__)
    mcp.init_app(app)
    return app


app = create_app()
