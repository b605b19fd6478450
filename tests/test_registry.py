"""The registry alone: records, capabilities, listing caches and pagination, without HTTP."""

from __future__ import annotations

import pytest

from flask_mcp.errors import InvalidParams
from flask_mcp.server.declarations import Declarations
from flask_mcp.server.registry import Registry
from flask_mcp.server.registry import decode_cursor
from flask_mcp.server.registry import encode_cursor
from flask_mcp.server.registry import paginate


class Server(Declarations):
    def __init__(self) -> None:
        self.registry = Registry()


def test_capabilities_follow_what_is_registered() -> None:
    server = Server()
    registry = server.registry
    assert registry.capabilities() == {"logging": {}}
    assert not registry.offers("tools/call") and registry.offers("ping")

    @server.tool()
    def add(a: int) -> int:
        return a

    @server.resource("docs://{name}")
    def doc(name: str) -> str:
        return name

    assert registry.capabilities() == {
        "logging": {},
        "resources": {"subscribe": True, "listChanged": True},
        "tools": {"listChanged": True},
    }
    assert registry.offers("tools/list") and registry.offers("resources/read")
    assert not registry.offers("prompts/get") and not registry.offers("completion/complete")


def test_listings_are_cached_until_a_change_and_listeners_hear_it() -> None:
    server = Server()
    heard: list[str] = []
    server.registry.listeners.append(heard.append)
    server.add_tool(lambda: "a", name="first")
    listed = server.registry.described("tools")
    assert server.registry.described("tools") is listed  # cached
    server.add_tool(lambda: "b", name="second")
    assert [tool["name"] for tool in server.registry.described("tools")] == ["first", "second"]
    assert server.remove_tool("first") and not server.remove_tool("first")
    assert heard == ["tools", "tools", "tools"]


def test_scoped_names_and_duplicates() -> None:
    server = Server()
    server.add_tool(lambda: "x", name="open")
    server.add_tool(lambda: "x", name="guarded", scopes=["admin"])
    assert server.registry.scoped() == ["guarded"]
    with pytest.raises(ValueError, match="already registered"):
        server.add_tool(lambda: "x", name="open")
    with pytest.raises(ValueError, match="Invalid tool name"):
        server.add_tool(lambda: "x", name="has space")
    for name in ("trailing_newline\n", "", "x" * 129):  # "$" matched before a final newline
        with pytest.raises(ValueError, match="Invalid tool name"):
            server.add_tool(lambda: "x", name=name)
    server.add_tool(lambda: "x", name="x" * 128)


def test_templates_match_and_refuse_unsafe_values() -> None:
    server = Server()

    @server.resource("files://{path}")
    def read(path: str) -> str:
        return path

    template, variables = server.registry.find_template("files://notes.txt")  # type: ignore[misc]
    assert template.uri_template == "files://{path}" and variables == {"path": "notes.txt"}
    assert server.registry.find_template("other://x") is None
    with pytest.raises(InvalidParams, match="'..' segments"):
        server.registry.find_template("files://..")


def test_pagination_and_cursors() -> None:
    items = [{"n": n} for n in range(5)]
    page, cursor = paginate(items, None, 2)
    assert page == items[:2] and cursor is not None and decode_cursor(cursor) == 2
    page, cursor = paginate(items, encode_cursor(4), 2)
    assert page == items[4:] and cursor is None
    assert paginate(items, None, 10) == (items, None)
    for bad in ("garbage", 3, encode_cursor(9)):
        with pytest.raises(InvalidParams):
            paginate(items, bad, 2)


def test_prompt_arguments_read_the_one_param_parser() -> None:
    server = Server()

    @server.prompt()
    def review(code: str, style: str = "terse") -> str:
        """Review code.

        :param str code: the code to review,
            which may be long.
        :param style: how to write the review.
        """
        return code

    assert server.registry.prompts["review"].arguments == [
        {"name": "code", "description": "the code to review, which may be long.", "required": True},
        {"name": "style", "description": "how to write the review.", "required": False},
    ]
