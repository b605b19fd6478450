"""In-process delivery of the request streams a process writes and reads itself.

A ``tools/call`` answered with an event stream is written by the handler the
worker runs and read by the POST response the same worker holds. The events go
to Redis all the same (a client that loses the connection resumes with
``Last-Event-ID``, on any worker), but the reader of this process takes them
from memory instead of asking Redis back. So the stream costs its writes and
nothing else:

- :meth:`OwnStreams.open` notes the stream; nothing goes to Redis yet. It
  opens there with its first write, in the same script that attaches this
  process's reader and appends the event (the ``emit`` script), pipelined with
  the entry of the owned-streams set the sweep reads should this process die.
  A reader that waited a while for a first event opens it on its own (a
  priming event id follows, which a client may resume from).
- The ``emit`` script does not announce the events to the reader whose token
  it is given (this process hands them over itself); it says whether that
  reader still holds the stream. Redis is asked only when a ``P wake`` message
  names the stream (another reader attached, its session ended), while the
  pub/sub connection is down, and every :data:`~.reader.REFRESH` seconds.
- The detach and drop that follow the delivered end wait: they ride on the
  session's next lookup, or the listener writes them within a second, many
  together, with the busy counts of the ledger (see ``Housekeeping.flush``).

Should the process die before a stream's first write, nothing is lost: its
client holds no event id of it yet (the priming event follows the first
events, or the wait after which the reader opens the stream).
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
import typing as t

from ...errors import BackendUnavailable
from ..base import END
from ..base import Event
from ..base import ReadResult
from .batch import Batch
from .codec import dumps as _dumps
from .commands import RedisCommands
from .reader import OUTAGE_GRACE
from .reader import POLL
from .reader import REFRESH
from .reader import RedisStreamReader
from .reader import parse_check

if t.TYPE_CHECKING:
    from .streams import StreamLogs

#: Seconds after which a stream that nobody reads or writes any more is forgotten here.
FORGET_AFTER = 120.0
#: The scripts that give up a stream's reader, or the stream.
DETACH, DROP = "detach", "drop"


def _text(value: t.Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class OwnStream:
    """One request stream this process writes, and the events its reader has not taken."""

    __slots__ = (
        "asked",
        "cond",
        "end_seen",
        "events",
        "gone",
        "keys",
        "left",
        "local_token",
        "opened",
        "reading",
        "rid",
        "sid",
        "st",
        "stale",
        "token",
        "used",
        "write",
    )

    def __init__(self, sid: str, st: str, rid: str, keys: list[str]) -> None:
        self.sid, self.st, self.rid, self.keys = sid, st, rid, keys
        self.cond = threading.Condition()
        #: Held across a write: events reach the reader in the order Redis numbered them.
        self.write = threading.Lock()
        #: Written and not taken by the reader yet (kept until a reader attaches).
        self.events: collections.deque[Event] = collections.deque()
        #: The token handed to this process's reader (0: none yet).
        self.local_token = 0
        #: Whether that reader reads now.
        self.reading = False
        #: The reader's token in Redis ("": not attached there).
        self.token = ""
        #: Whether the stream exists in Redis.
        self.opened = False
        #: The reader must stop: superseded by another, or the stream is gone.
        self.gone: ReadResult | None = None
        #: A wake-up named the stream: ask Redis what changed.
        self.stale = False
        #: When Redis was last asked (or told) about the stream.
        self.asked = 0.0
        #: Whether the reader took the stream's end.
        self.end_seen = False
        #: The reader left before the stream was in Redis: its first write leaves it there.
        self.left = False
        self.used = time.monotonic()


class OwnStreams:
    """The request streams of this process that its own readers read.

    :param commands: the backend's commands.
    :param logs: the backend's stream logs, which settle what a write disowned or evicts.
    :param check: runs the backend's ``check`` script (batched with other readers').
    :param live: tells whether the pub/sub subscription is up (wake-ups arrive).
    """

    def __init__(
        self,
        commands: RedisCommands,
        logs: StreamLogs,
        check: t.Callable[..., t.Any],
        live: t.Callable[[], bool],
    ) -> None:
        self.commands = commands
        self.logs = logs
        self.check = check
        self.live = live
        self.lock = threading.Lock()
        self.streams: dict[tuple[str, str], OwnStream] = {}
        #: By the stream's event log key (what ``P wake`` messages name).
        self.by_key: dict[str, OwnStream] = {}
        #: Per session: the detaches and drops to write, ``(script, stream, token)``.
        self.later: dict[str, dict[str, tuple[str, str]]] = {}
        self._tokens = itertools.count(-1, -1)
        self._next_sweep = 0.0
        #: When Redis was first found unreachable by a write or a question (0: it answers),
        #: and last found so.
        self._down_since = self._down_last = 0.0

    # -- the writer ------------------------------------------------------------

    def open(self, sid: str, st: str, request_id: str) -> None:
        """Note a request stream this process writes; Redis hears of it with its first write."""
        entry = OwnStream(sid, st, request_id, self.commands.stream_keys(sid, st))
        with self.lock:
            self.streams[(sid, st)] = entry
            self.by_key[entry.keys[-2]] = entry

    def get(self, sid: str, st: str) -> OwnStream | None:
        """The stream ``st`` of ``sid`` if this process writes it."""
        return self.streams.get((sid, st))

    def write(
        self,
        entry: OwnStream,
        events: t.Sequence[tuple[str, dict[str, t.Any] | None]],
        write_id: str,
    ) -> list[int]:
        """Append ``(kind, message)`` events (opening the stream first if new), as the write
        ``write_id`` (the same write sent again appends nothing: see ``repeated`` in
        ``session.lua``); return their sequence numbers. This process's reader gets them
        without asking Redis."""
        with entry.write:
            return self._emit(entry, events, attach=entry.reading and not entry.token, wid=write_id)

    def _emit(
        self,
        entry: OwnStream,
        events: t.Sequence[tuple[str, dict[str, t.Any] | None]],
        attach: bool,
        wid: str = "",
    ) -> list[int]:
        commands, opening = self.commands, not entry.opened
        args: list[t.Any] = [
            entry.st,
            entry.rid,
            "1" if attach else "0",
            entry.token,
            "1" if entry.left else "0",
            wid,
        ]
        for kind, message in events:
            args += [kind, "" if message is None else _dumps(message)]
        batch = commands.batch()
        index = batch.script("emit", entry.keys, *args)
        if opening:  # for the sweep, should this process die
            batch.command("SADD", commands.owned(), f"{entry.sid} {entry.st}")
        try:
            reply = commands.send(batch)[index]
        except BackendUnavailable:
            # The reader waits for what could not be written (an answer kept for later,
            # say): wake it, so that it counts the outage from now (see read).
            self._unreachable()
            with entry.cond:
                entry.cond.notify_all()
            raise
        self._down_since = 0.0
        entry.opened = True
        entry.left = False
        entry.used = time.monotonic()
        if not reply:  # the session is gone
            with entry.cond:
                entry.gone = ReadResult([], missing=True)
                entry.cond.notify_all()
            return [0] * len(events)
        count = int(reply[3])
        seqs = [int(s) for s in reply[4 : 4 + count]]
        # {token, held, victim, count, seq..., owner, stream...}
        self.logs.settle(entry.sid, seqs[-1] if seqs else 0, _text(reply[2]), reply[4 + count :])
        with entry.cond:
            if attach:
                entry.token, entry.asked = _text(reply[0]), time.monotonic()
            if entry.reading and entry.token and not int(reply[1]):
                entry.gone = entry.gone or ReadResult([], superseded=True)
            elif entry.reading or not entry.local_token:  # a reader takes them, or will
                entry.events.extend(
                    Event(seq, kind, message)
                    for seq, (kind, message) in zip(seqs, events, strict=True)
                )
            entry.cond.notify_all()
        return seqs

    def write_many(
        self,
        items: t.Sequence[tuple[str, str, str, dict[str, t.Any] | None]],
        write_ids: t.Sequence[str],
    ) -> tuple[list[int], list[int]]:
        """Write the ``(session_id, stream_id, kind, message)`` events of streams this process
        writes, one write per stream (named by its first event's id in ``write_ids``);
        return the sequence numbers (0 for the others) and the indexes of the others."""
        seqs = [0] * len(items)
        mine: dict[OwnStream, list[int]] = {}
        rest: list[int] = []
        for i, (sid, st, _, _) in enumerate(items):
            entry = self.streams.get((sid, st))
            if entry is None:
                rest.append(i)
            else:
                mine.setdefault(entry, []).append(i)
        for entry, indexes in mine.items():
            events = [(items[i][2], items[i][3]) for i in indexes]
            written = self.write(entry, events, write_ids[indexes[0]])
            for i, seq in zip(indexes, written, strict=True):
                seqs[i] = seq
        return seqs, rest

    # -- the reader ------------------------------------------------------------

    def attach(self, sid: str, st: str) -> int | None:
        """Hand the stream's first reader of this process a token of its own; ``None``: not
        such a stream or reader (attach in Redis)."""
        entry = self.streams.get((sid, st))
        if entry is None:
            return None
        with entry.cond:
            if entry.local_token:
                return None
            entry.local_token = next(self._tokens)
            entry.reading = True
            entry.used = time.monotonic()
            return entry.local_token

    def reads(self, sid: str, st: str, token: int) -> OwnStream | None:
        """The stream if ``token`` is its local reader's."""
        entry = self.streams.get((sid, st))
        if entry is None or token >= 0 or entry.local_token != token:
            return None
        return entry

    def read(self, entry: OwnStream, after: int, timeout: float) -> ReadResult:
        """Return the events after ``after``, waiting up to ``timeout`` seconds.

        While Redis is unreachable (a write failed, or the pub/sub connection is
        down) the reader asks it every :data:`~.reader.POLL` seconds; once it has
        been unreachable for :data:`~.reader.OUTAGE_GRACE` seconds the stream ends
        here, as the streams read from Redis do: what the handler sends meanwhile
        (its answer, kept in this process) is written once Redis is back, and the
        client resumes with ``Last-Event-ID`` to read it.

        :raises BackendUnavailable: opening the stream, or attaching the reader, failed;
            or Redis has been unreachable for :data:`~.reader.OUTAGE_GRACE` seconds.
        """
        deadline = time.monotonic() + timeout
        if entry.opened and not entry.token:
            # Written before the reader came: attach now, unless all of it is here already.
            with entry.cond:
                whole = any(e.kind == END for e in entry.events)
            if not whole:
                with entry.write:
                    if not entry.token:
                        self._emit(entry, (), attach=True)
        while True:
            with entry.cond:
                now = entry.used = time.monotonic()
                if entry.gone is not None:
                    return entry.gone
                while entry.events and entry.events[0].seq <= after:
                    entry.events.popleft()
                if entry.events:
                    events = list(entry.events)
                    entry.end_seen = entry.end_seen or any(e.kind == END for e in events)
                    return ReadResult(events)
                live = self.live() and not self._down_since
                since = now - entry.asked
                ask = bool(entry.token) and (entry.stale or since >= (REFRESH if live else POLL))
                if not ask:
                    remaining = deadline - now
                    if remaining <= 0:
                        break
                    entry.cond.wait(remaining if live else min(remaining, POLL))
                    continue
                entry.stale, entry.asked = False, now
            found = self._ask(entry, after)
            if found is not None:
                if found.superseded or found.missing:
                    with entry.cond:
                        entry.gone = found
                if found.events:
                    entry.end_seen = entry.end_seen or any(e.kind == END for e in found.events)
                return found
        if not entry.opened:  # silent so far: open it, so that a client may resume it
            with entry.write:
                if not entry.opened:
                    self._emit(entry, (), attach=True)
        return ReadResult([])

    def _ask(self, entry: OwnStream, after: int) -> ReadResult | None:
        """Ask Redis what changed; ``None``: nothing, or it did not answer (ask again in
        :data:`~.reader.POLL` seconds).

        :raises BackendUnavailable: Redis has been unreachable for
            :data:`~.reader.OUTAGE_GRACE` seconds (a short outage is ridden out).
        """
        try:
            found = parse_check(self.check("check", entry.keys, entry.st, after, entry.token))
        except BackendUnavailable:
            if self._unreachable() >= OUTAGE_GRACE:
                raise
            with entry.cond:
                entry.asked = time.monotonic()
            return None
        self._down_since = 0.0
        return found

    def _unreachable(self) -> float:
        """Note that Redis did not answer; return for how long it has not (this outage).

        A failure :data:`~.reader.REFRESH` seconds after the last one, with no answer
        seen between them, starts a new outage: nothing asked meanwhile.
        """
        now = time.monotonic()
        if not self._down_since or now - self._down_last > REFRESH:
            self._down_since = now
        self._down_last = now
        return now - self._down_since

    def wake(self, data: bytes | str) -> None:
        """A ``P wake`` message named these event logs (one a line): ask Redis on next read."""
        keys = _text(data).split("\n")
        with self.lock:
            found = [self.by_key[k] for k in keys if k in self.by_key]
        for entry in found:
            with entry.cond:
                entry.stale = True
                entry.cond.notify_all()

    def wake_all(self) -> None:
        """Wake-ups may have been lost: every reader asks Redis (which answers again)."""
        self._down_since = 0.0
        with self.lock:
            found = list(self.streams.values())
        for entry in found:
            with entry.cond:
                entry.stale = True
                entry.cond.notify_all()

    def detach(self, sid: str, st: str, token: int) -> str | None:
        """The local reader ``token`` leaves; return its Redis token to detach now ("": none).

        ``None``: not a local reader. After the end the detach waits (the drop that
        follows replaces it). A reader that never attached in Redis leaves the stream
        there all the same, as every backend counts a stream its client left (see
        :meth:`~flask_mcp.backends.base.Backend.detach`): with its first write when the
        stream is not there yet, else by a detach without a token, which waits too.
        """
        entry = self.reads(sid, st, token)
        if entry is None:
            return None
        # Under the write lock no write is half done: the stream is in Redis, or not yet.
        with entry.write, entry.cond:
            entry.reading = False
            entry.events.clear()
            redis_token, entry.token = entry.token, ""
            entry.left = not redis_token and not entry.opened
            opened = entry.opened
        if redis_token and entry.end_seen:
            self._queue(sid, st, DETACH, redis_token)
            return ""
        if not redis_token and opened:
            self._queue(sid, st, DETACH, "")
        return redis_token

    def drop(self, sid: str, st: str) -> bool:
        """Forget the stream here and drop it in Redis later; ``False``: not such a stream."""
        with self.lock:
            entry = self.streams.pop((sid, st), None)
            if entry is None:
                return False
            self.by_key.pop(entry.keys[-2], None)
        if entry.opened:
            self._queue(sid, st, DROP, "")
        return True

    # -- what waits ------------------------------------------------------------

    def _queue(self, sid: str, st: str, script: str, token: str) -> None:
        with self.lock:
            ops = self.later.setdefault(sid, {})
            if ops.get(st, ("",))[0] != DROP:
                ops[st] = (script, token)

    @property
    def pending(self) -> bool:
        """Whether detaches or drops wait to be written."""
        return bool(self.later)

    def take(self, sid: str | None = None) -> dict[str, dict[str, tuple[str, str]]]:
        """Remove and return what waits: for session ``sid``, or everything."""
        with self.lock:
            if sid is None:
                later, self.later = self.later, {}
                return later
            ops = self.later.pop(sid, None)
            return {sid: ops} if ops else {}

    def queue_into(self, batch: Batch, later: dict[str, dict[str, tuple[str, str]]]) -> None:
        """Add the detaches and drops in ``later`` to ``batch``."""
        for sid, ops in later.items():
            for st, (script, token) in ops.items():
                args = (st, token) if script == DETACH else (st,)
                batch.script(script, self.commands.stream_keys(sid, st), *args)

    def give_back(self, later: dict[str, dict[str, tuple[str, str]]]) -> None:
        """Keep what could not be written, for the next try."""
        with self.lock:
            for sid, ops in later.items():
                mine = self.later.setdefault(sid, {})
                for st, op in ops.items():
                    mine.setdefault(st, op)

    def settled(
        self, later: dict[str, dict[str, tuple[str, str]]], replies: t.Sequence[t.Any]
    ) -> None:
        """Handle the replies of what :meth:`queue_into` queued (the first of ``replies``)."""
        i = 0
        for sid, ops in later.items():
            for st, (script, _) in ops.items():
                self.logs.settle_reply(sid, replies[i], st if script == DETACH else "")
                i += 1

    def sweep(self, now: float | None = None) -> int:
        """Forget the streams nobody has read or written for :data:`FORGET_AFTER` seconds
        (a request that failed before its reader came); return how many."""
        now = time.monotonic() if now is None else now
        if now < self._next_sweep:
            return 0
        self._next_sweep = now + FORGET_AFTER / 4
        with self.lock:
            old = [k for k, e in self.streams.items() if now - e.used > FORGET_AFTER]
            for key in old:
                entry = self.streams.pop(key)
                self.by_key.pop(entry.keys[-2], None)
        return len(old)


class ProcessStreamReader(RedisStreamReader):
    """The stream reader of this process: the streams in Redis, whose wake-ups also reach
    the streams this process writes and reads itself (:class:`OwnStreams`)."""

    local: OwnStreams | None = None

    def wake(self, data: bytes | str) -> None:  # noqa: D102 (see RedisStreamReader.wake)
        super().wake(data)
        if self.local is not None:
            self.local.wake(data)

    def wake_all(self) -> None:  # noqa: D102 (see RedisStreamReader.wake_all)
        super().wake_all()
        if self.local is not None:
            self.local.wake_all()


__all__ = ["FORGET_AFTER", "OwnStream", "OwnStreams", "ProcessStreamReader"]
