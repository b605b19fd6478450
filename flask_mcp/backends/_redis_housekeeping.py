"""The Redis backend's work across sessions: admission, reaping, the sweep, the ledger.

What changes a session's keys and the keys every worker shares (``{g}``) runs
as separate commands, never in one script, so that every script stays in one
Redis Cluster slot: the session's part first, then the shared indexes, each
group of independent commands pipelined (see :class:`~._redis_batch.Batch`).
"""

from __future__ import annotations

import collections.abc as cabc
import logging
import time
import typing as t

import redis

from ..errors import BackendUnavailable
from ._redis_batch import Batch
from ._redis_batch import Ledger
from ._redis_batch import runs
from ._redis_batch import spread
from ._redis_codec import dumps as _dumps
from ._redis_hot import HotSessions
from ._redis_keys import Keys
from ._redis_lane import Lane
from ._redis_listener import text
from ._redis_local import LocalStreams
from ._redis_pool import trim
from ._redis_reader import INLINE_MAX
from ._redis_reader import inline_wake
from .base import GENERAL_STREAM

logger = logging.getLogger("flask_mcp")
#: Events per pipeline of :meth:`Housekeeping.append_many`.
CHUNK = 1000


class Housekeeping:
    """Mixed into :class:`~flask_mcp.backends.redis.RedisBackend`."""

    keys: Keys
    client: t.Any
    cluster: bool
    _blocking: t.Any
    _lane: Lane | None
    _scripts: dict[str, t.Any]
    idle_timeout: float | None
    max_lifetime: float | None
    grace: int
    buffer_size: int
    worker_timeout: float
    _ledger: Ledger
    _hot: HotSessions
    _local: LocalStreams
    _disowned: dict[str, set[str]]
    _registered: tuple[float, str]

    @property
    def worker(self) -> str:
        raise NotImplementedError

    def _errors(self) -> t.ContextManager[None]:
        raise NotImplementedError

    def _head(self) -> tuple[t.Any, ...]:
        return (
            self.idle_timeout or 0,
            self.max_lifetime or 0,
            self.grace,
            self.worker,
            self.buffer_size,
            self.worker_timeout,
        )

    def _sha(self, name: str) -> str:
        return t.cast(str, self._scripts[name].sha)

    def _run(self, name: str, keys: list[str], *args: t.Any) -> t.Any:
        script = self._scripts[name]
        send = self.client.execute_command if self._lane is None else self._lane.execute
        with self._errors():
            try:  # EVALSHA straight away: fewer layers than redis-py's Script
                return send("EVALSHA", script.sha, len(keys), *keys, *self._head(), *args)
            except redis.exceptions.NoScriptError:  # a new or restarted Redis: load, run
                return script(keys=keys, args=[*self._head(), *args])

    def _batch(self) -> Batch:
        return Batch(self)

    def _send(self, batch: Batch) -> list[t.Any]:
        with self._errors():
            return batch.run()

    def _trim(self) -> None:
        if self._lane is not None:
            self._lane.trim()  # first: what it gives back, the pool may close
        trim(self.client, self._blocking)

    def _stream(self, sid: str, st: str) -> list[str]:
        return [*self.keys.session(sid), *self.keys.stream(sid, st)]

    # -- helpers -------------------------------------------------------------

    def _run_counted(self, name: str, keys: list[str], *args: t.Any) -> t.Any:
        """Run a script that may count a request of this worker: register the worker first
        (in the same round trip) unless it beat recently, so that no reaper takes the
        count for a dead worker's."""
        if self._fresh():
            return self._run(name, keys, *args)
        batch = self._batch()
        index, registering = self._counted(batch, name, keys, *args)
        reply = self._send(batch)[index]
        if registering:
            self._registered_now()
        return reply

    def _fresh(self) -> bool:
        """Whether this worker beat recently enough to count requests without registering."""
        fresh_until, worker = self._registered
        return worker == self.worker and time.monotonic() < fresh_until

    def _counted(self, batch: Batch, name: str, keys: list[str], *args: t.Any) -> tuple[int, bool]:
        """Queue :meth:`_run_counted`'s script in ``batch``, after the worker's registration
        unless it is fresh; return the script's index and whether it registers (then call
        :meth:`_registered_now` once the batch ran)."""
        registering = not self._fresh()
        if registering:
            batch.script("register", [self.keys.workers])
        return batch.script(name, keys, *args), registering

    def _load(self, sid: str) -> t.Any:
        """Count a request of ``sid`` ahead and return its hash (field, value, ...): one round
        trip, with what the ledger owes for it and its streams' detaches and drops."""
        keys = self.keys.session(sid)
        owed = self._ledger.take(sid)
        later = self._local.take(sid)  # detaches and drops ride along
        try:
            if not later:
                return self._run_counted("load", keys, 1 + owed)
            batch = self._batch()
            self._local.queue_into(batch, later)
            index, registering = self._counted(batch, "load", keys, 1 + owed)
            replies = self._send(batch)
            if registering:
                self._registered_now()
            self._local.settled(later, replies)
            return replies[index]
        except BackendUnavailable:
            self._ledger.owe(sid, owed)
            self._local.give_back(later)
            raise

    def _registered_now(self) -> None:
        self._registered = (time.monotonic() + self.worker_timeout / 4, self.worker)

    def append_many(
        self, events: cabc.Iterable[tuple[str, str, str, dict[str, t.Any] | None]]
    ) -> list[int]:
        """Append ``(session_id, stream_id, kind, message)`` events, pipelined: one round
        trip per :data:`CHUNK` events (per node of a cluster), then the wake-ups. On one
        Redis, a broadcast's events go :data:`~._redis_batch.GROUP` sessions to a script.

        The events of a chunk that share their message (a broadcast) are announced
        together in one wake-up message that carries the event (see
        :func:`~._redis_reader.inline_wake`): their readers need not fetch it.
        """
        items, seqs = list(events), []
        bodies: dict[int, str] = {}  # a broadcast's one message is encoded once
        for start in range(0, len(items), CHUNK):
            batch, chunk = self._batch(), items[start : start + CHUNK]
            logs, sent, keyed = [], [], []
            for sid, st, kind, message in chunk:
                if message is None:
                    body = ""
                else:
                    body = bodies.get(id(message)) or bodies.setdefault(
                        id(message), _dumps(message)
                    )
                keys = self._stream(sid, st)
                keyed.append(keys)
                logs.append(keys[-2])
                sent.append((kind, body))
            where = self._queue_appends(batch, [item[1] for item in chunk], keyed, sent)
            replies = spread(self._send(batch), where)
            # After the appends (not in their pipeline): each announces its sequence number.
            groups: dict[tuple[str, str], list[tuple[str, int, str]]] = {}
            for log, what, reply in zip(logs, sent, replies, strict=True):
                if int(reply[0]):
                    groups.setdefault(what, []).append((log, int(reply[0]), text(reply[2])))
            wake, channel = self._batch(), f"{self.keys.prefix}wake"
            for (kind, body), appended in groups.items():
                if len(body) <= INLINE_MAX:
                    wake.command("PUBLISH", channel, inline_wake(kind, body, appended))
                else:
                    wake.command("PUBLISH", channel, "\n".join(log for log, *_ in appended))
            self._send(wake)
            seqs += [self._appended(item[0], r) for item, r in zip(chunk, replies, strict=True)]
        return seqs

    def _queue_appends(
        self,
        batch: Batch,
        streams: list[str],
        keyed: list[list[str]],
        sent: list[tuple[str, str]],
    ) -> list[tuple[int, int | None]]:
        """Queue the appends of :meth:`append_many` (each event's stream id, keys and
        ``(kind, body)``); return where each reply will be (see :func:`~._redis_batch.spread`).

        On one Redis, the events of general streams that follow each other with the same
        message (a broadcast) go :data:`~._redis_batch.GROUP` sessions to a script.
        """

        def joins(first: int, other: int) -> bool:
            return (
                not self.cluster
                and streams[first] == streams[other] == GENERAL_STREAM
                and sent[other] == sent[first]
            )

        where: list[tuple[int, int | None]] = []
        for start, end in runs(len(streams), joins):
            if end - start == 1:
                args = (streams[start], *sent[start], "1")
                where.append((batch.script("append", keyed[start], *args), None))
            else:
                keys = [k for each in keyed[start:end] for k in each[:5]]  # no x:g, z:g again
                index = batch.script("append_all", keys, *sent[start])
                where += [(index, n) for n in range(end - start)]
        return where

    def _appended(self, session_id: str, reply: t.Any) -> int:
        """Handle an append's reply: note disowned streams, evict from other streams."""
        self._disown(session_id, reply[3:])
        victim = text(reply[1])
        while victim:  # the session's oldest message is on another stream: evict it there
            found = self._run("evict", self._stream(session_id, victim), victim)
            self._disown(session_id, found[2:])
            victim = text(found[1])
        return int(reply[0])

    def _forget(self, batch: Batch, sid: str, streams: t.Sequence[t.Any]) -> None:
        """Queue what follows the end of a session's keys: end its streams' logs, wake their
        readers, take it out of the shared indexes. ``streams``: stream id, owner pairs."""
        for i in range(0, len(streams) - 1, 2):
            st, owner = text(streams[i]), text(streams[i + 1])
            x, z = self.keys.stream(sid, st)
            batch.command("DEL", x)
            batch.command("XADD", z, "MAXLEN", "1", "*", "t", "1")
            batch.command("EXPIRE", z, 60)
            batch.command("PUBLISH", f"{self.keys.prefix}wake", x)  # the stream readers
            if owner:
                batch.command("SREM", self.keys.owned(owner), f"{sid} {st}")
        batch.command("ZREM", self.keys.seen, sid)
        batch.command("ZREM", self.keys.born, sid)

    def _disown(self, sid: str, owners: t.Sequence[t.Any]) -> None:
        """Note streams that lost their owner (owner, stream pairs); the beat writes them."""
        for i in range(0, len(owners) - 1, 2):
            member = f"{sid} {text(owners[i + 1])}"
            self._disowned.setdefault(text(owners[i]), set()).add(member)

    @property
    def pending(self) -> bool:
        """Whether busy counts, stream detaches or drops wait to be written."""
        return self._ledger.pending or self._local.pending

    def flush(self, everything: bool = False) -> None:
        """Write, in one pipeline, the busy counts the ledger owes and the detaches and drops
        that wait (:mod:`~._redis_local`); kept while Redis is unreachable.

        :param everything: also give back the counts taken ahead and not claimed yet.
        """
        due = self._ledger.due(everything)
        later = self._local.take()
        if not due and not later:
            return
        batch = self._batch()
        self._local.queue_into(batch, later)
        touched = {
            sid: batch.script("touch", self.keys.session(sid), delta) for sid, delta in due.items()
        }
        asked = time.monotonic()
        try:
            replies = self._send(batch)
        except BackendUnavailable:
            self._ledger.give_back(due)
            self._local.give_back(later)
            raise
        self._local.settled(later, replies)
        for sid, index in touched.items():  # whether each session still exists
            self._hot.confirm(sid, bool(int(replies[index])), asked)

    def beat(self) -> None:
        """Mark this process alive, end the streams of dead ones, settle unsaved counts."""
        self._sweep(self._run("beat", [self.keys.workers, self.keys.alive]))
        self._registered = (time.monotonic() + self.worker_timeout / 4, self.worker)
        self._trim()  # give back the connections a past peak left idle
        batch = self._batch()
        owned = self.keys.owned(self.worker)
        batch.command("EXPIRE", owned, 86400)
        disowned, self._disowned = self._disowned, {}
        for worker, members in disowned.items():
            batch.command("SREM", self.keys.owned(worker), *members)
        try:
            self._send(batch)
        except BackendUnavailable:
            for worker, members in disowned.items():
                self._disowned.setdefault(worker, set()).update(members)
            raise
        self.flush(everything=False)

    # -- admission -------------------------------------------------------------

    def _admit(
        self, sid: str, limit: int, hs: float, owner: str | None, quota: int, fields: list[str]
    ) -> int:
        """Store a session, then admit it into the shared indexes: 1, 0 (full) or 2 (quota)."""
        now, secs = self._run("create", self.keys.session(sid), hs, *fields)
        own = self.keys.own(owner or "")
        quota = quota if owner else 0
        verdict = "ok"
        for _ in range(2):
            shared = [self.keys.seen, self.keys.born, self.keys.hs, own]
            reply = self._run("admit", shared, sid, text(now), limit, hs, quota, int(secs))
            verdict, count = text(reply[0]), int(reply[1])
            freed = self._drop_uninitialized([text(s) for s in reply[2 : 2 + count]])
            if verdict == "ok":
                return 1
            candidates = [text(s) for s in reply[2 + count :]]
            freed += self._prune(candidates, own if verdict == "quota" else None)
            if not freed:
                break
        batch = self._batch()  # refused: take the stored session back
        batch.command("DEL", *self.keys.session(sid))
        self._send(batch)
        return 2 if verdict == "quota" else 0

    def _drop_uninitialized(self, sids: list[str]) -> int:
        """End the sessions among ``sids`` that never finished their handshake."""
        if not sids:
            return 0
        batch = self._batch()
        for sid in sids:
            batch.script("drop_uninitialized", self.keys.session(sid))
        cleanup, dropped = self._batch(), 0
        for sid, reply in zip(sids, self._send(batch), strict=True):
            if int(reply[0]):
                dropped += 1
                self._forget(cleanup, sid, reply[1:])
        self._send(cleanup)
        return dropped

    def _prune(self, sids: list[str], own: str | None) -> int:
        """Take the sessions among ``sids`` that no longer exist out of the indexes."""
        batch = self._batch()
        for sid in sids:
            batch.command("EXISTS", self.keys.record(sid))
        gone = [sid for sid, found in zip(sids, self._send(batch), strict=True) if not found]
        for sid in gone:
            batch.script("delete", self.keys.session(sid))
        cleanup = self._batch()
        for sid, reply in zip(gone, self._send(batch), strict=True):
            self._forget(cleanup, sid, reply[1:])
            if own is not None:
                cleanup.command("ZREM", own, sid)
        self._send(cleanup)
        return len(gone)

    # -- reaping and the sweep ---------------------------------------------

    def _reap(self, batch_size: int) -> list[tuple[str, str]]:
        """End the sessions past their limits unless a live worker runs a request of them."""
        shared = [self.keys.workers, self.keys.born, self.keys.seen, self.keys.reaping]
        reply = self._run("stale", shared, batch_size)
        count = int(reply[0])
        live = [text(w) for w in reply[1 : 1 + count]]
        rest = reply[1 + count :]
        candidates = [(text(rest[i]), text(rest[i + 1])) for i in range(0, len(rest) - 1, 2)]
        if not candidates:
            return []
        batch = self._batch()
        for sid, reason in candidates:
            batch.script("judge", self.keys.session(sid), reason, *live)
        found: list[tuple[str, str]] = []
        cleanup = self._batch()
        for (sid, _), verdict in zip(candidates, self._send(batch), strict=True):
            kind = text(verdict[0])
            if kind in ("busy", "keep"):  # the index lags the record: catch up
                cleanup.command("ZADD", self.keys.seen, "XX", text(verdict[1]), sid)
            else:
                found.append((sid, kind))
                self._forget(cleanup, sid, verdict[2:])
        cleanup.command("ZREM", self.keys.reaping, *[sid for sid, _ in candidates])
        self._send(cleanup)
        return found

    def _sweep(self, dead: t.Sequence[t.Any]) -> int:
        """End the running request streams of dead workers, each with an error answer."""
        workers = [text(w) for w in dead if text(w) != self.worker]
        if not workers:
            return 0
        batch = self._batch()
        for worker in workers:
            batch.command("SMEMBERS", self.keys.owned(worker))
        ends = self._batch()
        for worker, members in zip(workers, self._send(batch), strict=True):
            for member in members:
                sid, _, st = text(member).partition(" ")
                if st:
                    keys = [*self.keys.session(sid), *self.keys.stream(sid, st)]
                    ends.script("orphan", keys, worker, st)
        ended = sum(int(r) for r in self._send(ends))
        for worker in workers:
            batch.command("ZREM", self.keys.workers, worker)
            batch.command("DEL", self.keys.owned(worker))
        self._send(batch)
        return ended


__all__ = ["Housekeeping"]
