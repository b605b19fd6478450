"""The whole app under ``wsgiref.validate`` and wsgiref's own server-side checks (PEP 3333).

Every request runs through :func:`wsgiref.validate.validator` (types of status,
headers and body; ``wsgi.input`` use; ``close()`` called; no ``Content-Type`` on a
204) inside :class:`wsgiref.handlers.SimpleHandler`, which also refuses hop-by-hop
headers such as ``Connection``. Validator warnings are errors here.
"""

from __future__ import annotations

import typing as t

import pytest
from flask import Flask
from wire import ACCEPT
from wire import V2026
from wire import Reply
from wire import initialize_request
from wire import meta
from wire import wsgi_call as call

from flask_mcp import MCP


def post(app: t.Any, body: t.Any, session: str | None = None, **headers: str) -> Reply:
    sent = {"Content-Type": "application/json", "Accept": ACCEPT}
    if session is not None:
        sent["Mcp-Session-Id"] = session
    sent.update({name.replace("_", "-"): value for name, value in headers.items()})
    return call(app, "POST", body, headers=sent)


def initialize(app: t.Any, version: str = "2025-11-25") -> str:
    reply = post(app, initialize_request(version))
    assert reply.status == 200, reply.body
    assert reply.headers["Content-Type"] == "application/json"
    session = reply.headers["Mcp-Session-Id"]
    note = post(app, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert note.status == 202
    return session


@pytest.fixture
def app(mcp_server: MCP) -> Flask:
    """The test MCP server on an app whose streams end by themselves, as wsgiref serves one
    request at a time."""
    app = Flask("validated")
    app.config.update(MCP_SSE_MAX_STREAM_SECONDS=0.2, MCP_MAX_BODY_SIZE=4096)
    mcp_server.init_app(app)
    return app


def test_post_json_and_sse(app: Flask) -> None:
    session = initialize(app)
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    reply = post(app, {**rpc, "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}, session)
    assert (reply.status, reply.headers["Content-Type"]) == (200, "application/json")
    assert reply.json()["result"]["structuredContent"] == {"result": 3}

    params = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}
    reply = post(app, {**rpc, "id": 2, "params": params}, session)
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/event-stream")
    methods = [event.get("method") for event in reply.events()]
    assert "notifications/progress" in methods
    assert reply.events()[-1]["result"]["content"][0]["text"] == "done"


def test_get_stream_and_delete(app: Flask, mcp_server: MCP) -> None:
    session = initialize(app)
    mcp_server.broadcast("notifications/message", {"level": "info", "data": "hello"})
    reply = call(app, "GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session})
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/event-stream")
    assert reply.events()[0]["params"]["data"] == "hello"
    assert b"retry: " in reply.body  # MCP_SSE_MAX_STREAM_SECONDS closed it with a retry hint

    reply = call(app, "DELETE", headers={"Mcp-Session-Id": session})
    assert reply.status == 204
    assert "Content-Type" not in reply.headers and reply.body == b""
    assert mcp_server.state(app).slots.open == 0


@pytest.mark.parametrize(
    ("status", "method", "body", "headers"),
    [
        (400, "POST", b"{not json", {}),
        (400, "POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {}),  # no session
        (404, "POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"Mcp-Session-Id": "x"}),
        (405, "PUT", b"{}", {}),
        (405, "PATCH", b"{}", {}),
        (406, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Accept": "text/html"}),
        (413, "POST", b"[" + b" " * 5000 + b"]", {}),
        (415, "POST", b"{}", {"Content-Type": "text/plain"}),
        (406, "GET", None, {"Accept": "application/json"}),
        (400, "GET", None, {"Accept": "text/event-stream"}),  # no session
        (400, "DELETE", None, {}),  # no session
        (404, "DELETE", None, {"Mcp-Session-Id": "x"}),
    ],
)
def test_errors(app: Flask, status: int, method: str, body: t.Any, headers: dict[str, str]) -> None:
    sent = {"Content-Type": "application/json", "Accept": ACCEPT} if method != "GET" else {}
    sent.update(headers)
    reply = call(app, method, body, headers=sent)
    assert reply.status == status, reply.body
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.json()["error"]["message"]


def test_413_from_flask_max_content_length(mcp_server: MCP) -> None:
    app = Flask("limited")
    app.config.update(MAX_CONTENT_LENGTH=100)
    mcp_server.init_app(app)
    reply = post(app, {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "y" * 200}})
    assert reply.status == 413


def test_405_when_get_streams_are_off(mcp_server: MCP) -> None:
    app = Flask("no-get")
    app.config.update(MCP_ENABLE_GET_STREAM=False)
    mcp_server.init_app(app)
    session = initialize(app)
    reply = call(app, "GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session})
    assert reply.status == 405
    assert reply.headers["Allow"] == "POST, DELETE"


def test_requests_of_2026_07_28(app: Flask) -> None:
    def post2026(method: str, params: dict[str, t.Any], **headers: str) -> Reply:
        sent = {**params, "_meta": meta({})}
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": sent}
        return post(app, body, MCP_Protocol_Version=V2026, Mcp_Method=method, **headers)

    reply = post2026("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}}, Mcp_Name="add")
    assert reply.status == 200, reply.body
    assert reply.json()["result"]["structuredContent"] == {"result": 4}

    params = {"name": "chatty", "arguments": {}}
    reply = post2026("tools/call", params, Mcp_Name="chatty")
    assert reply.status == 200, reply.body

    reply = post2026("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/event-stream")
    method = "notifications/subscriptions/acknowledged"
    assert reply.events()[0]["method"] == method

    reply = post2026("tools/call", {"name": "add", "arguments": {}}, Mcp_Name="other")
    assert reply.status == 400, reply.body  # the Mcp-Name header disagrees with the body


def test_options(app: Flask) -> None:
    reply = call(app, "OPTIONS")
    assert reply.status == 200
    assert set(reply.headers["Allow"].split(", ")) >= {"GET", "POST", "DELETE"}


def test_head_is_refused_and_ends_nothing(app: Flask) -> None:
    """Flask routes HEAD to a GET view; it must neither open a stream nor end the session."""
    session = initialize(app)
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session}
    reply = call(app, "HEAD", headers=headers)
    assert reply.status == 405
    assert reply.headers["Allow"] == "GET, POST, DELETE"
    ping = post(app, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session)
    assert ping.status == 200, "HEAD ended the session"


def test_authorization_challenge_and_metadata() -> None:
    def authorizer(token: str, request: t.Any) -> t.Any:
        claims = {"iss": "https://auth.example.com", "sub": "ann", "scope": "notes"}
        return claims if token == "ok" else None

    mcp = MCP(name="secure", version="1.0.0", authorizer=authorizer)
    mcp.tool(name="pong", description="Answer pong.")(lambda: "pong")
    app = Flask("secure")
    app.config.update(
        MCP_AUTH_RESOURCE="http://localhost/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["https://auth.example.com"],
    )
    mcp.init_app(app)

    reply = post(app, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert reply.status == 401
    assert (
        'resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"'
        in (reply.headers["WWW-Authenticate"])
    )
    reply = call(app, "GET", path="/.well-known/oauth-protected-resource/mcp")
    assert reply.status == 200 and reply.json()["resource"] == "http://localhost/mcp"
    reply = call(app, "OPTIONS", path="/.well-known/oauth-protected-resource/mcp")
    assert reply.status == 204 and "Content-Type" not in reply.headers

    assert post(app, initialize_request(), Authorization="Bearer ok").status == 200
