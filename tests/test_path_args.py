"""``MCP_PATH`` with URL variables (``/t/<tenant>/mcp``): one endpoint per tenant.

The values reach handlers as ``request.view_args`` and ``ctx.path_args`` in both eras; a
session belongs to the path it was created under (its id under another tenant's path is
an unknown session, for POST, the GET stream and DELETE); a task is found only under its
tenant's path; the OAuth metadata is served per tenant. End to end on gunicorn with two
gevent workers sharing Redis, through the official ``mcp`` client; this module serves
its own app (``tests.test_path_args:app``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import typing as t
import uuid
from urllib.parse import parse_qs
from urllib.parse import urlencode
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from flask import Flask
from flask import request
from harness import GUNICORN_READY_ARGS
from harness import free_port
from harness import redis_env
from harness import start_server
from harness import wait_for_workers_ready
from jwt_keys import ISSUER
from jwt_keys import JWKSServer
from jwt_keys import Keys
from wire import headers_2026
from wire import meta

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import require_scopes
from flask_mcp.testing import MCPTestClient

MODES = ["legacy", "2026-07-28"]
TENANTS = ["acme", "globex"]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = "application/json, text/event-stream"

mcp = MCP(name="tenants", version="1.0")


@mcp.tool()
def whoami(ctx: Context) -> str:
    """Name the tenant of the endpoint called, as the view and the context see it."""
    return f"{request.view_args['tenant']} {ctx.path_args['tenant']}"


@mcp.tool()
def plain() -> str:
    """A handler without a Context: it runs in the view."""
    return str(request.view_args)


@mcp.tool()
def wipe(ctx: Context) -> str:
    """Confirm, then wipe the tenant's data: the confirmation belongs to one tenant."""
    schema = {"type": "object", "properties": {}}
    if ctx.elicit(f"Wipe {ctx.path_args['tenant']}?", schema, key="sure")["action"] != "accept":
        return "kept"
    return f"wiped {ctx.path_args['tenant']}"


@mcp.tool(task="optional")
def tenant_report(ctx: Context) -> str:
    """Run as a task: the task knows its tenant, in whichever worker runs it."""
    return f"report of {ctx.path_args['tenant']}"


@mcp.tool()
def purge() -> str:
    """Ask for a wider scope at run time (a step-up)."""
    require_scopes("tenants:admin")
    return "purged"


def create_app() -> Flask:
    app = Flask(__name__)
    app.config.update(SECRET_KEY="tenants", MCP_PATH="/t/<tenant>/mcp", MCP_TASK_IMMEDIATE_MS=0)
    app.config.from_prefixed_env()
    mcp.init_app(app)
    return app


app = create_app()


def create_secured_app() -> Flask:
    """The same server behind JWT authorization, set up by ``FLASK_MCP_AUTH_*`` variables."""
    secured = Flask(__name__)
    secured.config.update(SECRET_KEY="tenants", MCP_PATH="/t/<tenant>/mcp")
    secured.config.from_prefixed_env()
    mcp.init_app(secured)
    return secured


# -- in process ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_values_reach_handlers_in_both_eras(version: str) -> None:
    for tenant in TENANTS:
        with MCPTestClient(app, path=f"/t/{tenant}/mcp", protocol_version=version) as client:
            assert client.call_tool("whoami")["content"][0]["text"] == f"{tenant} {tenant}"
            assert client.call_tool("plain")["content"][0]["text"] == f"{{'tenant': '{tenant}'}}"


def test_request_state_belongs_to_its_tenant() -> None:
    client = app.test_client()

    def call_wipe(tenant: str, **more: t.Any) -> dict[str, t.Any]:
        params = {"name": "wipe", "arguments": {}, "_meta": meta(), **more}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        headers = headers_2026("tools/call", params)
        return t.cast(
            "dict[str, t.Any]", client.post(f"/t/{tenant}/mcp", json=message, headers=headers).json
        )

    state = call_wipe("acme")["result"]["requestState"]
    answers = {"sure": {"action": "accept", "content": {}}}
    replayed = call_wipe("globex", inputResponses=answers, requestState=state)
    assert replayed["error"]["code"] == -32602  # acme's confirmation does not wipe globex
    assert "integrity check failed" in replayed["error"]["message"]
    done = call_wipe("acme", inputResponses=answers, requestState=state)
    assert done["result"]["content"][0]["text"] == "wiped acme"


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_converters_keep_their_types_and_tasks_their_json(
    request_fixture: pytest.FixtureRequest, backend: str
) -> None:
    """``<uuid:...>`` and ``<int:...>``: the handler gets the converted values; a session or
    task record keeps their JSON form (a UUID as its string), also on Redis."""
    typed = Flask(__name__)
    typed.config["MCP_PATH"] = "/w/<uuid:workspace>/<int:shard>/mcp"
    if backend == "redis":
        url = request_fixture.getfixturevalue("redis_url")
        typed.config["MCP_BACKEND"] = f"{url}?prefix=path-args-{uuid.uuid4().hex}:"
    server = MCP(name="typed", version="1")

    @server.tool(task="optional")
    def where(ctx: Context) -> str:
        return repr(ctx.path_args)

    server.init_app(typed)
    workspace = uuid.UUID(int=5)
    with MCPTestClient(typed, path=f"/w/{workspace}/3/mcp") as client:
        assert client.call_tool("where")["content"][0]["text"] == (
            f"{{'workspace': {workspace!r}, 'shard': 3}}"
        )
        task = client.request("tools/call", {"name": "where", "arguments": {}, "task": {}})
        done = client.request("tasks/result", {"taskId": task["task"]["taskId"]})
        assert done["content"][0]["text"] == f"{{'workspace': '{workspace}', 'shard': 3}}"


def test_a_batch_reaches_handlers_with_its_tenant() -> None:
    """A 2025-03-26 batch under a tenant's path: each call sees the tenant; the session's id
    under another tenant's path is an unknown session, as for single requests."""
    client = app.test_client()
    headers = {"Accept": ACCEPT, "MCP-Protocol-Version": "2025-03-26"}
    init = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}}
    session = client.post("/t/acme/mcp", json=init, headers=headers).headers["Mcp-Session-Id"]
    headers["Mcp-Session-Id"] = session
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.post("/t/acme/mcp", json=initialized, headers=headers).status_code == 202
    batch = [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name}}
        for n, name in enumerate(("whoami", "plain"), 1)
    ]
    answered = client.post("/t/acme/mcp", json=batch, headers=headers)
    assert answered.status_code == 200, answered.text
    texts = [answer["result"]["content"][0]["text"] for answer in answered.json]
    assert texts == ["acme acme", "{'tenant': 'acme'}"]
    assert client.post("/t/globex/mcp", json=batch, headers=headers).status_code == 404


def test_oauth_metadata_is_served_per_tenant() -> None:
    secured = Flask(__name__)
    secured.config.update(
        MCP_PATH="/t/<tenant>/mcp",
        MCP_AUTH_RESOURCE="https://mcp.example.com/t/<tenant>/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["https://auth.example.com"],
    )
    server = MCP(name="secured", version="1", authorizer=lambda token, req: None)
    server.init_app(secured)
    client = secured.test_client()
    document = client.get("/.well-known/oauth-protected-resource/t/acme/mcp")
    assert document.status_code == 200
    assert document.json["resource"] == "https://mcp.example.com/t/acme/mcp"
    # no tenant at the root: no document there, rather than one naming ".../t/<tenant>/mcp"
    assert client.get("/.well-known/oauth-protected-resource").status_code == 404
    refused = client.post("/t/globex/mcp", json=INIT, headers={"Accept": ACCEPT})
    assert refused.status_code == 401
    assert (
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/t/globex/mcp"'
        in (refused.headers["WWW-Authenticate"])
    )


@pytest.mark.parametrize(
    ("config", "says"),
    [
        (  # listed by hand: acme's token would open globex's endpoint
            {"MCP_AUTH_JWT_AUDIENCE": ["https://x/t/acme/mcp", "https://x/t/globex/mcp"]},
            "every tenant's endpoint",
        ),
        ({"MCP_AUTH_RESOURCE": "https://x/mcp"}, "does not name <tenant>"),
        ({"MCP_AUTH_RESOURCE": "https://x/t/<team>/mcp"}, "not a URL variable"),
        ({"authorizer": "https://x/t/acme/mcp"}, r"The authorizer \(JWTAuthorizer\)"),
    ],
)
def test_authorization_that_mixes_tenants_is_refused(config: dict[str, t.Any], says: str) -> None:
    from flask_mcp.auth.jwt_authorizer import JWTAuthorizer

    secured = Flask(__name__)
    secured.config.update(
        MCP_PATH="/t/<tenant>/mcp",
        MCP_AUTH_RESOURCE="https://x/t/<tenant>/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["https://auth.example.com"],
    )
    audience = config.pop("authorizer", None)
    server = MCP(name="mixed", version="1")
    if audience is None:
        secured.config["MCP_AUTH_JWT_JWKS_URL"] = "https://auth.example.com/jwks.json"
    else:
        server.authorizer(JWTAuthorizer("https://auth.example.com/jwks.json", audience=audience))
    secured.config.update(config)
    with pytest.raises(ValueError, match=says):
        server.init_app(secured)
    secured.config["MCP_AUTH_RESOURCE"] = "https://x/t/<tenant>/mcp"
    secured.config.pop("MCP_AUTH_JWT_AUDIENCE", None)
    if audience is None:  # the placeholders in the audience too: one per tenant, accepted
        secured.config["MCP_AUTH_JWT_AUDIENCE"] = ["https://x/t/<tenant>/mcp"]
        MCP(name="per-tenant", version="1").init_app(secured)


# -- end to end: gunicorn, two workers on Redis --------------------------------------------------


@pytest.fixture
def request_fixture(request: pytest.FixtureRequest) -> pytest.FixtureRequest:
    return request


@pytest.fixture(scope="module")
def server(redis_url: str) -> t.Iterator[t.Any]:
    with start_server(
        "tests.test_path_args:app",
        "gevent",
        workers=2,
        env=redis_env(redis_url),
        extra_args=GUNICORN_READY_ARGS,
    ) as srv:
        wait_for_workers_ready(srv, 2)
        yield srv


def endpoint(server: t.Any, tenant: str) -> str:
    return f"http://127.0.0.1:{server.port}/t/{tenant}/mcp"


@pytest.mark.e2e
@pytest.mark.redis
@pytest.mark.parametrize("mode", MODES)
def test_official_client_per_tenant_with_tasks(server: t.Any, mode: str) -> None:
    import mcp_types as types
    from mcp import Client
    from mcp import MCPError

    from flask_mcp.client import TasksExtension
    from flask_mcp.client import call_tool_as_task
    from flask_mcp.client import get_task
    from flask_mcp.client import task_result

    async def main() -> None:
        acme = Client(endpoint(server, "acme"), mode=mode, extensions=[TasksExtension()])
        globex = Client(endpoint(server, "globex"), mode=mode, extensions=[TasksExtension()])
        async with acme, globex:
            for tenant, client in (("acme", acme), ("globex", globex)):
                result = await client.call_tool("whoami", {})
                block = result.content[0]
                assert isinstance(block, types.TextContent)
                assert block.text == f"{tenant} {tenant}"
            task = await call_tool_as_task(acme, "tenant_report", {})
            done = await task_result(acme, task, timeout=30)
            block = done.content[0]
            assert isinstance(block, types.TextContent) and block.text == "report of acme"
            with pytest.raises(MCPError) as unknown:  # the task belongs to acme's path
                await get_task(globex, task.task_id)
            assert unknown.value.error.code == -32602

    anyio.run(main)


@pytest.mark.e2e
@pytest.mark.redis
def test_a_session_belongs_to_its_path(server: t.Any) -> None:
    with httpx.Client(timeout=10) as http:
        opened = http.post(endpoint(server, "acme"), json=INIT, headers={"Accept": ACCEPT})
        assert opened.status_code == 200
        session = opened.headers["Mcp-Session-Id"]
        headers = {
            "Accept": ACCEPT,
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": "2025-11-25",
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(endpoint(server, "acme"), json=note, headers=headers).status_code == 202
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        for _ in range(4):  # both workers: the session's path is in Redis
            assert (
                http.post(endpoint(server, "acme"), json=ping, headers=headers).status_code == 200
            )
            other = http.post(endpoint(server, "globex"), json=ping, headers=headers)
            assert other.status_code == 404
            assert "Session not found" in other.text
        stream = {**headers, "Accept": "text/event-stream"}
        assert http.get(endpoint(server, "globex"), headers=stream).status_code == 404
        with http.stream("GET", endpoint(server, "acme"), headers=stream) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
        assert http.delete(endpoint(server, "globex"), headers=headers).status_code == 404
        assert http.delete(endpoint(server, "acme"), headers=headers).status_code in (200, 204)


# -- end to end: authorization per tenant, on gunicorn -------------------------------------------


class Secured(t.NamedTuple):
    base: str
    keys: Keys


@pytest.fixture(scope="module")
def secured() -> t.Iterator[Secured]:
    """``create_secured_app`` on gunicorn: ``MCP_AUTH_RESOURCE`` names the tenant's endpoint."""
    keys = Keys("tenants")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with JWKSServer(keys) as jwks:
        env = {
            "FLASK_MCP_AUTH_RESOURCE": f"{base}/t/<tenant>/mcp",
            "FLASK_MCP_AUTH_AUTHORIZATION_SERVERS": json.dumps([ISSUER]),
            "FLASK_MCP_AUTH_JWT_JWKS_URL": jwks.url,
        }
        with start_server("tests.test_path_args:create_secured_app()", "gthread", port=port,
                          env=env):  # fmt: skip
            yield Secured(base, keys)


def bearer(token: str) -> dict[str, str]:
    return {"Accept": ACCEPT, "Authorization": f"Bearer {token}"}


@pytest.mark.e2e
def test_a_tenant_token_is_accepted_at_its_endpoint_only(secured: Secured) -> None:
    """The JWT's audience is the tenant's own endpoint: accepted there (also from the verified
    token cache), refused at another tenant's, and a token for the literal placeholder URL
    works nowhere."""
    acme = secured.keys.mint(audience=f"{secured.base}/t/acme/mcp")
    with httpx.Client(timeout=10) as http:
        for _ in range(2):
            opened = http.post(f"{secured.base}/t/acme/mcp", json=INIT, headers=bearer(acme))
            assert opened.status_code == 200, opened.text
            refused = http.post(f"{secured.base}/t/globex/mcp", json=INIT, headers=bearer(acme))
            assert refused.status_code == 401
            challenge = refused.headers["WWW-Authenticate"]
            assert 'error="invalid_token"' in challenge
            assert "another resource" in challenge
            assert (
                f'resource_metadata="{secured.base}/.well-known/oauth-protected-resource/t/globex/mcp"'
                in challenge
            )
        params = {"name": "purge", "arguments": {}, "_meta": meta()}
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        headers = {**headers_2026("tools/call", params), "Authorization": f"Bearer {acme}"}
        step_up = http.post(f"{secured.base}/t/acme/mcp", json=body, headers=headers)
        assert step_up.status_code == 403  # require_scopes in the handler: acme's metadata
        assert (
            f'resource_metadata="{secured.base}/.well-known/oauth-protected-resource/t/acme/mcp"'
            in step_up.headers["WWW-Authenticate"]
        )
        literal = secured.keys.mint(audience=f"{secured.base}/t/<tenant>/mcp")
        for tenant in TENANTS:
            answer = http.post(f"{secured.base}/t/{tenant}/mcp", json=INIT, headers=bearer(literal))
            assert answer.status_code == 401


REDIRECT = "http://127.0.0.1:9999/callback"


@pytest.fixture(scope="module")
def notes() -> t.Iterator[str]:
    """``tests/_apps/oauth_notes.py`` (the built-in authorization server) on gunicorn, with
    one endpoint and one resource per tenant."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "OAUTH_APP_BASE": base,
        "FLASK_MCP_PATH": "/t/<tenant>/mcp",
        "FLASK_MCP_AUTH_RESOURCE": f"{base}/t/<tenant>/mcp",
    }
    with start_server("_apps.oauth_notes:app", "gthread", port=port, env=env):
        yield base


def call_whoami(http: httpx.Client, url: str, token: str) -> httpx.Response:
    params = {"name": "whoami", "arguments": {}, "_meta": meta()}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {**headers_2026("tools/call", params), "Authorization": f"Bearer {token}"}
    return http.post(url, json=body, headers=headers)


@pytest.mark.e2e
def test_the_built_in_authorization_server_issues_tokens_per_tenant(notes: str) -> None:
    """``resource=<acme's endpoint>`` gets a token for acme's endpoint (and its refresh and
    revocation work); globex's endpoint refuses it, and a request naming no tenant is refused."""
    acme, globex = f"{notes}/t/acme/mcp", f"{notes}/t/globex/mcp"
    with httpx.Client(base_url=notes, timeout=10) as http:
        registered = http.post("/oauth/register", json={"redirect_uris": [REDIRECT]})
        client_id = registered.json()["client_id"]
        assert http.post("/login", data={"username": "ada", "password": "pw-ada"}).is_redirect
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
            "code_challenge_method": "S256",
            "state": "st",
            "resource": acme,
        }
        page = http.get("/oauth/authorize?" + urlencode(params))
        assert page.status_code == 200, page.headers.get("location", page.text)
        assert acme in page.text  # the consent page names the tenant's endpoint
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert csrf is not None
        allowed = http.post(
            "/oauth/authorize?" + urlencode(params),
            data={"csrf_token": csrf[1], "decision": "allow"},
        )
        code = parse_qs(urlsplit(allowed.headers["location"]).query)["code"][0]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                "client_id": client_id, "code_verifier": verifier, "resource": acme}  # fmt: skip
        issued = http.post("/oauth/token", data=form)
        assert issued.status_code == 200, issued.text
        token = issued.json()
        assert call_whoami(http, acme, token["access_token"]).status_code == 200
        assert call_whoami(http, globex, token["access_token"]).status_code == 401

        refresh = {"grant_type": "refresh_token", "client_id": client_id,
                   "refresh_token": token["refresh_token"]}  # fmt: skip
        other = http.post("/oauth/token", data={**refresh, "resource": globex})
        assert other.status_code == 400 and other.json()["error"] == "invalid_target"
        refreshed = http.post("/oauth/token", data={**refresh, "resource": acme})
        assert refreshed.status_code == 200, refreshed.text
        access = refreshed.json()["access_token"]
        assert call_whoami(http, acme, access).status_code == 200
        assert call_whoami(http, globex, access).status_code == 401

        revoked = http.post("/oauth/revoke", data={"token": access, "client_id": client_id})
        assert revoked.status_code == 200
        assert call_whoami(http, acme, access).status_code == 401

        # ada's consent to acme's endpoint is none to globex's: she is asked again
        again = http.get("/oauth/authorize?" + urlencode({**params, "resource": globex}))
        assert again.status_code == 200, again.headers.get("location")
        assert globex in again.text and 'name="csrf_token"' in again.text

        unnamed = {name: value for name, value in params.items() if name != "resource"}
        no_tenant = http.get("/oauth/authorize?" + urlencode(unnamed))
        assert parse_qs(urlsplit(no_tenant.headers["location"]).query)["error"] == [
            "invalid_target"
        ]
