"""What a tool's signature publishes by accident warns at registration; what cannot work fails."""

from __future__ import annotations

import typing as t
import warnings

import pytest

from flask_mcp import MCP
from flask_mcp import RegistrationWarning
from flask_mcp.content import ToolResult


class Opaque:
    """A plain class: no result can carry its instances."""


class Bag(dict):  # type: ignore[type-arg]
    """A dict subclass: it is sent, but cannot be described in JSON Schema."""


@pytest.fixture
def mcp() -> MCP:
    return MCP(name="checks", version="1")


def test_untyped_parameters_warn_naming_the_function_and_the_fix(mcp: MCP) -> None:
    with pytest.warns(RegistrationWarning) as caught:

        @mcp.tool()
        def search(query, limit: int = 10, page=1) -> str:  # type: ignore[no-untyped-def]
            return ""

    (warning,) = caught
    message = str(warning.message)
    assert message.startswith("The tool 'search' (test_tool_checks.")
    assert "(query, page)" in message and "publishes {}" in message
    assert "`query: str`" in message and "typing.Any" in message
    assert warning.filename == __file__  # points at the decorator, not at Flask-MCP
    schema = mcp.registry.tools["search"].input.schema
    assert schema["properties"]["query"] == {}  # still registered, as before


def test_typed_any_and_explicit_schemas_do_not_warn(mcp: MCP) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RegistrationWarning)

        @mcp.tool()
        def anything(value: t.Any) -> str:
            return ""

        @mcp.tool(input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
        def raw(arguments):  # type: ignore[no-untyped-def]
            return ""

        @mcp.tool(mime_type="image/png")
        def picture() -> bytes:
            return b""

        @mcp.tool()
        def result() -> ToolResult:
            return ToolResult("x")

        @mcp.tool(structured_output=False)
        def bag() -> Bag:
            return Bag()


def test_ctx_annotated_context_is_not_an_untyped_parameter(mcp: MCP) -> None:
    from flask_mcp import Context

    with warnings.catch_warnings():
        warnings.simplefilter("error", RegistrationWarning)

        @mcp.tool()
        def fine(n: int, context: Context) -> int:
            return n


def test_a_return_class_no_result_can_carry_is_refused(mcp: MCP) -> None:
    def make() -> Opaque:
        return Opaque()

    with pytest.raises(TypeError, match=r"annotated to return Opaque.*every call would fail"):
        mcp.add_tool(make)

    def maybe() -> Opaque | None:
        return None

    with pytest.raises(TypeError, match="Make it a dataclass, a TypedDict or a pydantic model"):
        mcp.add_tool(maybe)
    assert not mcp.registry.tools


def test_a_return_annotation_without_a_schema_warns(mcp: MCP) -> None:
    with pytest.warns(RegistrationWarning, match=r"'bag'.*publishes no outputSchema"):

        @mcp.tool()
        def bag() -> Bag:
            return Bag(a=1)

    assert mcp.registry.tools["bag"].output is None
