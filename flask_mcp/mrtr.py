"""Build the questions of :meth:`Context.ask <flask_mcp.Context.ask>`: the public module.

``from flask_mcp import mrtr`` then ``ctx.ask({"name": mrtr.elicitation(...)})``. The
builders live with the multi round-trip machinery (:mod:`flask_mcp.server.mrtr`), which
the server layer uses; this module is where an app imports them from.
"""

from __future__ import annotations

from .server.mrtr import InputRequest
from .server.mrtr import elicitation
from .server.mrtr import roots
from .server.mrtr import sampling

__all__ = ["InputRequest", "elicitation", "roots", "sampling"]
