"""Typed elicitation: ``ctx.elicit(message, Model)`` with a pydantic model or a dataclass.

In process in both eras (MCPTestClient), and end to end: the official ``mcp`` client's
elicitation callback against gunicorn in both eras. The module serves its own app to
gunicorn (``tests.test_elicitation:app``).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import typing as t

import pydantic
import pytest
from flask import Flask
from harness import start_server

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.server.elicitation import AcceptedElicitation
from flask_mcp.server.elicitation import CancelledElicitation
from flask_mcp.server.elicitation import DeclinedElicitation
from flask_mcp.server.elicitation import ElicitationSchemaError
from flask_mcp.server.elicitation import elicitation_form
from flask_mcp.testing import MCPTestClient

ERAS = ["2025-11-25", "2026-07-28"]


class Seat(enum.Enum):
    WINDOW = "window"
    AISLE = "aisle"


class Booking(pydantic.BaseModel):
    name: str
    nights: int = pydantic.Field(ge=1, le=30)
    seat: Seat = Seat.AISLE
    breakfast: bool = False
    email: str | None = None


@dataclasses.dataclass
class Trip:
    city: str
    start: datetime.date
    people: int = 1
    note: str | None = None


mcp = MCP(name="elicit", version="1.0")


def _describe(result: t.Any) -> str:
    if isinstance(result, AcceptedElicitation):
        return f"{type(result.data).__name__} {result.data!r}"
    return result.action


@mcp.tool()
def book(ctx: Context) -> str:
    """Ask for a booking (a pydantic model)."""
    return _describe(ctx.elicit("Your booking?", Booking))


@mcp.tool()
def plan(ctx: Context) -> str:
    """Ask for a trip (a dataclass)."""
    return _describe(ctx.elicit("Your trip?", Trip))


@mcp.tool()
def raw(ctx: Context) -> str:
    """Ask with a JSON Schema dict: the raw answer comes back."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    return repr(ctx.elicit("A number?", schema))


app = Flask(__name__)
app.config.update(SECRET_KEY="elicitation-e2e")
mcp.init_app(app)

ANSWERS: dict[str, dict[str, t.Any]] = {
    "Your booking?": {"name": "Ada", "nights": 3, "seat": "window", "breakfast": True},
    "Your trip?": {"city": "Vienna", "start": "2026-05-03", "people": 2},
    "A number?": {"n": 7},
}
BOOKED = (
    "Booking Booking(name='Ada', nights=3, seat=<Seat.WINDOW: 'window'>, breakfast=True,"
    " email=None)"
)
PLANNED = "Trip Trip(city='Vienna', start=datetime.date(2026, 5, 3), people=2, note=None)"


def test_the_requested_schema_is_flat() -> None:
    assert elicitation_form(Booking).schema == {
        "type": "object",
        "properties": {
            "name": {"title": "Name", "type": "string"},
            "nights": {"title": "Nights", "type": "integer", "minimum": 1, "maximum": 30},
            "seat": {
                "title": "Seat",
                "type": "string",
                "enum": ["window", "aisle"],
                "default": "aisle",
            },
            "breakfast": {"title": "Breakfast", "type": "boolean", "default": False},
            "email": {"title": "Email", "type": "string"},
        },
        "required": ["name", "nights"],
    }
    assert elicitation_form(Trip).schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "start": {"type": "string", "format": "date"},
            "people": {"type": "integer", "default": 1},
            "note": {"type": "string"},
        },
        "required": ["city", "start"],
    }


class Nested(pydantic.BaseModel):
    booking: Booking


@dataclasses.dataclass
class Tags:
    tags: list[str]


@pytest.mark.parametrize(
    ("requested", "field"),
    [
        (Nested, "'booking'"),
        (Tags, "'tags'"),
        (
            {"type": "object", "properties": {"when": {"type": "string", "format": "time"}}},
            "'when'",
        ),
        ({"type": "object", "properties": {"x": {"type": "object"}}}, "'x'"),
    ],
)
def test_a_form_that_is_not_flat_is_refused(requested: t.Any, field: str) -> None:
    with pytest.raises(ElicitationSchemaError, match=f"the field {field} renders as") as caught:
        elicitation_form(requested)
    assert "MCP forms are flat" in str(caught.value)
    with pytest.raises(ElicitationSchemaError, match="pydantic model class, a dataclass"):
        elicitation_form(int)


def _client(version: str, answer: t.Callable[[dict[str, t.Any]], dict[str, t.Any]]) -> t.Any:
    return MCPTestClient(app, protocol_version=version, elicitation=answer)


@pytest.mark.parametrize("version", ERAS)
def test_accepted_answers_are_validated_objects(version: str) -> None:
    asked: list[dict[str, t.Any]] = []

    def answer(params: dict[str, t.Any]) -> dict[str, t.Any]:
        asked.append(params)
        return {"action": "accept", "content": ANSWERS[params["message"]]}

    with _client(version, answer) as client:
        assert client.call_tool("book")["content"][0]["text"] == BOOKED
        assert client.call_tool("plan")["content"][0]["text"] == PLANNED
        assert client.call_tool("raw")["content"][0]["text"] == (
            "{'action': 'accept', 'content': {'n': 7}}"
        )
    assert asked[0]["requestedSchema"] == elicitation_form(Booking).schema
    assert asked[0]["mode"] == "form"


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel(version: str, action: str) -> None:
    with _client(version, lambda params: {"action": action}) as client:
        assert client.call_tool("book")["content"][0]["text"] == action
        assert client.call_tool("plan")["content"][0]["text"] == action
    assert DeclinedElicitation().action == "decline" and CancelledElicitation().action == "cancel"


@pytest.mark.parametrize("version", ERAS)
def test_content_that_does_not_fit_is_an_error_result(version: str) -> None:
    bad = {
        "Your booking?": {"name": "Ada", "nights": 99},
        "Your trip?": {"city": "V", "start": "soon"},
        "A number?": {"n": "seven"},
    }
    with _client(version, lambda p: {"action": "accept", "content": bad[p["message"]]}) as client:
        booked = client.call_tool("book")
        planned = client.call_tool("plan")
        raw_answer = client.call_tool("raw")
    assert booked["isError"] and planned["isError"] and raw_answer["isError"]
    assert raw_answer["content"][0]["text"].startswith(
        "The answer to the form does not fit the requested schema:"
    )
    assert "'n'" in raw_answer["content"][0]["text"]
    assert booked["content"][0]["text"].startswith(
        "The answer to the form does not fit Booking: 'nights'"
    )
    assert planned["content"][0]["text"].startswith("The answer to the form does not fit Trip:")
    assert "'start'" in planned["content"][0]["text"]


def test_a_malformed_answer_on_a_session_is_an_error_as_at_2026() -> None:
    with _client("2025-11-25", lambda params: {"action": "maybe"}) as client:
        answered = client.call_tool("raw")
    assert answered["isError"]
    assert "malformed result: it must be an ElicitResult" in answered["content"][0]["text"]


# -- end to end: the official client against gunicorn -----------------------------------------


@pytest.fixture(scope="module")
def server() -> t.Iterator[t.Any]:
    with start_server("tests.test_elicitation:app", "gevent") as srv:
        yield srv


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_official_client_fills_typed_forms(server: t.Any, mode: str) -> None:
    import anyio
    import mcp_types as types
    from mcp import Client

    schemas: list[t.Any] = []

    async def elicitation(context: t.Any, params: t.Any) -> types.ElicitResult:
        schemas.append(params.requested_schema)
        if params.message == "Your trip?":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=ANSWERS[params.message])

    async def main() -> list[str]:
        async with Client(server.url, mode=mode, elicitation_callback=elicitation) as client:
            texts = []
            for tool in ("book", "plan"):
                result = await client.call_tool(tool, {})
                block = result.content[0]
                assert isinstance(block, types.TextContent) and not result.is_error
                texts.append(block.text)
            return texts

    assert anyio.run(main) == [BOOKED, "decline"]
    assert schemas[0] == elicitation_form(Booking).schema
    assert schemas[1] == elicitation_form(Trip).schema
