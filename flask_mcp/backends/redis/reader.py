"""The Redis backend's per-process stream reader: many open streams, few connections.

A stream's reader used to hold a Redis connection of its own in ``XREAD
BLOCK``, so 10,000 open SSE streams were 10,000 Redis clients. Here the
readers of a process wait on local events instead. Every script that changes
a stream for its reader (an append, another reader attaching, the stream or
its session going away) publishes the stream's event log key on the channel
``P wake`` (see :mod:`~flask_mcp.backends.redis.scripts`); the process's
listener (:mod:`~flask_mcp.backends.redis.listener`), already subscribed for
cancellations, hands each message to :meth:`RedisStreamReader.wake`, which wakes
only the readers of that stream in this process. A woken reader asks Redis
once, without blocking, what changed (the backend's ``check`` script). The
questions of many readers travel together: :class:`Batches` sends what is
queued as one pipeline, on at most :data:`FETCH_SLOTS` connections of the
shared pool at a time; the cursors GET streams save as they deliver go last,
and their streams do not wait for them (:meth:`Batches.post`).

A broadcast's wake-up carries its event (:func:`inline_wake`): with each
stream's key, the event's sequence number there and the reader the append saw.
A reader for which it is surely the next event (nothing else woke the stream
since its last answer, it is that reader, and it had delivered the event
before) takes it from the message and asks nothing; any other asks Redis.

Nothing is lost when the pub/sub connection breaks (a Redis restart): when the
listener subscribes again it calls :meth:`RedisStreamReader.wake_all`, and every
reader of the process asks Redis again from its last sequence number; while it
is down, readers ask every :data:`POLL` seconds. A Redis unreachable for
:data:`OUTAGE_GRACE` seconds ends the streams (their clients resume them). An idle reader asks Redis
nothing between wake-ups, however often it is called: the answer of its last
question is remembered, per token, until a wake-up or a reconnection makes it
stale, or for :data:`REFRESH` seconds at most (a safety net: it costs one
question per stream per interval). The memory is given back when the reader
detaches, or after :data:`FORGET_AFTER` seconds without a read (a reader that
vanished).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
import typing as t

from ...errors import BackendUnavailable
from ...wakeup import Wakeup
from ...wakeup import gevent_patched
from ...wakeup import new_wakeup
from ...wakeup import run_soon
from ..base import Event
from ..base import ReadResult
from .codec import loads

logger = logging.getLogger("flask_mcp")

#: Pipelines of one process's readers in flight at once (each holds a pooled connection).
FETCH_SLOTS = 4
#: Most commands in one pipeline.
BATCH = 256
#: Seconds a caller of :meth:`Batches.call` waits before it checks that its call is sent.
RECHECK = 1.0
#: Seconds between the questions of a reader while the pub/sub connection is down.
POLL = 1.0
#: Seconds an established reader rides out an unreachable Redis before its stream ends.
OUTAGE_GRACE = 2.0
#: Seconds after which the memory of a reader that stopped reading is given back.
FORGET_AFTER = 120.0
#: Seconds an idle reader trusts the answer of its last question without a wake-up.
REFRESH = 30.0
#: Starts a ``P wake`` message that carries its event (see :func:`inline_wake`); no key does.
INLINE = "\x00"
#: Longest message (JSON characters) a wake-up carries; a larger one is fetched by each reader.
INLINE_MAX = 65536

#: Runs scripts of the backend in one round trip: ``[(name, keys, args), ...]`` to
#: their replies, in order.
RunMany = t.Callable[[list[tuple[str, list[str], tuple[t.Any, ...]]]], list[t.Any]]


class _Call:
    __slots__ = ("args", "done", "error", "keys", "name", "posted", "reply", "then")

    def __init__(
        self,
        name: str,
        keys: list[str],
        args: tuple[t.Any, ...],
        posted: bool = False,
        then: t.Callable[[t.Any], None] | None = None,
    ) -> None:
        self.name, self.keys, self.args, self.posted = name, keys, args, posted
        #: Set once the reply came; a post (nobody waits for it) has none.
        self.done = None if posted else threading.Event()
        self.reply: t.Any = None
        self.error: BaseException | None = None
        #: What a post does with its reply, once it came.
        self.then = then


class Batches:
    """Sends the scripts that many readers run at once as a few pipelines.

    A caller queues its call; while fewer than ``slots`` callers are sending,
    it sends too: what is queued, up to :data:`BATCH` calls a pipeline, until
    the queue is empty. The others wait for their reply.

    :param run_many: runs a batch in one round trip (see :data:`RunMany`).
    """

    def __init__(self, run_many: RunMany, slots: int = FETCH_SLOTS) -> None:
        self.run_many = run_many
        self.slots = slots
        self.lock = threading.Lock()
        self.queue: list[_Call] = []
        #: The calls nobody waits for (see :meth:`post`), by name, keys and first argument.
        self.posts: collections.OrderedDict[tuple[t.Any, ...], _Call] = collections.OrderedDict()
        self.sending = 0
        #: A send of the posts is due in a greenlet of its own (see :meth:`post`).
        self.deferred = False

    def call(self, name: str, keys: list[str], *args: t.Any) -> t.Any:
        """Run the backend's script ``name`` on ``keys`` with ``args``; return its reply.

        :raises BackendUnavailable: Redis is unreachable.
        """
        call = _Call(name, keys, args)
        with self.lock:
            self.queue.append(call)
            send = self.sending < self.slots
            if send:
                self.sending += 1
        if send:
            self._send()
        done = t.cast(threading.Event, call.done)
        while not done.wait(RECHECK):
            # The sender that took the queue may have been killed (its request was
            # cancelled) before sending this call: send it, rather than wait for traffic.
            with self.lock:
                send = self.sending < self.slots and call in self.queue
                if send:
                    self.sending += 1
            if send:
                self._send()
        if call.error is not None:
            raise call.error
        return call.reply

    def post(
        self,
        name: str,
        keys: list[str],
        *args: t.Any,
        then: t.Callable[[t.Any], None] | None = None,
    ) -> None:
        """Run the script ``name`` soon, after the calls waited for; do not wait for it.

        A post not sent yet is replaced by a later one with the same name, keys
        and first argument (a cursor saved again). Its errors are logged only.
        The caller sends what is queued, as :meth:`call` does, if a slot is free;
        under gevent a greenlet of its own does, once the greenlets ready now ran.

        :param then: called with the reply by whoever sent it (its errors are logged).
        """
        call = _Call(name, keys, args, posted=True, then=then)
        key = (name, *keys, args[0] if args else None)
        green = gevent_patched()
        with self.lock:
            self.posts[key] = call
            send = self.sending < self.slots and not self.deferred
            if send:
                self.sending += 1
                self.deferred = green
        if send and green:
            run_soon(self._send_deferred)
        elif send:
            self._send()

    def _send_deferred(self) -> None:
        """Send the posts of all the greenlets that ran meanwhile (a broadcast wakes
        thousands in one turn of the loop): one pipeline for them, not one each."""
        self.deferred = False
        self._send()

    def drain(self) -> None:
        """Send what is queued now, posts included, whatever the slots (the process stops).

        :raises BackendUnavailable: Redis is unreachable.
        """
        with self.lock:
            if not self.queue and not self.posts:
                return
            self.sending += 1
        self._send()

    def posted(self, name: str, keys: list[str], first: t.Any) -> tuple[t.Any, ...] | None:
        """Return the arguments of the post of ``name`` on ``keys`` not sent yet, if any."""
        key = (name, *keys, first)
        with self.lock:
            call = self.posts.get(key)
        return None if call is None else call.args

    def _send(self) -> None:
        batch: list[_Call] = []
        try:
            while True:
                with self.lock:
                    batch = self.queue[:BATCH]
                    del self.queue[:BATCH]
                    while self.posts and len(batch) < BATCH:  # the posts fill the rest
                        batch.append(self.posts.popitem(last=False)[1])
                    if not batch:
                        self.sending -= 1
                        return
                try:
                    replies = self.run_many([(c.name, c.keys, c.args) for c in batch])
                except Exception as exc:
                    replies = [exc] * len(batch)
                for call, reply in zip(batch, replies, strict=True):
                    if isinstance(reply, Exception):
                        call.error = reply
                        if call.posted:
                            logger.debug("Redis refused %s (not waited for): %s", call.name, reply)
                    else:
                        call.reply = reply
                    if call.done is not None:
                        call.done.set()
                done, batch = batch, []
                for call in done:
                    if call.then is not None and call.error is None:
                        _follow(call.then, call)
        except BaseException as exc:  # killed while sending: no caller waits forever
            for call in batch:
                call.error = BackendUnavailable(f"The request reading from Redis ended: {exc!r}")
                if call.done is not None:
                    call.done.set()
            with self.lock:
                self.sending -= 1
            raise


def _follow(then: t.Callable[[t.Any], None], call: _Call) -> None:
    """Run ``then``, what a post does with its reply; a failure is logged (nobody waits)."""
    try:
        then(call.reply)
    except Exception as exc:
        logger.debug("What follows %s (not waited for) failed: %r", call.name, exc)


class _Carried:
    """The event an inline wake-up carries for many streams, decoded at most once."""

    __slots__ = ("body", "kind", "_message")

    def __init__(self, kind: str, body: str) -> None:
        self.kind, self.body = kind, body
        self._message: t.Any = _UNSET

    def event(self, seq: int) -> Event:
        """Return the event as the stream's ``seq``-th (the streams share its message)."""
        if self._message is _UNSET:
            self._message = loads(self.body) if self.body else None
        return Event(seq, self.kind, self._message)


_UNSET: t.Any = object()


class _Stream:
    """What this process knows of one stream: its readers' events and last answers."""

    __slots__ = ("carried", "known", "spare", "used", "version", "waiters")

    def __init__(self) -> None:
        #: Bumped by every wake-up of the stream.
        self.version = 0
        #: What the last wake-up carried: ``(version, seq, reader token, event)``.
        self.carried: tuple[int, int, str, _Carried] | None = None
        #: The events of the reads waiting now.
        self.waiters: set[Wakeup] = set()
        #: Wake-ups of ended reads, for the next (a read then allocates nothing).
        self.spare: list[Wakeup] = []
        #: Per reader token: ``(after, version, epoch, when)`` of its last "nothing new".
        self.known: dict[int, tuple[int, int, int, float]] = {}
        #: When a read last ended.
        self.used = time.monotonic()


class RedisStreamReader:
    """Wakes the stream readers of this process when Redis says their stream changed.

    :param run_many: runs the backend's scripts in one round trip (see :data:`RunMany`).
    :param live: tells whether the pub/sub subscription is up (wake-ups arrive).
    :param slots: pipelines in flight at once.
    """

    def __init__(
        self, run_many: RunMany, live: t.Callable[[], bool], *, slots: int = FETCH_SLOTS
    ) -> None:
        #: The questions of this process's readers, sent together.
        self.calls = Batches(run_many, slots)
        self.live = live
        self.lock = threading.Lock()
        #: By the stream's event log key.
        self.streams: dict[str, _Stream] = {}
        #: Bumped by :meth:`wake_all`: every remembered answer becomes stale.
        self.epoch = 0
        #: While Redis is unreachable: when an established reader may ask again.
        self._down_until = 0.0
        #: When Redis was first found unreachable (0: it answers).
        self._down_since = 0.0
        self._next_sweep = 0.0

    def read(
        self, keys: list[str], stream_id: str, after: int, token: int, timeout: float
    ) -> ReadResult:
        """Return the stream's events after ``after``, waiting up to ``timeout`` seconds.

        Empty when none came in time; ``missing`` or ``superseded`` as the
        backend's ``check`` says.

        :param keys: the keys of the ``check`` script; the stream's event log key
            (what the ``P wake`` messages name) is the next to last.
        """
        key = keys[-2]
        with self.lock:
            stream = self.streams.get(key)
            if stream is None:
                stream = self.streams[key] = _Stream()
            woken = stream.spare.pop() if stream.spare else new_wakeup()
            stream.waiters.add(woken)
        deadline = time.monotonic() + timeout
        try:
            while True:
                woken.clear()
                live = self.live()
                version, epoch = stream.version, self.epoch
                known = stream.known.get(token)
                now = time.monotonic()
                carried = stream.carried
                if (
                    live
                    and known is not None
                    and carried is not None
                    and carried[0] == version  # the one wake-up since the last answer
                    and known[:3] == (after, version - 1, epoch)
                    and carried[1] == after + 1  # the next event, for this reader
                    and carried[2] == str(token)
                ):
                    stream.known[token] = (after + 1, version, epoch, now)
                    return ReadResult([carried[3].event(after + 1)])
                if known is None or (
                    known[:3] != (after, version, epoch) or now - known[3] >= REFRESH
                    if live
                    else now >= self._down_until
                ):
                    found = self._ask(keys, stream_id, after, token, known is None)
                    if found is not None:
                        # Nothing after the last of these as of this question: the read
                        # that follows their delivery need not ask again, unless woken.
                        last = found.events[-1].seq if found.events else -1
                        stream.known[token] = (last, version, epoch, time.monotonic())
                        return found
                    if self._down_until == 0.0 or known is None:
                        stream.known[token] = (after, version, epoch, time.monotonic())
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ReadResult([])
                woken.wait(remaining if live else min(remaining, POLL))
        finally:
            with self.lock:
                stream.waiters.discard(woken)
                stream.spare.append(woken)
                stream.used = time.monotonic()
                if not stream.waiters and not stream.known and self.streams.get(key) is stream:
                    del self.streams[key]

    def _ask(
        self, keys: list[str], stream_id: str, after: int, token: int, first: bool
    ) -> ReadResult | None:
        """Ask Redis about the stream; ``None``: nothing new, or Redis is unreachable.

        :raises BackendUnavailable: Redis is unreachable and this is the
            reader's first question, or it has been for :data:`OUTAGE_GRACE`
            seconds (an established reader rides out a short outage, asking
            again every :data:`POLL` seconds; a longer one ends its stream,
            which the client resumes with ``Last-Event-ID``).
        """
        try:
            found = parse_check(self.calls.call("check", keys, stream_id, after, token))
        except BackendUnavailable:
            now = time.monotonic()
            self._down_since = self._down_since or now
            if first or now - self._down_since >= OUTAGE_GRACE:
                raise
            self._down_until = now + POLL
            return None
        self._down_until = self._down_since = 0.0
        return found

    def forget(self, key: str, token: int) -> None:
        """Give back what is kept for the reader ``token`` of the stream logged in ``key``."""
        with self.lock:
            stream = self.streams.get(key)
            if stream is None:
                return
            stream.known.pop(token, None)
            if not stream.waiters and not stream.known:
                del self.streams[key]

    def wake(self, data: bytes | str) -> None:
        """Wake the readers of the stream a ``P wake`` message names (its event log key).

        Several keys may come in one message, one a line.
        """
        text = data.decode() if isinstance(data, bytes) else data
        if text.startswith(INLINE):
            self._wake_inline(text)
            return
        with self.lock:
            for key in text.split("\n"):
                stream = self.streams.get(key)
                if stream is not None:
                    stream.version += 1
                    stream.carried = None
                    for waiter in stream.waiters:
                        waiter.set()

    def _wake_inline(self, text: str) -> None:
        """Wake the readers an :func:`inline_wake` message names, with the event it carries."""
        head, _, rest = text.partition("\n")
        body, _, rest = rest.partition("\n")
        carried = _Carried(head[len(INLINE) :], body)
        streams = self.streams
        with self.lock:
            for line in rest.split("\n"):
                parts = line.rsplit(" ", 2)  # the key may hold spaces
                if len(parts) != 3:
                    parts = [*parts, "", ""][:3]
                key, seq, token = parts
                stream = streams.get(key)
                if stream is not None:
                    stream.version += 1
                    number = int(seq) if seq.isdigit() else -1
                    stream.carried = (stream.version, number, token, carried)
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
        now = time.monotonic() if now is None else now
        if now < self._next_sweep:  # called on every beat: look at most 4 times per period
            return 0
        self._next_sweep = now + FORGET_AFTER / 4
        limit = now - FORGET_AFTER
        gone = 0
        with self.lock:
            for key, stream in list(self.streams.items()):
                if stream.waiters or stream.used >= limit:
                    continue
                gone += len(stream.known)
                del self.streams[key]
        return gone

    def counts(self) -> tuple[int, int]:
        """Return how many streams are known and how many reads wait now."""
        with self.lock:
            return len(self.streams), sum(len(s.waiters) for s in self.streams.values())


def inline_wake(kind: str, body: str, appended: t.Iterable[tuple[str, int, str]]) -> str:
    """Return a ``P wake`` message that carries the event appended to many streams.

    A woken reader that had delivered everything before the event, and is the
    stream's reader the append saw, takes it from the message instead of
    asking Redis; any other asks as after a plain wake-up.

    :param body: the event's message as JSON (one line: JSON escapes newlines).
    :param appended: ``(event log key, sequence number, reader token or '')`` of each stream.
    """
    lines = "\n".join(f"{key} {seq} {token}" for key, seq, token in appended)
    return f"{INLINE}{kind}\n{body}\n{lines}"


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
                loads(reply[i + 2]) if reply[i + 2] else None,
            )
            for i in range(1, len(reply), 3)
        ]
    )


__all__ = [
    "BATCH",
    "FETCH_SLOTS",
    "INLINE",
    "INLINE_MAX",
    "FORGET_AFTER",
    "OUTAGE_GRACE",
    "POLL",
    "REFRESH",
    "Batches",
    "RedisStreamReader",
    "inline_wake",
    "parse_check",
]
