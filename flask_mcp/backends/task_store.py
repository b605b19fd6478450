"""Task records in the backend: the store every worker reads and writes.

A task record is one JSON object (see :mod:`flask_mcp.server.tasks` for its
fields). Stores keep records until their time to live ends and change them
with :meth:`TaskStore.mutate`, which applies a function to the current record
atomically: under a lock in memory, with an optimistic ``WATCH``/``MULTI``
transaction in Redis (:mod:`flask_mcp.backends.redis.tasks`). The task logic
therefore lives in one place and the stores only keep JSON.
"""

from __future__ import annotations

import abc
import copy
import threading
import time
import typing as t

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
            self._records[record["taskId"]] = (copy.deepcopy(record), expires)
            # Drop expired records now and then, so memory stays bounded.
            if len(self._records) % 64 == 0:
                for task_id in list(self._records):
                    self._live(task_id)

    def get(self, task_id: str) -> dict[str, t.Any] | None:
        with self._lock:
            record = self._live(task_id)
            return None if record is None else copy.deepcopy(record)

    def mutate(self, task_id: str, change: Mutator) -> dict[str, t.Any] | None:
        with self._lock:
            record = self._live(task_id)
            if record is None:
                return None
            draft = copy.deepcopy(record)
            if change(draft):
                self._records[task_id] = (draft, self._records[task_id][1])
                record = draft
            return copy.deepcopy(record)

    def live(self, limit: int) -> list[dict[str, t.Any]]:
        with self._lock:
            found = [
                record
                for task_id in list(self._records)
                if (record := self._live(task_id)) is not None and record["status"] not in TERMINAL
            ]
        return copy.deepcopy(found[:limit])

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
        return copy.deepcopy(page), (cursor + limit if more else None)


__all__ = ["TERMINAL", "MemoryTaskStore", "Mutator", "TaskStore"]
