"""Authorization against a real gunicorn: challenges, scopes, sessions and the official client.

The server is ``examples.oauth:create_app()`` configured through ``FLASK_MCP_AUTH_*``
variables to trust a fake authorization server run by the test on 127.0.0.1: it publishes
RFC 8414 metadata and a JWKS, and issues RS256 tokens with the ``client_credentials`` grant.
Tokens are also minted directly in the test.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
import typing as t
import urllib.parse

import anyio
import httpx
import httpx2
import pytest
from harness import free_port
from harness import start_server
from jwt_keys import Keys
from jwt_keys import tampered
from jwt_keys import unsigned
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp.client.auth.utils import extract_resource_metadata_from_www_auth
from mcp.client.auth.utils import extract_scope_from_www_auth
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import ProtectedResourceMetadata
from token_storage import MemoryTokenStorage
from werkzeug.datastructures import WWWAuthenticate
from wire import ACCEPT
from wire import text_of

pytestmark = pytest.mark.e2e

CLIENT_ID, CLIENT_SECRET = "test-client", "test-secret"


class AuthorizationServer:
    """A fake OAuth authorization server: RFC 8414 metadata, JWKS and a token endpoint."""

    def __init__(self) -> None:
        self.keys = Keys("as-key")
        self.token_requests: list[dict[str, str]] = []
        #: Set: the JWKS is answered at once; clear: a fetch of it waits until it is set.
        self.jwks_open = threading.Event()
        self.jwks_open.set()
        #: Set once a fetch of the JWKS arrived.
        self.jwks_asked = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _send(self, status: int, body: dict[str, t.Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if self.path == "/.well-known/oauth-authorization-server":
                    self._send(200, outer.metadata())
                elif self.path == "/jwks.json":
                    outer.jwks_asked.set()
                    outer.jwks_open.wait(60)
                    self._send(200, {"keys": [outer.keys.jwk()]})
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
                if self.path != "/token" or self.headers.get("Authorization") != f"Basic {basic}":
                    self._send(401, {"error": "invalid_client"})
                    return
                outer.token_requests.append(form)
                scope = form.get("scope", "")
                token = outer.keys.mint(audience=form["resource"], issuer=outer.issuer,
                                        subject=CLIENT_ID, scope=scope)  # fmt: skip
                body = {"access_token": token, "token_type": "Bearer", "expires_in": 300}
                self._send(200, {**body, "scope": scope})

            def log_message(self, *args: t.Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def metadata(self) -> dict[str, t.Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks.json",
            "response_types_supported": ["code"],
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
        }

    def mint(self, resource: str, scope: str = "", **kwargs: t.Any) -> str:
        return self.keys.mint(audience=resource, issuer=self.issuer, scope=scope, **kwargs)

    def __enter__(self) -> AuthorizationServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Deployment(t.NamedTuple):
    url: str
    metadata_url: str
    auth: AuthorizationServer
    server: t.Any

    def token(self, scope: str = "", **kwargs: t.Any) -> str:
        return self.auth.mint(self.url, scope, **kwargs)


@pytest.fixture(scope="module")
def authorization_server() -> t.Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        yield server


@pytest.fixture(params=["gevent", "gthread"], scope="module")
def deployment(
    request: pytest.FixtureRequest, authorization_server: AuthorizationServer
) -> t.Iterator[Deployment]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {
        "FLASK_MCP_AUTH_RESOURCE": url,
        "FLASK_MCP_AUTH_AUTHORIZATION_SERVERS": json.dumps([authorization_server.issuer]),
        "FLASK_MCP_AUTH_JWT_JWKS_URL": f"{authorization_server.issuer}/jwks.json",
    }
    with start_server("examples.oauth:create_app()", request.param, port=port, env=env) as srv:
        assert srv.url == url
        metadata_url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        yield Deployment(url, metadata_url, authorization_server, srv)


def post(
    url: str, body: dict[str, t.Any], token: str | None = None, **headers: str
) -> httpx.Response:
    headers = {"Accept": ACCEPT, **headers}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(url, json=body, headers=headers, timeout=30)


def rpc(method: str, params: dict[str, t.Any] | None = None, id: int = 1) -> dict[str, t.Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


def initialize(url: str, token: str) -> str:
    init = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "e2e", "version": "1"}})  # fmt: skip
    response = post(url, init, token)
    assert response.status_code == 200, response.text
    session = response.headers["Mcp-Session-Id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(url, note, token, **session_headers(session)).status_code == 202
    return session


def session_headers(session: str) -> dict[str, str]:
    return {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}


def result_of(response: httpx.Response) -> dict[str, t.Any]:
    """The JSON-RPC result of a JSON or SSE response."""
    if response.headers["content-type"].startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in response.text.splitlines()
                    if line.startswith("data:") and line[5:].strip()]  # fmt: skip
        message = next(m for m in messages if "result" in m or "error" in m)
    else:
        message = response.json()
    assert "result" in message, message
    return t.cast("dict[str, t.Any]", message["result"])


def challenge(response: httpx.Response) -> WWWAuthenticate:
    parsed = WWWAuthenticate.from_header(response.headers["WWW-Authenticate"])
    assert parsed is not None and parsed.type == "bearer"
    return parsed


# -- the metadata document and the challenges --------------------------------------------------


def test_metadata_document(deployment: Deployment) -> None:
    for url in (deployment.metadata_url, deployment.url.replace("/mcp", "") +
                "/.well-known/oauth-protected-resource"):  # fmt: skip
        response = httpx.get(url)
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
        document = response.json()
        assert document["resource"] == deployment.url
        assert document["authorization_servers"] == [deployment.auth.issuer]
        ProtectedResourceMetadata.model_validate(document)


@pytest.mark.parametrize(
    ("make_token", "status", "error", "description"),
    [
        (lambda d: None, 401, None, None),
        (lambda d: d.token("notes:read", expires_in=-300), 401, "invalid_token", "expired"),
        (
            lambda d: d.auth.keys.mint(audience="https://other.example/mcp", issuer=d.auth.issuer),
            401,
            "invalid_token",
            "another resource (aud)",
        ),
        (
            lambda d: d.auth.keys.mint(audience=d.url, issuer="https://evil.example"),
            401,
            "invalid_token",
            "unexpected issuer (iss)",
        ),
        (lambda d: tampered(d.token("notes:read")), 401, "invalid_token", "signature"),
        (lambda d: unsigned(d.token("notes:read")), 401, "invalid_token", "algorithm (alg)"),
        (
            lambda d: Keys("rogue").mint(audience=d.url, issuer=d.auth.issuer),
            401,
            "invalid_token",
            "unknown key (kid)",
        ),
    ],
    ids=["missing", "expired", "wrong-aud", "wrong-iss", "tampered", "alg-none", "rogue-key"],
)
def test_refused_tokens(
    deployment: Deployment,
    make_token: t.Callable[[Deployment], str | None],
    status: int,
    error: str | None,
    description: str | None,
) -> None:
    token = make_token(deployment)
    response = post(deployment.url, rpc("ping"), token)
    assert response.status_code == status
    params = challenge(response)
    assert params["resource_metadata"] == deployment.metadata_url
    assert params["scope"] == "notes:read"
    assert params.get("error") == error
    if description is not None:
        assert description in params["error_description"]
    body = response.json()
    assert body["error"]["message"].startswith("Unauthorized")
    if token is not None:
        assert token not in response.text


def test_under_scoped_tool_call_gets_403(deployment: Deployment) -> None:
    token = deployment.token("notes:read", subject="reader")
    session = initialize(deployment.url, token)
    call = rpc("tools/call", {"name": "add_note", "arguments": {"name": "a", "text": "b"}}, id=5)
    response = post(deployment.url, call, token, **session_headers(session))
    assert response.status_code == 403
    assert response.headers["content-type"].startswith("application/json")
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "notes:write"
    assert params["resource_metadata"] == deployment.metadata_url
    assert response.json()["id"] == 5
    listed = post(deployment.url, rpc("tools/call", {"name": "list_notes"}), token,
                  **session_headers(session))  # fmt: skip
    assert result_of(listed)["structuredContent"] == {"result": []}  # the handler never ran
    tools = result_of(post(deployment.url, rpc("tools/list"), token, **session_headers(session)))
    assert [tool["name"] for tool in tools["tools"]] == ["whoami", "list_notes"]  # hidden


def test_valid_token_calls_scoped_tool(deployment: Deployment) -> None:
    token = deployment.token("notes:read notes:write", subject="writer")
    session = initialize(deployment.url, token)
    call = rpc("tools/call", {"name": "add_note", "arguments": {"name": "todo", "text": "milk"}})
    response = post(deployment.url, call, token, **session_headers(session))
    assert response.status_code == 200
    assert result_of(response)["content"][0]["text"] == "Saved 'todo'."
    listed = post(deployment.url, rpc("tools/call", {"name": "list_notes"}), token,
                  **session_headers(session))  # fmt: skip
    assert result_of(listed)["structuredContent"] == {"result": ["todo"]}


def test_session_is_bound_to_the_principal(deployment: Deployment) -> None:
    alice = deployment.token("notes:read", subject="alice")
    session = initialize(deployment.url, alice)
    ping = rpc("ping")
    assert post(deployment.url, ping, alice, **session_headers(session)).status_code == 200
    mallory = deployment.token("notes:read", subject="mallory")
    response = post(deployment.url, ping, mallory, **session_headers(session))
    assert response.status_code == 404
    get = httpx.get(deployment.url, headers={"Accept": "text/event-stream",
                                             "Authorization": f"Bearer {mallory}",
                                             **session_headers(session)})  # fmt: skip
    assert get.status_code == 404
    refreshed = deployment.token("notes:read", subject="alice", jti="second")
    assert post(deployment.url, ping, refreshed, **session_headers(session)).status_code == 200


def test_stateless_requests(deployment: Deployment) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    body = rpc("tools/call", {"name": "add_note", "arguments": {"name": "x", "text": "y"},
                              "_meta": meta})  # fmt: skip
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": "add_note"}  # fmt: skip
    missing = post(deployment.url, body, **headers)
    assert missing.status_code == 401
    assert challenge(missing)["resource_metadata"] == deployment.metadata_url
    writer = post(deployment.url, body, deployment.token("notes:write"), **headers)
    assert writer.status_code == 200
    reader = post(deployment.url, body, deployment.token("notes:read"), **headers)
    assert reader.status_code == 403
    params = challenge(reader)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "notes:write"


# -- the official MCP Python client ----------------------------------------------------------


def test_official_client_with_a_bearer_token(deployment: Deployment) -> None:
    token = deployment.token("notes:read notes:write", subject="sdk-user")

    async def main() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with http, Client(streamable_http_client(deployment.url, http_client=http),
                                mode="legacy") as client:  # fmt: skip
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["whoami", "list_notes", "add_note"]
            assert text_of(await client.call_tool("add_note", {"name": "n", "text": "t"})) == (
                "Saved 'n'."
            )
            who = await client.call_tool("whoami", {})
            assert who.structured_content == {
                "principal": f"{deployment.auth.issuer}|sdk-user",
                "scopes": ["notes:read", "notes:write"],
            }

    anyio.run(main)


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)  # an ExceptionGroup (3.11+, or the backport)
    return [leaf for sub in inner for leaf in leaves(sub)] if inner else [exc]


def test_official_client_without_a_token_finds_the_metadata(deployment: Deployment) -> None:
    async def main() -> None:
        with pytest.raises(Exception) as info:
            async with Client(deployment.url, mode="legacy") as client:
                await client.list_tools()
        assert "Unauthorized" in " ".join(str(e) for e in leaves(info.value))
        async with httpx2.AsyncClient() as http:
            response = await http.post(deployment.url, json=rpc("ping"), headers={"Accept": ACCEPT})
            assert response.status_code == 401
            found = extract_resource_metadata_from_www_auth(response)
            assert found == deployment.metadata_url
            assert extract_scope_from_www_auth(response) == "notes:read"
            urls = build_protected_resource_metadata_discovery_urls(found, deployment.url)
            document = (await http.get(urls[0])).json()
            metadata = ProtectedResourceMetadata.model_validate(document)
            assert str(metadata.resource) == deployment.url
            assert [str(u).rstrip("/") for u in metadata.authorization_servers] == [
                deployment.auth.issuer
            ]
            # The fallback the client builds without a challenge is served too.
            fallback = build_protected_resource_metadata_discovery_urls(None, deployment.url)
            assert (await http.get(fallback[0])).json() == document

    anyio.run(main)


def test_official_client_oauth_flow_with_step_up(deployment: Deployment) -> None:
    """The SDK discovers everything from the 401, gets a token, and steps up on a 403."""
    issued = deployment.auth.token_requests
    issued.clear()
    provider = ClientCredentialsOAuthProvider(
        server_url=deployment.url, storage=MemoryTokenStorage(), client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET, issuer=deployment.auth.issuer,
    )  # fmt: skip

    async def main() -> None:
        http = httpx2.AsyncClient(auth=provider, timeout=30)
        async with http, Client(streamable_http_client(deployment.url, http_client=http),
                                mode="legacy") as client:  # fmt: skip
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["whoami", "list_notes"]
            result = await client.call_tool("add_note", {"name": "up", "text": "stepped"})
            assert text_of(result) == "Saved 'up'."

    anyio.run(main)
    assert issued[0]["resource"] == deployment.url
    assert issued[0]["scope"] == "notes:read"  # from the 401 challenge
    assert "notes:write" in issued[-1]["scope"].split()  # from the 403 challenge


def test_refusals_are_logged_without_the_token(deployment: Deployment) -> None:
    token = deployment.token("notes:read", expires_in=-300, jti="never-logged")
    assert post(deployment.url, rpc("ping"), token).status_code == 401
    deadline = time.monotonic() + 5
    while "the token expired" not in deployment.server.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = deployment.server.log()
    assert "MCP auth refused (invalid_token): the token expired" in log
    assert token not in log and token.split(".")[1] not in log


# -- the Redis backend and the example's development issuer ----------------------------------


@pytest.mark.redis
def test_redis_backend_with_two_workers(
    redis_url: str, authorization_server: AuthorizationServer
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {
        "FLASK_MCP_BACKEND": redis_url,
        "FLASK_MCP_AUTH_RESOURCE": url,
        "FLASK_MCP_AUTH_AUTHORIZATION_SERVERS": json.dumps([authorization_server.issuer]),
        "FLASK_MCP_AUTH_JWT_JWKS_URL": f"{authorization_server.issuer}/jwks.json",
    }
    with start_server("examples.oauth:create_app()", "gevent", workers=2, port=port, env=env):
        alice = authorization_server.mint(url, "notes:read", subject="alice")
        mallory = authorization_server.mint(url, "notes:read notes:write", subject="mallory")
        session = initialize(url, alice)
        headers = session_headers(session)
        for _ in range(6):  # whichever worker answers
            assert post(url, rpc("ping"), alice, **headers).status_code == 200
            assert post(url, rpc("ping"), mallory, **headers).status_code == 404
        call = rpc("tools/call", {"name": "add_note", "arguments": {"name": "a", "text": "b"}})
        refused = post(url, call, alice, **headers)
        assert refused.status_code == 403
        assert challenge(refused)["scope"] == "notes:write"
        writer = authorization_server.mint(url, "notes:write", subject="alice")
        assert result_of(post(url, call, writer, **headers))["content"][0]["text"] == "Saved 'a'."


def test_a_stalled_jwks_fetch_holds_a_bounded_number_of_requests() -> None:
    """While the JWKS fetch stalls, one request waits for it (``max_waiting=1``) and any
    other is answered at once (503 ``temporarily_unavailable``: no keys yet): every
    request with a token waited for the fetch in flight, each holding a server thread
    until the fetch's timeout (a minute here), so a stalled issuer held them all."""
    with AuthorizationServer() as issuer:
        issuer.jwks_open.clear()
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        env = {"JWKS_URL": f"{issuer.issuer}/jwks.json", "ISSUER": issuer.issuer,
               "RESOURCE": url}  # fmt: skip
        answers: list[httpx.Response] = []
        answered = threading.Condition()

        init = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "e2e", "version": "1"}})  # fmt: skip

        def call() -> None:
            response = post(url, init, issuer.mint(url))
            with answered:
                answers.append(response)
                answered.notify_all()

        with start_server("tests._apps.jwks_stall:create_app()", "gthread", port=port, env=env):
            threads = [threading.Thread(target=call, daemon=True) for _ in range(3)]
            threads[0].start()  # it fetches the JWKS
            assert issuer.jwks_asked.wait(20)
            for thread in threads[1:]:  # one waits for that fetch, the other cannot
                thread.start()
            with answered:  # a bound on the wait, not a speed: the fetch is held
                assert answered.wait_for(lambda: answers, timeout=20), "every request waited"
            assert len(answers) == 1
            refused = answers[0]
            assert refused.status_code == 503
            assert challenge(refused)["error"] == "temporarily_unavailable"
            issuer.jwks_open.set()
            for thread in threads:
                thread.join(30)
            assert sorted(response.status_code for response in answers) == [200, 200, 503]


def test_example_development_issuer() -> None:
    """``examples/oauth.py`` without configuration: the whole flow against its toy issuer."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    provider = ClientCredentialsOAuthProvider(
        server_url=f"{base}/mcp", storage=MemoryTokenStorage(), client_id="demo-client",
        client_secret="demo-secret", issuer=f"{base}/dev-issuer",
    )  # fmt: skip

    async def main() -> None:
        http = httpx2.AsyncClient(auth=provider, timeout=30)
        async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http),
                                mode="legacy") as client:  # fmt: skip
            assert text_of(await client.call_tool("add_note", {"name": "x", "text": "y"})) == (
                "Saved 'x'."
            )
            listed = await client.call_tool("list_notes", {})
            assert listed.structured_content == {"result": ["x"]}

    env = {"EXAMPLE_BASE_URL": base}
    with start_server("examples.oauth:create_app()", "gevent", port=port, env=env):
        anyio.run(main)
        assert httpx.get(f"{base}/me").json() == {"principal": None}
