"""An app with every route Flask-MCP can add: the endpoint, the OAuth metadata and the
built-in authorization server, the Server Card and AI Catalog, the probes, the explorer
and Prometheus metrics (``tests/test_e2e_routes.py``).

``OAUTH_APP_BASE`` is the URL the app is reached at (``http://127.0.0.1:<port>``);
``FLASK_MCP_*`` variables change the rest. ``proxied`` is the same app behind
``ProxyFix`` (one proxy: ``X-Forwarded-For``, ``-Proto``, ``-Host``, ``-Prefix``).
"""

from __future__ import annotations

import os

from flask import Flask
from flask_login import LoginManager
from werkzeug.middleware.proxy_fix import ProxyFix

from flask_mcp import MCP
from flask_mcp.contrib.oauth_server import OAuthServer
from flask_mcp.contrib.prometheus import PrometheusMetrics

mcp = MCP(name="com.example/every-route", version="1.0.0", description="Every route.")
oauth = OAuthServer(mcp)
metrics = PrometheusMetrics(mcp)


@mcp.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


def create_app() -> Flask:
    app = Flask(__name__)
    base = os.environ.get("OAUTH_APP_BASE", "http://127.0.0.1:8300")
    app.config.update(
        SECRET_KEY="every-route-secret",
        MCP_AUTH_RESOURCE=f"{base}/mcp",
        MCP_SERVER_CARD=True,
        MCP_EXPLORER=True,
        MCP_EXPLORER_ACCESS=lambda request: True,
        MCP_HEALTH_LIVENESS_PATH="/livez",
        MCP_HEALTH_READINESS_PATH="/readyz",
        MCP_OAUTH_REGISTRATION_RATE_LIMIT=None,
        MCP_OAUTH_TOKEN_RATE_LIMIT=None,
    )
    app.config.from_prefixed_env()
    LoginManager(app).user_loader(lambda user_id: None)
    oauth.init_app(app)
    mcp.init_app(app)
    metrics.init_app(app)
    return app


app = create_app()
proxied = create_app()
proxied.wsgi_app = ProxyFix(  # type: ignore[method-assign]
    proxied.wsgi_app, x_for=1, x_proto=1, x_host=1, x_prefix=1
)
