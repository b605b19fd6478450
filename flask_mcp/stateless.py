"""The stateless 2026-07-28 revision (served next to the handshake era)."""

from __future__ import annotations

import typing as t

from flask import Response

from . import jsonrpc
from . import protocol
from .errors import UNSUPPORTED_PROTOCOL_VERSION

if t.TYPE_CHECKING:
    from .extension import MCP
    from .extension import AppState


def handle_stateless(mcp: MCP, state: AppState, message: t.Any, auth: t.Any = None) -> Response:
    """Serve one stateless request."""
    request_id = jsonrpc.request_id_of(message)
    error = {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": "Unsupported protocol version: this server speaks the handshake era only.",
        "data": {"supported": list(protocol.HANDSHAKE_VERSIONS)},
    }
    return Response(
        jsonrpc.dumps(jsonrpc.error(request_id, error)), status=400, mimetype="application/json"
    )
