"""The todo board of ``examples/apps.py``, served to the browser host of the MCP Apps tests.

It adds what a page on another origin needs (CORS, as docs/deployment.md sets it up) and a
second view of the same board written on the official App SDK (``ui://todos/board-sdk``,
tool ``show_todos_sdk``): its script is ``tests/apps_host/dist/view-sdk.js`` (bundled by
the test), inlined from a blueprint's static folder. That view declares a CSP: its MCP
server's origin (``MCP_TEST_APPS_ORIGIN``) in ``connectDomains``, and its icon through
``mcp_app_asset_url``, which adds the same origin to ``resourceDomains``.
"""

from __future__ import annotations

import os
from pathlib import Path

from flask import Blueprint
from flask_cors import CORS

from examples import apps as example
from flask_mcp import Context
from flask_mcp import ToolResult

DIST = Path(__file__).resolve().parent.parent / "apps_host" / "dist"
SDK_BOARD = "ui://todos/board-sdk"
mcp = example.mcp

mcp.ui_template(
    SDK_BOARD,
    "todo_board_sdk.html",
    name="todo_board_sdk",
    description="The todo board on the official App SDK.",
    csp={"connectDomains": [os.environ.get("MCP_TEST_APPS_ORIGIN", "http://127.0.0.1:8000")]},
    prefers_border=True,
)


@mcp.tool(ui=SDK_BOARD)
def show_todos_sdk(ctx: Context, list_name: str = "today") -> ToolResult:
    """Show a todo list on the board written on the official App SDK."""
    return example.show_todos(ctx, list_name)


@mcp.tool(visibility=["model"])
def model_only() -> str:
    """A tool for the model alone: hosts refuse it to views."""
    return "only the model may call this"


app = example.create_app()
app.register_blueprint(
    Blueprint("sdk_view", __name__, static_folder=str(DIST), template_folder="templates")
)
CORS(
    app,
    resources={"/mcp": {}},
    origins=[r"http://127\.0\.0\.1:\d+"],
    methods=["GET", "POST", "DELETE"],
    allow_headers=["Content-Type", "Accept", "Authorization", "Mcp-Session-Id",
                   "MCP-Protocol-Version", "Last-Event-ID"],
    expose_headers=["Mcp-Session-Id", "WWW-Authenticate", "Retry-After"],
)  # fmt: skip
