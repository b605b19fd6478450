"""A task as a client sees it, in one shape for both flavours, and how each wire maps to it.

2025-11-25 tasks carry ``ttl`` and ``pollInterval``; 2026-07-28 tasks ``ttlMs`` and
``pollIntervalMs``, and ``tasks/get`` inlines their questions (``inputRequests``) and
their outcome (``result`` or ``error``). :class:`Task` holds either.
"""

from __future__ import annotations

import dataclasses
import typing as t

import mcp_types as types

#: A task's status (the same five in both flavours).
TaskStatus = t.Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


class TaskError(RuntimeError):
    """A task operation that cannot be done as asked; the message says what to do instead."""


class TaskCancelled(TaskError):
    """The task was cancelled: it has no result.

    :param task: the task, in its ``cancelled`` state.
    """

    def __init__(self, task: Task) -> None:
        super().__init__(f"Task {task.task_id!r} was cancelled: it has no result.")
        self.task = task


@dataclasses.dataclass(frozen=True)
class Task:
    """A task as the server last described it, in the same shape for both flavours.

    A terminal task carries its outcome: ``result`` (the tool's ``CallToolResult``,
    ``isError`` included) or ``error`` (the JSON-RPC error it failed with).

    At 2026-07-28 the server decides whether a call becomes a task: one it answered at
    once has ``task_id == ""`` (:attr:`created` is false), a terminal status and its
    outcome; the functions here accept it and never send its empty id.
    """

    #: The task's id ("" for an answer the server gave at once).
    task_id: str
    status: TaskStatus
    #: ISO 8601 timestamps.
    created_at: str = ""
    last_updated_at: str = ""
    #: What the task is doing (``ctx.progress()`` messages on Flask-MCP) or why it ended.
    status_message: str | None = None
    #: How long the server keeps the task after its creation, ``None`` for unlimited.
    ttl_ms: int | None = None
    #: How often the server suggests polling it.
    poll_interval_ms: int | None = None
    #: 2026-07-28, status ``input_required``: the outstanding questions by key, as sent.
    input_requests: t.Mapping[str, t.Mapping[str, t.Any]] = dataclasses.field(default_factory=dict)
    result: types.CallToolResult | None = None
    error: types.ErrorData | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task is over (``completed``, ``failed`` or ``cancelled``)."""
        return self.status in TERMINAL

    @property
    def created(self) -> bool:
        """Whether the server created a task (false: it answered the call at once)."""
        return bool(self.task_id)


@dataclasses.dataclass(frozen=True)
class TaskPage:
    """One page of ``tasks/list`` (2025-11-25): the tasks, and the cursor of the next page."""

    tasks: list[Task]
    next_cursor: str | None = None


def error_of(raw: t.Any) -> types.ErrorData | None:
    return types.ErrorData.model_validate(raw) if isinstance(raw, dict) else None


def from_2026(raw: t.Mapping[str, t.Any]) -> Task:
    """A ``Task`` from a 2026-07-28 ``CreateTaskResult`` or ``tasks/get`` result."""
    result = raw.get("result")
    return Task(
        task_id=str(raw["taskId"]),
        status=raw["status"],
        created_at=str(raw.get("createdAt", "")),
        last_updated_at=str(raw.get("lastUpdatedAt", "")),
        status_message=raw.get("statusMessage"),
        ttl_ms=raw.get("ttlMs"),
        poll_interval_ms=raw.get("pollIntervalMs"),
        input_requests=dict(raw.get("inputRequests") or {}),
        result=types.CallToolResult.model_validate(result) if isinstance(result, dict) else None,
        error=error_of(raw.get("error")),
    )


def from_2025(raw: t.Mapping[str, t.Any]) -> Task:
    """A ``Task`` from a 2025-11-25 task object (``ttl``, ``pollInterval``)."""
    return Task(
        task_id=str(raw["taskId"]),
        status=raw["status"],
        created_at=str(raw.get("createdAt", "")),
        last_updated_at=str(raw.get("lastUpdatedAt", "")),
        status_message=raw.get("statusMessage"),
        ttl_ms=raw.get("ttl"),
        poll_interval_ms=raw.get("pollInterval"),
    )


def answered_at_once(raw: t.Mapping[str, t.Any], *, modern: bool) -> Task:
    """The ``Task`` of a call the server answered without creating a task.

    Its status is the one the era gives a task that ended with that result: a tool error
    (``isError``) is ``failed`` at 2025-11-25 (``basic/utilities/tasks``), ``completed``
    at 2026-07-28 (the tasks extension keeps ``failed`` for JSON-RPC errors).

    :param modern: the session speaks 2026-07-28.
    """
    result = types.CallToolResult.model_validate(raw)
    status: TaskStatus = "failed" if result.is_error and not modern else "completed"
    return Task(task_id="", status=status, result=result)


__all__ = [
    "TERMINAL",
    "Task",
    "TaskCancelled",
    "TaskError",
    "TaskPage",
    "TaskStatus",
    "answered_at_once",
    "error_of",
    "from_2025",
    "from_2026",
]
