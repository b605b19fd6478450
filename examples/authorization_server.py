"""A Flask-Login app whose MCP endpoint signs in with the app's own accounts.

The app has users in SQLite (``users.db``: ada / ada-password and bob / bob-password are
created on first start) and a login page. Its MCP server is protected by Flask-MCP's
built-in OAuth 2.1 authorization server (:mod:`flask_mcp.contrib.oauth_server`): a client
such as Claude, ChatGPT, VS Code or Cursor discovers it, registers, sends the user to
``/login`` and to a consent page, and calls the tools as that user. Run it with::

    gunicorn -k gevent -w 2 -b 127.0.0.1:8000 'examples.authorization_server:create_app()'

and add ``http://127.0.0.1:8000/mcp`` to the client (behind HTTPS, set
``PUBLIC_URL=https://notes.example.com``). Clients, codes, refresh tokens, consents and
signing keys are in the same SQLite file (``MCP_OAUTH_STORAGE``), so every worker
shares them; with ``FLASK_MCP_BACKEND=redis://...`` they go to Redis instead.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import typing as t
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask
from flask import current_app
from flask import redirect
from flask import render_template_string
from flask import request
from flask import url_for
from flask_login import LoginManager
from flask_login import UserMixin
from flask_login import current_user
from flask_login import login_required
from flask_login import login_user
from flask_login import logout_user
from werkzeug.security import check_password_hash
from werkzeug.security import generate_password_hash

from flask_mcp import MCP
from flask_mcp.contrib.oauth_server import OAuthServer

mcp = MCP(name="team-notes", version="1.0.0", title="Team notes")
oauth = OAuthServer(
    mcp,
    scope_descriptions={"notes:read": "read your notes", "notes:write": "add notes as you"},
)
login_manager = LoginManager()
login_manager.login_view = "login"

LOGIN_PAGE = """<!doctype html><title>Sign in</title>
<h1>Sign in to Team notes</h1>
{% if error %}<p style="color:#b00">{{ error }}</p>{% endif %}
<form method="post">
  <label>User <input name="username" autofocus></label>
  <label>Password <input name="password" type="password"></label>
  <button type="submit">Sign in</button>
</form>"""

ACCOUNT_PAGE = """<!doctype html><title>Connected apps</title>
<h1>Signed in as {{ current_user.id }}</h1>
<h2>Apps that may act as you</h2>
<ul>{% for client_id, consent in consents.items() %}
  <li>{{ consent.client_name }} ({{ consent.scopes | join(", ") }})
    <form method="post" action="{{ url_for('disconnect') }}" style="display:inline">
      <input type="hidden" name="client_id" value="{{ client_id }}">
      <button type="submit">Disconnect</button></form></li>
{% else %}<li>none</li>{% endfor %}</ul>
<p><a href="{{ url_for('logout') }}">Sign out</a></p>"""


class User(UserMixin):
    """A user of the app; its ``id`` is the user name, the ``sub`` of its tokens."""

    def __init__(self, name: str) -> None:
        self.id = name


def database() -> sqlite3.Connection:
    """A connection to the app's SQLite database."""
    return sqlite3.connect(current_app.config["DATABASE"])


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    """Flask-Login's loader: for the session cookie, and for tokens' subjects on /mcp."""
    with database() as db:
        row = db.execute("SELECT name FROM users WHERE name = ?", (user_id,)).fetchone()
    return User(row[0]) if row else None


@mcp.tool(annotations={"readOnlyHint": True})
def whoami() -> str:
    """Tell which user of the app the client acts as."""
    return f"You are {current_user.id}."


@mcp.tool(scopes=["notes:read"], annotations={"readOnlyHint": True})
def list_notes() -> list[str]:
    """List your notes."""
    with database() as db:
        rows = db.execute("SELECT text FROM notes WHERE owner = ?", (current_user.id,))
        return [row[0] for row in rows]


@mcp.tool(scopes=["notes:write"])
def add_note(text: str) -> str:
    """Add a note.

    :param text: what to write down.
    """
    with database() as db:
        db.execute("INSERT INTO notes VALUES (?, ?)", (current_user.id, text))
    return "Saved."


def init_database(path: str) -> None:
    """Create the tables and the two demo users (once)."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, password TEXT)")
        db.execute("CREATE TABLE IF NOT EXISTS notes (owner TEXT, text TEXT)")
        for name in ("ada", "bob"):
            db.execute(
                "INSERT OR IGNORE INTO users VALUES (?, ?)",
                (name, generate_password_hash(f"{name}-password")),
            )


def instance_secret(app: Flask) -> str:
    """Return a secret kept in the instance folder, made on first start.

    Every worker reads the same one: the first to start writes it whole to a file of
    its own and links it into place; a worker that loses that race reads the winner's.
    """
    path = Path(app.instance_path) / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        mine = path.with_name(f"secret_key.{os.getpid()}")
        mine.write_text(secrets.token_hex(32))
        try:
            os.link(mine, path)
        except FileExistsError:
            pass
        finally:
            mine.unlink()
    return path.read_text().strip()


def create_app(config: dict[str, t.Any] | None = None) -> Flask:
    """Return the app; ``PUBLIC_URL`` is where clients reach it (default the local port)."""
    app = Flask(__name__)
    public = os.environ.get("PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")
    path = os.environ.get("NOTES_DB", str(Path(app.instance_path) / "users.db"))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    app.config.update(
        # one key for every worker: it signs the session cookie and the consent form, and
        # seals the authorization server's signing keys in the database
        SECRET_KEY=os.environ.get("SECRET_KEY") or instance_secret(app),
        SESSION_COOKIE_SAMESITE="Lax",  # no cross-site POST carries the session
        DATABASE=path,
        MCP_AUTH_RESOURCE=f"{public}/mcp",
        MCP_OAUTH_STORAGE=f"sqlite:///{path}",
    )
    app.config.from_prefixed_env()
    app.config.update(config or {})
    init_database(app.config["DATABASE"])

    @app.route("/login", methods=["GET", "POST"])
    def login() -> t.Any:
        error = None
        if request.method == "POST":
            name = request.form.get("username", "")
            with database() as db:
                row = db.execute("SELECT password FROM users WHERE name = ?", (name,)).fetchone()
            if row and check_password_hash(row[0], request.form.get("password", "")):
                login_user(User(name))
                target = request.args.get("next", "")
                # only a path of this app: never an open redirect. A browser drops tabs
                # and newlines and reads "\\" as "/": "/\t/evil.example" is "//evil.example"
                parts = urlsplit(target.replace("\\", "/"))  # urlsplit drops them too
                if not target.startswith("/") or parts.scheme or parts.netloc:
                    target = url_for("account")
                return redirect(target)
            error = "Wrong user name or password."
        return render_template_string(LOGIN_PAGE, error=error)

    @app.get("/")
    @login_required
    def account() -> str:
        consents = oauth.consents(current_user.id)
        return render_template_string(ACCOUNT_PAGE, consents=consents)

    @app.post("/disconnect")
    @login_required
    def disconnect() -> t.Any:
        oauth.revoke_consent(current_user.id, request.form["client_id"])
        return redirect(url_for("account"))

    @app.get("/logout")
    def logout() -> t.Any:
        logout_user()
        return redirect(url_for("login"))

    login_manager.init_app(app)
    oauth.init_app(app)
    mcp.init_app(app)
    return app
