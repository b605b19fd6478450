"""Tasks on Celery workers: they survive the web worker that created them.

Run Redis, then the web server and a Celery worker on this module::

    export FLASK_MCP_BACKEND=redis://127.0.0.1:6379/0 CELERY_BROKER_URL=redis://127.0.0.1:6379/1
    gunicorn -k gevent -b 127.0.0.1:8000 examples.tasks_celery:app
    celery -A examples.tasks_celery:celery worker -P threads --loglevel INFO

A client that declares the ``io.modelcontextprotocol/tasks`` extension (2026-07-28), or
sends ``params.task`` (2025-11-25), gets a task for ``slow_compute`` and ``confirm_delete``;
a Celery worker runs them in this app's context.
"""

from __future__ import annotations

import os
import time

from celery import Celery
from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.contrib.celery import CeleryExecutor

celery = Celery(__name__, broker=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/1"))
mcp = MCP(name="celery-tasks", version="1.0", task_executor=CeleryExecutor(celery))


@mcp.tool(task="optional")
def slow_compute(ctx: Context, seconds: float = 1.0, label: str = "") -> str:
    """Sleep ``seconds`` seconds on a Celery worker, reporting progress."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ctx.check_cancelled()
        ctx.progress(seconds - (end - time.monotonic()), seconds, "computing")
        time.sleep(0.1)
    return f"Computed {label or 'result'} after {seconds:g} s in process {os.getpid()}"


@mcp.tool(task="optional")
def confirm_delete(ctx: Context, filename: str = "file.txt") -> str:
    """Ask the user to confirm (the task waits in input_required on the Celery worker)."""
    answer = ctx.elicit(
        f"Delete {filename}?",
        {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
    )
    confirmed = answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm")
    return f"{filename} {'deleted' if confirmed else 'kept'}"


def create_app() -> Flask:
    """Return the Flask app; ``FLASK_MCP_BACKEND`` must name a Redis shared with the workers."""
    app = Flask(__name__)
    app.config["MCP_BACKEND"] = "redis://127.0.0.1:6379/0"
    app.config.from_prefixed_env()
    mcp.init_app(app)
    return app


app = create_app()
