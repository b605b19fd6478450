"""The one runner: a call and an outbox in, the response out, in both protocol eras.

Every request that reaches the dispatcher goes through these functions, whether
it came with a session (handshake era) or stood alone (2026-07-28); each era's
transport code only validates the request and builds its :class:`~flask_mcp.server.call.Call`.

Without HTTP (a stdio transport, tasks):

- :func:`execute` dispatches a call and maps what it raises to a response
  message, with the request signals;
- :func:`run_inline` runs a handler that cannot emit in the caller's own
  greenlet or thread, under the supervisor's timeout;
- :func:`spawn` runs a handler in a greenlet or thread of its own, its messages
  and its response going to an outbox;
- :func:`run_to_completion` runs a call to its end and returns the response.

Over HTTP, :func:`serve_http` answers one POST: with JSON when the response
comes first, or with an event stream once the handler sends something
(buffered whole on a worker that cannot hold a stream). The era decides only
what :func:`~flask_mcp.protocol.has_sessions` says: a session's stream is
resumable (event ids, priming, server-to-client requests, a client may leave
and come back); a 2026-07-28 stream ends with its connection, which cancels
the request.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import typing as t

from flask import Response

from .. import protocol
from .. import signals
from ..auth import AuthRefused
from ..backends.base import MESSAGE
from ..errors import INTERNAL_ERROR
from ..errors import BackendUnavailable
from ..errors import MCPError
from ..errors import RequestCancelled
from ..errors import store_unavailable
from ..protocol import jsonrpc
from ..runtime import concurrency as _concurrency
from ..runtime import settle
from ..runtime.runs import InlineOutbox
from ..runtime.runs import InProcessOutbox
from ..runtime.runs import Outbox
from ..runtime.runs import RequestRun
from ..runtime.runs import StreamOutbox
from ..runtime.runs import new_stream_id
from ..runtime.supervisor import TICK
from ..server.dispatcher import EXECUTE
from ..server.dispatcher import INLINE
from . import sse
from .environment import bind_to_request
from .responses import json_response
from .responses import no_content

if t.TYPE_CHECKING:
    from ..auth import AuthChallenge
    from ..server.call import Call
    from ..server.context import Context
    from ..server.dispatcher import Dispatcher

logger = logging.getLogger("flask_mcp")
#: Seconds past a run's deadline that a waiting view gives the supervisor to answer
#: with the timeout error before it answers so itself.
GRACE = 2 * TICK + 1.0
#: Builds the :class:`~flask_mcp.Context` of a spawned handler from its run.
ContextFactory = t.Callable[[RequestRun], "Context"]


@dataclasses.dataclass
class Answer:
    """The outcome of one call.

    :param message: the JSON-RPC response, or ``None`` after a cancellation.
    :param status: the HTTP status when the answer is the whole response: 200,
        or what a 2026-07-28 error or an authorization refusal asks for.
    :param headers: extra HTTP headers of such an answer (``WWW-Authenticate``).
    :param refused: the authorization challenge, when the call was refused.
    """

    message: dict[str, t.Any] | None
    status: int = 200
    headers: dict[str, str] | None = None
    refused: AuthChallenge | None = None


def is_response(message: t.Any, request_id: t.Any) -> bool:
    """Tell whether ``message`` is the final response to request ``request_id``."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    )


# -- without HTTP ------------------------------------------------------------------


def execute(
    dispatcher: Dispatcher,
    call: Call,
    route: t.Callable[[Call], dict[str, t.Any]] | None = None,
) -> Answer:
    """Dispatch ``call``, send the request signals, and map errors to the response.

    A JSON-RPC error answers with HTTP 200 in the handshake era and with the
    error's ``http_status`` at 2026-07-28; an authorization refusal always
    carries its challenge (403 and ``WWW-Authenticate``), and an error with
    ``headers`` (a rate limit: 429 and ``Retry-After``) its status and headers.
    An unexpected exception is logged and answered with a redacted -32603.

    :param route: answers the call instead of the dispatcher's method table,
        inside the middleware (the handshake's ``initialize``).
    A session store outage met once a user handler started (its own use of the store, or
    ``ctx.elicit()``) is answered by :func:`outage_answer`: the handler may have run in part.

    :raises BackendUnavailable: the backend failed before a handler started: the transport
        refuses the request with the retryable 503, which ``request_finished`` carries.
    :raises RequestCancelled: the request was cancelled.
    """
    state = call.state
    method = call.method
    request_id = call.request_id
    started = time.perf_counter()
    if signals.request_started.receivers:  # no keyword dict to build when no one listens
        signals.send(
            signals.request_started,
            state.app,
            method=method,
            request_id=request_id,
            session_id=call.session.id if call.session is not None else None,
        )
    run = dispatcher.dispatch if route is None else lambda call: dispatcher.dispatch(call, route)
    error: dict[str, t.Any] | None = None
    try:
        answer, error = answer_of(dispatcher, call, run)  # no closure to build for a plain call
    except BackendUnavailable as exc:
        if not call.handler_started:  # nothing ran: the transport refuses it (503)
            error = store_unavailable().to_error()
            raise
        answer = outage_answer(call, exc)  # its handler may have run in part
        error = t.cast(dict[str, t.Any], answer.message)["error"]
    finally:  # once, also when the request was cancelled or timed out (gevent interrupts)
        if signals.request_finished.receivers:
            timed_out = call.run.timed_out if call.run is not None else None
            if timed_out is not None:  # the client got the timeout's answer, not the handler's
                error = timed_out.get("error")
            signals.send(
                signals.request_finished,
                state.app,
                method=method,
                request_id=request_id,
                session_id=call.session.id if call.session is not None else None,
                duration=time.perf_counter() - started,
                error=error,
            )
    return answer


def outage_answer(call: Call, exc: BackendUnavailable) -> Answer:
    """Answer ``call``, which met an unreachable session store, and log it as a store problem.

    Once a user handler started it may have done part of its work: the error says so and
    that the call is not to be sent again blindly
    (:data:`~flask_mcp.runtime.settle.STORE_UNAVAILABLE_WHILE_RUNNING`). Before, nothing
    ran: the error is the retryable one of the 503 (:func:`~flask_mcp.errors.store_unavailable`).
    """
    logger.warning(
        "Request %r (id %r) failed: the session store is unavailable: %s",
        call.method,
        call.request_id,
        exc,
    )
    if call.handler_started:
        text = settle.STORE_UNAVAILABLE_WHILE_RUNNING
        return Answer(settle.error_answer(call.request_id, text))
    return Answer(jsonrpc.error(call.request_id, store_unavailable().to_error()))


def answer_of(
    dispatcher: Dispatcher, call: Call, run: t.Callable[[Call], dict[str, t.Any]]
) -> tuple[Answer, dict[str, t.Any] | None]:
    """Run ``run(call)`` and map what it raises to the response: the answer and its error.

    :raises BackendUnavailable: the backend failed outside the handler.
    :raises RequestCancelled: the request was cancelled.
    """
    request_id = call.request_id
    error = None
    answer: Answer
    try:
        answer = Answer(jsonrpc.result(request_id, run(call)))
    except AuthRefused as exc:
        error = exc.to_error()
        status = exc.http_status or 403
        answer = Answer(jsonrpc.error(request_id, error), status, exc.headers, exc.challenge)
    except MCPError as exc:
        error = exc.to_error()
        headers = getattr(exc, "headers", None)  # a subclass may skip MCPError.__init__
        if headers is not None and exc.http_status:  # a refusal (429, 503): in both eras
            answer = Answer(jsonrpc.error(request_id, error), exc.http_status, headers)
        else:
            status = 200 if call.era == protocol.HANDSHAKE else exc.http_status or 200
            answer = Answer(jsonrpc.error(request_id, error), status)
    except (BackendUnavailable, RequestCancelled):
        raise
    except Exception as exc:
        text = dispatcher.internal_error(exc, call.method, call.state)
        error = {"code": INTERNAL_ERROR, "message": text}
        answer = Answer(jsonrpc.error(request_id, error))
    return answer, error


def _new_run(call: Call, outbox: Outbox) -> RequestRun:
    session_id = call.session.id if call.session is not None else None
    now = time.monotonic()
    deadline = now + call.state.settings.request_timeout
    run = RequestRun(session_id, call.request_id, call.method, outbox, deadline, call.era, now)
    if session_id is None:  # request ids of different clients may collide
        run.key = (None, object())
    return run


def run_inline(dispatcher: Dispatcher, call: Call) -> Answer:
    """Run a handler that cannot emit in the caller's own greenlet or thread: no spawn.

    The run is registered, so the supervisor times it out (interrupting it on
    gevent; a thread cannot be, so its answer is the timeout error, sent when
    the handler returns) and a cancellation reaches it. The answer is the
    handler's, the supervisor's timeout error, or nothing after a cancel.
    """
    state = call.state
    outbox = InlineOutbox()
    run = call.run = _new_run(call, outbox)
    task = run.task = _concurrency.current_task()
    # A backend of this process only sees the run in state.inflight (the supervisor
    # keeps its session); a shared one counts it for every worker.
    shared = call.session is not None and state.backend.multiprocess
    if shared:
        state.backend.touch_session(t.cast(str, run.session_id), +1)
    state.inflight.add(run)
    answer = None
    try:
        answer = execute(dispatcher, call)
    except RequestCancelled:
        pass
    finally:
        task.disarm()
        state.inflight.remove(run)
        if shared:
            state.backend.touch_session(t.cast(str, run.session_id), -1)
    if not outbox.finish(None if answer is None else answer.message):
        answer = Answer(outbox.final)  # the supervisor's timeout error, or nothing
    _concurrency.let_others_run(task)
    return answer if answer is not None else Answer(None)


def spawn(
    dispatcher: Dispatcher,
    call: Call,
    outbox: Outbox,
    *,
    context: ContextFactory | None = None,
    can_round_trip: bool = True,
    body: t.Callable[[Call], dict[str, t.Any]] | None = None,
) -> RequestRun:
    """Run the call's handler in a greenlet or thread of its own; return its run.

    Everything the handler sends, then its response (or the supervisor's timeout
    error), goes to ``outbox``, which ends after the response. The handler runs
    in a copy of the caller's request context (``g`` carried over). The run's
    :attr:`~flask_mcp.runtime.runs.RequestRun.result` is the handler's :class:`Answer`.

    :param context: builds the handler's ``Context`` from the run.
    :param can_round_trip: whether the handler may send requests to the client
        (its stream can be held open while it waits for the answer).
    :param body: what runs instead of dispatching the call: a task's run, which
        went through the middleware, the validation and the request signals in the
        request that created it and so goes through none of them again.
    :raises BackendUnavailable: the session could not be marked busy.
    """
    state = call.state
    run = call.run = _new_run(call, outbox)
    run.can_round_trip = can_round_trip
    if context is not None:
        call.ctx = context(run)
    session_id = run.session_id
    if session_id is not None:
        state.backend.touch_session(session_id, +1)  # first: it may raise BackendUnavailable
    state.inflight.add(run)
    if body is None:
        handle = bind_to_request(state.app, lambda: execute(dispatcher, call))
    else:

        def shaped(call: Call) -> dict[str, t.Any]:
            result = body(call)
            return result if call.era == protocol.HANDSHAKE else dispatcher.shape(call, result)

        handle = bind_to_request(state.app, lambda: answer_of(dispatcher, call, shaped)[0])

    def work() -> None:
        answer = None
        try:
            answer = handle()
        except RequestCancelled:
            answer = None
        except BackendUnavailable as exc:  # a backend problem, not a bug of the handler
            answer = outage_answer(call, exc)
        except Exception:
            logger.exception("Request %r failed outside its handler", call.method)
            error = {"code": INTERNAL_ERROR, "message": "Internal error."}
            answer = Answer(jsonrpc.error(call.request_id, error))
        finally:
            if run.cancelled.is_set():
                answer = None
            run.result = answer
            # The handler is done with its context, which refers back to the call: with
            # the cycle cut, the call, its run and its answer (a large result, maybe)
            # are freed when the request ends, not at a later collection of cycles.
            call.ctx = None
            outbox.finish(None if answer is None else answer.message)  # owed if it cannot
            state.inflight.remove(run)
            if session_id is not None:
                with contextlib.suppress(BackendUnavailable):  # settled when it is back
                    state.backend.touch_session(session_id, -1)

    try:
        run.task = _concurrency.spawn(work)
    except BaseException:  # no thread left, say: nothing runs, so nothing stays running
        state.inflight.remove(run)
        if session_id is not None:
            with contextlib.suppress(BackendUnavailable):
                state.backend.touch_session(session_id, -1)
        raise
    return run


def run_to_completion(
    dispatcher: Dispatcher,
    call: Call,
    *,
    context: ContextFactory | None = None,
    on_message: t.Callable[[dict[str, t.Any]], None] | None = None,
    can_round_trip: bool = False,
) -> dict[str, t.Any] | None:
    """Run ``call`` to its end without HTTP and return its response (``None`` if cancelled).

    What the handler sends before the response goes to ``on_message`` as it
    comes.

    :param can_round_trip: whether the handler may send requests to the client:
        only when the caller carries the client's answers back (the stdio
        transport delivers them to the backend, as a reply POST would).
    """
    where = dispatcher.placement(call)
    if where == EXECUTE:
        return execute(dispatcher, call).message
    if where == INLINE:
        return run_inline(dispatcher, call).message
    outbox = InProcessOutbox(new_stream_id())
    run = spawn(dispatcher, call, outbox, context=context, can_round_trip=can_round_trip)
    reader = sse.StreamReader(outbox, after=0, with_ids=False, heartbeat=1.0, retry_ms=0)
    final: list[dict[str, t.Any]] = []

    def take(message: dict[str, t.Any]) -> None:
        if is_response(message, call.request_id):
            final.append(message)
        elif on_message is not None:
            on_message(message)

    ended = _collect(reader, run, (), take)
    reader.close()
    if not ended:
        answer = _timeout(call)
        run.cancel()
        return answer
    return final[0] if final else None


def _collect(
    reader: sse.StreamReader,
    run: RequestRun,
    pending: t.Sequence[t.Any],
    take: t.Callable[[dict[str, t.Any]], None],
    watch_client: bool = False,
) -> bool | None:
    """Collect the run's messages until it ends; ``False`` past its deadline (and ``GRACE``).

    The deadline is read again when it passes: the handler may have moved it
    (``tasks/result`` waits for its task past ``MCP_REQUEST_TIMEOUT``). With
    ``watch_client``, ``None`` as soon as the client left (see
    :meth:`~flask_mcp.transport.sse.StreamReader.collect`).
    """
    ended = reader.collect(pending, run.deadline + GRACE, take, watch_client)
    while ended is False and time.monotonic() < run.deadline + GRACE:
        ended = reader.collect((), run.deadline + GRACE, take, watch_client)
    return ended


def _timeout(call: Call) -> dict[str, t.Any]:
    """The era's answer to a call that overran ``MCP_REQUEST_TIMEOUT``, noted on its run."""
    seconds = call.state.settings.request_timeout
    answer = protocol.timeout_answer(call.era, call.method, call.request_id, seconds)
    run = call.run
    if run is not None and run.timed_out is None:
        run.timed_out = answer
    return answer


# -- over HTTP ---------------------------------------------------------------------


def answer_response(answer: Answer, era: str) -> Response:
    """Return the HTTP response that is ``answer`` alone.

    No answer (a cancelled request) is an empty event stream in the handshake
    era, whose client sent the cancel on the session, and 204 at 2026-07-28.
    """
    if answer.message is not None:
        return json_response(answer.message, answer.status, answer.headers)
    if protocol.has_sessions(era):
        return Response(b"", mimetype="text/event-stream", headers=sse.HEADERS)
    return no_content()


def serve_http(
    dispatcher: Dispatcher,
    call: Call,
    *,
    context: ContextFactory | None = None,
    peer: t.Callable[[], t.Any] | None = None,
    where: str | None = None,
) -> Response:
    """Answer one request over HTTP, in either era.

    Methods that run no user code, and handlers that cannot emit (no
    ``Context`` parameter), run here: one JSON response. Others are spawned:
    the response is JSON when it comes first, else an event stream of what
    the handler sends, ending with the response.

    :param context: builds a spawned handler's ``Context`` from its run.
    :param peer: returns the client's connection, checked for a client that
        left while a 2026-07-28 request waits for its first message.
    :param where: what :meth:`~flask_mcp.server.dispatcher.Dispatcher.placement` said,
        when the caller asked already.
    :raises BackendUnavailable: the backend failed before the handler started (503).
    """
    where = dispatcher.placement(call) if where is None else where
    if where == EXECUTE:
        return answer_response(execute(dispatcher, call), call.era)
    if where == INLINE:
        return answer_response(run_inline(dispatcher, call), call.era)
    state = call.state
    settings = state.settings
    resumable = call.session is not None
    outbox: Outbox
    # A call that may stream holds a thread of a threaded server until it ends. With every
    # stream slot held (or its client's share of them) it still runs, on its own thread, and
    # answers with one buffered JSON response: its notifications are dropped (the spec allows
    # it when no stream is open), and a request to the client fails with an error that says
    # why.
    holder = state.slots.acquire(call.auth, call.client_address)  # None: no slot for it
    can_stream = holder is not None
    reader: sse.StreamReader | None = None
    try:
        if call.session is not None:
            outbox = StreamOutbox(
                state.backend, call.session.id, new_stream_id(), request_id=call.request_id
            )
        else:
            outbox = InProcessOutbox(new_stream_id())
        # The reader attaches before the handler starts: on threads a handler could write
        # first, and the stream's opening write would not attach the reader with it.
        reader = sse.StreamReader(
            outbox,
            after=0,
            with_ids=resumable,
            heartbeat=settings.sse_heartbeat,
            max_seconds=settings.sse_max_stream_seconds if resumable else None,
            retry_ms=settings.sse_retry_ms,
            sock=peer() if peer is not None else None,
        )
        round_trip = can_stream and resumable  # a stateless call asks with InputRequiredResult
        run = spawn(dispatcher, call, outbox, context=context, can_round_trip=round_trip)
    except BaseException:
        if reader is not None:  # no handler runs: nobody writes the stream
            with contextlib.suppress(BackendUnavailable):
                reader.close()
                outbox.drop()
        if holder is not None:
            state.slots.release(holder)
        raise
    try:
        if resumable:
            # A session's stream can start at once: after a heartbeat of silence it does.
            # Without a stream the wait holds a thread until the call ends: while the
            # client is there (see _buffered).
            wait = settings.sse_heartbeat if can_stream else settings.request_timeout + 1
            first = reader.first(wait, watch_client=not can_stream)
        else:
            first = reader.first(run.deadline + GRACE - time.monotonic(), watch_client=True)
    except BackendUnavailable:  # the handler runs: its answer is the client's, not a 503
        if holder is not None:
            state.slots.release(holder)
        return _kept_answer(call, run, reader)
    if first is None:  # the client left before anything was sent
        reader.close()
        if holder is not None:
            state.slots.release(holder)
        return _left(run, outbox)
    if first and first[0].kind == MESSAGE and is_response(first[0].message, call.request_id):
        reader.close()
        outbox.drop()
        if holder is not None:
            state.slots.release(holder)
        return _response_of(run, first[0].message)
    if not first and not resumable:  # the supervisor did not answer in time: answer here
        answer = _timeout(call)
        run.cancel()
        reader.close()
        outbox.drop()
        if holder is not None:
            state.slots.release(holder)
        return json_response(answer)
    if holder is None:
        return _buffered(call, run, reader, first)
    return _streamed(call, run, reader, first, holder)


def answer_of_run(run: RequestRun | None, message: dict[str, t.Any] | None) -> Answer:
    """Return the answer carrying a spawned run's ``message``, as its outbox delivered it.

    The handler's own :class:`Answer` (its status, headers and refusal) when the
    message is its; else a plain one: the supervisor's timeout error, or ``None``.
    """
    answer: Answer | None = None if run is None else run.result
    if answer is not None and answer.message == message:
        return answer
    return Answer(message)


def _kept_answer(call: Call, run: RequestRun, reader: sse.StreamReader) -> Response:
    """Wait for the run's answer in this process and return it as JSON: its stream could
    not be opened in the backend (unreachable), so no client could resume it.

    The handler has started (it may have done its work), so a 503 telling the client to
    send the call again could run it twice. The answer also goes to the stream, written
    once the backend is back (owed); the wait ends when the client leaves (see
    :func:`_left`) or past the run's deadline (its timeout answer).
    """
    with contextlib.suppress(BackendUnavailable):
        reader.close()
    task = run.task
    while task is not None and not task.join(sse.LIVENESS_INTERVAL):
        if sse.client_gone(reader.sock):
            return _left(run, t.cast(Outbox, reader.outbox))
        if time.monotonic() >= run.deadline + GRACE:  # a thread the supervisor cannot stop
            answer = _timeout(call)
            run.cancel()
            return json_response(answer)
    if run.timed_out is not None:
        return json_response(run.timed_out)
    return answer_response(run.result or Answer(None), call.era)


def _response_of(run: RequestRun, message: t.Any) -> Response:
    """Return the JSON response carrying ``message``, with the status its answer asks for."""
    answer = answer_of_run(run, message)
    return json_response(message, answer.status, answer.headers)


def _buffered(
    call: Call, run: RequestRun, reader: sse.StreamReader, pending: t.Sequence[t.Any]
) -> Response:
    """Wait for the run's response and return it as JSON, for a worker that cannot hold a stream.

    What the handler sends before its response (progress, log messages) is
    dropped, as the spec allows when no stream is open: memory stays bounded.
    The wait ends when the client leaves (see :func:`_left`).
    """
    final: list[dict[str, t.Any]] = []

    def take(message: dict[str, t.Any]) -> None:
        if is_response(message, call.request_id):
            final.append(message)

    outbox = t.cast(Outbox, reader.outbox)
    ended = _collect(reader, run, pending, take, watch_client=True)
    reader.close()
    if ended is None:
        return _left(run, outbox)
    with contextlib.suppress(BackendUnavailable):
        outbox.drop()
    if not ended:
        answer = _timeout(call)
        run.cancel()
        return json_response(answer)
    if not final:  # cancelled: no answer, as on a stream
        return answer_response(Answer(None), call.era)
    return _response_of(run, final[0])


def _left(run: RequestRun, outbox: Outbox) -> Response:
    """Return the response of a call answered whole whose client left while it waited.

    A 2026-07-28 call is cancelled, as closing its stream cancels it. A session's
    runs on, as one whose stream the client left does (a dropped connection is no
    cancellation): its stream is left, bounded as theirs (``MCP_SSE_RESUME_BYTES``),
    and the thread that waited for it is free.
    """
    if not outbox.resumable:
        run.cancel()
        outbox.drop()
    return Response(status=499)


def _streamed(
    call: Call,
    run: RequestRun,
    reader: sse.StreamReader,
    pending: t.Sequence[t.Any],
    holder: str,
) -> Response:
    """Stream the run's messages as the response; it holds a stream slot until it ends.

    :param holder: whom the slot counts against.
    """
    state = call.state
    outbox = t.cast(Outbox, reader.outbox)
    resumable = outbox.resumable
    opening = b""
    if resumable and protocol.sends_priming_event(call.version):
        opening = sse.priming(outbox.stream_id, 0, state.settings.sse_retry_ms)

    def on_close(reason: str) -> None:
        if not resumable and reason != "end":  # the client closed the stream: that cancels
            run.cancel()
        if reason == "end" or not resumable:
            with contextlib.suppress(BackendUnavailable):  # expires with its session
                outbox.drop()

    return sse.event_stream(
        state,
        reader,
        pending,
        kind="post",
        session_id=run.session_id,
        opening=opening,
        on_close=on_close,
        holder=holder,
    )


__all__ = [
    "Answer",
    "answer_of_run",
    "answer_response",
    "execute",
    "is_response",
    "outage_answer",
    "run_to_completion",
    "run_inline",
    "serve_http",
    "spawn",
]
