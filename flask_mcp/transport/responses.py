"""HTTP responses of the MCP endpoint: JSON bodies and JSON-RPC errors."""

from __future__ import annotations

import typing as t

from flask import Response
from werkzeug.datastructures import Headers

from ..errors import INVALID_REQUEST
from ..protocol import jsonrpc
from ..runtime import concurrency as _concurrency

if t.TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

    from ..runtime.state import AppState

#: JSON bodies larger than this have their write watched (:func:`watch_large_body`); a
#: smaller one fits in a new connection's send buffer (Linux starts it at 16 KiB, and
#: the client's receive window adds to it), so the server's write of it does not wait.
WATCHED_BODY_SIZE = 16 * 1024


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


def watch_large_body(state: AppState, environ: WSGIEnvironment, response: Response) -> Response:
    """Have the supervisor watch the write of ``response`` if its body is a large JSON one.

    The server writes a body with no timeout: one larger than the socket's
    buffers, to a client that reads nothing, held the server's thread (or
    greenlet) for ever. Its connection is closed once a write waited
    ``MCP_WRITE_TIMEOUT``, as an SSE stream's is (see
    :class:`~flask_mcp.runtime.runs.PendingWrites`). SSE responses, watched
    already, and smaller bodies are returned as they are.
    """
    body = response.response
    if type(body) is list and len(body) == 1 and len(body[0]) > WATCHED_BODY_SIZE:
        # Its Content-Length is set: the server writes nothing after the body. An
        # after_request hook may still read it (get_data), which ends the watch.
        response.response = state.writes.body(_concurrency.client_socket(environ), body)
    return response


def no_content() -> Response:
    """Return 204 No Content, without a ``Content-Type`` (RFC 9110)."""
    response = Response(status=204)
    del response.headers["Content-Type"]
    return response


__all__ = ["WATCHED_BODY_SIZE", "http_error", "json_response", "no_content", "watch_large_body"]
