"""An MCP server whose JWT authorizer waits long for its JWKS, one request at most.

``JWKS_URL`` names the JWKS, ``ISSUER`` the issuer and ``RESOURCE`` the audience; the
fetch may take a minute (``timeout=60``) and one request waits for a fetch in flight
(``max_waiting=1``), so a test can hold the fetch and see what the others get.
"""

from __future__ import annotations

import os

from flask import Flask

from flask_mcp import MCP
from flask_mcp.auth.jwt_authorizer import JWTAuthorizer


def create_app() -> Flask:
    mcp = MCP(name="jwks-stall", version="1.0.0")
    mcp.authorizer(
        JWTAuthorizer(
            os.environ["JWKS_URL"],
            issuer=os.environ["ISSUER"],
            audience=os.environ["RESOURCE"],
            timeout=60,
            max_waiting=1,
            allow_insecure_http=True,
        )
    )
    app = Flask(__name__)
    app.config.update(
        MCP_AUTH_RESOURCE=os.environ["RESOURCE"],
        MCP_AUTH_AUTHORIZATION_SERVERS=[os.environ["ISSUER"]],
    )
    mcp.init_app(app)
    return app
