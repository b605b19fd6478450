"""An app with authorization on, for the explorer's bearer token field.

Its authorizer accepts one bearer token, :data:`TOKEN`; the explorer is on under debug.
"""

from __future__ import annotations

import typing as t

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context

#: The one token the authorizer accepts.
TOKEN = "explorer-test-token"

mcp = MCP(name="explorer-auth", version="1.0.0")


@mcp.authorizer
def accept_one_token(token: str, request: t.Any) -> dict[str, t.Any] | str:
    """Accept :data:`TOKEN` only (a stand-in for introspection)."""
    if token != TOKEN:
        return "invalid_token"
    return {"sub": "ada", "scope": "notes:read"}


@mcp.tool()
def whoami(ctx: Context) -> str:
    """Who the token says the caller is."""
    return f"you are {ctx.auth.principal}"


def create_app() -> Flask:
    flask_app = Flask(__name__)
    flask_app.debug = True
    flask_app.config.update(
        MCP_AUTH_RESOURCE="http://127.0.0.1/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["http://127.0.0.1/auth"],
    )
    mcp.init_app(flask_app)
    return flask_app


app = create_app()
