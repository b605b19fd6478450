"""The realistic card's tools on Flask-MCP: plain sync code, as a Flask user writes it.

The tools are :mod:`.card_sync`'s (the floor, :mod:`.card_floor`, runs the same
functions). Redis through ``redis.Redis`` and HTTP through one ``requests.Session``: under
``gunicorn -k gevent`` the worker's monkey-patching makes every socket wait
cooperative, so 50 calls in flight wait on Redis and the API together, with no
``async`` in the tools. Run::

    gunicorn -k gevent -w 1 benchmarks.apps.card_flask_mcp:app

Configured through ``FLASK_MCP_*`` variables (``app.config.from_prefixed_env()``)
and the ``BENCH_CARD_*`` variables of :mod:`.card_data`.
"""

from __future__ import annotations

import json
import typing as t

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context

from . import card_data as card
from . import card_sync

SERVER_TYPE = "flask-mcp"

mcp = MCP(name="card-flask-mcp", version="1.0.0")

for tool in card_sync.sync_tools(SERVER_TYPE):
    mcp.tool()(tool)


# --- large results -------------------------------------------------------------------------

PAYLOADS = {name: card.large_payload(size) for name, size in card.SIZES.items()}
TEXTS = {name: json.dumps(payload, separators=(",", ":")) for name, payload in PAYLOADS.items()}


@mcp.tool()
def large_structured(size: str) -> dict[str, t.Any]:
    """Return a structured result of ``size`` (1kb, 100kb, 4mb) of catalog JSON."""
    return PAYLOADS[size]


@mcp.tool(structured_output=False)
def large_text(size: str) -> str:
    """Return ``size`` (1kb, 100kb, 4mb) of catalog JSON as one text block."""
    return TEXTS[size]


@mcp.tool()
def large_progress(size: str, ctx: Context) -> dict[str, t.Any]:
    """Report one progress step, then return the structured result of ``size``."""
    ctx.progress(1, 2)
    return PAYLOADS[size]


@mcp.tool(task="optional")
def large_task(size: str) -> dict[str, t.Any]:
    """As ``large_structured``, and run as a task when the client asks (its result is stored)."""
    return PAYLOADS[size]


app = Flask(__name__)
app.config.from_prefixed_env()  # FLASK_MCP_* -> MCP_*
mcp.init_app(app)
