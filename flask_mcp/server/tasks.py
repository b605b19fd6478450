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

import dataclasses
import datetime
import hashlib
import secrets
import time
import typing as t

from .. import protocol
from .. import signals
from ..errors import INTERNAL_ERROR
from ..errors import ClientRequestError
from ..errors import InvalidParams
from ..errors import MCPError
from ..errors import MethodNotFound
from ..errors import MissingClientCapability
from ..errors import RequestCancelled
from ..runtime import concurrency as _concurrency
from .call import Call
from .context import Context
from .context import check_capabilities
from .mrtr import _EXPECTED
from .mrtr import _valid_answer

if t.TYPE_CHECKING:
    from ..backends._tasks import TaskStore
    from ..runtime.runs import RequestRun
    from ..runtime.state import AppState

#: The extension's identifier (2026-07-28).
EXTENSION = "io.modelcontextprotocol/tasks"
#: ``_meta`` key tying a 2025-11-25 message to its task.
RELATED_TASK = "io.modelcontextprotocol/related-task"
MODES = ("forbidden", "optional", "required")
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The flavours: 2025-11-25 experimental tasks, and the 2026-07-28 extension.
V2025 = "2025"
V2026 = "2026"
#: Seconds between two looks at the store while a handler waits for answers.
POLL = 0.1


@dataclasses.dataclass
class TaskCall(Call):
    """The ``tools/call`` a task runs: it is dispatched as a plain call."""

    task_id: str = ""
    task_flavour: str = V2026


class Executor(t.Protocol):
    """Runs the handler of a task somewhere and records its outcome in the store."""

    def start(self, dispatcher: t.Any, call: Call, record: dict[str, t.Any]) -> None: ...

    def has_room(self, state: AppState) -> bool: ...


def now_iso(ts: float | None = None) -> str:
    """Return ``ts`` (default: now) as an ISO 8601 UTC timestamp."""
    when = datetime.datetime.fromtimestamp(time.time() if ts is None else ts, datetime.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def store_of(state: AppState) -> TaskStore:
    """Return the app's task store (the backend's)."""
    return state.backend.task_store()


def owner_of(call: Call) -> str:
    """Return who a task belongs to: the principal, and the session in the handshake era."""
    principal = None if call.auth is None else call.auth.principal
    session = call.session.id if call.session is not None else ""
    raw = f"{principal!r}\x00{session}".encode()
    return hashlib.sha256(raw).hexdigest()[:32]


def opted_in(call: Call) -> bool:
    """Tell whether a 2026-07-28 request declares the tasks extension in its ``_meta``."""
    meta = call.params.get("_meta")
    caps = meta.get(protocol.META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


def _touch(record: dict[str, t.Any], status: str | None = None) -> None:
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
        _touch(record, status)
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
        set_status(state, task_id, status, result=result)


def check_lease(state: AppState, record: dict[str, t.Any]) -> dict[str, t.Any]:
    """Fail a task whose executor stopped renewing its lease (its worker died)."""
    if record["status"] in TERMINAL:
        return record
    lease = record.get("lease")
    if lease is None or time.time() - lease <= state.settings.task_lease:
        return record
    error = {
        "code": INTERNAL_ERROR,
        "message": (
            "The worker running this task stopped (it died or was restarted) before the task "
            "ended; call the tool again. Run tasks on Celery to survive web worker restarts."
        ),
    }
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


# -- inside the task: the Context ------------------------------------------------------


class TaskBackChannel:
    """Asks the client through the task record: ``input_required`` until answered."""

    def __init__(self, state: AppState, task_id: str, flavour: str) -> None:
        self.state = state
        self.task_id = task_id
        self.flavour = flavour

    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]:
        return self.request_many(ctx, {key or "": (method, params)})[key or ""]

    def request_many(
        self, ctx: Context, requests: dict[str, tuple[str, dict[str, t.Any]]]
    ) -> dict[str, dict[str, t.Any]]:
        store = store_of(self.state)
        keys: dict[str, str] = {}  # the caller's key -> the task's key (unique per task)

        def ask(record: dict[str, t.Any]) -> bool:
            keys.clear()
            if record["status"] in TERMINAL:
                return False
            pending = record.setdefault("inputRequests", {})
            for wanted, (method, params) in requests.items():
                record["seq"] = record.get("seq", 0) + 1
                key = f"{wanted or method.split('/')[0]}-{record['seq']}"
                if self.flavour == V2025:
                    meta = {**params.get("_meta", {}), RELATED_TASK: {"taskId": self.task_id}}
                    params = {**params, "_meta": meta}
                pending[key] = {"method": method, "params": params}
                keys[wanted] = key
            _touch(record, "input_required")
            return True

        record = store.mutate(self.task_id, ask)
        if record is None or not keys:
            raise RequestCancelled()
        status_changed(self.state, record)
        wanted_keys = set(keys.values())
        taken: dict[str, t.Any] = {}

        def take(record: dict[str, t.Any]) -> bool:
            taken.clear()
            answers = record.get("responses") or {}
            if record["status"] in TERMINAL or not wanted_keys <= set(answers):
                return False
            for key in wanted_keys:
                taken[key] = answers.pop(key)
            if not record.get("inputRequests") and record["status"] == "input_required":
                _touch(record, "working")
            return True

        while True:
            if ctx.cancelled:
                raise RequestCancelled()
            record = store.mutate(self.task_id, take)
            if record is None or record["status"] in TERMINAL:
                raise RequestCancelled()
            if taken:
                if record["status"] == "working":
                    status_changed(self.state, record)
                return {wanted: taken[key] for wanted, key in keys.items()}
            _concurrency.sleep(POLL)


def answer_inputs(
    state: AppState, task_id: str, responses: dict[str, t.Any]
) -> dict[str, t.Any] | None:
    """Record the client's answers to outstanding ``inputRequests``; ignore other keys.

    :raises InvalidParams: an answer does not have the shape its request needs.
    """
    record = store_of(state).get(task_id)
    if record is None:
        return None
    outstanding = record.get("inputRequests") or {}
    for key, answer in responses.items():
        request = outstanding.get(key)
        if isinstance(request, dict) and not _valid_answer(request["method"], answer):
            raise InvalidParams(
                f"Invalid params: inputResponses[{key!r}] must be {_EXPECTED[request['method']]} "
                f"answering {request['method']}."
            )

    def change(record: dict[str, t.Any]) -> bool:
        pending = record.get("inputRequests") or {}
        used = [key for key in responses if key in pending]
        if not used or record["status"] in TERMINAL:
            return False
        answers = record.setdefault("responses", {})
        for key in used:
            answers[key] = responses[key]
            del pending[key]
        _touch(record)
        return True

    return store_of(state).mutate(task_id, change)


class TaskContext(Context):
    """The ``Context`` of a handler running as a task.

    ``progress()`` sets the task's ``statusMessage``; log messages have no
    stream to go to and are dropped (SEP-2663 forbids them on tasks); requests
    to the client go through the task record (``input_required``).
    """

    def __init__(self, *, state: AppState, task_id: str, flavour: str, **kwargs: t.Any) -> None:
        super().__init__(back_channel=TaskBackChannel(state, task_id, flavour), **kwargs)
        self._state = state
        #: The id of the task this handler runs for.
        self.task_id = task_id

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Set the task's ``statusMessage`` (``message``, or ``"progress/total"``)."""
        text = message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}")

        def change(record: dict[str, t.Any]) -> bool:
            if record["status"] in TERMINAL:
                return False
            record["statusMessage"] = text
            _touch(record)
            return True

        record = store_of(self._state).mutate(self.task_id, change)
        if record is not None:
            status_changed(self._state, record)

    def log(self, level: str, data: t.Any, logger: str | None = None) -> None:
        """Dropped: a task has no stream for log messages."""

    def ask(
        self, requests: t.Mapping[str, tuple[str, dict[str, t.Any]]]
    ) -> dict[str, dict[str, t.Any]]:
        """Ask several questions at once: they are outstanding together."""
        for method, params in requests.values():
            check_capabilities(self, method, params)
        channel = t.cast(TaskBackChannel, self._back_channel)
        return channel.request_many(self, dict(requests))


def context_factory(call: TaskCall, record: dict[str, t.Any]) -> t.Callable[[RequestRun], Context]:
    """Return what builds the ``Context`` of the task's handler from its run."""
    request = record["request"]

    def build(run: RequestRun) -> Context:
        ctx = TaskContext(
            state=call.state,
            task_id=call.task_id,
            flavour=call.task_flavour,
            app=call.state.app,
            run=run,
            protocol_version=call.version,
            client_capabilities=request.get("capabilities") or {},
            client_info=request.get("clientInfo") or {},
            meta={},
            log_level=None,
            auth=call.auth,
        )
        ctx.prepared = record.get("prepared")
        return ctx

    return build


def task_call(state: AppState, record: dict[str, t.Any], auth: t.Any = None) -> TaskCall:
    """Rebuild the ``tools/call`` a task runs from its record."""
    request = record["request"]
    params = {"name": request["name"], "arguments": request.get("arguments") or {}}
    return TaskCall(
        "tools/call",
        params,
        f"task-{record['taskId']}",
        request["version"],
        request["era"],
        None,
        state=state,
        auth=auth,
        task_id=record["taskId"],
        task_flavour=record["flavour"],
    )


# -- the methods --------------------------------------------------------------------------


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
            },
        }
        store_of(state).create(record, ttl)
        signals.send(signals.task_created, state.app, task_id=record["taskId"], tool=tool.name)
        executor.start(self, call, record)
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
            raise InvalidParams(
                "Invalid params: unknown cursor; send the nextCursor returned."
            ) from None
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
