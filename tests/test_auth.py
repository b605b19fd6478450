"""Authorization: bearer tokens, challenges, RFC 9728 metadata, scopes, the JWT authorizer."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import socket
import threading
import time
import typing as t

import jwt
import pytest
from flask import Flask
from harness import raised_within
from jwt_keys import ISSUER
from jwt_keys import RESOURCE
from jwt_keys import JWKSServer
from jwt_keys import Keys
from jwt_keys import tampered
from jwt_keys import unsigned
from werkzeug.datastructures import WWWAuthenticate
from wire import ACCEPT
from wire import sse_data

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import current_auth
from flask_mcp import require_scopes
from flask_mcp import signals
from flask_mcp.auth import AuthError
from flask_mcp.auth import AuthInfo
from flask_mcp.auth.jwt_authorizer import JWKSCache
from flask_mcp.auth.jwt_authorizer import JWTAuthorizer

METADATA = "http://localhost/.well-known/oauth-protected-resource/mcp"

# -- a forged token and a JWKS server (keys and tokens: jwt_keys.py) ---------------------


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def hs256_with_public_key(keys: Keys) -> str:
    """An algorithm-confusion token: HS256 keyed with the public key's PEM."""
    payload = {"iss": ISSUER, "sub": "alice", "aud": RESOURCE, "exp": int(time.time()) + 300}
    header = {"alg": "HS256", "kid": keys.kid}
    signing_input = _b64(json.dumps(header).encode()) + b"." + _b64(json.dumps(payload).encode())
    signature = hmac.new(keys.public_pem(), signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + _b64(signature)).decode()


# -- apps ------------------------------------------------------------------------------------


def make_mcp(**kwargs: t.Any) -> MCP:
    mcp = MCP(name="secure", version="1.0.0", **kwargs)

    @mcp.tool()
    def whoami(ctx: Context) -> str:
        """Return the caller."""
        info = current_auth()
        assert info is ctx.auth
        return ctx.auth.principal

    @mcp.tool(scopes=["notes:write"])
    def write(text: str) -> str:
        """Needs notes:write."""
        CALLS.append(text)
        return "written"

    @mcp.tool(scopes=["notes:read"])
    def purge(everything: bool = False) -> str:
        """Needs notes:admin too when everything is purged."""
        if everything:
            require_scopes("notes:admin")
        return "purged"

    @mcp.resource("notes://secret", scopes=["notes:admin"])
    def secret() -> str:
        return "s3cret"

    @mcp.prompt(scopes=["notes:admin"])
    def admin_prompt() -> str:
        return "hi"

    return mcp


CALLS: list[str] = []

#: token -> the authorizer's answer, for the plain-function authorizer.
TOKENS: dict[str, t.Any] = {
    "alice-read": {"iss": ISSUER, "sub": "alice", "scope": "notes:read"},
    "alice-write": {"iss": ISSUER, "sub": "alice", "scope": "notes:read notes:write"},
    "bob-write": {"iss": ISSUER, "sub": "bob", "scope": "notes:read notes:write"},
    "admin": {"iss": ISSUER, "sub": "root", "scope": "notes:read notes:admin"},
    "info": AuthInfo(principal="custom|carol", scopes=frozenset({"notes:read"})),
    "kind": "insufficient_scope",
}


def table_authorizer(token: str, request: t.Any) -> t.Any:
    if token == "boom":
        raise RuntimeError("database down")
    if token == "described":
        raise AuthError("invalid_token", "the token was revoked")
    return TOKENS.get(token)


def make_app(mcp: MCP | None = None, **config: t.Any) -> Flask:
    if mcp is None:
        mcp = make_mcp(authorizer=table_authorizer)
    app = Flask("auth_app")
    app.config.update(
        TESTING=True, SECRET_KEY="x", MCP_AUTH_RESOURCE=RESOURCE,
        MCP_AUTH_AUTHORIZATION_SERVERS=[ISSUER], MCP_AUTH_SCOPES_SUPPORTED=["notes:read"],
    )  # fmt: skip
    app.config.update(config)
    mcp.init_app(app)
    return app


def rpc(method: str, params: dict[str, t.Any] | None = None, id: int = 1) -> dict[str, t.Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


def post(
    client: t.Any, body: t.Any, token: str | None = None, session: str | None = None, **headers: str
) -> t.Any:
    headers = {"Accept": ACCEPT, **headers}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-11-25"
    return client.post("/mcp", json=body, headers=headers)


def open_session(client: t.Any, token: str) -> str:
    init = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})  # fmt: skip
    response = post(client, init, token)
    assert response.status_code == 200, response.get_json()
    session = response.headers["Mcp-Session-Id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(client, note, token, session).status_code == 202
    return t.cast(str, session)


def challenge(response: t.Any) -> WWWAuthenticate:
    header = response.headers["WWW-Authenticate"]
    assert header.startswith("Bearer ")
    parsed = WWWAuthenticate.from_header(header)
    assert parsed is not None
    return parsed


@pytest.fixture
def app() -> Flask:
    return make_app()


@pytest.fixture
def client(app: Flask) -> t.Any:
    return app.test_client()


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


# -- off by default and misconfiguration ----------------------------------------------------


def test_off_by_default() -> None:
    mcp = make_mcp()
    app = Flask("plain")
    app.config.update(TESTING=True)
    mcp.init_app(app)
    client = app.test_client()
    assert client.get("/.well-known/oauth-protected-resource").status_code == 404
    init = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})  # fmt: skip
    assert post(client, init).status_code == 200


def test_scopes_without_auth_warn(caplog: pytest.LogCaptureFixture) -> None:
    app = Flask("plain")
    with caplog.at_level(logging.WARNING, "flask_mcp"):
        make_mcp().init_app(app)
    assert "write" in caplog.text and "authorization is off" in caplog.text


@pytest.mark.parametrize(
    ("config", "authorizer", "message"),
    [
        ({"MCP_AUTH_RESOURCE": "/mcp"}, True, "absolute http(s) URL"),
        ({"MCP_AUTH_RESOURCE": "mcp.example.com"}, True, "absolute http(s) URL"),
        ({"MCP_AUTH_RESOURCE": "https://mcp.example.com/mcp#top"}, True, "fragment"),
        ({"MCP_AUTH_RESOURCE": "http://mcp.example.com/mcp"}, True, "use https://"),
        ({"MCP_AUTH_AUTHORIZATION_SERVERS": ["http://auth.example.com"]}, True, "use https://"),
        ({"MCP_AUTH_AUTHORIZATION_SERVERS": []}, True, "at least one authorization server"),
        ({}, False, "nothing checks tokens"),
        ({"MCP_AUTH_RESOURCE": None}, True, "no MCP_AUTH_RESOURCE"),
        ({"MCP_AUTH_JWT_JWKS_URL": "https://auth.example.com/jwks"}, True, "Both an authorizer"),
        ({"MCP_AUTH_JWT_JWKS_URL": "http://auth.example.com/jwks"}, False, "use https://"),
        (
            {"MCP_AUTH_JWT_JWKS_URL": "https://a.example/jwks", "MCP_AUTH_JWT_ALGORITHMS": "HS256"},
            False,
            "algorithm confusion",
        ),
        (
            {
                "MCP_AUTH_JWT_JWKS_URL": "https://a.example/jwks",
                "MCP_AUTH_JWT_ALGORITHMS": ["none"],
            },
            False,
            "'none' is never safe",
        ),
    ],
)
def test_misconfiguration_fails_in_init_app(
    config: dict[str, t.Any], authorizer: bool, message: str
) -> None:
    mcp = make_mcp(authorizer=table_authorizer if authorizer else None)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_app(mcp, **config)


def test_insecure_http_can_be_allowed_for_test_networks() -> None:
    make_app(MCP_AUTH_RESOURCE="http://mcp.internal/mcp", MCP_AUTH_INSECURE_HTTP=True)


def test_authorizer_after_init_app_is_refused() -> None:
    mcp = make_mcp(authorizer=table_authorizer)
    make_app(mcp)
    with pytest.raises(RuntimeError, match="before init_app"):
        mcp.authorizer(table_authorizer)


# -- RFC 9728 metadata ------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource/mcp",
                                  "/.well-known/oauth-protected-resource"])  # fmt: skip
def test_metadata_document(client: t.Any, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert response.get_json() == {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["notes:read"],
        "bearer_methods_supported": ["header"],
        "resource_name": "secure",
    }
    assert client.options(path).status_code == 204


def test_metadata_follows_path_and_normalizes_resource() -> None:
    app = make_app(
        MCP_PATH="/api/mcp",
        MCP_AUTH_RESOURCE="HTTP://LocalHost:8000/api/mcp",
        MCP_AUTH_METADATA={"resource_documentation": "https://docs.example.com"},
    )
    client = app.test_client()
    document = client.get("/.well-known/oauth-protected-resource/api/mcp").get_json()
    assert document["resource"] == "http://localhost:8000/api/mcp"
    assert document["resource_documentation"] == "https://docs.example.com"
    response = client.post("/api/mcp", json=rpc("ping"), headers={"Accept": ACCEPT})
    assert challenge(response)["resource_metadata"] == (
        "http://localhost:8000/.well-known/oauth-protected-resource/api/mcp"
    )


# -- 401 / 400 / 403 at the endpoint ---------------------------------------------------------


def test_missing_token(client: t.Any) -> None:
    for method in ("post", "get", "delete"):
        response = getattr(client, method)("/mcp", json=rpc("ping") if method == "post" else None,
                                            headers={"Accept": ACCEPT})  # fmt: skip
        assert response.status_code == 401, method
        params = challenge(response)
        assert params["resource_metadata"] == METADATA
        assert params["scope"] == "notes:read"
        assert "error" not in params
        assert response.get_json()["error"]["message"].startswith("Unauthorized")
    raw = response.headers["WWW-Authenticate"]
    assert f'resource_metadata="{METADATA}"' in raw and 'scope="notes:read"' in raw


def test_other_scheme_and_malformed(client: t.Any) -> None:
    response = post(client, rpc("ping"), Authorization="Basic dXNlcjpwYXNz")
    assert response.status_code == 401 and "error" not in challenge(response)
    response = post(client, rpc("ping"), Authorization="Bearer a b")
    assert response.status_code == 400
    assert challenge(response)["error"] == "invalid_request"


@pytest.mark.parametrize(
    ("header", "refusal"),
    [
        ("bearer  alice-read", None),  # the scheme in any case, spaces before the token
        ("BEARER alice-read ", None),
        ("Bearer", "invalid_request"),  # no token
        ("Bearer a=b", "invalid_request"),  # auth-params, not a token
        ("Bearer\talice-read", "no token"),  # a tab is not the separator: no Bearer scheme
        (" Bearer alice-read", "no token"),
        ("Basic", "no token"),
    ],
)
def test_the_authorization_header_is_read_as_werkzeug_reads_it(
    client: t.Any, header: str, refusal: str | None
) -> None:
    """The header is split by hand on the hot path; it must read as ``request.authorization``."""
    response = post(client, rpc("ping"), Authorization=header)
    if refusal is None:  # accepted: the request goes on (400: a ping needs a session)
        assert "WWW-Authenticate" not in response.headers and response.status_code == 400
    elif refusal == "no token":
        assert response.status_code == 401 and "error" not in challenge(response)
    else:
        assert response.status_code == 400 and challenge(response)["error"] == refusal


def test_token_in_query_string_is_ignored(client: t.Any) -> None:
    headers = {"Accept": ACCEPT}
    response = client.post("/mcp?access_token=alice-read", json=rpc("ping"), headers=headers)
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("token", "status", "error", "description"),
    [
        ("unknown", 401, "invalid_token", "the token is not valid"),
        ("described", 401, "invalid_token", "the token was revoked"),
        ("kind", 403, "insufficient_scope", "insufficient scope"),
    ],
)
def test_authorizer_refusals(
    client: t.Any, token: str, status: int, error: str, description: str
) -> None:
    response = post(client, rpc("ping"), token)
    assert response.status_code == status
    params = challenge(response)
    assert params["error"] == error
    assert params["error_description"] == description
    assert params["resource_metadata"] == METADATA


def test_authorizer_crash_is_500_and_logged_without_token(
    client: t.Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "flask_mcp"):
        response = post(client, rpc("ping"), "boom")
    assert response.status_code == 500
    assert "authorizer raised" in caplog.text
    assert "boom" not in caplog.text and "boom" not in response.get_data(as_text=True)


def test_required_scopes() -> None:
    client = make_app(MCP_AUTH_REQUIRED_SCOPES="notes:read mcp").test_client()
    response = post(client, rpc("ping"), "alice-read")
    assert response.status_code == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "notes:read mcp"
    missing = post(client, rpc("ping"))
    assert challenge(missing)["scope"] == "notes:read mcp"


def test_auth_failed_signal_never_carries_the_token(client: t.Any) -> None:
    seen: list[dict[str, t.Any]] = []

    def receiver(sender: t.Any, **kwargs: t.Any) -> None:
        seen.append(kwargs)

    with signals.auth_failed.connected_to(receiver):
        post(client, rpc("ping"))
        post(client, rpc("ping"), "described")
    assert [s["kind"] for s in seen] == ["missing_token", "invalid_token"]
    assert seen[1]["description"] == "the token was revoked"
    assert all("described" not in repr(s) for s in seen)


# -- scopes of tools, resources and prompts ---------------------------------------------------


def test_scoped_tool_is_refused_with_403_before_it_runs(client: t.Any) -> None:
    session = open_session(client, "alice-read")
    call = rpc("tools/call", {"name": "write", "arguments": {"text": "x"}}, id=7)
    response = post(client, call, "alice-read", session)
    assert response.status_code == 403
    assert response.mimetype == "application/json"
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "notes:write"
    assert params["resource_metadata"] == METADATA
    assert response.get_json()["id"] == 7
    assert CALLS == []


def test_scoped_tool_runs_with_the_scope(client: t.Any) -> None:
    session = open_session(client, "alice-write")
    call = rpc("tools/call", {"name": "write", "arguments": {"text": "x"}})
    response = post(client, call, "alice-write", session)
    assert response.status_code == 200
    assert response.get_json()["result"]["content"][0]["text"] == "written"
    assert CALLS == ["x"]


def test_scoped_resource_and_prompt(client: t.Any) -> None:
    session = open_session(client, "alice-write")
    for body in (rpc("resources/read", {"uri": "notes://secret"}),
                 rpc("prompts/get", {"name": "admin_prompt"})):  # fmt: skip
        response = post(client, body, "alice-write", session)
        assert response.status_code == 403
        assert challenge(response)["scope"] == "notes:admin"
    session = open_session(client, "admin")
    response = post(client, rpc("resources/read", {"uri": "notes://secret"}), "admin", session)
    assert response.get_json()["result"]["contents"][0]["text"] == "s3cret"


def test_required_and_tool_scopes_are_challenged_together() -> None:
    client = make_app(MCP_AUTH_REQUIRED_SCOPES="notes:read").test_client()
    session = open_session(client, "alice-read")
    call = rpc("tools/call", {"name": "write", "arguments": {"text": "x"}})
    assert challenge(post(client, call, "alice-read", session))["scope"] == "notes:read notes:write"


def test_implied_scopes() -> None:
    client = make_app(MCP_AUTH_IMPLIED_SCOPES={"notes:admin": ["notes:write"]}).test_client()
    session = open_session(client, "admin")
    call = rpc("tools/call", {"name": "write", "arguments": {"text": "y"}})
    assert post(client, call, "admin", session).status_code == 200


def test_listing_hides_what_the_caller_may_not_use() -> None:
    client = make_app(MCP_AUTH_HIDE_UNAUTHORIZED=True).test_client()
    session = open_session(client, "alice-read")
    tools = post(client, rpc("tools/list"), "alice-read", session).get_json()["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["whoami", "purge"]
    listed = post(client, rpc("resources/list"), "alice-read", session).get_json()["result"]
    assert listed["resources"] == []
    session = open_session(client, "alice-write")
    tools = post(client, rpc("tools/list"), "alice-write", session).get_json()["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["whoami", "write", "purge"]


def test_listing_shows_everything_by_default(client: t.Any) -> None:
    session = open_session(client, "alice-read")
    tools = post(client, rpc("tools/list"), "alice-read", session).get_json()["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["whoami", "write", "purge"]


# -- sessions, ctx.auth and current_auth() ---------------------------------------------------


def test_session_is_bound_to_its_principal(client: t.Any) -> None:
    session = open_session(client, "alice-write")
    ping = rpc("ping")
    assert post(client, ping, "alice-write", session).status_code == 200
    assert post(client, ping, "alice-read", session).status_code == 200  # same iss|sub
    assert post(client, ping, "bob-write", session).status_code == 404
    response = client.delete("/mcp", headers={"Authorization": "Bearer bob-write",
                                              "Mcp-Session-Id": session})  # fmt: skip
    assert response.status_code == 404
    assert post(client, ping, "alice-write", session).status_code == 200


def test_ctx_auth_and_current_auth_in_handlers(client: t.Any) -> None:
    session = open_session(client, "info")
    call = rpc("tools/call", {"name": "whoami", "arguments": {}})
    result = post(client, call, "info", session).get_json()["result"]
    assert result["content"][0]["text"] == "custom|carol"
    session = open_session(client, "alice-read")
    result = post(client, call, "alice-read", session).get_json()["result"]
    assert result["content"][0]["text"] == f"{ISSUER}|alice"


def test_current_auth_in_views(app: Flask) -> None:
    @app.get("/me")
    def me() -> dict[str, t.Any]:
        info = current_auth()
        return {"principal": info.principal if info else None}

    client = app.test_client()
    assert client.get("/me").get_json() == {"principal": None}
    junk = client.get("/me", headers={"Authorization": "Bearer junk"}).get_json()
    assert junk == {"principal": None}
    me_alice = client.get("/me", headers={"Authorization": "Bearer alice-read"}).get_json()
    assert me_alice == {"principal": f"{ISSUER}|alice"}
    assert current_auth() is None


def test_stateless_requests_are_authenticated_too(client: t.Any) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    body = rpc("tools/call", {"name": "write", "arguments": {"text": "z"}, "_meta": meta})
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "write",
    }
    response = post(client, body, **headers)
    assert response.status_code == 401
    assert challenge(response)["resource_metadata"] == METADATA
    response = post(client, body, "alice-read", **headers)
    assert response.status_code == 403
    assert response.get_json()["error"]["message"].startswith("Forbidden")
    assert challenge(response)["scope"] == "notes:write"
    assert CALLS == []


def test_a_listen_follows_only_the_resources_the_callers_scopes_allow() -> None:
    """A 2026-07-28 listen leaves out what ``resources/subscribe`` refuses (2025-11-25).

    ``notes://secret`` needs ``notes:admin``: a caller without it is refused its
    updates in one era and must not get them in the other. A URI no resource
    serves is left as it was.
    """
    client = make_app(MCP_SSE_MAX_STREAM_SECONDS=0.1).test_client()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    wanted = {"resourceSubscriptions": ["notes://secret", "notes://other"]}
    body = rpc("subscriptions/listen", {"notifications": wanted, "_meta": meta})
    headers = {"Accept": ACCEPT, "MCP-Protocol-Version": "2026-07-28",
               "Mcp-Method": "subscriptions/listen"}  # fmt: skip
    everything = wanted["resourceSubscriptions"]
    for token, honoured in (("alice-read", ["notes://other"]), ("admin", everything)):
        auth = {**headers, "Authorization": f"Bearer {token}"}
        response = client.post("/mcp", json=body, headers=auth, multithread=True)
        ack = sse_data(response.get_data(as_text=True))[0]
        assert ack["params"]["notifications"] == {"resourceSubscriptions": honoured}
    session = open_session(client, "alice-read")
    subscribe = rpc("resources/subscribe", {"uri": "notes://secret"})
    assert post(client, subscribe, "alice-read", session).status_code == 403


# -- the JWT authorizer -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture
def jwks(keys: Keys) -> t.Iterator[JWKSServer]:
    with JWKSServer(keys) as server:
        yield server


@pytest.fixture
def jwt_client(jwks: JWKSServer) -> t.Any:
    app = make_app(make_mcp(), MCP_AUTH_JWT_JWKS_URL=jwks.url)
    return app.test_client()


def test_jwt_valid_token(jwt_client: t.Any, keys: Keys) -> None:
    token = keys.mint(scope="notes:read notes:write")
    session = open_session(jwt_client, token)
    call = rpc("tools/call", {"name": "write", "arguments": {"text": "jwt"}})
    assert post(jwt_client, call, token, session).status_code == 200
    assert CALLS == ["jwt"]


@pytest.mark.parametrize(
    ("make_token", "description"),
    [
        (lambda k: k.mint(expires_in=-120), "the token expired"),
        (lambda k: k.mint(audience="https://other.example.com/mcp"), "another resource (aud)"),
        (lambda k: k.mint(issuer="https://evil.example.com"), "unexpected issuer (iss)"),
        (lambda k: tampered(k.mint()), "signature does not verify"),
        (lambda k: unsigned(k.mint()), "algorithm (alg) is not accepted"),
        (lambda k: hs256_with_public_key(k), "algorithm (alg) is not accepted"),
        (lambda k: Keys("key-9").mint(), "unknown key (kid)"),
        (lambda k: k.mint(nbf=int(time.time()) + 600), "not valid yet"),
        (lambda k: "not.a.jwt", "not a well-formed JWT"),
        (lambda k: k.mint(subject=""), "names no subject"),
    ],
)
def test_jwt_rejections(
    jwt_client: t.Any,
    keys: Keys,
    make_token: t.Callable[[Keys], str],
    description: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = make_token(keys)
    with caplog.at_level(logging.DEBUG):
        response = post(jwt_client, rpc("ping"), token)
    assert response.status_code == 401
    params = challenge(response)
    assert params["error"] == "invalid_token"
    assert description in params["error_description"]
    assert token not in caplog.text and token not in response.get_data(as_text=True)


def test_jwt_missing_exp_is_refused(jwt_client: t.Any, keys: Keys) -> None:
    token = jwt.encode({"iss": ISSUER, "sub": "a", "aud": RESOURCE}, keys.private, "RS256",
                       headers={"kid": keys.kid})  # fmt: skip
    response = post(jwt_client, rpc("ping"), token)
    assert "no 'exp' claim" in challenge(response)["error_description"]


def test_jwt_leeway(jwks: JWKSServer, keys: Keys) -> None:
    app = make_app(make_mcp(), MCP_AUTH_JWT_JWKS_URL=jwks.url, MCP_AUTH_JWT_LEEWAY=120)
    client = app.test_client()
    assert post(client, rpc("ping"), keys.mint(expires_in=-60)).status_code != 401


def test_jwt_authorizer_in_code_defaults_to_the_app_settings(jwks: JWKSServer, keys: Keys) -> None:
    mcp = make_mcp()
    mcp.authorizer(JWTAuthorizer(jwks.url, leeway=0))
    client = make_app(mcp).test_client()
    assert post(client, rpc("ping"), keys.mint(audience="https://x.example/mcp")).status_code == 401
    session = open_session(client, keys.mint())
    assert session


def test_jwks_rotation_and_rate_limit(keys: Keys) -> None:
    new = Keys("key-2")
    with JWKSServer(keys) as server:
        cache = JWKSCache(server.url, refetch_interval=0.3)
        assert cache.key_for(keys.kid, "RS256")["kid"] == keys.kid
        server.keys = [keys, new]
        with pytest.raises(AuthError, match="unknown key"):  # fetched too recently
            cache.key_for(new.kid, "RS256")
        assert server.hits == 1
        time.sleep(0.35)
        assert cache.key_for(new.kid, "RS256")["kid"] == new.kid
        assert server.hits == 2
        for _ in range(5):
            with pytest.raises(AuthError):
                cache.key_for("made-up", "RS256")
        assert server.hits == 2


def test_jwks_unreachable(keys: Keys) -> None:
    with JWKSServer(keys) as server:
        url = server.url
        cache = JWKSCache(url, cache_seconds=0.1, refetch_interval=0.1, timeout=1)
        cache.key_for(keys.kid, "RS256")
    time.sleep(0.15)
    assert cache.key_for(keys.kid, "RS256")["kid"] == keys.kid  # stale keys stay in use
    fresh = JWKSCache(url, timeout=1)
    with pytest.raises(AuthError) as info:
        fresh.key_for(keys.kid, "RS256")
    assert info.value.kind == "temporarily_unavailable"


def test_jwks_unreachable_is_503(keys: Keys) -> None:
    with JWKSServer(keys) as server:
        url = server.url
    client = make_app(make_mcp(), MCP_AUTH_JWT_JWKS_URL=url).test_client()
    response = post(client, rpc("ping"), keys.mint())
    assert response.status_code == 503
    assert response.headers["Retry-After"]
    assert challenge(response)["error"] == "temporarily_unavailable"


@contextlib.contextmanager
def raw_http_server(*replies: bytes) -> t.Iterator[tuple[str, list[int]]]:
    """Answer each connection on 127.0.0.1 with the next of ``replies`` (the last repeats),
    raw bytes that need not be HTTP; yield the URL and the list of connections (one 1 each)."""
    sock = socket.create_server(("127.0.0.1", 0))
    hits: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                reply = replies[min(len(hits), len(replies) - 1)]
                hits.append(1)  # counted before the reply: the client may look at once
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/jwks.json", hits
    finally:
        sock.close()


def test_jwks_answer_that_is_not_http_is_unavailable_not_a_crash(keys: Keys) -> None:
    """urllib passes http.client's errors (a bad status line) on unwrapped: they are a failed
    fetch like any other, not an exception that turns the request into a 500."""
    body = json.dumps({"keys": [keys.jwk()]}).encode()
    good = b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    with raw_http_server(b"garbage\r\n\r\n") as (url, _):
        with pytest.raises(AuthError) as info:
            JWKSCache(url, timeout=1).key_for(keys.kid, "RS256")
        assert info.value.kind == "temporarily_unavailable"
        response = post(make_app(make_mcp(), MCP_AUTH_JWT_JWKS_URL=url).test_client(),
                        rpc("ping"), keys.mint())  # fmt: skip
        assert response.status_code == 503
        assert challenge(response)["error"] == "temporarily_unavailable"
    with raw_http_server(good, b"garbage\r\n\r\n") as (url, hits):
        cache = JWKSCache(url, cache_seconds=0.05, timeout=1)
        cache.key_for(keys.kid, "RS256")
        time.sleep(0.1)
        assert cache.key_for(keys.kid, "RS256")["kid"] == keys.kid  # stale keys stay in use
        assert len(hits) == 2


def test_jwks_never_fetched_is_not_fetched_for_every_token(keys: Keys) -> None:
    """With no keys yet and the issuer failing, tokens are refused 503 without a fetch each:
    one fetch per refetch_interval, as for unknown kids, until the keys arrive."""
    body = json.dumps({"keys": [keys.jwk()]}).encode()
    good = b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    failing = b"HTTP/1.0 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"
    with raw_http_server(failing, failing, good) as (url, hits):
        cache = JWKSCache(url, refetch_interval=0.3, timeout=1)
        for _ in range(5):
            with pytest.raises(AuthError) as info:
                cache.key_for(keys.kid, "RS256")
            assert info.value.kind == "temporarily_unavailable"
        assert len(hits) == 1
        time.sleep(0.35)
        for _ in range(3):
            with pytest.raises(AuthError, match="cannot be fetched"):
                cache.key_for(keys.kid, "RS256")
        assert len(hits) == 2
        time.sleep(0.35)
        assert cache.key_for(keys.kid, "RS256")["kid"] == keys.kid
        assert len(hits) == 3


def test_jwt_algorithm_key_type_mismatch(keys: Keys) -> None:
    with JWKSServer(keys) as server:
        cache = JWKSCache(server.url)
        with pytest.raises(AuthError, match="unknown key"):
            cache.key_for(keys.kid, "ES256")  # an RSA key never verifies ES256


def test_jwt_scp_claim_and_client_credentials(jwks: JWKSServer, keys: Keys) -> None:
    authorizer = JWTAuthorizer(jwks.url, issuer=ISSUER, audience=RESOURCE)
    info = authorizer(keys.mint(subject="", client_id="svc", scp=["a", "b"], scope=None), None)  # type: ignore[arg-type]
    assert info.principal == f"{ISSUER}|svc"
    assert info.client_id == "svc"
    assert info.scopes == frozenset({"a", "b"})


def test_jwt_authorizer_refuses_unsafe_arguments() -> None:
    with pytest.raises(ValueError, match="algorithm confusion"):
        JWTAuthorizer("https://a.example/jwks", algorithms=["HS256"])
    with pytest.raises(ValueError, match="use https://"):
        JWTAuthorizer("http://a.example/jwks")
    with contextlib.suppress(ValueError):
        JWTAuthorizer("http://127.0.0.1:1/jwks")


def test_batch_with_an_under_scoped_call_is_refused(client: t.Any) -> None:
    init = rpc("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})  # fmt: skip
    response = post(client, init, "alice-read")
    session = response.headers["Mcp-Session-Id"]
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-03-26"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(client, note, "alice-read", **headers).status_code == 202
    batch = [rpc("ping", id=1), rpc("tools/call", {"name": "write", "arguments": {"text": "b"}}, 2)]
    response = post(client, batch, "alice-read", **headers)
    assert response.status_code == 403
    assert challenge(response)["scope"] == "notes:write"
    assert CALLS == []


def test_batch_with_a_refusing_context_tool_is_refused() -> None:
    """A handler taking a Context runs in a task of its own, in a batch too: the refusal
    raised there (its scopes, or ``require_scopes`` at run time) still answers the POST."""
    mcp = make_mcp(authorizer=table_authorizer)

    @mcp.tool()
    def audit(ctx: Context) -> str:
        """Needs notes:admin, asked while it runs."""
        require_scopes("notes:admin")
        return f"audited by {ctx.auth.principal}"

    client = make_app(mcp).test_client()
    init = rpc("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})  # fmt: skip
    for token, status in (("admin", 200), ("alice-read", 403)):
        session = post(client, init, token).headers["Mcp-Session-Id"]
        headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-03-26"}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert post(client, note, token, **headers).status_code == 202
        batch = [rpc("ping", id=1), rpc("tools/call", {"name": "audit", "arguments": {}}, 2)]
        response = post(client, batch, token, **headers)
        assert response.status_code == status, response.get_data(as_text=True)
        if status == 200:
            assert response.get_json()[1]["result"]["content"][0]["text"].endswith("|root")
        else:
            assert challenge(response)["scope"] == "notes:admin"


def test_require_scopes_at_run_time(client: t.Any) -> None:
    session = open_session(client, "alice-read")
    call = rpc("tools/call", {"name": "purge", "arguments": {}}, id=3)
    assert post(client, call, "alice-read", session).get_json()["result"]["content"][0]["text"] == (
        "purged"
    )
    call["params"]["arguments"] = {"everything": True}
    response = post(client, call, "alice-read", session)
    assert response.status_code == 403
    assert challenge(response)["scope"] == "notes:read notes:admin"
    assert "tools/call needs" in challenge(response)["error_description"]
    assert response.get_json()["id"] == 3


def trickled_jwks_fetch(sent: bytes, trickled: bytes, every: float) -> BaseException | None:
    """Fetch a JWKS (``timeout=1``) from a server that sends ``sent`` at once, then
    ``trickled`` a byte every ``every`` seconds; return what the fetch raised (``None``:
    it returned). Fails when the fetch is still going after 10 s."""
    sock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(sent)
            for byte in trickled:
                if stop.wait(every):
                    return
                with contextlib.suppress(OSError):
                    conn.sendall(bytes([byte]))

    threading.Thread(target=trickle, daemon=True).start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/jwks.json"
    try:
        return raised_within(JWKSCache(url, timeout=1).fetch, 10, "the fetch of a trickling JWKS")
    finally:
        stop.set()
        sock.close()


def test_a_jwks_whose_headers_trickle_in_fails_within_the_timeout() -> None:
    """``timeout`` bounds the status line and headers too, not only the body.

    ``urlopen``'s timeout bounds each wait for a byte: an issuer (or its proxy) that
    sent its head a byte at a time held the fetch, and every request with a token
    waiting for the keys, for as long as it went on.
    """
    head = b"HTTP/1.1 200 OK\r\nX-Padding: " + b"x" * 60000  # 50 minutes of it
    raised = trickled_jwks_fetch(b"", head, 0.05)
    assert isinstance(raised, OSError), raised
    assert "1 s" in str(raised)


def resolutions_of(host: str) -> list[threading.Thread]:
    """The threads resolving ``host`` for a fetch's deadline."""
    return [
        thread for thread in threading.enumerate() if thread.name == f"flask-mcp resolve {host}"
    ]


@pytest.mark.usefixtures("stuck_name_resolution")
def test_a_jwks_whose_name_does_not_resolve_fails_within_the_timeout() -> None:
    """``timeout`` bounds the name resolution too.

    The resolution of the issuer's name came before the deadline's connection: a DNS
    server that did not answer held the fetch, and every request with a token waiting
    for the keys, for as long as the system resolver waited.
    """
    cache = JWKSCache("http://jwks.localhost:1/jwks.json", timeout=0.5)
    error = raised_within(
        cache.fetch,
        5,  # the resolution lasts 60 s
        "the fetch of a JWKS whose name does not resolve",
    )
    assert isinstance(error, TimeoutError), error
    assert "0.5 s" in str(error)
    # the resolution still runs in its thread: the next fetch starts no other one
    resolving = resolutions_of("jwks.localhost")
    assert len(resolving) == 1
    error = raised_within(cache.fetch, 5, "a fetch while the last resolution runs")
    assert isinstance(error, OSError) and "still runs" in str(error), error
    # its own resolution threads: the process's count moves with other tests' threads
    assert resolutions_of("jwks.localhost") == resolving


def test_a_jwks_that_trickles_in_fails_within_the_timeout(keys: Keys) -> None:
    """``timeout`` bounds the whole fetch, not each wait for a byte.

    An issuer (or a proxy before it) that sends its answer a byte at a time held the
    fetch for as long as it went on, and every request with a token waited behind it.
    """
    body = json.dumps({"keys": [keys.jwk()]}).encode()
    head = b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
    raised = trickled_jwks_fetch(head, body, 0.1)  # 0.1 s a byte: far past the fetch's 1 s
    assert isinstance(raised, OSError), raised
    assert "1 s" in str(raised)
