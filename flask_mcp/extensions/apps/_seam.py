"""A stand-in for ``flask_mcp.Extension`` until the extension seam lands (issue 27).

It has the names of the contract (``/work/plan/EXTENSION_API.md``) that :class:`Apps`
overrides, with the contract's defaults, so that the extension can be written and
unit-tested before the kernel has the seam. When the seam is merged, ``extension.py``
imports the real base instead and this module is deleted.
"""

from __future__ import annotations

import typing as t

if t.TYPE_CHECKING:
    from flask import Flask


class Extension:
    """The contract's ``Extension`` base, reduced to what :class:`Apps` uses."""

    #: ``"{vendor-prefix}/{name}"``.
    id: t.ClassVar[str]
    #: Keyword options the extension adds to ``@mcp.tool(...)``.
    tool_options: t.ClassVar[tuple[str, ...]] = ()

    def capability(self) -> dict[str, t.Any] | None:
        """Settings under ``capabilities.extensions[self.id]``; ``None``: not advertised."""
        return {}

    def setup(self, mcp: t.Any) -> None:
        """Called once by ``mcp.add_extension(self)``."""

    def init_app(self, app: Flask, mcp: t.Any) -> None:
        """Called by ``MCP.init_app`` for each app, after the declarations are final."""

    def check_tool(self, tool: t.Any, options: dict[str, t.Any]) -> None:
        """Check this extension's options of a tool at registration."""

    def tool_meta(self, tool: t.Any, options: dict[str, t.Any]) -> dict[str, t.Any] | None:
        """Return what to merge into the tool's ``_meta`` in ``tools/list``."""
        return None
