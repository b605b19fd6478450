"""HTTP responses of the MCP endpoint: JSON bodies and JSON-RPC errors."""

from __future__ import annotations

import typing as t

from flask import Response
from werkzeug.datastructures import Headers

from ..errors import INVALID_REQUEST
from ..protocol import jsonrpc


def json_response(
    body: t.Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """Return a compact JSON response."""
    data = jsonrpc.dumps_bytes(body)
    if headers is None and _BUILT_DIRECTLY:
        return _direct(data, status)
    return Response(data, status=status, content_type="application/json", headers=headers)


_new_response = object.__new__
#: ``"200 OK"`` and the like, as Werkzeug writes them, learnt per status code.
_STATUS_LINES: dict[int, str] = {}


def _direct(data: bytes, status: int) -> Response:
    """Return what ``Response(data, status=status, content_type="application/json")`` builds.

    Werkzeug's constructor checks every header value for newlines and parses
    the status, a fifth of a small call's cost in the view; here the two headers,
    whose values are known to be clean, and the status line, learnt once per
    code, are set at once. :data:`_BUILT_DIRECTLY` says whether the two ways
    build the same object with the installed Werkzeug; when not, only the
    constructor is used.
    """
    line = _STATUS_LINES.get(status)
    if line is None:
        line = _STATUS_LINES[status] = Response(status=status).status
    response: Response = _new_response(Response)
    headers = response.headers = Headers()
    headers._list = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    response._status = line
    response._status_code = status
    response.direct_passthrough = False
    response._on_close = []
    response.response = [data]
    return response


def _same_as_constructor() -> bool:
    """Tell whether :func:`_direct` builds what Werkzeug's constructor builds."""
    data = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    for status in (200, 400):
        built = Response(data, status=status, content_type="application/json")
        direct = _direct(data, status)
        fields = dict(vars(built), headers=list(built.headers.items()))
        if fields != dict(vars(direct), headers=list(direct.headers.items())):
            return False
    return True


#: Whether JSON responses without extra headers skip Werkzeug's constructor (:func:`_direct`).
_BUILT_DIRECTLY = _same_as_constructor()


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
