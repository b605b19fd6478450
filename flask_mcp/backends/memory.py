"""The embedded backend: everything in this process's memory."""

from __future__ import annotations

import collections
import collections.abc as cabc
import itertools
import threading
import time
import typing as t

from ..json_codec import dumps_bytes
from .base import END
from .base import GENERAL_STREAM
from .base import MESSAGE
from .base import RESUME_BYTES
from .base import WRITE_IDS
from .base import Backend
from .base import Event
from .base import ReadResult
from .base import SessionQuotaExceeded
from .base import SessionRecord
from .base import session_ended
from .channels import ProcessChannels
from .channels import QueueSubscription


class _Stream:
    __slots__ = ("events", "last_seq", "reader", "cond", "cursor", "size", "writes", "writing")

    def __init__(self, lock: threading.Lock) -> None:
        self.events: collections.deque[Event] = collections.deque()
        self.last_seq = 0
        self.reader = 0
        self.cursor = 0
        self.cond = threading.Condition(lock)
        #: The bytes of its messages as JSON, once measured (see :meth:`message_bytes`).
        self.size: int | None = None
        #: Whether a request writes it still (opened for one, not ended): its sequence
        #: numbers must go on whatever is evicted from it.
        self.writing = False
        #: The ids of its last writes, with their sequence numbers (see Backend.append).
        self.writes: collections.OrderedDict[str, int] = collections.OrderedDict()

    def message_bytes(self) -> int:
        """Return the bytes of the messages it keeps, as JSON: measured when first asked
        (its reader left), then kept up to date as messages come and go."""
        if self.size is None:
            self.size = sum(
                len(dumps_bytes(event.message))
                for event in self.events
                if event.kind == MESSAGE and event.message is not None
            )
        return self.size


def _holds_messages(stream: _Stream) -> bool:
    """Tell whether a stream keeps a message a client resuming it would get."""
    return any(event.kind == MESSAGE for event in stream.events)


def _spent(stream_id: str, stream: _Stream) -> bool:
    """Tell whether a stream can give nobody anything more: not the general stream, no
    request writes it, and it keeps no message."""
    return stream_id != GENERAL_STREAM and not stream.writing and not _holds_messages(stream)


class _Session:
    __slots__ = ("record", "streams", "order", "lock", "ids", "waiters", "left", "owner")

    def __init__(self, record: SessionRecord, owner: str | None = None) -> None:
        self.record = record
        #: The client whose quota counts it (``None``: counted in none).
        self.owner = owner
        self.streams: dict[str, _Stream] = {}
        self.order: collections.deque[str] = collections.deque()
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.waiters: dict[t.Any, list[t.Any]] = {}
        #: The streams whose reader left before they were dropped, in the order they were
        #: left, each with its place in the process's order of streams left (see
        #: :meth:`MemoryBackend._shed_client`).
        self.left: dict[str, int] = {}


def _verdict(
    session_id: str,
    session: _Session,
    idle: float | None,
    lifetime: float | None,
    keep: cabc.Container[str],
) -> str | None:
    """Tell why a session is past its limits (``"lifetime"``, ``"idle"``), or ``None``."""
    record = session.record
    if record.busy > 0 or session_id in keep:
        return None
    now = time.time()
    if lifetime is not None and now - record.created > lifetime:
        return "lifetime"
    if idle is not None and now - record.last_seen > idle:
        return "idle"
    return None


class MemoryBackend(Backend):
    """Keeps sessions, event logs and waiters in dictionaries.

    It serves one process: under several workers each worker would see its own
    sessions, so use the Redis backend there.

    :param buffer_size: events kept per session for ``Last-Event-ID`` replay.
    :param resume_bytes: bytes of messages kept per session on the streams whose reader
        left (0: no bound); see :meth:`Backend.append`.
    """

    def __init__(self, buffer_size: int = 1000, resume_bytes: int = RESUME_BYTES) -> None:
        self.buffer_size = buffer_size
        self.resume_bytes = resume_bytes
        self._sessions: dict[str, _Session] = {}
        self._owned: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self._readers = itertools.count(1)
        #: The order of streams left, across sessions: older streams left get lower numbers.
        self._left_order = itertools.count(1)
        self._channels = ProcessChannels()

    def _session(self, session_id: str) -> _Session | None:
        return self._sessions.get(session_id)

    # -- sessions -----------------------------------------------------------

    def create_session(
        self,
        record: SessionRecord,
        limit: int,
        *,
        handshake_timeout: float | None = None,
        owner: str | None = None,
        quota: int | None = None,
    ) -> bool:
        self.check_client_info(record)
        if handshake_timeout is not None and len(self._sessions) >= limit:
            self._end_unfinished(time.time() - handshake_timeout)
        counted = owner if quota is not None else None
        with self._lock:
            if counted is not None and len(self._owned.get(counted, ())) >= t.cast(int, quota):
                raise SessionQuotaExceeded(counted)
            if len(self._sessions) >= limit:
                return False
            self._sessions[record.id] = _Session(record, counted)
            if counted is not None:  # delete_session takes it out
                self._owned.setdefault(counted, set()).add(record.id)
        return True

    def _end_unfinished(self, before: float) -> None:
        """End the sessions created before ``before`` whose handshake never finished."""
        stale = []
        for session_id, session in list(self._sessions.items()):  # oldest first
            if session.record.created >= before:
                break
            if not session.record.initialized:
                stale.append(session_id)
        for session_id in stale:
            if self.delete_session(session_id):
                session_ended(session_id, "handshake")

    def get_session(self, session_id: str, touch: bool = False) -> SessionRecord | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if touch:  # touch_session without its second lookup
            session.record.last_seen = time.time()  # one store: no lock needed
        return session.record

    def update_session(self, session_id: str, **changes: t.Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            for key, value in changes.items():
                setattr(session.record, key, value)

    def touch_session(self, session_id: str, busy_delta: int = 0) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        session.record.last_seen = time.time()  # one store: no lock needed
        if busy_delta:
            with session.lock:
                session.record.busy = max(0, session.record.busy + busy_delta)

    def delete_session(self, session_id: str) -> bool:
        with self._lock:
            session = self._unlink(session_id)
        if session is None:
            return False
        self._wake(session)
        return True

    def _unlink(self, session_id: str) -> _Session | None:
        """Take a session out of the tables (under ``self._lock``); return it."""
        session = self._sessions.pop(session_id, None)
        if session is not None and session.owner is not None:
            owned = self._owned.get(session.owner)
            if owned is not None:
                owned.discard(session_id)
                if not owned:  # a client gone for good leaves nothing behind
                    del self._owned[session.owner]
        return session

    @staticmethod
    def _wake(session: _Session) -> None:
        """Wake whatever waits on a session taken out of the tables: it ended."""
        with session.lock:
            for stream in session.streams.values():
                stream.reader = -1
                stream.cond.notify_all()
            for slot in session.waiters.values():
                slot[0].set()

    def session_ids(self) -> list[str]:
        return list(self._sessions)

    def reap(
        self, idle: float | None, lifetime: float | None, keep: cabc.Container[str] = ()
    ) -> list[tuple[str, str]]:
        ended = []
        for session_id, session in list(self._sessions.items()):
            if _verdict(session_id, session, idle, lifetime, keep) is None:
                continue
            # Judged again under the session's lock, which a request starting takes to
            # count itself busy, and taken out under it: a request that came since the
            # first look (it made the session busy or seen) keeps it, as the Redis
            # backend's script does.
            with session.lock:
                reason = _verdict(session_id, session, idle, lifetime, keep)
                if reason is not None:
                    with self._lock:
                        if self._sessions.get(session_id) is not session:
                            continue  # deleted meanwhile: ended by whoever did it
                        self._unlink(session_id)
            if reason is not None:
                self._wake(session)
                ended.append((session_id, reason))
        return ended

    # -- streams ------------------------------------------------------------

    def open_stream(self, session_id: str, stream_id: str, *, request_id: t.Any = None) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            with session.lock:
                if stream_id not in session.streams:
                    stream = session.streams[stream_id] = _Stream(session.lock)
                    stream.writing = stream_id != GENERAL_STREAM

    def append(
        self,
        session_id: str,
        stream_id: str,
        kind: str,
        message: dict[str, t.Any] | None = None,
        *,
        write_id: str | None = None,
    ) -> int:
        session = self._sessions.get(session_id)
        if session is None:
            return 0
        with session.lock:
            stream = session.streams.get(stream_id)
            if stream is None:
                stream = session.streams[stream_id] = _Stream(session.lock)
            grows_left = kind == MESSAGE and stream_id in session.left
            if write_id:
                seen = stream.writes.get(write_id)
                if seen is not None:  # the same write again: appended once
                    return seen
                stream.writes[write_id] = stream.last_seq + 1
                if len(stream.writes) > WRITE_IDS:
                    stream.writes.popitem(last=False)
            stream.last_seq += 1
            stream.events.append(Event(stream.last_seq, kind, message))
            if kind == MESSAGE:
                if stream.size is not None and message is not None:
                    stream.size += len(dumps_bytes(message))
                session.order.append(stream_id)
                while len(session.order) > self.buffer_size:
                    self._evict_oldest(session)
                self._shed_left(session)
            elif kind == END:
                stream.writing = False
                if stream_id in session.left and _spent(stream_id, stream):
                    self._forget_stream(session, stream_id)  # ended with nothing to resume
            stream.cond.notify_all()
            seq = stream.last_seq
        if grows_left and session.owner is not None and self.resume_bytes_per_client:
            self._shed_client(session.owner)
        return seq

    def _evict_oldest(self, session: _Session) -> None:
        stream_id = session.order.popleft()
        stream = session.streams.get(stream_id)
        if stream is None:
            return
        stream.size = None
        while stream.events:
            event = stream.events.popleft()
            if event.kind == MESSAGE:
                break
        if stream.reader == 0 and _spent(stream_id, stream):
            self._forget_stream(session, stream_id)

    def _shed_left(self, session: _Session, leaving: bool = False) -> None:
        """Bound the messages of the streams left to ``resume_bytes`` (hold ``session.lock``;
        only the messages of one a request still writes, see :meth:`Backend.append`).

        The streams left longest ago are dropped first; when the stream left last alone
        is over the bound, its oldest messages go (see :meth:`_trim_stream`). With
        ``leaving``, its reader is leaving the stream left last now: the bound applies to
        the streams left before it (a stream read to its end is left, then dropped, and
        must not push the others out meanwhile). Sizes are measured only when a stream
        counts, so a stream read to its end costs nothing.
        """
        counted = len(session.left) - leaving
        if not self.resume_bytes or counted < 1:
            return
        left = list(session.left)[:counted]
        sizes = {sid: session.streams[sid].message_bytes() for sid in left}
        total = sum(sizes.values())
        for stream_id in left[:-1]:
            if total <= self.resume_bytes:
                return
            if not sizes[stream_id]:
                continue
            total -= sizes[stream_id]
            stream = session.streams[stream_id]
            if stream.writing:
                self._empty_stream(session, stream_id, stream)
            else:
                self._forget_stream(session, stream_id)
        if total > self.resume_bytes:
            self._trim_stream(session, left[-1], total - self.resume_bytes)

    def _trim_stream(self, session: _Session, stream_id: str, excess: int) -> None:
        """Drop the oldest messages of a stream left (and the events before each) until
        ``excess`` bytes of them went (hold ``session.lock``). Its sequence numbers go on:
        a client resuming from before them gets 410. Left with no message and no request
        writing it, it is forgotten (a resume gets 400)."""
        stream = session.streams[stream_id]
        size = stream.message_bytes()
        trimmed = 0
        while stream.events and excess > 0:
            event = stream.events.popleft()
            if event.kind == MESSAGE:
                taken = 0 if event.message is None else len(dumps_bytes(event.message))
                size -= taken
                excess -= taken
                trimmed += 1
        stream.size = size
        order: collections.deque[str] = collections.deque()
        for entry in session.order:  # each message trimmed was its stream's first entry
            if trimmed and entry == stream_id:
                trimmed -= 1
            else:
                order.append(entry)
        session.order = order
        if _spent(stream_id, stream):
            self._forget_stream(session, stream_id)

    def _empty_stream(self, session: _Session, stream_id: str, stream: _Stream) -> None:
        """Drop the messages of a stream a request still writes, keeping its sequence
        numbers and its place among the streams left (hold ``session.lock``): what its
        request sends later counts, and a client resuming from before gets 410."""
        stream.events.clear()
        stream.size = 0
        session.order = collections.deque(s for s in session.order if s != stream_id)

    def _forget_stream(self, session: _Session, stream_id: str) -> None:
        """Drop a stream: its reader, if any, sees it missing (hold ``session.lock``)."""
        stream = session.streams.pop(stream_id, None)
        session.left.pop(stream_id, None)
        if stream is not None:
            stream.reader = -1
            stream.cond.notify_all()
            if _holds_messages(stream):
                session.order = collections.deque(s for s in session.order if s != stream_id)

    def attach(self, session_id: str, stream_id: str) -> int:
        token = next(self._readers)
        session = self._sessions.get(session_id)
        if session is not None:
            with session.lock:
                stream = session.streams.get(stream_id)
                if stream is None:
                    if stream_id != GENERAL_STREAM:  # ended and forgotten: a read says so
                        return token
                    stream = session.streams[stream_id] = _Stream(session.lock)
                stream.reader = token
                session.left.pop(stream_id, None)
                stream.cond.notify_all()
        return token

    def detach(self, session_id: str, stream_id: str, token: int) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        with session.lock:
            stream = session.streams.get(stream_id)
            if stream is None or stream.reader != token:
                return
            stream.reader = 0
            if _spent(stream_id, stream):  # it ended with nothing a resume would get
                self._forget_stream(session, stream_id)
                return
            if stream_id == GENERAL_STREAM:
                return
            session.left[stream_id] = next(self._left_order)
            self._shed_left(session, leaving=True)
        if session.owner is not None and self.resume_bytes_per_client:
            self._shed_client(session.owner, leaving=(session, stream_id))

    def _shed_client(self, owner: str, leaving: tuple[_Session, str] | None = None) -> None:
        """Bound the messages of the streams left in all the sessions of ``owner`` to
        ``resume_bytes_per_client``: the streams left longest ago are dropped first (or
        lose their messages, while a request writes them), then the oldest messages of
        the one left last (see :meth:`_trim_stream`).

        Hold no session's lock: each session is visited under its own, one at a time, and
        a stream read again or dropped between the count and the drop is passed over.
        ``leaving``: the stream whose reader is leaving now, which counts for nothing (see
        :meth:`_shed_left`).
        """
        with self._lock:
            session_ids = list(self._owned.get(owner, ()))
        held: list[tuple[int, _Session, str, int]] = []
        for session_id in session_ids:
            session = self._sessions.get(session_id)
            if session is None:
                continue
            with session.lock:
                for stream_id, order in session.left.items():
                    if (session, stream_id) != leaving:
                        size = session.streams[stream_id].message_bytes()
                        held.append((order, session, stream_id, size))
        bound = self.resume_bytes_per_client
        total = sum(size for *_, size in held)
        if total <= bound:
            return
        held.sort(key=lambda entry: entry[0])
        for order, session, stream_id, _ in held[:-1]:
            with session.lock:
                if session.left.get(stream_id) != order:
                    continue  # read again, or dropped, meanwhile
                stream = session.streams[stream_id]
                size = stream.message_bytes()
                if not size:
                    continue
                total -= size
                if stream.writing:
                    self._empty_stream(session, stream_id, stream)
                else:
                    self._forget_stream(session, stream_id)
            if total <= bound:
                return
        order, session, stream_id, _ = held[-1]
        with session.lock:
            if session.left.get(stream_id) == order:
                self._trim_stream(session, stream_id, total - bound)

    def read(
        self, session_id: str, stream_id: str, after: int, token: int, timeout: float
    ) -> ReadResult:
        session = self._sessions.get(session_id)
        if session is None:
            return ReadResult([], missing=True)
        deadline = time.monotonic() + timeout
        with session.lock:
            while True:
                stream = session.streams.get(stream_id)
                if stream is None:
                    return ReadResult([], missing=True)
                if stream.reader != token:
                    return ReadResult([], superseded=True)
                if stream.last_seq > after:
                    return ReadResult([e for e in stream.events if e.seq > after])
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ReadResult([])
                stream.cond.wait(remaining)

    def first_seq(self, session_id: str, stream_id: str) -> int | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        with session.lock:
            stream = session.streams.get(stream_id)
            if stream is None:
                return None
            return stream.events[0].seq if stream.events else stream.last_seq + 1

    def drop_stream(self, session_id: str, stream_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            with session.lock:
                self._forget_stream(session, stream_id)

    def get_cursor(self, session_id: str, stream_id: str) -> int:
        session = self._sessions.get(session_id)
        stream = None if session is None else session.streams.get(stream_id)
        return 0 if stream is None else stream.cursor

    def set_cursor(self, session_id: str, stream_id: str, seq: int) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        with session.lock:  # two streams may save at once: the later cursor stays
            stream = session.streams.get(stream_id)
            if stream is not None:
                stream.cursor = max(stream.cursor, seq)

    # -- server-to-client requests -----------------------------------------

    def next_request_id(self, session_id: str) -> int:
        session = self._sessions.get(session_id)
        return next(session.ids) if session is not None else 0

    def expect_response(self, session_id: str, request_id: t.Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.waiters[request_id] = [threading.Event(), None]

    def wait_response(
        self, session_id: str, request_id: t.Any, timeout: float
    ) -> dict[str, t.Any] | None:
        session = self._sessions.get(session_id)
        slot = None if session is None else session.waiters.get(request_id)
        if slot is None:
            return None
        if not slot[0].wait(timeout) or slot[1] is None:
            return None
        assert session is not None
        session.waiters.pop(request_id, None)
        return t.cast("dict[str, t.Any]", slot[1])

    def deliver_response(
        self, session_id: str, request_id: t.Any, message: dict[str, t.Any]
    ) -> bool:
        session = self._sessions.get(session_id)
        if session is None:
            return False
        with session.lock:  # of two answers at once, only the first is taken
            slot = session.waiters.get(request_id)
            if slot is None or slot[1] is not None:
                return False
            slot[1] = message
        slot[0].set()
        return True

    def forget_response(self, session_id: str, request_id: t.Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.waiters.pop(request_id, None)

    # -- cancellation -------------------------------------------------------

    def cancel(self, session_id: str, request_id: t.Any) -> None:
        if self.cancel_callback is not None:
            self.cancel_callback(session_id, request_id)

    def stats(self) -> dict[str, int]:
        """Return how many streams, events and waiters this backend holds."""
        sessions = list(self._sessions.values())
        return {
            "streams": sum(len(session.streams) for session in sessions),
            "events": sum(
                len(stream.events) for session in sessions for stream in session.streams.values()
            ),
            "waiters": sum(len(session.waiters) for session in sessions),
        }

    # -- pub/sub ------------------------------------------------------------

    def publish(self, channel: str, message: dict[str, t.Any]) -> None:
        self._channels.deliver(channel, message)

    def subscribe(self, channel: str) -> QueueSubscription:
        return self._channels.add(channel)

    def caught_up(self) -> bool:
        """Always: :meth:`publish` hands a message to this process's subscribers at once."""
        return True


__all__ = [
    "MemoryBackend",
]
