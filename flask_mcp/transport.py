"""Streamable HTTP: the POST, GET and DELETE views of the MCP endpoint."""

from __future__ import annotations

import logging
import time
import typing as t

from flask import Blueprint
from flask import Response
from flask import request

from . import _concurrency
from . import jsonrpc
from . import protocol
from . import security
from . import signals
from . import sse
from .auth import AuthRefused
from .backends.base import GENERAL_STREAM
from .backends.base import MESSAGE
from .backends.base import SessionRecord
from .context import Context
from .context import SessionBackChannel
from .dispatcher import Call
from .errors import INTERNAL_ERROR
from .errors import INVALID_REQUEST
from .errors import PARSE_ERROR
from .errors import REQUEST_TIMEOUT
from .errors import BackendUnavailable
from .errors import InvalidParams
from .errors import MCPError
from .errors import MCPHTTPError
from .errors import RequestCancelled
from .session import InlineOutbox
from .session import RequestRun
from .session import StreamOutbox
from .session import new_session_id
from .session import new_stream_id
from .supervisor import ensure_supervisor

if t.TYPE_CHECKING:
    from .extension import MCP
    from .extension import AppState

logger = logging.getLogger("flask_mcp")
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"


def json_response(body: t.Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """Return a compact JSON response."""
    return Response(jsonrpc.dumps(body), status=status, mimetype="application/json", headers=headers)


def http_error(
    status: int, message: str, *, code: int = INVALID_REQUEST, request_id: t.Any = None, data: t.Any = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """Return an HTTP error whose body is a JSON-RPC error."""
    error: dict[str, t.Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json_response(jsonrpc.error(request_id, error), status, headers)


def deliver_general(state: AppState, session_id: str, message: dict[str, t.Any]) -> None:
    """Queue a message on a session's general (GET) stream."""
    state.backend.append(session_id, GENERAL_STREAM, MESSAGE, message)
    signals.send(
        signals.notification_sent, state.app, method=message.get("method"), session_id=session_id
    )


class Transport:
    """The views of one :class:`~flask_mcp.MCP` endpoint."""

    def __init__(self, mcp: MCP) -> None:
        self.mcp = mcp

    # -- shared checks -----------------------------------------------------------

    def _guard(self, state: AppState) -> None:
        settings = state.settings
        security.check_host(request.host, request.remote_addr, settings.allowed_hosts)
        security.check_origin(request.headers.get("Origin"), settings.allowed_origins)
        ensure_supervisor(state)
        if not state.warned_multiprocess and not state.backend.multiprocess:
            state.warned_multiprocess = True
            if request.environ.get("wsgi.multiprocess") and request.environ.get(
                "SERVER_SOFTWARE", ""
            ).startswith("gunicorn"):
                logger.warning(
                    "Flask-MCP uses the in-memory backend under a multi-process server: sessions "
                    "live in one worker only. Run one worker, or set MCP_BACKEND=redis://..."
                )
        if state.inline is None:
            # Handlers that cannot emit run in the view's greenlet on gevent, where a
            # cancelled or overdue handler can still be interrupted.
            state.inline = _concurrency.gevent_active()
        if not state.slots_configured:
            state.slots_configured = True
            state.slots.limit = _concurrency.stream_capacity(request.environ)

    def _session(self, state: AppState, required: bool = True, auth: t.Any = None) -> SessionRecord | None:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            if required:
                raise MCPHTTPError(
                    400,
                    "Bad Request: missing Mcp-Session-Id header. Send initialize first and "
                    "repeat the Mcp-Session-Id it returns on every request.",
                )
            return None
        record = state.backend.get_session(session_id.strip(), touch=True)  # traffic: one round trip
        if record is not None and record.principal != _principal(auth):
            record = None  # bound to another caller: indistinguishable from a missing session
        if record is None:
            raise MCPHTTPError(
                404, "Session not found: it ended or never existed. Send initialize to start a new one."
            )
        header = request.headers.get(VERSION_HEADER)
        if header is not None and not protocol.is_supported_header(header.strip()):
            raise MCPHTTPError(
                400,
                f"Bad Request: unsupported MCP-Protocol-Version {header!r}; supported: "
                f"{', '.join(protocol.HANDSHAKE_VERSIONS)}.",
            )
        return record

    # -- POST --------------------------------------------------------------------

    def post(self) -> Response:
        state = self.mcp.state()
        settings = state.settings
        self._guard(state)
        auth = self.mcp.authenticate(state)
        security.check_content_type(request.mimetype)
        security.check_accept_post(request.accept_mimetypes, strict=False)
        security.check_body_size(request.content_length, settings.max_body_size)
        body = request.stream.read(settings.max_body_size + 1)
        security.check_body_size(len(body), settings.max_body_size)
        try:
            message = jsonrpc.loads(body)
        except MCPError as exc:
            return http_error(400, exc.message, code=PARSE_ERROR)
        header_version = request.headers.get(VERSION_HEADER)
        era = protocol.era_of_request(
            has_session=bool(request.headers.get(SESSION_HEADER)),
            header_version=header_version.strip() if header_version else None,
            message=message,
        )
        if era == protocol.STATELESS:
            from .stateless import handle_stateless

            return handle_stateless(self.mcp, state, message, auth)
        if isinstance(message, list):
            return self._batch(state, message, auth)
        try:
            kind = jsonrpc.classify(message)
        except MCPError as exc:
            return http_error(400, exc.message, request_id=jsonrpc.request_id_of(message))
        if kind == jsonrpc.REQUEST and message["method"] == "initialize":
            return self._initialize(state, message, auth)
        record = self._session(state, auth=auth)
        assert record is not None
        if kind == jsonrpc.REQUEST:
            return self._request(state, record, message, auth)
        if kind == jsonrpc.NOTIFICATION:
            self._notification(state, record, message)
        else:
            self._client_response(state, record, message)
        return Response(status=202)

    def _batch(self, state: AppState, messages: list[t.Any], auth: t.Any) -> Response:
        record = self._session(state, required=False, auth=auth)
        if record is None or not protocol.supports_batching(record.protocol_version) or not messages:
            return http_error(
                400,
                "Invalid Request: JSON-RPC batches are only accepted on sessions that negotiated "
                "protocol 2025-03-26; send one message per POST.",
            )
        answers = []
        for message in messages:
            try:
                kind = jsonrpc.classify(message)
            except MCPError as exc:
                answers.append(jsonrpc.error_from(jsonrpc.request_id_of(message), exc))
                continue
            if kind == jsonrpc.NOTIFICATION:
                self._notification(state, record, message)
            elif kind == jsonrpc.RESPONSE:
                self._client_response(state, record, message)
            else:
                answers.append(self.execute(state, record, message, None, auth))
        return json_response(answers) if answers else Response(status=202)

    def _initialize(self, state: AppState, message: dict[str, t.Any], auth: t.Any) -> Response:
        request_id = message["id"]
        params = message.get("params") or {}
        try:
            version = _validate_initialize(params)
        except MCPError as exc:
            return json_response(jsonrpc.error_from(request_id, exc))
        record = SessionRecord(
            id=new_session_id(),
            protocol_version=version,
            client_info=params["clientInfo"],
            client_capabilities=params["capabilities"],
            log_level=state.settings.default_log_level,
            principal=_principal(auth),
        )
        if not state.backend.create_session(record, state.settings.max_sessions):
            return http_error(
                503,
                "Service Unavailable: the server holds MCP_MAX_SESSIONS sessions; retry later.",
                request_id=request_id,
                headers={"Retry-After": "5"},
            )
        result: dict[str, t.Any] = {
            "protocolVersion": version,
            "capabilities": self.mcp.capabilities(),
            "serverInfo": protocol.server_info_fields(version, self.mcp.server_info),
        }
        if self.mcp.instructions:
            result["instructions"] = self.mcp.instructions
        signals.send(
            signals.session_created,
            state.app,
            session_id=record.id,
            protocol_version=version,
            client_info=record.client_info,
        )
        return json_response(jsonrpc.result(request_id, result), headers={SESSION_HEADER: record.id})

    def _notification(self, state: AppState, record: SessionRecord, message: dict[str, t.Any]) -> None:
        method = message["method"]
        params = message.get("params") or {}
        if method == "notifications/initialized":
            if not record.initialized:
                state.backend.update_session(record.id, initialized=True)
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            if request_id is not None:
                state.backend.cancel(record.id, request_id)
        elif method == "notifications/roots/list_changed":
            signals.send(signals.roots_list_changed, state.app, session_id=record.id)
            for hook in list(self.mcp.roots_changed_hooks):
                try:
                    hook(record.id)
                except Exception:
                    logger.exception("A roots-changed hook raised; ignoring it.")

    def _client_response(self, state: AppState, record: SessionRecord, message: dict[str, t.Any]) -> None:
        if not state.backend.deliver_response(record.id, message["id"], message):
            logger.info("Dropped a client response to unknown request id %r", message["id"])

    # -- running requests --------------------------------------------------------

    def execute(
        self,
        state: AppState,
        record: SessionRecord | None,
        message: dict[str, t.Any],
        run: RequestRun | None,
        auth: t.Any = None,
    ) -> dict[str, t.Any]:
        """Dispatch one request and return its response message."""
        method = message["method"]
        request_id = message["id"]
        params = message.get("params") or {}
        version = record.protocol_version if record is not None else protocol.LATEST_HANDSHAKE_VERSION
        call = Call(method, params, request_id, version, protocol.HANDSHAKE, record, auth=auth)
        if run is not None and record is not None:
            meta = params.get("_meta")
            call.ctx = Context(
                app=state.app,
                run=run,
                back_channel=SessionBackChannel(state.backend, state.settings.client_request_timeout),
                protocol_version=version,
                client_capabilities=record.client_capabilities,
                client_info=record.client_info,
                meta=meta if isinstance(meta, dict) else {},
                log_level=record.log_level,
                auth=auth,
            )
        started = time.perf_counter()
        session_id = record.id if record is not None else None
        signals.send(
            signals.request_started, state.app, method=method, request_id=request_id, session_id=session_id
        )
        error = None
        try:
            response = jsonrpc.result(request_id, self.mcp.dispatcher.dispatch(call))
        except AuthRefused as exc:
            raise exc.challenge from None  # HTTP 401/403, answered before anything is streamed
        except MCPError as exc:
            error = exc.to_error()
            response = jsonrpc.error(request_id, error)
        except BackendUnavailable:
            raise
        except RequestCancelled:
            raise
        except Exception as exc:
            text = self.mcp.dispatcher.internal_error(exc, method)
            error = {"code": INTERNAL_ERROR, "message": text}
            response = jsonrpc.error(request_id, error)
        signals.send(
            signals.request_finished,
            state.app,
            method=method,
            request_id=request_id,
            session_id=session_id,
            duration=time.perf_counter() - started,
            error=error,
        )
        return response

    def _request(
        self, state: AppState, record: SessionRecord, message: dict[str, t.Any], auth: t.Any
    ) -> Response:
        method = message["method"]
        if method not in self.mcp.dispatcher.user_methods:
            return json_response(self.execute(state, record, message, None, auth))
        params = message.get("params") or {}
        if state.inline and not self.mcp.dispatcher.may_emit(method, params):
            return self._inline(state, record, message, auth)
        settings = state.settings
        outbox = StreamOutbox(state.backend, record.id, new_stream_id())
        run = RequestRun(record.id, message["id"], method, outbox, time.monotonic() + settings.request_timeout)
        state.backend.touch_session(record.id, +1)  # first: it may raise BackendUnavailable
        can_stream = state.slots.acquire()
        run.can_round_trip = can_stream
        state.inflight.add(run)
        app = state.app
        refused: list[MCPHTTPError] = []

        def work() -> None:
            response = None
            try:
                with app.app_context():
                    response = self.execute(state, record, message, run, auth)
            except RequestCancelled:
                response = None
            except MCPHTTPError as exc:  # an auth refusal: the view answers with its status
                refused.append(exc)
                response = jsonrpc.error(message["id"], {"code": exc.rpc_code, "message": exc.description})
            except BackendUnavailable as exc:
                logger.warning("Request %r failed: %s", method, exc)
                text = "Service Unavailable: the session store is unreachable; retry later."
                response = jsonrpc.error(message["id"], {"code": INTERNAL_ERROR, "message": text})
            except Exception:
                logger.exception("Request %r failed outside its handler", method)
                response = jsonrpc.error(message["id"], {"code": INTERNAL_ERROR, "message": "Internal error."})
            finally:
                if run.cancelled.is_set():
                    response = None
                try:
                    outbox.finish(response)
                except BackendUnavailable as exc:
                    logger.warning("Lost the response to %r: %s", method, exc)
                state.inflight.remove(run)
                try:
                    state.backend.touch_session(record.id, -1)
                except BackendUnavailable:
                    pass  # the backend settles the count when it is back

        run.task = _concurrency.spawn(work)
        reader = sse.StreamReader(
            outbox,
            after=0,
            with_ids=True,
            heartbeat=settings.sse_heartbeat,
            max_seconds=settings.sse_max_stream_seconds,
            retry_ms=settings.sse_retry_ms,
        )
        wait = settings.sse_heartbeat if can_stream else settings.request_timeout + 1
        try:
            first = outbox.read(0, reader.token, wait)
        except BackendUnavailable:
            run.cancelled.set()  # the client gets a 503: the handler's work is void
            if run.task is not None:
                run.task.kill()
            if can_stream:
                state.slots.release()
            raise
        if first.events and _is_response(first.events[0].message, message["id"]):
            reader.close()
            outbox.drop()
            if can_stream:
                state.slots.release()
            if refused:
                raise refused[0]
            return json_response(first.events[0].message)
        if not can_stream:
            return self._buffered_sse(state, reader, first.events, outbox)
        return self._sse_response(state, record, reader, first.events, outbox, "post")

    def _inline(
        self, state: AppState, record: SessionRecord, message: dict[str, t.Any], auth: t.Any
    ) -> Response:
        """Run a handler that cannot emit in the view's own greenlet: no spawn, no stream.

        Cancellation and ``MCP_REQUEST_TIMEOUT`` still interrupt it (gevent only).
        """
        outbox = InlineOutbox()
        deadline = time.monotonic() + state.settings.request_timeout
        run = RequestRun(record.id, message["id"], message["method"], outbox, deadline)
        task = run.task = _concurrency.CurrentGreenlet()
        state.backend.touch_session(record.id, +1)
        state.inflight.add(run)
        response = None
        try:
            response = self.execute(state, record, message, None, auth)
        except RequestCancelled:
            pass
        finally:
            task.disarm()
            state.inflight.remove(run)
            state.backend.touch_session(record.id, -1)
        if not outbox.finish(response):
            response = outbox.final  # a timeout's error, or nothing after a cancel
        if response is None:
            return Response(b"", mimetype="text/event-stream", headers=sse.HEADERS)
        return json_response(response)

    def _buffered_sse(self, state: AppState, reader: sse.StreamReader, pending: t.Any, outbox: t.Any) -> Response:
        chunks = []
        events = list(pending)
        after = 0
        deadline = time.monotonic() + state.settings.request_timeout + 1
        while True:
            for event in events:
                after = max(after, event.seq)
                if event.message is not None:
                    chunks.append(sse.frame(event.message))
            if any(e.kind != MESSAGE for e in events) or time.monotonic() > deadline:
                break
            found = outbox.read(after, reader.token, 1.0)
            events = found.events
            if found.missing or found.superseded:
                break
        reader.close()
        outbox.drop()
        return Response(b"".join(chunks), mimetype="text/event-stream", headers=sse.HEADERS)

    def _sse_response(
        self,
        state: AppState,
        record: SessionRecord,
        reader: sse.StreamReader,
        pending: t.Any,
        outbox: t.Any,
        kind: str,
        on_end_drop: bool = True,
        priming_seq: int = 0,
    ) -> Response:
        settings = state.settings
        stream_id = outbox.stream_id
        prime = protocol.sends_priming_event(record.protocol_version)
        signals.send(signals.stream_opened, state.app, session_id=record.id, stream_id=stream_id, kind=kind)

        def generate() -> t.Iterator[bytes]:
            try:
                if prime:
                    yield sse.priming(sse.event_id(stream_id, priming_seq), settings.sse_retry_ms)
                yield from reader.iterate(pending)
            except BackendUnavailable as exc:  # too late for a 503: end the stream, the client resumes
                reader.reason = "backend-unavailable"
                logger.warning("Closed an SSE stream: %s", exc)
            finally:
                reader.close()
                state.slots.release(general=kind == "get")
                if reader.reason == "end" and on_end_drop:
                    try:
                        outbox.drop()
                    except BackendUnavailable:
                        pass  # the stream expires with its session
                signals.send(
                    signals.stream_closed,
                    state.app,
                    session_id=record.id,
                    stream_id=stream_id,
                    kind=kind,
                    reason=reader.reason,
                )

        return Response(
            generate(), mimetype="text/event-stream", headers=sse.HEADERS, direct_passthrough=True
        )

    # -- GET -----------------------------------------------------------------------

    def get(self) -> Response:
        state = self.mcp.state()
        settings = state.settings
        self._guard(state)
        security.check_accept_sse(request.accept_mimetypes)
        auth = self.mcp.authenticate(state)
        if not settings.enable_get_stream:
            return http_error(405, "Method Not Allowed: this server offers no GET stream.", headers={"Allow": "POST, DELETE"})
        record = self._session(state, auth=auth)
        assert record is not None
        last_event_id = request.headers.get("Last-Event-ID")
        stream_id, after = GENERAL_STREAM, None
        if last_event_id:
            parsed = sse.parse_event_id(last_event_id)
            if parsed is None:
                return http_error(400, f"Bad Request: malformed Last-Event-ID {last_event_id[:80]!r}.")
            stream_id, after = parsed
            first = state.backend.first_seq(record.id, stream_id)
            if first is None:
                return http_error(
                    400,
                    "Bad Request: Last-Event-ID names no stream of this session (it ended, was "
                    "evicted, or belongs to another session).",
                )
            if after + 1 < first:
                return http_error(
                    410,
                    "Gone: the events after this Last-Event-ID were evicted (MCP_SSE_BUFFER_SIZE); "
                    "the stream cannot be resumed.",
                )
        if not state.slots.acquire(general=stream_id == GENERAL_STREAM):
            if state.slots.limit == 0:
                return http_error(
                    405,
                    "Method Not Allowed: this server cannot hold SSE streams (a sync worker); run "
                    "gunicorn with -k gevent or -k gthread to get the GET stream.",
                    headers={"Allow": "POST, DELETE"},
                )
            return http_error(
                503,
                "Service Unavailable: every thread of this worker holds a stream; retry later, add "
                "--threads, or run gunicorn with -k gevent.",
                headers={"Retry-After": "2"},
            )
        outbox = StreamOutbox(state.backend, record.id, stream_id)
        general = stream_id == GENERAL_STREAM
        if after is None:
            after = state.backend.get_cursor(record.id, GENERAL_STREAM)
        reader = sse.StreamReader(
            outbox,
            after=after,
            with_ids=True,
            heartbeat=settings.sse_heartbeat,
            max_seconds=settings.sse_max_stream_seconds,
            retry_ms=settings.sse_retry_ms,
            stop_at_end=not general,
            on_delivered=(lambda seq: state.backend.set_cursor(record.id, GENERAL_STREAM, seq))
            if general
            else None,
        )
        return self._sse_response(
            state, record, reader, (), outbox, "get" if general else "resume", on_end_drop=not general,
            priming_seq=after,
        )

    # -- DELETE ----------------------------------------------------------------------

    def delete(self) -> Response:
        state = self.mcp.state()
        self._guard(state)
        record = self._session(state, auth=self.mcp.authenticate(state))
        assert record is not None
        for run in state.inflight.of_session(record.id):
            run.cancel()
        if state.backend.delete_session(record.id):
            signals.send(signals.session_closed, state.app, session_id=record.id, reason="deleted")
        return Response(status=204)


def _principal(auth: t.Any) -> str | None:
    return None if auth is None else t.cast("str | None", getattr(auth, "principal", None))


def _is_response(message: t.Any, request_id: t.Any) -> bool:
    return (
        isinstance(message, dict)
        and "method" not in message
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    )


def _validate_initialize(params: dict[str, t.Any]) -> str:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise InvalidParams("Invalid params: 'protocolVersion' is required and must be a string.")
    if not isinstance(params.get("capabilities"), dict):
        raise InvalidParams("Invalid params: 'capabilities' is required and must be an object.")
    info = params.get("clientInfo")
    if not isinstance(info, dict) or not isinstance(info.get("name"), str) or not isinstance(
        info.get("version"), str
    ):
        raise InvalidParams(
            "Invalid params: 'clientInfo' is required and needs string 'name' and 'version'."
        )
    return protocol.negotiate(requested)


def make_blueprint(mcp: MCP, path: str) -> Blueprint:
    """Return a blueprint serving ``mcp`` at ``path``."""
    transport = Transport(mcp)
    blueprint = Blueprint("mcp", __name__)

    def endpoint() -> Response:
        try:
            if request.method == "POST":
                return transport.post()
            if request.method == "GET":
                return transport.get()
            return transport.delete()
        except MCPHTTPError as exc:
            headers = dict(exc.extra_headers)
            return http_error(
                t.cast(int, exc.code), exc.description or "", code=exc.rpc_code, request_id=exc.request_id,
                data=exc.data, headers=headers,
            )
        except BackendUnavailable as exc:
            return http_error(
                503, f"Service Unavailable: the session store is unreachable ({exc}); retry later.",
                code=INTERNAL_ERROR, headers={"Retry-After": "2"},
            )

    blueprint.add_url_rule(path, "endpoint", endpoint, methods=["GET", "POST", "DELETE"], strict_slashes=False)
    return blueprint


__all__ = ["Transport", "make_blueprint", "deliver_general", "REQUEST_TIMEOUT"]
