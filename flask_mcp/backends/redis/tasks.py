"""Task records in Redis, so that any worker serves any task.

Keys (``P`` is the backend's prefix; see :mod:`flask_mcp.backends.redis.keys`):

- ``P{<id>}:task``: the record, one JSON string, expiring with the task's TTL, tagged by
  the task id (one cluster slot per task);
- ``P{g}:tasks:live``: a sorted set of the ids of tasks not known to have ended (the lease
  sweep reads it and drops the ids of tasks that ended or expired);
- ``P{g}:tasks:<owner>``: a sorted set of the owner's task ids by creation time
  (``tasks/list``), trimmed of ids whose record expired.

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
from ..task_store import TaskStore
from .codec import UNAVAILABLE as _UNAVAILABLE
from .codec import dumps as _dumps
from .codec import loads
from .keys import Keys

#: Retries of a change that keeps losing the race against other workers.
_ATTEMPTS = 50


class RedisTaskStore(TaskStore):
    """Task records in Redis.

    :param client: the backend's Redis (or Redis Cluster) client.
    :param keys: the backend's key names.
    """

    def __init__(self, client: t.Any, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self.prefix = keys.prefix

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

    def create(self, record: dict[str, t.Any], ttl: float | None) -> None:
        key = self._key(record["taskId"])
        try:
            pipe = self.client.pipeline()
            if ttl is None:
                pipe.set(key, _dumps(record))
            else:
                pipe.set(key, _dumps(record), px=max(1, int(ttl * 1000)))
            pipe.zadd(self._live_index(), {record["taskId"]: record.get("created", time.time())})
            owner = record.get("owner")
            if isinstance(owner, str):
                pipe.zadd(
                    self._index(owner), {record["taskId"]: record.get("created", time.time())}
                )
                if ttl is not None:
                    # Keep the index as long as its longest-lived task (EXPIRE GT needs Redis 7).
                    left = self.client.ttl(self._index(owner))
                    pipe.expire(self._index(owner), max(int(ttl) + 60, int(left or 0)))
            pipe.execute()
        except _UNAVAILABLE as exc:
            raise BackendUnavailable(f"Redis is unreachable: {exc}") from exc

    def get(self, task_id: str) -> dict[str, t.Any] | None:
        try:
            raw = self.client.get(self._key(task_id))
        except _UNAVAILABLE as exc:
            raise BackendUnavailable(f"Redis is unreachable: {exc}") from exc
        return None if raw is None else t.cast("dict[str, t.Any]", loads(raw))

    def mutate(self, task_id: str, change: Mutator) -> dict[str, t.Any] | None:
        key = self._key(task_id)
        try:
            with self.client.pipeline(transaction=True) as pipe:
                for _ in range(_ATTEMPTS):
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
                        pipe.multi()
                        pipe.set(key, _dumps(record), keepttl=True, xx=True)
                        pipe.execute()
                        return record
                    except redis.WatchError:
                        continue
        except _UNAVAILABLE as exc:
            raise BackendUnavailable(f"Redis is unreachable: {exc}") from exc
        raise BackendUnavailable(f"Task {task_id!r} changed too often to be updated; retry.")

    def live(self, limit: int) -> list[dict[str, t.Any]]:
        index = self._live_index()
        try:
            ids = [
                i.decode() if isinstance(i, bytes) else str(i)
                for i in self.client.zrange(index, 0, limit - 1)
            ]
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
        except _UNAVAILABLE as exc:
            raise BackendUnavailable(f"Redis is unreachable: {exc}") from exc
        return records

    def list(
        self, owner: str, cursor: int, limit: int
    ) -> tuple[list[dict[str, t.Any]], int | None]:
        index = self._index(owner)
        try:
            ids = [
                i.decode() if isinstance(i, bytes) else str(i)
                for i in self.client.zrange(index, cursor, cursor + limit)
            ]
            raws = self._get_many(ids[:limit]) if ids else []
        except _UNAVAILABLE as exc:
            raise BackendUnavailable(f"Redis is unreachable: {exc}") from exc
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
