"""Building the questions of :meth:`Context.ask <flask_mcp.Context.ask>`.

The multi round-trip machinery itself is :mod:`flask_mcp.server.mrtr`; this
module keeps ``from flask_mcp import mrtr`` and ``mrtr.elicitation(...)``
working.
"""

from __future__ import annotations

from .server.mrtr import InputRequest
from .server.mrtr import elicitation
from .server.mrtr import roots
from .server.mrtr import sampling

__all__ = ["InputRequest", "elicitation", "roots", "sampling"]
