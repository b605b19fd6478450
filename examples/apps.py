"""An MCP Apps server: a todo board that renders in the host as an interactive view.

Run it with::

    gunicorn -k gevent -b 127.0.0.1:8000 examples.apps:app

and add ``http://127.0.0.1:8000/mcp`` to a host that renders MCP Apps (Claude, ChatGPT,
VS Code, Goose...; a host in a browser page needs CORS, see docs/deployment.md).

- ``show_todos`` (the model calls it) answers with text for any client, and with
  ``structuredContent`` that the view ``ui://todos/board`` renders;
- ``add_todo`` is for the view only (``visibility: ["app"]``): the board's form calls it
  through the host and re-renders from its result;
- the view is the Jinja template ``templates/todo_board.html``; its CSS, script and icon
  are inlined from ``static/`` (a view runs in a sandboxed iframe on the host's origin,
  where ``/static/...`` would not resolve), and ``mcp-app.js`` speaks the view's side of
  the protocol.

The view is declared with ``mcp.ui_template`` and the tools name it with ``ui=``; the
Apps extension writes ``_meta.ui`` and checks at ``init_app`` that the view exists. The
todo lists live in this process: keep one worker.
"""

from __future__ import annotations

import threading

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import ToolError
from flask_mcp import ToolResult

mcp = MCP(
    name="todos",
    version="1.0.0",
    title="Todo board",
    instructions="Show a todo list with show_todos; the user adds items on the board it shows.",
)

BOARD = "ui://todos/board"
MAX_LISTS = 20
MAX_ITEMS = 50
MAX_TEXT = 200

_lists: dict[str, list[str]] = {"today": ["Buy milk", "Water the plants"]}
_lock = threading.Lock()


# The board: templates/todo_board.html, its CSS, script and icon inlined from static/. No
# origin outside the page, so no csp=; a border around it.
mcp.ui_template(
    BOARD,
    "todo_board.html",
    name="todo_board",
    title="Todo board",
    description="The todo list as a board with a form to add items.",
    prefers_border=True,
)


def _board(name: str, with_data: bool = True) -> ToolResult:
    items = list(_lists.get(name, ()))
    listed = "; ".join(items) if items else "nothing yet"
    text = f"Todo list {name!r} ({len(items)} items): {listed}."
    # the text is for every client (the spec's MUST); the data is for the board
    data = {"list": name, "items": items} if with_data else None
    return ToolResult(content=text, structured=data)


@mcp.tool(ui=BOARD)
def show_todos(ctx: Context, list_name: str = "today") -> ToolResult:
    """Show a todo list on an interactive board (as text for hosts without MCP Apps)."""
    with _lock:
        return _board(list_name, with_data=ctx.client_supports_ui())


@mcp.tool(ui=BOARD, visibility=["app"])
def add_todo(list_name: str, text: str) -> ToolResult:
    """Add an item to a todo list (called by the board's form, not by the model)."""
    text = text.strip()
    if not text or len(text) > MAX_TEXT:
        raise ToolError(f"An item is 1 to {MAX_TEXT} characters long.")
    with _lock:
        if list_name not in _lists and len(_lists) >= MAX_LISTS:
            raise ToolError(f"There are already {MAX_LISTS} lists; add to one of them.")
        items = _lists.setdefault(list_name, [])
        if len(items) >= MAX_ITEMS:
            raise ToolError(f"The list {list_name!r} is full ({MAX_ITEMS} items).")
        items.append(text)
        return _board(list_name)


def create_app() -> Flask:
    """Return a Flask app serving the todo board at /mcp."""
    flask_app = Flask(__name__)
    mcp.init_app(flask_app)  # also makes mcp_app_script() & co. template globals
    return flask_app


app = create_app()
