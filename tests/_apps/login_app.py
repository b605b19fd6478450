"""A Flask-Login app whose login-protected views are MCP tools (tests/test_e2e_views.py).

Session login (``POST /login`` sets Flask's session cookie) and bearer login
(``Authorization: Bearer <user>``, Flask-Login's ``request_loader``); ``login_view``
is set, so a view reached without a login redirects to ``/login``; so do a resource, a
template and a prompt behind ``login_required``. The orders live
in the SQLite database at ``LOGIN_APP_DB``. ``mcp`` and ``views`` are module-level
and ``create_app()`` registers them, so the tests may make several apps.
"""

from __future__ import annotations

import os
import sqlite3
import typing as t

from flask import Flask
from flask import abort
from flask import current_app
from flask import jsonify
from flask import request
from flask_login import LoginManager
from flask_login import UserMixin
from flask_login import current_user
from flask_login import login_required
from flask_login import login_user

from flask_mcp import MCP
from flask_mcp.contrib.view_tools import ViewTools

mcp = MCP(name="shop", version="1.0.0")
views = ViewTools(mcp)
views.add_routes(include=["orders", "admin_report"])


@mcp.resource("shop://orders/mine")
@login_required
def my_orders() -> list[str]:
    """The signed-in user's orders, as a resource behind ``login_required``."""
    return _items(current_user.id)


@mcp.resource("shop://orders/{item}")
@login_required
def order(item: str) -> str:
    """One of the signed-in user's orders (a template behind ``login_required``)."""
    return item if item in _items(current_user.id) else abort(404)


@mcp.prompt()
@login_required
def reorder() -> str:
    """Ask to reorder the signed-in user's orders (a prompt behind ``login_required``)."""
    return f"Reorder {', '.join(_items(current_user.id))}."


def _items(user_id: str) -> list[str]:
    with database() as db:
        rows = db.execute("SELECT item FROM orders WHERE owner = ?", (user_id,))
        return [row[0] for row in rows]


class User(UserMixin):
    def __init__(self, user_id: str) -> None:
        self.id = user_id


def database() -> sqlite3.Connection:
    return sqlite3.connect(current_app.config["DATABASE"])


def create_app(path: str | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY="login-app-secret",
        DATABASE=path or os.environ.get("LOGIN_APP_DB", ":memory:"),
    )
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.execute("CREATE TABLE IF NOT EXISTS orders (owner TEXT, item TEXT)")
        if not db.execute("SELECT count(*) FROM orders").fetchone()[0]:
            db.executemany(
                "INSERT INTO orders VALUES (?, ?)",
                [("ada", "engine"), ("ada", "cards"), ("bob", "lamp")],
            )
    manager = LoginManager(app)
    manager.login_view = "login"

    @manager.user_loader
    def load(user_id: str) -> User:
        return User(user_id)

    @manager.request_loader
    def from_bearer(req: t.Any) -> User | None:
        value = req.headers.get("Authorization", "")
        return User(value[7:]) if value.startswith("Bearer ") and value[7:] else None

    @app.route("/login", methods=["GET", "POST"])
    def login() -> t.Any:
        if request.method == "POST":
            login_user(User(request.form["user"]))
            return jsonify({"logged_in": request.form["user"]})
        return "<!doctype html><html><body><h1>Sign in</h1><form method=post></form></body></html>"

    @app.get("/orders")
    @login_required
    def orders() -> t.Any:
        """List the orders of the signed-in user."""
        with database() as db:
            rows = db.execute("SELECT item FROM orders WHERE owner = ?", (current_user.id,))
            return jsonify({"user": current_user.id, "items": [row[0] for row in rows]})

    @app.get("/admin/report")
    @login_required
    def admin_report() -> t.Any:
        """The sales report (admins only)."""
        if current_user.id != "root":
            abort(403)
        with database() as db:
            return jsonify({"orders": db.execute("SELECT count(*) FROM orders").fetchone()[0]})

    @app.get("/internal/reset")
    def internal_reset() -> t.Any:  # not selected: never a tool
        return "reset"

    mcp.init_app(app)
    views.init_app(app)
    return app


app = create_app()
