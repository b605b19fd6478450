"""Tasks: a long-running tool that reports progress and asks for confirmation.

Run it, then call ``deploy`` from a client that supports tasks (2025-11-25
``params.task``, or the 2026-07-28 ``io.modelcontextprotocol/tasks`` extension)::

    gunicorn -k gevent -b 127.0.0.1:8000 examples.tasks:app

The tool runs in a greenlet of the worker; clients poll ``tasks/get``. With
``FLASK_MCP_BACKEND=redis://...`` any worker answers for any task.
"""

from __future__ import annotations

import time

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context

mcp = MCP(name="deployer", version="1.0")


@mcp.tool(task="optional")
def deploy(ctx: Context, service: str, steps: int = 5) -> str:
    """Deploy ``service`` in ``steps`` steps, asking before the last one."""
    for step in range(1, steps):
        ctx.check_cancelled()  # tasks/cancel stops the deployment here
        ctx.progress(step, steps, f"step {step} of {steps}")
        time.sleep(1)
    answer = ctx.elicit(
        f"Switch traffic to the new {service}?",
        {"type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]},
    )
    if answer.get("action") != "accept" or not (answer.get("content") or {}).get("go"):
        return f"{service}: deployed, traffic not switched"
    return f"{service}: deployed and live"


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)
