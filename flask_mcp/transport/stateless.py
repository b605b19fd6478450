"""The stateless 2026-07-28 revision, served next to the handshake era on one endpoint.

Every request is one independent POST that carries its protocol version,
client info and client capabilities in ``params._meta``; there is no
``initialize`` and no session. This module validates such a POST in the order
the spec and the conformance suite require (``_meta``, ``MCP-Protocol-Version``,
supported version, ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*``, method), runs it
through the one runner (:func:`flask_mcp.transport.runner.serve_http`, as the handshake
era does), which answers with JSON or, once the handler sends a notification,
with an SSE stream that ends with the response. Nothing here
lives in process memory between requests: multi-round state travels sealed in
``requestState`` (:mod:`flask_mcp.server.mrtr`) and change notifications go through
the backend's pub/sub (:mod:`flask_mcp.transport.listen`).
"""

from __future__ import annotations

import typing as t

from flask import Response
from flask import request

from .. import protocol
from ..errors import HEADER_MISMATCH
from ..errors import INVALID_REQUEST
from ..errors import MCPError
from ..kernel import intake
from ..protocol import jsonrpc
from ..protocol.header_mirror import mirrors_body
from ..protocol.headers import NAME_SOURCES
from ..protocol.headers import TASKS_NAME_SOURCES
from ..protocol.headers import HeaderMismatch
from ..protocol.headers import WSGIHeaders
from ..protocol.headers import validate_protocol_version_header
from ..protocol.headers import validate_routing_headers
from ..runtime import concurrency as _concurrency
from ..server.dispatcher import EXECUTE
from ..server.dispatcher import INLINE
from . import listen
from . import runner
from .path_args import current_path_args
from .responses import json_response

if t.TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment
    from flask import Request

    from ..auth import AuthInfo
    from ..runtime.state import AppState
    from ..server.dispatcher import Dispatcher

#: Methods whose ``Mcp-Name`` header is checked: tasks are routed by ``taskId``.
ROUTED_NAMES = {**NAME_SOURCES, **TASKS_NAME_SOURCES}


def handle_stateless(
    dispatcher: Dispatcher,
    state: AppState,
    message: t.Any,
    auth: AuthInfo | None = None,
    req: Request | None = None,
) -> Response:
    """Serve one stateless (2026-07-28) POST whose body is already parsed.

    :param req: the request (default: the current one), read through its own
        attributes rather than the ``request`` proxy's.
    """
    if req is None:
        req = t.cast("Request", request._get_current_object())  # type: ignore[attr-defined]
    try:
        return _serve(dispatcher, state, message, auth, req)
    except HeaderMismatch as exc:
        error = {"code": HEADER_MISMATCH, "message": exc.message}
        return json_response(jsonrpc.error(jsonrpc.request_id_of(message), error), 400)
    except MCPError as exc:
        answer = jsonrpc.error_from(jsonrpc.request_id_of(message), exc)
        return json_response(answer, exc.http_status or 400)


def _check_headers(
    dispatcher: Dispatcher,
    message: dict[str, t.Any],
    params: dict[str, t.Any],
    version: t.Any,
    environ: WSGIEnvironment,
) -> None:
    """Check the MCP headers against the body, then the protocol version, in the spec's order.

    :raises HeaderMismatch: a header is missing or differs from the body (-32020).
    :raises MCPError: the version is not a 2026-07-28 one (-32022).
    """
    method = message["method"]
    tools = dispatcher.registry.tools
    source = ROUTED_NAMES.get(method)
    name = params.get(source) if source is not None else None
    if not isinstance(name, str):
        name = None
    tool = tools.get(name) if name is not None and method == "tools/call" else None
    if (
        version in protocol.STATELESS_VERSIONS
        and (tool is None or not tool.header_params)
        and mirrors_body(environ, method, version, name)
    ):
        return  # every header repeats the body as is: the checks below would pass
    headers = WSGIHeaders(environ)
    validate_protocol_version_header(headers, message)
    intake.check_stateless_version(version)
    validate_routing_headers(
        headers,
        message,
        tool_header_params=lambda name: tools[name].header_params if name in tools else (),
        name_sources=ROUTED_NAMES,
    )


def _serve(
    dispatcher: Dispatcher,
    state: AppState,
    message: t.Any,
    auth: AuthInfo | None,
    req: Request,
) -> Response:
    environ = req.environ
    if isinstance(message, list):
        raise MCPError(
            INVALID_REQUEST,
            "Invalid Request: protocol 2026-07-28 takes one JSON-RPC message per POST, "
            "not a batch.",
        )
    kind = jsonrpc.classify(message)
    if kind == jsonrpc.RESPONSE:
        raise MCPError(
            INVALID_REQUEST,
            "Invalid Request: in protocol 2026-07-28 clients send no responses; answer input "
            "requests in the inputResponses of a retry.",
        )
    if kind == jsonrpc.NOTIFICATION:
        return Response(status=202)
    params = message.get("params")
    meta = intake.request_meta(params)
    assert isinstance(params, dict)
    version = meta[protocol.META_PROTOCOL_VERSION]
    _check_headers(dispatcher, message, params, version, environ)
    method = message["method"]
    if method == "subscriptions/listen":
        sock = _concurrency.client_socket(environ)
        return listen.open_stream(
            dispatcher.registry,
            state,
            message["id"],
            params,
            sock,
            auth=auth,
            address=req.remote_addr,
            path_args=current_path_args(req),
            server_info=dispatcher.info.fields,
        )
    record = intake.offered(dispatcher, method, protocol.STATELESS)
    call = intake.stateless_call(
        state,
        message,
        version,
        auth,
        path_args=current_path_args(req),
        client_address=req.remote_addr,
        method_record=record,
    )
    where = dispatcher.placement(call)
    if where == INLINE and "inputResponses" not in params and "requestState" not in params:
        # A first round of a handler that runs inline:
        # no context to build, no peer to watch, so no closure for either.
        return runner.answer_response(runner.run_inline(dispatcher, call), call.era)
    context = None
    if where != EXECUTE:
        try:  # a later round is checked here, even if its handler runs inline
            context = intake.round_context(call)
        except MCPError as exc:
            return json_response(jsonrpc.error_from(call.request_id, exc), exc.http_status or 200)
    return runner.serve_http(
        dispatcher,
        call,
        context=context,
        peer=lambda: _concurrency.client_socket(environ),
        where=where,
    )


__all__ = ["handle_stateless"]
