"""The wire names of MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865, stable 2026-01-26).

Here, below every layer that needs them: :meth:`flask_mcp.Context.client_supports_ui`
reads the client's settings with them, and :mod:`flask_mcp.extensions.apps` serves views
with them.
"""

from __future__ import annotations

import re

#: The extension's identifier, in ``capabilities.extensions``.
EXTENSION_ID = "io.modelcontextprotocol/ui"
#: The media type of a view; hosts render no other, and declare it in their ``mimeTypes``.
APP_MIME_TYPE = "text/html;profile=mcp-app"

#: One origin of ``_meta.ui.csp`` as a host puts it in a Content-Security-Policy: a
#: host-source of CSP Level 3 (``scheme://host[:port][/path]``, the host labels of ASCII
#: letters, digits and hyphens joined by single dots, possibly starting with ``*.``, the
#: port digits or ``*``), over http(s) or ws(s). Browsers drop any other source from the
#: policy (an underscore, an empty label as in ``..``, an IPv6 literal, user info, a
#: non-ASCII host), and nothing in it can end the directive or add a keyword.
CSP_SOURCE = re.compile(
    r"(?:https?|wss?)://(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.?"
    r"(?::(?:[0-9]{1,5}|\*))?(?:/[^\s;,'\"]*)?",
    re.I,
)

__all__ = ["APP_MIME_TYPE", "CSP_SOURCE", "EXTENSION_ID"]
