"""The Flask-MCP benchmark app: ``add``, a progress tool and a 1 MB tool.

Configured only through ``FLASK_MCP_*`` environment variables, read by
``app.config.from_prefixed_env()`` before ``mcp.init_app(app)``::

    FLASK_MCP_SSE_HEARTBEAT=2 gunicorn -k gevent -w 1 benchmarks.apps.flask_mcp_app:app

The module logs which ``flask_mcp`` it imported, so a run against a patched
copy (``PYTHONPATH=/tmp/proto``) can be told apart from the repository's.
"""

from __future__ import annotations

import logging
import os

from flask import Flask

import flask_mcp
from flask_mcp import MCP
from flask_mcp import Context

#: Size in bytes of the ``blob`` tool's text result.
BLOB_SIZE = int(os.environ.get("BENCH_BLOB_SIZE", str(1_000_000)))
_BLOB = "x" * BLOB_SIZE

mcp = MCP(name="flask-mcp-bench", version="1.0.0")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def progress(steps: int, ctx: Context) -> str:
    """Send ``steps`` progress notifications, then answer.

    :param steps: how many ``notifications/progress`` to send.
    """
    for step in range(steps):
        ctx.progress(step + 1, steps)
    return f"done {steps}"


@mcp.tool(structured_output=False)
def blob() -> str:
    """Return a text result of ``BENCH_BLOB_SIZE`` bytes (1 MB by default)."""
    return _BLOB


app = Flask(__name__)
app.config.from_prefixed_env()  # FLASK_MCP_* -> MCP_*
if os.environ.get("BENCH_OAUTH_SERVER"):
    # python -m benchmarks oauth: the built-in authorization server issues the tokens; the
    # one user is always signed in (the benchmark consents over plain HTTP, no login page)
    from flask_mcp.contrib.oauth_server import OAuthServer

    app.config.setdefault("SECRET_KEY", "benchmark")
    OAuthServer(mcp, user_loader=lambda: "bench").init_app(app)
mcp.init_app(app)

logging.getLogger("benchmarks").warning("flask_mcp imported from %s", flask_mcp.__file__)
