"""A structured result is encoded once: the bytes of its text block are its answer's too.

:meth:`OutputSpec.structure_with_text <flask_mcp.schema.output.OutputSpec.structure_with_text>`
returns the ``structuredContent`` as an :class:`~flask_mcp.json_codec.EncodedJSON`
carrying the bytes that proved it plain JSON; :func:`~flask_mcp.json_codec.dumps_bytes`
writes a response holding it with those bytes. What a middleware or an extension's
interceptor changes in it must still reach the client, and the stdlib path (no
orjson) must write the same answer.
"""

from __future__ import annotations

import copy
import json
import typing as t

import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import CallInfo
from flask_mcp import Extension
from flask_mcp import json_codec
from flask_mcp.json_codec import EncodedJSON
from flask_mcp.json_codec import plain_result
from flask_mcp.server.call import ToolCall
from flask_mcp.server.call import ToolCallNext
from flask_mcp.testing import MCPTestClient

pytest.importorskip("orjson")

ERAS = ["2025-11-25", "2026-07-28"]
DATA = {"count": 2, "items": [{"id": 1, "tags": ["a"]}, {"id": 2, "tags": [], "price": 1.5}]}


def server() -> MCP:
    mcp = MCP(name="encoded", version="1")

    @mcp.tool()
    def catalog() -> dict[str, t.Any]:
        """A structured result, plain JSON already."""
        return copy.deepcopy(DATA)

    @mcp.tool()
    def numbers() -> list[int]:
        """A wrapped structured result."""
        return [1, 2, 3]

    return mcp


def app_of(mcp: MCP) -> Flask:
    app = Flask(__name__)
    app.config.update(TESTING=True)
    mcp.init_app(app)
    return app


def response(structured: dict[str, t.Any]) -> dict[str, t.Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "structuredContent": structured}}


def test_a_response_is_written_with_the_bytes_it_carries() -> None:
    encoded = EncodedJSON({"a": 1}, b'{"a":2}')  # bytes that differ: only a splice writes 2
    assert json_codec.loads(json_codec.dumps_bytes(response(encoded)))["result"] == {
        "content": [],
        "structuredContent": {"a": 2},
    }
    assert encoded == {"a": 1} and type(encoded) is EncodedJSON  # the object is left as it was


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.__setitem__("b", 2),
        lambda d: d.__delitem__("a"),
        lambda d: d.update(b=2),
        lambda d: d.setdefault("b", 2),
        lambda d: d.pop("a"),
        lambda d: d.popitem(),
        lambda d: d.clear(),
        lambda d: d.__ior__({"b": 2}),
    ],
)
def test_changing_the_object_drops_its_bytes(change: t.Callable[[dict[str, t.Any]], None]) -> None:
    encoded = EncodedJSON({"a": 1}, b'{"a":1}')
    change(encoded)
    assert encoded.json is None
    written = json_codec.loads(json_codec.dumps_bytes(response(encoded)))
    assert written["result"]["structuredContent"] == dict(encoded)


def test_without_orjson_the_object_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_codec, "orjson", None)
    encoded = EncodedJSON({"a": 1}, b'{"a":2}')
    assert b'"structuredContent":{"a":1}' in json_codec.dumps_bytes(response(encoded))


def test_plain_result_hands_on_a_plain_copy() -> None:
    inner = {"tags": ["a"]}
    result = {"structuredContent": EncodedJSON({"x": inner}, b"{}")}
    assert plain_result(result) is result
    assert type(result["structuredContent"]) is dict and result["structuredContent"]["x"] is inner
    assert plain_result({"content": []}) == {"content": []}


@pytest.mark.parametrize("version", ERAS)
def test_the_answer_holds_the_text_block_json(version: str) -> None:
    with MCPTestClient(app_of(server()), protocol_version=version) as client:
        result = client.call_tool("catalog")
        wrapped = client.call_tool("numbers")
    assert result["structuredContent"] == DATA == json.loads(result["content"][0]["text"])
    assert wrapped["structuredContent"] == {"result": [1, 2, 3]}
    assert wrapped["content"][0]["text"] == '{"result":[1,2,3]}'


@pytest.mark.parametrize("version", ERAS)
def test_what_a_middleware_changes_inside_reaches_the_client(version: str) -> None:
    mcp = server()

    @mcp.middleware
    def tag(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        result = t.cast(dict[str, t.Any], call_next(call))
        if call.method == "tools/call":
            result["structuredContent"]["items"][0]["tags"].append("seen")  # in place, nested
        return result

    with MCPTestClient(app_of(mcp), protocol_version=version) as client:
        result = client.call_tool("catalog")
    assert result["structuredContent"]["items"][0]["tags"] == ["a", "seen"]


class Tagging(Extension):
    id = "com.example/tagging"

    def intercept_tool_call(self, tool_call: ToolCall, call_next: ToolCallNext) -> dict[str, t.Any]:
        result = call_next(tool_call)
        result["structuredContent"]["items"][1]["tags"].append("intercepted")
        return result


@pytest.mark.parametrize("version", ERAS)
def test_what_an_interceptor_changes_inside_reaches_the_client(version: str) -> None:
    mcp = server()
    mcp.add_extension(Tagging())
    with MCPTestClient(app_of(mcp), protocol_version=version) as client:
        result = client.call_tool("catalog")
    assert result["structuredContent"]["items"][1]["tags"] == ["intercepted"]
