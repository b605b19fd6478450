"""The JSON codec: orjson when installed, the standard library otherwise, the same JSON."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import typing as t
import uuid

import orjson
import pytest
from flask import Flask
from wire import initialize
from wire import rpc

from flask_mcp import MCP
from flask_mcp import json_codec
from flask_mcp.errors import PARSE_ERROR
from flask_mcp.errors import MCPError
from flask_mcp.protocol import jsonrpc


@pytest.fixture(params=["orjson", "stdlib"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with orjson, then with the standard library only."""
    if request.param == "stdlib":
        monkeypatch.setattr(json_codec, "orjson", None)
    else:
        assert json_codec.orjson is orjson
    return t.cast(str, request.param)


def _stdlib(value: t.Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode()


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Color(enum.IntEnum):
    RED = 1


MESSAGES: list[t.Any] = [
    {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "héllo ✓"}]}},
    {"jsonrpc": "2.0", "id": "a", "error": {"code": -32602, "message": "x", "data": None}},
    {"list": [1, 2.5, -0.0, True, False, None, "", "\u2028"], "nested": {"a": {"b": [{}]}}},
    {1: "int key", None: "null key", False: "bool key", 2.5: "float key"},
    {"when": datetime.datetime(2026, 11, 21, 8, 30, tzinfo=datetime.timezone.utc)},
    {"day": datetime.date(2026, 11, 21), "id": uuid.UUID(int=7), "point": Point(1, 2)},
    {"amount": decimal.Decimal("1.10"), "tags": {"x"}, "color": Color.RED},
    {"big": 2**80, "small": -(2**70)},
    [2**63 - 1, -(2**63)],
]


@pytest.mark.parametrize("message", MESSAGES, ids=range(len(MESSAGES)))
def test_dumps_writes_what_the_standard_library_writes(codec: str, message: t.Any) -> None:
    assert jsonrpc.dumps_bytes(message) == _stdlib(message)
    assert jsonrpc.dumps(message) == _stdlib(message).decode()


def test_dumps_escapes_a_lone_surrogate(codec: str) -> None:
    body = jsonrpc.dumps_bytes({"text": "a\ud800b"})
    assert body == b'{"text":"a\\ud800b"}'
    assert json.loads(body) == {"text": "a\ud800b"}


BODIES: list[bytes] = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"}}',
    b'{"id": 123456789012345678901234567890, "n": -9223372036854775809}',
    b'{"u64": 18446744073709551615, "f": 1.5e300, "tiny": 0.1e-400}',
    '{"text": "héllo ✓ \\u00e9 \\ud83d\\ude00"}'.encode(),
    b'{"lone": "\\ud800"}',
    b'{"a": 1, "a": 2}',
    b"  [1, 2, 3]  ",
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_loads_reads_what_the_standard_library_reads(codec: str, body: bytes) -> None:
    expected = json.loads(body)
    decoded = jsonrpc.loads(body)
    assert decoded == expected
    # the same types too: an int that came back as a float would be written "1.0"
    assert jsonrpc.dumps_bytes(decoded) == jsonrpc.dumps_bytes(expected)


REFUSED: list[bytes] = [
    b"NaN",
    b'{"a": Infinity}',
    b"1e999",
    b'{"a": -1E400}',
    b"\xef\xbb\xbf{}",
    b'"\xff"',
    b"{}x",
    b"",
    b"[" * 100_000 + b"]" * 100_000,
]


@pytest.mark.parametrize("body", REFUSED, ids=range(len(REFUSED)))
def test_loads_refuses_what_json_forbids(codec: str, body: bytes) -> None:
    with pytest.raises(MCPError) as caught:
        jsonrpc.loads(body)
    assert caught.value.code == PARSE_ERROR
    assert caught.value.message.startswith("Parse error:")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'\xef\xbb\xbf{"jsonrpc": "2.0"}', "byte-order mark"),
        (b'{"id": 1, "n": ' + b"7" * 5000 + b"}", "more than 4300 digits"),
    ],
    ids=["bom", "long-number"],
)
def test_a_parse_error_says_what_the_sender_can_change(codec: str, body: bytes, says: str) -> None:
    with pytest.raises(MCPError) as caught:
        jsonrpc.loads(body)
    assert says in caught.value.message
    assert "set_int_max_str_digits" not in caught.value.message


def test_a_tool_echoing_a_lone_surrogate_is_answered(codec: str) -> None:
    mcp = MCP(name="echo", version="1")

    @mcp.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    app = Flask(__name__)
    mcp.init_app(app)
    client = app.test_client()
    session = initialize(client)
    response = rpc(client, session, "tools/call", {"name": "echo", "arguments": {"text": "\ud800"}})
    assert response.status_code == 200
    assert json.loads(response.get_data())["result"]["content"][0]["text"] == "\ud800"
