"""A Flask API guarded by an ``X-API-Key`` header whose views are MCP tools
(tests/test_e2e_views.py).

With ``API_KEY_FORWARD=1`` the :class:`ViewTools` names the header in
``forward_headers``; without it only the caller's identity headers reach the view.
"""

from __future__ import annotations

import functools
import os
import typing as t

from flask import Flask
from flask import abort
from flask import jsonify
from flask import request

from flask_mcp import MCP
from flask_mcp.contrib.view_tools import ViewTools

API_KEY = "key-of-the-e2e-test"

mcp = MCP(name="keyed", version="1.0.0")
if os.environ.get("API_KEY_FORWARD") == "1":
    views = ViewTools(mcp, forward_headers=("X-API-Key",))
else:
    views = ViewTools(mcp)
views.add_view("stock")


def api_key_required(view: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    @functools.wraps(view)
    def guarded(*args: t.Any, **kwargs: t.Any) -> t.Any:
        if request.headers.get("X-API-Key") != API_KEY:
            abort(401)
        return view(*args, **kwargs)

    return guarded


def create_app() -> Flask:
    app = Flask(__name__)

    @app.get("/stock")
    @api_key_required
    def stock() -> t.Any:
        """How many items are in stock."""
        return jsonify(items=7, mcp_session=request.headers.get("Mcp-Session-Id"))

    mcp.init_app(app)
    views.init_app(app)
    return app


app = create_app()
