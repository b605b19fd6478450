"""Tiny WSGI applications that the tests serve in subprocesses (``tests._apps.NAME:app``)."""

from __future__ import annotations

import typing as t

if t.TYPE_CHECKING:
    from flask_mcp import MCP


def add_tool_adder(mcp: MCP) -> None:
    """Give ``mcp`` the tool ``add_tool``, which registers another tool at run time."""

    @mcp.tool()
    def add_tool(name: str) -> str:
        """Register a new tool called ``name``: every session is told the tool list changed."""

        def echo(text: str) -> str:
            return text

        mcp.add_tool(echo, name=name, description=f"Echo, added at run time as {name}.")
        return f"added {name}"
