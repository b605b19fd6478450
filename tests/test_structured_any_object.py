"""Results of tools whose output schema accepts any object are not walked, same answers.

A ``dict[str, Any]`` tool's result is written with orjson's strict bytes
(:func:`flask_mcp.convert.converted_json_bytes`) without the walk that proves it plain
JSON: tuples, Enum members and UUIDs are written as their conversions, so the answer
(text block and ``structuredContent``) is the one the conversion gives, and middleware
and interceptors get the converted objects. Everything else (NaN, subclasses, keys
that are not strings, ``null``) takes the checked path as before.
"""

from __future__ import annotations

import enum
import json
import math
import typing as t
import uuid

import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import CallInfo
from flask_mcp import Extension
from flask_mcp import convert
from flask_mcp import json_codec
from flask_mcp.content import json_text
from flask_mcp.json_codec import EncodedJSON
from flask_mcp.json_codec import plain_result
from flask_mcp.schema.output import OutputSpec
from flask_mcp.schema.output import output_spec_from_function
from flask_mcp.server.call import ToolCall
from flask_mcp.server.call import ToolCallNext
from flask_mcp.testing import MCPTestClient

orjson = pytest.importorskip("orjson")

ERAS = ["2025-11-25", "2026-07-28"]


class Color(enum.Enum):
    RED = "red"
    PAIR = (1, 2.5)


class Level(enum.IntEnum):
    HIGH = 3


class Shade(str, enum.Enum):
    DARK = "dark"


class Name(str):
    pass


class Count(int):
    pass


ID = uuid.UUID(int=7)
#: Values orjson writes as their conversions: not walked, the same answer.
UNWALKED: list[dict[str, t.Any]] = [
    {"a": (1, 2)},
    {"a": [(1, (2, [3, (4,)]))]},
    {"a": {"b": Color.RED, "c": [Color.PAIR]}},
    {"a": Level.HIGH, "b": [Shade.DARK], "c": True},
    {"a": {"b": ID}, "c": [ID, (ID,)]},
    {"count": 2, "items": [{"id": 1, "tags": ("x", "y"), "price": 1.5}, {"ok": False}]},
]
#: Values orjson refuses or writes with ``null``: the checked path, as before.
CHECKED: list[dict[str, t.Any]] = [
    {"a": [Name("x")]},
    {"a": {"b": Count(3)}},
    {"a": {1: "x"}},
    {"a": {Shade.DARK: 1}},
    {"a": [None, (1, 2)]},
    {"a": [2**70]},
    {"a": {"b": {3, 4}}},
]


def any_object() -> OutputSpec:
    def tool() -> dict[str, t.Any]: ...

    spec = output_spec_from_function(tool)
    assert spec is not None and spec.schema == {"type": "object"}
    return spec


def reference(spec: OutputSpec, value: t.Any) -> tuple[dict[str, t.Any], str]:
    """What the result was before: converted by the table, then written."""
    structured = spec.structure(value)
    return structured, json_text(structured)


def same(a: t.Any, b: t.Any) -> bool:
    """Equal, with the same types all the way down (``(1,) == [1]`` is not enough)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


def written(structured: dict[str, t.Any]) -> bytes:
    """The ``structuredContent`` part of a response holding ``structured``."""
    body = json_codec.dumps_bytes({"jsonrpc": "2.0", "id": 1, "result": {"sc": structured}})
    return body.removeprefix(b'{"jsonrpc":"2.0","id":1,"result":{"sc":').removesuffix(b"}}")


@pytest.mark.parametrize("value", UNWALKED)
def test_tuples_enums_and_uuids_give_the_converted_answer(value: dict[str, t.Any]) -> None:
    spec = any_object()
    expected, expected_text = reference(spec, value)
    structured, text = spec.structure_with_text(value)
    assert text == expected_text
    assert type(structured) is EncodedJSON and structured.json == text.encode()
    assert written(structured) == text.encode()  # the answer holds the same bytes
    assert json.loads(text) == expected
    # what middleware or an interceptor gets is converted, as it was
    copied = plain_result({"structuredContent": structured})["structuredContent"]
    assert same(copied, expected)


def test_the_bytes_are_those_of_the_conversion() -> None:
    for value in UNWALKED:
        found = convert.converted_json_bytes(value)
        assert found is not None and found[1] is False and convert.plain_json_bytes(value) is None
        assert found[0] == convert.plain_json_bytes(convert.to_json(value))


def test_null_takes_the_walk_on_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"a": [None, {"b": 1.5}], "c": "null"}
    assert convert.converted_json_bytes(value) == (convert.plain_json_bytes(value), True)
    structured, text = any_object().structure_with_text(value)
    assert type(structured) is EncodedJSON and structured.convert is None  # walked: plain
    assert text == '{"a":[null,{"b":1.5}],"c":"null"}'
    encodings: list[t.Any] = []
    strict = convert.strict_dumps_bytes
    monkeypatch.setattr(convert, "strict_dumps_bytes", lambda v: encodings.append(v) or strict(v))
    any_object().structure_with_text(value)
    assert len(encodings) == 1  # one orjson pass: the walk looks at the same bytes


@pytest.mark.parametrize("value", CHECKED)
def test_what_orjson_refuses_or_writes_as_null_is_checked_as_before(
    value: dict[str, t.Any],
) -> None:
    assert convert.converted_json_bytes(value) is None
    spec = any_object()
    structured, text = spec.structure_with_text(value)
    expected, expected_text = reference(spec, value)
    assert text == expected_text and same(dict(structured), expected)
    assert written(structured) == text.encode()


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused_as_before(number: float) -> None:
    value = {"a": [1, {"b": (number,)}]}
    assert convert.converted_json_bytes(value) is None
    with pytest.raises(convert.Unconvertible, match=r"at 'a\[1\]\.b\[0\]'"):
        any_object().structure_with_text(value)


def test_plain_json_keeps_its_objects() -> None:
    value = {"items": [{"id": 1, "tags": ["a"]}], "price": 2.5}
    structured, text = any_object().structure_with_text(value)
    assert text == '{"items":[{"id":1,"tags":["a"]}],"price":2.5}'
    copied = plain_result({"structuredContent": structured})["structuredContent"]
    assert type(copied) is dict and copied["items"] is value["items"]


def test_a_schema_that_looks_inside_still_walks() -> None:
    spec = OutputSpec({"type": "object", "properties": {"a": {"type": "array"}}})
    structured, text = spec.structure_with_text({"a": (1, 2)})
    assert type(structured) is dict and same(structured, {"a": [1, 2]})
    assert text == '{"a":[1,2]}'


def test_without_orjson_the_table_converts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_codec, "orjson", None)
    assert convert.converted_json_bytes({"a": (1,)}) is None
    structured, text = any_object().structure_with_text({"a": (1,), "b": Color.RED})
    assert same(structured, {"a": [1], "b": "red"}) and text == '{"a":[1],"b":"red"}'


def test_an_orjson_fragment_is_written_as_the_json_it_holds() -> None:
    # The one value written differently from before: to_json refuses a Fragment, and
    # orjson writes its bytes without calling anything; finding it takes the walk.
    value = {"a": orjson.Fragment(b"[1,2]")}
    assert convert.converted_json_bytes(value) == (b'{"a":[1,2]}', False)
    with pytest.raises(convert.Unconvertible, match="Fragment"):
        convert.to_json(value)


def server() -> MCP:
    mcp = MCP(name="any-object", version="1")

    @mcp.tool()
    def mixed() -> dict[str, t.Any]:
        """Tuples, Enum members and a UUID in a structured result."""
        return {"pairs": [(1, 2), (3, 4)], "color": Color.RED, "level": Level.HIGH, "id": ID}

    return mcp


def app_of(mcp: MCP) -> Flask:
    app = Flask(__name__)
    app.config.update(TESTING=True)
    mcp.init_app(app)
    return app


EXPECTED = {"pairs": [[1, 2], [3, 4]], "color": "red", "level": 3, "id": str(ID)}


@pytest.mark.parametrize("version", ERAS)
def test_the_client_gets_the_converted_result(version: str) -> None:
    with MCPTestClient(app_of(server()), protocol_version=version) as client:
        result = client.call_tool("mixed")
    assert result["structuredContent"] == EXPECTED == json.loads(result["content"][0]["text"])


@pytest.mark.parametrize("version", ERAS)
def test_middleware_gets_converted_objects(version: str) -> None:
    mcp = server()
    seen: list[dict[str, t.Any]] = []

    @mcp.middleware
    def look(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        result = t.cast(dict[str, t.Any], call_next(call))
        if call.method == "tools/call":
            seen.append(result["structuredContent"])
            result["structuredContent"]["pairs"].append([5, 6])
        return result

    with MCPTestClient(app_of(mcp), protocol_version=version) as client:
        result = client.call_tool("mixed")
    assert same(seen[0], {**EXPECTED, "pairs": [[1, 2], [3, 4], [5, 6]]})
    assert result["structuredContent"]["pairs"] == [[1, 2], [3, 4], [5, 6]]


class Reader(Extension):
    id = "com.example/reader"

    def __init__(self) -> None:
        self.seen: list[dict[str, t.Any]] = []

    def intercept_tool_call(self, tool_call: ToolCall, call_next: ToolCallNext) -> dict[str, t.Any]:
        result = call_next(tool_call)
        self.seen.append(result["structuredContent"])
        return result


@pytest.mark.parametrize("version", ERAS)
def test_an_interceptor_gets_converted_objects(version: str) -> None:
    mcp = server()
    reader = Reader()
    mcp.add_extension(reader)
    with MCPTestClient(app_of(mcp), protocol_version=version) as client:
        result = client.call_tool("mixed")
    assert same(reader.seen[0], EXPECTED) and result["structuredContent"] == EXPECTED


def test_what_is_handed_on_is_converted_without_encoding_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    structured, _ = any_object().structure_with_text({"a": (1, 2), "b": [Color.RED]})
    assert type(structured) is EncodedJSON and structured.convert is convert.convert_encoded
    monkeypatch.setattr(convert, "strict_dumps_bytes", None)  # not called again
    copied = plain_result({"structuredContent": structured})["structuredContent"]
    assert same(copied, {"a": [1, 2], "b": ["red"]})
    plain = {"a": [1, {"b": "c"}]}
    assert convert.convert_encoded(plain) is plain
    with pytest.raises(convert.Unconvertible, match="Fragment"):
        convert.convert_encoded({"a": [orjson.Fragment(b"1")]})
    # with the bytes written, the copy is the JSON the client got
    assert convert.convert_encoded({"a": [orjson.Fragment(b"1")]}, b'{"a":[1]}') == {"a": [1]}


@pytest.mark.parametrize("version", ERAS)
def test_middleware_sees_a_fragment_as_the_json_the_client_got(version: str) -> None:
    mcp = MCP(name="fragment", version="1")
    seen: list[t.Any] = []

    @mcp.tool()
    def inlined() -> dict[str, t.Any]:
        """A result holding pre-encoded JSON."""
        return {"rows": orjson.Fragment(b'[{"id":1},{"id":2}]'), "n": 2}

    @mcp.middleware
    def record(call: CallInfo, call_next: t.Any) -> t.Any:
        result = call_next(call)
        if call.method == "tools/call":
            seen.append(result["structuredContent"])
        return result

    with MCPTestClient(app_of(mcp), protocol_version=version) as client:
        result = client.call_tool("inlined")
    want = {"rows": [{"id": 1}, {"id": 2}], "n": 2}
    assert result["structuredContent"] == want and seen == [want]
    assert json.loads(result["content"][0]["text"]) == want


@pytest.mark.parametrize("version", ERAS)
def test_a_task_stores_what_the_call_would_answer(
    version: str, backend_config: dict[str, t.Any]
) -> None:
    # A task's result is stored (in memory or in Redis) and read back by tasks/result:
    # the same JSON as the call's answer, Fragment included.
    mcp = MCP(name="any-object-task", version="1")

    @mcp.tool(task="optional")
    def mixed() -> dict[str, t.Any]:
        """Tuples, Enum members, a UUID and a Fragment in a structured result."""
        return {
            "pairs": [(1, 2), (3, 4)],
            "color": Color.RED,
            "level": Level.HIGH,
            "id": ID,
            "rows": orjson.Fragment(b"[1,2]"),
        }

    app = Flask(__name__)
    app.config.update(TESTING=True, **backend_config)
    mcp.init_app(app)
    assert (mcp.state(app).backend.multiprocess) == bool(backend_config)
    want = {**EXPECTED, "rows": [1, 2]}
    with MCPTestClient(app, protocol_version=version) as client:
        direct = client.call_tool("mixed")
        task = client.call_tool_as_task("mixed")
        stored = client.task_result(task)
    assert direct["structuredContent"] == want == json.loads(direct["content"][0]["text"])
    assert stored["structuredContent"] == want == json.loads(stored["content"][0]["text"])
