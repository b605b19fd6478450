"""The protocol-level test client, including server-to-client round trips."""

from __future__ import annotations

import typing as t

import pytest

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.testing import MCPError
from flask_mcp.testing import MCPTestClient


def test_round_trips_through_the_test_client(app: t.Any, mcp_server: MCP) -> None:
    @mcp_server.tool()
    def interview(ctx: Context) -> str:
        """Sample, elicit and list roots."""
        said = ctx.create_message([{"role": "user", "content": {"type": "text", "text": "hi"}}], 10)
        answer = ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        roots = ctx.list_roots()
        return f"{said['content']['text']}|{answer['content']['name']}|{roots[0]['uri']}"

    client = MCPTestClient(
        app,
        sampling=lambda params: {
            "role": "assistant",
            "content": {"type": "text", "text": "HI"},
            "model": "m",
        },
        elicitation=lambda params: {"action": "accept", "content": {"name": "Ada"}},
        roots=[{"uri": "file:///work"}],
    )
    with client:
        assert [tool["name"] for tool in client.list_tools()] == ["add", "chatty", "interview"]
        result = client.call_tool("interview")
        assert result["content"][0]["text"] == "HI|Ada|file:///work"
        assert client.call_tool("chatty", progressToken="p")["content"][0]["text"] == "done"
        assert [n["method"] for n in client.notifications] == [
            "notifications/progress",
            "notifications/message",
        ]
        assert client.read_resource("test://items/7")[0]["uri"] == "test://items/7"
        assert (
            client.get_prompt("greet", {"name": "Bo"})["messages"][0]["content"]["text"]
            == "Hello Bo"
        )
        with pytest.raises(MCPError) as info:
            client.request("nope/nope")
        assert info.value.code == -32601
