"""Running one request: in the view, or in a spawned task whose messages stream back."""

from __future__ import annotations

import contextlib
import logging
import time
import typing as t

from flask import Response
from flask import request
from werkzeug.wsgi import ClosingIterator

from . import _concurrency
from . import jsonrpc
from . import protocol
from . import signals
from . import sse
from .auth import AuthRefused
from .backends.base import MESSAGE
from .backends.base import SessionRecord
from .context import Context
from .context import SessionBackChannel
from .dispatcher import Call
from .environment import bind_to_request
from .errors import INTERNAL_ERROR
from .errors import BackendUnavailable
from .errors import MCPError
from .errors import MCPHTTPError
from .errors import RequestCancelled
from .responses import http_error as http_error
from .responses import json_response as json_response
from .session import InlineOutbox
from .session import RequestRun
from .session import StreamOutbox
from .session import new_stream_id

if t.TYPE_CHECKING:
    from .auth import AuthInfo
    from .dispatcher import Dispatcher
    from .state import AppState

logger = logging.getLogger("flask_mcp")


def is_response(message: t.Any, request_id: t.Any) -> bool:
    """Tell whether ``message`` is the final response to request ``request_id``."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    )


class RequestRunner:
    """Dispatches requests and turns their outboxes into HTTP responses."""

    dispatcher: Dispatcher

    # -- running requests --------------------------------------------------------

    def execute(
        self,
        state: AppState,
        record: SessionRecord | None,
        message: dict[str, t.Any],
        run: RequestRun | None,
        auth: AuthInfo | None = None,
        inline: bool = False,
    ) -> dict[str, t.Any]:
        """Dispatch one request and return its response message.

        :param run: the request's run; with it the handler gets a :class:`Context`,
            unless ``inline`` (a handler running in the view cannot emit).
        """
        method = message["method"]
        request_id = message["id"]
        params = message.get("params") or {}
        version = (
            record.protocol_version if record is not None else protocol.LATEST_HANDSHAKE_VERSION
        )
        call = Call(
            method, params, request_id, version, protocol.HANDSHAKE, record, state=state, auth=auth
        )
        if inline:
            call.run = run
        elif run is not None and record is not None:
            meta = params.get("_meta")
            call.ctx = Context(
                app=state.app,
                run=run,
                back_channel=SessionBackChannel(
                    state.backend, state.settings.client_request_timeout
                ),
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
            signals.request_started,
            state.app,
            method=method,
            request_id=request_id,
            session_id=session_id,
        )
        error = None
        try:
            response = jsonrpc.result(request_id, self.dispatcher.dispatch(call))
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
            text = self.dispatcher.internal_error(exc, method, state)
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
        self,
        state: AppState,
        record: SessionRecord,
        message: dict[str, t.Any],
        auth: AuthInfo | None,
    ) -> Response:
        method = message["method"]
        if method not in self.dispatcher.user_methods:
            return json_response(self.execute(state, record, message, None, auth))
        params = message.get("params") or {}
        if not self.dispatcher.may_emit(method, params):
            return self._inline(state, record, message, auth)
        settings = state.settings
        outbox = StreamOutbox(state.backend, record.id, new_stream_id())
        run = RequestRun(
            record.id, message["id"], method, outbox, time.monotonic() + settings.request_timeout
        )
        state.backend.touch_session(record.id, +1)  # first: it may raise BackendUnavailable
        can_stream = state.slots.acquire()
        run.can_round_trip = can_stream
        state.inflight.add(run)
        refused: list[MCPHTTPError] = []
        # The handler runs in a copy of this view's request context, g carried over.
        handle = bind_to_request(state.app, lambda: self.execute(state, record, message, run, auth))

        def work() -> None:
            response = None
            try:
                response = handle()
            except RequestCancelled:
                response = None
            except MCPHTTPError as exc:  # an auth refusal: the view answers with its status
                refused.append(exc)
                response = jsonrpc.error(
                    message["id"], {"code": exc.rpc_code, "message": exc.description}
                )
            except BackendUnavailable as exc:
                logger.warning("Request %r failed: %s", method, exc)
                text = "Service Unavailable: the session store is unreachable; retry later."
                response = jsonrpc.error(message["id"], {"code": INTERNAL_ERROR, "message": text})
            except Exception:
                logger.exception("Request %r failed outside its handler", method)
                response = jsonrpc.error(
                    message["id"], {"code": INTERNAL_ERROR, "message": "Internal error."}
                )
            finally:
                if run.cancelled.is_set():
                    response = None
                try:
                    outbox.finish(response)
                except BackendUnavailable as exc:
                    logger.warning("Lost the response to %r: %s", method, exc)
                state.inflight.remove(run)
                with contextlib.suppress(BackendUnavailable):  # settled when it is back
                    state.backend.touch_session(record.id, -1)

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
        if first.events and is_response(first.events[0].message, message["id"]):
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
        self,
        state: AppState,
        record: SessionRecord,
        message: dict[str, t.Any],
        auth: AuthInfo | None,
    ) -> Response:
        """Run a handler that cannot emit in the view's own greenlet or thread.

        No spawn and no stream. On gevent a cancelled or overdue handler is
        interrupted; a thread cannot be, so there an overdue handler's answer
        is the timeout error, sent when the handler returns.
        """
        outbox = InlineOutbox()
        deadline = time.monotonic() + state.settings.request_timeout
        run = RequestRun(record.id, message["id"], message["method"], outbox, deadline)
        task = run.task = _concurrency.current_task()
        # A backend of this process only sees the run in state.inflight (the
        # supervisor keeps its session); a shared one counts it for every worker.
        shared = state.backend.multiprocess
        if shared:
            state.backend.touch_session(record.id, +1)
        state.inflight.add(run)
        response = None
        try:
            response = self.execute(state, record, message, run, auth, inline=True)
        except RequestCancelled:
            pass
        finally:
            task.disarm()
            state.inflight.remove(run)
            if shared:
                state.backend.touch_session(record.id, -1)
        if not outbox.finish(response):
            response = outbox.final  # a timeout's error, or nothing after a cancel
        _concurrency.let_others_run()
        if response is None:
            return Response(b"", mimetype="text/event-stream", headers=sse.HEADERS)
        return json_response(response)

    def _buffered_sse(
        self, state: AppState, reader: sse.StreamReader, pending: t.Any, outbox: t.Any
    ) -> Response:
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
        """Stream ``reader`` as the response; holds one of ``state.slots`` until it ends.

        The slot is given back whichever way the stream ends: its end, a server-side
        close, a failed write, or a client that left without a word (seen within
        :data:`sse.LIVENESS_INTERVAL` on servers that expose the connection's socket).
        """
        settings = state.settings
        stream_id = outbox.stream_id
        prime = protocol.sends_priming_event(record.protocol_version)
        reader.sock = _concurrency.client_socket(request.environ)
        closed = [False]
        signals.send(
            signals.stream_opened, state.app, session_id=record.id, stream_id=stream_id, kind=kind
        )

        def cleanup() -> None:
            if closed[0]:
                return
            closed[0] = True
            reader.close()
            state.slots.release(general=kind == "get")
            if reader.reason == "end" and on_end_drop:
                with contextlib.suppress(BackendUnavailable):  # expires with its session
                    outbox.drop()
            signals.send(
                signals.stream_closed,
                state.app,
                session_id=record.id,
                stream_id=stream_id,
                kind=kind,
                reason=reader.reason,
            )

        def generate() -> t.Iterator[bytes]:
            try:
                if prime:
                    yield sse.priming(sse.event_id(stream_id, priming_seq), settings.sse_retry_ms)
                yield from reader.iterate(pending)
            except (
                BackendUnavailable
            ) as exc:  # too late for a 503: end the stream, the client resumes
                reader.reason = "backend-unavailable"
                logger.warning("Closed an SSE stream: %s", exc)
            finally:
                cleanup()

        # ClosingIterator: a server that closes the response before reading it
        # (the generator never started, so its finally never runs) frees the slot too.
        return Response(
            ClosingIterator(generate(), [cleanup]),
            mimetype="text/event-stream",
            headers=sse.HEADERS,
            direct_passthrough=True,
        )
