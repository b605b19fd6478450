"""Scoped task tools on Celery workers, with bearer-token authorization (issue 32).

The web server and a Celery worker (``-P threads``) both import this module; the task
runs on the worker under the caller's authorization (``current_auth()``, ``ctx.auth``,
``require_scopes()``).
"""

from __future__ import annotations

import os

from celery import Celery
from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import current_auth
from flask_mcp import require_scopes
from flask_mcp.contrib.celery import CeleryExecutor

ISSUER = "https://issuer.example"
RESOURCE = "http://127.0.0.1/mcp"
TOKENS = {
    "alice-run": {"iss": ISSUER, "sub": "alice", "scope": "jobs:run"},
    "alice-admin": {"iss": ISSUER, "sub": "alice", "scope": "jobs:run jobs:admin"},
}

celery = Celery(__name__, broker=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/1"))
mcp = MCP(
    name="celery-auth",
    version="1.0",
    task_executor=CeleryExecutor(celery),
    authorizer=lambda token, request: TOKENS.get(token),
)


@mcp.tool(task="optional", scopes=["jobs:run"])
def report(ctx: Context, purge: bool = False) -> str:
    """Say who runs the task and where; ``purge`` needs jobs:admin (a step-up in the task)."""
    if purge:
        require_scopes("jobs:admin")
    auth = current_auth()
    assert auth is not None and ctx.auth is not None
    return f"{auth.principal} {' '.join(sorted(ctx.auth.scopes))} in process {os.getpid()}"


def create_app() -> Flask:
    app = Flask(__name__)
    app.config.update(
        MCP_BACKEND="redis://127.0.0.1:6379/0",
        MCP_AUTH_RESOURCE=RESOURCE,
        MCP_AUTH_AUTHORIZATION_SERVERS=[ISSUER],
    )
    app.config.from_prefixed_env()
    mcp.init_app(app)
    return app


app = create_app()
