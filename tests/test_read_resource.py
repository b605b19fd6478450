"""``ctx.read_resource(uri)``: a tool reads a resource of its server, checked as resources/read."""

from __future__ import annotations

import typing as t

import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import AuthInfo
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp.testing import MCPTestClient

ERAS = ["2025-11-25", "2026-07-28"]
TOKENS = {
    "reader": AuthInfo(principal="ann", scopes=frozenset({"notes:read"})),
    "admin": AuthInfo(principal="root", scopes=frozenset({"notes:read", "notes:admin"})),
}


def make_app(**config: t.Any) -> Flask:
    mcp = MCP(name="reads", version="1.0")
    if config:
        mcp.authorizer(lambda token, request: TOKENS.get(token))

    @mcp.resource("notes://readme", mime_type="text/markdown")
    def readme() -> str:
        return "# Read me"

    @mcp.resource("notes://{name}")
    def note(name: str, ctx: Context) -> str:
        return f"note {name} for {ctx.protocol_version}"

    @mcp.resource("notes://vault", scopes=["notes:admin"])
    def vault() -> str:
        return "s3cret"

    @mcp.tool()
    def quote(uri: str, ctx: Context) -> list[dict[str, t.Any]]:
        """Return what reading ``uri`` gives."""
        return ctx.read_resource(uri)

    @mcp.tool(task="optional")
    def quote_later(uri: str, ctx: Context) -> str:
        """Read ``uri`` from a task, in a worker thread."""
        return str(ctx.read_resource(uri)[0]["text"])

    @mcp.tool()
    def safe_quote(uri: str, ctx: Context) -> str:
        try:
            return ctx.read_resource(uri)[0]["text"]
        except Exception as exc:  # noqa: BLE001 - the test reads the error
            return f"{type(exc).__name__}: {exc}"

    app = Flask(__name__)
    app.config.update(config)
    mcp.init_app(app)
    return app


@pytest.mark.parametrize("version", ERAS)
def test_a_tool_reads_a_resource_and_a_template(version: str) -> None:
    with MCPTestClient(make_app(), protocol_version=version) as client:
        static = client.call_tool("quote", {"uri": "notes://readme"})["structuredContent"]
        assert static == {
            "result": [{"uri": "notes://readme", "mimeType": "text/markdown", "text": "# Read me"}]
        }
        templated = client.call_tool("quote", {"uri": "notes://todo"})["structuredContent"]
        assert templated["result"][0]["text"] == f"note todo for {version}"
        assert templated["result"][0]["uri"] == "notes://todo"


@pytest.mark.parametrize(("version", "code"), [("2025-11-25", -32002), ("2026-07-28", -32602)])
def test_an_unknown_uri_is_the_error_of_resources_read(version: str, code: int) -> None:
    with MCPTestClient(make_app(), protocol_version=version) as client:
        text = client.call_tool("safe_quote", {"uri": "other://x"})["content"][0]["text"]
        assert text == "MCPError: Resource not found: other://x"
        with pytest.raises(MCPError) as caught:  # not caught by the tool: the call's error
            client.call_tool("quote", {"uri": "other://x"})
    assert caught.value.code == code


@pytest.mark.parametrize("version", ERAS)
def test_the_callers_scopes_are_checked_as_for_resources_read(version: str) -> None:
    config = {
        "MCP_AUTH_RESOURCE": "https://mcp.example.com/mcp",
        "MCP_AUTH_AUTHORIZATION_SERVERS": ["https://auth.example.com"],
        "SECRET_KEY": "x",
    }
    app = make_app(**config)
    with MCPTestClient(
        app, protocol_version=version, headers={"Authorization": "Bearer admin"}
    ) as client:
        result = client.call_tool("safe_quote", {"uri": "notes://vault"})
        assert result["content"][0]["text"] == "s3cret"
    with MCPTestClient(
        app, protocol_version=version, headers={"Authorization": "Bearer reader"}
    ) as client:
        refused = client.call_tool("safe_quote", {"uri": "notes://vault"})["content"][0]["text"]
        assert refused.startswith("AuthRefused")
        assert "notes:admin" in refused
        assert client.call_tool("safe_quote", {"uri": "notes://readme"})["content"][0]["text"] == (
            "# Read me"
        )


def test_a_task_reads_a_resource() -> None:
    with MCPTestClient(make_app()) as client:
        call = {"name": "quote_later", "arguments": {"uri": "notes://plan"}, "task": {}}
        task = client.request("tools/call", call)["task"]
        result = client.request("tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "note plan for 2025-11-25"
