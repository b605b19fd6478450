"""What tools, resources and prompts return reaches the client faithfully, or as a clear error."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import logging
import pathlib
import subprocess
import sys
import typing as t
import uuid

import jsonschema
import pydantic
import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import ToolResult
from flask_mcp import content
from flask_mcp import protocol
from flask_mcp.errors import MCPError
from flask_mcp.server.call import Call
from flask_mcp.testing import MCPTestClient

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


class Opaque:
    """A class the conversion table does not know."""


@dataclasses.dataclass
class Event:
    name: str
    at: datetime.datetime
    price: decimal.Decimal


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


class Shape(pydantic.BaseModel):
    label: str = pydantic.Field(alias="Label")
    points: list[Point]

    @pydantic.field_validator("points")
    @classmethod
    def not_empty(cls, points: list[Point]) -> list[Point]:
        if not points:
            raise ValueError("a shape needs a point")
        return points


class Secret(pydantic.BaseModel):
    value: str

    @pydantic.field_serializer("value")
    def refuse(self, value: str) -> str:
        raise ValueError("this serializer is broken")


class Tree(pydantic.BaseModel):
    name: str
    children: list[Tree] = []


@pytest.fixture
def mcp() -> MCP:
    return MCP(name="results", version="1.0.0")


@pytest.fixture
def client(mcp: MCP) -> t.Iterator[MCPTestClient]:
    app = Flask(__name__)
    app.config.update(TESTING=True)
    mcp.init_app(app)
    with MCPTestClient(app) as test_client:
        yield test_client


def dispatch(mcp: MCP, method: str, params: dict[str, t.Any]) -> dict[str, t.Any]:
    app = Flask(__name__)
    mcp.init_app(app)
    call = Call(method, params, 1, "2025-11-25", protocol.HANDSHAKE, state=mcp.state(app))
    with app.app_context():
        return mcp.dispatcher.dispatch(call)


def error_text(result: dict[str, t.Any]) -> str:
    assert result.get("isError") is True, result
    assert "structuredContent" not in result
    text: str = result["content"][0]["text"]
    return text


# -- bytes ---------------------------------------------------------------------------------


def test_bytes_become_blocks_of_the_declared_media_type(mcp: MCP, client: MCPTestClient) -> None:
    @mcp.tool(mime_type="image/png")
    def png() -> bytes:
        return PNG

    @mcp.tool(mime_type="audio/wav")
    def wav() -> bytearray:
        return bytearray(b"RIFF")

    @mcp.tool(mime_type="application/pdf")
    def pdf() -> bytes:
        return b"%PDF-1.7"

    @mcp.tool(mime_type="image/png")
    def two() -> list[str | bytes]:
        return ["caption", PNG]

    encoded = base64.b64encode(PNG).decode()
    assert client.call_tool("png") == {
        "content": [{"type": "image", "data": encoded, "mimeType": "image/png"}]
    }
    assert client.call_tool("wav")["content"] == [
        {"type": "audio", "data": base64.b64encode(b"RIFF").decode(), "mimeType": "audio/wav"}
    ]
    assert client.call_tool("pdf")["content"] == [
        {
            "type": "resource",
            "resource": {
                "uri": "tool://pdf/result",
                "mimeType": "application/pdf",
                "blob": base64.b64encode(b"%PDF-1.7").decode(),
            },
        }
    ]
    assert client.call_tool("two")["content"] == [
        {"type": "text", "text": "caption"},
        {"type": "image", "data": encoded, "mimeType": "image/png"},
    ]


def test_bytes_without_media_type_are_an_error(
    mcp: MCP, client: MCPTestClient, caplog: pytest.LogCaptureFixture
) -> None:
    @mcp.tool()
    def snapshot() -> bytes:
        return PNG

    with caplog.at_level(logging.ERROR, logger="flask_mcp"):
        text = error_text(client.call_tool("snapshot"))
    assert text.startswith("Tool 'snapshot' returned a result that cannot be sent: bytes need")
    assert 'mime_type="image/png"' in text and "flask_mcp.content.image(" in text
    assert "\ufffd" not in text
    assert [r.name for r in caplog.records] == ["flask_mcp"]
    assert "snapshot" in caplog.records[0].getMessage()


def test_mime_type_must_be_a_media_type(mcp: MCP) -> None:
    with pytest.raises(ValueError, match="mime_type must be a media type such as 'image/png'"):
        mcp.add_tool(lambda: b"", name="bad", mime_type="png")
    tool = mcp.add_tool(lambda: b"", name="good", mime_type="text/csv; charset=utf-8")
    assert tool.mime_type == "text/csv; charset=utf-8"
    assert "mimeType" not in tool.describe()


# -- values without a faithful JSON form ---------------------------------------------------


def test_an_unknown_object_is_an_error_naming_tool_and_type(
    mcp: MCP, client: MCPTestClient, caplog: pytest.LogCaptureFixture
) -> None:
    @mcp.tool()
    def opaque():  # type: ignore[no-untyped-def]
        return Opaque()

    @mcp.tool()
    def nested() -> dict[str, t.Any]:
        return {"items": [1, Opaque()]}

    @mcp.tool()
    def not_a_number():  # type: ignore[no-untyped-def]
        return {"ratio": float("nan")}

    @mcp.tool()
    def generator():  # type: ignore[no-untyped-def]
        return (i for i in range(3))

    with caplog.at_level(logging.ERROR, logger="flask_mcp"):
        text = error_text(client.call_tool("opaque"))
    assert text.startswith(
        "Tool 'opaque' returned a result that cannot be sent: test_results.Opaque cannot be"
        " converted to JSON. Return str, None, content blocks"
    )
    assert "object at 0x" not in text
    assert caplog.records and all(r.name == "flask_mcp" for r in caplog.records)
    assert "test_results.Opaque at 'items[1]' cannot be converted" in error_text(
        client.call_tool("nested")
    )
    assert "float at 'ratio' is nan, which JSON cannot hold" in error_text(
        client.call_tool("not_a_number")
    )
    assert "generator cannot be converted" in error_text(client.call_tool("generator"))


def test_table_types_are_converted_faithfully(mcp: MCP, client: MCPTestClient) -> None:
    @mcp.tool()
    def event():  # type: ignore[no-untyped-def]
        return Event("launch", datetime.datetime(2024, 5, 1, 12, 30), decimal.Decimal("9.90"))

    @mcp.tool()
    def mixed():  # type: ignore[no-untyped-def]
        return {
            "id": uuid.UUID(int=7),
            "path": pathlib.PurePosixPath("/srv/data"),
            "day": datetime.date(2024, 1, 2),
            "at": datetime.time(8, 15),
            "point": Point(x=1),
        }

    assert client.call_tool("event") == {
        "content": [
            {
                "type": "text",
                "text": '{"name":"launch","at":"2024-05-01T12:30:00","price":"9.90"}',
            }
        ]
    }
    text = client.call_tool("mixed")["content"][0]["text"]
    assert text == (
        '{"id":"00000000-0000-0000-0000-000000000007","path":"/srv/data",'
        '"day":"2024-01-02","at":"08:15:00","point":{"x":1,"y":0}}'
    )


def test_tool_result_contents_are_checked(mcp: MCP, client: MCPTestClient) -> None:
    @mcp.tool()
    def stray() -> ToolResult:
        return ToolResult(content=[content.text("ok"), Opaque()])  # type: ignore[list-item]

    @mcp.tool()
    def dated() -> ToolResult:
        return ToolResult("ok", structured={"at": datetime.date(2024, 1, 2)})

    assert "test_results.Opaque at '[1]' is not a content block or a string" in error_text(
        client.call_tool("stray")
    )
    assert client.call_tool("dated")["structuredContent"] == {"at": "2024-01-02"}


# -- output schemas --------------------------------------------------------------------------


def test_results_violating_the_output_schema_are_errors(
    mcp: MCP, client: MCPTestClient, caplog: pytest.LogCaptureFixture
) -> None:
    @mcp.tool()
    def count() -> int:
        return "many"  # type: ignore[return-value]

    weather = {
        "type": "object",
        "properties": {"temperature": {"type": "number"}, "sky": {"type": "string"}},
        "required": ["temperature", "sky"],
    }

    @mcp.tool(output_schema=weather)
    def forecast() -> dict[str, t.Any]:
        return {"sky": "clear"}

    @mcp.tool(output_schema=weather)
    def complete() -> ToolResult:
        return ToolResult("hot", structured={"temperature": "hot", "sky": "clear"})

    @mcp.tool(output_schema=weather)
    def unstructured() -> ToolResult:
        return ToolResult("no data")

    @mcp.tool(output_schema=weather)
    def failed() -> ToolResult:
        return ToolResult("the sensor is down", is_error=True)

    @mcp.tool()
    def good() -> int:
        return 3

    with caplog.at_level(logging.ERROR, logger="flask_mcp"):
        assert error_text(client.call_tool("count")) == (
            "Invalid result of tool 'count' for its output schema:"
            " 'result': 'many' is not of type 'integer'"
        )
    assert "count" in caplog.records[0].getMessage()
    assert error_text(client.call_tool("forecast")).endswith(
        "output schema: missing required property 'temperature'"
    )
    assert error_text(client.call_tool("complete")).endswith(
        "'temperature': 'hot' is not of type 'number'"
    )
    assert "ToolResult needs structured=" in error_text(client.call_tool("unstructured"))
    assert client.call_tool("failed") == {
        "content": [{"type": "text", "text": "the sensor is down"}],
        "isError": True,
    }
    assert client.call_tool("good")["structuredContent"] == {"result": 3}


def test_output_validation_through_the_dispatcher(mcp: MCP) -> None:
    @mcp.tool()
    def ratio() -> float:
        return True  # type: ignore[return-value]

    result = dispatch(mcp, "tools/call", {"name": "ratio", "arguments": {}})
    assert error_text(result).endswith("'result': True is not of type 'number'")


# -- date, time, UUID, Decimal and Path ----------------------------------------------------------


def test_typed_parameters_are_converted(mcp: MCP, client: MCPTestClient) -> None:
    seen: dict[str, t.Any] = {}

    @mcp.tool()
    def book(
        when: datetime.datetime,
        day: datetime.date,
        at: datetime.time,
        ref: uuid.UUID,
        price: decimal.Decimal,
        folder: pathlib.Path,
        until: datetime.date | None = None,
    ) -> str:
        seen.update(locals())
        return "ok"

    schema = client.list_tools()[0]["inputSchema"]["properties"]
    assert schema["when"] == {"type": "string", "format": "date-time"}
    assert schema["day"] == {"type": "string", "format": "date"}
    assert schema["at"] == {"type": "string", "format": "time"}
    assert schema["ref"] == {"type": "string", "format": "uuid"}
    assert schema["price"] == {"type": ["number", "string"]}
    assert schema["folder"] == {"type": "string", "format": "path"}
    arguments = {
        "when": "2024-05-01T12:30:00+02:00",
        "day": "2024-05-01",
        "at": "08:15:00",
        "ref": "123e4567-e89b-12d3-a456-426614174000",
        "price": "12.50",
        "folder": "reports/2024",
        "until": None,
    }
    assert client.call_tool("book", arguments)["content"][0]["text"] == "ok"
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    assert seen["when"] == datetime.datetime(2024, 5, 1, 12, 30, tzinfo=plus_two)
    assert seen["day"] == datetime.date(2024, 5, 1)
    assert seen["at"] == datetime.time(8, 15)
    assert seen["ref"] == uuid.UUID("123e4567-e89b-12d3-a456-426614174000")
    assert seen["price"] == decimal.Decimal("12.50") and str(seen["price"]) == "12.50"
    assert seen["folder"] == pathlib.Path("reports/2024")
    assert seen["until"] is None
    client.call_tool("book", {**arguments, "price": 0.1, "when": "2024-05-01T12:30:00Z"})
    assert seen["price"] == decimal.Decimal("0.1")
    assert seen["when"].utcoffset() == datetime.timedelta(0)

    text = error_text(
        client.call_tool("book", {**arguments, "when": "next week", "ref": "42", "price": "lots"})
    )
    assert text.startswith("Invalid arguments: 'when': 'next week' is not an ISO 8601 date-time")
    assert "'ref': '42' is not a UUID" in text
    assert "'price': 'lots' is not a decimal number" in text
    assert "NaN" in error_text(client.call_tool("book", {**arguments, "price": "NaN"}))
    assert "'folder': a path cannot contain a NUL" in error_text(
        client.call_tool("book", {**arguments, "folder": "a\x00b"})
    )


@dataclasses.dataclass
class Page:
    number: int
    size: int = 10


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_integral_floats_reach_int_parameters_as_ints(mcp: MCP, version: str) -> None:
    """JSON Schema counts 1.0 as an integer; a handler declaring ``int`` gets ``1``."""
    seen: dict[str, t.Any] = {}

    @mcp.tool()
    def fetch(
        count: int, ids: list[int], page: Page, either: int | str, limit: int | None = None
    ) -> str:
        seen.update(count=count, ids=ids, page=page, either=either, limit=limit)
        return "ok"

    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app, protocol_version=version) as client:
        arguments = {"count": 2.0, "ids": [1.0, 2], "page": {"number": 3.0}, "either": 4.0}
        assert client.call_tool("fetch", {**arguments, "limit": 5.0})["content"][0]["text"] == "ok"
        assert seen == {
            "count": 2,
            "ids": [1, 2],
            "page": Page(3),
            "either": 4,
            "limit": 5,
        }
        assert all(type(seen[name]) is int for name in ("count", "either", "limit"))
        assert type(seen["ids"][0]) is int and type(seen["page"].number) is int
        client.call_tool("fetch", {"count": 1.0, "ids": [], "page": {"number": 1}, "either": "x"})
        assert type(seen["count"]) is int and seen["either"] == "x" and seen["limit"] is None
        text = error_text(client.call_tool("fetch", {**arguments, "count": 1.5}))
        assert text == "Invalid arguments: 'count': 1.5 is not of type 'integer'"


class Unit(enum.Enum):
    CELSIUS = "celsius"
    KELVIN = "kelvin"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_literal_enum_members_reach_the_handler_as_members(mcp: MCP, version: str) -> None:
    """``Literal[Unit.CELSIUS]`` publishes the member's value and passes the member."""
    seen: list[t.Any] = []

    @mcp.tool()
    def convert(
        unit: t.Literal[Unit.CELSIUS, "fahrenheit"], units: list[t.Literal[Unit.KELVIN]]
    ) -> str:
        seen[:] = [unit, units]
        return "ok"

    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app, protocol_version=version) as client:
        schema = client.list_tools()[0]["inputSchema"]["properties"]
        assert schema["unit"] == {"type": "string", "enum": ["celsius", "fahrenheit"]}
        client.call_tool("convert", {"unit": "celsius", "units": ["kelvin"]})
        assert seen == [Unit.CELSIUS, [Unit.KELVIN]]
        client.call_tool("convert", {"unit": "fahrenheit", "units": []})
        assert seen == ["fahrenheit", []]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_typed_dict_keys_are_published_and_converted(mcp: MCP, version: str) -> None:
    """``dict[Unit, int]`` says which keys it takes, and the function gets Unit keys."""
    seen: list[t.Any] = []
    ref = uuid.UUID("123e4567-e89b-12d3-a456-426614174000")

    @mcp.tool()
    def tally(by_unit: dict[Unit, int], by_id: dict[uuid.UUID, str]) -> dict[Unit, int]:
        seen[:] = [by_unit, by_id]
        return by_unit

    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app, protocol_version=version) as client:
        tool = client.list_tools()[0]
        properties = tool["inputSchema"]["properties"]
        assert properties["by_unit"]["propertyNames"] == {
            "type": "string",
            "enum": ["celsius", "kelvin"],
        }
        assert properties["by_id"]["propertyNames"] == {"type": "string", "format": "uuid"}
        assert tool["outputSchema"]["propertyNames"] == properties["by_unit"]["propertyNames"]
        result = client.call_tool("tally", {"by_unit": {"kelvin": 2}, "by_id": {str(ref): "a"}})
        assert seen == [{Unit.KELVIN: 2}, {ref: "a"}]
        assert result["structuredContent"] == {"kelvin": 2}
        jsonschema.validate(result["structuredContent"], tool["outputSchema"])
        text = error_text(client.call_tool("tally", {"by_unit": {"rankine": 1}, "by_id": {}}))
        assert text.startswith("Invalid arguments: 'by_unit': 'rankine' is not one of")
        text = error_text(client.call_tool("tally", {"by_unit": {}, "by_id": {"42": "a"}}))
        assert text == (
            "Invalid arguments: 'by_id': '42' is not a UUID, such as"
            " 123e4567-e89b-12d3-a456-426614174000"
        )


def test_typed_results_have_matching_output_schemas(mcp: MCP, client: MCPTestClient) -> None:
    @mcp.tool()
    def now() -> datetime.datetime:
        return datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc)

    @mcp.tool()
    def ident() -> uuid.UUID:
        return uuid.UUID(int=1)

    @mcp.tool()
    def total() -> decimal.Decimal:
        return decimal.Decimal("1.10")

    @mcp.tool()
    def home() -> pathlib.Path:
        return pathlib.Path("/home/ada")

    tools = {tool["name"]: tool for tool in client.list_tools()}
    assert tools["now"]["outputSchema"]["properties"]["result"] == {
        "type": "string",
        "format": "date-time",
    }
    assert tools["total"]["outputSchema"]["properties"]["result"] == {"type": "string"}
    assert client.call_tool("now")["structuredContent"] == {"result": "2024-05-01T12:30:00+00:00"}
    assert client.call_tool("ident")["structuredContent"] == {
        "result": "00000000-0000-0000-0000-000000000001"
    }
    total_result = client.call_tool("total")
    assert total_result["structuredContent"] == {"result": "1.10"}
    assert total_result["content"][0]["text"] == '{"result":"1.10"}'
    assert client.call_tool("home")["structuredContent"] == {"result": "/home/ada"}


# -- pydantic ---------------------------------------------------------------------------------


def test_pydantic_parameters_and_results(mcp: MCP, client: MCPTestClient) -> None:
    received: list[t.Any] = []

    @mcp.tool()
    def draw(shape: Shape, scale: int = 1) -> Shape:
        received.append(shape)
        points = [Point(x=p.x * scale, y=p.y * scale) for p in shape.points]
        return Shape(Label=shape.label.upper(), points=points)

    tool = client.list_tools()[0]
    schema = tool["inputSchema"]
    assert schema["properties"]["shape"]["properties"]["points"]["items"] == {
        "$ref": "#/$defs/Point"
    }
    assert schema["$defs"]["Point"]["required"] == ["x"]
    assert "$defs" not in schema["properties"]["shape"]
    output = tool["outputSchema"]
    assert output["type"] == "object" and output["required"] == ["Label", "points"]
    assert output["$defs"]["Point"]["properties"]["y"]["type"] == "integer"

    result = client.call_tool("draw", {"shape": {"Label": "sq", "points": [{"x": 1}]}, "scale": 2})
    assert isinstance(received[0], Shape) and received[0].points == [Point(x=1)]
    assert result["structuredContent"] == {"Label": "SQ", "points": [{"x": 2, "y": 0}]}
    assert error_text(
        client.call_tool("draw", {"shape": {"Label": "sq", "points": [{"x": "one"}]}})
    ) == ("Invalid arguments: 'shape.points[0].x': 'one' is not of type 'integer'")
    assert error_text(client.call_tool("draw", {"shape": {"Label": "sq", "points": []}})) == (
        "Invalid arguments: 'shape.points': Value error, a shape needs a point"
    )


def test_pydantic_result_checked_against_its_schema(mcp: MCP, client: MCPTestClient) -> None:
    @mcp.tool()
    def tree() -> Tree:
        return Tree(name="root", children=[Tree(name="leaf")])

    @mcp.tool()
    def forged() -> Point:
        return {"x": "not a number"}  # type: ignore[return-value]

    tools = {tool["name"]: tool for tool in client.list_tools()}
    assert tools["tree"]["outputSchema"]["type"] == "object"
    assert tools["tree"]["outputSchema"]["$ref"] == "#/$defs/Tree"
    assert client.call_tool("tree")["structuredContent"] == {
        "name": "root",
        "children": [{"name": "leaf", "children": []}],
    }
    assert error_text(client.call_tool("forged")).endswith(
        "'x': 'not a number' is not of type 'integer'"
    )


def test_a_conversion_that_raises_is_an_internal_tool_error(
    mcp: MCP, client: MCPTestClient, caplog: pytest.LogCaptureFixture
) -> None:
    @mcp.tool()
    def leak() -> Secret:
        return Secret(value="s3cret")

    with caplog.at_level(logging.ERROR, logger="flask_mcp"):
        text = error_text(client.call_tool("leak"))
    assert text == "Internal error in tool 'leak'. The server log has the details."
    assert "this serializer is broken" in caplog.text


def test_pydantic_is_not_imported_unless_annotations_use_it() -> None:
    code = (
        "import sys, datetime, decimal\n"
        "from flask import Flask\n"
        "from flask_mcp import MCP\n"
        "from flask_mcp.testing import MCPTestClient\n"
        "mcp = MCP(name='n', version='1')\n"
        "@mcp.tool()\n"
        "def add(a: int, b: int) -> int: return a + b\n"
        "@mcp.tool()\n"
        "def later(when: datetime.datetime) -> decimal.Decimal: return decimal.Decimal(1)\n"
        "app = Flask(__name__)\n"
        "mcp.init_app(app)\n"
        "with MCPTestClient(app) as c:\n"
        "    assert c.call_tool('add', {'a': 1, 'b': 2})['structuredContent'] == {'result': 3}\n"
        "    c.call_tool('later', {'when': '2024-01-01T00:00:00'})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]", out.stderr


# -- resources and prompts -------------------------------------------------------------------------


def test_resources_convert_faithfully_or_fail_naming_the_resource(
    mcp: MCP, caplog: pytest.LogCaptureFixture
) -> None:
    @mcp.resource("data://opaque")
    def opaque() -> t.Any:
        return Opaque()

    @mcp.resource("data://rows", mime_type="application/json")
    def rows() -> list[dict[str, t.Any]]:
        return [{"id": 1, "at": datetime.date(2024, 1, 2)}, {"id": 2, "at": None}]

    @mcp.resource("data://logo", mime_type="image/png")
    def logo() -> bytes:
        return PNG

    with caplog.at_level(logging.ERROR, logger="flask_mcp"), pytest.raises(MCPError) as info:
        dispatch(mcp, "resources/read", {"uri": "data://opaque"})
    assert info.value.code == -32603
    assert str(info.value.message).startswith(
        "Resource 'data://opaque' returned a value that cannot be sent: test_results.Opaque"
    )
    assert caplog.records[-1].name == "flask_mcp"
    assert dispatch(mcp, "resources/read", {"uri": "data://rows"})["contents"] == [
        {
            "uri": "data://rows",
            "mimeType": "application/json",
            "text": '[{"id":1,"at":"2024-01-02"},{"id":2,"at":null}]',
        }
    ]
    assert dispatch(mcp, "resources/read", {"uri": "data://logo"})["contents"] == [
        {"uri": "data://logo", "mimeType": "image/png", "blob": base64.b64encode(PNG).decode()}
    ]


def test_prompts_convert_faithfully_or_fail_naming_the_prompt(mcp: MCP) -> None:
    @mcp.prompt()
    def opaque() -> t.Any:
        return ["Hello", Opaque()]

    @mcp.prompt()
    def dated() -> t.Any:
        return {"day": datetime.date(2024, 1, 2)}

    with pytest.raises(MCPError) as info:
        dispatch(mcp, "prompts/get", {"name": "opaque"})
    assert info.value.code == -32603
    assert str(info.value.message).startswith(
        "Prompt 'opaque' returned a value that cannot be sent: test_results.Opaque cannot be"
    )
    messages = dispatch(mcp, "prompts/get", {"name": "dated"})["messages"]
    assert messages == [
        {"role": "user", "content": {"type": "text", "text": '{"day":"2024-01-02"}'}}
    ]


# -- end to end ---------------------------------------------------------------------------------


@pytest.mark.e2e
def test_official_client_accepts_binary_datetime_and_pydantic_results(serve: t.Any) -> None:
    import anyio
    import mcp_types as types
    from mcp import Client

    from tests._apps.results import PNG as APP_PNG

    server = serve("tests._apps.results:app", "gevent")

    async def main() -> None:
        async with Client(server.url, mode="legacy") as c:
            tools = {tool.name: tool for tool in (await c.list_tools()).tools}
            assert tools["next_day"].input_schema["properties"]["when"]["format"] == "date-time"
            assert tools["reverse"].output_schema is not None

            image = await c.call_tool("pixel", {})
            block = image.content[0]
            assert isinstance(block, types.ImageContent) and block.mime_type == "image/png"
            assert base64.b64decode(block.data) == APP_PNG

            # call_tool checks structuredContent against outputSchema itself
            later = await c.call_tool("next_day", {"when": "2024-02-28T23:00:00Z"})
            assert not later.is_error
            assert later.structured_content == {"result": "2024-02-29T23:00:00+00:00"}

            route = {
                "name": "loop",
                "points": [{"x": 1}, {"x": 2, "y": 3}],
                "departs": "2024-05-01T08:00:00+00:00",
            }
            back = await c.call_tool("reverse", {"route": route})
            assert not back.is_error, back
            assert back.structured_content == {
                "name": "loop (back)",
                "points": [{"x": 2, "y": 3}, {"x": 1, "y": 0}],
                "departs": "2024-05-02T08:00:00Z",
            }
            bad = await c.call_tool("reverse", {"route": {**route, "points": [{"x": "a"}]}})
            assert bad.is_error
            text = bad.content[0]
            assert isinstance(text, types.TextContent)
            assert "'route.points[0].x'" in text.text

    anyio.run(main)
