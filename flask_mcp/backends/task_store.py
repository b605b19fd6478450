"""Task records in the backend: the store every worker reads and writes.

A task record is one JSON object (see :mod:`flask_mcp.server.tasks` for its
fields). Stores keep records until their time to live ends and change them
with :meth:`TaskStore.mutate`, which applies a function to the current record
atomically: under a lock in memory, with an optimistic ``WATCH``/``MULTI``
transaction in Redis (:mod:`flask_mcp.backends.redis.tasks`). The task logic
therefore lives in one place and the stores only keep JSON.

What one caller (a record's ``owner``) keeps is bounded (:class:`TaskLimits`): so
many records and so many bytes of JSON at once. Past a bound, :meth:`TaskStore.create`
and :meth:`TaskStore.mutate` raise :class:`TaskQuotaExceeded` and change nothing:
no record of anyone is dropped to make room. A finished record larger than
:attr:`TaskLimits.large_result` is kept :attr:`TaskLimits.large_result_ttl` seconds,
long enough for its client to fetch it, not the whole task TTL.
"""

from __future__ import annotations

import abc
import dataclasses
import threading
import time
import typing as t

from ..errors import INVALID_REQUEST
from ..errors import MCPError
from ..json_codec import dumps_bytes
from ..json_codec import loads_stored

#: The statuses a task never leaves.
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: A function that changes a record in place, or returns ``False`` to leave it unchanged.
Mutator = t.Callable[[dict[str, t.Any]], bool]


@dataclasses.dataclass
class TaskLimits:
    """What one caller's task records may hold at once (``None``: no bound)."""

    #: Records (``MCP_TASK_MAX_PER_CLIENT``).
    max_records: int | None = 1000
    #: Bytes of the records' JSON (``MCP_TASK_MAX_BYTES_PER_CLIENT``).
    max_bytes: int | None = 256 * 1024 * 1024
    #: Bytes above which a finished record is kept only :attr:`large_result_ttl` seconds.
    large_result: int = 1024 * 1024
    #: Seconds such a record is kept once finished.
    large_result_ttl: float = 300.0


class TaskQuotaExceeded(MCPError):
    """A caller's task records would pass a bound of :class:`TaskLimits`.

    A JSON-RPC error ``-32600`` whose ``data`` says which bound (``"records"`` or
    ``"bytes"``), its value and what the caller holds.
    """

    def __init__(self, bound: str, limit: int, held: int, size: int = 0) -> None:
        if bound == "records":
            message = (
                f"Too many tasks: this client keeps {held} task records and may keep {limit} "
                "(MCP_TASK_MAX_PER_CLIENT). Fetch the results of finished tasks and let them "
                "expire, or cancel tasks it no longer needs, then retry."
            )
        else:
            message = (
                f"Task storage full: this client's task records hold {held} bytes, and "
                f"{size} more would pass its {limit} bytes (MCP_TASK_MAX_BYTES_PER_CLIENT). "
                "Fetch the results of finished tasks and let them expire, or send less, "
                "then retry."
            )
        data = {"bound": bound, "limit": limit, "held": held}
        super().__init__(INVALID_REQUEST, message, data)
        self.bound = bound


def encoded(record: dict[str, t.Any]) -> bytes:
    """The JSON a store keeps for ``record`` (its size is what the byte bound counts)."""
    return dumps_bytes(record)


def kept_for(
    record: dict[str, t.Any], data: bytes, limits: TaskLimits
) -> tuple[bytes, float | None]:
    """Return what to store for a changed record, and the seconds it must be kept from now
    if less than its TTL: a finished large one.

    Such a record's ``ttlMs`` becomes its actual retention (from its creation), which
    ``tasks/get`` must report; ``data`` is then encoded again.
    """
    if record.get("status") not in TERMINAL or len(data) <= limits.large_result:
        return data, None
    shorter = limits.large_result_ttl
    created, ttl_ms = record.get("created"), record.get("ttlMs")
    if isinstance(created, (int, float)) and isinstance(ttl_ms, int):
        actual = int((time.time() - created + shorter) * 1000)
        if actual < ttl_ms:
            record["ttlMs"] = actual
            data = encoded(record)
    return data, shorter


class TaskStore(abc.ABC):
    """Where task records live; shared by every worker of a shared backend."""

    #: The bounds on one caller's records (set from the app's configuration).
    limits: TaskLimits = TaskLimits()

    @abc.abstractmethod
    def create(self, record: dict[str, t.Any], ttl: float | None) -> None:
        """Store a new record, kept ``ttl`` seconds (``None``: until deleted).

        :raises TaskQuotaExceeded: the record's owner keeps as many records or bytes
            as :attr:`limits` allow.
        """

    def discard(self, record: dict[str, t.Any]) -> None:
        """Remove what a :meth:`create` of ``record`` that raised
        :class:`~flask_mcp.errors.BackendUnavailable` may have stored: the record, and its
        entries in the indexes and per-caller counts.

        Such a create's writes may have run with their replies lost (a failover); its
        client is refused, so the store must not keep, count or list the task. A store
        whose :meth:`create` stores nothing when it raises (as in memory) keeps this one,
        which does nothing.

        :raises BackendUnavailable: the backend is still unreachable; call it again later.
        """
        return None

    @abc.abstractmethod
    def get(self, task_id: str) -> dict[str, t.Any] | None:
        """Return a copy of the record, or ``None`` if unknown or expired."""

    @abc.abstractmethod
    def mutate(self, task_id: str, change: Mutator) -> dict[str, t.Any] | None:
        """Apply ``change`` to the record atomically; return the record after it.

        ``None`` when the task is unknown. ``change`` may run more than once
        (Redis retries it when another worker changed the record meanwhile).

        :raises TaskQuotaExceeded: the changed record would pass the owner's byte
            bound; the record is left as it was.
        """

    @abc.abstractmethod
    def live(
        self, limit: int, cursor: str | None = None
    ) -> tuple[list[dict[str, t.Any]], str | None]:
        """Return the records not terminal yet among the next ``limit`` from ``cursor``
        (``None``: the oldest), oldest first, and the cursor of the batch after them
        (``None``: this batch reached the end). For the lease sweep, which goes through
        every live task a batch at a time, however many live tasks come first.
        """

    @abc.abstractmethod
    def list(
        self, owner: str, cursor: int, limit: int
    ) -> tuple[list[dict[str, t.Any]], int | None]:
        """Return up to ``limit`` records of ``owner`` from position ``cursor``, oldest first,
        and the next cursor (``None`` at the end)."""


def caller_of(record: dict[str, t.Any]) -> t.Any:
    """Return whom ``record`` counts against for the per-caller bounds.

    That is its ``caller`` (the principal, else the client's address), not its
    ``owner`` (who may read it): anonymous 2026-07-28 callers share one owner but
    not one quota. A record stored before the field existed counts against its owner.
    """
    return record.get("caller") or record.get("owner")


class _Entry:
    """One record kept in memory: its JSON (immutable: nothing is copied to share it)."""

    __slots__ = ("caller", "data", "done", "expires", "owner", "seq")

    def __init__(
        self,
        data: bytes,
        expires: float | None,
        owner: t.Any,
        done: bool,
        caller: t.Any = None,
        seq: int = 0,
    ) -> None:
        self.data, self.expires, self.owner = data, expires, owner
        #: The record's place in creation order (the lease sweep's cursor).
        self.seq = seq
        #: Whom the record counts against for the per-caller bounds (:func:`caller_of`).
        self.caller = owner if caller is None else caller
        #: Whether the task's status is terminal (the lease sweep skips it undecoded).
        self.done = done


class MemoryTaskStore(TaskStore):
    """Task records in this process's memory (``memory://``).

    Each record is kept as its JSON, as Redis keeps it: a read decodes a fresh copy,
    a change encodes once; no deep copy of a large result per read or change.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, _Entry] = {}
        self._created = 0

    def _live(self, task_id: str) -> _Entry | None:
        entry = self._records.get(task_id)
        if entry is None:
            return None
        if entry.expires is not None and entry.expires <= time.monotonic():
            del self._records[task_id]
            return None
        return entry

    def _held(self, caller: t.Any) -> tuple[int, int]:
        """The records and bytes ``caller`` keeps now (under the lock)."""
        count = size = 0
        for task_id in list(self._records):
            entry = self._live(task_id)
            if entry is not None and entry.caller == caller:
                count += 1
                size += len(entry.data)
        return count, size

    def create(self, record: dict[str, t.Any], ttl: float | None) -> None:
        data = encoded(record)
        owner, caller, limits = record.get("owner"), caller_of(record), self.limits
        with self._lock:
            if caller is not None and (limits.max_records or limits.max_bytes):
                count, size = self._held(caller)
                if limits.max_records is not None and count >= limits.max_records:
                    raise TaskQuotaExceeded("records", limits.max_records, count)
                if limits.max_bytes is not None and size + len(data) > limits.max_bytes:
                    raise TaskQuotaExceeded("bytes", limits.max_bytes, size, len(data))
            expires = None if ttl is None else time.monotonic() + ttl
            done = record.get("status") in TERMINAL
            self._created += 1
            self._records.pop(record["taskId"], None)  # a new record goes last
            self._records[record["taskId"]] = _Entry(
                data, expires, owner, done, caller, self._created
            )
            # Drop expired records now and then, so memory stays bounded.
            if len(self._records) % 64 == 0:
                for task_id in list(self._records):
                    self._live(task_id)

    def get(self, task_id: str) -> dict[str, t.Any] | None:
        with self._lock:
            entry = self._live(task_id)
        return None if entry is None else t.cast("dict[str, t.Any]", loads_stored(entry.data))

    def mutate(self, task_id: str, change: Mutator) -> dict[str, t.Any] | None:
        limits = self.limits
        with self._lock:
            entry = self._live(task_id)
            if entry is None:
                return None
            draft = t.cast("dict[str, t.Any]", loads_stored(entry.data))
            if not change(draft):
                return draft
            data, shorter = kept_for(draft, encoded(draft), limits)
            grown = len(data) - len(entry.data)
            if grown > 0 and limits.max_bytes is not None and entry.caller is not None:
                _, size = self._held(entry.caller)
                if size + grown > limits.max_bytes:
                    raise TaskQuotaExceeded("bytes", limits.max_bytes, size, grown)
            expires = entry.expires
            if shorter is not None:
                until = time.monotonic() + shorter
                expires = until if expires is None else min(expires, until)
            done = draft.get("status") in TERMINAL
            self._records[task_id] = _Entry(
                data, expires, entry.owner, done, entry.caller, entry.seq
            )
            return t.cast("dict[str, t.Any]", loads_stored(data))

    def live(
        self, limit: int, cursor: str | None = None
    ) -> tuple[list[dict[str, t.Any]], str | None]:
        after = 0 if cursor is None else int(cursor)
        with self._lock:  # creation order: a changed record keeps its place
            entries = [
                e
                for i in list(self._records)
                if (e := self._live(i)) is not None and not e.done and e.seq > after
            ]
        batch = entries[:limit]
        found = [
            record
            for entry in batch
            if (record := t.cast("dict[str, t.Any]", loads_stored(entry.data)))["status"]
            not in TERMINAL
        ]
        return found, (str(batch[-1].seq) if len(entries) > limit else None)

    def list(
        self, owner: str, cursor: int, limit: int
    ) -> tuple[list[dict[str, t.Any]], int | None]:
        with self._lock:
            mine = [
                t.cast("dict[str, t.Any]", loads_stored(entry.data))
                for task_id in list(self._records)
                if (entry := self._live(task_id)) is not None and entry.owner == owner
            ]
        mine.sort(key=lambda r: r.get("created", 0.0))
        page = mine[cursor : cursor + limit]
        more = cursor + limit < len(mine)
        return page, (cursor + limit if more else None)


__all__ = [
    "TERMINAL",
    "caller_of",
    "MemoryTaskStore",
    "Mutator",
    "TaskLimits",
    "TaskQuotaExceeded",
    "TaskStore",
    "encoded",
    "kept_for",
]
