"""The line channel under the stdio transport: messages in and out, tasks, shutdown.

:class:`LineChannel` writes one JSON-RPC message per line, runs each request
in a greenlet or thread of its own through the one runner
(:func:`flask_mcp.transport.runner.run_to_completion`) and stops when its input ends;
:class:`flask_mcp.transport.stdio.StdioServer` adds what each message means.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import sys
import threading
import time
import typing as t

from ..errors import INVALID_REQUEST
from ..errors import BackendUnavailable
from ..errors import store_unavailable
from ..kernel import intake
from ..protocol import jsonrpc
from ..runtime import concurrency as _concurrency
from ..runtime.supervisor import ensure_supervisor
from . import runner
from .path_args import Endpoint
from .path_args import match_endpoint

if t.TYPE_CHECKING:
    from flask import Flask

    from ..runtime.runs import PendingWrite
    from ..runtime.runs import RequestRun
    from ..runtime.state import AppState
    from ..server.call import Call
    from ..server.context import Context
    from ..server.dispatcher import Dispatcher

logger = logging.getLogger("flask_mcp")
#: The WSGI environ key of a request context that no HTTP request made: how its message
#: came (``"stdio"``, ``"local"``). Absent: the message came over HTTP.
TRANSPORT_KEY = "flask_mcp.transport"
#: Seconds given to running handlers to finish after stdin closes.
DRAIN = 5.0
#: Lines waiting for a channel's writer, at most: past it a sender waits for room, until the
#: write that holds them back is done or has stalled (``MCP_WRITE_TIMEOUT``).
WRITE_QUEUE = 1024


def protect_stdout() -> t.BinaryIO:
    """Keep stdout for messages: return it, and send everything else written there to stderr.

    File descriptor 1 is pointed at stderr and ``sys.stdout`` is replaced, so
    a ``print()`` in a handler, a library writing to stdout, even a C extension,
    cannot corrupt the message stream.
    """
    sys.stdout.flush()
    messages = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return messages


def stdio_context(
    app: Flask,
    path: str,
    transport: str = "stdio",
    headers: t.Sequence[tuple[str, str]] | None = None,
) -> t.ContextManager[t.Any]:
    """A request context for one message that came without HTTP: a bare POST to ``path``.

    ``path`` is the endpoint's (:attr:`LineChannel.endpoint`): the app's URL map
    matches it, so ``request.view_args`` holds the URL variables of ``MCP_PATH``. It
    has no headers, no cookies and no remote address: ``request.path`` is ``path``,
    ``session`` starts empty, ``url_for`` builds URLs (with ``SERVER_NAME``
    when set), ``g`` is fresh and ``teardown_request`` functions run after the message.
    ``request.environ[TRANSPORT_KEY]`` says how the message came, for telemetry.

    :param transport: ``"stdio"``, or ``"local"`` for the command line's own requests.
    :param headers: the request's headers, ``("Cookie", "session=...")``: the command
        line's ``--header`` (``session`` then opens from its cookie). None over stdio.
    """
    return app.test_request_context(
        path, method="POST", headers=headers, environ_base={TRANSPORT_KEY: transport}
    )


class LineChannel:
    """One client on a pair of byte streams, one message per line, until the input ends.

    :param dispatcher: runs the requests (the app's server's dispatcher).
    :param state: the state of the app, made by ``init_app``: its settings,
        backend and supervisor apply as under HTTP.
    :param stdin: where the client's messages come from, one per line.
    :param stdout: where messages to the client go, one per line.
    :param path: the path of the endpoint served, which ``MCP_PATH`` must match
        (``/t/acme/mcp`` for ``/t/<tenant>/mcp``): its URL variables are the
        ``path_args`` of every call and the ``view_args`` of every request context.
        Needed when ``MCP_PATH`` has variables; by default ``MCP_PATH`` itself.
    :raises ~flask_mcp.transport.path_args.EndpointError: ``path`` is not a path of
        the MCP endpoint, or is missing while ``MCP_PATH`` has variables.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        state: AppState,
        stdin: t.BinaryIO,
        stdout: t.BinaryIO,
        path: str | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.state = state
        self.stdin = stdin
        self.stdout = stdout
        rule = state.settings.path
        #: The endpoint served: its path, and the URL variables it gives each call.
        self.endpoint = (
            match_endpoint(state.app, rule, path)
            if state.app is not None
            else Endpoint(path or rule, {})
        )
        #: Requests running now, by JSON-RPC id: their calls (to cancel them).
        self.active: dict[t.Any, Call] = {}
        #: ``subscriptions/listen`` requests open now, by id: what stops each.
        self.listening: dict[t.Any, threading.Event] = {}
        #: Ids of running requests the client cancelled: nothing more is sent for them.
        self.cancel_requested: set[t.Any] = set()
        #: Set once stdin ended (or stdout broke): background loops stop.
        self.closed = threading.Event()
        #: Whether the client closed stdin: it ended the session, and what it had open
        #: ends with the transport, with nothing more written for it.
        self.stdin_closed = False
        #: Whether stdout is broken: nothing more can be sent.
        self.gone = False
        #: The lines for the channel's one writer (:meth:`_write_all`), in order, each with
        #: what is set once it is written or dropped (``None``: nobody waits for it).
        self._lines: queue.Queue[tuple[bytes, threading.Event | None] | None] = queue.Queue(
            WRITE_QUEUE
        )
        #: The writer, started by the first message; whether it has ended (:meth:`shutdown`).
        self._writer: _concurrency.Task | None = None
        self._writer_ended = False
        self._writer_lock = threading.Lock()
        #: The channel's writes, watched by the supervisor while :meth:`serve` runs: one
        #: that waits ``MCP_WRITE_TIMEOUT`` ends the session (:meth:`write_stalled`).
        self._watched: PendingWrite | None = None
        #: Guards :attr:`active` and :attr:`cancel_requested` together: a cancel read
        #: just as its request ends must not leave its id behind; and :attr:`listening`,
        #: which tells whether the client or the server ended a listen.
        self._calls_lock = threading.Lock()
        self._tasks: list[_concurrency.Task] = []

    # -- the two streams ---------------------------------------------------------

    def send(self, message: t.Any) -> None:
        """Write one message as a line, after those handed over before it; drop it once the
        client has gone.

        It returns once the line is written. A write the client does not read holds the
        others back; once it has waited ``MCP_WRITE_TIMEOUT`` the session ends
        (:meth:`write_stalled`) and they return.
        """
        done = threading.Event()
        if not self._hand_over(jsonrpc.dumps_bytes(message) + b"\n", done):
            return
        while not done.wait(1.0):
            if self.gone:  # a write before it stalled: it may never end
                return

    def post(self, message: t.Any) -> None:
        """Hand one message to the writer and return before it is written.

        How the reading loop answers (a parse error, ``initialize``): it never waits for
        a client that does not read stdout, only for room among :data:`WRITE_QUEUE` lines
        (a client sending faster than it reads) and at most until a stalled write ends
        the session; so stdin is read on, and its end ends the process.
        """
        self._hand_over(jsonrpc.dumps_bytes(message) + b"\n", None)

    def _hand_over(self, data: bytes, done: threading.Event | None) -> bool:
        """Queue ``data`` for the writer (started here the first time); tell whether it was.

        After :meth:`shutdown` ended the writer, a late message is written here.
        """
        with self._writer_lock:
            if not self._writer_ended:
                if self._writer is None:
                    self._writer = _concurrency.spawn(self._write_all)
                return self._put((data, done))
        self._write_line(data)
        return False

    def _put(self, item: tuple[bytes, threading.Event | None] | None) -> bool:
        """Queue ``item``, waiting for room while the client is there; tell whether it was."""
        while not self.gone:
            try:
                self._lines.put(item, timeout=1.0)
                return True
            except queue.Full:
                pass
        return False

    def _write_all(self) -> None:
        """The channel's one writer: write the lines handed over, in order, until ``None``."""
        while (item := self._lines.get()) is not None:
            data, done = item
            try:
                self._write_line(data)
            finally:
                if done is not None:
                    done.set()

    def _write_line(self, data: bytes) -> None:
        """Write one line, watched by the supervisor; nothing once the client has gone."""
        if self.gone:
            return
        watched = self._watched
        if watched is not None:
            watched.since = time.monotonic()
        try:
            if _concurrency.gevent_active():  # a blocked write would stop every greenlet
                import gevent

                gevent.get_hub().threadpool.apply(self._write, (data,))
            else:
                self._write(data)
        except (BrokenPipeError, ValueError, OSError):
            self.gone = True  # the client stopped reading: stop as if stdin had closed
            self.closed.set()
        except Exception:  # the writer must go on: senders wait for it
            logger.exception("Writing a message to stdout failed; it is dropped.")
        finally:
            if watched is not None:
                watched.since = None

    def _write(self, data: bytes) -> None:
        self.stdout.write(data)
        self.stdout.flush()

    def write_stalled(self) -> None:
        """End the session of a client that has read nothing for ``MCP_WRITE_TIMEOUT``.

        As over HTTP, where such a client's connection is closed: nothing more is
        written, running requests are cancelled and listens end, so that handlers
        do not pile up behind the write. The write itself cannot be taken back (a
        pipe cannot be shut down); stdin is still read until it closes, and the
        session ends then.
        """
        if self.gone:
            return
        self.gone = True
        self.closed.set()
        logger.warning(
            "The stdio client has read nothing for %g s (MCP_WRITE_TIMEOUT): nothing more is "
            "written to it, and its running requests are cancelled. Check that the client "
            "reads the server's stdout; the server exits when its stdin closes.",
            self.state.settings.write_timeout,
        )
        self._tasks.append(_concurrency.spawn(self._cancel_everything))

    def _cancel_everything(self) -> None:
        for stop in list(self.listening.values()):
            stop.set()
        for call in list(self.active.values()):
            with contextlib.suppress(BackendUnavailable):
                self._cancel(call)

    def serve(self) -> None:
        """Read and answer messages until stdin ends, then end the session and return."""
        ensure_supervisor(self.state)
        self._watched = self.state.writes.open(_StalledWrite(self))
        limit = self.state.settings.max_body_size
        try:
            while not self.closed.is_set():
                line = self._readline(limit + 1)
                if not line:
                    self.stdin_closed = True
                    break
                if len(line) > limit and not line.endswith(b"\n"):  # a newline past the limit
                    self._skip_long_line(line, limit)
                elif line.strip():
                    try:
                        self.receive(line)
                    except Exception:  # a bug must not end the session: answer what comes next
                        logger.exception("The stdio transport failed to handle a message")
        finally:
            self.shutdown()

    def _readline(self, limit: int) -> bytes:
        """Read one line of at most ``limit`` bytes, without blocking other greenlets.

        Under gevent (an app module that monkey-patches) a read of stdin would
        block the whole process, handlers included: it runs in gevent's pool of
        native threads instead.
        """
        if _concurrency.gevent_active():
            import gevent

            return t.cast(bytes, gevent.get_hub().threadpool.apply(self.stdin.readline, (limit,)))
        return self.stdin.readline(limit)

    def _skip_long_line(self, start: bytes, limit: int) -> None:
        """Drop a message longer than ``MCP_MAX_BODY_SIZE`` and say so (HTTP answers 413)."""
        line = start
        while line and not line.endswith(b"\n"):
            line = self._readline(limit + 1)
        error = {
            "code": INVALID_REQUEST,
            "message": f"Invalid Request: the message is larger than {limit} bytes "
            "(MCP_MAX_BODY_SIZE); send smaller messages or raise the limit.",
        }
        self.post(jsonrpc.error(None, error))

    def shutdown(self) -> None:
        """Let running requests finish for :data:`DRAIN` seconds, cancel the rest, end the session.

        A client that writes its requests and closes stdin (``echo ... | flask mcp
        stdio``) still gets their answers; one that leaves while a handler waits
        for it does not keep the process alive.
        """
        self.closed.set()
        for stop in list(self.listening.values()):
            stop.set()
        deadline = time.monotonic() + DRAIN
        for task in list(self._tasks):
            task.join(max(0.0, deadline - time.monotonic()))
        for call in list(self.active.values()):
            self._cancel(call)
        for task in list(self._tasks):
            task.join(1.0)
        with contextlib.suppress(BackendUnavailable):
            self.end_session()
        self._end_writer()
        self.state.writes.close(self._watched)

    def _end_writer(self) -> None:
        """Let the writer write what was handed over, then end it (or leave it to a stalled
        write, once that has ended the session)."""
        with self._writer_lock:
            self._writer_ended = True
            writer = self._writer
            if writer is None or not self._put(None):
                return
        while not writer.join(1.0):
            if self.gone:  # its write stalled: it may never end
                return

    def end_session(self) -> None:
        """End what the client started (its session), once stdin has ended."""

    def receive(self, line: bytes) -> None:
        """Handle one line from the client."""
        raise NotImplementedError

    def _spawn(self, fn: t.Callable[[], None]) -> None:
        """Run ``fn`` in a greenlet or thread of its own, in a request context of the app.

        As over HTTP, every handler runs in a request context (:func:`stdio_context`),
        so code written for views (``request``, ``g``, ``session``, ``url_for``) runs.
        """
        app = self.state.app
        path = self.endpoint.path

        def work() -> None:
            try:
                if app is None:
                    fn()
                    return
                with stdio_context(app, path):
                    fn()
            except Exception:
                logger.exception("The stdio transport failed to handle a message")

        self._tasks = [task for task in self._tasks if not task.join(0)]
        self._tasks.append(_concurrency.spawn(work))

    def _cancel(self, call: Call) -> None:
        """Cancel a running call: through the backend on a session, as over HTTP.

        Nothing more is written for it, even what a handler on a thread sends
        before it notices; a call whose handler has not started yet is cancelled
        as it starts.
        """
        with self._calls_lock:
            if self.active.get(call.request_id) is not call:
                return  # it ended meanwhile: there is nothing to cancel
            self.cancel_requested.add(call.request_id)
        if call.session is not None:
            self.state.backend.cancel(call.session.id, call.request_id)
            return
        if call.run is not None:  # else it is cancelled as it starts
            call.run.cancel()

    def _run(self, call: Call, context: runner.ContextFactory | None = None) -> None:
        """Run ``call`` through the one runner in its own task; write its response.

        :param context: builds the ``Context`` of a spawned handler; default: the era's
            (:func:`~flask_mcp.kernel.intake.context_for`), built only if it is spawned.
        """
        request_id = call.request_id
        with self._calls_lock:
            self.active[request_id] = call
            self.cancel_requested.discard(request_id)

        def start(run: RequestRun) -> Context:
            ctx = (intake.context_for(call) if context is None else context)(run)
            if request_id in self.cancel_requested:  # the cancel came before the run
                run.cancel()
            return ctx

        def emit(message: dict[str, t.Any]) -> None:
            if request_id not in self.cancel_requested:
                self.send(message)

        def work() -> None:
            response: dict[str, t.Any] | None
            try:
                response = runner.run_to_completion(
                    self.dispatcher,
                    call,
                    context=start,
                    on_message=emit,
                    can_round_trip=call.session is not None,
                )
            except BackendUnavailable as exc:
                response = unavailable(request_id, exc)
            finally:
                with self._calls_lock:
                    self.active.pop(request_id, None)
                    cancelled = request_id in self.cancel_requested
                    self.cancel_requested.discard(request_id)
            if response is not None and not cancelled:
                self.send(response)

        self._spawn(work)


class _StalledWrite:
    """What the supervisor shuts down when a channel's write stalls: it ends the session.

    :class:`~flask_mcp.runtime.runs.PendingWrites` shuts a stalled connection down; a
    pipe has no such thing, so this stands for it.
    """

    def __init__(self, channel: LineChannel) -> None:
        self.channel = channel

    def shutdown(self, how: int) -> None:
        self.channel.write_stalled()


def unavailable(request_id: t.Any, exc: Exception) -> dict[str, t.Any]:
    """Return the error refusing a request that met an unreachable backend before it started.

    Nothing ran, so it is the retryable error of HTTP's 503
    (:func:`~flask_mcp.errors.store_unavailable`); where the backend is and why it failed
    go to the log, as over HTTP. A request whose handler met the outage is answered by the
    runner (:func:`~flask_mcp.transport.runner.outage_answer`): it may have run in part.
    """
    logger.warning("Refused request id %r: the session store is unavailable: %s", request_id, exc)
    return jsonrpc.error(request_id, store_unavailable().to_error())


__all__ = [
    "DRAIN",
    "TRANSPORT_KEY",
    "LineChannel",
    "protect_stdout",
    "stdio_context",
    "unavailable",
]
