"""The values of URL variables in ``MCP_PATH`` (``/t/<tenant>/mcp``), as the request matched them.

Flask puts them in ``request.view_args``; the transport copies them onto each
:class:`~flask_mcp.server.call.Call` (``call.path_args``, read by handlers as
``ctx.path_args``), onto the session a handshake-era ``initialize`` creates (a session
belongs to its path: its id under another path is an unknown session) and into a
task's record. Without variables in ``MCP_PATH`` they are ``{}``.
"""

from __future__ import annotations

import typing as t

from flask import request

from ..convert import to_json

if t.TYPE_CHECKING:
    from flask import Request


def current_path_args(req: Request | None = None) -> dict[str, t.Any]:
    """Return the URL variables the current request matched (``{}`` outside a request).

    :param req: the request, when the caller holds it: an attribute of Flask's
        ``request`` proxy costs a context lookup (0.6 us), the object's own attribute
        nothing.
    """
    if req is None:
        try:
            req = t.cast("Request", request._get_current_object())  # type: ignore[attr-defined]
        except RuntimeError:  # outside a request: one lookup instead of has_request_context's
            return {}
    view_args = req.view_args
    return dict(view_args) if view_args else {}


def stored_path_args(found: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
    """Return them as a session record keeps them: JSON values (a ``uuid`` variable's
    value as its string), so that a record read back from Redis compares equal.

    :param found: what :func:`current_path_args` returned, when the caller has it.
    """
    if found is None:
        found = current_path_args()
    return t.cast("dict[str, t.Any]", to_json(found)) if found else found


__all__ = ["current_path_args", "stored_path_args"]
