"""An app whose MCP endpoint is per tenant (``MCP_PATH = "/t/<tenant>/mcp"``).

Its ``where`` tool tells which endpoint a call reached: ``ctx.path_args``,
``request.view_args`` and ``request.path``. Served as ``flask --app tests._apps.tenants
mcp --path /t/acme/mcp stdio`` (tests/test_e2e_stdio.py) and called through ``flask mcp
--path ...`` (tests/test_cli.py).
"""

from __future__ import annotations

import typing as t

from flask import Flask
from flask import request

from flask_mcp import MCP
from flask_mcp import Context


def create_app() -> Flask:
    """The app factory ``flask --app tests._apps.tenants`` finds."""
    mcp = MCP(name="tenants", version="1")

    @mcp.tool()
    def where(ctx: Context) -> dict[str, t.Any]:
        """Which endpoint the call reached."""
        return {"path_args": ctx.path_args, "view_args": request.view_args, "path": request.path}

    @mcp.resource("tenant://name")
    def tenant_name() -> str:
        """The tenant of the endpoint read."""
        return str((request.view_args or {}).get("tenant"))

    @mcp.prompt()
    def greet() -> str:
        """Greets the tenant of the endpoint."""
        return f"Hello {(request.view_args or {}).get('tenant')}"

    app = Flask(__name__)
    app.config.update(SECRET_KEY="tenants", MCP_PATH="/t/<tenant>/mcp")
    mcp.init_app(app)
    return app
