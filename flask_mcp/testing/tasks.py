"""Tasks as :class:`~flask_mcp.testing.MCPTestClient` sees them, in one shape for both flavours.

- **2025-11-25** (experimental tasks): the client asks for a task with ``params.task``
  and the server answers ``{"task": {...}}``; ``tasks/get``, ``tasks/result`` (blocks
  until the task is over; the task's questions arrive on its stream), ``tasks/list``
  and ``tasks/cancel`` (answered with the task).
- **2026-07-28** (the ``io.modelcontextprotocol/tasks`` extension): each request
  declares the extension in its ``_meta`` capabilities and the server decides, with a
  ``CreateTaskResult`` (``resultType: "task"``) or the result itself; ``tasks/get``
  carries the questions (``inputRequests``) and, once over, the outcome; ``tasks/update``
  answers; ``tasks/cancel`` acknowledges; every ``tasks/*`` request names the task in
  ``Mcp-Name``.

A task here is the dict the server sent, without the envelope fields ``resultType`` and
``_meta``; once over it carries ``result`` (the tool's ``CallToolResult``, ``isError``
included) or ``error`` (the JSON-RPC error it failed with) in both flavours.
"""

from __future__ import annotations

import typing as t

from ..errors import INTERNAL_ERROR
from ..errors import MCPError

#: The identifier of the 2026-07-28 tasks extension.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: The statuses of a task that is over.
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
#: Bounds on the wait between two ``tasks/get`` of a 2026-07-28 task: the server's
#: ``pollIntervalMs``, shortened for a test (the server runs in the same process).
MIN_POLL = 0.005
MAX_POLL = 0.1
_ENVELOPE = ("resultType", "_meta")


class TaskError(RuntimeError):
    """A task operation that cannot be done as asked; the message says what to do instead."""


class TaskCancelled(TaskError):
    """The task was cancelled: it has no result.

    :param task: the task, in its ``cancelled`` state.
    """

    def __init__(self, task: t.Mapping[str, t.Any]) -> None:
        super().__init__(f"Task {task.get('taskId')!r} was cancelled: it has no result.")
        self.task = dict(task)


def declaring_tasks(capabilities: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """Return ``capabilities`` with the 2026-07-28 tasks extension declared."""
    extensions = capabilities.get("extensions")
    declared = dict(extensions) if isinstance(extensions, dict) else {}
    declared.setdefault(TASKS_EXTENSION, {})
    return {**capabilities, "extensions": declared}


def task_fields(result: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """Return a task result without its envelope (``resultType``, ``_meta``)."""
    return {key: value for key, value in result.items() if key not in _ENVELOPE}


def created_task(result: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """Return the task of a task-augmented ``tools/call`` result, in either flavour.

    A call the server answered at once (2026-07-28: the server decides; 2025-11-25: a
    server without the ``tasks`` capability ignores ``params.task``) becomes a terminal
    task without ``taskId`` that carries the result. Its status is the one the era gives
    a task that ended with that result, as :mod:`flask_mcp.client` reads it: a tool
    error (``isError``) is ``completed`` at 2026-07-28 (a result carries ``resultType``;
    the tasks extension keeps ``failed`` for JSON-RPC errors), ``failed`` at 2025-11-25.
    """
    if isinstance(result.get("task"), dict):  # 2025-11-25: CreateTaskResult {task}
        return task_fields(result["task"])
    if result.get("resultType") == "task":  # 2026-07-28: the task inline
        return task_fields(result)
    failed = result.get("isError") is True and "resultType" not in result
    return {"taskId": "", "status": "failed" if failed else "completed", "result": dict(result)}


def task_id_of(task: t.Mapping[str, t.Any] | str) -> str:
    """Return the id of a task given as a dict or as its id ("" if answered at once)."""
    if isinstance(task, str):
        return task
    task_id = task.get("taskId")
    return task_id if isinstance(task_id, str) else ""


def is_over(task: t.Mapping[str, t.Any]) -> bool:
    """Whether the task is over (``completed``, ``failed`` or ``cancelled``)."""
    return task.get("status") in TERMINAL


def poll_interval(task: t.Mapping[str, t.Any]) -> float:
    """Return the seconds to wait before the next ``tasks/get`` of ``task``."""
    suggested = task.get("pollIntervalMs")
    seconds = suggested / 1000 if isinstance(suggested, (int, float)) else MAX_POLL
    return min(max(seconds, MIN_POLL), MAX_POLL)


def outcome(task: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """Return the result of a task that is over.

    :raises TaskCancelled: the task was cancelled.
    :raises flask_mcp.MCPError: the task failed with a JSON-RPC error.
    :raises TaskError: the task is not over, or over without a result or an error.
    """
    if isinstance(task.get("result"), dict):
        return t.cast(dict[str, t.Any], task["result"])
    if task.get("status") == "cancelled":
        raise TaskCancelled(task)
    error = task.get("error")
    if isinstance(error, dict):
        raise MCPError(
            error.get("code", INTERNAL_ERROR), error.get("message", ""), error.get("data")
        )
    raise TaskError(
        f"Task {task.get('taskId')!r} is {task.get('status')!r} without a result or an "
        "error; wait for it with wait_for_task() first."
    )


__all__ = [
    "MAX_POLL",
    "MIN_POLL",
    "TASKS_EXTENSION",
    "TERMINAL",
    "TaskCancelled",
    "TaskError",
    "created_task",
    "declaring_tasks",
    "is_over",
    "outcome",
    "poll_interval",
    "task_fields",
    "task_id_of",
]
