"""Task records in Redis, so that any worker serves any task.

Keys (``P`` is the backend's prefix; see :mod:`flask_mcp.backends.redis.keys`):

- ``P{<id>}:task``: the record, one JSON string, expiring with the task's TTL, tagged by
  the task id (one cluster slot per task);
- ``P{g}:tasks:live``: a sorted set of the ids of tasks not known to have ended, by
  creation time (the lease sweep reads it a batch at a time, from a cursor that moves on
  through it, and drops the ids of tasks that ended or expired);
- ``P{g}:tasks:<owner>``: a sorted set of the owner's task ids by creation time
  (``tasks/list``), trimmed of ids whose record expired;
- ``P{g}:tasks:caller:<caller>`` and ``P{g}:taskbytes:<caller>``: the ids and sizes of the
  records a caller (its principal, else its address) keeps, for the per-caller bounds.

Reading many records is one pipeline of ``GET`` (records live in different slots).

Changes are optimistic transactions (``WATCH``, read, ``MULTI``/``SET ...
KEEPTTL``/``EXEC``, retried when another worker changed the record between),
so that the task logic stays in Python, in one place.
"""

from __future__ import annotations

import contextlib
import time
import typing as t

import redis

from ...errors import BackendUnavailable
from ..task_store import TERMINAL
from ..task_store import Mutator
from ..task_store import TaskQuotaExceeded
from ..task_store import TaskStore
from ..task_store import caller_of
from ..task_store import encoded
from ..task_store import kept_for
from .codec import UNAVAILABLE as _UNAVAILABLE
from .codec import loads
from .codec import text
from .commands import RedisCommands

#: Retries of a change that keeps losing the race against other workers.
_ATTEMPTS = 50


class RedisTaskStore(TaskStore):
    """Task records in Redis.

    :param commands: the backend's commands (its client, key names and scripts).
    """

    def __init__(self, commands: RedisCommands) -> None:
        self.commands = commands
        self.client = commands.client
        self.keys = commands.keys
        self.prefix = commands.keys.prefix

    def _key(self, task_id: str) -> str:
        return self.keys.task(task_id)

    def _live_index(self) -> str:
        return self.keys.tasks("live")

    def _index(self, owner: str) -> str:
        return self.keys.tasks(owner)

    def _get_many(self, ids: list[str]) -> list[t.Any]:
        pipe = self.client.pipeline(transaction=False)
        for task_id in ids:
            pipe.get(self._key(task_id))
        return list(pipe.execute())

    def _counted(self, caller: str) -> str:
        """The sorted set of the task ids counted against ``caller``'s bounds."""
        return self.keys.tasks(f"caller:{caller}")

    def _forget_expired(self, caller: str) -> None:
        """Take the ids of ``caller``'s expired records out of its per-caller counts.

        An entry is forgotten only when its record is gone: a record another worker
        creates meanwhile is written before it enters both indexes in one script, and
        one found in either index here is kept, never dropped, while its record exists.
        """
        index, sizes = self._counted(caller), self.keys.task_sizes(caller)
        pipe = self.client.pipeline(transaction=False)
        pipe.zrange(index, 0, -1)
        pipe.hkeys(sizes)
        raw_ids, sized = pipe.execute()
        ids = list(dict.fromkeys(text(i) for i in [*raw_ids, *sized]))
        if not ids:
            return
        pipe = self.client.pipeline(transaction=False)
        for task_id in ids:
            pipe.exists(self._key(task_id))
        gone = [i for i, there in zip(ids, pipe.execute(), strict=True) if not there]
        if gone:
            with contextlib.suppress(*_UNAVAILABLE):
                self.client.zrem(index, *gone)
                self.client.hdel(sizes, *gone)

    def create(self, record: dict[str, t.Any], ttl: float | None) -> None:
        """Store a new record (see :meth:`TaskStore.create`).

        The record is written first, then counted against its caller's bounds by one
        script (``task_count``) that checks and counts at once, so that workers creating
        tasks of one caller together cannot all pass the check; a refused record is
        deleted again. Until it is counted, nobody can know its id.
        """
        task_id, key, data = record["taskId"], self._key(record["taskId"]), encoded(record)
        owner, caller, limits = record.get("owner"), caller_of(record), self.limits
        created = record.get("created", time.time())
        with self.commands.errors():
            first = self.client.pipeline(transaction=False)
            if ttl is None:
                first.set(key, data)
            else:
                first.set(key, data, px=max(1, int(ttl * 1000)))
            first.execute()
            if isinstance(caller, str):  # the per-caller bounds
                if limits.max_records or limits.max_bytes:
                    self._forget_expired(caller)
                counted = [self._counted(caller), self.keys.task_sizes(caller)]
                most, most_bytes = limits.max_records or 0, limits.max_bytes or 0
                secs = 0 if ttl is None else int(ttl) + 60
                verdict = self.commands.run(
                    "task_count", counted, task_id, created, len(data), most, most_bytes, secs
                )
                bound, held = text(verdict[0]), int(verdict[1])
                if bound != "ok":
                    self.client.delete(key)
                    most = most if bound == "records" else most_bytes
                    raise TaskQuotaExceeded(bound, most, held, len(data))
            pipe = self.client.pipeline()
            pipe.zadd(self._live_index(), {task_id: created})
            if isinstance(owner, str):  # tasks/list of the owner
                index = self._index(owner)
                pipe.zadd(index, {task_id: created})
                if ttl is not None:
                    # Keep it as long as its longest-lived task (EXPIRE GT needs Redis 7).
                    pipe.expire(index, max(int(ttl) + 60, int(self.client.ttl(index) or 0)))
            pipe.execute()

    def discard(self, record: dict[str, t.Any]) -> None:
        """Remove what a :meth:`create` of ``record`` that raised may have written (see
        :meth:`TaskStore.discard`): the record, its ids in the live and owner indexes and
        its entry in its caller's counts; one pipeline, each part harmless when not there."""
        task_id, owner, caller = record["taskId"], record.get("owner"), caller_of(record)
        pipe = self.client.pipeline(transaction=False)
        pipe.delete(self._key(task_id))
        pipe.zrem(self._live_index(), task_id)
        if isinstance(owner, str):
            pipe.zrem(self._index(owner), task_id)
        if isinstance(caller, str):
            pipe.zrem(self._counted(caller), task_id)
            pipe.hdel(self.keys.task_sizes(caller), task_id)
        with self.commands.errors():
            pipe.execute()

    def get(self, task_id: str) -> dict[str, t.Any] | None:
        with self.commands.errors():
            raw = self.client.get(self._key(task_id))
        return None if raw is None else t.cast("dict[str, t.Any]", loads(raw))

    def mutate(self, task_id: str, change: Mutator) -> dict[str, t.Any] | None:
        key = self._key(task_id)
        with self.commands.errors(), self.client.pipeline(transaction=True) as pipe:
            for _ in range(_ATTEMPTS):
                data = None
                try:
                    pipe.watch(key)
                    raw = pipe.get(key)
                    if raw is None:
                        pipe.unwatch()
                        return None
                    record = t.cast("dict[str, t.Any]", loads(raw))
                    if not change(record):
                        pipe.unwatch()
                        return record
                    data, shorter = kept_for(record, encoded(record), self.limits)
                    self._check_growth(record, task_id, len(data), len(raw), pipe)
                    px = None if shorter is None else max(1, int(shorter * 1000))
                    left = None if px is None else int(self.client.pttl(key))
                    pipe.multi()
                    if px is not None and left is not None and (left < 0 or left > px):
                        pipe.set(key, data, px=px, xx=True)
                    else:
                        pipe.set(key, data, keepttl=True, xx=True)
                    pipe.execute()
                    caller = caller_of(record)
                    if isinstance(caller, str) and len(data) != len(raw):
                        # another slot than the record's: after its transaction
                        self.client.hset(self.keys.task_sizes(caller), task_id, len(data))
                    return record
                except redis.WatchError as exc:
                    if self._landed(key, exc, data):
                        return record  # its reply was lost: never make it twice
                    continue
        raise BackendUnavailable(f"Task {task_id!r} changed too often to be updated; retry.")

    def _landed(self, key: str, exc: redis.WatchError, data: bytes | None) -> bool:
        """Whether a transaction that redis-py reports as a conflict because its connection
        broke (Redis may have run it, its reply lost: a failover) wrote ``data``."""
        broke = exc.__cause__ or exc.__context__  # redis-py raises it handling the break
        if data is None or not isinstance(broke, _UNAVAILABLE):
            return False
        return bool(self.client.get(key) == data)

    def _check_growth(
        self, record: dict[str, t.Any], task_id: str, size: int, before: int, pipe: t.Any
    ) -> None:
        """Refuse a change that grows the record past its caller's byte bound, else record
        its new size: one script checks and records, so that the caller's tasks growing
        together on several workers cannot all pass the bound."""
        caller, most = caller_of(record), self.limits.max_bytes
        if size <= before or most is None or not isinstance(caller, str):
            return
        self._forget_expired(caller)
        sizes = [self.keys.task_sizes(caller)]
        fits, held = self.commands.run("task_grow", sizes, task_id, size, most)
        if not int(fits):
            pipe.unwatch()
            raise TaskQuotaExceeded("bytes", most, int(held), size - before)

    def live(
        self, limit: int, cursor: str | None = None
    ) -> tuple[list[dict[str, t.Any]], str | None]:
        """Read the next ``limit`` ids of the live index after ``cursor`` (see
        :meth:`TaskStore.live`) and their records; drop the ids of the ended or expired.

        The cursor is the last id read and its score (``task_live``): it moves on past
        the tasks that live long (queued on Celery, waiting for input), so that the sweep
        reaches the dead ones behind them.
        """
        index = self._live_index()
        last, _, score = (cursor or "").partition(" ")
        with self.commands.errors():
            page = self.commands.run("task_live", [index], last, score or "-inf", limit)
            ids = [text(i) for i in page[0::2]]
            raws = self._get_many(ids) if ids else []
            records, done = [], []
            for task_id, raw in zip(ids, raws, strict=True):
                record = None if raw is None else loads(raw)
                if record is None or record["status"] in TERMINAL:
                    done.append(task_id)
                else:
                    records.append(record)
            if done:  # ended or expired: no longer watched
                self.client.zrem(index, *done)
        following = f"{ids[-1]} {text(page[-1])}" if len(ids) >= limit else None
        return records, following

    def list(
        self, owner: str, cursor: int, limit: int
    ) -> tuple[list[dict[str, t.Any]], int | None]:
        index = self._index(owner)
        with self.commands.errors():
            ids = [
                i.decode() if isinstance(i, bytes) else str(i)
                for i in self.client.zrange(index, cursor, cursor + limit)
            ]
            raws = self._get_many(ids[:limit]) if ids else []
        records = []
        gone = []
        for task_id, raw in zip(ids[:limit], raws, strict=True):
            if raw is None:
                gone.append(task_id)
            else:
                records.append(loads(raw))
        if gone:  # expired records: drop them from the index (the next page shifts by as many)
            with contextlib.suppress(*_UNAVAILABLE):
                self.client.zrem(index, *gone)
        more = len(ids) > limit
        return records, (cursor + limit - len(gone) if more else None)


__all__ = ["RedisTaskStore"]
