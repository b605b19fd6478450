"""Runs of requests, their outboxes, and the process-local table of what is running.

A :class:`RequestRun` is one JSON-RPC request being handled. Everything its
handler sends before the response (progress, log messages, server-to-client
requests) and the response itself go through the run's outbox: on a session
the outbox is a resumable stream in the backend; without a session (the
stateless revision) it is a small in-process buffer.
"""

from __future__ import annotations

import _socket
import collections
import contextlib
import logging
import math
import secrets
import socket
import threading
import time
import typing as t

from .. import protocol
from ..auth.info import AuthInfo
from ..auth.info import client_of
from ..backends.base import DISCONNECT
from ..backends.base import END
from ..backends.base import MESSAGE
from ..backends.base import Backend
from ..backends.base import Event
from ..backends.base import ReadResult
from ..backends.base import new_write_id
from ..errors import BackendUnavailable
from . import concurrency as _concurrency
from .settle import OWED

logger = logging.getLogger("flask_mcp")


def new_session_id() -> str:
    """Return a cryptographically random session id of visible ASCII."""
    return secrets.token_urlsafe(24)


def new_stream_id() -> str:
    """Return a stream id, unique within a session with overwhelming probability."""
    return secrets.token_hex(6)


class Outbox(t.Protocol):
    """Where a run's messages go, and where the HTTP response reads them."""

    resumable: bool
    stream_id: str

    def emit(self, message: dict[str, t.Any]) -> None: ...

    def finish(self, message: dict[str, t.Any] | None) -> bool: ...

    def disconnect(self) -> None: ...

    def attach(self) -> int: ...

    def detach(self, token: int) -> None: ...

    def read(self, after: int, token: int, timeout: float) -> ReadResult: ...

    def drop(self) -> None: ...


class StreamOutbox:
    """An outbox backed by a session stream in the backend (resumable).

    Its response and end are never lost: when the backend cannot take them,
    :meth:`finish` keeps them in :data:`~flask_mcp.runtime.settle.OWED` and
    the supervisor writes them once the backend answers again.

    :param request_id: the request the stream answers (``None`` for a GET stream).
    :param opens: open the stream in the backend. A resume reads a stream that exists
        (or ended and was forgotten: its reader then finds it missing), and opens nothing.
    """

    resumable = True

    def __init__(
        self,
        backend: Backend,
        session_id: str,
        stream_id: str,
        *,
        request_id: t.Any = None,
        opens: bool = True,
    ) -> None:
        self.backend = backend
        self.session_id = session_id
        self.stream_id = stream_id
        self._finished = False
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        #: What :meth:`finish` writes: kind, message and the write's id, kept with it so
        #: that a write re-sent after an unknown outcome is not appended twice.
        self._owed: list[tuple[str, dict[str, t.Any] | None, str]] = []
        if opens:
            backend.open_stream(session_id, stream_id, request_id=request_id)

    @property
    def finished(self) -> bool:
        """Whether the stream got its response or end (written or owed)."""
        return self._finished

    def emit(self, message: dict[str, t.Any]) -> None:
        if not self._finished:
            self.backend.append(self.session_id, self.stream_id, MESSAGE, message)

    def finish(self, message: dict[str, t.Any] | None) -> bool:
        """End the stream with ``message``; what the backend cannot take now is owed."""
        with self._lock:
            if self._finished:
                return False
            self._finished = True
            if message is not None:
                self._owed.append((MESSAGE, message, new_write_id()))
            self._owed.append((END, None, new_write_id()))
        try:
            self.settle()
        except BackendUnavailable as exc:
            logger.warning(
                "The session store is unavailable (%s); the answer on stream %s is kept and "
                "written when it returns.",
                exc,
                self.stream_id,
            )
            OWED.add(self)
        return True

    def settle(self) -> bool:
        """Write what :meth:`finish` could not; tell whether nothing is owed any more.

        :raises BackendUnavailable: the backend is still unreachable.
        """
        with self._write_lock:
            if self._owed:  # the answer and the end together: one round trip
                # The same ids each time: a write that reached the backend though it failed
                # (its reply lost with the connection) is not appended again.
                events = [(self.session_id, self.stream_id, k, m) for k, m, _ in self._owed]
                self.backend.append_many(events, write_ids=[w for *_, w in self._owed])
                self._owed.clear()
        return True

    def disconnect(self) -> None:
        if not self._finished:
            self.backend.append(self.session_id, self.stream_id, DISCONNECT)

    def attach(self) -> int:
        return self.backend.attach(self.session_id, self.stream_id)

    def detach(self, token: int) -> None:
        self.backend.detach(self.session_id, self.stream_id, token)

    def read(self, after: int, token: int, timeout: float) -> ReadResult:
        return self.backend.read(self.session_id, self.stream_id, after, token, timeout)

    def drop(self) -> None:
        self.backend.drop_stream(self.session_id, self.stream_id)


class InProcessOutbox:
    """An in-process outbox for requests without a session (not resumable)."""

    resumable = False

    def __init__(self, stream_id: str = "") -> None:
        self.stream_id = stream_id
        self._events: collections.deque[Event] = collections.deque()
        self._seq = 0
        self._finished = False
        self._cond = threading.Condition()

    def _append(self, kind: str, message: dict[str, t.Any] | None = None) -> None:
        with self._cond:
            self._seq += 1
            self._events.append(Event(self._seq, kind, message))
            self._cond.notify_all()

    def emit(self, message: dict[str, t.Any]) -> None:
        if not self._finished:
            self._append(MESSAGE, message)

    def finish(self, message: dict[str, t.Any] | None) -> bool:
        with self._cond:
            if self._finished:
                return False
            self._finished = True
        if message is not None:
            self._append(MESSAGE, message)
        self._append(END)
        return True

    def disconnect(self) -> None:
        """Stateless streams cannot be resumed, so the connection stays open."""

    def attach(self) -> int:
        return 1

    def detach(self, token: int) -> None:
        return None

    def read(self, after: int, token: int, timeout: float) -> ReadResult:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._seq <= after:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ReadResult([])
                self._cond.wait(remaining)
            events = [e for e in self._events if e.seq > after]
            while self._events and self._events[0].seq <= after:
                self._events.popleft()
            return ReadResult(events)

    def drop(self) -> None:
        self._events.clear()


class InlineOutbox:
    """The outbox of a handler that runs in the view and cannot emit before its result.

    It only records which response wins: the handler's, a timeout's, or none
    after a cancellation.
    """

    __slots__ = ("finished", "final")

    resumable = False
    stream_id = ""

    def __init__(self) -> None:
        self.finished = False
        self.final: dict[str, t.Any] | None = None

    def emit(self, message: dict[str, t.Any]) -> None:
        return None

    def finish(self, message: dict[str, t.Any] | None) -> bool:
        if self.finished:
            return False
        self.finished = True
        self.final = message
        return True

    def disconnect(self) -> None:
        return None

    def attach(self) -> int:
        return 0

    def detach(self, token: int) -> None:
        return None

    def read(self, after: int, token: int, timeout: float) -> ReadResult:
        return ReadResult([])

    def drop(self) -> None:
        return None


class CancelFlag:
    """Whether a run was cancelled: the ``set``/``is_set`` half of :class:`threading.Event`.

    Nothing waits on a run's cancellation (the handler polls it, the runner and
    the supervisor set it), and a gevent ``Event``, built for every run, cost
    more than the rest of the run's record under a server's load.
    Setting and reading one attribute is atomic under the GIL, for threads too.
    """

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        """Mark the run cancelled."""
        self._set = True

    def is_set(self) -> bool:
        """Tell whether the run was cancelled."""
        return self._set


class RequestRun:
    """One JSON-RPC request being handled."""

    __slots__ = (
        "session_id",
        "request_id",
        "method",
        "outbox",
        "cancelled",
        "task",
        "deadline",
        "can_round_trip",
        "started",
        "key",
        "era",
        "result",
        "timed_out",
    )

    def __init__(
        self,
        session_id: str | None,
        request_id: t.Any,
        method: str,
        outbox: Outbox,
        deadline: float,
        era: str = protocol.HANDSHAKE,
        started: float | None = None,
    ) -> None:
        self.session_id = session_id
        self.request_id = request_id
        self.method = method
        self.outbox = outbox
        self.cancelled = CancelFlag()
        self.task: (
            _concurrency.Task | _concurrency.CurrentGreenlet | _concurrency.CurrentThread | None
        ) = None
        self.deadline = deadline
        self.can_round_trip = True
        #: When the run started (``time.monotonic()``); the caller may pass it, read already.
        self.started = time.monotonic() if started is None else started
        #: The run's key in :class:`InFlight`; a stateless run gets a unique one, as
        #: request ids of different clients may collide.
        self.key: tuple[str | None, t.Any] = (session_id, request_id)
        #: The protocol era of the request, which decides its timeout answer.
        self.era = era
        #: What the runner recorded when the handler ended (its answer), if it did.
        self.result: t.Any = None
        #: The response the supervisor sent when the run overran ``MCP_REQUEST_TIMEOUT``
        #: (the handler's own answer, if it comes, is dropped), else ``None``.
        self.timed_out: dict[str, t.Any] | None = None

    def cancel(self) -> None:
        """Flag the run as cancelled, interrupt its handler and end its stream silently."""
        self.cancelled.set()
        self.outbox.finish(None)
        if self.task is not None:
            self.task.kill()


class InFlight:
    """The process-local table of running requests, for cancellation and timeouts.

    Its lock is the operating system's even under gevent's patching: nothing
    waits while holding it (each method only reads or changes the table), so
    it never has to yield to other greenlets, and it costs a tenth of gevent's.
    """

    def __init__(self) -> None:
        self._runs: dict[tuple[str | None, t.Any], RequestRun] = {}
        self._lock = _concurrency.native_lock()

    def add(self, run: RequestRun) -> None:
        """Add a run; one whose key another run holds gets a key of its own.

        A reused request id of a session is refused before it runs, but two requests
        racing with one id may both get here: neither may drop out of the table, which
        times runs out and ends them with their session.
        """
        with self._lock:
            if self._runs.get(run.key, run) is not run:
                run.key = (run.session_id, object())
            self._runs[run.key] = run

    def remove(self, run: RequestRun) -> None:
        with self._lock:
            if self._runs.get(run.key) is run:
                del self._runs[run.key]

    def get(self, session_id: str | None, request_id: t.Any) -> RequestRun | None:
        return self._runs.get((session_id, request_id))

    def all(self) -> list[RequestRun]:
        """Return every run of this process."""
        with self._lock:
            return list(self._runs.values())

    def overdue(self, now: float) -> list[RequestRun]:
        """Return the runs whose deadline has passed."""
        with self._lock:
            return [run for run in self._runs.values() if run.deadline <= now]

    def session_ids(self) -> set[str]:
        """Return the ids of the sessions that have a request running here."""
        with self._lock:
            return {run.session_id for run in self._runs.values() if run.session_id is not None}

    def of_session(self, session_id: str) -> list[RequestRun]:
        """Return the runs of one session."""
        with self._lock:
            return [run for run in self._runs.values() if run.session_id == session_id]

    def __len__(self) -> int:
        return len(self._runs)


class StreamSlots:
    """Counts SSE responses held open, so a thread-bound server refuses instead of hanging.

    GET streams may hold only half of the slots: they stay open for a session's
    whole life, and a client that never closes its sessions would otherwise
    starve the request streams that sampling and elicitation need.

    One client (:func:`~flask_mcp.auth.info.client_of`) may hold only ``share`` of
    the slots, rounded up and never fewer than :attr:`MIN_PER_CLIENT`, and ``share``
    of the GET streams' half, rounded up: a client that opens session after session,
    each with its GET stream, would otherwise take every slot, and every other
    client's GET would be told to come back later for ever.

    :param limit: the most slots (``None``: no limit, nothing counted per client).
    :param share: the share of them one client may hold (1: no share).
    """

    #: What :meth:`acquire` returns for a slot counted against no client (no limit).
    UNCOUNTED: t.ClassVar[str] = ""
    #: The fewest slots a client may hold: its GET stream and two streamed calls, so that
    #: a lone client of a worker with 3 slots (``--threads 4``, whose one GET stream slot
    #: a share cannot split) loses none of them.
    MIN_PER_CLIENT: t.ClassVar[int] = 3

    def __init__(self, limit: int | None, share: float = 1.0) -> None:
        self.share = share
        self.open = 0
        self.open_general = 0
        #: The slots (and GET stream slots) each client holds; a client holding none has
        #: no entry, so the tables hold only the clients with a stream open.
        self.held: dict[str, int] = {}
        self.held_general: dict[str, int] = {}
        #: The most slots, and GET stream slots, one client may hold (``None``: no limit).
        self.per_client: int | None = None
        self.general_per_client: int | None = None
        #: How many GET streams may be open at once (``None``: no limit).
        self.general_limit: int | None = None
        self._limit: int | None = None
        self._lock = _concurrency.native_lock()  # nothing waits while holding it
        self.limit = limit

    @property
    def limit(self) -> int | None:
        """The most slots open at once (``None``: no limit)."""
        return self._limit

    @limit.setter
    def limit(self, limit: int | None) -> None:
        self._limit = limit
        if limit is None:
            self.per_client = self.general_limit = self.general_per_client = None
            return
        general = limit // 2
        self.general_limit = general
        self.per_client = min(limit, max(self.MIN_PER_CLIENT, math.ceil(limit * self.share)))
        self.general_per_client = min(general, max(1, math.ceil(general * self.share)))

    def acquire(
        self, auth: AuthInfo | None = None, address: str | None = None, general: bool = False
    ) -> str | None:
        """Take a slot for the client of ``auth`` and ``address``, if it may have one.

        :param general: the slot is a GET stream's.
        :return: whom the slot counts against, to hand to :meth:`release`; ``None``
            when every slot is held, or the client holds its share.
        """
        if self._limit is None:
            with self._lock:
                self.open += 1
                if general:
                    self.open_general += 1
            return self.UNCOUNTED
        client = client_of(auth, address)
        with self._lock:
            held = self.held.get(client, 0)
            if self.open >= self._limit or held >= t.cast(int, self.per_client):
                return None
            if general:
                held_general = self.held_general.get(client, 0)
                if self.open_general >= t.cast(int, self.general_limit) or held_general >= t.cast(
                    int, self.general_per_client
                ):
                    return None
                self.open_general += 1
                self.held_general[client] = held_general + 1
            self.open += 1
            self.held[client] = held + 1
            return client

    def release(self, client: str, general: bool = False) -> None:
        """Give back a slot that :meth:`acquire` gave ``client``."""
        with self._lock:
            self.open = max(0, self.open - 1)
            if general:
                self.open_general = max(0, self.open_general - 1)
            if client:  # counted against a client (there is a limit)
                _give_back(self.held, client)
                if general:
                    _give_back(self.held_general, client)


def _give_back(held: dict[str, int], client: str) -> None:
    """Count one slot fewer for ``client`` in ``held``, dropping the entry at none."""
    count = held.pop(client, 0) - 1
    if count > 0:
        held[client] = count


_STALLED_WRITE = "Closed %d connection(s) whose client read nothing for %s s (MCP_WRITE_TIMEOUT)."
#: The log message of the POST bodies that did not arrive in time.
STALLED_READ = "Ended %d request(s) whose body did not arrive within %s s (MCP_READ_TIMEOUT)."


class PendingReads:
    """The request bodies being read from gunicorn's connections in this process, to end
    stalled reads.

    gunicorn reads a body with no timeout: a client that sends less than its
    ``Content-Length``, or a chunked body without its last chunk, would hold a thread
    (or greenlet) for as long as it keeps its connection open. A read is watched by
    adding ``(socket, time.monotonic())`` to :attr:`reading` before it and removing that
    entry after it; the supervisor calls :meth:`end_stalled` every second, which removes
    the entries older than ``MCP_READ_TIMEOUT`` and shuts their connections' read side
    down (the read ends; the 408 that says why still gets out). A ``KeyError`` from the
    reader's own removal says the supervisor ended its read. Both removals are one set
    operation, atomic under the GIL: exactly one of them takes an entry, with no lock.
    :meth:`start`, :meth:`ended` and :meth:`finish` are the reader's side; the MCP
    endpoint's ``POST`` writes the same three operations inline (no Python call on the
    ``tools/call`` path).
    """

    def __init__(self) -> None:
        #: ``(socket, since)`` of each body being read.
        self.reading: set[tuple[t.Any, float]] = set()

    def start(self, sock: t.Any) -> tuple[t.Any, float]:
        """Watch the read of a body from ``sock``, from now; return its entry."""
        entry = (sock, time.monotonic())
        self.reading.add(entry)
        return entry

    def ended(self, entry: tuple[t.Any, float]) -> bool:
        """Whether the supervisor has ended the read of ``entry`` (still being read)."""
        return entry not in self.reading

    def finish(self, entry: tuple[t.Any, float]) -> bool:
        """Stop watching ``entry``; return whether the supervisor ended its read first."""
        try:
            self.reading.remove(entry)
        except KeyError:  # the supervisor took it
            return True
        return False

    def end_stalled(self, now: float, timeout: float) -> int:
        """Shut down the read side of the connections whose body has not arrived within
        ``timeout`` seconds; return how many."""
        ended = 0
        for entry in list(self.reading):
            sock, since = entry
            if now - since < timeout:
                continue
            try:
                self.reading.remove(entry)
            except KeyError:  # read meanwhile
                continue
            ended += 1
            _shut_down(sock, socket.SHUT_RD)
        if ended:
            logger.info(STALLED_READ, ended, timeout)
        return ended


def _shut_down(sock: t.Any, how: int) -> None:
    """Shut ``sock`` down (``how``) as the kernel's socket, ignoring one closed meanwhile.

    The socket gevent wraps is shut down as the kernel's: gevent's own shutdown would
    fail the waiting write with EBADF, which servers log as an error.
    """
    raw = getattr(sock, "_sock", None)
    with contextlib.suppress(OSError):  # closed meanwhile
        (raw if isinstance(raw, _socket.socket) else sock).shutdown(how)


class PendingWrite:
    """One response's connection, and since when the server's write to it waits."""

    __slots__ = ("ended", "since", "sock")

    def __init__(self, sock: t.Any) -> None:
        self.sock = sock
        #: When the write of the chunk handed to the server began (``None``: none pending).
        self.since: float | None = None
        #: Set once the supervisor shut the connection down for waiting too long.
        self.ended = False

    def timed(self, chunks: t.Iterable[bytes]) -> t.Iterator[bytes]:
        """Yield ``chunks``, each marked as waiting (:attr:`since`) while the server writes it."""
        for chunk in chunks:
            self.since = time.monotonic()
            yield chunk
            self.since = None


class PendingWrites:
    """The connections of the responses being written in this process, to end stalled ones.

    They are those of the SSE responses and of the JSON responses larger than
    :data:`~flask_mcp.transport.responses.WATCHED_BODY_SIZE`.

    The WSGI server writes each chunk of a response with no timeout: a client
    that keeps its connection open but reads nothing blocks that write for
    ever once the socket's buffers are full, and its stream (on a threaded
    server, its thread) is never given back. The supervisor calls
    :meth:`end_stalled` every second: a write waiting longer than
    ``MCP_WRITE_TIMEOUT`` has its connection shut down, so the write fails
    and the response's clean-up runs.

    waitress writes into its own buffers, so its write waits only once they hold
    its ``outbuf_high_watermark`` (16 MB by default); uWSGI's write waits as
    gunicorn's (with threads, its ``--socket-timeout`` ends it first).
    """

    def __init__(self) -> None:
        self._open: set[PendingWrite] = set()
        self._lock = _concurrency.native_lock()  # nothing waits while holding it

    def __len__(self) -> int:
        return len(self._open)

    def open(self, sock: t.Any) -> PendingWrite | None:
        """Watch the writes to ``sock``; ``None`` when it cannot be shut down (the server
        shows no connection: see :func:`~flask_mcp.runtime.concurrency.client_socket`)."""
        if not callable(getattr(sock, "shutdown", None)):
            return None
        write = PendingWrite(sock)
        with self._lock:
            self._open.add(write)
        return write

    def close(self, write: PendingWrite | None) -> None:
        """Stop watching ``write`` (its response was closed)."""
        if write is not None:
            with self._lock:
                self._open.discard(write)

    def body(self, sock: t.Any, chunks: t.Iterable[bytes]) -> t.Iterator[bytes]:
        """Yield the chunks of a response body whose length the server sent ahead, their
        writes to ``sock`` watched.

        The watch begins with the first chunk and ends with the body (its last
        chunk written, or the body closed): a body that other code reads first
        (``Response.get_data``) leaves nothing watched.
        """
        write = self.open(sock)
        if write is None:
            yield from chunks
            return
        try:
            yield from write.timed(chunks)
        finally:
            self.close(write)

    def end_stalled(self, now: float, timeout: float) -> int:
        """Shut down the connections whose write has waited ``timeout`` seconds; return how
        many."""
        # Shut down while holding the lock: a response stops being watched (close) before
        # the server closes its connection, so a descriptor that uWSGI lends (a number)
        # cannot have been closed and given to another client meanwhile.
        with self._lock:
            stalled = [w for w in self._open if w.since is not None and now - w.since >= timeout]
            self._open.difference_update(stalled)
            for write in stalled:
                write.ended = True
                _shut_down(write.sock, socket.SHUT_RDWR)  # the blocked write fails (EPIPE)
        if stalled:
            logger.info(_STALLED_WRITE, len(stalled), timeout)
        return len(stalled)


__all__ = [
    "InFlight",
    "InProcessOutbox",
    "InlineOutbox",
    "Outbox",
    "PendingReads",
    "PendingWrite",
    "PendingWrites",
    "RequestRun",
    "StreamOutbox",
    "StreamSlots",
    "new_session_id",
    "new_stream_id",
]
