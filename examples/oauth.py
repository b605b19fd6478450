"""An MCP server protected by OAuth 2.1: Flask-MCP as the resource server.

Tokens come from an authorization server (Keycloak, Auth0, Okta, Entra ID,
...). Point the server at it with environment variables and run it::

    export FLASK_MCP_AUTH_RESOURCE=https://mcp.example.com/mcp
    export FLASK_MCP_AUTH_AUTHORIZATION_SERVERS='["https://auth.example.com"]'
    export FLASK_MCP_AUTH_JWT_JWKS_URL=https://auth.example.com/.well-known/jwks.json
    gunicorn -k gevent -b 127.0.0.1:8000 'examples.oauth:create_app()'

Without ``FLASK_MCP_AUTH_JWT_JWKS_URL`` it runs with a *development issuer*
mounted at ``/dev-issuer`` in the same app (never do that in production): it
grants tokens to the client ``demo-client`` / ``demo-secret`` with the
``client_credentials`` grant, so you can try the whole flow locally::

    gunicorn -k gevent -b 127.0.0.1:8000 'examples.oauth:create_app()'
    curl -i -X POST http://127.0.0.1:8000/mcp            # 401 and its challenge
    curl http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp
    curl -u demo-client:demo-secret -d grant_type=client_credentials \\
         -d scope=notes:read -d resource=http://127.0.0.1:8000/mcp \\
         http://127.0.0.1:8000/dev-issuer/token

It shows:

- tools, a resource and a prompt that need scopes (``notes:read``,
  ``notes:write``); calling one without its scope gets HTTP 403 with an
  ``insufficient_scope`` challenge (the client steps up and retries);
- ``ctx.auth`` in a tool, and :func:`flask_mcp.current_auth` in a view;
- the ``auth_failed`` signal, for audit logs.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
import typing as t

from flask import Blueprint
from flask import Flask
from flask import request

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import ToolError
from flask_mcp import current_auth
from flask_mcp import signals
from flask_mcp.errors import RESOURCE_NOT_FOUND

logger = logging.getLogger("examples.oauth")

mcp = MCP(
    name="secure-notes",
    version="1.0.0",
    title="Secure notes",
    instructions="Notes for the signed-in user. Reading needs notes:read, writing notes:write.",
)

_notes: dict[str, dict[str, str]] = {}  # principal -> name -> text
_lock = threading.Lock()


def _own_notes(ctx: Context) -> dict[str, str]:
    with _lock:
        return _notes.setdefault(ctx.auth.principal, {})


@mcp.tool(annotations={"readOnlyHint": True})
def whoami(ctx: Context) -> dict[str, t.Any]:
    """Tell who the access token belongs to and what it allows."""
    return {"principal": ctx.auth.principal, "scopes": sorted(ctx.auth.scopes)}


@mcp.tool(scopes=["notes:read"], annotations={"readOnlyHint": True})
def list_notes(ctx: Context) -> list[str]:
    """List the names of your notes."""
    return sorted(_own_notes(ctx))


@mcp.tool(scopes=["notes:write"])
def add_note(name: str, text: str, ctx: Context) -> str:
    """Create or replace one of your notes.

    :param name: the note's name.
    :param text: the note's text.
    """
    if not name.isidentifier():
        raise ToolError(f"Invalid note name {name!r}: use letters, digits and '_'.")
    ctx.info(f"saving {name}")
    with _lock:
        _notes.setdefault(ctx.auth.principal, {})[name] = text
    return f"Saved {name!r}."


@mcp.resource("notes://{name}", scopes=["notes:read"], mime_type="text/plain")
def read_note(name: str, ctx: Context) -> str:
    """One of your notes."""
    text = _own_notes(ctx).get(name)
    if text is None:
        uri = f"notes://{name}"
        raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
    return text


@mcp.prompt(scopes=["notes:read"])
def summarize(name: str, ctx: Context) -> str:
    """Ask the model to summarize one of your notes."""
    return f"Summarize this note:\n\n{_own_notes(ctx).get(name, '(missing)')}"


def _log_refusal(app: Flask, kind: str, description: str | None) -> None:
    """Audit refused requests (the signal never carries the token)."""
    logger.warning("MCP auth refused (%s): %s", kind, description)


def create_app(config: dict[str, t.Any] | None = None) -> Flask:
    """Return the app. ``FLASK_MCP_*`` variables and ``config`` configure it."""
    app = Flask(__name__)
    base = os.environ.get("EXAMPLE_BASE_URL", "http://127.0.0.1:8000")
    app.config.update(
        SECRET_KEY=os.environ.get("SECRET_KEY") or secrets.token_hex(32),
        MCP_AUTH_RESOURCE=f"{base}/mcp",
        MCP_AUTH_SCOPES_SUPPORTED=["notes:read"],
        MCP_AUTH_HIDE_UNAUTHORIZED=True,
    )
    app.config.from_prefixed_env()
    app.config.update(config or {})
    if not app.config.get("MCP_AUTH_JWT_JWKS_URL"):
        issuer = f"{base}/dev-issuer"
        app.register_blueprint(dev_issuer(issuer, resource=app.config["MCP_AUTH_RESOURCE"]))
        app.config["MCP_AUTH_AUTHORIZATION_SERVERS"] = [issuer]
        app.config["MCP_AUTH_JWT_JWKS_URL"] = f"{issuer}/jwks.json"
    mcp.init_app(app)
    signals.auth_failed.connect(_log_refusal, app, weak=False)

    @app.get("/me")
    def me() -> dict[str, t.Any]:
        """An ordinary view reading the same bearer token."""
        info = current_auth()
        return {"principal": info.principal if info else None}

    return app


# -- a development authorization server: NEVER in production ---------------------------


def dev_issuer(issuer: str, *, resource: str) -> Blueprint:
    """Return a toy OAuth 2.1 authorization server: RFC 8414 metadata, JWKS, a token endpoint.

    It issues RS256 JWT access tokens to ``demo-client`` / ``demo-secret``
    (``client_credentials``) for ``resource``, with the scopes asked for.
    """
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "dev"}
    known_scopes = ("notes:read", "notes:write")
    path = issuer.split("/", 3)[3]
    blueprint = Blueprint("dev_issuer", __name__)

    @blueprint.get(f"/.well-known/oauth-authorization-server/{path}")
    def metadata() -> dict[str, t.Any]:
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",  # not implemented by this toy
            "token_endpoint": f"{issuer}/token",
            "jwks_uri": f"{issuer}/jwks.json",
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": list(known_scopes),
        }

    @blueprint.get(f"/{path}/jwks.json")
    def jwks() -> dict[str, t.Any]:
        return {"keys": [{**jwk, "use": "sig", "alg": "RS256"}]}

    @blueprint.post(f"/{path}/token")
    def token() -> tuple[dict[str, t.Any], int]:
        auth = request.authorization
        if auth is None or (auth.username, auth.password) != ("demo-client", "demo-secret"):
            return {"error": "invalid_client"}, 401
        if request.form.get("grant_type") != "client_credentials":
            return {"error": "unsupported_grant_type"}, 400
        if request.form.get("resource", resource) != resource:
            return {"error": "invalid_target"}, 400
        scopes = [s for s in request.form.get("scope", "").split() if s in known_scopes]
        now = int(time.time())
        claims = {
            "iss": issuer, "sub": "demo-client", "client_id": "demo-client", "aud": resource,
            "iat": now, "exp": now + 600, "scope": " ".join(scopes),
        }  # fmt: skip
        access = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "dev"})
        body = {"access_token": access, "token_type": "Bearer", "expires_in": 600}
        return {**body, "scope": " ".join(scopes)}, 200

    return blueprint
