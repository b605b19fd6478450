"""The handshake era's ladder: sessions, ``initialize``, notifications, batches, GET streams.

A request of a session (``Mcp-Session-Id``) is checked here (the session exists,
belongs to the caller, speaks a supported ``MCP-Protocol-Version``) and handed to
the one runner (:func:`flask_mcp.transport.runner.serve_http`), as 2026-07-28
requests are by :mod:`.stateless`. GET opens the session's general stream, or
resumes a request's stream from ``Last-Event-ID``.
"""

from __future__ import annotations

import contextlib
import logging
import typing as t

from flask import Response
from flask import request

from .. import protocol
from .. import signals
from ..auth.info import client_of
from ..auth.info import principal_of
from ..backends.base import GENERAL_STREAM
from ..backends.base import SessionQuotaExceeded
from ..backends.base import SessionRecord
from ..backends.base import collect_ended
from ..errors import INVALID_REQUEST
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..errors import MCPHTTPError
from ..kernel import intake
from ..protocol import jsonrpc
from ..runtime import concurrency as _concurrency
from ..runtime.runs import StreamOutbox
from ..runtime.runs import new_session_id
from ..server.call import Call
from ..server.dispatcher import EXECUTE
from ..server.dispatcher import INLINE
from ..server.dispatcher import SPAWN
from . import runner
from . import sse
from .path_args import current_path_args
from .path_args import stored_path_args
from .responses import http_error
from .responses import json_response

if t.TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment
    from flask import Request

    from ..auth import AuthInfo
    from ..runtime.state import AppState
    from ..server.dispatcher import Dispatcher

logger = logging.getLogger("flask_mcp")
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
#: The WSGI environ keys of those headers: read directly, they cost one dict lookup.
SESSION_KEY = "HTTP_MCP_SESSION_ID"
VERSION_KEY = "HTTP_MCP_PROTOCOL_VERSION"


#: The error of an empty batch on a session that takes batches: one Invalid Request
#: (JSON-RPC 2.0, section 6).
EMPTY_BATCH = (
    "Invalid Request: the JSON-RPC batch is empty; put at least one message in the array, "
    "or send the message alone."
)


def _refusal_of_batch(messages: list[t.Any]) -> str | None:
    """Say why a batch of responses and notifications only cannot be accepted, if it cannot.

    Such a batch is answered with 202, or with 400 and none of it handled (2025-03-26
    transports); one with a request is answered member by member, an invalid one with
    an error of its own.
    """
    refused = None
    for message in messages:
        try:
            if jsonrpc.classify(message) == jsonrpc.REQUEST:
                return None
        except MCPError as exc:
            refused = refused or exc.message
    return refused


def _id_in_use(state: AppState, record: SessionRecord, request_id: t.Any) -> str | None:
    """Say why a request may not run when its id is that of a request of the session still
    running in this process (``None``: it may).

    Request ids must be unique within a session; a run under a reused id would shadow the
    first in the table of running requests, which times runs out and cancels them.
    """
    if state.inflight.get(record.id, request_id) is None:
        return None
    return (
        f"Invalid Request: request id {request_id!r} is already in use by a request of this "
        "session that is still running; use a new id for each request."
    )


class Handshake:
    """The handshake era of one server's endpoint on one app.

    :param dispatcher: runs the requests.
    :param state: the state of the app.
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

    def post(self, req: Request, message: t.Any, auth: AuthInfo | None) -> Response:
        """Serve a decoded POST body of the handshake era.

        :param req: the request (its own attributes, not the ``request`` proxy's).
        """
        state = self.app_state
        environ = req.environ
        if isinstance(message, list):
            return self._batch(state, req, message, auth)
        try:
            kind = jsonrpc.classify(message)
        except MCPError as exc:
            return http_error(400, exc.message, request_id=jsonrpc.request_id_of(message))
        if kind == jsonrpc.REQUEST and message["method"] == "initialize":
            return self._initialize(state, message, auth)
        path_args = current_path_args(req)  # once: the session's check and the call's
        record = self.session(environ, auth=auth, path_args=path_args)
        assert record is not None
        if kind == jsonrpc.REQUEST:
            in_use = _id_in_use(state, record, message["id"])
            if in_use is not None:
                return http_error(400, in_use, request_id=message["id"])
            return self._request(state, req, record, message, auth, path_args)
        if kind == jsonrpc.NOTIFICATION:
            self.notification(state, record, message)
        else:
            self.client_response(state, record, message)
        return Response(status=202)

    def end(self, record: SessionRecord) -> None:
        """End a session (DELETE): cancel its requests here and delete it."""
        state = self.app_state
        for run in state.inflight.of_session(record.id):
            run.cancel()
        if state.backend.delete_session(record.id):
            signals.send(signals.session_closed, state.app, session_id=record.id, reason="deleted")

    def session(
        self,
        environ: WSGIEnvironment,
        required: bool = True,
        auth: AuthInfo | None = None,
        path_args: dict[str, t.Any] | None = None,
    ) -> SessionRecord | None:
        """Return the request's session, checked against the caller and the version header.

        ``path_args`` are the request's URL variables when the caller has them
        (:func:`~flask_mcp.transport.path_args.current_path_args`).

        :raises MCPHTTPError: 400 without a session id (when ``required``) or with an
            unsupported ``MCP-Protocol-Version``; 404 for a session that does not exist
            or belongs to another caller.
        """
        state = self.app_state
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
        if record is not None and record.principal != (None if auth is None else auth.principal):
            record = None  # bound to another caller: indistinguishable from a missing session
        if record is not None and record.path_args != stored_path_args(path_args):
            record = None  # created under another MCP_PATH (another tenant): as missing
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
        if header is not None and header.strip() not in protocol.HANDSHAKE_VERSIONS:
            raise MCPHTTPError(
                400,
                f"Bad Request: unsupported MCP-Protocol-Version {header!r}; supported: "
                f"{', '.join(protocol.HANDSHAKE_VERSIONS)}.",
            )
        return record

    def _request(
        self,
        state: AppState,
        req: Request,
        record: SessionRecord,
        message: dict[str, t.Any],
        auth: AuthInfo | None,
        path_args: dict[str, t.Any],
    ) -> Response:
        """Run a request of the session through the one runner."""
        call = intake.session_call(state, record, message, auth, path_args, req.remote_addr)
        environ = req.environ
        dispatcher = self.dispatcher
        where = dispatcher.placement(call)
        if where != SPAWN:
            # Runs here (a handler that cannot emit, or no user code): no context to
            # build, no peer to watch, so no closure for either.
            return runner.serve_http(dispatcher, call, where=where)
        return runner.serve_http(
            dispatcher,
            call,
            context=intake.context_for(call),
            peer=lambda: _concurrency.client_socket(environ),
            where=where,
        )

    def _batch(
        self,
        state: AppState,
        req: Request,
        messages: list[t.Any],
        auth: AuthInfo | None,
    ) -> Response:
        path_args = current_path_args(req)
        record = self.session(req.environ, required=False, auth=auth, path_args=path_args)
        if record is None or not protocol.supports_batching(record.protocol_version):
            return http_error(
                400,
                "Invalid Request: JSON-RPC batches are only accepted on sessions that negotiated "
                "protocol 2025-03-26; send one message per POST.",
            )
        if not messages:
            return http_error(400, EMPTY_BATCH)
        refused = _refusal_of_batch(messages)
        if refused is not None:
            return http_error(400, refused)
        sock = _concurrency.client_socket(req.environ)
        gone: list[bool] = []

        def client_gone() -> bool:
            if sse.client_gone(sock):
                gone.append(True)
            return bool(gone)

        answers = self.batch_answers(
            state,
            record,
            messages,
            auth,
            path_args=path_args,
            client_address=req.remote_addr,
            client_gone=client_gone,
        )
        if gone:  # its other calls were not run: nobody is there for their answers
            return Response(status=499)
        return json_response(answers) if answers else Response(status=202)

    def batch_answers(
        self,
        state: AppState,
        record: SessionRecord,
        messages: list[t.Any],
        auth: AuthInfo | None,
        on_notification: t.Callable[[dict[str, t.Any]], None] | None = None,
        on_response: t.Callable[[dict[str, t.Any]], None] | None = None,
        *,
        path_args: dict[str, t.Any] | None = None,
        client_address: str | None = None,
        client_gone: t.Callable[[], bool] | None = None,
    ) -> list[dict[str, t.Any]]:
        """Answer the messages of a batch of a 2025-03-26 session (HTTP and stdio), in order.

        :param on_notification: handles a notification (default: :meth:`notification`).
        :param on_response: handles a client's response (default: :meth:`client_response`).
        :param path_args: the values of ``MCP_PATH``'s URL variables the POST matched.
        :param client_address: the client's address (none over stdio).
        :param client_gone: tells whether the client left; once it did, no more of the
            batch's requests run (their answers would reach nobody).
        :raises ~flask_mcp.auth.AuthRefused: a request was refused: that answers the
            whole batch with the challenge.
        """
        answers = []
        ids: set[t.Any] = set()  # of the batch's requests: each answer must name its own
        for message in messages:
            try:
                kind = jsonrpc.classify(message)
            except MCPError as exc:
                answers.append(jsonrpc.error_from(jsonrpc.request_id_of(message), exc))
                continue
            if kind == jsonrpc.NOTIFICATION:
                if on_notification is not None:
                    on_notification(message)
                else:
                    self.notification(state, record, message)
            elif kind == jsonrpc.RESPONSE:
                if on_response is not None:
                    on_response(message)
                else:
                    self.client_response(state, record, message)
            else:
                refused = _id_in_use(state, record, message["id"])
                if message["id"] in ids:
                    refused = (
                        f"Invalid Request: request id {message['id']!r} appears twice in this "
                        "batch; give each request its own id, or its answers cannot be told apart."
                    )
                ids.add(message["id"])
                if message["method"] == "initialize":
                    refused = (
                        "Invalid Request: initialize must not be part of a JSON-RPC batch; "
                        "send it alone, without Mcp-Session-Id, to start a new session."
                    )
                if refused is not None:
                    error = {"code": INVALID_REQUEST, "message": refused}
                    answers.append(jsonrpc.error(message["id"], error))
                    continue
                if client_gone is not None and client_gone():
                    break
                call = intake.session_call(state, record, message, auth, path_args, client_address)
                answer = self._batch_call(call)
                if answer.refused is not None:  # a refusal answers the whole POST
                    raise answer.refused
                if answer.message is not None:  # None: cancelled, as on a stream
                    answers.append(answer.message)
        return answers

    def _batch_call(self, call: Call) -> runner.Answer:
        """Answer one request of a batch, as any other call but without a stream.

        A handler taking a ``Context`` runs in a task of its own: what it sends before
        its answer is dropped (the batch is answered at once), and it cannot ask the
        client. One taking none runs here, registered as any inline run is, so that
        ``MCP_REQUEST_TIMEOUT`` and a ``notifications/cancelled`` reach it.
        """
        where = self.dispatcher.placement(call)
        if where == EXECUTE:
            return runner.execute(self.dispatcher, call)
        if where == INLINE:
            return runner.run_inline(self.dispatcher, call)
        message = runner.run_to_completion(self.dispatcher, call, context=intake.context_for(call))
        return runner.answer_of_run(call.run, message)  # a refusal included

    def _initialize(
        self, state: AppState, message: dict[str, t.Any], auth: AuthInfo | None
    ) -> Response:
        answer, record = start_session(
            self.dispatcher,
            state,
            message,
            auth,
            owner=client_of(auth, request.remote_addr),
        )
        if record is None:
            return runner.answer_response(answer, protocol.HANDSHAKE)
        return json_response(answer.message, headers={SESSION_HEADER: record.id})

    def notification(
        self, state: AppState, record: SessionRecord, message: dict[str, t.Any]
    ) -> None:
        """Handle a notification of the session (initialized, cancelled, roots changed)."""
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

    def client_response(
        self, state: AppState, record: SessionRecord, message: dict[str, t.Any]
    ) -> None:
        """Hand the client's answer to a server request to the handler waiting for it."""
        if not state.backend.deliver_response(record.id, message["id"], message):
            logger.info("Dropped a client response to unknown request id %r", message["id"])

    def open_stream(
        self, environ: WSGIEnvironment, record: SessionRecord, auth: AuthInfo | None = None
    ) -> Response:
        """Open the session's general stream, or resume a stream from ``Last-Event-ID``.

        :param auth: the caller, whose share of the stream slots the stream counts against
            (``MCP_STREAM_SHARE_PER_CLIENT``), with its address.
        """
        state = self.app_state
        settings = state.settings
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
                    "Gone: the events after this Last-Event-ID were evicted "
                    "(MCP_SSE_BUFFER_EVENTS, MCP_SSE_RESUME_BYTES); the stream cannot be "
                    "resumed.",
                )
        general = stream_id == GENERAL_STREAM
        holder = state.slots.acquire(auth, environ.get("REMOTE_ADDR"), general=general)
        if holder is None:
            if state.slots.limit == 0:
                return http_error(
                    405,
                    "Method Not Allowed: this server cannot hold SSE streams (a sync worker); run "
                    "gunicorn with -k gevent or -k gthread to get the GET stream.",
                    headers={"Allow": "POST, DELETE"},
                )
            return self._stream_later(state, record, stream_id, after)
        outbox = StreamOutbox(state.backend, record.id, stream_id, opens=general)
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
            opening = sse.priming(stream_id, after, settings.sse_retry_ms)

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
            holder=holder,
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
            body = sse.priming(stream_id, after, retry_ms)
        else:
            body = sse.retry(retry_ms)
        logger.debug(
            "No stream slot of this worker is free for this client (MCP_MAX_STREAMS, --threads, "
            "MCP_STREAM_SHARE_PER_CLIENT); told it to come back for its GET stream in %d ms.",
            retry_ms,
        )
        return Response(body, mimetype="text/event-stream", headers=sse.HEADERS)


def start_session(
    dispatcher: Dispatcher,
    state: AppState,
    message: dict[str, t.Any],
    auth: AuthInfo | None,
    *,
    owner: str,
    before_open: t.Callable[[], None] | None = None,
) -> tuple[runner.Answer, SessionRecord | None]:
    """Answer ``initialize`` (HTTP and stdio): check its params, open the session, signal it.

    :param before_open: runs once the params are valid, before the session opens
        (stdio ends the session it replaces).
    :return: the answer, and the new session (``None`` when there is none).
    """
    request_id = message["id"]
    params = message.get("params") or {}
    try:
        version = intake.validate_initialize(params)
    except MCPError as exc:
        return runner.Answer(jsonrpc.error_from(request_id, exc)), None
    if before_open is not None:
        before_open()
    answer, record = open_session(dispatcher, state, request_id, version, params, auth, owner=owner)
    if record is not None:
        signals.send(
            signals.session_created,
            state.app,
            session_id=record.id,
            protocol_version=version,
            client_info=record.client_info,
        )
    return answer, record


def open_session(
    dispatcher: Dispatcher,
    state: AppState,
    request_id: t.Any,
    version: str,
    params: dict[str, t.Any],
    auth: AuthInfo | None,
    *,
    owner: str,
) -> tuple[runner.Answer, SessionRecord | None]:
    """Run ``initialize`` through the middleware and create its session (HTTP and stdio).

    The innermost ``call_next`` stores the session, admitted by ``MCP_MAX_SESSIONS``,
    ``MCP_HANDSHAKE_TIMEOUT`` and the quota of ``owner`` (``MCP_MAX_SESSIONS_PER_CLIENT``).

    :return: the answer, and the new session (``None`` when it was refused).
    """
    created: list[SessionRecord] = []
    settings = state.settings

    def start(call: Call) -> dict[str, t.Any]:  # the innermost call_next of initialize
        record = SessionRecord(
            id=new_session_id(),
            protocol_version=version,
            client_info=params["clientInfo"],
            client_capabilities=params["capabilities"],
            log_level=settings.default_log_level,
            principal=principal_of(auth),
            path_args=stored_path_args(),
        )
        with collect_ended() as ended:
            try:
                stored = state.backend.create_session(
                    record,
                    settings.max_sessions,
                    handshake_timeout=settings.handshake_timeout,
                    owner=owner,
                    quota=settings.max_sessions_per_client,
                )
            except SessionQuotaExceeded:
                raise MCPError(
                    INVALID_REQUEST,
                    f"Too Many Requests: this client holds {settings.max_sessions_per_client} "
                    "sessions (MCP_MAX_SESSIONS_PER_CLIENT); end one with DELETE, or retry later.",
                    http_status=429,
                    headers={"Retry-After": "5"},
                ) from None
            finally:  # the sessions ended to make room, whatever became of this one
                for session_id, reason in ended:
                    signals.send(
                        signals.session_closed, state.app, session_id=session_id, reason=reason
                    )
        if not stored:
            raise MCPError(
                INVALID_REQUEST,
                "Service Unavailable: the server holds MCP_MAX_SESSIONS sessions; retry later.",
                http_status=503,
                headers={"Retry-After": "5"},
            )
        created.append(record)
        call.session = record  # the middleware outside sees the new session's id
        result: dict[str, t.Any] = {
            "protocolVersion": version,
            "capabilities": protocol.shape_capabilities(
                version, dispatcher.registry.capabilities()
            ),
            "serverInfo": protocol.server_info_fields(version, dispatcher.info.fields),
        }
        if dispatcher.info.instructions:
            result["instructions"] = dispatcher.info.instructions
        return result

    call = Call("initialize", params, request_id, version, protocol.HANDSHAKE, state=state)
    call.auth, call.path_args = auth, current_path_args()
    answer = runner.execute(dispatcher, call, start)  # inside the middleware
    reply = answer.message
    if not created or reply is None or "error" in reply:
        for record in created:  # a middleware refused after the session was made
            state.backend.delete_session(record.id)
        return answer, None
    return answer, created[0]


__all__ = ["Handshake", "SESSION_HEADER", "VERSION_HEADER"]
