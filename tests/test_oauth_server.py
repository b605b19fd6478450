"""The built-in authorization server in process: each OAuth rule and its precise error.

The app is ``tests/_apps/oauth_notes.py`` (Flask-Login users, tools with ``scopes=``),
made anew for each test on one ``OAuthServer`` (the extension serves many apps). The
browser flow against gunicorn is ``tests/test_e2e_oauth_server.py``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import re
import secrets
import threading
import typing as t
from urllib.parse import parse_qs
from urllib.parse import urlencode
from urllib.parse import urlsplit

import pytest
from _apps import oauth_notes
from harness import raised_within
from oauth_hosts import DocumentHost
from werkzeug.middleware.proxy_fix import ProxyFix
from wire import ACCEPT

from flask_mcp.contrib.oauth_server.client_documents import ClientDocumentError
from flask_mcp.contrib.oauth_server.client_documents import ClientDocuments
from flask_mcp.contrib.oauth_server.client_documents import cache_seconds
from flask_mcp.contrib.oauth_server.clients import redirect_uri_matches
from flask_mcp.contrib.oauth_server.keys import SigningKeys
from flask_mcp.contrib.oauth_server.storage import MemoryStorage

BASE = "http://127.0.0.1:8300"
REDIRECT = "http://127.0.0.1:9999/callback"


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> t.Any:
    monkeypatch.setenv("OAUTH_APP_BASE", BASE)
    return oauth_notes.create_app()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    return verifier, challenge.decode()


def register(client: t.Any, **metadata: t.Any) -> dict[str, t.Any]:
    body = {"redirect_uris": [REDIRECT], "client_name": "Test client", **metadata}
    response = client.post("/oauth/register", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    return t.cast(dict[str, t.Any], response.json)


def login(client: t.Any, user: str = "ada") -> None:
    response = client.post("/login", data={"username": user, "password": f"pw-{user}"})
    assert response.status_code == 302


def authorize_params(client_id: str, challenge: str, **extra: str) -> dict[str, str]:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "scope": "notes:read",
        "resource": f"{BASE}/mcp",
    }
    params.update(extra)
    return {k: v for k, v in params.items() if v != ""}


def consent(client: t.Any, params: dict[str, str], decision: str = "allow") -> t.Any:
    """GET the consent page, then POST its form; return the final response."""
    page = client.get("/oauth/authorize?" + urlencode(params))
    if page.status_code != 200:
        return page
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
    assert token, page.get_data(as_text=True)
    return client.post(
        "/oauth/authorize?" + urlencode(params),
        data={"csrf_token": token.group(1), "decision": decision},
    )


def code_from(response: t.Any) -> str:
    assert response.status_code == 302, response.get_data(as_text=True)
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert query["state"] == ["st-1"] and query["iss"] == [BASE]  # RFC 9207
    return query["code"][0]


def exchange(client: t.Any, client_id: str, code: str, verifier: str, **extra: str) -> t.Any:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": f"{BASE}/mcp",
        **extra,
    }
    return client.post("/oauth/token", data={k: v for k, v in form.items() if v != ""})


def tokens(client: t.Any, scope: str = "notes:read") -> tuple[str, dict[str, t.Any]]:
    """Register, log in as ada, consent, exchange: the client id and the token response."""
    client_id = register(client)["client_id"]
    login(client)
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge, scope=scope)))
    response = exchange(client, client_id, code, verifier)
    assert response.status_code == 200, response.json
    return client_id, t.cast(dict[str, t.Any], response.json)


def call_tool(
    client: t.Any, token: str, name: str, arguments: dict[str, t.Any] | None = None
) -> t.Any:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments or {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    return client.post("/mcp", json=body, headers=headers)


def test_metadata_names_the_server_and_its_endpoints(app: t.Any) -> None:
    client = app.test_client()
    resource = client.get("/.well-known/oauth-protected-resource/mcp").json
    assert resource["authorization_servers"] == [BASE]
    assert resource["scopes_supported"] == ["notes:read", "notes:write"]
    server = client.get("/.well-known/oauth-authorization-server").json
    assert server["issuer"] == BASE
    assert server["authorization_endpoint"] == f"{BASE}/oauth/authorize"
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["client_id_metadata_document_supported"] is True
    assert client.get("/oauth/jwks").json["keys"][0]["alg"] == "ES256"


def test_the_issuers_host_is_accepted_besides_the_allowed_hosts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The authorization server's routes refuse a Host the MCP endpoint refuses (421), but
    not the issuer's own, where clients reach them, when ``MCP_ALLOWED_HOSTS`` omits it."""
    monkeypatch.setenv("FLASK_MCP_ALLOWED_HOSTS", '["notes.example.com"]')
    monkeypatch.setenv("FLASK_MCP_OAUTH_ISSUER", "https://auth.example.com")
    monkeypatch.setenv("FLASK_MCP_AUTH_RESOURCE", "https://notes.example.com/mcp")
    client = oauth_notes.create_app().test_client()
    well_known = "/.well-known/oauth-authorization-server"
    for host, status in [
        ("auth.example.com", 200),
        ("notes.example.com", 200),
        ("evil.example", 421),
    ]:
        assert client.get(well_known, headers={"Host": host}).status_code == status, host
    resource = "/.well-known/oauth-protected-resource/mcp"  # the endpoint's: its hosts
    assert client.get(resource, headers={"Host": "auth.example.com"}).status_code == 421


def test_token_and_revoke_over_plain_http_say_how_to_fix_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An allowed public name reached over ``http`` (a proxy that ends TLS without
    ``ProxyFix(x_proto=1)``): Authlib refuses it as insecure transport, which token and
    revoke answered with an HTML 500; a JSON OAuth error saying what to do now."""
    monkeypatch.delenv("AUTHLIB_INSECURE_TRANSPORT", raising=False)
    monkeypatch.setenv("FLASK_MCP_ALLOWED_HOSTS", '["notes.example.com"]')
    monkeypatch.setenv("FLASK_MCP_OAUTH_ISSUER", "https://notes.example.com")
    monkeypatch.setenv("FLASK_MCP_AUTH_RESOURCE", "https://notes.example.com/mcp")
    client = oauth_notes.create_app().test_client()
    for path in ("/oauth/token", "/oauth/revoke"):
        response = client.post(
            path, data={"grant_type": "refresh_token", "token": "x", "refresh_token": "x"},
            headers={"Host": "notes.example.com"},
        )  # fmt: skip
        assert response.status_code == 400, (path, response.data[:200])
        assert response.json["error"] == "invalid_request", path
        assert "ProxyFix(x_proto=1)" in response.json["error_description"], path
        assert response.headers["Cache-Control"] == "no-store"


def test_metadata_under_another_path_behind_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAUTH_APP_BASE", "https://notes.example.com/tenant")
    monkeypatch.setenv("FLASK_MCP_PATH", "/api/mcp")
    monkeypatch.setenv("FLASK_MCP_OAUTH_ISSUER", "https://notes.example.com/tenant")
    monkeypatch.setenv("FLASK_MCP_ALLOWED_HOSTS", '["notes.example.com", "localhost"]')
    monkeypatch.setenv("FLASK_MCP_AUTH_RESOURCE", "https://notes.example.com/tenant/api/mcp")
    app = oauth_notes.create_app()
    app.wsgi_app = ProxyFix(app.wsgi_app, x_proto=1, x_host=1, x_prefix=1)  # type: ignore[method-assign]
    client = app.test_client()
    proxied = {
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "notes.example.com",
        "X-Forwarded-Prefix": "/tenant",
    }
    resource = client.get("/.well-known/oauth-protected-resource/api/mcp", headers=proxied).json
    assert resource["resource"] == "https://notes.example.com/tenant/api/mcp"
    assert resource["authorization_servers"] == ["https://notes.example.com/tenant"]
    server = client.get("/.well-known/oauth-authorization-server/tenant", headers=proxied).json
    assert server["issuer"] == "https://notes.example.com/tenant"
    assert server["token_endpoint"] == "https://notes.example.com/tenant/oauth/token"
    # Not logged in: the login redirect keeps the proxy's prefix in next=.
    client_id = register(client)["client_id"]
    _, challenge = pkce()
    params = authorize_params(
        client_id, challenge, resource="https://notes.example.com/tenant/api/mcp"
    )
    page = client.get("/oauth/authorize?" + urlencode(params), headers=proxied)
    assert page.status_code == 302
    location = urlsplit(page.headers["Location"])
    assert location.path == "/tenant/login"
    assert parse_qs(location.query)["next"][0].startswith("/tenant/oauth/authorize?")


def test_code_flow_tokens_name_the_user(app: t.Any) -> None:
    client = app.test_client()
    client_id, token = tokens(client)
    assert token["token_type"] == "Bearer" and token["scope"] == "notes:read"
    assert token["refresh_token"] and token["expires_in"] == 3600
    response = call_tool(client.application.test_client(), token["access_token"], "whoami")
    result = response.json["result"]["structuredContent"]
    assert result == {"sub": "ada", "current_user": "ada", "scopes": ["notes:read"]}


def test_login_redirect_then_remembered_consent(app: t.Any) -> None:
    client = app.test_client()
    web = "https://client.example/callback"
    client_id = register(client, redirect_uris=[web, REDIRECT])["client_id"]
    _, challenge = pkce()
    params = authorize_params(client_id, challenge, redirect_uri=web)
    page = client.get("/oauth/authorize?" + urlencode(params))
    assert page.status_code == 302 and "/login?next=" in page.headers["Location"]
    login(client)
    consent(client, params)
    # RFC 8252 (8.6): any local program can take a loopback port under this client's id,
    # so a loopback redirect is asked each time, the host shown (MCP authorization page).
    local = client.get("/oauth/authorize?" + urlencode({**params, "redirect_uri": REDIRECT}))
    assert local.status_code == 200 and b"127.0.0.1" in local.data
    again = client.get("/oauth/authorize?" + urlencode(params))
    assert again.status_code == 302 and "code=" in again.headers["Location"]  # remembered
    server = oauth_notes.oauth.app_server(app)
    assert server.consents("ada")[client_id]["scopes"] == ["notes:read"]
    wider = client.get(
        "/oauth/authorize?" + urlencode({**params, "scope": "notes:read notes:write"})
    )
    assert wider.status_code == 200 and b"notes:write" in wider.data  # asks again


def test_deny_redirects_with_access_denied(app: t.Any) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    _, challenge = pkce()
    response = consent(client, authorize_params(client_id, challenge), decision="deny")
    assert response.status_code == 302
    assert parse_qs(urlsplit(response.headers["Location"]).query)["error"] == ["access_denied"]


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://127.0.0.1:9999/callback/extra",
        "http://127.0.0.1:9999/callbac",
        "http://evil.example/callback",
        "http://127.0.0.1:9999/callback?x=1",
    ],
)
def test_wrong_or_partial_redirect_uri(app: t.Any, redirect_uri: str) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    _, challenge = pkce()
    page = client.get(
        "/oauth/authorize?"
        + urlencode(authorize_params(client_id, challenge, redirect_uri=redirect_uri))
    )
    assert page.status_code == 400  # shown, never redirected to an unregistered URI
    assert b'<code id="error">invalid_request</code>' in page.data
    assert b"Redirect URI" in page.data


def test_loopback_redirect_any_port_rfc_8252() -> None:
    assert redirect_uri_matches("http://127.0.0.1/cb", "http://127.0.0.1:53211/cb")
    assert redirect_uri_matches("http://[::1]:80/cb", "http://[::1]:6000/cb")
    assert not redirect_uri_matches("http://127.0.0.1/cb", "http://127.0.0.1:53211/cb2")
    assert not redirect_uri_matches("http://localhost/cb", "http://localhost:5000/cb")
    assert not redirect_uri_matches("https://app.example/cb", "https://app.example:444/cb")
    # user info: these are URLs of evil.example, not of the loopback host
    assert not redirect_uri_matches("http://127.0.0.1/cb", "http://127.0.0.1:1@evil.example/cb")
    assert not redirect_uri_matches("http://[::1]/cb", "http://[::1]:1@evil.example/cb")
    assert not redirect_uri_matches("http://127.0.0.1/cb", "http://127.0.0.1@evil.example/cb")
    assert redirect_uri_matches("http://127.0.0.1/cb", "http://127.0.0.1:65535/cb")
    assert not redirect_uri_matches("http://127.0.0.1/cb", "http://127.0.0.1:65536/cb")  # no port


def test_loopback_redirect_with_user_info_is_not_followed(app: t.Any) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    _, challenge = pkce()
    code_from(consent(client, authorize_params(client_id, challenge)))
    # A redirect accepted here would send the code to evil.example.
    evil = "http://127.0.0.1:9999@evil.example/callback"
    page = client.get(
        "/oauth/authorize?" + urlencode(authorize_params(client_id, challenge, redirect_uri=evil))
    )
    assert page.status_code == 400 and b"Redirect URI" in page.data


def test_pkce_required_and_s256_only(app: t.Any) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    _, challenge = pkce()
    for extra in ({"code_challenge": ""}, {"code_challenge_method": "plain"}):
        page = client.get(
            "/oauth/authorize?" + urlencode(authorize_params(client_id, challenge, **extra))
        )
        assert page.status_code == 302
        query = parse_qs(urlsplit(page.headers["Location"]).query)
        assert query["error"] == ["invalid_request"] and query["iss"] == [BASE]


def test_redirect_uri_in_the_token_request_only_if_the_authorization_request_sent_it(
    app: t.Any,
) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    # The client's only redirect URI, used when the authorization request sends none.
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge, redirect_uri="")))
    assert exchange(client, client_id, code, verifier, redirect_uri="").status_code == 200
    # Sent with the authorization request: required with the token request.
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge)))
    missing = exchange(client, client_id, code, verifier, redirect_uri="")
    assert missing.status_code == 400 and missing.json["error"] == "invalid_grant"
    assert "Missing 'redirect_uri'" in missing.json["error_description"]


@pytest.mark.parametrize("verifier", ["", "wrong-" + "x" * 50])
def test_missing_or_wrong_pkce_verifier(app: t.Any, verifier: str) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    _, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge)))
    response = exchange(client, client_id, code, verifier)
    assert response.status_code == 400
    assert response.json["error"] == ("invalid_request" if not verifier else "invalid_grant")
    assert "access_token" not in response.json


def test_reused_code_is_refused_and_revokes_its_tokens(app: t.Any) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge)))
    first = exchange(client, client_id, code, verifier)
    assert first.status_code == 200
    again = exchange(client, client_id, code, verifier)
    assert again.status_code == 400 and again.json["error"] == "invalid_grant"
    assert "access_token" not in again.json
    assert call_tool(app.test_client(), first.json["access_token"], "whoami").status_code == 401
    refresh = client.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first.json["refresh_token"],
            "client_id": client_id,
        },
    )
    assert refresh.status_code == 400 and refresh.json["error"] == "invalid_grant"


def test_refresh_rotates_and_reuse_revokes_the_family(app: t.Any) -> None:
    client = app.test_client()
    client_id, first = tokens(client)
    form = {"grant_type": "refresh_token", "client_id": client_id}
    second = client.post("/oauth/token", data={**form, "refresh_token": first["refresh_token"]})
    assert second.status_code == 200 and second.json["refresh_token"] != first["refresh_token"]
    assert call_tool(app.test_client(), second.json["access_token"], "whoami").status_code == 200
    reused = client.post("/oauth/token", data={**form, "refresh_token": first["refresh_token"]})
    assert reused.status_code == 400 and reused.json["error"] == "invalid_grant"
    assert "access_token" not in reused.json
    # the whole family is gone: the newest access token and refresh token too
    assert call_tool(app.test_client(), second.json["access_token"], "whoami").status_code == 401
    third = client.post(
        "/oauth/token", data={**form, "refresh_token": second.json["refresh_token"]}
    )
    assert third.status_code == 400 and third.json["error"] == "invalid_grant"


def test_two_refreshes_at_once_revoke_the_family(
    app: t.Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stolen refresh token used just as its client uses it: the one that comes second,
    right after the first took the token, is a reuse and revokes the family (RFC 9700,
    4.14.2), where it found neither the token nor the record of its use."""
    client = app.test_client()
    client_id, first = tokens(client)
    form = {"grant_type": "refresh_token", "client_id": client_id, **first}
    storage = oauth_notes.oauth.app_server(app).storage
    take, racing = storage._take, []

    def take_then_race(key: str) -> t.Any:
        found = take(key)
        if key.startswith("refresh:") and not racing:
            racing.append(None)  # the racing request takes (finds nothing) and races no more
            racing[0] = app.test_client().post("/oauth/token", data=form)
        return found

    monkeypatch.setattr(storage, "_take", take_then_race)
    client.post("/oauth/token", data=form)
    assert racing[0].status_code == 400, racing[0].get_data(as_text=True)
    assert racing[0].json["error"] == "invalid_grant"
    # the family is revoked: the first access token is refused (as any the winner got)
    assert call_tool(app.test_client(), first["access_token"], "whoami").status_code == 401


def test_a_narrower_refresh_keeps_the_refresh_tokens_scope(app: t.Any) -> None:
    client = app.test_client()
    client_id, first = tokens(client, scope="notes:read notes:write")
    form = {"grant_type": "refresh_token", "client_id": client_id}
    narrow = client.post(
        "/oauth/token",
        data={**form, "refresh_token": first["refresh_token"], "scope": "notes:read"},
    )
    assert narrow.status_code == 200 and narrow.json["scope"] == "notes:read"
    wide = client.post(
        "/oauth/token",
        data={
            **form,
            "refresh_token": narrow.json["refresh_token"],
            "scope": "notes:read notes:write",
        },
    )
    assert wide.status_code == 200, wide.json
    assert wide.json["scope"] == "notes:read notes:write"


def test_revocation_rfc_7009(app: t.Any) -> None:
    client = app.test_client()
    client_id, token = tokens(client)
    assert call_tool(app.test_client(), token["access_token"], "whoami").status_code == 200
    response = client.post(
        "/oauth/revoke", data={"token": token["access_token"], "client_id": client_id}
    )
    assert response.status_code == 200
    refused = call_tool(app.test_client(), token["access_token"], "whoami")
    assert (
        refused.status_code == 401
        and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    )
    refresh = client.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": token["refresh_token"],
            "client_id": client_id,
        },
    )
    assert refresh.json["error"] == "invalid_grant"


def test_revoking_consent_revokes_the_clients_tokens(app: t.Any) -> None:
    client = app.test_client()
    client_id, token = tokens(client)
    oauth_notes.oauth.revoke_consent("ada", client_id, app=app)
    assert call_tool(app.test_client(), token["access_token"], "whoami").status_code == 401
    assert client_id not in oauth_notes.oauth.consents("ada", app=app)
    # a code given before the withdrawal and not redeemed yet is withdrawn with it
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge)))
    oauth_notes.oauth.revoke_consent("ada", client_id, app=app)
    late = exchange(client, client_id, code, verifier)
    assert late.status_code == 400 and late.json["error"] == "invalid_grant"
    assert "withdrawn" in late.json["error_description"]


def test_sql_storage_keeps_rows_the_app_can_query(
    monkeypatch: pytest.MonkeyPatch, tmp_path: t.Any
) -> None:
    """With ``MCP_OAUTH_STORAGE`` an SQL URL, each record is a row of its table: the
    client, the consent, the used code, the refresh token and its family."""
    import sqlalchemy as sa

    monkeypatch.setenv("FLASK_MCP_OAUTH_STORAGE", f"sqlite:///{tmp_path}/oauth.db")
    app = oauth_notes.create_app()
    client = app.test_client()
    client_id, token = tokens(client)
    storage = oauth_notes.oauth.app_server(app).storage
    tables = storage.tables
    with storage.engine.connect() as conn:
        registered = conn.execute(sa.select(tables.clients)).one()
        consent = conn.execute(sa.select(tables.consents)).one()
        used = conn.execute(sa.select(tables.codes.c.used_at)).scalar()
        refresh = conn.execute(sa.select(tables.refresh_tokens)).one()
        family = conn.execute(sa.select(tables.token_families)).one()
    assert (registered.client_id, registered.client_name) == (client_id, "Test client")
    assert registered.redirect_uris == [REDIRECT]
    assert (consent.user_id, consent.client_id, consent.scope) == ("ada", client_id, "notes:read")
    assert used is not None  # redeemed: kept to recognize a second use
    assert token["refresh_token"] not in str(tuple(refresh))  # only its digest
    assert (family.user_id, family.client_id, family.revoked_at) == ("ada", client_id, None)
    oauth_notes.oauth.revoke_consent("ada", client_id, app=app)
    with storage.engine.connect() as conn:
        assert conn.execute(sa.select(tables.consents)).first() is None
        assert conn.execute(sa.select(tables.token_families.c.revoked_at)).scalar() is not None
    assert call_tool(app.test_client(), token["access_token"], "whoami").status_code == 401


def test_sql_storage_keeps_the_tenant_of_a_refresh_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: t.Any
) -> None:
    """With one resource per tenant, an SQL refresh token stays acme's: its refresh is
    for acme's endpoint (named or not), and one naming globex's gets ``invalid_target``."""
    import jwt

    acme, globex = f"{BASE}/t/acme/mcp", f"{BASE}/t/globex/mcp"
    monkeypatch.setenv("FLASK_MCP_OAUTH_STORAGE", f"sqlite:///{tmp_path}/oauth.db")
    monkeypatch.setenv("FLASK_MCP_PATH", "/t/<tenant>/mcp")
    monkeypatch.setenv("FLASK_MCP_AUTH_RESOURCE", f"{BASE}/t/<tenant>/mcp")
    client = oauth_notes.create_app().test_client()
    client_id = register(client)["client_id"]
    login(client)
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge, resource=acme)))
    token = exchange(client, client_id, code, verifier, resource=acme).json
    refresh = {"grant_type": "refresh_token", "client_id": client_id}
    other = client.post(
        "/oauth/token",
        data={**refresh, "refresh_token": token["refresh_token"], "resource": globex},
    )
    assert other.status_code == 400 and other.json["error"] == "invalid_target", other.json
    for named in ({"resource": acme}, {}):
        form = {**refresh, "refresh_token": token["refresh_token"], **named}
        answer = client.post("/oauth/token", data=form)
        assert answer.status_code == 200, answer.get_data(as_text=True)
        token = answer.json
        assert jwt.decode(token["access_token"], options={"verify_signature": False})["aud"] == acme


@pytest.mark.redis
@pytest.mark.cluster
def test_records_go_to_the_redis_cluster_of_the_backend(
    monkeypatch: pytest.MonkeyPatch, redis_cluster_url: str
) -> None:
    """``MCP_BACKEND = "redis+cluster://..."``: the records are in the cluster, through the
    backend's own ``RedisCluster`` client, under the backend's key prefix."""
    from redis.cluster import RedisCluster

    from flask_mcp.contrib.oauth_server.extension import BackendRedisStorage

    prefix = f"oauth-{secrets.token_hex(4)}:"
    monkeypatch.setenv("FLASK_MCP_BACKEND", f"{redis_cluster_url}?prefix={prefix}")
    app = oauth_notes.create_app()
    client = app.test_client()
    client_id, token = tokens(client)
    storage = oauth_notes.oauth.app_server(app).storage
    assert isinstance(storage, BackendRedisStorage)
    assert isinstance(storage.client, RedisCluster)
    assert storage.client is app.extensions["mcp"].state(app).backend.client
    assert storage.client.exists(f"{prefix}oauth:client:{client_id}")
    assert client_id in oauth_notes.oauth.consents("ada", app=app)
    oauth_notes.oauth.revoke_consent("ada", client_id, app=app)
    assert call_tool(app.test_client(), token["access_token"], "whoami").status_code == 401


def test_token_for_another_resource(app: t.Any) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    _, challenge = pkce()
    params = authorize_params(client_id, challenge, resource="https://other.example/mcp")
    page = client.get("/oauth/authorize?" + urlencode(params))
    assert page.status_code == 302
    assert parse_qs(urlsplit(page.headers["Location"]).query)["error"] == ["invalid_target"]
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge)))
    response = exchange(client, client_id, code, verifier, resource="https://other.example/mcp")
    assert response.status_code == 400 and response.json["error"] == "invalid_target"
    assert "access_token" not in response.json


def test_token_of_another_app_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OAUTH_APP_BASE", "http://127.0.0.1:8301")
    one = oauth_notes.create_app()
    monkeypatch.setenv("OAUTH_APP_BASE", BASE)
    other = oauth_notes.create_app()
    _, token = tokens(other.test_client())
    refused = call_tool(one.test_client(), token["access_token"], "whoami")
    assert refused.status_code == 401


def test_insufficient_scope_then_step_up(app: t.Any) -> None:
    client = app.test_client()
    client_id, token = tokens(client, scope="notes:read")
    refused = call_tool(app.test_client(), token["access_token"], "add_note", {"text": "hi"})
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]
    verifier, challenge = pkce()
    params = authorize_params(client_id, challenge, scope="notes:read notes:write")
    code = code_from(consent(client, params))
    wider = exchange(client, client_id, code, verifier).json
    done = call_tool(app.test_client(), wider["access_token"], "add_note", {"text": "hi"})
    assert done.json["result"]["content"][0]["text"] == "saved for ada"


def test_expired_consent_csrf_token(app: t.Any, monkeypatch: pytest.MonkeyPatch) -> None:
    client = app.test_client()
    client_id = register(client)["client_id"]
    login(client)
    _, challenge = pkce()
    params = authorize_params(client_id, challenge)
    page = client.get("/oauth/authorize?" + urlencode(params)).get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    import itsdangerous.timed

    later = itsdangerous.timed.TimestampSigner.get_timestamp(t.cast(t.Any, None)) + 901
    monkeypatch.setattr(itsdangerous.timed.TimestampSigner, "get_timestamp", lambda self: later)
    response = client.post(
        "/oauth/authorize?" + urlencode(params),
        data={"csrf_token": token.group(1), "decision": "allow"},
    )
    assert response.status_code == 400 and b"invalid_request" in response.data
    assert b"expired" in response.data and "Location" not in response.headers
    forged = client.post(
        "/oauth/authorize?" + urlencode(params), data={"csrf_token": "forged", "decision": "allow"}
    )
    assert forged.status_code == 400 and "Location" not in forged.headers


def test_registration_gated_by_initial_access_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASK_MCP_OAUTH_REGISTRATION_TOKENS", '["let-me-in"]')
    app = oauth_notes.create_app()
    client = app.test_client()
    body = {"redirect_uris": [REDIRECT]}
    assert client.post("/oauth/register", json=body).json["error"] == "access_denied"
    wrong = client.post("/oauth/register", json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.json["error"] == "access_denied"
    ok = client.post("/oauth/register", json=body, headers={"Authorization": "Bearer let-me-in"})
    assert ok.status_code == 201 and ok.json["client_id"].startswith("mcp-")
    assert "client_secret" not in ok.json  # a public client: no secret, not even null
    confidential = client.post(
        "/oauth/register",
        json={**body, "token_endpoint_auth_method": "client_secret_post"},
        headers={"Authorization": "Bearer let-me-in"},
    )
    assert len(confidential.json["client_secret"]) > 30


def test_registration_metadata_is_bounded(app: t.Any) -> None:
    client = app.test_client()
    body = {"redirect_uris": [REDIRECT], "client_name": "x" * 6000}
    response = client.post("/oauth/register", json=body)
    assert response.status_code == 400
    assert response.json["error"] == "invalid_client_metadata"
    assert "more than the 5120" in response.json["error_description"]
    # a body is bounded before it is read (unknown fields would be dropped after): no
    # unauthenticated client can make a worker hold megabytes
    for path in ("/oauth/register", "/oauth/token", "/oauth/revoke"):
        huge = client.post(path, json={"redirect_uris": [REDIRECT], "padding": "x" * 300_000})
        assert huge.status_code == 413, path
        assert huge.json["error"] == "invalid_request"
        assert "larger than 65536 bytes" in huge.json["error_description"]
        assert huge.headers["Cache-Control"] == "no-store"
    # the same without Content-Length (chunked), which Werkzeug would cut short unsaid
    chunked = client.post(
        "/oauth/register",
        input_stream=io.BytesIO(json.dumps({"padding": "x" * 300_000}).encode()),
        headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert chunked.status_code == 413 and chunked.json["error"] == "invalid_request"
    assert oauth_notes.oauth.app_server(app).storage.count_clients() == 0


def test_registration_refuses_unsafe_redirects(app: t.Any) -> None:
    client = app.test_client()
    for uri in ("http://evil.example/cb", "https://app.example/cb#frag", "javascript:alert(1)"):
        response = client.post("/oauth/register", json={"redirect_uris": [uri]})
        assert response.status_code == 400 and response.json["error"] == "invalid_redirect_uri"


def test_registration_refuses_metadata_of_the_wrong_type(app: t.Any) -> None:
    """RFC 7591 names strings and arrays of strings: a name the consent page would show as
    a Python dict, or contacts that are no list, is refused, not stored."""
    client = app.test_client()
    for wrong in (
        {"client_name": {"a": 1}},
        {"client_name": ["Claude"]},
        {"software_id": 7},
        {"software_version": 1.5},
        {"contacts": "ops@example.com"},
        {"contacts": [{"email": "ops@example.com"}]},
    ):
        response = client.post("/oauth/register", json={"redirect_uris": [REDIRECT], **wrong})
        assert response.status_code == 400, wrong
        assert response.json["error"] == "invalid_client_metadata"
        assert next(iter(wrong)) in response.json["error_description"]
    assert oauth_notes.oauth.app_server(app).storage.count_clients() == 0


@pytest.mark.parametrize(
    "client_id", ["https://[::1/client.json", "https://example.com:99999/client.json"]
)
def test_a_client_id_that_is_not_a_url_is_an_invalid_client(app: t.Any, client_id: str) -> None:
    client = app.test_client()
    login(client)
    _, challenge = pkce()
    page = client.get("/oauth/authorize?" + urlencode(authorize_params(client_id, challenge)))
    assert page.status_code == 400 and b'<code id="error">invalid_client</code>' in page.data
    form = {"grant_type": "authorization_code", "code": "x", "client_id": client_id}
    response = client.post("/oauth/token", data={**form, "code_verifier": "v" * 43})
    assert response.status_code == 400 and response.json["error"] == "invalid_client"


def test_a_redirect_uri_that_is_not_a_url_is_refused(app: t.Any) -> None:
    client = app.test_client()
    bad = "http://[::1/callback"
    response = client.post("/oauth/register", json={"redirect_uris": [bad]})
    assert response.status_code == 400 and response.json["error"] == "invalid_redirect_uri"
    client_id = register(client)["client_id"]
    login(client)
    _, challenge = pkce()
    page = client.get(
        "/oauth/authorize?" + urlencode(authorize_params(client_id, challenge, redirect_uri=bad))
    )
    assert page.status_code == 400 and b"Redirect URI" in page.data


def test_client_documents_refuse_private_addresses() -> None:
    """The refusal names no address, and reads the same for a host that does not resolve:
    anyone may send a ``client_id``, and must not map the internal network's names with it."""
    documents = ClientDocuments(MemoryStorage())
    said = set()
    for url in (
        "https://127.0.0.1/client.json",
        "https://10.0.0.8/c.json",
        "https://169.254.169.254/c",
        "https://localhost/c.json",
        "https://no-such-host.invalid/c.json",
    ):
        with pytest.raises(ClientDocumentError, match="private, loopback or link-local") as info:
            documents.fetch(url)
        said.add(str(info.value).replace(repr(urlsplit(url).hostname), "HOST"))
    assert len(said) == 1, said  # the same words for each host: no address, no DNS error
    with pytest.raises(ClientDocumentError, match="https:// with a path"):
        documents.fetch("http://example.com/client.json")


def test_client_document_checks() -> None:
    url = "https://app.example/client.json"
    good = {"client_id": url, "redirect_uris": ["http://127.0.0.1/cb"], "client_name": "App"}
    import json

    assert (
        ClientDocuments.check(url, json.dumps(good).encode())["token_endpoint_auth_method"]
        == "none"
    )
    for bad, reason in [
        ({**good, "client_id": "https://other.example/c.json"}, "client_id"),
        ({**good, "redirect_uris": []}, "redirect_uris"),
        ({k: v for k, v in good.items() if k != "client_name"}, "client_name"),
        ({**good, "token_endpoint_auth_method": "client_secret_post"}, "public client"),
        ({**good, "redirect_uris": ["https://evil.example\\.app.example/cb"]}, "RFC 3986"),
    ]:
        with pytest.raises(ClientDocumentError, match=reason):
            ClientDocuments.check(url, json.dumps(bad).encode())


def test_cache_headers() -> None:
    assert cache_seconds({"cache-control": "max-age=3600"}, 0) == 3600
    assert cache_seconds({"cache-control": "no-store"}, 0) == 0
    assert cache_seconds({"cache-control": "max-age=1"}, 0) == 60
    assert cache_seconds({}, 0) == 300


@pytest.mark.parametrize(
    ("options", "timeout", "reason"),
    [
        # A size check with room to spare on a loaded machine: the TLS handshake alone
        # has taken more than 0.5 s in CI, and the error then named the time.
        ({"padding": 6000}, 10.0, "larger than 5120 bytes"),
        ({"padding": 6000, "chunked": True}, 10.0, "larger than 5120 bytes"),
        ({"delay": 3.0}, 0.5, "longer than 0.5 s"),
    ],
)
def test_client_documents_too_large_or_slow(
    tmp_path: t.Any, options: dict[str, t.Any], timeout: float, reason: str
) -> None:
    host = DocumentHost(tmp_path, REDIRECT, **options)
    try:
        documents = ClientDocuments(
            MemoryStorage(), allow_private=True, timeout=timeout, verify=str(host.cert)
        )
        with pytest.raises(ClientDocumentError, match=reason):
            documents.get(host.url)
        plain = DocumentHost(tmp_path, REDIRECT)
        try:
            fine = ClientDocuments(MemoryStorage(), allow_private=True, verify=str(plain.cert))
            assert fine.get(plain.url)["client_name"] == "Document Client"
            fine.get(plain.url)
            assert plain.fetches == 1  # cached per its Cache-Control
        finally:
            plain.close()
    finally:
        host.close()


def test_a_document_whose_headers_trickle_in_fails_within_the_timeout(tmp_path: t.Any) -> None:
    """The timeout bounds the whole fetch, its status line and headers included.

    httpx's timeout bounds each wait for a byte: a host (anyone may name one as a
    ``client_id``) that sent its headers a byte at a time held the request that
    fetched the document, a server thread, for as long as it went on.
    """
    host = DocumentHost(tmp_path, REDIRECT, trickle=0.05)
    documents = ClientDocuments(
        MemoryStorage(), allow_private=True, timeout=0.5, verify=str(host.cert)
    )
    try:
        error = raised_within(
            lambda: documents.get(host.url),
            20,  # the head lasts 50 minutes
            "the fetch of a document whose headers trickle in",
        )
    finally:
        host.close()
    assert isinstance(error, ClientDocumentError), error
    assert "longer than 0.5 s" in str(error)


@pytest.mark.usefixtures("stuck_name_resolution")
def test_a_document_whose_name_does_not_resolve_fails_within_the_timeout() -> None:
    """The timeout bounds the name resolution too: a ``client_id`` naming a host whose
    DNS server never answers held the request that fetched it, a server thread, for as
    long as the system resolver waited."""
    documents = ClientDocuments(MemoryStorage(), timeout=0.5)
    error = raised_within(
        lambda: documents.get("https://slow-dns.example/client.json"),
        5,  # the resolution lasts 60 s
        "the fetch of a document whose name does not resolve",
    )
    assert isinstance(error, ClientDocumentError), error
    assert "longer than 0.5 s" in str(error)


def test_a_resolution_that_outlives_its_fetch_holds_its_place_until_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fetch gives up on a name that does not resolve at its timeout, but the resolution
    goes on in its thread until the system resolver gives up: it counts among the
    ``max_fetches`` until then, so hosts whose DNS never answers cannot pile up threads."""
    import socket

    released = threading.Event()
    resolve = socket.getaddrinfo

    def stuck(host: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
        if str(host).endswith(".example"):
            released.wait(30)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", stuck)
    documents = ClientDocuments(MemoryStorage(), timeout=0.2, max_fetches=1)
    try:
        with pytest.raises(ClientDocumentError, match="longer than 0.2 s"):
            documents.get("https://slow-dns.example/client.json")
        with pytest.raises(ClientDocumentError, match="retry in a few seconds") as busy:
            documents.get("https://other.example/client.json")
        assert "MCP_OAUTH_CLIENT_METADATA_MAX_FETCHES" in str(busy.value)
    finally:
        released.set()
    for _ in range(100):  # the resolution's thread ends, and gives its place back
        try:
            documents.fetch("https://no-such-host.invalid/client.json")
        except ClientDocumentError as exc:
            if "retry" not in str(exc):
                assert "does not resolve" in str(exc)
                break
        threading.Event().wait(0.05)
    else:
        pytest.fail("the place of the resolution was not given back when it ended")


def test_a_refused_document_is_an_invalid_client_error(
    tmp_path: t.Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = DocumentHost(tmp_path, REDIRECT, padding=6000)
    monkeypatch.setenv("FLASK_MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("FLASK_MCP_OAUTH_CLIENT_METADATA_CA_BUNDLE", str(host.cert))
    try:
        app = oauth_notes.create_app()
        client = app.test_client()
        login(client)
        _, challenge = pkce()
        page = client.get("/oauth/authorize?" + urlencode(authorize_params(host.url, challenge)))
    finally:
        host.close()
    assert page.status_code == 400 and "Location" not in page.headers
    assert b'<code id="error">invalid_client</code>' in page.data
    assert b"larger than 5120 bytes" in page.data


def test_document_fetches_count_as_registrations_of_the_address(
    tmp_path: t.Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One address cannot make the server fetch and cache document after document."""
    host = DocumentHost(tmp_path, REDIRECT, cache_control="no-store")
    monkeypatch.setenv("FLASK_MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("FLASK_MCP_OAUTH_CLIENT_METADATA_CA_BUNDLE", str(host.cert))
    monkeypatch.setenv("FLASK_MCP_OAUTH_REGISTRATION_RATE_LIMIT", "2/minute")
    try:
        app = oauth_notes.create_app()
        client = app.test_client()
        login(client)
        _, challenge = pkce()
        query = urlencode(authorize_params(host.url, challenge))

        def attempt(address: str) -> t.Any:
            return client.get(f"/oauth/authorize?{query}", environ_base={"REMOTE_ADDR": address})

        assert [attempt("10.0.0.1").status_code for _ in range(2)] == [200, 200]
        refused = attempt("10.0.0.1")
        assert host.fetches == 2  # the third was refused before fetching
        assert attempt("10.0.0.2").status_code == 200 and host.fetches == 3
    finally:
        host.close()
    assert refused.status_code == 400 and "Location" not in refused.headers
    assert b'<code id="error">invalid_client</code>' in refused.data
    assert b"at most 2 per 1 minute" in refused.data


def test_cached_documents_are_bounded_like_registered_clients(
    tmp_path: t.Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anyone may have documents fetched and cached (a day, if their ``Cache-Control``
    says so), from as many addresses as they have: the cache keeps at most
    ``MCP_OAUTH_MAX_CLIENTS`` of them; past it a document is kept in the process only,
    not fetched again on every request (each fetch counted against the address the
    client's users share)."""
    host = DocumentHost(tmp_path, REDIRECT)
    monkeypatch.setenv("FLASK_MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("FLASK_MCP_OAUTH_CLIENT_METADATA_CA_BUNDLE", str(host.cert))
    monkeypatch.setenv("FLASK_MCP_OAUTH_MAX_CLIENTS", "1")
    monkeypatch.setenv("FLASK_MCP_OAUTH_REGISTRATION_RATE_LIMIT", "null")
    fetches = []
    try:
        app = oauth_notes.create_app()
        client = app.test_client()
        login(client)
        for url in (host.url, f"{host.url}?another=client"):
            host.document = {**host.document, "client_id": url}
            _, challenge = pkce()
            query = urlencode(authorize_params(url, challenge))
            pages = [client.get(f"/oauth/authorize?{query}") for _ in "ab"]
            assert [page.status_code for page in pages] == [200] * 2, pages[0].data
            fetches.append(host.fetches - sum(fetches))
        storage = oauth_notes.oauth.app_server(app).storage
    finally:
        host.close()
    # the first is cached; the second is kept in the process: the cache holds one document
    assert fetches == [1, 1]
    assert storage.count_client_documents() == 1


def test_past_the_shared_cache_the_least_recently_used_document_goes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A document in use stays in the process while new ones (a flood of URLs) push out
    the least recently used; the overflow holds at most ``OVERFLOW_CACHE_SIZE``."""
    from flask_mcp.contrib.oauth_server import client_documents

    monkeypatch.setattr(client_documents, "OVERFLOW_CACHE_SIZE", 2)
    storage = MemoryStorage()
    documents = ClientDocuments(storage, max_cached=1)
    fetched: list[str] = []

    def fetch(url: str) -> tuple[dict[str, t.Any], float]:
        fetched.append(url)
        return {"client_id": url}, 3600.0

    monkeypatch.setattr(documents, "fetch", fetch)
    urls = [f"https://c{n}.example/client.json" for n in range(5)]
    documents.get(urls[0])  # the shared cache's one document
    documents.get(urls[1])  # in use: named again between the others
    for url in urls[2:]:
        documents.get(url)
        assert documents.get(urls[1]) == {"client_id": urls[1]}
    assert fetched == urls  # each fetched once: urls[1] stayed, the others took turns
    documents.get(urls[2])  # pushed out by urls[3] and urls[4]: fetched again
    assert fetched == [*urls, urls[2]] and storage.count_client_documents() == 1


def test_revocation_cache_is_bounded_staleness(monkeypatch: pytest.MonkeyPatch) -> None:
    """With MCP_OAUTH_REVOCATION_CACHE_SECONDS another worker's revocation waits its turn."""
    monkeypatch.setenv("FLASK_MCP_OAUTH_REVOCATION_CACHE_SECONDS", "3600")
    app = oauth_notes.create_app()
    client = app.test_client()
    _, token = tokens(client)
    assert call_tool(app.test_client(), token["access_token"], "whoami").status_code == 200
    server = oauth_notes.oauth.app_server(app)
    family = server.decode_access_token(token["access_token"])["fid"]
    # another worker revokes: only the storage changes, this process trusts its answer
    server.storage.revoke_family(family, 60)
    assert call_tool(app.test_client(), token["access_token"], "whoami").status_code == 200
    server.revoke_family(family)  # revoked in this process: applies at once
    assert call_tool(app.test_client(), token["access_token"], "whoami").status_code == 401


def test_signing_keys_rotate_and_the_jwks_follows(monkeypatch: pytest.MonkeyPatch) -> None:
    import jwt

    from flask_mcp.contrib.oauth_server import keys as keys_module

    now = [1_000_000.0]
    monkeypatch.setattr(keys_module.time, "time", lambda: now[0])
    storage = MemoryStorage()
    secret = lambda: ["s"]  # noqa: E731
    one, other = SigningKeys(storage, 100.0, secret), SigningKeys(storage, 100.0, secret)
    token = one.sign({"sub": "ada"})
    kid = jwt.get_unverified_header(token)["kid"]
    assert other.current()[1] == kid  # the same key in every worker
    assert [key["kid"] for key in one.jwks()["keys"]][1] == kid
    now[0] += 100  # next period: a new key signs, the old one still verifies
    assert one.current()[1] != kid
    assert jwt.decode(token, other.verifier(kid, "ES256"), algorithms=["ES256"])["sub"] == "ada"
    assert kid in [key["kid"] for key in other.jwks()["keys"]]
    now[0] += 100  # two periods later: no longer published, no longer accepted
    assert kid not in [key["kid"] for key in other.jwks()["keys"]]
    with pytest.raises(LookupError):
        other.verifier(kid, "ES256")


def test_an_app_without_flask_login_names_its_user_with_callables() -> None:
    from flask import Flask
    from flask import g
    from flask import session

    from flask_mcp import MCP
    from flask_mcp import Context
    from flask_mcp.contrib.oauth_server import OAuthServer

    mcp = MCP(name="plain-login", version="1")
    loaded: list[str] = []

    @mcp.tool(scopes=["notes:read"])
    def who(ctx: Context) -> str:
        return f"{ctx.auth.claims['sub']} / {g.get('_login_user')}"

    def load_user(user_id: str) -> str:
        loaded.append(user_id)
        return f"<user {user_id}>"

    oauth = OAuthServer(mcp, user_loader=lambda: session.get("user"), load_user=load_user)
    app = Flask(__name__)
    app.config.update(SECRET_KEY="s", MCP_AUTH_RESOURCE=f"{BASE}/mcp")
    app.add_url_rule("/signin", "signin", lambda: session.update(user="grace") or "ok")
    oauth.init_app(app)
    mcp.init_app(app)
    client = app.test_client()
    client_id = register(client)["client_id"]
    _, challenge = pkce()
    page = client.get("/oauth/authorize?" + urlencode(authorize_params(client_id, challenge)))
    assert page.status_code == 401 and b"login_required" in page.data  # no login view known
    client.get("/signin")
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge)))
    token = exchange(client, client_id, code, verifier).json["access_token"]
    answer = call_tool(app.test_client(), token, "who").json["result"]
    assert answer["content"][0]["text"] == "grace / <user grace>" and loaded == ["grace"]


def test_a_confidential_client_authenticates_with_its_secret(app: t.Any) -> None:
    client = app.test_client()
    registered = register(client, token_endpoint_auth_method="client_secret_post")
    client_id, secret = registered["client_id"], registered["client_secret"]
    stored = oauth_notes.oauth.app_server(app).storage.load_client(client_id)
    assert stored is not None and secret not in str(stored)  # only its digest is kept
    login(client)
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge)))
    wrong = exchange(client, client_id, code, verifier, client_secret="not-it")
    assert wrong.status_code == 401 and wrong.json["error"] == "invalid_client"
    verifier, challenge = pkce()
    code = code_from(consent(client, authorize_params(client_id, challenge)))
    right = exchange(client, client_id, code, verifier, client_secret=secret)
    assert right.status_code == 200 and right.json["access_token"]


def token_attempt(client: t.Any, address: str = "127.0.0.1") -> t.Any:
    form = {"grant_type": "authorization_code", "code": "nope", "client_id": "nobody"}
    return client.post("/oauth/token", data=form, environ_base={"REMOTE_ADDR": address})


def test_token_requests_are_limited_per_client_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASK_MCP_OAUTH_TOKEN_RATE_LIMIT", "3/minute")
    app = oauth_notes.create_app()
    client = app.test_client()
    assert [token_attempt(client).status_code for _ in range(3)] == [400, 400, 400]
    refused = token_attempt(client)
    assert refused.status_code == 429 and refused.json["error"] == "temporarily_unavailable"
    assert "at most 3 per 1 minute" in refused.json["error_description"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.headers["Cache-Control"] == "no-store" and "access_token" not in refused.json
    assert token_attempt(client, "10.0.0.2").status_code == 400  # another address counts anew


def test_an_ipv6_client_is_limited_as_its_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client given a /64 (RFC 6177) cannot pass the limit by changing address."""
    monkeypatch.setenv("FLASK_MCP_OAUTH_TOKEN_RATE_LIMIT", "2/minute")
    client = oauth_notes.create_app().test_client()
    statuses = [token_attempt(client, f"2001:db8:1:2::{host}").status_code for host in "abc"]
    assert statuses == [400, 400, 429]
    assert token_attempt(client, "2001:db8:1:3::a").status_code == 400  # another network


def test_registration_is_limited_and_the_clients_kept_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLASK_MCP_OAUTH_REGISTRATION_RATE_LIMIT", "2/minute")
    monkeypatch.setenv("FLASK_MCP_OAUTH_MAX_CLIENTS", "3")
    app = oauth_notes.create_app()
    storage = oauth_notes.oauth.app_server(app).storage
    client = app.test_client()
    body = {"redirect_uris": [REDIRECT], "client_name": "Test client"}

    def attempt(address: str) -> t.Any:
        return client.post("/oauth/register", json=body, environ_base={"REMOTE_ADDR": address})

    assert [attempt("10.0.0.1").status_code for _ in range(2)] == [201, 201]
    refused = attempt("10.0.0.1")
    assert refused.status_code == 429 and refused.json["error"] == "temporarily_unavailable"
    assert int(refused.headers["Retry-After"]) >= 1 and storage.count_clients() == 2
    assert attempt("10.0.0.2").status_code == 201
    full = attempt("10.0.0.3")  # within its own rate, but the server holds 3 clients
    assert full.status_code == 503 and full.json["error"] == "temporarily_unavailable"
    assert "MCP_OAUTH_MAX_CLIENTS" in full.json["error_description"]
    assert "client_id" not in full.json and storage.count_clients() == 3


def test_rate_limits_can_be_lifted_and_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASK_MCP_OAUTH_TOKEN_RATE_LIMIT", "")
    app = oauth_notes.create_app()
    client = app.test_client()
    assert {token_attempt(client).status_code for _ in range(150)} == {400}  # default: 120
    monkeypatch.setenv("FLASK_MCP_OAUTH_TOKEN_RATE_LIMIT", "often")
    with pytest.raises(ValueError, match="MCP_OAUTH_TOKEN_RATE_LIMIT='often'"):
        oauth_notes.create_app()


@pytest.mark.redis
def test_rate_limits_are_shared_by_the_workers_of_a_redis_backend(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    """Two apps on one ``MCP_BACKEND`` (two workers) count a client address together."""
    monkeypatch.setenv("FLASK_MCP_BACKEND", f"{redis_url}?prefix=rl-{secrets.token_hex(4)}:")
    monkeypatch.setenv("FLASK_MCP_OAUTH_TOKEN_RATE_LIMIT", "3/minute")
    one, other = oauth_notes.create_app().test_client(), oauth_notes.create_app().test_client()
    assert [token_attempt(one).status_code for _ in range(2)] == [400, 400]
    assert token_attempt(other).status_code == 400
    assert token_attempt(other).status_code == 429
    assert token_attempt(one).status_code == 429


def test_check_names_the_issuer_and_its_missing_secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """``flask mcp check`` names the built-in authorization server, and fails without
    ``SECRET_KEY`` (which seals its signing keys), even when ``MCP_STATE_KEY`` is set, or
    when the stored key was sealed with another one (another worker's)."""
    import jwt

    from flask_mcp.cli import cli

    monkeypatch.setenv("OAUTH_APP_BASE", BASE)
    app = oauth_notes.create_app()
    result = app.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 0, result.output
    assert f"ok    tokens are issued by this app's authorization server ({BASE})" in result.output
    assert "ok    no signing key is stored for this period yet" in result.output
    kid = jwt.get_unverified_header(tokens(app.test_client())[1]["access_token"])["kid"]
    result = app.test_cli_runner().invoke(cli, args=["check"])
    assert f"ok    the signing key {kid} unseals with this app's SECRET_KEY" in result.output
    app.config["SECRET_KEY"] = "another worker's secret"
    result = app.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 1, result.output
    assert f"FAIL  The signing key {kid} was sealed with another secret" in result.output
    monkeypatch.setenv("FLASK_SECRET_KEY", "null")  # from_prefixed_env: JSON null
    monkeypatch.setenv("FLASK_MCP_STATE_KEY", "k" * 32)
    app = oauth_notes.create_app()
    result = app.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 1, result.output
    assert "ok    2026-07-28 requestState is sealed with a key" in result.output
    assert "FAIL  no SECRET_KEY: the authorization server seals its signing keys" in result.output


def test_check_says_when_the_authorization_servers_storage_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness import free_port

    from flask_mcp.cli import cli

    monkeypatch.setenv("OAUTH_APP_BASE", BASE)
    monkeypatch.setenv("FLASK_MCP_OAUTH_STORAGE", f"redis://127.0.0.1:{free_port()}/0")
    app = oauth_notes.create_app()
    result = app.test_cli_runner().invoke(cli, args=["check"])
    assert result.exit_code == 1, result.output
    assert "FAIL  the authorization server's storage does not answer: " in result.output
    assert "check MCP_OAUTH_STORAGE" in result.output


@pytest.mark.parametrize("refused", ["scope", "resource", "client"])
def test_a_refused_refresh_leaves_the_refresh_token_usable(app: t.Any, refused: str) -> None:
    """A refresh refused for its scope, resource or client does not use the token up."""
    client = app.test_client()
    client_id, first = tokens(client)
    form = {"grant_type": "refresh_token", "client_id": client_id}
    wrong = {
        "scope": {"scope": "notes:read notes:write"},
        "resource": {"resource": "https://elsewhere.example/mcp"},
        "client": {"client_id": register(client)["client_id"]},
    }[refused]
    bad = client.post(
        "/oauth/token", data={**form, "refresh_token": first["refresh_token"], **wrong}
    )
    assert bad.status_code == 400 and "access_token" not in bad.json, bad.json
    retry = client.post("/oauth/token", data={**form, "refresh_token": first["refresh_token"]})
    assert retry.status_code == 200, retry.json
    assert call_tool(app.test_client(), retry.json["access_token"], "whoami").status_code == 200


def test_issued_tokens_stay_out_of_debug_logs(app: t.Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, Authlib's too, as basicConfig(DEBUG) does
    client = app.test_client()
    client_id, first = tokens(client)
    form = {"grant_type": "refresh_token", "client_id": client_id}
    second = client.post("/oauth/token", data={**form, "refresh_token": first["refresh_token"]})
    assert second.status_code == 200
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "Issue token" in logged  # the records are there, their secrets are not
    for issued in (first, second.json):
        for name in ("access_token", "refresh_token"):
            assert issued[name] not in logged, f"the {name} is in the log"


def test_a_token_check_its_storage_cannot_answer_is_503_not_500(
    app: t.Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP endpoint checks an issued token's family in the authorization server's
    storage: with that storage down it answered 500 "Internal error"; it answers 503 with
    ``Retry-After``, as for the backend's outage, and serves once the storage is back."""
    import redis

    client = app.test_client()
    _, token = tokens(client)
    server = oauth_notes.oauth.app_server(app)
    live = server.family_live

    def down(*args: t.Any) -> bool:
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379")

    monkeypatch.setattr(server, "family_live", down)
    refused = call_tool(app.test_client(), token["access_token"], "whoami")
    assert refused.status_code == 503, refused.get_data(as_text=True)
    assert refused.headers["Retry-After"] and "6379" not in refused.get_data(as_text=True)
    monkeypatch.setattr(server, "family_live", live)
    assert call_tool(app.test_client(), token["access_token"], "whoami").status_code == 200


def test_a_document_url_with_dot_segments_is_refused(
    tmp_path: t.Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Client ID Metadata Document draft (section 3), which the MCP spec makes a MUST:
    a ``client_id`` URL has no ``.`` or ``..`` path segment (it names its document
    once, the way it is written)."""
    host = DocumentHost(tmp_path, REDIRECT)
    monkeypatch.setenv("FLASK_MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("FLASK_MCP_OAUTH_CLIENT_METADATA_CA_BUNDLE", str(host.cert))
    pages = []
    try:
        app = oauth_notes.create_app()
        client = app.test_client()
        login(client)
        for segment in ("..", ".", "%2e%2E", "%2E"):
            url = host.url.replace("/oauth/", f"/oauth/x/{segment}/")
            host.document = {**host.document, "client_id": url}
            _, challenge = pkce()
            pages.append(
                client.get("/oauth/authorize?" + urlencode(authorize_params(url, challenge)))
            )
    finally:
        host.close()
    assert host.fetches == 0
    for page in pages:
        assert page.status_code == 400 and b'<code id="error">invalid_client</code>' in page.data
        assert b"dot segment" in page.data


def test_an_unsupported_response_type_says_what_is_supported(app: t.Any) -> None:
    """``response_type=token`` (the implicit grant) is refused with a description naming
    ``code``, on the redirect to the client and on the page alike; a type holding ``"`` or
    ``\\`` too (Authlib made it a 500)."""
    client = app.test_client()
    registered = register(client)
    _, challenge = pkce()
    params = authorize_params(registered["client_id"], challenge, response_type="token")
    redirected = client.get("/oauth/authorize?" + urlencode(params))
    assert redirected.status_code == 302
    query = parse_qs(urlsplit(redirected.location).query)
    assert query["error"] == ["unsupported_response_type"]
    description = query["error_description"][0]
    assert "'token'" in description and "response_type=code" in description
    unknown = {**params, "client_id": "mcp-nobody"}  # no client: no redirect, the page
    page = client.get("/oauth/authorize?" + urlencode(unknown))
    assert page.status_code == 400
    text = page.get_data(as_text=True)
    assert "unsupported_response_type" in text and "response_type=code" in text
    quoted = client.get("/oauth/authorize?" + urlencode({**params, "response_type": 'a"b\\'}))
    assert quoted.status_code == 302  # not a 500: the description is made printable
    assert "error=unsupported_response_type" in quoted.location


def test_racing_registrations_keep_to_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations at once past ``MCP_OAUTH_MAX_CLIENTS`` do not overshoot it: the check
    and the save are one step of the storage, not a count taken before the save."""
    monkeypatch.setenv("FLASK_MCP_OAUTH_REGISTRATION_RATE_LIMIT", "")
    monkeypatch.setenv("FLASK_MCP_OAUTH_MAX_CLIENTS", "3")
    app = oauth_notes.create_app()
    storage = oauth_notes.oauth.app_server(app).storage
    counted = storage.count_clients

    def slow_count() -> int:  # widens the window a count-then-save check leaves open
        found = counted()
        threading.Event().wait(0.3)
        return found

    monkeypatch.setattr(storage, "count_clients", slow_count)
    body = {"redirect_uris": [REDIRECT], "client_name": "Test client"}
    statuses: list[int] = []

    def attempt(address: str) -> None:
        response = app.test_client().post(
            "/oauth/register", json=body, environ_base={"REMOTE_ADDR": address}
        )
        statuses.append(response.status_code)

    threads = [threading.Thread(target=attempt, args=(f"10.0.1.{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] * 3 + [503] * 5
    assert counted() == 3
