"""An app for the tests of what a task asks its client: URL elicitations, answers, keys."""

from __future__ import annotations

import collections
import threading

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import URLElicitationRequired

mcp = MCP(name="task-inputs", version="1.0.0")
#: How many times ``connect`` ran for each account (one gunicorn worker).
RUNS: collections.Counter[str] = collections.Counter()
_lock = threading.Lock()


@mcp.tool(task="optional")
def connect(account: str, ctx: Context) -> str:
    """Need the user to connect ``account`` on a page first: the first run of each asks."""
    with _lock:
        RUNS[account] += 1
        runs = RUNS[account]
    if runs == 1:
        raise URLElicitationRequired(
            [
                {
                    "mode": "url",
                    "elicitationId": f"connect-{account}",
                    "url": f"https://example.com/connect?account={account}",
                    "message": f"Connect {account}.",
                }
            ]
        )
    return f"{account} connected on run {runs}"


app = Flask(__name__)
app.config.from_prefixed_env()
app.config.update(SECRET_KEY="task-inputs")
mcp.init_app(app)
