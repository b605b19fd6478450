"""Tasks from Python: call a tool as a task, poll it, answer its questions, read its result.

Both flavours, chosen by the protocol version the session negotiated:

- **2025-11-25** (experimental tasks, ``mode="legacy"``): the client asks for a task with
  ``params.task``; ``tasks/get``, ``tasks/result`` (the task's questions arrive on its
  stream and the session's callbacks answer them), ``tasks/list``, ``tasks/cancel``.
- **2026-07-28** (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663): the server
  decides; the session must declare the extension (``TasksExtension``); ``tasks/get``
  carries the questions (``inputRequests``) and, once the task is over, its result;
  ``tasks/update`` answers; every ``tasks/*`` request names the task in ``Mcp-Name``.

Every function takes a :class:`mcp.Client` or its :class:`mcp.client.ClientSession`,
and returns the same :class:`~flask_mcp.client.task.Task` in both eras. A task's
questions (elicitation, sampling, roots) are answered by the callbacks the client was
built with (``elicitation_callback=`` ...), as for a plain call.
"""

from __future__ import annotations

import dataclasses
import math
import typing as t

import anyio
import mcp_types as types
from mcp import Client
from mcp import MCPError
from mcp.client import ClientSession

from .task import Task
from .task import TaskCancelled
from .task import TaskError
from .task import TaskPage
from .task import answered_at_once
from .task import from_2025
from .task import from_2026
from .wire import CancelTask
from .wire import GetTask
from .wire import TaskParams
from .wire import UpdateTask
from .wire import UpdateTaskParams
from .wire import answer_inputs
from .wire import is_modern
from .wire import send
from .wire import send_unvalidated
from .wire import session_of

#: Rounds of multi-round requests (``InputRequiredResult``) before a task is created.
MAX_INPUT_ROUNDS = 10
#: The shortest wait between two ``tasks/get``, and the wait when the server suggests
#: none; otherwise the client waits the ``pollIntervalMs`` the server suggests.
MIN_POLL = 0.05
DEFAULT_POLL = 0.5


async def call_tool_as_task(
    client: ClientSession | Client,
    name: str,
    arguments: dict[str, t.Any] | None = None,
    *,
    ttl: float | None = None,
    read_timeout: float | None = None,
) -> Task:
    """Call tool ``name`` as a task; return the task the server created.

    At 2025-11-25 the call carries ``params.task`` (with ``ttl`` in seconds, when given:
    the server keeps the task that long at most). At 2026-07-28 the server decides: the
    client cannot ask for a ``ttl`` (the task's ``ttl_ms`` says what the server keeps),
    questions the tool asks before its task starts (multi-round requests) are answered
    by the client's callbacks. A call the server answers at once (a plain
    ``CallToolResult``, in either era) comes back as a terminal :class:`Task` whose
    :attr:`Task.created` is false, ``completed``, or ``failed`` for a 2025-11-25 tool
    error (``isError``), as a task of that era would end.

    :param read_timeout: seconds to wait for each answer (default: the session's).
    :raises MCPError: the server refused the call (-32601: the tool does not run as a
        task at 2025-11-25; -32021: the client did not declare the tasks extension).
    :raises TaskError: a 2025-11-25 server that does not offer tasks.
    """
    session = session_of(client)
    if is_modern(session):
        return await _call_2026(session, name, arguments, read_timeout)
    return await _call_2025(session, name, arguments, ttl, read_timeout)


async def _call_2025(
    session: ClientSession,
    name: str,
    arguments: dict[str, t.Any] | None,
    ttl: float | None,
    read_timeout: float | None,
) -> Task:
    capabilities = session.server_capabilities
    tasks = capabilities.tasks if capabilities is not None else None
    requests = tasks.requests if tasks is not None else None
    if requests is None or requests.tools is None or requests.tools.call is None:
        raise TaskError(
            "The server does not run tools as tasks (its capabilities have no "
            f"tasks.requests.tools.call): call the tool with call_tool({name!r}, ...)."
        )
    metadata = types.TaskMetadata(ttl=None if ttl is None else math.ceil(ttl * 1000))
    params = types.CallToolRequestParams(name=name, arguments=arguments, task=metadata)
    raw = await send_unvalidated(
        session,
        "tools/call",
        params.model_dump(by_alias=True, mode="json", exclude_none=True),
        read_timeout,
    )
    if isinstance(raw.get("task"), dict):
        return from_2025(raw["task"])
    return answered_at_once(raw, modern=False)


async def _call_2026(
    session: ClientSession,
    name: str,
    arguments: dict[str, t.Any] | None,
    read_timeout: float | None,
) -> Task:
    responses: dict[str, types.InputResponse] | None = None
    state: str | None = None
    for _ in range(MAX_INPUT_ROUNDS + 1):
        params = types.CallToolRequestParams(
            name=name, arguments=arguments, input_responses=responses, request_state=state
        )
        raw = await send(session, types.CallToolRequest(params=params), read_timeout)
        kind = raw.get("resultType")
        if kind == "task":
            return from_2026(raw)
        if kind != "input_required":
            return answered_at_once(raw, modern=True)
        needed = types.InputRequiredResult.model_validate(raw)
        wire_requests = raw.get("inputRequests") or {}
        responses = await answer_inputs(session, wire_requests) if needed.input_requests else None
        state = needed.request_state
    raise TaskError(
        f"The server asked for input more than {MAX_INPUT_ROUNDS} times before starting "
        f"tool {name!r} as a task."
    )


async def get_task(
    client: ClientSession | Client, task: Task | str, *, read_timeout: float | None = None
) -> Task:
    """Ask the server for the task's current state (``tasks/get``).

    At 2026-07-28 a terminal task carries its result or error, and an ``input_required``
    one its questions. A 2025-11-25 task's outcome comes from :func:`wait_for_task`.

    :param read_timeout: seconds to wait for the server's answer (default: the client's
        ``read_timeout_seconds``, none unless it was given); ``MCPError`` (-32001,
        "timed out") after it.
    :raises MCPError: the server does not know the task (-32602: unknown, expired, or
        another caller's).
    """
    session = session_of(client)
    if isinstance(task, Task) and not task.created:
        return task
    task_id = task.task_id if isinstance(task, Task) else task
    if is_modern(session):
        request = GetTask(params=TaskParams(task_id=task_id))
        return from_2026(await send(session, request, read_timeout))
    legacy = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return from_2025(await send(session, legacy, read_timeout))


async def wait_for_task(
    client: ClientSession | Client, task: Task | str, *, timeout: float
) -> Task:
    """Poll the task until it is over, answering its questions; return it with its outcome.

    Polls ``tasks/get`` as often as the server suggests (``pollIntervalMs``, at most
    every 0.05 s; every 0.5 s when it suggests none). The task's questions are
    answered with the client's callbacks: at 2026-07-28 each new ``inputRequests``
    key is answered once by ``tasks/update``; at 2025-11-25 an ``input_required``
    task is followed on the ``tasks/result`` stream, where the server sends them.
    The task returned is terminal and carries ``result`` (``completed``, or a
    2025-11-25 tool error) or ``error``.

    :param timeout: seconds to wait in all; the task goes on running after it.
    :raises TimeoutError: the task is not over after ``timeout`` seconds.
    :raises MCPError: a request failed, or a callback declined a question.
    """
    session = session_of(client)
    current = task if isinstance(task, Task) else Task(task_id=task, status="working")
    task_id = current.task_id
    try:
        with anyio.fail_after(timeout):
            if not isinstance(task, Task):
                current = await get_task(session, task_id)
            return await _wait(session, current)
    except TimeoutError:
        raise TimeoutError(
            f"Task {task_id!r} is not over after {timeout:g} s; it goes on running: wait "
            "for it again, or cancel it with cancel_task()."
        ) from None


async def _wait(session: ClientSession, current: Task) -> Task:
    modern = is_modern(session)
    answered: set[str] = set()
    while not current.terminal:
        if current.status == "input_required":
            if not modern:
                return await _follow_2025(session, current)
            pending = {k: v for k, v in current.input_requests.items() if k not in answered}
            if pending:
                await answer_task(session, current, await answer_inputs(session, pending))
                answered.update(pending)
        interval = (current.poll_interval_ms or DEFAULT_POLL * 1000) / 1000
        await anyio.sleep(max(interval, MIN_POLL))
        current = await get_task(session, current)
    if not modern and current.created and current.status != "cancelled":
        return await _follow_2025(session, current)
    return current


async def _follow_2025(session: ClientSession, current: Task) -> Task:
    """2025-11-25: ``tasks/result`` blocks until the task is over; the server sends the
    task's questions on its stream and the session's callbacks answer them.

    It is held as long as the task runs, so the session's per-request read timeout does
    not apply (the ``timeout`` of :func:`wait_for_task` bounds it); an error that leaves
    the task running (the connection broke) is raised, not taken for its outcome.
    """
    request = types.GetTaskPayloadRequest(
        params=types.GetTaskPayloadRequestParams(task_id=current.task_id)
    )
    result: types.CallToolResult | None = None
    failure: MCPError | None = None
    try:
        result = types.CallToolResult.model_validate(await send(session, request, math.inf))
    except MCPError as exc:
        failure = exc
    final = await get_task(session, current)
    if final.status == "cancelled":
        return final
    if failure is not None and not final.terminal:
        raise failure
    error = failure.error if failure is not None else None
    return dataclasses.replace(final, result=result, error=error)


async def task_result(
    client: ClientSession | Client, task: Task | str, *, timeout: float
) -> types.CallToolResult:
    """Wait for the task (see :func:`wait_for_task`) and return the tool's result.

    A tool error is an ``isError`` result in both flavours (a 2025-11-25 task that
    ends so is ``failed``, a 2026-07-28 one ``completed``).

    :raises MCPError: the task failed with a JSON-RPC error (its code and message).
    :raises TaskCancelled: the task was cancelled.
    :raises TimeoutError: the task is not over after ``timeout`` seconds.
    """
    return outcome(await wait_for_task(client, task, timeout=timeout))


def outcome(done: Task) -> types.CallToolResult:
    """The tool's result of a task that is over (see :func:`task_result`).

    :raises MCPError: the task failed with a JSON-RPC error.
    :raises TaskCancelled: the task was cancelled.
    :raises TaskError: the task ended without a result or an error.
    """
    if done.result is not None:
        return done.result
    if done.status == "cancelled":
        raise TaskCancelled(done)
    if done.error is not None:
        raise MCPError.from_error_data(done.error)
    raise TaskError(f"Task {done.task_id!r} ended {done.status!r} without a result or error.")


async def answer_task(
    client: ClientSession | Client,
    task: Task | str,
    responses: t.Mapping[str, types.InputResponse],
    *,
    read_timeout: float | None = None,
) -> None:
    """Answer some of a 2026-07-28 task's ``inputRequests`` by key (``tasks/update``).

    For answers the client's callbacks do not give; :func:`wait_for_task` answers with
    those on its own.

    :param read_timeout: seconds to wait for the server's answer (default: the client's
        ``read_timeout_seconds``, none unless it was given); ``MCPError`` (-32001,
        "timed out") after it.
    :raises TaskError: at 2025-11-25, where answers go back on the ``tasks/result``
        stream (use :func:`wait_for_task`); for a task the server never created (it
        answered the call at once: there is nothing to answer).
    """
    session = session_of(client)
    if not is_modern(session):
        raise TaskError(
            "At 2025-11-25 a task's questions arrive on the tasks/result stream and the "
            "client's callbacks answer them: use wait_for_task() or task_result()."
        )
    if isinstance(task, Task) and not task.created:
        raise TaskError(
            "The server answered the call at once, without creating a task: it has no "
            "questions to answer (its result is task.result)."
        )
    task_id = task.task_id if isinstance(task, Task) else task
    params = UpdateTaskParams(task_id=task_id, input_responses=dict(responses))
    await send(session, UpdateTask(params=params), read_timeout)


async def cancel_task(
    client: ClientSession | Client, task: Task | str, *, read_timeout: float | None = None
) -> Task:
    """Ask the server to cancel the task (``tasks/cancel``); return the task's state after.

    Cancellation is cooperative: a 2026-07-28 server acknowledges first and the task
    may still end otherwise (poll it); a 2025-11-25 server answers with the task.

    :param read_timeout: seconds to wait for each answer (2026-07-28: ``tasks/cancel``,
        then ``tasks/get``; default: the client's ``read_timeout_seconds``, none unless
        it was given); ``MCPError`` (-32001, "timed out") after it.
    :raises MCPError: the task is unknown, or (2025-11-25, -32602) already over.
    """
    session = session_of(client)
    if isinstance(task, Task) and not task.created:
        return task
    task_id = task.task_id if isinstance(task, Task) else task
    if is_modern(session):
        await send(session, CancelTask(params=TaskParams(task_id=task_id)), read_timeout)
        return await get_task(session, task_id, read_timeout=read_timeout)
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return from_2025(await send(session, request, read_timeout))


async def list_tasks(
    client: ClientSession | Client,
    *,
    cursor: str | None = None,
    read_timeout: float | None = None,
) -> TaskPage:
    """One page of the caller's tasks (``tasks/list``, 2025-11-25 only).

    :param read_timeout: seconds to wait for the server's answer (default: the client's
        ``read_timeout_seconds``, none unless it was given); ``MCPError`` (-32001,
        "timed out") after it.
    :raises TaskError: at 2026-07-28, where the tasks extension has no listing (keep the
        ids of the tasks you create).
    """
    session = session_of(client)
    if is_modern(session):
        raise TaskError(
            "2026-07-28 tasks cannot be listed (the tasks extension has no tasks/list): "
            "keep the ids of the tasks you create."
        )
    params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    raw = await send(session, types.ListTasksRequest(params=params), read_timeout)
    return TaskPage([from_2025(item) for item in raw.get("tasks") or []], raw.get("nextCursor"))


__all__ = [
    "answer_task",
    "call_tool_as_task",
    "cancel_task",
    "get_task",
    "list_tasks",
    "outcome",
    "task_result",
    "wait_for_task",
]
