"""A Flask-Login app whose MCP endpoint is protected by the built-in authorization server.

Users ``ada`` and ``bob`` (password ``pw-<name>``) log in at ``/login``; ``OAUTH_APP_BASE``
is the URL the app is reached at (``http://127.0.0.1:<port>``), ``FLASK_MCP_*`` variables
configure the rest (``FLASK_MCP_BACKEND`` for Redis). Tools: ``whoami`` (no scope),
``list_notes`` (``notes:read``), ``add_note`` (``notes:write``); notes live per user in a
module dict, which is enough to tell the users apart.
"""

from __future__ import annotations

import os
import typing as t

from flask import Flask
from flask import redirect
from flask import request
from flask_login import LoginManager
from flask_login import UserMixin
from flask_login import current_user
from flask_login import login_user

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.contrib.oauth_server import OAuthServer

mcp = MCP(name="oauth-notes", version="1.0.0")
oauth = OAuthServer(
    mcp, scope_descriptions={"notes:read": "read your notes", "notes:write": "change your notes"}
)
USERS = {"ada": "pw-ada", "bob": "pw-bob"}
_notes: dict[str, list[str]] = {}


class User(UserMixin):
    def __init__(self, user_id: str) -> None:
        self.id = user_id


@mcp.tool()
def whoami(ctx: Context) -> dict[str, t.Any]:
    """Who the token belongs to, seen by ctx.auth and by Flask-Login."""
    return {
        "sub": ctx.auth.claims["sub"],
        "current_user": current_user.get_id(),
        "scopes": sorted(ctx.auth.scopes),
    }


@mcp.tool(scopes=["notes:read"])
def list_notes() -> list[str]:
    """The signed-in user's notes."""
    return list(_notes.get(current_user.get_id(), []))


@mcp.tool(scopes=["notes:write"])
def add_note(text: str) -> str:
    """Add a note for the signed-in user."""
    _notes.setdefault(current_user.get_id(), []).append(text)
    return f"saved for {current_user.get_id()}"


def create_app() -> Flask:
    app = Flask(__name__)
    base = os.environ.get("OAUTH_APP_BASE", "http://127.0.0.1:8300")
    app.config.update(SECRET_KEY="oauth-notes-secret", MCP_AUTH_RESOURCE=f"{base}/mcp")
    app.config.from_prefixed_env()
    manager = LoginManager(app)
    manager.login_view = "login"

    @manager.user_loader
    def load_user(user_id: str) -> User | None:
        return User(user_id) if user_id in USERS else None

    @app.route("/login", methods=["GET", "POST"])
    def login() -> t.Any:
        if request.method == "POST":
            name = request.form.get("username", "")
            if USERS.get(name) == request.form.get("password"):
                login_user(User(name))
                return redirect(request.args.get("next") or "/")
            return "wrong password", 401
        return (
            '<form method="post"><input name="username" id="username">'
            '<input name="password" id="password" type="password">'
            '<button id="login" type="submit">Log in</button></form>'
        )

    @app.get("/__harness_ready__")
    def ready() -> str:
        return "ok"

    oauth.init_app(app)
    mcp.init_app(app)
    return app


app = create_app()
