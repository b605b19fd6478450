"""An app for the stdio end-to-end tests: the back-channel, cancellation and a stray print.

Served as ``flask --app tests._apps.stdio_tools mcp stdio`` (tests/test_e2e_stdio.py).
"""

from __future__ import annotations

import logging
import time

from flask import Flask
from flask import current_app
from flask import g
from flask import request
from flask import url_for

from flask_mcp import MCP
from flask_mcp import Context

mcp = MCP(name="stdio-tools", version="1.0.0")
CANCELLED = {"count": 0}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@mcp.tool()
def sample(prompt: str, ctx: Context) -> str:
    """Ask the client's model (handshake: a request on stdout; 2026-07-28: MRTR)."""
    result = ctx.create_message(
        [{"role": "user", "content": {"type": "text", "text": prompt}}], max_tokens=50
    )
    return f"model said: {result['content']['text']}"


@mcp.tool()
def ask(ctx: Context) -> str:
    """Ask the user for their name, then the model, in one tool."""
    answer = ctx.elicit("Your name?", NAME)
    name = answer.get("content", {}).get("name", "")
    said = ctx.create_message(
        [{"role": "user", "content": {"type": "text", "text": f"hello {name}"}}], max_tokens=50
    )
    return f"{answer['action']}:{name}:{said['content']['text']}"


@mcp.tool()
def roots(ctx: Context) -> str:
    """List the client's roots."""
    return ",".join(root["uri"] for root in ctx.list_roots())


@mcp.tool()
def hold(ctx: Context) -> str:
    """Run until cancelled (or 30 seconds), counting the cancellations.

    On threads it sees ``ctx.cancelled``; on gevent the cancel interrupts its sleep.
    """
    deadline = time.monotonic() + 30
    try:
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        if ctx.cancelled:
            CANCELLED["count"] += 1
    return "held"


@mcp.tool()
def cancelled_count() -> int:
    """How many hold calls were cancelled."""
    return CANCELLED["count"]


@mcp.tool()
def noisy(ctx: Context) -> str:
    """Print to stdout and log: both must end up on stderr, never among the messages."""
    print("a stray print from a handler")  # noqa: T201
    logging.getLogger("noisy").warning("a log line from a handler")
    ctx.info("a log message for the client")
    return "quiet on stdout"


@mcp.tool()
def app_facts() -> dict[str, str]:
    """What the handler sees of Flask: the app, its config, ``g``, a request context."""
    g.seen = "yes"
    return {
        "app": current_app.name,
        "greeting": current_app.config["GREETING"],
        "g": g.seen,
        "path": request.path,
        "url": url_for("hello"),
    }


@mcp.tool()
def bulky(size: int) -> str:
    """Answer ``size`` bytes of text: a few fill a client's pipe that nobody reads."""
    return "x" * size


@mcp.tool()
def change_tools() -> str:
    """Tell the client that the tool list changed."""
    mcp.notify_list_changed("tools")
    return "notified"


def create_app() -> Flask:
    """An app factory, as ``flask --app tests._apps.stdio_tools:create_app()`` finds it."""
    app = Flask(__name__)
    app.config.update(SECRET_KEY="stdio-e2e-secret", GREETING="hello")
    app.config.from_prefixed_env()
    mcp.init_app(app)

    @app.get("/hello")
    def hello() -> str:
        return "hello"

    return app
