"""The wire names of MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865, stable 2026-01-26).

Here, below every layer that needs them: :meth:`flask_mcp.Context.client_supports_ui`
reads the client's settings with them, and :mod:`flask_mcp.extensions.apps` serves views
with them.
"""

from __future__ import annotations

#: The extension's identifier, in ``capabilities.extensions``.
EXTENSION_ID = "io.modelcontextprotocol/ui"
#: The media type of a view; hosts render no other, and declare it in their ``mimeTypes``.
APP_MIME_TYPE = "text/html;profile=mcp-app"

__all__ = ["APP_MIME_TYPE", "EXTENSION_ID"]
