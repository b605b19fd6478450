"""Streamable HTTP: the POST, GET and DELETE views of the MCP endpoint."""

from __future__ import annotations

import contextlib
import logging
import typing as t

from flask import Blueprint
from flask import Response
from flask import request
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wsgi import get_content_length

from . import _concurrency
from . import jsonrpc
from . import protocol
from . import runner
from . import security
from . import signals
from . import sse
from .auth.info import principal_of
from .auth_context import authenticate
from .backends.base import GENERAL_STREAM
from .backends.base import SessionRecord
from .call import Call
from .context import Context
from .context import SessionBackChannel
from .errors import INTERNAL_ERROR
from .errors import PARSE_ERROR
from .errors import BackendUnavailable
from .errors import InvalidParams
from .errors import MCPError
from .errors import MCPHTTPError
from .responses import http_error
from .responses import json_response
from .responses import no_content
from .session import StreamOutbox
from .session import new_session_id
from .supervisor import ensure_supervisor

if t.TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

    from .auth import AuthInfo
    from .dispatcher import Dispatcher
    from .session import RequestRun
    from .state import AppState

logger = logging.getLogger("flask_mcp")
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
#: The WSGI environ keys of those headers: read directly, they cost one dict lookup.
SESSION_KEY = "HTTP_MCP_SESSION_ID"
VERSION_KEY = "HTTP_MCP_PROTOCOL_VERSION"


class Transport:
    """The views of one server's endpoint on one app.

    :param dispatcher: runs the requests.
    :param state: the state of the one app the blueprint is registered on.
    :param roots_changed_hooks: called with the session id when a client's roots change.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        state: AppState,
        roots_changed_hooks: t.Sequence[t.Callable[[str], None]] = (),
    ) -> None:
        self.dispatcher = dispatcher
        self.app_state = state
        self.roots_changed_hooks = roots_changed_hooks

    # -- shared checks -----------------------------------------------------------

    def _guard(self, state: AppState, environ: WSGIEnvironment) -> None:
        settings = state.settings
        security.check_host(
            environ.get("HTTP_HOST") or request.host,
            environ.get("REMOTE_ADDR"),
            settings.allowed_hosts,
        )
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None:
            security.check_origin(origin, settings.allowed_origins)
        ensure_supervisor(state)
        if not state.first_request_seen:
            state.first_request_seen = True
            self._first_request(state, environ)

    def _first_request(self, state: AppState, environ: WSGIEnvironment) -> None:
        """Learn what only a request tells: the server's kind and how many streams it holds."""
        if not state.backend.multiprocess and environ.get("wsgi.multiprocess"):
            logger.warning(
                "Flask-MCP uses the in-memory backend under a multi-process server: sessions "
                "live in one worker only. Run one worker, or set MCP_BACKEND=redis://..."
            )
        if state.settings.max_streams is None:
            state.slots.limit = _concurrency.stream_capacity(environ)

    def _session(
        self,
        state: AppState,
        environ: WSGIEnvironment,
        required: bool = True,
        auth: AuthInfo | None = None,
    ) -> SessionRecord | None:
        session_id = environ.get(SESSION_KEY)
        if not session_id:
            if required:
                raise MCPHTTPError(
                    400,
                    "Bad Request: missing Mcp-Session-Id header. Send initialize first and "
                    "repeat the Mcp-Session-Id it returns on every request.",
                )
            return None
        record = state.backend.get_session(
            session_id.strip(), touch=True
        )  # traffic: one round trip
        if record is not None and record.principal != principal_of(auth):
            record = None  # bound to another caller: indistinguishable from a missing session
        if record is None:
            message = "Session not found: it ended or never existed."
            if environ.get("wsgi.multiprocess") and not state.backend.multiprocess:
                message = (
                    "Session not found: it ended, never existed, or lives in another process: "
                    "this server keeps sessions in memory (MCP_BACKEND=memory://) and runs "
                    "several processes: a session lives in one of them; set "
                    "MCP_BACKEND=redis://... or run one worker."
                )
            raise MCPHTTPError(404, f"{message} Send initialize to start a new one.")
        header = environ.get(VERSION_KEY)
        if header is not None and not protocol.is_supported_header(header.strip()):
            raise MCPHTTPError(
                400,
                f"Bad Request: unsupported MCP-Protocol-Version {header!r}; supported: "
                f"{', '.join(protocol.HANDSHAKE_VERSIONS)}.",
            )
        return record

    # -- POST --------------------------------------------------------------------

    def post(self) -> Response:
        state = self.app_state
        settings = state.settings
        environ = request.environ
        self._guard(state, environ)
        auth = authenticate(state)
        security.check_content_type(_mimetype(environ))
        security.check_accept_post(environ.get("HTTP_ACCEPT"))
        length = get_content_length(environ)
        security.check_body_size(length, settings.max_body_size)
        flask_limit = state.app.config.get("MAX_CONTENT_LENGTH")  # read per request, as Flask does
        if length is not None and flask_limit is None:
            # Exactly CONTENT_LENGTH bytes may be read from any WSGI server's input
            # (PEP 3333); Werkzeug's request.stream would only wrap it, for 4 us.
            body = environ["wsgi.input"].read(length)
        else:  # chunked, or Flask's MAX_CONTENT_LENGTH applies: Werkzeug enforces both
            try:
                body = request.stream.read(settings.max_body_size + 1 if length is None else length)
            except RequestEntityTooLarge:
                raise MCPHTTPError(
                    413,
                    f"The body is larger than {flask_limit} bytes, the app's MAX_CONTENT_LENGTH.",
                ) from None
        security.check_body_size(len(body), settings.max_body_size)
        # Handlers may call request.get_data() or request.get_json() as in any view:
        # the input stream is consumed, so Werkzeug's cache of the body is filled.
        request._cached_data = body
        try:
            message = jsonrpc.loads(body)
        except MCPError as exc:
            return http_error(400, exc.message, code=PARSE_ERROR)
        header_version = environ.get(VERSION_KEY)
        era = protocol.era_of_request(
            has_session=bool(environ.get(SESSION_KEY)),
            header_version=header_version.strip() if header_version else None,
            message=message,
        )
        if era == protocol.STATELESS:
            from .stateless import handle_stateless

            return handle_stateless(self.dispatcher, state, message, auth)
        if isinstance(message, list):
            return self._batch(state, environ, message, auth)
        try:
            kind = jsonrpc.classify(message)
        except MCPError as exc:
            return http_error(400, exc.message, request_id=jsonrpc.request_id_of(message))
        if kind == jsonrpc.REQUEST and message["method"] == "initialize":
            return self._initialize(state, message, auth)
        record = self._session(state, environ, auth=auth)
        assert record is not None
        if kind == jsonrpc.REQUEST:
            return self._request(state, environ, record, message, auth)
        if kind == jsonrpc.NOTIFICATION:
            self._notification(state, record, message)
        else:
            self._client_response(state, record, message)
        return Response(status=202)

    def _request(
        self,
        state: AppState,
        environ: WSGIEnvironment,
        record: SessionRecord,
        message: dict[str, t.Any],
        auth: AuthInfo | None,
    ) -> Response:
        """Run a request of the session through the one runner."""
        call = _call(state, record, message, auth)
        return runner.serve_call(
            self.dispatcher,
            call,
            context=_context_factory(call, record),
            peer=lambda: _concurrency.client_socket(environ),
        )

    def _batch(
        self,
        state: AppState,
        environ: WSGIEnvironment,
        messages: list[t.Any],
        auth: AuthInfo | None,
    ) -> Response:
        record = self._session(state, environ, required=False, auth=auth)
        if (
            record is None
            or not protocol.supports_batching(record.protocol_version)
            or not messages
        ):
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
                answer = runner.execute(self.dispatcher, _call(state, record, message, auth))
                if answer.refused is not None:  # a refusal answers the whole POST
                    raise answer.refused
                answers.append(t.cast("dict[str, t.Any]", answer.message))
        return json_response(answers) if answers else Response(status=202)

    def _initialize(
        self, state: AppState, message: dict[str, t.Any], auth: AuthInfo | None
    ) -> Response:
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
            principal=principal_of(auth),
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
            "capabilities": self.dispatcher.registry.capabilities(),
            "serverInfo": protocol.server_info_fields(version, self.dispatcher.info.fields),
        }
        if self.dispatcher.info.instructions:
            result["instructions"] = self.dispatcher.info.instructions
        signals.send(
            signals.session_created,
            state.app,
            session_id=record.id,
            protocol_version=version,
            client_info=record.client_info,
        )
        return json_response(
            jsonrpc.result(request_id, result), headers={SESSION_HEADER: record.id}
        )

    def _notification(
        self, state: AppState, record: SessionRecord, message: dict[str, t.Any]
    ) -> None:
        method = message["method"]
        params = message.get("params") or {}
        if method == "notifications/initialized":
            if not record.initialized:
                state.backend.update_session(record.id, initialized=True)
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            if jsonrpc.valid_id(request_id):  # anything else names no request: nothing to do
                state.backend.cancel(record.id, request_id)
        elif method == "notifications/roots/list_changed":
            signals.send(signals.roots_list_changed, state.app, session_id=record.id)
            for hook in list(self.roots_changed_hooks):
                try:
                    hook(record.id)
                except Exception:
                    logger.exception("A roots-changed hook raised; ignoring it.")

    def _client_response(
        self, state: AppState, record: SessionRecord, message: dict[str, t.Any]
    ) -> None:
        if not state.backend.deliver_response(record.id, message["id"], message):
            logger.info("Dropped a client response to unknown request id %r", message["id"])

    # -- GET -----------------------------------------------------------------------

    def get(self) -> Response:
        state = self.app_state
        settings = state.settings
        environ = request.environ
        self._guard(state, environ)
        security.check_accept_sse(request.accept_mimetypes)
        auth = authenticate(state)
        if not settings.enable_get_stream:
            return http_error(
                405,
                "Method Not Allowed: this server offers no GET stream.",
                headers={"Allow": "POST, DELETE"},
            )
        record = self._session(state, environ, auth=auth)
        assert record is not None
        last_event_id = environ.get("HTTP_LAST_EVENT_ID")
        stream_id, after = GENERAL_STREAM, None
        if last_event_id:
            parsed = sse.parse_event_id(last_event_id)
            if parsed is None:
                return http_error(
                    400, f"Bad Request: malformed Last-Event-ID {last_event_id[:80]!r}."
                )
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
        general = stream_id == GENERAL_STREAM
        if not state.slots.acquire(general=general):
            if state.slots.limit == 0:
                return http_error(
                    405,
                    "Method Not Allowed: this server cannot hold SSE streams (a sync worker); run "
                    "gunicorn with -k gevent or -k gthread to get the GET stream.",
                    headers={"Allow": "POST, DELETE"},
                )
            return self._stream_later(state, record, stream_id, after)
        outbox = StreamOutbox(state.backend, record.id, stream_id)
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
            sock=_concurrency.client_socket(environ),
        )
        opening = b""
        if protocol.sends_priming_event(record.protocol_version):
            opening = sse.priming(sse.event_id(stream_id, after), settings.sse_retry_ms)

        def on_close(reason: str) -> None:
            if reason == "end" and not general:
                with contextlib.suppress(BackendUnavailable):  # expires with its session
                    outbox.drop()

        return sse.event_stream(
            state,
            reader,
            kind="get" if general else "resume",
            session_id=record.id,
            opening=opening,
            on_close=on_close,
            general=general,
        )

    def _stream_later(
        self, state: AppState, record: SessionRecord, stream_id: str, after: int | None
    ) -> Response:
        """Answer a GET this worker has no thread for with an event stream that ends at once.

        The spec allows a GET only an event stream or 405, and a 405 (or a 503)
        makes the official clients stop asking for the session's GET stream, so it
        would never hear a notification. An event stream that closes at once with
        a ``retry`` hint (and, where the version primes streams, an event id to
        resume from) makes them come back later, once a stream has ended here;
        nothing sent meanwhile is lost, as a resume replays it.
        """
        if after is None:  # the general stream: start where its last reader stopped
            state.backend.open_stream(record.id, stream_id)  # so the id below resumes
            after = state.backend.get_cursor(record.id, stream_id)
        retry_ms = max(state.settings.sse_retry_ms, sse.BUSY_RETRY_MS)
        if protocol.sends_priming_event(record.protocol_version):
            body = sse.priming(sse.event_id(stream_id, after), retry_ms)
        else:
            body = sse.retry(retry_ms)
        logger.debug(
            "Every stream slot of this worker is taken (MCP_MAX_STREAMS, --threads); told the "
            "client to come back for its GET stream in %d ms.",
            retry_ms,
        )
        return Response(body, mimetype="text/event-stream", headers=sse.HEADERS)

    # -- DELETE ----------------------------------------------------------------------

    def delete(self) -> Response:
        state = self.app_state
        environ = request.environ
        self._guard(state, environ)
        record = self._session(state, environ, auth=authenticate(state))
        assert record is not None
        for run in state.inflight.of_session(record.id):
            run.cancel()
        if state.backend.delete_session(record.id):
            signals.send(signals.session_closed, state.app, session_id=record.id, reason="deleted")
        return no_content()


def _call(
    state: AppState, record: SessionRecord, message: dict[str, t.Any], auth: AuthInfo | None
) -> Call:
    """Build the call of a session's request."""
    return Call(
        message["method"],
        message.get("params") or {},
        message["id"],
        record.protocol_version,
        protocol.HANDSHAKE,
        record,
        state=state,
        auth=auth,
    )


def _context_factory(call: Call, record: SessionRecord) -> runner.ContextFactory:
    """Return what builds the ``Context`` of a spawned handshake-era handler.

    Its requests to the client go out on the request's stream and wait for the
    reply POST (:class:`~flask_mcp.context.SessionBackChannel`).
    """

    def context(run: RequestRun) -> Context:
        state = call.state
        meta = call.params.get("_meta")
        return Context(
            app=state.app,
            run=run,
            back_channel=SessionBackChannel(state.backend, state.settings.client_request_timeout),
            protocol_version=call.version,
            client_capabilities=record.client_capabilities,
            client_info=record.client_info,
            meta=meta if isinstance(meta, dict) else {},
            log_level=record.log_level,
            auth=call.auth,
        )

    return context


def _mimetype(environ: WSGIEnvironment) -> str:
    """Return the request's media type, lower-cased, without parameters."""
    return t.cast(str, environ.get("CONTENT_TYPE", "")).partition(";")[0].strip().lower()


def _validate_initialize(params: dict[str, t.Any]) -> str:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise InvalidParams("Invalid params: 'protocolVersion' is required and must be a string.")
    if not isinstance(params.get("capabilities"), dict):
        raise InvalidParams("Invalid params: 'capabilities' is required and must be an object.")
    info = params.get("clientInfo")
    if (
        not isinstance(info, dict)
        or not isinstance(info.get("name"), str)
        or not isinstance(info.get("version"), str)
    ):
        raise InvalidParams(
            "Invalid params: 'clientInfo' is required and needs string 'name' and 'version'."
        )
    return protocol.negotiate(requested)


def make_blueprint(
    dispatcher: Dispatcher,
    state: AppState,
    roots_changed_hooks: t.Sequence[t.Callable[[str], None]] = (),
) -> Blueprint:
    """Return a blueprint serving ``dispatcher`` at ``MCP_PATH`` for the app of ``state``."""
    path = state.settings.path
    transport = Transport(dispatcher, state, roots_changed_hooks)
    blueprint = Blueprint("mcp", __name__)

    def endpoint() -> Response:
        try:
            method = request.method
            if method == "POST":
                return transport.post()
            if method == "GET":
                return transport.get()
            if method == "DELETE":
                return transport.delete()
            return http_error(  # HEAD, which Flask routes here with GET: it opens no stream
                405,
                "Method Not Allowed: send GET with Accept: text/event-stream to open a stream.",
                headers={"Allow": "GET, POST, DELETE"},
            )
        except MCPHTTPError as exc:
            headers = dict(exc.extra_headers)
            return http_error(
                exc.http_status,
                exc.description or "",
                code=exc.rpc_code,
                request_id=exc.request_id,
                data=exc.data,
                headers=headers,
            )
        except BackendUnavailable as exc:
            return http_error(
                503,
                f"Service Unavailable: the session store is unreachable ({exc}); retry later.",
                code=INTERNAL_ERROR,
                headers={"Retry-After": "2"},
            )

    blueprint.add_url_rule(
        path, "endpoint", endpoint, methods=["GET", "POST", "DELETE"], strict_slashes=False
    )
    return blueprint


__all__ = ["Transport", "make_blueprint"]
