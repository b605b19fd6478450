"""An app behind a proxy (``ProxyFix``, as :mod:`.behind_proxy`) in a worker that may open
only 200 files, so that what one client's streams take of a gevent worker's open files (its
connections) is cheap to exhaust."""

from __future__ import annotations

import resource

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from flask_mcp import MCP

FILES = 200
resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

mcp = MCP(name="few-files", version="1.0.0")


@mcp.tool
def ping() -> str:
    """Answer pong."""
    return "pong"


app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)
app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1)  # type: ignore[method-assign]
