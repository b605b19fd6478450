"""Tasks: durable, long-running tool calls, in both protocol eras.

A tool declares whether it runs as a task with ``@mcp.tool(task=...)``:
``"forbidden"`` (the default), ``"optional"`` or ``"required"``. Two
flavours share one record and one executor:

- **2026-07-28**, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663):
  the server decides. A ``tools/call`` of a task tool from a client that
  declares the extension in its ``_meta`` capabilities is answered with a
  ``CreateTaskResult`` (``resultType: "task"``); the client polls
  ``tasks/get``, answers ``inputRequests`` with ``tasks/update`` and may
  ``tasks/cancel``. A ``"required"`` tool called without the extension fails
  with -32021.
- **2025-11-25**, experimental tasks: the client asks with ``params.task``;
  ``tasks/get``, ``tasks/result`` (which blocks until the task ends and carries
  the task's elicitation and sampling requests on its stream), ``tasks/list``
  and ``tasks/cancel``.

The protocol side (``tools/call`` as a task, the ``tasks/*`` methods) is the
``Tasks`` extension (:mod:`flask_mcp.extensions.tasks`); this module holds what it
and the executors share. The record lives in the backend's task store (memory or Redis), so any
worker answers for any task. The handler runs through the one runner
(:func:`flask_mcp.transport.runner.spawn`) in an executor
(:mod:`flask_mcp.transport.tasks`, or Celery): inside it, ``ctx.progress()``
sets the task's ``statusMessage``, ``ctx.elicit()``/``ctx.create_message()``/
``ctx.list_roots()``/``ctx.ask()`` move the task to ``input_required`` until the
answers arrive, and ``ctx.cancelled`` turns true on ``tasks/cancel``.
"""

from __future__ import annotations

import time
import typing as t

from ..content import error_result
from ..errors import INTERNAL_ERROR
from ..errors import MCPError
from ..errors import RequestCancelled
from ..errors import URLElicitationRequired
from ..runtime.tasks import RELATED_TASK
from ..runtime.tasks import TERMINAL
from ..runtime.tasks import V2025
from ..runtime.tasks import V2026
from ..runtime.tasks import check_lease
from ..runtime.tasks import create as create
from ..runtime.tasks import now_iso
from ..runtime.tasks import set_status
from ..runtime.tasks import settle as settle
from ..runtime.tasks import store_of
from ..runtime.tasks import wire
from ..schema import ArgumentError
from ..schema import validate_arguments
from .call import Call
from .call import ToolCall
from .mrtr import url_elicitations
from .task_context import BUSY as BUSY
from .task_context import BUSY_CLIENT as BUSY_CLIENT
from .task_context import EXTENSION as EXTENSION
from .task_context import MAX_LOGS as MAX_LOGS
from .task_context import MODES as MODES
from .task_context import POLL as POLL
from .task_context import Executor as Executor
from .task_context import TaskBody as TaskBody
from .task_context import TaskCall as TaskCall
from .task_context import TaskContext as TaskContext
from .task_context import answer_inputs as answer_inputs
from .task_context import auth_grant as auth_grant
from .task_context import auth_of as auth_of
from .task_context import caller_of as caller_of
from .task_context import opted_in as opted_in
from .task_context import owner_of as owner_of
from .task_context import refuse_inputs as refuse_inputs
from .task_context import take_logs as take_logs
from .task_context import task_call as task_call


def finished_within(state: t.Any, task_id: str, wait_ms: int) -> dict[str, t.Any] | None:
    """Return the result of a task that completes within ``wait_ms`` (the immediate result).

    A 2026-07-28 server chooses whether a call becomes a task; one that is over
    at once is answered as a plain ``tools/call`` (``MCP_TASK_IMMEDIATE_MS``).

    :raises MCPError: the task failed within the wait (its JSON-RPC error, ``data`` included).
    """
    deadline = time.monotonic() + wait_ms / 1000
    store = store_of(state)
    while True:
        record = store.get(task_id)
        status = None if record is None else record.get("status")
        if status == "completed":
            return wire(t.cast("dict[str, t.Any]", record))["result"]  # type: ignore[no-any-return]
        if status == "failed":
            error = wire(t.cast("dict[str, t.Any]", record))["error"]
            raise MCPError(
                error.get("code", INTERNAL_ERROR), error.get("message", "failed"), error.get("data")
            )
        if status != "working" or time.monotonic() >= deadline:
            return None  # still running, asking for input, or cancelled: a task
        time.sleep(min(0.01, max(deadline - time.monotonic(), 0)))


def asking_url_elicitations(body: TaskBody) -> TaskBody:
    """Return ``body`` asking a 2026-07-28 task's client for a ``URLElicitationRequired``.

    2026-07-28 has no error -32042: a task asks for input in its ``inputRequests``
    (status ``input_required``), as a plain call answers ``input_required`` with the
    :exc:`~flask_mcp.URLElicitationRequired`'s elicitations. Once the client accepts them
    all (``tasks/update``) the handler runs again, as on the plain call's retry, and
    decides whether the user completed the flow; that run starts as the retry does
    (:meth:`TaskContext.run_again`). A decline or a cancel ends the task
    ``cancelled``. A 2025-11-25 task fails with -32042, which is what its request would
    have answered.

    :raises MissingClientCapability: the client did not declare ``elicitation.url``
        (the task fails with -32021, as the plain call would).
    """

    def run(call: Call) -> dict[str, t.Any]:
        while True:
            try:
                return body(call)
            except URLElicitationRequired as exc:
                ctx = call.ctx
                if not isinstance(call, TaskCall) or call.task_flavour != V2026 or ctx is None:
                    raise
                asked = url_elicitations(call, exc).requests
                task_ctx = t.cast(TaskContext, ctx)
                answers = task_ctx.ask_anew(
                    {key: (r["method"], r["params"]) for key, r in asked.items()}
                )
                refused = sorted(
                    {str(answer.get("action")) for answer in answers.values()} - {"accept"}
                )
                if refused:
                    message = (
                        f"The user answered {' and '.join(refused)} to the URL elicitation "
                        "this task needs (URLElicitationRequired); call the tool again to retry."
                    )
                    set_status(call.state, call.task_id, "cancelled", statusMessage=message)
                    raise RequestCancelled() from None
                task_ctx.run_again(answers)  # as the plain call's retry

    return run


def record_body(dispatcher: t.Any, record: dict[str, t.Any]) -> TaskBody:
    """Return the run of a task rebuilt from its record, in another process (Celery).

    The arguments were validated when the task was created; they are converted
    again here because the validated values (models, dates) do not travel.
    """

    def body(call: Call) -> dict[str, t.Any]:
        name = record["request"]["name"]
        tool = dispatcher.registry.tools.get(name)
        if tool is None:
            raise MCPError(
                INTERNAL_ERROR,
                f"The tool {name!r} of this task is not registered in this worker: start the "
                "worker on the module that declares it.",
            )
        arguments = call.params.get("arguments") or {}
        call.scopes = tool.scopes  # what require_scopes() adds to
        try:
            values = validate_arguments(tool.input, arguments)
        except ArgumentError as exc:
            return error_result(str(exc))
        return t.cast(
            "dict[str, t.Any]", dispatcher.run_tool(ToolCall(call, tool, arguments, values))
        )

    return asking_url_elicitations(body)


__all__ = [
    "BUSY",
    "BUSY_CLIENT",
    "EXTENSION",
    "MAX_LOGS",
    "MODES",
    "POLL",
    "RELATED_TASK",
    "TERMINAL",
    "V2025",
    "V2026",
    "Executor",
    "TaskBody",
    "TaskCall",
    "TaskContext",
    "answer_inputs",
    "auth_grant",
    "asking_url_elicitations",
    "auth_of",
    "finished_within",
    "now_iso",
    "opted_in",
    "owner_of",
    "caller_of",
    "record_body",
    "refuse_inputs",
    "check_lease",
    "create",
    "settle",
    "set_status",
    "store_of",
    "take_logs",
    "task_call",
    "wire",
]
