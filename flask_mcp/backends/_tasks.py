"""Task records in the backend: the store every worker reads and writes.

A task record is one JSON object (see :mod:`flask_mcp.server.tasks` for its
fields). Stores keep records until their time to live ends and change them
with :meth:`TaskStore.mutate`, which applies a function to the current record
atomically: under a lock in memory, with an optimistic ``WATCH``/``MULTI``
transaction in Redis (:mod:`flask_mcp.backends._redis_tasks`). The task logic
therefore lives in one place and the stores only keep JSON.
"""

from __future__ import annotations

import abc
import json
import threading
import time
import typing as t

_V = t.TypeVar("_V")


def _copy(value: _V) -> _V:
    """A deep copy of JSON data, as the Redis store keeps it (text, never recursion).

    ``copy.deepcopy`` recursed once per level and failed with ``RecursionError`` on
    arguments nested some 600 deep, which JSON parsing had accepted.
    """
    return t.cast("_V", json.loads(json.dumps(value)))


#: The statuses a task never leaves.
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: A function that changes a record in place, or returns ``False`` to leave it unchanged.
Mutator = t.Callable[[dict[str, t.Any]], bool]


class TaskStore(abc.ABC):
    """Where task records live; shared by every worker of a shared backend."""

    @abc.abstractmethod
    def create(self, record: dict[str, t.Any], ttl: float | None) -> None:
        """Store a new record, kept ``ttl`` seconds (``None``: until deleted)."""

    @abc.abstractmethod
    def get(self, task_id: str) -> dict[str, t.Any] | None:
        """Return a copy of the record, or ``None`` if unknown or expired."""

    @abc.abstractmethod
    def mutate(self, task_id: str, change: Mutator) -> dict[str, t.Any] | None:
        """Apply ``change`` to the record atomically; return the record after it.

        ``None`` when the task is unknown. ``change`` may run more than once
        (Redis retries it when another worker changed the record meanwhile).
        """

    @abc.abstractmethod
    def live(self, limit: int) -> list[dict[str, t.Any]]:
        """Return up to ``limit`` records that are not terminal yet (for the lease sweep)."""

    @abc.abstractmethod
    def list(
        self, owner: str, cursor: int, limit: int
    ) -> tuple[list[dict[str, t.Any]], int | None]:
        """Return up to ``limit`` records of ``owner`` from position ``cursor``, oldest first,
        and the next cursor (``None`` at the end)."""


class MemoryTaskStore(TaskStore):
    """Task records in this process's memory (``memory://``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, tuple[dict[str, t.Any], float | None]] = {}

    def _live(self, task_id: str) -> dict[str, t.Any] | None:
        entry = self._records.get(task_id)
        if entry is None:
            return None
        record, expires = entry
        if expires is not None and expires <= time.monotonic():
            del self._records[task_id]
            return None
        return record

    def create(self, record: dict[str, t.Any], ttl: float | None) -> None:
        expires = None if ttl is None else time.monotonic() + ttl
        with self._lock:
            self._records[record["taskId"]] = (_copy(record), expires)
            # Drop expired records now and then, so memory stays bounded.
            if len(self._records) % 64 == 0:
                for task_id in list(self._records):
                    self._live(task_id)

    def get(self, task_id: str) -> dict[str, t.Any] | None:
        with self._lock:
            record = self._live(task_id)
            return None if record is None else _copy(record)

    def mutate(self, task_id: str, change: Mutator) -> dict[str, t.Any] | None:
        with self._lock:
            record = self._live(task_id)
            if record is None:
                return None
            draft = _copy(record)
            if change(draft):
                self._records[task_id] = (draft, self._records[task_id][1])
                record = draft
            return _copy(record)

    def live(self, limit: int) -> list[dict[str, t.Any]]:
        with self._lock:
            found = [
                record
                for task_id in list(self._records)
                if (record := self._live(task_id)) is not None and record["status"] not in TERMINAL
            ]
        return _copy(found[:limit])

    def list(
        self, owner: str, cursor: int, limit: int
    ) -> tuple[list[dict[str, t.Any]], int | None]:
        with self._lock:
            mine = [
                record
                for task_id in list(self._records)
                if (record := self._live(task_id)) is not None and record.get("owner") == owner
            ]
        mine.sort(key=lambda r: r.get("created", 0.0))
        page = mine[cursor : cursor + limit]
        more = cursor + limit < len(mine)
        return _copy(page), (cursor + limit if more else None)


__all__ = ["TERMINAL", "MemoryTaskStore", "Mutator", "TaskStore"]
