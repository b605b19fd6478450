"""The ``Tasks`` extension: durable tool calls in both protocol eras (see :doc:`/tasks`).

A tool declares whether it runs as a task with ``@mcp.tool(task=...)``. Two flavours
share one record and one executor:

- **2026-07-28**, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663): the
  server decides. A ``tools/call`` of a task tool from a client that declares the
  extension in its ``_meta`` capabilities is answered with a ``CreateTaskResult``; the
  client polls ``tasks/get``, answers ``inputRequests`` with ``tasks/update`` and may
  ``tasks/cancel``. A ``"required"`` tool called without the extension fails with -32021.
- **2025-11-25**, experimental tasks: the client asks with ``params.task``;
  ``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel``.

The task is made in :meth:`Tasks.intercept_tool_call`, that is after the middleware,
the authorization and the validation of the ``tools/call``: the task's run goes on
from there (``call_next`` in the executor), so a task call passes each of them once.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import time
import typing as t

from ... import protocol
from ... import signals
from ...content import error_result
from ...convert import to_json
from ...errors import INTERNAL_ERROR
from ...errors import BackendUnavailable
from ...errors import ClientRequestError
from ...errors import InvalidParams
from ...errors import MCPError
from ...errors import MissingClientCapability
from ...errors import ToolError
from ...errors import store_unavailable
from ...kernel.extension import Extension
from ...runtime import concurrency as _concurrency
from ...server import tasks as _tasks
from ...server.call import client_facts
from ...server.context import relay_request
from ...server.registry import decode_cursor
from ...server.registry import encode_cursor

if t.TYPE_CHECKING:
    from ...server.call import Call
    from ...server.call import ToolCall
    from ...server.call import ToolCallNext
    from ...server.context import Context

logger = logging.getLogger("flask_mcp")

#: The largest ``tasks/list`` cursor: an offset, far below the signed 64-bit ranges of Redis.
MAX_CURSOR = 2**53
#: Names the ``tasks/list`` cursors, so that the other lists refuse them (and it theirs).
CURSOR_KIND = "tasks"


def _call_of(ctx: Context) -> Call:
    """Return the call an extension method serves: the kernel builds every ``ctx`` with it."""
    if ctx.call is None:
        raise RuntimeError("A tasks/* method runs with the Context the kernel gives it.")
    return t.cast("Call", ctx.call)


class Tasks(Extension):
    """``tools/call`` as a task, and ``tasks/get``, ``tasks/update``, ``tasks/cancel``,
    ``tasks/list`` and ``tasks/result``.

    Its capability depends on the era (:meth:`capability`): the core ``tasks``
    capability in ``initialize``, ``extensions["io.modelcontextprotocol/tasks"]`` in
    ``server/discover``, advertised as soon as a tool may run as a task.
    """

    id = _tasks.EXTENSION
    handshake_capability = "tasks"

    def __init__(self) -> None:
        self._mcp: t.Any = None
        #: The ``tasks/result`` waiting in this process, one per session and task: the
        #: token of each (see :meth:`tasks_result`).
        self._waiting: dict[tuple[str | None, str], object] = {}
        self._waiting_lock = _concurrency.native_lock()  # nothing waits while holding it

    def capability(self, era: str = protocol.HANDSHAKE) -> dict[str, t.Any] | None:
        """Return the tasks capability of ``era``, or ``None`` while every tool is ``forbidden``.

        2026-07-28: ``{}`` under ``extensions["io.modelcontextprotocol/tasks"]``;
        2025-11-25: the experimental ``tasks`` capability (``list``, ``cancel`` and
        task-augmented ``tools/call``), see :attr:`handshake_capability`.
        """
        if self._mcp is None or all(
            tool.task == "forbidden" for tool in list(self._mcp.registry.tools.values())
        ):
            return None
        if era == protocol.STATELESS:
            return {}
        return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}

    def setup(self, mcp: t.Any) -> None:
        self._mcp = mcp
        mcp.dispatcher.core.refuse_arguments = self.refuse_arguments
        mcp.dispatcher.core.refuse_vetoed = self.refuse_vetoed

    # -- tools/call as a task -------------------------------------------------------

    def flavour(self, call: Call, tool: t.Any) -> str | None:
        """Return the task flavour a ``tools/call`` asks for, or ``None`` for a plain call.

        A server that declares no ``tasks`` capability (every tool is ``"forbidden"``)
        ignores ``params.task``, as the 2025-11-25 spec requires of such a receiver.

        :raises MCPError: the tool's ``task`` mode and the request disagree.
        """
        mode = getattr(tool, "task", "forbidden")
        name = tool.name
        if call.era == protocol.STATELESS:
            if mode != "forbidden" and _tasks.opted_in(call):
                return _tasks.V2026
            if mode == "required":
                raise MissingClientCapability("extensions", _tasks.EXTENSION)
            return None
        if call.version < "2025-11-25":
            return None
        asked = call.params.get("task")
        if asked is not None:
            if not isinstance(asked, dict):
                raise InvalidParams("Invalid params: task must be an object {ttl?}.")
            ttl = asked.get("ttl")
            if ttl is not None and (type(ttl) not in (int, float) or not 0 <= ttl < float("inf")):
                raise InvalidParams(
                    f"Invalid params: task.ttl must be a number of milliseconds, not {ttl!r}"
                    " (leave it out for the server's default)."
                )
            if mode == "forbidden":
                if self.capability(call.era) is None:
                    return None  # no tasks capability: the spec says to ignore params.task
                raise MCPError(
                    -32601,
                    f"Tool {name!r} does not support tasks (execution.taskSupport is "
                    "'forbidden'); call it without params.task.",
                )
            return _tasks.V2025
        if mode == "required":
            raise MCPError(
                -32601,
                f"Tool {name!r} must be called as a task (execution.taskSupport is "
                "'required'); add params.task.",
            )
        return None

    def intercept_tool_call(self, tool_call: ToolCall, call_next: ToolCallNext) -> dict[str, t.Any]:
        """Turn the call into a task when the tool and the request ask for one."""
        call, tool = tool_call.call, tool_call.tool
        flavour = self.flavour(call, tool)
        if flavour is None:
            if tool.prepare is not None and call.ctx is not None:
                dispatcher = self._mcp.dispatcher
                call.ctx.prepared = dispatcher.call_user(tool.prepare, call, None, (call.ctx,))
            return call_next(tool_call)
        return self.create_task(tool_call, flavour, call_next)

    #: It passes results on unchanged: a ``structuredContent`` keeps its encoded bytes
    #: (:class:`~flask_mcp.json_codec.EncodedJSON`).
    intercept_tool_call.keeps_tool_results = True  # type: ignore[attr-defined]

    def refuse_arguments(self, tool_call: ToolCall, refused: dict[str, t.Any]) -> dict[str, t.Any]:
        """Answer a ``tools/call`` whose arguments failed validation (``refused``: its
        ``isError`` result) in the form the call's task mode asks for.

        The tool's task mode is checked first, as for valid arguments (-32601, -32021).
        At 2025-11-25 a call that asks for a task gets one: a receiver that accepts a
        task-augmented request MUST answer with a ``CreateTaskResult``, so the task is
        created and fails at once with ``refused``, which ``tasks/result`` returns (a
        plain ``CallToolResult`` is not a valid answer there: the TypeScript SDK's client
        rejects it). At 2026-07-28 the server decides: it answers at once, nothing runs.
        """
        if self.flavour(tool_call.call, tool_call.tool) != _tasks.V2025:
            return refused
        return self._failed_task(tool_call, refused)

    def refuse_vetoed(self, tool_call: ToolCall, refused: dict[str, t.Any]) -> dict[str, t.Any]:
        """Answer a ``tools/call`` of a known tool that a middleware refused with a
        ``ToolError`` (``refused``: its ``isError`` result).

        Before ``call_next``, a 2025-11-25 call is answered as :meth:`refuse_arguments`
        answers: the task mode is checked first (-32601: the spec's MUST for a
        ``required`` tool called without ``params.task``), and a call that asks for a
        task gets one, failed with ``refused``. At 2026-07-28 the server can answer
        without a task (no -32021), so ``refused`` is the answer.

        After ``call_next`` made the task, the task ends with ``refused`` (its run is
        stopped) unless it ended first, as a call's result is replaced by it: nothing else
        would read the task.
        The request was accepted, so a 2025-11-25 one is answered with the task's
        ``CreateTaskResult`` (the spec's MUST); at 2026-07-28 the server answers at once.
        """
        call = tool_call.call
        if call.created_task is not None:
            state = call.state
            record = _tasks.store_of(state).get(call.created_task)
            if record is None:  # expired meanwhile: there is nothing to end
                return refused
            _tasks.settle(state, record["taskId"], {"result": refused})
            if record["flavour"] != _tasks.V2025:
                return refused
            return {"task": _tasks.wire(record, detailed=False)}
        if call.era != protocol.HANDSHAKE:
            return refused
        return self.refuse_arguments(tool_call, refused)

    def create_task(
        self, tool_call: ToolCall, flavour: str, call_next: ToolCallNext
    ) -> dict[str, t.Any]:
        """Create the task of a ``tools/call``, start it, and return the ``CreateTaskResult``.

        A :class:`~flask_mcp.ToolError` from the tool's ``prepare=`` at 2025-11-25 is a
        task failed at once with it (:meth:`_failed_task`); at 2026-07-28, and for an
        :class:`~flask_mcp.MCPError` from it, it is the answer.
        """
        call, tool = tool_call.call, tool_call.tool
        dispatcher = self._mcp.dispatcher
        state = call.state
        executor: _tasks.Executor | None = getattr(state, "task_executor", None)
        if executor is None:
            raise MCPError(INTERNAL_ERROR, "No task executor is configured for this app.")
        refused = executor.refusal(call)
        if refused is not None:
            raise MCPError(INTERNAL_ERROR, refused)
        prepared = None
        if tool.prepare is not None:
            try:
                prepared = dispatcher.call_user(tool.prepare, call, None, (call.ctx,))
            except ToolError as exc:
                if flavour != _tasks.V2025:
                    raise  # 2026-07-28: the server decides; the isError result at once
                # The client asked for a task: it gets one, failed with the tool error.
                return self._failed_task(tool_call, error_result(str(exc) or type(exc).__name__))
        record = self._store_task(tool_call, flavour, prepared)

        def body(task_call: Call) -> dict[str, t.Any]:
            task_call.scopes = call.scopes  # what require_scopes() adds to
            return call_next(dataclasses.replace(tool_call, call=task_call))

        executor.start(dispatcher, call, record, _tasks.asking_url_elicitations(body))
        immediate_ms = state.settings.task_immediate_ms
        if flavour == _tasks.V2026 and immediate_ms:
            finished = _tasks.finished_within(state, record["taskId"], immediate_ms)
            if finished is not None:
                return finished
        task = _tasks.wire(record, detailed=False)
        if flavour == _tasks.V2025:
            return {"task": task}
        return {"resultType": "task", **task}

    def _failed_task(self, tool_call: ToolCall, refused: dict[str, t.Any]) -> dict[str, t.Any]:
        """Create the 2025-11-25 task of a ``tools/call`` refused before it ran, failed at
        once with ``refused`` (its ``isError`` result), and return the ``CreateTaskResult``.

        Nothing runs, so no executor is needed; the answer shows the task as created.
        """
        record = self._store_task(tool_call, _tasks.V2025, None)
        task = _tasks.wire(record, detailed=False)
        _tasks.settle(tool_call.call.state, record["taskId"], {"result": refused})
        return {"task": task}

    def _store_task(self, tool_call: ToolCall, flavour: str, prepared: t.Any) -> dict[str, t.Any]:
        """Make the record of a ``tools/call``'s task, ``working``, keep it and return it.

        :raises ~flask_mcp.errors.MCPError: the task store is unavailable (503).
        """
        call, tool = tool_call.call, tool_call.tool
        state = call.state
        settings = state.settings
        ttl = settings.task_ttl
        asked = call.params.get("task")
        if flavour == _tasks.V2025 and isinstance(asked, dict) and asked.get("ttl") is not None:
            ttl = min(ttl, max(asked["ttl"], 1000) / 1000)
        facts = client_facts(call)
        meta = call.params.get("_meta")  # the handler's ctx.meta, as in a plain call
        created = time.time()
        task_id = secrets.token_urlsafe(24)
        trace: dict[str, t.Any] = {}
        signals.send(signals.task_creating, state.app, task_id=task_id, tool=tool.name, trace=trace)
        record: dict[str, t.Any] = {
            "taskId": task_id,
            "status": "working",
            "createdAt": _tasks.now_iso(created),
            "lastUpdatedAt": _tasks.now_iso(created),
            "ttlMs": int(ttl * 1000),
            "pollIntervalMs": settings.task_poll_interval_ms,
            "created": created,
            "lease": created,
            "owner": _tasks.owner_of(call),
            "caller": _tasks.caller_of(call),
            "session": call.session.id if call.session is not None else None,
            "flavour": flavour,
            "inputRequests": {},
            "responses": {},
            "prepared": prepared,
            "trace": {k: v for k, v in trace.items() if isinstance(v, str)},
            "request": {
                "name": tool.name,
                "arguments": tool_call.arguments,
                "meta": meta if isinstance(meta, dict) else {},
                "version": call.version,
                "era": call.era,
                "capabilities": facts.capabilities,
                "clientInfo": facts.info,
                "logLevel": facts.log_level,
                "principal": None if call.auth is None else call.auth.principal,
                "pathArgs": to_json(call.path_args),
                "auth": _tasks.auth_grant(call.auth),
            },
        }
        try:
            _tasks.create(state, record, ttl)
        except BackendUnavailable as exc:
            # Nothing is kept and nothing runs (what the store's writes left is discarded):
            # the request met the outage before it started, so it is refused as the
            # transport refuses one (503, Retry-After), not answered as a handler that
            # failed. Where and why go to the log.
            logger.warning(
                "Refused a task tools/call of %r (id %r) with 503: the task store is "
                "unavailable: %s",
                tool.name,
                call.request_id,
                exc,
            )
            raise store_unavailable() from exc
        call.created_task = record["taskId"]
        signals.send(signals.task_created, state.app, task_id=record["taskId"], tool=tool.name)
        return record

    # -- the tasks/* methods ----------------------------------------------------------

    def _task(self, call: Call) -> dict[str, t.Any]:
        if call.era == protocol.STATELESS and not _tasks.opted_in(call):
            raise MissingClientCapability("extensions", _tasks.EXTENSION)
        task_id = call.params.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidParams("Invalid params: 'taskId' is required and must be a string.")
        record = _tasks.store_of(call.state).get(task_id)
        if record is not None and record["request"].get("pathArgs", {}) != to_json(call.path_args):
            record = None  # created under another MCP_PATH (another tenant)
        if record is None or record.get("owner") != _tasks.owner_of(call):
            raise InvalidParams(
                f"Failed to retrieve task: task {task_id!r} not found (it may have expired)."
            )
        return _tasks.check_lease(call.state, record)

    @Extension.method("tasks/get")
    def tasks_get(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        return _tasks.wire(self._task(_call_of(ctx)))

    @Extension.method("tasks/update", eras=[protocol.STATELESS])
    def tasks_update(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        call = _call_of(ctx)
        record = self._task(call)
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams(
                "Invalid params: inputResponses must be an object of answers by key."
            )
        _tasks.answer_inputs(call.state, record["taskId"], responses)
        return {}

    @Extension.method("tasks/cancel")
    def tasks_cancel(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        call = _call_of(ctx)
        record = self._task(call)
        if call.era == protocol.STATELESS:
            _tasks.set_status(
                call.state, record["taskId"], "cancelled", statusMessage="Cancelled by the client."
            )
            return {}
        if record["status"] not in _tasks.TERMINAL:
            updated = _tasks.set_status(
                call.state, record["taskId"], "cancelled", statusMessage="Cancelled by the client."
            )
            if updated is None:  # it expired meanwhile
                raise InvalidParams(
                    f"Failed to retrieve task: task {record['taskId']!r} not found (it may "
                    "have expired)."
                )
            record = updated
            if record["status"] == "cancelled":
                return _tasks.wire(record)
        # Terminal before the cancel, or it ended meanwhile (its handler returned between
        # the read and the change): the spec refuses a cancel of a terminal task.
        raise InvalidParams(
            f"Invalid params: task {record['taskId']!r} is already {record['status']}; "
            "only a working or input_required task can be cancelled."
        )

    @Extension.method("tasks/list", eras=[protocol.HANDSHAKE])
    def tasks_list(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        call = _call_of(ctx)
        cursor = params.get("cursor")
        start = 0 if cursor is None else decode_cursor(cursor, CURSOR_KIND)
        if start > MAX_CURSOR:  # Redis ranges are signed 64-bit: -32603 past it
            raise InvalidParams(
                "Invalid cursor: pass the nextCursor of a previous page of the same list unchanged."
            )
        # Past the end is an empty page, not an error: tasks expire, so the list may
        # have shrunk since the cursor was given.
        records, following = _tasks.store_of(call.state).list(
            _tasks.owner_of(call), start, call.state.settings.page_size
        )
        result: dict[str, t.Any] = {
            "tasks": [_tasks.wire(_tasks.check_lease(call.state, r)) for r in records]
        }
        if following is not None:
            result["nextCursor"] = encode_cursor(following, CURSOR_KIND)
        return result

    @Extension.method("tasks/result", eras=[protocol.HANDSHAKE], user_code=True)
    def tasks_result(self, params: dict[str, t.Any], ctx: Context) -> dict[str, t.Any]:
        """Block until the task ends; carry its requests, progress and log messages to the
        client on this stream.

        It waits past ``MCP_REQUEST_TIMEOUT``, as the spec has it block until the task
        ends: at most until the task expires (its ``ttl``), when it answers -32602. A
        question of the task it relays is given up (``notifications/cancelled`` to the
        client) when the task ends before the client answers: it answers what the ended
        task answers then, not after ``MCP_CLIENT_REQUEST_TIMEOUT``. A
        request the client answers with a JSON-RPC error raises
        :exc:`~flask_mcp.ClientRequestError` in the handler, as in a plain call.

        One waits per session and task in a process: a later ``tasks/result`` of the
        same task ends the wait of the one before (whose client most likely left: a
        connection dropped is no cancellation, so nothing else would end it), which
        answers with an error saying so.
        """
        call = _call_of(ctx)
        record = self._task(call)
        task_id = record["taskId"]
        waiter = (None if call.session is None else call.session.id, task_id)
        token = object()
        with self._waiting_lock:
            self._waiting[waiter] = token
        try:
            return self._wait_for_result(call, record, waiter, token)
        finally:
            with self._waiting_lock:
                if self._waiting.get(waiter) is token:
                    del self._waiting[waiter]

    def _wait_for_result(
        self,
        call: Call,
        record: dict[str, t.Any],
        waiter: tuple[str | None, str],
        token: object,
    ) -> dict[str, t.Any]:
        """Wait for the task of ``record`` to end while ``token`` is the one waiting as
        ``waiter``; carry its requests to the client meanwhile."""
        task_id = record["taskId"]
        if call.run is not None:
            expires = record["created"] + record["ttlMs"] / 1000 - time.time()
            call.run.deadline = max(call.run.deadline, time.monotonic() + expires + 1.0)
        context = call.ctx
        sent: set[str] = set()
        progress_sent = None

        def moot() -> bool:
            """Whether a relayed question's answer is no longer needed: the task ended
            (cancelled, its worker dead) or a later tasks/result waits instead."""
            if self._waiting.get(waiter) is not token:
                return True
            return self._task(call)["status"] in _tasks.TERMINAL

        while record["status"] not in _tasks.TERMINAL:
            if self._waiting.get(waiter) is not token:
                raise MCPError(
                    INTERNAL_ERROR,
                    f"A later tasks/result of task {task_id!r} in this session waits for its "
                    "result instead of this one: read the answer there, or send tasks/result "
                    "again.",
                    {_tasks.RELATED_TASK: {"taskId": task_id}},
                )
            if record.get("logs") and context is not None:
                self._send_logs(call, task_id)
            progress = record.get("progress")
            if progress is not None and progress != progress_sent and context is not None:
                progress_sent = progress  # the handler's last ctx.progress(), with its token
                context.send_notification("notifications/progress", progress)
            pending = {
                k: v for k, v in (record.get("inputRequests") or {}).items() if k not in sent
            }
            if pending and context is not None:
                for key, request in pending.items():
                    sent.add(key)
                    try:
                        answer = relay_request(context, request["method"], request["params"], moot)
                    except ClientRequestError as exc:
                        if exc.error is None:  # no error answer: a later tasks/result asks
                            raise MCPError(INTERNAL_ERROR, str(exc)) from None
                        _tasks.refuse_inputs(call.state, task_id, {key: exc})
                    else:
                        if answer is None:  # the task's end, or the later wait, says more
                            break
                        _tasks.answer_inputs(call.state, task_id, {key: answer})
            else:
                if context is not None:
                    context.check_cancelled()
                _concurrency.sleep(_tasks.POLL)
            record = self._task(call)
        if record.get("logs") and context is not None:
            self._send_logs(call, task_id)  # those logged last, before the result
        related = {_tasks.RELATED_TASK: {"taskId": task_id}}
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

    @staticmethod
    def _send_logs(call: Call, task_id: str) -> None:
        """Send the log messages the task's handler kept since the last look, in order."""
        assert call.ctx is not None
        for params in _tasks.take_logs(call.state, task_id):
            call.ctx.send_notification("notifications/message", params)


__all__ = ["Tasks"]
