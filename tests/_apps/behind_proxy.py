"""An app behind a proxy that sets ``X-Forwarded-For`` (``ProxyFix``), for the
per-client bounds, which count a client by its address."""

from __future__ import annotations

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from flask_mcp import MCP

mcp = MCP(name="behind-proxy", version="1.0.0")


@mcp.tool
def ping() -> str:
    """Answer pong."""
    return "pong"


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)
app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1)  # type: ignore[method-assign]
