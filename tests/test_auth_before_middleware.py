"""Authorization runs before the middleware (issue 32): a middleware that answers by
itself cannot serve a scoped tool, resource or prompt to a caller without its scopes.

The cache recipe of docs/middleware.md, used verbatim, served an admin-scoped resource
read with the user's admin token to the same user's read-only token.
"""

from __future__ import annotations

import typing as t

import pytest
from flask import Flask
from jwt_keys import ISSUER
from jwt_keys import RESOURCE

from flask_mcp import MCP
from flask_mcp import MCPError
from flask_mcp.testing import MCPTestClient

TOKENS = {
    "alice-admin": {"iss": ISSUER, "sub": "alice", "scope": "notes:read notes:admin"},
    "alice-read": {"iss": ISSUER, "sub": "alice", "scope": "notes:read"},
}
ERAS = ["2025-11-25", "2026-07-28"]


def make_app() -> Flask:
    mcp = MCP(name="cached", version="1", authorizer=lambda token, request: TOKENS.get(token))
    cache = {}

    # the Cache recipe of docs/middleware.md, verbatim
    @mcp.middleware
    def cached(call, call_next):  # type: ignore[no-untyped-def]
        if call.kind != "resource":
            return call_next(call)
        key = (call.principal, call.name)
        if key not in cache:
            cache[key] = call_next(call)
        return cache[key]

    @mcp.resource("notes://secret", scopes=["notes:admin"])
    def secret() -> str:
        return "s3cret"

    @mcp.resource("notes://shelf/{name}", scopes=["notes:admin"])
    def shelf(name: str) -> str:
        return f"shelf {name}"

    @mcp.resource("notes://open")
    def open_note() -> str:
        return "open"

    app = Flask(__name__)
    app.config.update(
        TESTING=True,
        SECRET_KEY="x",
        MCP_AUTH_RESOURCE=RESOURCE,
        MCP_AUTH_AUTHORIZATION_SERVERS=[ISSUER],
    )
    mcp.init_app(app)
    return app


def read(app: Flask, version: str, token: str, uri: str) -> dict[str, t.Any]:
    headers = {"Authorization": f"Bearer {token}"}
    with MCPTestClient(app, protocol_version=version, headers=headers) as client:
        return client.request("resources/read", {"uri": uri})


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("uri", ["notes://secret", "notes://shelf/a"])
def test_the_cache_recipe_does_not_leak_a_scoped_resource(version: str, uri: str) -> None:
    app = make_app()
    assert read(app, version, "alice-admin", uri)["contents"][0]["text"].endswith(
        ("s3cret", "shelf a")
    )
    with pytest.raises(MCPError) as refused:
        read(app, version, "alice-read", uri)
    assert refused.value.http_status == 403
    # an unscoped resource is still served from the cache to either token
    assert read(app, version, "alice-admin", "notes://open")["contents"][0]["text"] == "open"
    assert read(app, version, "alice-read", "notes://open")["contents"][0]["text"] == "open"
