"""MCP inside apps that are not Flask (``DispatcherMiddleware``), and CORS for browser clients."""

from __future__ import annotations

import http.client
import typing as t
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from flask import Flask
from flask_cors import CORS
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from wire import ACCEPT
from wire import Reply
from wire import initialize_request
from wire import wsgi_call as call

from flask_mcp import MCP
from tests._apps import mounted

ISSUER = "https://auth.example.com"
APP_ORIGIN = "https://app.example.com"
#: What a browser client sends besides the CORS-safelisted headers (Mcp-Param-* per tool).
REQUEST_HEADERS = [
    "Content-Type", "Accept", "Authorization", "Mcp-Session-Id", "MCP-Protocol-Version",
    "Last-Event-ID", "Mcp-Method", "Mcp-Name", r"(?i)Mcp-Param-.+",
]  # fmt: skip
#: What it must be able to read: the session id, the auth challenge, the back-off.
RESPONSE_HEADERS = ["Mcp-Session-Id", "WWW-Authenticate", "Retry-After"]


def mcp_post(app: t.Any, body: t.Any, session: str | None = None, **headers: str) -> Reply:
    sent = {"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    if session is not None:
        sent["Mcp-Session-Id"] = session
    return call(app, "POST", body, path="/api/mcp", headers=sent)


def open_session(app: t.Any) -> str:
    reply = mcp_post(app, initialize_request())
    assert reply.status == 200, reply.body
    session = reply.headers["Mcp-Session-Id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp_post(app, note, session).status == 202
    return session


@pytest.fixture
def flask_app(mcp_server: MCP) -> Flask:
    app = Flask("inner")
    app.config.update(MCP_SSE_MAX_STREAM_SECONDS=0.2)  # wsgiref serves one request at a time
    mcp_server.init_app(app)
    return app


def test_view_tools_run_under_the_prefix() -> None:
    """A view tool's request keeps ``SCRIPT_NAME``: its ``url_for`` and redirects are below it."""
    from flask import url_for
    from flask_login import LoginManager
    from flask_login import login_required

    from flask_mcp.contrib.view_tools import ViewTools

    app = Flask("inner")
    app.config.update(SECRET_KEY="test", USE_SESSION_FOR_NEXT=True)  # no next= in the redirect
    login = LoginManager(app)
    login.login_view = "enter"
    login.user_loader(lambda user_id: None)

    @app.get("/where")
    def where() -> t.Any:
        """Say where this view lives."""
        return {"url": url_for("where", _external=True)}

    @app.get("/enter")
    def enter() -> str:
        return "sign in here"

    @app.get("/orders")
    @login_required
    def orders() -> t.Any:
        """The user's orders."""
        return []

    server = MCP(name="views", version="1")
    views = ViewTools(server)
    views.add_view("where")
    views.add_view("orders")
    server.init_app(app)
    views.init_app(app)
    site = mounted.mount(mounted.plain_main, app)
    session = open_session(site)

    def call_tool(name: str) -> dict[str, t.Any]:
        params = {"name": name, "arguments": {}}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        reply = mcp_post(site, message, session)
        assert reply.status == 200, reply.body
        return t.cast("dict[str, t.Any]", reply.json()["result"])

    assert call_tool("where")["structuredContent"] == {"url": "http://localhost/api/where"}
    refused = call_tool("orders")
    assert refused["isError"] is True
    text = refused["content"][0]["text"]
    assert text.startswith("The view redirected to /api/enter (HTTP 302"), text
    assert "this tool needs a login" in text


# -- DispatcherMiddleware: a plain WSGI app and Django --------------------------------------


@pytest.mark.parametrize("main", [mounted.plain_main, mounted.django.app], ids=["plain", "django"])
def test_mcp_under_a_prefix(flask_app: Flask, mcp_server: MCP, main: t.Any) -> None:
    """Every request runs through ``wsgiref.validate`` with ``SCRIPT_NAME=/api``."""
    site = mounted.mount(main, flask_app)
    assert call(site, "GET", path="/hello/").status == 200  # the main app keeps its URLs

    session = open_session(site)
    params = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}
    reply = mcp_post(
        site, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, session
    )
    assert reply.headers["Content-Type"].startswith("text/event-stream")
    assert [e.get("method") for e in reply.events()][0] == "notifications/progress"

    mcp_server.broadcast("notifications/message", {"level": "info", "data": "to the GET stream"})
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session}
    reply = call(site, "GET", path="/api/mcp", headers=headers)
    assert reply.status == 200 and reply.events()[0]["params"]["data"] == "to the GET stream"

    reply = call(site, "DELETE", path="/api/mcp", headers={"Mcp-Session-Id": session})
    assert reply.status == 204
    assert call(site, "POST", b"{}", path="/mcp").body != reply.body  # /mcp is the main app's


def test_auth_metadata_of_a_prefixed_endpoint(mcp_server: MCP) -> None:
    mcp_server.authorizer(
        lambda token, request: {"iss": ISSUER, "sub": "ann"} if token == "ok" else None
    )
    app = Flask("secured")
    app.config.update(
        MCP_AUTH_RESOURCE="http://localhost/api/mcp", MCP_AUTH_AUTHORIZATION_SERVERS=[ISSUER]
    )
    mcp_server.init_app(app)
    site = mounted.mount(mounted.plain_main, app)

    reply = mcp_post(site, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert reply.status == 401
    metadata = "http://localhost/.well-known/oauth-protected-resource/api/mcp"
    assert f'resource_metadata="{metadata}"' in reply.headers["WWW-Authenticate"]
    for where in (metadata, "http://localhost/.well-known/oauth-protected-resource"):
        document = call(site, "GET", path=where.removeprefix("http://localhost"))
        assert document.status == 200
        assert document.json()["resource"] == "http://localhost/api/mcp"
        assert document.json()["authorization_servers"] == [ISSUER]
    assert mcp_post(site, initialize_request(), Authorization="Bearer ok").status == 200


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # handshake-era calls in mcp 2.3
@pytest.mark.parametrize(
    ("site", "worker"), [("django", "gthread"), ("django", "gevent"), ("plain", "gthread")]
)
def test_official_client_through_the_mount(serve: t.Any, site: str, worker: str) -> None:
    server = serve(f"tests._apps.mounted:{site}", worker)
    url = f"{server.base_url}/api/mcp"

    async def main() -> None:
        progress: list[float] = []
        heard = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        async def on_message(message: t.Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                heard.set()

        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            await session.initialize()
            result = await session.call_tool("count", {"to": 3}, progress_callback=on_progress)
            assert result.structured_content == {"result": 3}
            assert progress == [1, 2, 3]
            await session.call_tool("add_tool", {"name": "late"})
            with anyio.fail_after(20):
                await heard.wait()  # on the GET stream, through SCRIPT_NAME=/api

    anyio.run(main)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/hello/")
    response = conn.getresponse()
    assert response.status == 200 and response.read().endswith(b"at /hello/")
    conn.close()


# -- CORS with flask-cors -------------------------------------------------------------------


def cors_app(mcp_server: MCP, cors_origins: list[str], mcp_origins: list[str]) -> Flask:
    app = Flask("browser")
    app.config.update(MCP_ALLOWED_ORIGINS=mcp_origins)
    mcp_server.init_app(app)
    CORS(
        app,
        resources={"/mcp": {}},
        origins=cors_origins,
        methods=["GET", "POST", "DELETE"],
        allow_headers=REQUEST_HEADERS,
        expose_headers=RESPONSE_HEADERS,
        max_age=600,
    )
    return app


def test_cors_preflight(mcp_server: MCP) -> None:
    client = cors_app(mcp_server, [APP_ORIGIN], [APP_ORIGIN]).test_client()
    asked = "content-type, authorization, mcp-session-id, mcp-protocol-version, last-event-id"
    asked += ", mcp-method, mcp-name, mcp-param-region"
    response = client.options(
        "/mcp",
        headers={
            "Origin": APP_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": asked,
        },
    )
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN
    assert set(response.headers["Access-Control-Allow-Headers"].split(", ")) == set(
        asked.split(", ")
    )
    assert {"GET", "POST", "DELETE"} <= set(
        response.headers["Access-Control-Allow-Methods"].split(", ")
    )
    assert response.headers["Access-Control-Max-Age"] == "600"


def test_cors_post_get_and_delete(mcp_server: MCP) -> None:
    client = cors_app(mcp_server, [APP_ORIGIN], [APP_ORIGIN]).test_client()
    headers = {"Origin": APP_ORIGIN, "Accept": ACCEPT}
    response = client.post("/mcp", json=initialize_request(), headers=headers)
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN
    exposed = set(response.headers["Access-Control-Expose-Headers"].split(", "))
    assert {"Mcp-Session-Id", "WWW-Authenticate"} <= exposed
    session = response.headers["Mcp-Session-Id"]

    response = client.delete("/mcp", headers={"Origin": APP_ORIGIN, "Mcp-Session-Id": session})
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN


def test_cors_does_not_replace_the_origin_check(mcp_server: MCP) -> None:
    """CORS only tells browsers what they may read; MCP_ALLOWED_ORIGINS refuses the request."""
    other = "https://other.example.com"
    client = cors_app(mcp_server, [APP_ORIGIN, other], [APP_ORIGIN]).test_client()
    response = client.post(
        "/mcp", json=initialize_request(), headers={"Origin": other, "Accept": ACCEPT}
    )
    assert response.status_code == 403
    assert "MCP_ALLOWED_ORIGINS" in response.get_json()["error"]["message"]

    stranger = "https://evil.example.com"
    response = client.post(
        "/mcp", json=initialize_request(), headers={"Origin": stranger, "Accept": ACCEPT}
    )
    assert response.status_code == 403
    assert "Access-Control-Allow-Origin" not in response.headers


def test_cors_lets_a_browser_read_the_auth_challenge(mcp_server: MCP) -> None:
    mcp_server.authorizer(lambda token, request: None)
    app = Flask("browser-auth")
    app.config.update(
        MCP_ALLOWED_ORIGINS=[APP_ORIGIN],
        MCP_AUTH_RESOURCE="http://localhost/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=[ISSUER],
    )
    mcp_server.init_app(app)
    CORS(app, resources={"/mcp": {}}, origins=[APP_ORIGIN], allow_headers=REQUEST_HEADERS,
         expose_headers=RESPONSE_HEADERS)  # fmt: skip
    client = app.test_client()
    response = client.post(
        "/mcp", json=initialize_request(), headers={"Origin": APP_ORIGIN, "Accept": ACCEPT}
    )
    assert response.status_code == 401
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN
    assert "WWW-Authenticate" in response.headers["Access-Control-Expose-Headers"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")
    metadata = client.get(
        "/.well-known/oauth-protected-resource/mcp", headers={"Origin": APP_ORIGIN}
    )
    assert metadata.headers["Access-Control-Allow-Origin"] == "*"  # public, set by Flask-MCP


# -- the examples of docs/deployment.md run -------------------------------------------------

DOCS = (Path(__file__).resolve().parent.parent / "docs" / "deployment.md").read_text()


def python_blocks(section: str) -> list[str]:
    text = DOCS.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def test_documented_mount_runs() -> None:
    namespace: dict[str, t.Any] = {"__name__": "docs_site"}
    exec(compile(python_blocks("Inside another WSGI app")[0], "deployment.md", "exec"), namespace)
    site = namespace["application"]
    assert call(site, "GET", path="/elsewhere").body == b"the rest of the site"
    assert mcp_post(site, initialize_request()).status == 200


def test_documented_cors_configuration_runs() -> None:
    app = Flask("docs_cors")
    namespace: dict[str, t.Any] = {"app": app, "mcp": MCP(name="docs", version="1")}
    exec(compile(python_blocks("Browser clients and CORS")[0], "deployment.md", "exec"), namespace)
    headers = {"Origin": APP_ORIGIN, "Accept": ACCEPT}
    response = app.test_client().post("/mcp", json=initialize_request(), headers=headers)
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN
    assert "Mcp-Session-Id" in response.headers["Access-Control-Expose-Headers"]
