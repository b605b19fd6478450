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

The record lives in the backend's task store (memory or Redis), so any
worker answers for any task. The handler runs through the one runner
(:func:`flask_mcp.transport.runner.spawn`) in an executor
(:mod:`flask_mcp.transport.tasks`, or Celery): inside it, ``ctx.progress()``
sets the task's ``statusMessage``, ``ctx.elicit()``/``ctx.create_message()``/
``ctx.list_roots()``/``ctx.ask()`` move the task to ``input_required`` until the
answers arrive, and ``ctx.cancelled`` turns true on ``tasks/cancel``.
"""

from __future__ import annotations

import secrets
import time
import typing as t

from .. import protocol
from .. import signals
from ..convert import to_json
from ..errors import INTERNAL_ERROR
from ..errors import ClientRequestError
from ..errors import InvalidParams
from ..errors import MCPError
from ..errors import MethodNotFound
from ..errors import MissingClientCapability
from ..runtime import concurrency as _concurrency
from ..runtime.tasks import RELATED_TASK
from ..runtime.tasks import TERMINAL
from ..runtime.tasks import V2025
from ..runtime.tasks import V2026
from ..runtime.tasks import check_lease
from ..runtime.tasks import now_iso
from ..runtime.tasks import set_status
from ..runtime.tasks import settle as settle
from ..runtime.tasks import store_of
from ..runtime.tasks import wire
from .call import Call
from .task_context import EXTENSION as EXTENSION
from .task_context import MODES as MODES
from .task_context import POLL
from .task_context import Executor as Executor
from .task_context import TaskCall as TaskCall
from .task_context import TaskContext as TaskContext
from .task_context import answer_inputs
from .task_context import context_factory as context_factory
from .task_context import opted_in
from .task_context import owner_of
from .task_context import task_call as task_call


def _finished_within(state: t.Any, task_id: str, wait_ms: int) -> dict[str, t.Any] | None:
    """Return the result of a task that completes within ``wait_ms`` (the immediate result).

    A 2026-07-28 server chooses whether a call becomes a task; one that is over
    at once is answered as a plain ``tools/call`` (``MCP_TASK_IMMEDIATE_MS``).

    :raises MCPError: the task failed within the wait (its JSON-RPC error).
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
            raise MCPError(error.get("code", INTERNAL_ERROR), error.get("message", "failed"))
        if status != "working" or time.monotonic() >= deadline:
            return None  # still running, asking for input, or cancelled: a task
        time.sleep(min(0.01, max(deadline - time.monotonic(), 0)))


# -- the methods --------------------------------------------------------------------------


#: The largest ``tasks/list`` cursor: an offset, far below the signed 64-bit ranges of Redis.
_MAX_CURSOR = 2**53


class TaskMethods:
    """``tools/call`` as a task, and the ``tasks/*`` methods (mixed into the dispatcher)."""

    registry: t.Any

    def tools_call(self, call: Call) -> dict[str, t.Any]:
        if isinstance(call, TaskCall):
            return super().tools_call(call)  # type: ignore[misc,no-any-return]
        name = call.params.get("name")
        tool = self.registry.tools.get(name) if isinstance(name, str) else None
        mode = getattr(tool, "task", "forbidden") if tool is not None else "forbidden"
        flavour = None
        if call.era == protocol.STATELESS:
            if mode != "forbidden" and opted_in(call):
                flavour = V2026
            elif mode == "required":
                raise MissingClientCapability("extensions", EXTENSION)
        elif call.version >= "2025-11-25":
            asked = call.params.get("task")
            if asked is not None:
                if not isinstance(asked, dict):
                    raise InvalidParams("Invalid params: task must be an object {ttl?}.")
                if mode == "forbidden":
                    raise MCPError(
                        -32601,
                        f"Tool {name!r} does not support tasks (execution.taskSupport is "
                        "'forbidden'); call it without params.task.",
                    )
                flavour = V2025
            elif mode == "required":
                raise MCPError(
                    -32601,
                    f"Tool {name!r} must be called as a task (execution.taskSupport is "
                    "'required'); add params.task.",
                )
        if flavour is None or tool is None:
            if tool is not None and tool.prepare is not None and call.ctx is not None:
                call.ctx.prepared = t.cast(t.Any, self).call_user(
                    tool.prepare, call, None, (call.ctx,)
                )
            return super().tools_call(call)  # type: ignore[misc,no-any-return]
        return self.create_task(call, tool, flavour)

    def create_task(self, call: Call, tool: t.Any, flavour: str) -> dict[str, t.Any]:
        """Create the task of a ``tools/call``, start it, and return the ``CreateTaskResult``."""
        from ..content import error_result
        from ..schema import ArgumentError

        state = call.state
        settings = state.settings
        arguments = call.params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise InvalidParams("Invalid params: 'arguments' must be an object.")
        t.cast(t.Any, self).authorize(tool.scopes, call)
        try:
            tool.input.validate(arguments)
        except ArgumentError as exc:
            return error_result(str(exc))
        executor: Executor | None = getattr(state, "task_executor", None)
        if executor is None:
            raise MCPError(INTERNAL_ERROR, "No task executor is configured for this app.")
        if not executor.has_room(state):
            raise MCPError(
                INTERNAL_ERROR,
                "Too many tasks are running in this worker (MCP_TASK_MAX_RUNNING); retry later.",
            )
        prepared = None
        if tool.prepare is not None:
            prepared = t.cast(t.Any, self).call_user(tool.prepare, call, None, (call.ctx,))
        ttl = settings.task_ttl
        asked = call.params.get("task")
        if flavour == V2025 and isinstance(asked, dict) and isinstance(asked.get("ttl"), int):
            ttl = min(ttl, max(asked["ttl"], 1000) / 1000)
        meta = call.params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        if call.session is not None:
            capabilities = call.session.client_capabilities
            client_info = call.session.client_info
        else:
            capabilities = meta.get(protocol.META_CLIENT_CAPABILITIES) or {}
            client_info = meta.get(protocol.META_CLIENT_INFO) or {}
        created = time.time()
        record: dict[str, t.Any] = {
            "taskId": secrets.token_urlsafe(24),
            "status": "working",
            "createdAt": now_iso(created),
            "lastUpdatedAt": now_iso(created),
            "ttlMs": int(ttl * 1000),
            "pollIntervalMs": settings.task_poll_interval_ms,
            "created": created,
            "lease": created,
            "owner": owner_of(call),
            "session": call.session.id if call.session is not None else None,
            "flavour": flavour,
            "inputRequests": {},
            "responses": {},
            "prepared": prepared,
            "request": {
                "name": tool.name,
                "arguments": arguments,
                "version": call.version,
                "era": call.era,
                "capabilities": capabilities,
                "clientInfo": client_info,
                "principal": None if call.auth is None else call.auth.principal,
                "pathArgs": to_json(call.path_args),
            },
        }
        store_of(state).create(record, ttl)
        signals.send(signals.task_created, state.app, task_id=record["taskId"], tool=tool.name)
        executor.start(self, call, record)
        if flavour == V2026 and settings.task_immediate_ms:
            finished = _finished_within(state, record["taskId"], settings.task_immediate_ms)
            if finished is not None:
                return finished
        task = wire(record, detailed=False)
        if flavour == V2025:
            return {"task": task}
        return {"resultType": "task", **task}

    # -- lookups ------------------------------------------------------------------

    def _task(self, call: Call) -> dict[str, t.Any]:
        if call.era == protocol.STATELESS and not opted_in(call):
            raise MissingClientCapability("extensions", EXTENSION)
        task_id = call.params.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidParams("Invalid params: 'taskId' is required and must be a string.")
        record = store_of(call.state).get(task_id)
        if record is not None and record["request"].get("pathArgs", {}) != to_json(call.path_args):
            record = None  # created under another MCP_PATH (another tenant)
        if record is None or record.get("owner") != owner_of(call):
            raise InvalidParams(
                f"Failed to retrieve task: task {task_id!r} not found (it may have expired)."
            )
        return check_lease(call.state, record)

    def tasks_get(self, call: Call) -> dict[str, t.Any]:
        return wire(self._task(call))

    def tasks_update(self, call: Call) -> dict[str, t.Any]:
        if call.era != protocol.STATELESS:
            raise MethodNotFound(call.method)
        record = self._task(call)
        responses = call.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams(
                "Invalid params: inputResponses must be an object of answers by key."
            )
        answer_inputs(call.state, record["taskId"], responses)
        return {}

    def tasks_cancel(self, call: Call) -> dict[str, t.Any]:
        record = self._task(call)
        if call.era == protocol.STATELESS:
            set_status(
                call.state, record["taskId"], "cancelled", statusMessage="Cancelled by the client."
            )
            return {}
        if record["status"] in TERMINAL:
            raise InvalidParams(
                f"Invalid params: task {record['taskId']!r} is already {record['status']}; "
                "only a working or input_required task can be cancelled."
            )
        updated = set_status(
            call.state, record["taskId"], "cancelled", statusMessage="Cancelled by the client."
        )
        return wire(updated or record)

    def tasks_list(self, call: Call) -> dict[str, t.Any]:
        if call.era == protocol.STATELESS:
            raise MethodNotFound(call.method)
        cursor = call.params.get("cursor")
        try:
            start = int(cursor) if cursor is not None else 0
        except (TypeError, ValueError):
            start = -1
        if not 0 <= start <= _MAX_CURSOR:  # Redis ranges are signed 64-bit: -32603 past it
            raise InvalidParams("Invalid params: unknown cursor; send the nextCursor returned.")
        records, following = store_of(call.state).list(
            owner_of(call), start, call.state.settings.page_size
        )
        result: dict[str, t.Any] = {"tasks": [wire(check_lease(call.state, r)) for r in records]}
        if following is not None:
            result["nextCursor"] = str(following)
        return result

    def tasks_result(self, call: Call) -> dict[str, t.Any]:
        """Block until the task ends; carry its requests to the client on this stream."""
        if call.era == protocol.STATELESS:
            raise MethodNotFound(call.method)
        record = self._task(call)
        task_id = record["taskId"]
        ctx = call.ctx
        sent: set[str] = set()
        while record["status"] not in TERMINAL:
            pending = {
                k: v for k, v in (record.get("inputRequests") or {}).items() if k not in sent
            }
            if pending and ctx is not None:
                for key, request in pending.items():
                    sent.add(key)
                    try:
                        answer = ctx.send_request(request["method"], request["params"])
                    except ClientRequestError as exc:
                        raise MCPError(INTERNAL_ERROR, str(exc)) from None
                    answer_inputs(call.state, task_id, {key: answer})
            else:
                if ctx is not None:
                    ctx.check_cancelled()
                _concurrency.sleep(POLL)
            record = self._task(call)
        related = {RELATED_TASK: {"taskId": task_id}}
        if record["status"] == "cancelled":
            raise MCPError(INTERNAL_ERROR, f"Task {task_id!r} was cancelled.", related)
        if "error" in record and record.get("result") is None:
            error = record["error"]
            raise MCPError(
                error.get("code", INTERNAL_ERROR), error.get("message", ""), error.get("data")
            )
        result = dict(record.get("result") or {})
        result["_meta"] = {**(result.get("_meta") or {}), **related}
        return result


__all__ = [
    "EXTENSION",
    "MODES",
    "RELATED_TASK",
    "TERMINAL",
    "Executor",
    "TaskCall",
    "TaskContext",
    "TaskMethods",
    "answer_inputs",
    "check_lease",
    "context_factory",
    "settle",
    "set_status",
    "store_of",
    "task_call",
    "wire",
]
