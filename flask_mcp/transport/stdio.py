"""The stdio transport: one client, newline-delimited JSON-RPC on stdin and stdout.

A desktop client (Claude Desktop, Cursor, VS Code...) starts the server as a
subprocess and talks to it over its standard streams (spec: ``basic/transports``
of 2025-11-25, ``basic/transports/stdio`` of 2026-07-28). Each line is one
message; nothing but messages goes to stdout (:func:`protect_stdout` sends
stray prints and logging to stderr).

Requests run through the same kernel as over HTTP: each era's call is built as
:mod:`.handshake` and :mod:`.stateless` build it, minus the headers, and run by
:func:`flask_mcp.transport.runner.run_to_completion`, each in a greenlet or thread of
its own so that the reader keeps reading: a client's answer to a sampling,
elicitation or roots request, or its ``notifications/cancelled``, arrives
while handlers run.

- Handshake era: ``initialize`` creates a session in the app's backend as over
  HTTP; notifications and the client's answers take the session's code paths
  (:class:`~flask_mcp.transport.handshake.Handshake`); what the app sends to the
  session outside a request (list changes, resource updates) is read from the
  session's general stream and written out.
- 2026-07-28: each request carries its ``_meta``; a handler that needs input
  ends with an ``InputRequiredResult`` (MRTR) and the client retries, as over
  HTTP; ``subscriptions/listen`` stays open until the client cancels it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import typing as t

from .. import protocol
from ..backends.base import GENERAL_STREAM
from ..backends.base import SessionRecord
from ..errors import INVALID_REQUEST
from ..errors import PARSE_ERROR
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..kernel import intake
from ..protocol import jsonrpc
from ..runtime.runs import StreamOutbox
from . import listen
from . import sse
from .handshake import EMPTY_BATCH
from .handshake import Handshake
from .handshake import start_session
from .stdio_channel import LineChannel
from .stdio_channel import protect_stdout
from .stdio_channel import stdio_context
from .stdio_channel import unavailable

if t.TYPE_CHECKING:
    from ..runtime.state import AppState
    from ..server.dispatcher import Dispatcher

logger = logging.getLogger("flask_mcp")
#: Seconds between two reads of the session's general stream (and touches of the session).
POLL = 1.0


class StdioServer(LineChannel):
    """Serves one MCP client over a pair of byte streams until the input ends.

    :param dispatcher: runs the requests (the app's server's dispatcher).
    :param state: the state of the app, made by ``init_app``: its settings,
        backend and supervisor apply as under HTTP.
    :param stdin: where the client's messages come from, one per line.
    :param stdout: where messages to the client go, one per line.
    :param roots_changed_hooks: called with the session id when the client's roots change.
    :param path: the path of the endpoint served (``/t/acme/mcp`` for ``MCP_PATH``
        ``/t/<tenant>/mcp``): see :class:`~flask_mcp.transport.stdio_channel.LineChannel`.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        state: AppState,
        stdin: t.BinaryIO,
        stdout: t.BinaryIO,
        roots_changed_hooks: t.Sequence[t.Callable[[str], None]] = (),
        path: str | None = None,
    ) -> None:
        super().__init__(dispatcher, state, stdin, stdout, path)
        self.handshake = Handshake(dispatcher, state, roots_changed_hooks)
        self.session_id: str | None = None

    def end_session(self) -> None:
        """End the handshake-era session, as a DELETE does over HTTP."""
        if self.session_id is not None:
            record = self.state.backend.get_session(self.session_id)
            if record is not None:
                self.handshake.end(record)

    def receive(self, line: bytes) -> None:
        """Handle one line from the client."""
        try:
            message = jsonrpc.loads(line)
        except MCPError as exc:
            self.post(jsonrpc.error(None, {"code": PARSE_ERROR, "message": exc.message}))
            return
        if isinstance(message, list):
            self._spawn(lambda: self._batch(message))
            return
        try:
            kind = jsonrpc.classify(message)
        except MCPError as exc:
            self.post(jsonrpc.error_from(jsonrpc.request_id_of(message), exc))
            return
        if kind == jsonrpc.NOTIFICATION:
            self._notification(message)
        elif kind == jsonrpc.RESPONSE:
            self._client_response(message)
        elif message["method"] == "initialize":
            self._initialize(message)
        elif message["id"] in self.active or message["id"] in self.listening:
            error = {
                "code": INVALID_REQUEST,
                "message": f"Invalid Request: request id {message['id']!r} is already in use by "
                "a request that has not been answered; use a new id.",
            }
            self.post(jsonrpc.error(message["id"], error))
        elif self._era(message) == protocol.STATELESS:
            self._stateless(message)
        else:
            self._session_request(message)

    def _era(self, message: dict[str, t.Any]) -> str:
        """The era of a request, as :func:`protocol.era_of_request` chooses it over HTTP.

        stdio has no session header: a request belongs to the session once
        ``initialize`` opened one, unless its ``_meta`` names a protocol version
        (a 2026-07-28 request); a handshake-era ``_meta`` key such as a related
        task's keeps it in the session.
        """
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        names_version = isinstance(meta, dict) and protocol.META_PROTOCOL_VERSION in meta
        in_session = self.session_id is not None and not names_version
        return protocol.era_of_request(has_session=in_session, header_version=None, message=message)

    # -- handshake era -------------------------------------------------------------

    def _record(self) -> SessionRecord | None:
        if self.session_id is None:
            return None
        return self.state.backend.get_session(self.session_id, touch=True)

    def _initialize(self, message: dict[str, t.Any]) -> None:
        """Start the session, as :meth:`Handshake._initialize` does for a POST."""
        state = self.state

        def end_previous() -> None:
            if self.session_id is not None:
                old = state.backend.get_session(self.session_id)
                if old is not None:  # a client that starts over ends its first session
                    self.handshake.end(old)

        # Read in the reader's own thread (the next line may need the session), but in a
        # request context as every other request: a middleware or a session_created
        # receiver that uses ``g``, ``request`` or ``current_app`` works here too.
        app = state.app
        scope = stdio_context(app, self.endpoint.path) if app else contextlib.nullcontext()
        with scope:
            # One client per process: no quota by address (the owner is the process itself).
            answer, record = start_session(
                self.dispatcher,
                state,
                message,
                None,
                owner=f"stdio:{os.getpid()}",
                before_open=end_previous,
            )
        if record is None:
            if answer.message is not None:
                self.post(answer.message)
            return
        self.session_id = record.id
        self.post(answer.message)
        session_id = record.id
        self._spawn(lambda: self._general_stream(session_id))

    def _general_stream(self, session_id: str) -> None:
        """Write what the app sends the session outside a request; keep the session alive."""
        backend = self.state.backend
        outbox = StreamOutbox(backend, session_id, GENERAL_STREAM)
        after = backend.get_cursor(session_id, GENERAL_STREAM)
        reader = sse.StreamReader(
            outbox, after=after, with_ids=False, heartbeat=POLL, retry_ms=0, stop_at_end=False
        )
        try:
            while not self.closed.is_set() and self.session_id == session_id:
                if backend.get_session(session_id, touch=True) is None:
                    break  # ended (MCP_SESSION_MAX_LIFETIME): later requests say so
                reader.collect((), time.monotonic() + POLL, self.send)
                backend.set_cursor(session_id, GENERAL_STREAM, reader.after)
        except BackendUnavailable as exc:
            logger.warning("The session's notifications stopped: %s", exc)
        finally:
            reader.close()

    def _session_request(self, message: dict[str, t.Any]) -> None:
        request_id = message["id"]
        try:
            record = self._record()
        except BackendUnavailable as exc:
            self.post(unavailable(request_id, exc))
            return
        if record is None:
            text = (
                "The session ended (MCP_SESSION_MAX_LIFETIME); send initialize again."
                if self.session_id is not None
                else "Send initialize first, or a 2026-07-28 request with params._meta."
            )
            self.post(jsonrpc.error(request_id, {"code": INVALID_REQUEST, "message": text}))
            return
        path_args = self.endpoint.path_args
        self._run(intake.session_call(self.state, record, message, None, path_args))

    def _batch(self, messages: list[t.Any]) -> None:
        """Answer a batch, allowed only on a 2025-03-26 session (as over HTTP).

        A backend that cannot be reached answers the whole batch with one error, as
        the 503 of a batch POST does.
        """
        try:
            self._answer_batch(messages)
        except BackendUnavailable as exc:
            self.send(unavailable(None, exc))

    def _answer_batch(self, messages: list[t.Any]) -> None:
        """Answer a batch, or refuse it unless the session negotiated 2025-03-26."""
        record = self._record()
        if record is None or not protocol.supports_batching(record.protocol_version):
            text = (
                "Invalid Request: JSON-RPC batches are only accepted on sessions that "
                "negotiated protocol 2025-03-26; send one message per line."
            )
            self.send(jsonrpc.error(None, {"code": INVALID_REQUEST, "message": text}))
            return
        if not messages:
            self.send(jsonrpc.error(None, {"code": INVALID_REQUEST, "message": EMPTY_BATCH}))
            return
        answers = self.handshake.batch_answers(
            self.state,
            record,
            messages,
            None,
            self._notification,
            self._client_response,
            path_args=self.endpoint.path_args,
        )
        if answers:
            self.send(answers)

    def _notification(self, message: dict[str, t.Any]) -> None:
        """Handle a notification: a cancel here, else the session's, as over HTTP.

        A cancel naming no request this channel runs (the member of a 2025-03-26
        batch) goes to the session, which cancels it through the backend.
        """
        method = message["method"]
        params = message.get("params") or {}
        if method == "notifications/cancelled":
            request_id = params.get("requestId") if isinstance(params, dict) else None
            if not jsonrpc.valid_id(request_id):
                return  # names no request: nothing to do, as over HTTP
            with self._calls_lock:  # the client ends it: no cancel goes back
                stop = self.listening.pop(request_id, None)
            if stop is not None:
                stop.set()
            call = self.active.get(request_id)
            if call is not None:
                self._cancel(call)
            if stop is not None or call is not None:
                return
        record = self._record()
        if record is not None:
            self.handshake.notification(self.state, record, message)

    def _client_response(self, message: dict[str, t.Any]) -> None:
        record = self._record()
        if record is None:
            logger.info(
                "Dropped a client response to request id %r: there is no session (2026-07-28 "
                "clients answer in the inputResponses of a retry).",
                message.get("id"),
            )
            return
        self.handshake.client_response(self.state, record, message)

    # -- 2026-07-28 ------------------------------------------------------------------

    def _stateless(self, message: dict[str, t.Any]) -> None:
        """Validate a 2026-07-28 request as :mod:`.stateless` does, without headers; run it."""
        request_id = message["id"]
        method = message["method"]
        params = message.get("params")
        state = self.state
        path_args = self.endpoint.path_args
        try:
            meta = intake.request_meta(params)
            assert isinstance(params, dict)
            version = meta[protocol.META_PROTOCOL_VERSION]
            intake.check_stateless_version(version)
            if method == "subscriptions/listen":
                self._open_listen(request_id, params)
                return
            record = intake.offered(self.dispatcher, method, protocol.STATELESS)
            call = intake.stateless_call(
                state, message, version, None, path_args, method_record=record
            )
            context = intake.round_context(call) if record.user_code else None
        except MCPError as exc:
            self.post(jsonrpc.error_from(request_id, exc))
            return
        self._run(call, context)

    def _open_listen(self, request_id: t.Any, params: dict[str, t.Any]) -> None:
        """Check a ``subscriptions/listen`` filter and serve the listen in a task of its own.

        It starts in a request context, as over HTTP (where the view checks it), and
        sends the same signals (:class:`~flask_mcp.transport.listen.ListenCall`).

        :raises MCPError: the filter is malformed (-32602), or names task ids without
            the tasks extension.
        """
        state = self.state
        app = state.app
        scope = stdio_context(app, self.endpoint.path) if app else contextlib.nullcontext()
        with scope:
            call = listen.ListenCall(state, request_id, params)
            try:
                # the state finds the caller's own tasks among notifications.taskIds
                agreed = listen.honoured(
                    self.dispatcher.registry, params, state, None, self.endpoint.path_args
                )
            except BaseException as exc:
                call.fail(exc)
                raise
        stop = self.listening[request_id] = threading.Event()
        self._spawn(lambda: self._listen(call, agreed, stop))

    def _listen(
        self, call: listen.ListenCall, agreed: dict[str, t.Any], stop: threading.Event
    ) -> None:
        """Serve ``subscriptions/listen``: the chosen notifications until the client cancels.

        A listen the server ends (it is interrupted, or its backend failed) ends with
        ``notifications/cancelled`` naming it, as the spec requires of a server tearing
        down a subscription (``basic/patterns/cancellation.mdx``). One the client
        cancelled gets nothing more, nor do those open when the client closes stdin:
        that ends the session (``basic/transports/stdio.mdx``, Shutdown), and a
        subscription ends with its transport without a message
        (``basic/patterns/subscriptions.mdx``, Cancellation).
        """
        state = self.state
        request_id = call.request_id
        try:
            subscription = state.backend.subscribe(state.listen_channel)
        except BackendUnavailable as exc:
            self.listening.pop(request_id, None)
            call.fail(exc)
            self.send(unavailable(request_id, exc))
            return
        source = listen.ListenSource(subscription, agreed, request_id, call.stream_id)
        meta = {protocol.META_SUBSCRIPTION_ID: request_id}
        if not stop.is_set():
            ack = {"_meta": meta, "notifications": agreed}
            self.send(jsonrpc.notification("notifications/subscriptions/acknowledged", ack))
        failed = False
        try:
            while not stop.is_set() and not self.closed.is_set():
                for event in source.read(0, 1, POLL).events:
                    if event.message is not None and not stop.is_set():
                        self.send(event.message)
        except BackendUnavailable as exc:
            failed = True
            logger.warning("Ended a subscriptions/listen: %s", exc)
        finally:
            subscription.close()
            with self._calls_lock:  # still listed: the client did not cancel it
                ours = self.listening.get(request_id) is stop
                if ours:
                    del self.listening[request_id]
            if ours and not self.stdin_closed:
                reason = (
                    "The server is shutting down."
                    if self.closed.is_set()
                    else "The server could not go on serving this subscription; send "
                    "subscriptions/listen again."
                )
                cancel = {"requestId": request_id, "reason": reason, "_meta": meta}
                self.send(jsonrpc.notification("notifications/cancelled", cancel))
            if failed:
                call.finish("backend-unavailable", dict(listen.BACKEND_FAILED))
            elif ours and (self.stdin_closed or self.gone):  # the client left or reads nothing
                call.finish("client-gone")
            elif ours:  # the server is interrupted: it cancelled the listen
                call.finish("interrupted")
            else:
                call.finish("cancelled")


def serve_stdio(
    dispatcher: Dispatcher,
    state: AppState,
    roots_changed_hooks: t.Sequence[t.Callable[[str], None]] = (),
    *,
    stdout: t.BinaryIO | None = None,
    path: str | None = None,
) -> None:
    """Serve the process's stdin and stdout until stdin closes (``flask mcp stdio``).

    :param stdout: what :func:`protect_stdout` returned, when it was called
        earlier (before the app was imported); by default it is called here.
    :param path: the path of the endpoint served (``flask mcp --path``), needed when
        ``MCP_PATH`` has URL variables: see :class:`StdioServer`.
    :raises ~flask_mcp.transport.path_args.EndpointError: ``path`` is not a path of
        the MCP endpoint, or is missing while ``MCP_PATH`` has variables.
    """
    if stdout is None:
        stdout = protect_stdout()
    server = StdioServer(
        dispatcher, state, sys.stdin.buffer, stdout, roots_changed_hooks, path=path
    )
    server.serve()


__all__ = ["StdioServer", "protect_stdout", "serve_stdio"]
