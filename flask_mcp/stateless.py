"""The stateless 2026-07-28 revision, served next to the handshake era on one endpoint.

Every request is one independent POST that carries its protocol version,
client info and client capabilities in ``params._meta``; there is no
``initialize`` and no session. This module validates such a POST in the order
the spec and the conformance suite require (``_meta``, ``MCP-Protocol-Version``,
supported version, ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*``, method), runs it
through the dispatcher, and answers with JSON or, once the handler sends a
notification, with an SSE stream that ends with the response. Nothing here
lives in process memory between requests: multi-round state travels sealed in
``requestState`` (:mod:`flask_mcp.mrtr`) and change notifications go through
the backend's pub/sub (:mod:`flask_mcp.listen`).
"""

from __future__ import annotations

import logging
import time
import typing as t

from flask import Response
from flask import request
from werkzeug.wsgi import ClosingIterator

from . import _concurrency
from . import content
from . import jsonrpc
from . import listen
from . import mrtr
from . import protocol
from . import signals
from . import sse
from .backends.base import END
from .backends.base import MESSAGE
from .context import Context
from .dispatcher import Call
from .environment import bind_to_request
from .errors import HEADER_MISMATCH
from .errors import INTERNAL_ERROR
from .errors import INVALID_PARAMS
from .errors import INVALID_REQUEST
from .errors import UNSUPPORTED_PROTOCOL_VERSION
from .errors import BackendUnavailable
from .errors import MCPError
from .errors import MethodNotFound
from .errors import RequestCancelled
from .headers import HeaderMismatch
from .headers import WSGIHeaders
from .headers import validate_protocol_version_header
from .headers import validate_routing_headers
from .protocol import LOG_LEVELS
from .responses import json_response
from .runner import is_response
from .session import InlineOutbox
from .session import LocalOutbox
from .session import RequestRun

if t.TYPE_CHECKING:
    from .auth import AuthInfo
    from .dispatcher import Dispatcher
    from .state import AppState

logger = logging.getLogger("flask_mcp")
#: Seconds between checks that the client of a running request is still connected.
POLL = 1.0


def handle_stateless(
    dispatcher: Dispatcher, state: AppState, message: t.Any, auth: AuthInfo | None = None
) -> Response:
    """Serve one stateless (2026-07-28) POST whose body is already parsed."""
    request_id = jsonrpc.request_id_of(message)
    try:
        return _serve(dispatcher, state, message, auth)
    except HeaderMismatch as exc:
        error = {"code": HEADER_MISMATCH, "message": exc.message}
        return json_response(jsonrpc.error(request_id, error), 400)
    except MCPError as exc:
        return json_response(jsonrpc.error_from(request_id, exc), exc.http_status or 400)


def _request_meta(params: t.Any) -> dict[str, t.Any]:
    """Return ``params._meta`` after checking its required keys.

    :raises MCPError: -32602 (HTTP 400) naming the missing key.
    """
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise MCPError(
            INVALID_PARAMS,
            "Invalid params: protocol 2026-07-28 requests need params._meta with "
            f"{protocol.META_PROTOCOL_VERSION!r} and {protocol.META_CLIENT_CAPABILITIES!r}.",
            http_status=400,
        )
    for key, kind, example in (
        (protocol.META_PROTOCOL_VERSION, str, "a string such as '2026-07-28'"),
        (protocol.META_CLIENT_CAPABILITIES, dict, "an object; {} declares none"),
    ):
        if not isinstance(meta.get(key), kind):
            raise MCPError(
                INVALID_PARAMS,
                f"Invalid params: _meta is missing {key!r} ({example}).",
                http_status=400,
            )
    if not isinstance(meta.get(protocol.META_CLIENT_INFO, {}), dict):
        raise MCPError(
            INVALID_PARAMS,
            f"Invalid params: _meta {protocol.META_CLIENT_INFO!r} must be an object "
            "{name, version}.",
            http_status=400,
        )
    level = meta.get(protocol.META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise MCPError(
            INVALID_PARAMS,
            f"Invalid params: _meta {protocol.META_LOG_LEVEL!r} must be one of "
            f"{', '.join(LOG_LEVELS)}, not {level!r}.",
            http_status=400,
        )
    return meta


def _offered(dispatcher: Dispatcher, method: str) -> bool:
    if method == "subscriptions/listen":
        return True
    return (
        method in dispatcher.methods
        and protocol.has_method(protocol.STATELESS, method)
        and dispatcher.registry.offers(method)
    )


def _serve(
    dispatcher: Dispatcher, state: AppState, message: t.Any, auth: AuthInfo | None
) -> Response:
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
    meta = _request_meta(params)
    assert isinstance(params, dict)
    headers = WSGIHeaders(request.environ)
    validate_protocol_version_header(headers, message)
    version = meta[protocol.META_PROTOCOL_VERSION]
    if not protocol.is_stateless_version(version):
        raise MCPError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version {version!r}: send one of "
            f"{', '.join(protocol.STATELESS_VERSIONS)}, or initialize for the handshake era.",
            {"supported": list(protocol.STATELESS_VERSIONS), "requested": version},
            http_status=400,
        )
    tools = dispatcher.registry.tools
    validate_routing_headers(
        headers,
        message,
        tool_header_params=lambda name: tools[name].header_params if name in tools else (),
    )
    method = message["method"]
    if not _offered(dispatcher, method):
        raise MethodNotFound(method)
    if method == "subscriptions/listen":
        return listen.open_stream(dispatcher.registry, state, message["id"], params)
    call = Call(
        method, params, message["id"], version, protocol.STATELESS, None, state=state, auth=auth
    )
    if method not in dispatcher.user_methods:
        return json_response(*_execute(dispatcher, state, call))
    return _run(dispatcher, state, call, meta)


def _execute(
    dispatcher: Dispatcher, state: AppState, call: Call
) -> tuple[dict[str, t.Any], int, dict[str, str] | None]:
    """Dispatch one call; return its response message, HTTP status and extra headers.

    An :class:`~flask_mcp.MCPError` may carry ``http_status`` and ``headers``
    (``WWW-Authenticate`` of an authorization refusal); they apply when the
    error is the whole response.
    """
    request_id = call.request_id
    started = time.perf_counter()
    signals.send(
        signals.request_started, state.app, method=call.method, request_id=request_id,
        session_id=None,
    )  # fmt: skip
    error = None
    status = 200
    headers = None
    try:
        response = jsonrpc.result(request_id, dispatcher.dispatch(call))
    except MCPError as exc:
        error = exc.to_error()
        status = exc.http_status or 200
        headers = getattr(exc, "headers", None)
        response = jsonrpc.error(request_id, error)
    except (BackendUnavailable, RequestCancelled):
        raise
    except Exception as exc:
        text = dispatcher.internal_error(exc, call.method, state)
        error = {"code": INTERNAL_ERROR, "message": text}
        response = jsonrpc.error(request_id, error)
    signals.send(
        signals.request_finished, state.app, method=call.method, request_id=request_id,
        session_id=None, duration=time.perf_counter() - started, error=error,
    )  # fmt: skip
    return response, status, headers


def _timeout_response(call: Call, seconds: float) -> dict[str, t.Any]:
    """Answer a request that overran ``MCP_REQUEST_TIMEOUT`` (never -32001 in this revision)."""
    text = f"Request timed out after {seconds:g} seconds (MCP_REQUEST_TIMEOUT)."
    if call.method == "tools/call":
        result = {**content.error_result(text), "resultType": "complete"}
        return jsonrpc.result(call.request_id, result)
    return jsonrpc.error(call.request_id, {"code": INTERNAL_ERROR, "message": text})


def _run_inline(dispatcher: Dispatcher, state: AppState, call: Call) -> Response:
    """Run a handler that cannot emit in the view's own greenlet or thread: no spawn.

    The supervisor still times it out (interrupting it on gevent).
    """
    outbox = InlineOutbox()
    deadline = time.monotonic() + state.settings.request_timeout
    run = RequestRun(None, call.request_id, call.method, outbox, deadline)
    run.key = (None, object())
    task = run.task = _concurrency.current_task()
    call.run = run
    state.inflight.add(run)
    response, status, headers = None, 200, None
    try:
        response, status, headers = _execute(dispatcher, state, call)
    except RequestCancelled:
        pass
    finally:
        task.disarm()
        state.inflight.remove(run)
    _concurrency.let_others_run()
    if not outbox.finish(response):  # overdue: the supervisor answered first
        return json_response(_timeout_response(call, state.settings.request_timeout))
    if response is None:
        empty = Response(status=204)
        del empty.headers["Content-Type"]  # no content, so no type (RFC 9110)
        return empty
    return json_response(response, status, headers)


def _run(dispatcher: Dispatcher, state: AppState, call: Call, meta: dict[str, t.Any]) -> Response:
    """Run a handler of user code concurrently; answer JSON, or SSE once it notifies."""
    settings = state.settings
    try:
        channel, request_state = mrtr.open_round(state, call.method, call.params, call.auth)
    except MCPError as exc:
        return json_response(jsonrpc.error_from(call.request_id, exc), exc.http_status or 200)
    if not dispatcher.may_emit(call.method, call.params):
        return _run_inline(dispatcher, state, call)
    outbox = LocalOutbox()
    deadline = time.monotonic() + settings.request_timeout
    run = RequestRun(None, call.request_id, call.method, outbox, deadline)
    run.can_round_trip = False
    ctx = Context(
        app=state.app,
        run=run,
        back_channel=channel,
        protocol_version=call.version,
        client_capabilities=meta[protocol.META_CLIENT_CAPABILITIES],
        client_info=meta.get(protocol.META_CLIENT_INFO) or {},
        meta=meta,
        log_level=meta.get(protocol.META_LOG_LEVEL),
        auth=call.auth,
    )
    ctx.request_state = request_state
    ctx.input_responses = channel.responses
    call.ctx = ctx
    outcome: dict[str, t.Any] = {}
    # The handler runs in a copy of this view's request context, g carried over.
    handle = bind_to_request(state.app, lambda: _execute(dispatcher, state, call))

    def work() -> None:
        response = None
        try:
            response, outcome["status"], outcome["headers"] = handle()
        except RequestCancelled:
            response = None
        except Exception:
            logger.exception("Request %r failed outside its handler", call.method)
            error = {"code": INTERNAL_ERROR, "message": "Internal error."}
            response = jsonrpc.error(call.request_id, error)
        finally:
            if run.cancelled.is_set():
                response = None
            outbox.finish(response)

    run.task = _concurrency.spawn(work)
    sock = _concurrency.client_socket(request.environ)
    events: list[t.Any] = []
    while not events:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            run.cancel()
            return json_response(_timeout_response(call, settings.request_timeout))
        events = outbox.read(0, 1, min(POLL, remaining)).events
        if not events and listen.client_gone(sock):
            run.cancel()
            return Response(status=499)
    first = events[0]
    if first.kind == MESSAGE and is_response(first.message, call.request_id):
        outbox.drop()
        return json_response(first.message, outcome.get("status", 200), outcome.get("headers"))
    if not state.slots.acquire():
        return _buffered(call, run, outbox, events, deadline, settings.request_timeout)
    return Response(
        _stream(call, run, outbox, events, deadline, sock, state),
        mimetype="text/event-stream",
        headers=sse.HEADERS,
        direct_passthrough=True,
    )


def _stream(
    call: Call,
    run: RequestRun,
    outbox: LocalOutbox,
    events: list[t.Any],
    deadline: float,
    sock: t.Any,
    state: AppState,
) -> t.Iterable[bytes]:
    """Yield the run's messages as SSE events (no ids: not resumable) until its response.

    Closing the stream before the response cancels the request.
    """
    settings = state.settings
    flags = {"ended": False, "closed": False}

    def cleanup() -> None:
        if flags["closed"]:
            return
        flags["closed"] = True
        if not flags["ended"]:  # the client closed the stream: that cancels the request
            run.cancel()
        state.slots.release()
        outbox.drop()

    def generate(events: list[t.Any]) -> t.Iterator[bytes]:
        after = 0
        last_write = time.monotonic()
        try:
            while True:
                for event in events:
                    after = max(after, event.seq)
                    if event.kind == MESSAGE and event.message is not None:
                        yield sse.frame(event.message)
                        last_write = time.monotonic()
                    elif event.kind == END:
                        flags["ended"] = True
                        return
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    run.cancel()
                    flags["ended"] = True
                    yield sse.frame(_timeout_response(call, settings.request_timeout))
                    return
                events = outbox.read(after, 1, min(POLL, remaining)).events
                if events:
                    continue
                if time.monotonic() - last_write >= settings.sse_heartbeat:
                    yield sse.HEARTBEAT
                    last_write = time.monotonic()
                elif listen.client_gone(sock):
                    return
        finally:
            cleanup()

    return ClosingIterator(generate(events), [cleanup])


def _buffered(
    call: Call,
    run: RequestRun,
    outbox: LocalOutbox,
    events: list[t.Any],
    deadline: float,
    timeout: float,
) -> Response:
    """Collect the whole stream, for a worker that cannot hold a response open."""
    chunks: list[bytes] = []
    after = 0
    while True:
        for event in events:
            after = max(after, event.seq)
            if event.kind == MESSAGE and event.message is not None:
                chunks.append(sse.frame(event.message))
            elif event.kind == END:
                outbox.drop()
                return Response(b"".join(chunks), mimetype="text/event-stream", headers=sse.HEADERS)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            run.cancel()
            chunks.append(sse.frame(_timeout_response(call, timeout)))
            outbox.drop()
            return Response(b"".join(chunks), mimetype="text/event-stream", headers=sse.HEADERS)
        events = outbox.read(after, 1, min(POLL, remaining)).events
