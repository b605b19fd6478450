"""Helpers on top of the official ``mcp`` Python client: ``pip install 'Flask-MCP[client]'``.

The official client (``mcp`` 2.3.0) has no task API. This package adds one for both
flavours, on a :class:`mcp.Client` or a :class:`mcp.client.ClientSession` of any MCP
server (not only Flask-MCP):

.. code-block:: python

    from mcp import Client
    from flask_mcp.client import TasksExtension, call_tool_as_task, task_result

    async with Client(url, extensions=[TasksExtension()]) as client:
        task = await call_tool_as_task(client, "deploy", {"service": "api"})
        result = await task_result(client, task, timeout=600)

Modules: ``tasks`` (the functions), ``task`` (:class:`Task`), ``extension``
(:class:`TasksExtension`) and ``wire`` (how they reach the server). See ``docs/tasks.md``.
Nothing in :mod:`flask_mcp` imports this package: an application that only serves MCP
does not need the ``mcp`` package.
"""

from __future__ import annotations

from .extension import TASKS_EXTENSION as TASKS_EXTENSION
from .extension import TasksExtension as TasksExtension
from .task import Task as Task
from .task import TaskCancelled as TaskCancelled
from .task import TaskError as TaskError
from .task import TaskPage as TaskPage
from .task import TaskStatus as TaskStatus
from .tasks import answer_task as answer_task
from .tasks import call_tool_as_task as call_tool_as_task
from .tasks import cancel_task as cancel_task
from .tasks import get_task as get_task
from .tasks import list_tasks as list_tasks
from .tasks import task_result as task_result
from .tasks import wait_for_task as wait_for_task

__all__ = [
    "TASKS_EXTENSION",
    "Task",
    "TaskCancelled",
    "TaskError",
    "TaskPage",
    "TaskStatus",
    "TasksExtension",
    "answer_task",
    "call_tool_as_task",
    "cancel_task",
    "get_task",
    "list_tasks",
    "task_result",
    "wait_for_task",
]
