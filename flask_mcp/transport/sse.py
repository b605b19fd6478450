"""Server-Sent Events: framing, and the one stream loop behind every SSE response.

:class:`StreamReader` turns a source of events into SSE bytes; it serves the
POST streams of both eras, the GET streams and resumes of sessions, and the
``subscriptions/listen`` streams. :func:`event_stream` makes the HTTP response
of a reader: the stream slot it holds, the signals, and the clean-up however
the stream ends (its end, a server-side close, a failed write, a client that
left without a word, seen within :data:`LIVENESS_INTERVAL` on servers that show
the connection, or a gunicorn worker that stops).
"""

from __future__ import annotations

import _socket
import itertools
import logging
import math
import secrets
import select
import socket
import time
import typing as t

from flask import Response
from werkzeug.wsgi import ClosingIterator

from .. import signals
from ..backends.base import DISCONNECT
from ..backends.base import END
from ..backends.base import MESSAGE
from ..errors import BackendUnavailable
from ..protocol import jsonrpc
from ..runtime.concurrency import PeerSocket
from ..runtime.concurrency import gevent_active
from ..runtime.concurrency import killed
from ..runtime.concurrency import worker_grace
from ..wakeup import ClientReadable
from ..wakeup import ClientWatch
from ..wakeup import can_watch_clients
from ..wakeup import unwatch_client
from ..wakeup import watch_client

if t.TYPE_CHECKING:
    from ..backends.base import Event
    from ..backends.base import ReadResult
    from ..runtime.state import AppState

logger = logging.getLogger("flask_mcp")

HEADERS = {
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
}
HEARTBEAT = b": ping\n\n"
#: Seconds between checks that the client is still connected, on an idle stream (under
#: gevent, a stream whose reads' waits watch the client's socket needs no such checks).
LIVENESS_INTERVAL = 1.0
#: The least ``retry`` hint (milliseconds) on a GET answered without a stream, so a
#: client that polls for a free stream cannot keep a worker busy. It keeps clear of
#: gunicorn's default keep-alive (2 s; a gthread worker closes an idle connection up to
#: a second later): a client back after exactly that long sends its requests on
#: connections the server is closing, and gets "connection reset".
BUSY_RETRY_MS = 1500
#: The ``stream_closed`` reason of a stream whose session ended (its DELETE, the reaper).
SESSION_ENDED = "session-ended"
#: The least ``retry`` hint (milliseconds) sent before ending a stream because the backend
#: has been unreachable past the readers' grace (2 s): a failover takes a few seconds
#: (Sentinel's ``down-after-milliseconds`` or a cluster's node timeout, then the election),
#: a client resuming sooner meets the outage's 503, and the official clients give up a
#: stream after two failed resumes. Above gunicorn's keep-alive (see
#: :data:`BUSY_RETRY_MS`), a connection it closed meanwhile is long closed.
OUTAGE_RETRY_MS = 5000


def event_id(stream_id: str, seq: int) -> str:
    """Return the SSE event id of event ``seq`` of stream ``stream_id``."""
    return f"{stream_id}-{seq}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    """Split an event id (a priming event's too) into stream id and sequence number;
    ``None`` if malformed."""
    position, _, tag = value.strip().partition(".")
    stream_id, sep, seq = position.rpartition("-")
    if not sep or not stream_id or not seq.isdigit() or len(value) > 200:
        return None
    if tag and not (tag.isascii() and tag.isalnum()):
        return None
    return stream_id, int(seq)


def frame(message: dict[str, t.Any], ident: str | None = None) -> bytes:
    """Encode one message as an SSE event."""
    head = f"id: {ident}\nevent: message\ndata: " if ident is not None else "event: message\ndata: "
    return head.encode() + jsonrpc.dumps_bytes(message) + b"\n\n"


def priming(stream_id: str, seq: int, retry_ms: int) -> bytes:
    """Return a priming event: an id to resume after event ``seq``, a retry hint, empty data.

    Its id is that position with a random tag (``g-4.9f2c...``), which
    :func:`parse_event_id` reads as the position: event ids must be unique across the
    session's streams, and a stream is primed again each time it is opened or
    resumed from the same position, so the position alone would repeat an id the
    client already got.
    """
    ident = f"{event_id(stream_id, seq)}.{secrets.token_hex(8)}"
    return f"id: {ident}\nretry: {retry_ms}\ndata: \n\n".encode()


def retry(retry_ms: int) -> bytes:
    """Return a bare ``retry`` field, sent before the server closes a connection."""
    return f"retry: {retry_ms}\n\n".encode()


#: The descriptors select() can watch are below this (FD_SETSIZE).
_SELECT_LIMIT = 1024
#: Peek without blocking where the platform can say so (not on Windows).
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


def _raw(sock: t.Any) -> _socket.socket | None:
    """Return the non-blocking socket a gevent socket wraps (``None``: not one)."""
    raw = getattr(sock, "_sock", None)
    return raw if isinstance(raw, _socket.socket) else None


def client_gone(sock: t.Any) -> bool:
    """Tell whether the peer closed the connection (a readable socket with no data)."""
    if sock is None:
        return False
    try:
        raw = _raw(sock)
        if raw is not None:
            # gevent's socket wraps a non-blocking one: peek at it without waiting, one
            # system call (a worker with 10,000 streams checks 10,000 a second).
            try:
                return bool(raw.recv(1, socket.MSG_PEEK | _DONTWAIT) == b"")
            except (BlockingIOError, InterruptedError):
                return False
        fd = sock.fileno()
        if fd >= _SELECT_LIMIT and hasattr(socket, "MSG_DONTWAIT"):
            # select() takes no descriptor past 1023, and a worker holding a thousand
            # streams has such: peek without waiting instead.
            return bool(PeerSocket(fd).recv(1, socket.MSG_PEEK) == b"")
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return bool(sock.recv(1, socket.MSG_PEEK) == b"")
    except (OSError, ValueError):
        return True


class Source(t.Protocol):
    """What a :class:`StreamReader` reads: an outbox, or a listen stream's subscription."""

    @property
    def stream_id(self) -> str: ...

    def attach(self) -> int: ...

    def detach(self, token: int) -> None: ...

    def read(self, after: int, token: int, timeout: float) -> ReadResult: ...


class StreamReader:
    """Turns an outbox into SSE bytes until the stream ends or the connection must close.

    :param outbox: the stream to read.
    :param after: the last sequence number the client already has.
    :param with_ids: attach event ids (resumable streams only).
    :param heartbeat: seconds of silence before a keep-alive comment.
    :param max_seconds: close the connection after this long (the stream goes on).
    :param retry_ms: the ``retry`` hint sent before a server-side close.
    :param stop_at_end: end at the stream's END (a GET stream outlives its requests).
    :param on_delivered: called with each delivered sequence number.
    :param sock: the client's socket (:func:`flask_mcp.runtime.concurrency.client_socket`):
        while the stream is idle it is checked every :data:`LIVENESS_INTERVAL` seconds, so a
        client that left without a word frees its stream at once instead of at the next
        failed write. On threads, those checks also look whether the stream's gunicorn
        worker stops: a stream its client takes up again (``with_ids``, or ``closing``)
        ends as the worker's graceful timeout runs out (see :meth:`end`).
    :param closing: what to send when ``max_seconds`` close the connection (default: a
        ``retry`` hint, for a client that resumes).
    """

    def __init__(
        self,
        outbox: Source,
        *,
        after: int,
        with_ids: bool,
        heartbeat: float,
        retry_ms: int,
        max_seconds: float | None = None,
        stop_at_end: bool = True,
        on_delivered: t.Callable[[int], None] | None = None,
        sock: t.Any = None,
        closing: bytes | None = None,
    ) -> None:
        self.outbox = outbox
        self.after = after
        self.with_ids = with_ids
        self.heartbeat = heartbeat
        self.max_seconds = max_seconds
        self.retry_ms = retry_ms
        self.stop_at_end = stop_at_end
        self.on_delivered = on_delivered
        self.sock = sock
        self.closing = closing
        self.token = outbox.attach()
        self._watch: ClientWatch | None = None
        #: When the stream ends because its worker stops (``time.monotonic()``), once seen.
        self._ends_at: float | None = None
        #: Why the iteration ended: "end", "disconnect", "superseded", "missing", "timeout",
        #: "shutdown", "client-gone" (see :data:`~flask_mcp.signals.stream_closed`;
        #: :func:`event_stream` sets "backend-unavailable", and "shutdown" too).
        self.reason = "client-gone"

    def end(self, reason: str) -> bytes:
        """Return the last chunk of a stream the server ends, and take ``reason`` as its reason.

        A time bound (``"timeout"``) and a stopping server (``"shutdown"``) end a stream
        alike: a ``subscriptions/listen`` with its result (:attr:`closing`), another
        stream with a ``retry`` hint, for its client to resume.
        """
        self.reason = reason
        return self.closing if self.closing is not None else retry(self.retry_ms)

    def _stopping(self, now: float) -> float | None:
        """Return when the stream ends because its worker stops (``None``: it does not stop).

        A gunicorn worker told to stop gives its connections ``--graceful-timeout``
        seconds, which a stream sees at its next liveness check, up to
        :data:`LIVENESS_INTERVAL` late: it ends that much before, so that it has ended
        when the worker gives up on it (a gthread worker's process would wait at exit
        for its thread, the client's connection left open).
        """
        grace = worker_grace()
        return None if grace is None else now + max(0.0, grace - 2 * LIVENESS_INTERVAL)

    def iterate(self, pending: t.Sequence[t.Any] = ()) -> t.Iterator[bytes]:
        """Yield SSE chunks; ``pending`` are events read before the response started."""
        opened = last_write = time.monotonic()
        # When to look whether the worker stops, for a stream its client takes up again
        # (it resumes it, or listens anew): a request's stream that cannot be resumed
        # ends with its answer. A gevent worker that stops kills the stream's greenlet
        # instead (see event_stream).
        stops = (self.with_ids or self.closing is not None) and not gevent_active()
        next_check = opened + LIVENESS_INTERVAL if stops else math.inf
        events: t.Sequence[t.Any] = pending
        # Under gevent the reads' waits may watch the client's socket (see _read):
        # then an idle stream waits until its heartbeat, not one liveness interval.
        watch = self.sock is not None and can_watch_clients() and _raw(self.sock) is not None
        watched = False
        while True:
            for event in events:
                self.after = max(self.after, event.seq)
                if event.kind == MESSAGE and event.message is not None:
                    ident = event_id(self.outbox.stream_id, event.seq) if self.with_ids else None
                    yield frame(event.message, ident)
                    if self.on_delivered is not None:
                        self.on_delivered(event.seq)
                elif event.kind == END and self.stop_at_end:
                    self.reason = "end"
                    return
                elif event.kind == DISCONNECT:
                    self.reason = "disconnect"
                    if self.with_ids:
                        # Give the close an id, so a resume starts after it
                        # instead of reading this DISCONNECT again.
                        yield priming(self.outbox.stream_id, event.seq, self.retry_ms)
                    else:
                        yield retry(self.retry_ms)
                    return
            now = time.monotonic()
            if events:
                last_write = now
            elif now - last_write >= self.heartbeat:
                yield HEARTBEAT
                last_write = now
            elif client_gone(self.sock):  # idle: one select() per LIVENESS_INTERVAL
                self.reason = "client-gone"
                return
            wait = self.heartbeat - (now - last_write)
            if self.max_seconds is not None:
                left = self.max_seconds - (now - opened)
                if left <= 0:
                    yield self.end("timeout")
                    return
                wait = min(wait, left)
            if self.sock is not None and not watched:
                if self._ends_at is None and now >= next_check:  # one check per interval
                    next_check = now + LIVENESS_INTERVAL
                    self._ends_at = self._stopping(now)
                wait = min(wait, LIVENESS_INTERVAL)
            if self._ends_at is not None:
                left = self._ends_at - now
                if left <= 0:
                    yield self.end("shutdown")
                    return
                wait = min(wait, left)
            # What was delivered is let go before the wait: with thousands of streams
            # waiting, it would fill the collector's oldest generation.
            events = found = None  # type: ignore[assignment]
            try:
                found, watched = self._read(wait, watch)
            except ClientReadable:  # while the read waited
                if client_gone(self.sock):
                    self.reason = "client-gone"
                    return
                watch = watched = False  # it sent data: check every second from now on
                events = []
                continue
            if found.superseded or found.missing:
                self.reason = "superseded" if found.superseded else "missing"
                return
            events = found.events

    def _read(self, wait: float, watch: bool) -> tuple[ReadResult, bool]:
        """Read for up to ``wait`` seconds; with ``watch``, while watching the client's socket.

        Returns the result and whether the backend's wait watched the socket
        (:func:`~flask_mcp.wakeup.watch_client`): a client that leaves
        then ends the read at once, and the next read need not be short.

        :raises ClientReadable: the client's socket became readable meanwhile.
        """
        if not watch:
            return self.outbox.read(self.after, self.token, wait), False
        if self._watch is None:  # one per stream: its reads share the event-loop watcher
            self._watch = ClientWatch(t.cast(_socket.socket, _raw(self.sock)).fileno())
        watching = watch_client(self._watch)
        try:
            found = self.outbox.read(self.after, self.token, wait)
        finally:
            unwatch_client()
        return found, watching.armed

    def first(self, wait: float, watch_client: bool = False) -> list[Event] | None:
        """Wait up to ``wait`` seconds for the first events (``[]`` when none came).

        With ``watch_client`` the client's connection is checked every
        :data:`LIVENESS_INTERVAL` seconds meanwhile: ``None`` when it left.
        """
        deadline = time.monotonic() + wait
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            step = min(LIVENESS_INTERVAL, remaining) if watch_client else remaining
            events = self.outbox.read(self.after, self.token, step).events
            if events:
                return events
            if watch_client and client_gone(self.sock):
                return None

    def collect(
        self,
        pending: t.Iterable[Event],
        until: float,
        emit: t.Callable[[dict[str, t.Any]], None],
        watch_client: bool = False,
    ) -> bool | None:
        """Hand each message to ``emit`` until the stream ends; ``False`` if ``until`` came first.

        For a response that cannot be streamed (it is sent whole) and for
        callers without HTTP. ``pending`` are events read already.

        With ``watch_client`` the client's connection is checked every
        :data:`LIVENESS_INTERVAL` seconds meanwhile: ``None`` when it left.
        """
        events: t.Iterable[Event] = pending
        while True:
            for event in events:
                self.after = max(self.after, event.seq)
                if event.kind != MESSAGE:
                    return True
                if event.message is not None:
                    emit(event.message)
            remaining = until - time.monotonic()
            if remaining <= 0:
                return False
            found = self.outbox.read(self.after, self.token, min(LIVENESS_INTERVAL, remaining))
            if found.missing or found.superseded:
                return True
            events = found.events
            if not events and watch_client and client_gone(self.sock):
                return None

    def close(self) -> None:
        """Give up the stream so another connection may read it."""
        if self._watch is not None:
            self._watch.close()
        self.outbox.detach(self.token)


#: The reasons a reader gives for a stream it can no longer read: another reader took it,
#: or it is gone. Either may be the end of the stream's session.
_TAKEN_AWAY = frozenset({"superseded", "missing"})


def _why_taken_away(state: AppState, session_id: str, reason: str) -> str:
    """Return ``"session-ended"`` when the session of a stream taken away no longer exists.

    Ending a session (the client's DELETE, the idle reaper) wakes its readers, which
    then see their stream taken over or gone; only the session's absence tells it.
    """
    try:
        ended = state.backend.get_session(session_id) is None
    except BackendUnavailable:  # not known: the reader's own reason
        return reason
    return SESSION_ENDED if ended else reason


def event_stream(
    state: AppState,
    reader: StreamReader,
    pending: t.Sequence[Event] = (),
    *,
    kind: str,
    session_id: str | None,
    opening: bytes = b"",
    on_close: t.Callable[[str], None] | None = None,
    general: bool = False,
    holder: str = "",
) -> Response:
    """Return the streaming response of ``reader``, which holds one of ``state.slots``.

    The slot is given back whichever way the stream ends: its end, a
    server-side close, a failed write, or a client that left without a word.
    ``on_close`` is called then with the reader's reason;
    :data:`~flask_mcp.signals.stream_opened` and ``stream_closed`` are sent.

    :param pending: events read before the response started.
    :param kind: ``"post"``, ``"get"``, ``"resume"`` or ``"listen"``.
    :param opening: bytes sent first (a priming event, a listen acknowledgement).
    :param general: the slot is a GET stream's.
    :param holder: whom the slot counts against (what
        :meth:`~flask_mcp.runtime.runs.StreamSlots.acquire` returned).
    """
    stream_id = reader.outbox.stream_id
    closed = [False]
    signals.send(
        signals.stream_opened, state.app, session_id=session_id, stream_id=stream_id, kind=kind
    )

    def cleanup() -> None:
        if closed[0]:
            return
        closed[0] = True
        reader.close()
        state.slots.release(holder, general=general)
        if reader.reason in _TAKEN_AWAY and session_id is not None:
            reader.reason = _why_taken_away(state, session_id, reader.reason)
        if on_close is not None:
            on_close(reader.reason)
        signals.send(
            signals.stream_closed,
            state.app,
            session_id=session_id,
            stream_id=stream_id,
            kind=kind,
            reason=reader.reason,
        )

    # The server writes each chunk with no timeout: the supervisor ends a connection whose
    # write waits past MCP_WRITE_TIMEOUT (a client that reads nothing).
    write = state.writes.open(reader.sock)

    def generate() -> t.Iterator[bytes]:
        try:
            chunks = reader.iterate(pending)
            if opening:
                chunks = itertools.chain((opening,), chunks)
            yield from chunks if write is None else write.timed(chunks)
        except BackendUnavailable as exc:  # too late for a 503: end it, the client resumes
            reader.reason = "backend-unavailable"
            logger.warning("Closed an SSE stream: %s", exc)
            hint = (retry(max(reader.retry_ms, OUTAGE_RETRY_MS)),)  # when to resume
            yield from hint if write is None else write.timed(hint)
        except BaseException as exc:
            if not killed(exc):
                raise
            # The server stops and kills its connections' greenlets: end the stream
            # as its time bound does (a listen's result, else a retry hint).
            last = (reader.end("shutdown"),)
            yield from last if write is None else write.timed(last)
        finally:
            if write is not None:  # the server's last write (the body's end) follows
                write.since = time.monotonic()
            cleanup()

    # ClosingIterator: a server that closes the response before reading it (the
    # generator never started, so its finally never runs) frees the slot too.
    return Response(
        ClosingIterator(generate(), [cleanup, lambda: state.writes.close(write)]),
        mimetype="text/event-stream",
        headers=HEADERS,
        direct_passthrough=True,
    )


__all__ = [
    "BUSY_RETRY_MS",
    "HEADERS",
    "HEARTBEAT",
    "LIVENESS_INTERVAL",
    "OUTAGE_RETRY_MS",
    "SESSION_ENDED",
    "Source",
    "StreamReader",
    "client_gone",
    "event_id",
    "event_stream",
    "frame",
    "parse_event_id",
    "priming",
    "retry",
]
