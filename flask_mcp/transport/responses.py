"""HTTP responses of the MCP endpoint: JSON bodies and JSON-RPC errors."""

from __future__ import annotations

import typing as t

from flask import Response

from ..errors import INVALID_REQUEST
from ..protocol import jsonrpc


def json_response(
    body: t.Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """Return a compact JSON response."""
    return Response(
        jsonrpc.dumps_bytes(body), status=status, content_type="application/json", headers=headers
    )


def http_error(
    status: int,
    message: str,
    *,
    code: int = INVALID_REQUEST,
    request_id: t.Any = None,
    data: t.Any = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """Return an HTTP error whose body is a JSON-RPC error."""
    error: dict[str, t.Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json_response(jsonrpc.error(request_id, error), status, headers)


def no_content() -> Response:
    """Return 204 No Content, without a ``Content-Type`` (RFC 9110)."""
    response = Response(status=204)
    del response.headers["Content-Type"]
    return response


__all__ = ["http_error", "json_response", "no_content"]
