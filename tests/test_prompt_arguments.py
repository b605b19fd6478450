"""Prompt arguments arrive as strings: they are converted by their annotations, in both eras."""

from __future__ import annotations

import datetime
import enum
import typing as t

import pytest
from flask import Flask

from flask_mcp import MCP
from flask_mcp import MCPError
from flask_mcp.testing import MCPTestClient

ERAS = ["2025-11-25", "2026-07-28"]


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


def make_app() -> Flask:
    mcp = MCP(name="prompts", version="1.0")

    @mcp.prompt()
    def report(
        days: int,
        urgent: bool = False,
        ratio: float = 1.0,
        priority: Priority = Priority.LOW,
        since: datetime.date | None = None,
        tone: t.Literal["dry", "warm"] = "dry",
        topic: str = "all",
    ) -> str:
        """Write a report.

        :param days: Days to cover.
        """
        values = (days, urgent, ratio, priority, since, tone, topic)
        return " ".join(f"{type(v).__name__}={v!r}" for v in values)

    app = Flask(__name__)
    mcp.init_app(app)
    return app


@pytest.mark.parametrize("version", ERAS)
def test_arguments_are_converted_by_their_annotations(version: str) -> None:
    with MCPTestClient(make_app(), protocol_version=version) as client:
        text = client.get_prompt(
            "report",
            {
                "days": "3",
                "urgent": "true",
                "ratio": "0.5",
                "priority": "high",
                "since": "2024-05-01",
                "tone": "warm",
                "topic": "12",
            },
        )["messages"][0]["content"]["text"]
        assert text == (
            "int=3 bool=True float=0.5 Priority=<Priority.HIGH: 'high'>"
            " date=datetime.date(2024, 5, 1) str='warm' str='12'"
        )
        defaults = client.get_prompt("report", {"days": "1", "urgent": "no"})
        assert "int=1 bool=False float=1.0" in defaults["messages"][0]["content"]["text"]


@pytest.mark.parametrize("version", ERAS)
def test_a_string_that_does_not_convert_is_invalid_params(version: str) -> None:
    with (
        MCPTestClient(make_app(), protocol_version=version) as client,
        pytest.raises(MCPError) as caught,
    ):
        client.get_prompt("report", {"days": "three", "urgent": "maybe", "priority": "mid"})
    assert caught.value.code == -32602
    message = str(caught.value)
    assert "'days': 'three' is not an integer" in message
    assert "'urgent': 'maybe' is not true or false" in message
    assert "'priority': 'mid' is not one of 'low', 'high'" in message


@pytest.mark.parametrize("version", ERAS)
def test_prompts_list_tells_the_kind_of_value_in_the_description(version: str) -> None:
    # PromptArgument has name, title, description and required only: no type field.
    with MCPTestClient(make_app(), protocol_version=version) as client:
        (prompt,) = client.list_prompts()
    by_name = {argument["name"]: argument for argument in prompt["arguments"]}
    assert by_name["days"] == {
        "name": "days",
        "description": "Days to cover (an integer).",
        "required": True,
    }
    assert by_name["urgent"]["description"] == "True or false"
    assert by_name["priority"]["description"] == "One of low, high"
    assert by_name["since"]["description"] == "An ISO 8601 date"
    assert by_name["tone"]["description"] == "One of dry, warm"
    assert "description" not in by_name["topic"]
    fields = {"name", "description", "required"}
    assert all(set(argument) <= fields for argument in by_name.values())


@pytest.mark.parametrize(
    "annotation", [list[str], dict[str, int], int | str, t.Literal[1.5], "Box"]
)
def test_an_annotation_no_string_converts_to_is_refused_at_registration(annotation: t.Any) -> None:
    mcp = MCP(name="prompts", version="1.0")

    class Box:
        pass

    def bad(value: str) -> str:
        return value

    bad.__annotations__["value"] = Box if annotation == "Box" else annotation
    with pytest.raises(TypeError, match=r"The prompt 'bad' cannot take its parameter 'value'"):
        mcp.prompt()(bad)
    assert "bad" not in mcp.registry.prompts


def test_positional_only_parameters_are_refused_at_registration() -> None:
    """Prompt arguments and template variables are passed by name: ``(a, /)`` never works."""
    mcp = MCP(name="prompts", version="1.0")

    def greet(name: str, /) -> str:
        return f"Hello {name}"

    with pytest.raises(TypeError, match=r"positional-only parameter 'name'"):
        mcp.prompt()(greet)
    assert "greet" not in mcp.registry.prompts

    def page(name: str, /) -> str:
        return name

    with pytest.raises(TypeError, match=r"as keyword arguments; missing: name"):
        mcp.resource("pages://{name}")(page)

    def any_page(name: str, **others: str) -> str:
        return name

    mcp.resource("pages://{name}/{part}")(any_page)  # **others takes the part
