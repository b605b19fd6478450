"""Task records: their statuses, their wire shapes, their leases, and the task signals.

The records live in the backend's task store (:meth:`flask_mcp.backends.base.Backend.task_store`,
memory or Redis). Every change goes through :func:`set_status` or
:meth:`~flask_mcp.backends.task_store.TaskStore.mutate`, so a terminal task never changes
again; the MCP side (``tools/call`` as a task, ``tasks/*``, the task's ``Context``)
is :mod:`flask_mcp.server.tasks`.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import time
import typing as t
import weakref

from .. import signals
from ..backends.task_store import TaskLimits
from ..backends.task_store import TaskQuotaExceeded
from ..errors import INTERNAL_ERROR
from ..errors import BackendUnavailable
from . import supervisor
from .notify import deliver_general
from .settle import OWED

if t.TYPE_CHECKING:
    from ..backends.base import Backend
    from ..backends.task_store import TaskStore
    from .state import AppState

#: The extension's identifier (2026-07-28).
EXTENSION = "io.modelcontextprotocol/tasks"
#: ``_meta`` key tying a 2025-11-25 message to its task.
RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The flavours: 2025-11-25 experimental tasks, and the 2026-07-28 extension.
V2025 = "2025"
V2026 = "2026"


def now_iso(ts: float | None = None) -> str:
    """Return ``ts`` (default: now) as an ISO 8601 UTC timestamp."""
    when = datetime.datetime.fromtimestamp(time.time() if ts is None else ts, datetime.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def store_of(state: AppState) -> TaskStore:
    """Return the app's task store (the backend's), bounded by the app's configuration."""
    store = state.backend.task_store()
    settings = state.settings
    store.limits = TaskLimits(
        max_records=settings.task_max_per_client,
        max_bytes=settings.task_max_bytes_per_client,
        large_result=settings.task_large_result_size,
        large_result_ttl=settings.task_large_result_ttl,
    )
    return store


def create(state: AppState, record: dict[str, t.Any], ttl: float | None) -> None:
    """Store the new task ``record``, kept ``ttl`` seconds; if the store is unreachable,
    leave nothing of it.

    The store's writes may then have run with their replies lost (a failover): the
    request is refused, so what they wrote is discarded (:meth:`TaskStore.discard`), at
    once or, while the store stays unreachable, by the supervisor once it answers
    (:mod:`.settle`). No record stays that ``tasks/list`` would show, the lease sweep
    would fail or the caller's bounds would count.

    :raises BackendUnavailable: the store was unreachable.
    """
    store = store_of(state)
    try:
        store.create(record, ttl)
    except BackendUnavailable:
        undo = _Discard(state.backend, store, record)
        try:
            undo.settle()
        except BackendUnavailable:
            OWED.add(undo)
        raise


class _Discard:
    """The removal of a task record whose creation its client was refused.

    :param backend: the backend whose task store holds it: while it is unreachable, the
        removal waits in :data:`~flask_mcp.runtime.settle.OWED` with its other owed writes.
    """

    def __init__(self, backend: Backend, store: TaskStore, record: dict[str, t.Any]) -> None:
        self.backend = backend
        self.store = store
        self.record = record

    def settle(self) -> bool:
        """Remove the record; :class:`BackendUnavailable` while the store is unreachable."""
        self.store.discard(self.record)
        return True


def owner_key(principal: str | None, session_id: str | None) -> str:
    """Return who a task belongs to: the principal, and the session in the handshake era."""
    raw = f"{principal!r}\x00{session_id or ''}".encode()
    return hashlib.sha256(raw).hexdigest()[:32]


def touch(record: dict[str, t.Any], status: str | None = None) -> None:
    if status is not None:
        record["status"] = status
    record["lastUpdatedAt"] = now_iso()


def set_status(
    state: AppState, task_id: str, status: str, **fields: t.Any
) -> dict[str, t.Any] | None:
    """Move a task to ``status`` unless it is already terminal; send the signals."""
    changed: list[bool] = []

    def change(record: dict[str, t.Any]) -> bool:
        changed.clear()
        if record["status"] in TERMINAL:
            return False
        touch(record, status)
        record.update(fields)
        if status in TERMINAL:
            record["inputRequests"] = {}
        changed.append(True)
        return True

    record = store_of(state).mutate(task_id, change)
    if record is not None and changed:
        status_changed(state, record)
    return record


def status_changed(state: AppState, record: dict[str, t.Any]) -> None:
    """Send ``task_status_changed`` (and ``task_finished`` for a terminal status)."""
    status = record["status"]
    signals.send(
        signals.task_status_changed,
        state.app,
        task_id=record["taskId"],
        status=status,
        status_message=record.get("statusMessage"),
    )
    if status in TERMINAL:
        signals.send(signals.task_finished, state.app, task_id=record["taskId"], status=status)
    if record.get("flavour") == V2026:
        # notifications/tasks for the listen streams that asked for this task (any worker)
        with contextlib.suppress(Exception):
            state.backend.publish(
                state.listen_channel, {"method": "notifications/tasks", "params": wire(record)}
            )
    session_id = record.get("session")
    if record.get("flavour") == V2025 and session_id:
        # 2025-11-25: notifications/tasks/status on the session's GET stream (optional there).
        message = {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": wire(record)}
        with contextlib.suppress(Exception):  # the session may be gone: the client polls
            deliver_general(state, session_id, message)


def settle(state: AppState, task_id: str, message: dict[str, t.Any] | None) -> None:
    """Record the handler's final JSON-RPC message (``None``: it was cancelled)."""
    if message is None:
        set_status(state, task_id, "cancelled", statusMessage="The task was cancelled.")
    elif "error" in message:
        error = message["error"]
        text = error.get("message", "") if isinstance(error, dict) else ""
        set_status(state, task_id, "failed", error=error, statusMessage=text)
    else:
        result = message.get("result") or {}
        record = store_of(state).get(task_id)
        failed = (
            record is not None and record.get("flavour") == V2025 and bool(result.get("isError"))
        )
        status = "failed" if failed else "completed"  # 2025-11-25: isError fails the task
        why = {"statusMessage": _error_text(result)} if failed else {}
        try:
            set_status(state, task_id, status, result=result, **why)
        except TaskQuotaExceeded as exc:  # the result would pass the caller's byte bound
            error = {"code": exc.code, "message": exc.message, "data": exc.data}
            set_status(state, task_id, "failed", error=error, statusMessage=exc.message)


def _error_text(result: dict[str, t.Any]) -> str:
    """Return what a failed task's ``statusMessage`` says of a tool's ``isError`` result.

    The spec: the ``tasks/get`` of a failed task SHOULD carry diagnostic information.
    It is the text the tool reported (its first text block, its first 1,000 characters),
    as ``tasks/result`` gives it.
    """
    for block in result.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
            return str(block["text"])[:1000]
    return "The tool reported an error (isError)."


def check_lease(state: AppState, record: dict[str, t.Any]) -> dict[str, t.Any]:
    """Fail a task whose executor stopped renewing its lease (its worker died).

    The error names the worker that stopped: a web worker's, or (``executor`` is
    ``"celery"`` in the record) a Celery worker's.
    """
    if record["status"] in TERMINAL:
        return record
    lease = record.get("lease")
    if lease is None or time.time() - lease <= state.settings.task_lease:
        return record
    if record.get("executor") == "celery":
        text = (
            "The Celery worker running this task stopped (it died or was restarted) before "
            "the task ended; call the tool again."
        )
    else:
        text = (
            "The worker running this task stopped (it died or was restarted) before the task "
            "ended; call the tool again. Run tasks on Celery to survive web worker restarts."
        )
    error = {"code": INTERNAL_ERROR, "message": text}
    updated = set_status(
        state, record["taskId"], "failed", error=error, statusMessage=error["message"]
    )
    return updated if updated is not None else record


def wire(record: dict[str, t.Any], *, detailed: bool = True) -> dict[str, t.Any]:
    """Return the task as the wire shows it in the record's flavour."""
    task: dict[str, t.Any] = {"taskId": record["taskId"], "status": record["status"]}
    if record.get("statusMessage"):
        task["statusMessage"] = record["statusMessage"]
    task["createdAt"] = record["createdAt"]
    task["lastUpdatedAt"] = record["lastUpdatedAt"]
    if record.get("flavour") == V2025:
        task["ttl"] = record["ttlMs"]
        task["pollInterval"] = record["pollIntervalMs"]
        return task
    task["ttlMs"] = record["ttlMs"]
    task["pollIntervalMs"] = record["pollIntervalMs"]
    if detailed:
        status = record["status"]
        if status == "input_required":
            task["inputRequests"] = record.get("inputRequests") or {}
        elif status == "completed":
            result = dict(record.get("result") or {})
            meta = result.get("_meta")
            if isinstance(meta, dict) and RELATED_TASK in meta:
                result["_meta"] = {k: v for k, v in meta.items() if k != RELATED_TASK}
            task["result"] = result
        elif status == "failed":
            task["error"] = record.get("error") or {"code": INTERNAL_ERROR, "message": "failed"}
    return task


#: When each app's last pass over its live tasks started.
_swept: weakref.WeakKeyDictionary[AppState, float] = weakref.WeakKeyDictionary()
#: Where each app's pass under way goes on (absent: no pass under way).
_cursors: weakref.WeakKeyDictionary[AppState, str] = weakref.WeakKeyDictionary()
#: Records one round of the sweep looks at.
SWEEP_BATCH = 500


def sweep(state: AppState, now: float) -> None:
    """Fail the running tasks whose lease ran out (a supervisor hook).

    A pass goes through every live task, :data:`SWEEP_BATCH` of them a round (a round
    every supervisor tick while the pass lasts), and starts every ``lease / 3`` s: however
    many long-lived tasks come first (queued on Celery, waiting for input), a dead
    worker's task fails, and ``task_finished`` and the status notifications go out, within
    about ``MCP_TASK_LEASE`` plus the pass, not only when someone looks at it.
    """
    cursor = _cursors.pop(state, None)
    if cursor is None:
        lease = state.settings.task_lease
        if now - _swept.get(state, float("-inf")) < max(lease / 3, 1.0):
            return
        _swept[state] = now
    records, following = store_of(state).live(SWEEP_BATCH, cursor)
    if following is not None:
        _cursors[state] = following
    for record in records:
        check_lease(state, record)


supervisor.HOOKS.append(sweep)


__all__ = [
    "EXTENSION",
    "RELATED_TASK",
    "TERMINAL",
    "V2025",
    "V2026",
    "check_lease",
    "create",
    "now_iso",
    "owner_key",
    "set_status",
    "settle",
    "status_changed",
    "store_of",
    "sweep",
    "touch",
    "wire",
]
