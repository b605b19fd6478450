"""``TasksExtension``: the 2026-07-28 tasks extension for the official client.

With it, ``client.call_tool()`` waits for a task the server answers with and returns
its result, so code written for plain calls keeps working when a tool becomes a task.
"""

from __future__ import annotations

import typing as t
from contextlib import suppress

import anyio
import mcp_types as types
from mcp.client import ClaimContext
from mcp.client import ClientExtension
from mcp.client import ResultClaim

from .task import Task
from .task import from_2026
from .tasks import cancel_task
from .tasks import outcome
from .tasks import wait_for_task
from .wire import CreatedTask

#: The identifier of the 2026-07-28 tasks extension.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


class TasksExtension(ClientExtension):
    """The 2026-07-28 tasks extension for the official client.

    Declares ``io.modelcontextprotocol/tasks`` on every request, and claims the
    ``CreateTaskResult`` a server may answer ``tools/call`` with: ``client.call_tool()``
    then waits for such a task (answering its questions with the client's callbacks)
    and returns its result, as if the call had been answered at once. On a
    ``mcp.Client``::

        Client(url, extensions=[TasksExtension()])

    on a bare ``ClientSession``::

        ClientSession(read, write, **TasksExtension().session_options())

    :param timeout: seconds ``call_tool()`` waits for a task; a task not over by then,
        or whose wait is cancelled or fails (a question the client's callbacks refuse,
        a failed poll), is cancelled on the server (``tasks/cancel``) and the call
        raises.
    """

    identifier = TASKS_EXTENSION

    def __init__(self, *, timeout: float = 3600.0) -> None:
        self.timeout = timeout

    def claims(self) -> t.Sequence[ResultClaim[t.Any]]:
        """The ``resultType: "task"`` shape of ``tools/call``, resolved by waiting."""
        return (ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve),)

    def session_options(self) -> dict[str, t.Any]:
        """The ``ClientSession`` keyword arguments that declare and claim the extension."""
        return {
            "extensions": {self.identifier: self.settings()},
            "result_claims": {self.identifier: list(self.claims())},
        }

    async def _resolve(self, created: CreatedTask, context: ClaimContext) -> types.CallToolResult:
        task = from_2026(created.model_dump(by_alias=True, mode="json", exclude_none=True))
        try:
            done = await wait_for_task(context.session, task, timeout=self.timeout)
        except TimeoutError:
            await self._cancel(context, task)
            raise TimeoutError(
                f"Task {task.task_id!r} of tool {context.tool_name!r} was not over after "
                f"{self.timeout:g} s (TasksExtension(timeout=...)): it was cancelled."
            ) from None
        except BaseException:
            # cancelled, or the wait failed (a question the callbacks refused, a poll the
            # server refused): the caller never saw the task's id, so nobody else can
            # cancel it, and an unanswered task would wait in input_required until its TTL
            await self._cancel(context, task)
            raise
        return outcome(done)

    @staticmethod
    async def _cancel(context: ClaimContext, task: Task) -> None:
        """Cancel the task nobody will wait for any more (at most 5 s, even when the
        caller is being cancelled); a task already over or gone is left as it is, and a
        cancel that fails (the connection broke) does not hide why the wait ended."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(5), suppress(Exception):
            await cancel_task(context.session, task)


__all__ = ["TASKS_EXTENSION", "TasksExtension"]
