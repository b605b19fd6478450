"""The Redis backend's per-process stream reader: many open streams, few connections.

A stream's reader used to hold a Redis connection of its own in ``XREAD
BLOCK``, so 10,000 open SSE streams were 10,000 Redis clients. Here the
readers of a process wait on local events instead. Every script that changes
a stream (an append, another reader attaching, the stream or its session
going away) publishes ``"SID ST"`` on the channel ``P wake``; the process's
listener (:mod:`~flask_mcp.backends._redis_listener`), already subscribed for
cancellations, hands each message to :meth:`StreamReader.wake`, which wakes
only the readers of that stream in this process. A woken reader asks Redis
once, without blocking, what changed (the backend's ``check`` script), through
at most :data:`FETCH_SLOTS` connections of the shared pool at a time.

Nothing is lost when the pub/sub connection breaks (a Redis restart): when the
listener subscribes again it calls :meth:`StreamReader.wake_all`, and every
reader of the process asks Redis again from its last sequence number; while it
is down, readers ask every :data:`POLL` seconds. An idle reader asks Redis
nothing between wake-ups, however often it is called: the answer of its last
question is remembered, per token, until a wake-up or a reconnection makes it
stale. The memory is given back when the reader detaches, or after
:data:`FORGET_AFTER` seconds without a read (a reader that vanished).
"""

from __future__ import annotations

import json
import threading
import time
import typing as t

from .base import Event
from .base import ReadResult

#: Readers of one process asking Redis at once (each holds a pooled connection meanwhile).
FETCH_SLOTS = 4
#: Seconds between the questions of a reader while the pub/sub connection is down.
POLL = 1.0
#: Seconds after which the memory of a reader that stopped reading is given back.
FORGET_AFTER = 120.0

#: Asks Redis about a stream: ``(session_id, stream_id, after, token)`` to the
#: reply of the ``check`` script (see :func:`parse_check`).
Check = t.Callable[[str, str, int, int], t.Any]


class _Stream:
    """What this process knows of one stream: its readers' events and last answers."""

    __slots__ = ("known", "version", "waiters")

    def __init__(self) -> None:
        #: Bumped by every wake-up of the stream.
        self.version = 0
        #: The events of the reads waiting now.
        self.waiters: set[threading.Event] = set()
        #: Per reader token: ``(after, version, epoch, when)`` of its last "nothing new".
        self.known: dict[int, tuple[int, int, int, float]] = {}


class StreamReader:
    """Wakes the stream readers of this process when Redis says their stream changed.

    :param check: asks Redis about a stream without blocking (see :data:`Check`).
    :param live: tells whether the pub/sub subscription is up (wake-ups arrive).
    :param slots: readers asking Redis at once.
    """

    def __init__(
        self, check: Check, live: t.Callable[[], bool], *, slots: int = FETCH_SLOTS
    ) -> None:
        self.check = check
        self.live = live
        self.lock = threading.Lock()
        self.streams: dict[tuple[str, str], _Stream] = {}
        #: Bumped by :meth:`wake_all`: every remembered answer becomes stale.
        self.epoch = 0
        self._gate = threading.BoundedSemaphore(slots)

    def read(
        self, session_id: str, stream_id: str, after: int, token: int, timeout: float
    ) -> ReadResult:
        """Return the stream's events after ``after``, waiting up to ``timeout`` seconds.

        Empty when none came in time; ``missing`` or ``superseded`` as the
        backend's ``check`` says.
        """
        key = (session_id, stream_id)
        woken = threading.Event()
        with self.lock:
            stream = self.streams.get(key)
            if stream is None:
                stream = self.streams[key] = _Stream()
            stream.waiters.add(woken)
        deadline = time.monotonic() + timeout
        try:
            while True:
                woken.clear()
                live = self.live()
                version, epoch = stream.version, self.epoch
                known = stream.known.get(token)
                if not live or known is None or known[:3] != (after, version, epoch):
                    with self._gate:
                        found = parse_check(self.check(session_id, stream_id, after, token))
                    if found is not None:
                        stream.known.pop(token, None)
                        return found
                    stream.known[token] = (after, version, epoch, time.monotonic())
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ReadResult([])
                woken.wait(remaining if live else min(remaining, POLL))
        finally:
            with self.lock:
                stream.waiters.discard(woken)
                entry = stream.known.get(token)
                if entry is not None:
                    stream.known[token] = (*entry[:3], time.monotonic())
                if not stream.waiters and not stream.known and self.streams.get(key) is stream:
                    del self.streams[key]

    def forget(self, session_id: str, stream_id: str, token: int) -> None:
        """Give back what is kept for the reader ``token`` (it detached)."""
        key = (session_id, stream_id)
        with self.lock:
            stream = self.streams.get(key)
            if stream is None:
                return
            stream.known.pop(token, None)
            if not stream.waiters and not stream.known:
                del self.streams[key]

    def wake(self, data: bytes | str) -> None:
        """Wake the readers of the streams in a ``P wake`` message (``"SID ST"`` lines)."""
        text = data.decode() if isinstance(data, bytes) else data
        with self.lock:
            for line in text.split("\n"):
                session_id, _, stream_id = line.partition(" ")
                stream = self.streams.get((session_id, stream_id))
                if stream is not None:
                    stream.version += 1
                    for waiter in stream.waiters:
                        waiter.set()

    def wake_all(self) -> None:
        """Make every reader of this process ask Redis again (wake-ups may have been lost)."""
        with self.lock:
            self.epoch += 1
            for stream in self.streams.values():
                for waiter in stream.waiters:
                    waiter.set()

    def sweep(self, now: float | None = None) -> int:
        """Forget the readers that have not read for :data:`FORGET_AFTER` seconds.

        Returns how many were forgotten. A forgotten reader that reads again
        simply asks Redis first.
        """
        limit = (time.monotonic() if now is None else now) - FORGET_AFTER
        gone = 0
        with self.lock:
            for key, stream in list(self.streams.items()):
                if stream.waiters:
                    continue
                for token, entry in list(stream.known.items()):
                    if entry[3] < limit:
                        del stream.known[token]
                        gone += 1
                if not stream.known:
                    del self.streams[key]
        return gone

    def counts(self) -> tuple[int, int]:
        """Return how many streams are known and how many reads wait now."""
        with self.lock:
            return len(self.streams), sum(len(s.waiters) for s in self.streams.values())


def _text(value: t.Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_check(reply: t.Any) -> ReadResult | None:
    """Turn the ``check`` script's reply into a result; ``None``: nothing new yet."""
    status = _text(reply[0])
    if status == "missing":
        return ReadResult([], missing=True)
    if status == "superseded":
        return ReadResult([], superseded=True)
    if status != "events":
        return None
    return ReadResult(
        [
            Event(
                int(_text(reply[i]).rpartition("-")[2]),
                _text(reply[i + 1]),
                json.loads(reply[i + 2]) if reply[i + 2] else None,
            )
            for i in range(1, len(reply), 3)
        ]
    )


__all__ = ["FETCH_SLOTS", "FORGET_AFTER", "POLL", "StreamReader", "parse_check"]
