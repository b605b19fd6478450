"""Tasks: ``@mcp.tool(task=...)``, both flavours, the store, cancellation, leases, signals.

The fast tests drive an in-process app through Flask's test client (threads); the
``e2e`` tests run the conformance suite's tasks scenarios against real gunicorn
servers (gevent, gthread, and four gevent workers sharing Redis) and kill the
worker running a task.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import signal
import subprocess
import threading
import time
import typing as t
import uuid
from pathlib import Path

import httpx
import pytest
from harness import free_port
from harness import pinned_node
from harness import redis_client
from harness import redis_server
from harness import run_suite
from tasks_wire import TERMINAL
from tasks_wire import listen_2026
from tasks_wire import post_2026
from tasks_wire import wait_task
from wire import ThreadedTestClient
from wire import Wire
from wire import initialize
from wire import initialize_request
from wire import make_app
from wire import rpc
from wire import sse_data
from wire import sse_messages
from wire import start_session

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import ToolError
from flask_mcp import signals
from flask_mcp.backends import MemoryBackend
from flask_mcp.backends.task_store import MemoryTaskStore
from flask_mcp.backends.task_store import TaskLimits
from flask_mcp.backends.task_store import TaskQuotaExceeded
from flask_mcp.backends.task_store import TaskStore
from flask_mcp.errors import BackendFull
from flask_mcp.errors import BackendUnavailable
from flask_mcp.runtime.settle import settle_owed
from flask_mcp.server import tasks as tasks_mod
from flask_mcp.server.registry import encode_cursor
from flask_mcp.testing import MCPTestClient

EXT = {"io.modelcontextprotocol/tasks": {}}
CAPS = {"elicitation": {}, "sampling": {}, "extensions": EXT}
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def build(**config: t.Any) -> tuple[MCP, t.Any, threading.Event]:
    mcp = MCP(name="tasks", version="1")
    saw_cancel = threading.Event()

    @mcp.tool()
    def plain(x: int = 1) -> str:
        return f"plain {x}"

    @mcp.tool(task="optional")
    def work(ctx: Context, seconds: float = 0.2) -> str:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if ctx.cancelled:
                saw_cancel.set()
                return "stopped"
            ctx.progress(1, 2, "half way")
            time.sleep(0.02)
        return f"worked {seconds:g}"

    @mcp.tool(task="required")
    def must(ctx: Context) -> str:
        raise ToolError("tool failure")

    @mcp.tool(task="optional")
    def broken(ctx: Context) -> str:
        raise MCPError(-32603, "protocol failure")

    @mcp.tool(task="optional")
    def ask(ctx: Context) -> str:
        answer = ctx.elicit("Sure?", SCHEMA)
        return f"ok={answer['content']['ok']}"

    app = make_app(mcp, **config)
    return mcp, app, saw_cancel


def task_post(wire: Wire, method: str, params: dict[str, t.Any], **kwargs: t.Any) -> t.Any:
    """POST a tasks/* request with its routing header (``Mcp-Name: <taskId>``)."""
    return wire.post(method, params, headers={"Mcp-Name": params["taskId"]}, **kwargs)


def result_of(response: t.Any) -> dict[str, t.Any]:
    messages = (
        sse_messages(response) if response.mimetype == "text/event-stream" else [response.json]
    )
    return t.cast("dict[str, t.Any]", messages[-1])


def poll(wire: Wire, task_id: str, until: t.Callable[[dict[str, t.Any]], bool]) -> dict[str, t.Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        task = result_of(task_post(wire, "tasks/get", {"taskId": task_id}, caps=CAPS))["result"]
        if until(task):
            return t.cast("dict[str, t.Any]", task)
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} never got there; last: {task}")


def terminal(task: dict[str, t.Any]) -> bool:
    return task["status"] in ("completed", "failed", "cancelled")


#: The backends of the tasks tests; the Redis legs take this fixture's URL.
BACKENDS = [
    "memory",
    pytest.param("redis_url", id="redis", marks=pytest.mark.redis),
    pytest.param(
        "redis_cluster_url", id="redis-cluster", marks=[pytest.mark.redis, pytest.mark.cluster]
    ),
]


@pytest.fixture(params=BACKENDS)
def wire(request: pytest.FixtureRequest) -> Wire:
    config = {}
    if request.param != "memory":
        config["MCP_BACKEND"] = request.getfixturevalue(request.param)
    _, app, _ = build(**config)
    return Wire(app)


def test_2026_task_lifecycle(wire: Wire) -> None:
    created = result_of(wire.post("tools/call", {"name": "work", "arguments": {}}, caps=CAPS))
    task = created["result"]
    assert task["resultType"] == "task"
    assert task["status"] == "working"
    assert isinstance(task["ttlMs"], int) and isinstance(task["pollIntervalMs"], int)
    assert len(task["taskId"]) >= 32  # 192 random bits, URL-safe
    done = poll(wire, task["taskId"], terminal)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "worked 0.2"
    assert done["resultType"] == "complete"


def test_2026_immediate_result_when_the_task_is_over_in_time() -> None:
    _, app, _ = build(MCP_TASK_IMMEDIATE_MS=2000)
    wire = Wire(app)
    quick = result_of(
        wire.post("tools/call", {"name": "work", "arguments": {"seconds": 0}}, caps=CAPS)
    )
    assert quick["result"]["resultType"] == "complete"
    assert quick["result"]["content"][0]["text"] == "worked 0"
    failed = result_of(wire.post("tools/call", {"name": "broken", "arguments": {}}, caps=CAPS))
    assert failed["error"]["message"] == "protocol failure"
    slow = result_of(
        wire.post("tools/call", {"name": "work", "arguments": {"seconds": 5}}, caps=CAPS)
    )
    assert slow["result"]["resultType"] == "task"  # not over within 2 s: a task
    task_post(wire, "tasks/cancel", {"taskId": slow["result"]["taskId"]}, caps=CAPS)


def test_2026_without_extension_runs_inline_or_refuses(wire: Wire) -> None:
    plain = result_of(wire.post("tools/call", {"name": "work", "arguments": {"seconds": 0}}))
    assert plain["result"]["content"][0]["text"] == "worked 0"
    refused = result_of(wire.post("tools/call", {"name": "must", "arguments": {}}))
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"]["requiredCapabilities"] == {"extensions": EXT}
    gated = result_of(task_post(wire, "tasks/get", {"taskId": "nope"}))
    assert gated["error"]["code"] == -32021


def test_a_2026_tools_list_carries_no_task_support() -> None:
    """The tasks extension (SEP-2663) removed the tool-level ``execution.taskSupport`` of
    2025-11-25, and the 2026-07-28 ``Tool`` has no ``execution``: the server alone decides
    per request, so the list no longer tells which tools may become tasks."""
    _, app, _ = build()
    wire = Wire(app)
    for caps in (CAPS, None):
        tools = result_of(wire.post("tools/list", {}, caps=caps))["result"]["tools"]
        assert {tool["name"] for tool in tools} >= {"work", "must"}
        assert all("execution" not in tool for tool in tools), tools


def test_2026_tool_error_completes_protocol_error_fails(wire: Wire) -> None:
    tool = result_of(wire.post("tools/call", {"name": "must", "arguments": {}}, caps=CAPS))
    done = poll(wire, tool["result"]["taskId"], terminal)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    broken = result_of(wire.post("tools/call", {"name": "broken", "arguments": {}}, caps=CAPS))
    failed = poll(wire, broken["result"]["taskId"], terminal)
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": -32603, "message": "protocol failure"}
    assert "result" not in failed


def test_2026_input_required_then_update(wire: Wire) -> None:
    created = result_of(wire.post("tools/call", {"name": "ask", "arguments": {}}, caps=CAPS))
    task_id = created["result"]["taskId"]
    waiting = poll(wire, task_id, lambda task: task["status"] == "input_required")
    ((key, request),) = waiting["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    bad = result_of(
        task_post(wire, "tasks/update", {"taskId": task_id, "inputResponses": {key: 1}}, caps=CAPS)
    )
    assert bad["error"]["code"] == -32602
    answer = {key: {"action": "accept", "content": {"ok": True}}, "unknown": {}}
    ack = result_of(
        task_post(wire, "tasks/update", {"taskId": task_id, "inputResponses": answer}, caps=CAPS)
    )
    assert ack["result"] == {"resultType": "complete", "_meta": ack["result"]["_meta"]}
    done = poll(wire, task_id, terminal)
    assert done["result"]["content"][0]["text"] == "ok=True"


def test_2026_task_asks_only_for_elicitation_sampling_and_roots() -> None:
    mcp, app, _ = build()

    @mcp.tool(task="optional")
    def pinger(ctx: Context) -> str:
        return str(ctx.send_request("ping", {}))

    wire = Wire(app)
    created = result_of(wire.post("tools/call", {"name": "pinger", "arguments": {}}, caps=CAPS))
    done = poll(wire, created["result"]["taskId"], lambda task: task["status"] != "working")
    assert done["status"] == "completed" and "inputRequests" not in done
    assert done["result"]["isError"] is True
    assert "only asks for elicitation/create" in done["result"]["content"][0]["text"]


def test_2026_cancel_reaches_the_handler() -> None:
    _, app, saw_cancel = build()
    wire = Wire(app)
    created = result_of(
        wire.post("tools/call", {"name": "work", "arguments": {"seconds": 30}}, caps=CAPS)
    )
    task_id = created["result"]["taskId"]
    ack = result_of(task_post(wire, "tasks/cancel", {"taskId": task_id}, caps=CAPS))
    assert "taskId" not in ack["result"]
    assert poll(wire, task_id, terminal)["status"] == "cancelled"
    assert saw_cancel.wait(10), "ctx.cancelled never turned true in the handler"
    again = result_of(task_post(wire, "tasks/cancel", {"taskId": task_id}, caps=CAPS))
    assert "result" in again  # idempotent ack on a terminal task
    unknown = result_of(task_post(wire, "tasks/cancel", {"taskId": "x" * 32}, caps=CAPS))
    assert unknown["error"]["code"] == -32602


def test_progress_sets_the_status_message() -> None:
    _, app, _ = build()
    wire = Wire(app)
    created = result_of(
        wire.post("tools/call", {"name": "work", "arguments": {"seconds": 2}}, caps=CAPS)
    )
    task = poll(wire, created["result"]["taskId"], lambda task: "statusMessage" in task)
    assert task["statusMessage"] == "half way"


def test_signals_created_changed_finished() -> None:
    _, app, _ = build()
    seen: list[tuple[str, str]] = []

    def on(name: str) -> t.Callable[..., None]:
        return lambda sender, **kw: seen.append((name, kw.get("status", kw.get("tool", ""))))

    receivers = {sig: on(name) for name, sig in [
        ("created", signals.task_created),
        ("changed", signals.task_status_changed),
        ("finished", signals.task_finished),
    ]}  # fmt: skip
    for sig, fn in receivers.items():
        sig.connect(fn, app)
    wire = Wire(app)
    created = result_of(wire.post("tools/call", {"name": "must", "arguments": {}}, caps=CAPS))
    poll(wire, created["result"]["taskId"], terminal)
    time.sleep(0.1)
    assert ("created", "must") in seen
    assert ("changed", "completed") in seen
    assert ("finished", "completed") in seen


def test_dead_worker_fails_the_task() -> None:
    """A task whose lease was not renewed (its worker died) is failed on the next look."""
    mcp, app, _ = build(MCP_TASK_LEASE=1)
    wire = Wire(app)
    store = mcp.state(app).backend.task_store()
    now = time.time()
    record = {
        "taskId": "dead-" + "x" * 30, "status": "working", "createdAt": tasks_mod.now_iso(now),
        "lastUpdatedAt": tasks_mod.now_iso(now), "ttlMs": 60000, "pollIntervalMs": 100,
        "created": now, "lease": now - 5, "flavour": "2026", "request": {},
        "owner": tasks_mod.owner_of(t.cast(t.Any, _Anonymous())),
    }  # fmt: skip
    store.create(record, 60)
    task = result_of(task_post(wire, "tasks/get", {"taskId": record["taskId"]}, caps=CAPS))[
        "result"
    ]
    assert task["status"] == "failed"
    assert "worker running this task stopped" in task["error"]["message"]


def test_a_lease_renewal_the_store_refuses_once_does_not_fail_the_live_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A renewal refused otherwise than by an outage (a caller at its byte bound, whose
    record a longer lease value grows) ended the task's watcher: the lease ran out and
    the live task failed as if its worker had died, its result lost."""
    from flask_mcp.transport import tasks as executor_mod

    renew, refused = executor_mod._renew, []

    def refusing_once(record: dict[str, t.Any]) -> bool:
        if not refused:
            refused.append(True)
            raise TaskQuotaExceeded("bytes", 100, 100, 1)
        return renew(record)

    monkeypatch.setattr(executor_mod, "_renew", refusing_once)
    _, app, _ = build(MCP_TASK_LEASE=1)
    wire = Wire(app)
    created = result_of(
        wire.post("tools/call", {"name": "work", "arguments": {"seconds": 3}}, caps=CAPS)
    )
    done = poll(wire, created["result"]["taskId"], terminal)
    assert refused
    assert done["status"] == "completed", done


class _Anonymous:
    auth = None
    session = None


def test_the_readme_example_runs_as_a_task() -> None:
    """``examples/tasks.py``: progress, then a confirmation through tasks/update."""
    from examples.tasks import app

    wire = Wire(app)
    created = result_of(
        wire.post(
            "tools/call", {"name": "deploy", "arguments": {"service": "api", "steps": 2}}, caps=CAPS
        )
    )
    task_id = created["result"]["taskId"]
    asking = poll(wire, task_id, lambda task: task["status"] == "input_required")
    assert asking["statusMessage"] == "step 1 of 2"
    ((key, _),) = asking["inputRequests"].items()
    answer = {key: {"action": "accept", "content": {"go": True}}}
    task_post(wire, "tasks/update", {"taskId": task_id, "inputResponses": answer}, caps=CAPS)
    done = poll(wire, task_id, terminal)
    assert done["result"]["content"][0]["text"] == "api: deployed and live"


# -- 2025-11-25 experimental tasks --------------------------------------------------------


def call_2025(client: t.Any, session: str, method: str, params: dict[str, t.Any]) -> t.Any:
    response = rpc(client, session, method, params)
    return result_of(response)


def test_2025_task_result_list_cancel_and_session_binding() -> None:
    _, app, _ = build()
    client = app.test_client()
    session = initialize(client)
    tools = call_2025(client, session, "tools/list", {})["result"]["tools"]
    support = {tool["name"]: tool.get("execution", {}).get("taskSupport") for tool in tools}
    assert support == {
        "plain": None,
        "work": "optional",
        "must": "required",
        "broken": "optional",
        "ask": "optional",
    }
    refused = call_2025(client, session, "tools/call", {"name": "must", "arguments": {}})
    assert refused["error"]["code"] == -32601
    created = call_2025(
        client, session, "tools/call", {"name": "work", "arguments": {}, "task": {"ttl": 60000}}
    )
    task = created["result"]["task"]
    assert task["status"] == "working" and task["ttl"] == 60000
    result = call_2025(client, session, "tasks/result", {"taskId": task["taskId"]})["result"]
    assert result["content"][0]["text"] == "worked 0.2"
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    listed = call_2025(client, session, "tasks/list", {})["result"]["tasks"]
    assert [item["taskId"] for item in listed] == [task["taskId"]]
    cancel_done = call_2025(client, session, "tasks/cancel", {"taskId": task["taskId"]})
    assert cancel_done["error"]["code"] == -32602  # already terminal
    other = initialize(client)
    hidden = call_2025(client, other, "tasks/get", {"taskId": task["taskId"]})
    assert hidden["error"]["code"] == -32602  # bound to the session that created it
    assert call_2025(client, other, "tasks/list", {})["result"]["tasks"] == []
    long = call_2025(
        client, session, "tools/call", {"name": "work", "arguments": {"seconds": 30}, "task": {}}
    )
    cancelled = call_2025(
        client, session, "tasks/cancel", {"taskId": long["result"]["task"]["taskId"]}
    )
    assert cancelled["result"]["status"] == "cancelled"


@pytest.mark.parametrize("ended", ["completed", "expired"])
def test_2025_cancel_of_a_task_ending_meanwhile_is_refused(
    monkeypatch: pytest.MonkeyPatch, ended: str
) -> None:
    """A ``tasks/cancel`` whose task completes (or expires) between its read of the task
    and its change is refused with -32602, as the spec has a cancel of a terminal task
    refused: it answered with success and the task ``completed``, as if cancelled."""
    from flask_mcp.extensions.tasks.extension import Tasks

    mcp, app, _ = build()
    client = app.test_client()
    session = initialize(client)
    params = {"name": "work", "arguments": {"seconds": 30}, "task": {}}
    task_id = call_2025(client, session, "tools/call", params)["result"]["task"]["taskId"]
    found = Tasks._task

    def ending_meanwhile(self: Tasks, call: t.Any) -> dict[str, t.Any]:
        record = found(self, call)
        if call.method == "tasks/cancel":  # the handler returns right after the read
            if ended == "completed":
                result = {"content": [{"type": "text", "text": "done"}]}
                tasks_mod.settle(call.state, task_id, {"result": result})
            else:  # its TTL ran out
                call.state.backend.task_store()._records.pop(task_id)
        return t.cast("dict[str, t.Any]", record)

    monkeypatch.setattr(Tasks, "_task", ending_meanwhile)
    refused = call_2025(client, session, "tasks/cancel", {"taskId": task_id})
    assert refused.get("error", {}).get("code") == -32602, refused
    monkeypatch.undo()
    if ended == "completed":
        task = call_2025(client, session, "tasks/get", {"taskId": task_id})["result"]
        assert task["status"] == "completed", task
        assert "completed" in refused["error"]["message"], refused


def test_2025_task_logs_wait_for_tasks_result_bounded() -> None:
    """A 2025-11-25 task's log messages wait in its record for ``tasks/result``: the
    last ``MAX_LOGS`` at the session's level (no ``tasks/result`` took them while the
    task ran), sent once, in order."""
    mcp = MCP(name="tasks", version="1")

    @mcp.tool(task="optional")
    def chatty(ctx: Context) -> str:
        for i in range(tasks_mod.MAX_LOGS + 20):
            ctx.debug(f"skipped {i}")
            ctx.info(i)
        return "done"

    app = make_app(mcp)
    client = ThreadedTestClient(app, app.response_class)  # tasks/result may stream
    session = initialize(client)
    assert call_2025(client, session, "logging/setLevel", {"level": "info"})["result"] == {}
    created = call_2025(client, session, "tools/call", {"name": "chatty", "task": {}})
    task_id = created["result"]["task"]["taskId"]
    deadline = time.monotonic() + 10
    get = {"taskId": task_id}
    while call_2025(client, session, "tasks/get", get)["result"]["status"] == "working":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    sent = sse_messages(rpc(client, session, "tasks/result", {"taskId": task_id}))
    logs = [m["params"] for m in sent if m.get("method") == "notifications/message"]
    assert [p["data"] for p in logs] == list(range(20, tasks_mod.MAX_LOGS + 20))
    assert logs[0]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
    assert sent[-1]["result"]["content"][0]["text"] == "done"
    again = rpc(client, session, "tasks/result", {"taskId": task_id})
    assert again.is_json and again.json["result"]["content"][0]["text"] == "done"  # alone


def test_a_2025_task_log_the_backend_cannot_take_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A log message is as advisory as a progress report: Redis down or failing over
    while a task logs skips the message, not the task."""
    from flask_mcp.errors import BackendUnavailable

    mcp = MCP(name="tasks", version="1")
    outage = threading.Event()
    handler: list[int] = []  # the outage meets the handler's writes only, not the lease's

    @mcp.tool(task="optional")
    def chatty(ctx: Context) -> str:
        handler.append(threading.get_ident())
        outage.set()
        ctx.info("lost in the outage")
        outage.clear()
        ctx.info("kept")
        return "done"

    app = make_app(mcp)
    store = tasks_mod.store_of(mcp.state(app))
    mutate = store.mutate

    def failing_mutate(*args: t.Any, **kwargs: t.Any) -> t.Any:
        if outage.is_set() and threading.get_ident() in handler:
            raise BackendUnavailable("the session store is unavailable")
        return mutate(*args, **kwargs)

    monkeypatch.setattr(type(store), "mutate", lambda self, *a, **k: failing_mutate(*a, **k))
    client = ThreadedTestClient(app, app.response_class)
    session = initialize(client)
    created = call_2025(client, session, "tools/call", {"name": "chatty", "task": {}})
    task_id = created["result"]["task"]["taskId"]
    sent = sse_messages(rpc(client, session, "tasks/result", {"taskId": task_id}))
    logs = [m["params"]["data"] for m in sent if m.get("method") == "notifications/message"]
    assert logs == ["kept"]
    assert sent[-1]["result"]["content"][0]["text"] == "done"


def test_a_task_report_a_full_backend_refuses_is_not_logged_as_unreachable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A progress report and a log message that a full Redis refuses are skipped, and the
    warning says it is full, not "the backend is unreachable: Redis ... is full". It is
    one per task, as a call's is (the next ones at ``DEBUG``): each was a warning."""
    mcp = MCP(name="tasks", version="1")
    full = threading.Event()
    handler: list[int] = []

    @mcp.tool(task="optional")
    def chatty(ctx: Context) -> str:
        handler.append(threading.get_ident())
        full.set()
        ctx.progress(1, 2, "lost")
        ctx.info("lost too")
        ctx.progress(2, 2, "lost again")
        full.clear()
        return "done"

    app = make_app(mcp)
    store = tasks_mod.store_of(mcp.state(app))
    mutate = store.mutate

    def refusing_mutate(*args: t.Any, **kwargs: t.Any) -> t.Any:
        if full.is_set() and threading.get_ident() in handler:
            raise BackendFull("Redis at here is full (used memory is over its maxmemory)")
        return mutate(*args, **kwargs)

    monkeypatch.setattr(type(store), "mutate", lambda self, *a, **k: refusing_mutate(*a, **k))
    client = ThreadedTestClient(app, app.response_class)
    session = initialize(client)
    with caplog.at_level(logging.WARNING, logger="flask_mcp"):
        created = call_2025(client, session, "tools/call", {"name": "chatty", "task": {}})
        task_id = created["result"]["task"]["taskId"]
        answer = rpc(client, session, "tasks/result", {"taskId": task_id})
    assert answer.is_json and answer.json["result"]["content"][0]["text"] == "done"
    skipped = [r.getMessage() for r in caplog.records if "Dropped" in r.getMessage()]
    assert len(skipped) == 1 and "is full" in skipped[0] and task_id in skipped[0], skipped
    assert "unreachable" not in skipped[0], skipped


def test_a_progress_report_past_the_callers_bytes_is_skipped_not_the_task() -> None:
    """A status message that would pass ``MCP_TASK_MAX_BYTES_PER_CLIENT`` is skipped,
    as a log message is: it is advisory, and the task's result still fits."""
    mcp = MCP(name="tasks", version="1")

    @mcp.tool(task="optional")
    def chatty(ctx: Context) -> str:
        ctx.progress(1, 2, "x" * 20_000)  # more than the caller may keep
        ctx.info("still here")
        return "done"

    app = make_app(mcp, MCP_TASK_MAX_BYTES_PER_CLIENT=8_000)
    client = ThreadedTestClient(app, app.response_class)
    session = initialize(client)
    created = call_2025(client, session, "tools/call", {"name": "chatty", "task": {}})
    task_id = created["result"]["task"]["taskId"]
    sent = sse_messages(rpc(client, session, "tasks/result", {"taskId": task_id}))
    assert sent[-1]["result"]["content"][0]["text"] == "done"


@pytest.mark.parametrize("refusal", ["outage", "quota", "other"])
def test_a_task_whose_worker_note_fails_runs_on(
    monkeypatch: pytest.MonkeyPatch, refusal: str
) -> None:
    """The note of which process runs a task is for operators: its write failing (Redis
    down, the caller's bytes) failed the call of a task that existed and whose handler
    ran on unrecorded, outside ``MCP_TASK_MAX_RUNNING``. The task runs on now."""
    from flask_mcp.backends.task_store import TaskQuotaExceeded
    from flask_mcp.errors import BackendUnavailable
    from flask_mcp.transport import tasks as executor_mod

    mcp = MCP(name="tasks", version="1")

    @mcp.tool(task="optional")
    def work() -> str:
        return "done"

    app = make_app(mcp)
    store = tasks_mod.store_of(mcp.state(app))
    mutate = type(store).mutate

    def refusing(self: t.Any, task_id: str, change: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
        if change is executor_mod._mark_worker:
            if refusal == "outage":
                raise BackendUnavailable("the session store is unavailable")
            if refusal == "other":  # a Redis error reply, a bug: the run is watched still
                raise RuntimeError("unexpected")
            raise TaskQuotaExceeded("bytes", 1000, 2000)
        return mutate(self, task_id, change, *args, **kwargs)

    monkeypatch.setattr(type(store), "mutate", refusing)
    client = ThreadedTestClient(app, app.response_class)
    session = initialize(client)
    created = call_2025(client, session, "tools/call", {"name": "work", "task": {}})
    task_id = created["result"]["task"]["taskId"]
    answer = rpc(client, session, "tasks/result", {"taskId": task_id})
    final = answer.json if answer.is_json else sse_messages(answer)[-1]
    assert final["result"]["content"][0]["text"] == "done", final


def test_a_task_is_noted_before_its_handler_starts() -> None:
    """Which process runs a task, and its lease, are written before the handler starts. They
    were written after: a Celery worker killed as the handler began (it had set its status
    message) left a task whose lease was never set, which the lease sweep cannot fail: it
    stayed ``working`` until its TTL (seen in CI)."""
    mcp, app, _ = build()
    store = tasks_mod.store_of(mcp.state(app))
    noted: list[object] = []

    def started(sender: t.Any, task_id: str, **kwargs: t.Any) -> None:
        record = store.get(task_id) or {}
        noted.append(record.get("worker"))

    client = ThreadedTestClient(app, app.response_class)
    session = initialize(client)
    with signals.task_run_started.connected_to(started, app):
        for _ in range(3):
            params = {"name": "work", "arguments": {"seconds": 0}, "task": {}}
            task_id = call_2025(client, session, "tools/call", params)["result"]["task"]["taskId"]
            rpc(client, session, "tasks/result", {"taskId": task_id})
    assert len(noted) == 3 and all(noted), noted


def test_2025_task_ttl_is_a_number_of_milliseconds() -> None:
    _, app, _ = build()
    client = app.test_client()
    session = initialize(client)
    for ttl in ("5", True, -1, [60000], {"ms": 1}):
        params = {"name": "work", "arguments": {}, "task": {"ttl": ttl}}
        refused = call_2025(client, session, "tools/call", params)
        assert refused["error"]["code"] == -32602, ttl
        assert "task.ttl must be a number of milliseconds" in refused["error"]["message"]
    params = {"name": "work", "arguments": {}, "task": {"ttl": 90000.5}}
    task = call_2025(client, session, "tools/call", params)["result"]["task"]
    assert task["ttl"] == 90000


def test_2025_tool_error_fails_the_task_but_result_is_the_tool_result() -> None:
    _, app, _ = build()
    client = app.test_client()
    session = initialize(client)
    created = call_2025(
        client, session, "tools/call", {"name": "must", "arguments": {}, "task": {}}
    )
    task_id = created["result"]["task"]["taskId"]
    result = call_2025(client, session, "tasks/result", {"taskId": task_id})["result"]
    assert result["isError"] is True
    task = call_2025(client, session, "tasks/get", {"taskId": task_id})["result"]
    # The spec: a failed task's tasks/get SHOULD say why (it said nothing for a tool error).
    assert task["status"] == "failed" and task["statusMessage"] == "tool failure"
    # Arguments that fail validation are a tool error too (isError), and a receiver that
    # accepts a task-augmented request MUST answer with a CreateTaskResult: the task is
    # created and fails with that result (it was a plain CallToolResult, which the
    # TypeScript SDK's client rejects). The task mode is checked first, as for valid ones.
    params = {"name": "work", "arguments": {"seconds": "soon"}, "task": {}}
    created = call_2025(client, session, "tools/call", params)["result"]
    assert created["task"]["status"] == "working", created
    task_id = created["task"]["taskId"]
    result = call_2025(client, session, "tasks/result", {"taskId": task_id})["result"]
    assert result["isError"] is True and "'seconds'" in result["content"][0]["text"]
    task = call_2025(client, session, "tasks/get", {"taskId": task_id})["result"]
    assert task["status"] == "failed" and "'seconds'" in task["statusMessage"]
    for name, task_params in (("must", None), ("plain", {})):
        params = {"name": name, "arguments": {"seconds": "soon", "x": "y"}}
        if task_params is not None:
            params["task"] = task_params
        refused = call_2025(client, session, "tools/call", params)
        assert refused["error"]["code"] == -32601, refused
    # 2026-07-28: the server decides; it answers at once, no task.
    called = result_of(
        Wire(app).post("tools/call", {"name": "work", "arguments": {"seconds": "soon"}}, caps=CAPS)
    )["result"]
    assert called["isError"] is True and called.get("resultType", "complete") == "complete"
    # So is a ToolError from a tool's prepare= hook, which runs before the task is made,
    # or from a middleware before call_next (middleware runs outside Tasks): both
    # answered a plain CallToolResult. An MCPError from either stays a JSON-RPC error (a
    # refusal of the request); 2026-07-28 answers at once.
    mcp = MCP(name="tasks", version="1")

    def prepare(ctx: Context) -> None:
        if ctx.meta.get("refuse") == "mcp":
            raise MCPError(-32602, "prepare refused")
        raise ToolError("prepare failure")

    @mcp.tool(task="optional", prepare=prepare)
    def prepared() -> str:
        return "ran"

    @mcp.tool(task="optional")
    def vetoed() -> str:
        return "ran"

    @mcp.middleware
    def veto(call: t.Any, call_next: t.Any) -> t.Any:
        if call.name == "vetoed":
            if call.meta.get("refuse") == "mcp":
                raise MCPError(-32602, "middleware refused")
            raise ToolError("middleware failure")
        return call_next(call)

    app = make_app(mcp)
    client = app.test_client()
    session = initialize(client)
    for name, text in (("prepared", "prepare failure"), ("vetoed", "middleware failure")):
        params = {"name": name, "arguments": {}, "task": {}}
        created = call_2025(client, session, "tools/call", params)["result"]
        assert "task" in created, created
        task_id = created["task"]["taskId"]
        result = call_2025(client, session, "tasks/result", {"taskId": task_id})["result"]
        assert result["isError"] is True and result["content"][0]["text"] == text
        task = call_2025(client, session, "tasks/get", {"taskId": task_id})["result"]
        assert task["status"] == "failed" and task["statusMessage"] == text
        params = {**params, "_meta": {"refuse": "mcp"}}
        refused = call_2025(client, session, "tools/call", params)
        assert refused["error"]["code"] == -32602, refused
        wire = Wire(app)
        called = result_of(wire.post("tools/call", {"name": name, "arguments": {}}, caps=CAPS))
        assert called["result"]["content"][0]["text"] == text, called
        assert called["result"].get("resultType", "complete") == "complete"


def test_2025_params_task_is_ignored_by_a_server_without_the_tasks_capability() -> None:
    """A receiver that declares no ``tasks`` capability processes the call normally.

    2025-11-25, tasks, Task Support and Handling: such a receiver "MUST process requests
    of that type normally, ignoring any task-augmentation metadata"; -32601 for a
    ``forbidden`` tool is for servers that declare ``tasks.requests.tools.call``.
    """
    mcp = MCP(name="no-tasks", version="1")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    assert mcp.extension("io.modelcontextprotocol/tasks").capability() is None
    client = make_app(mcp).test_client()
    session = initialize(client)
    arguments = {"a": 1, "b": 2}
    called = call_2025(
        client, session, "tools/call", {"name": "add", "arguments": arguments, "task": {}}
    )
    assert called["result"]["structuredContent"] == {"result": 3}, called
    _, app, _ = build()  # a server with task tools declares the capability: -32601
    client = app.test_client()
    session = initialize(client)
    refused = call_2025(
        client, session, "tools/call", {"name": "plain", "arguments": {}, "task": {}}
    )
    assert refused["error"]["code"] == -32601


def test_2025_task_result_blocks_past_the_request_timeout_until_the_task_ends() -> None:
    """``tasks/result`` of a working task MUST block until the task is terminal.

    It answered -32001 once ``MCP_REQUEST_TIMEOUT`` passed, while the task went on: a
    client cannot tell that error from the task's own. It waits until the task ends,
    bounded by the task's ``ttl``: an expired task is -32602.
    """
    _, app, _ = build(MCP_REQUEST_TIMEOUT=1.0)
    client = app.test_client()
    session = initialize(client)
    params = {"name": "work", "arguments": {"seconds": 3}, "task": {}}
    task_id = call_2025(client, session, "tools/call", params)["result"]["task"]["taskId"]
    result = call_2025(client, session, "tasks/result", {"taskId": task_id})
    assert result["result"]["content"][0]["text"] == "worked 3", result
    params = {"name": "work", "arguments": {"seconds": 30}, "task": {"ttl": 1000}}
    task_id = call_2025(client, session, "tools/call", params)["result"]["task"]["taskId"]
    started = time.monotonic()
    expired = call_2025(client, session, "tasks/result", {"taskId": task_id})
    assert expired["error"]["code"] == -32602, expired
    assert time.monotonic() - started < 5


def test_a_task_past_its_timeout_fails_though_its_thread_runs_on() -> None:
    """``MCP_TASK_TIMEOUT`` fails the task on time even if its handler cannot be interrupted.

    A thread is not interrupted: the task stayed ``working`` until the handler returned
    (for ever, for a handler that hangs), and ``tasks/result`` waited as long.
    """
    mcp = MCP(name="stuck", version="1")
    release = threading.Event()

    @mcp.tool(task="optional")
    def stuck() -> str:
        release.wait(30)  # checks no cancellation: a thread runs it to its end
        return "finally"

    client = make_app(mcp, MCP_TASK_TIMEOUT=1.0).test_client()
    session = initialize(client)
    params = {"name": "stuck", "arguments": {}, "task": {}}
    try:
        task_id = call_2025(client, session, "tools/call", params)["result"]["task"]["taskId"]
        started = time.monotonic()
        failed = call_2025(client, session, "tasks/result", {"taskId": task_id})
        assert time.monotonic() - started < 10
        assert "MCP_TASK_TIMEOUT (1 s)" in failed["error"]["message"], failed
    finally:
        release.set()
    task = call_2025(client, session, "tasks/get", {"taskId": task_id})["result"]
    assert task["status"] == "failed", task


# -- end to end: conformance and worker death ---------------------------------------------

TASK_SCENARIOS = (
    "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
    "tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers",
    "tasks-dispatch-and-envelope", "tasks-status-notifications", "tasks-required-task-error",
    "tasks-mrtr-composition",
)  # fmt: skip


@pytest.mark.e2e
@pytest.mark.conformance
@pytest.mark.parametrize(
    ("worker", "workers", "shared"),
    [("gevent", 1, False), ("gthread", 1, False), ("gevent", 4, True)],
    ids=["gevent", "gthread", "gevent-4-redis"],
)
def test_conformance_requirements_2026(
    serve: t.Any,
    conformance: t.Any,
    request: pytest.FixtureRequest,
    worker: str,
    workers: int,
    shared: bool,
) -> None:
    env = {"FLASK_MCP_BACKEND": request.getfixturevalue("redis_url")} if shared else {}
    # keepalive as in contrib/gunicorn.conf.py: with gunicorn's default of 2 s, a connection
    # of the suite's pool idle for 2 s (tasks-lifecycle polls a 2 s task on another one) is
    # closed by gunicorn just as undici (4 s) reuses it: "fetch failed" (ECONNRESET).
    server = serve(
        "examples.everything:app", worker, workers=workers, env=env,
        extra_args=["--keep-alive", "75"],
    )  # fmt: skip
    result = run_suite(conformance, server.url, "--requirements", "2026-07-28", next=True)
    assert result.failed == 0, result.output[-6000:]
    assert result.returncode == 0, result.output[-6000:]
    ran = set(re.findall(r"(tasks-[a-z-]+): \d+ passed, 0 failed", result.output))
    assert ran >= set(TASK_SCENARIOS), f"tasks scenarios not run: {set(TASK_SCENARIOS) - ran}"


@pytest.mark.e2e
def test_sigkill_of_the_worker_running_a_task_fails_it(
    serve: t.Any, redis_backend_url: str
) -> None:
    """The task's lease runs out: another worker fails it (on a cluster, the index of live
    tasks and the task's record are in different slots)."""
    prefix = f"killed-{uuid.uuid4().hex[:8]}:"
    env = {"FLASK_MCP_BACKEND": f"{redis_backend_url}?prefix={prefix}",
           "FLASK_MCP_TASK_LEASE": "3"}  # fmt: skip
    server = serve("examples.everything:app", "gevent", workers=2, env=env)
    created = post_2026(
        server.url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}}
    )
    task_id = created["result"]["taskId"]
    client = redis_client(redis_backend_url)
    deadline = time.monotonic() + 10
    worker = None
    while worker is None and time.monotonic() < deadline:
        raw = client.get(f"{prefix}{{{task_id}}}:task")
        worker = json.loads(raw).get("worker") if raw else None
        time.sleep(0.05)
    client.close()
    assert worker, "the task record never named its worker"
    pid = int(worker.rsplit(":", 1)[1])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    status = None
    while time.monotonic() < deadline:
        task = post_2026(server.url, "tasks/get", {"taskId": task_id})["result"]
        status = task["status"]
        if status != "working":
            break
        time.sleep(0.3)
    assert status == "failed", status
    assert "worker running this task stopped" in task["error"]["message"]


# -- the official TypeScript SDK client's experimental tasks API (2025-11-25) ------------


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("workers", "shared"), [(1, False), (4, True)], ids=["gevent", "gevent-4-redis"]
)
def test_typescript_sdk_experimental_tasks(
    serve: t.Any, conformance: t.Any, tasks_client: Path, request: pytest.FixtureRequest,
    workers: int, shared: bool,
) -> None:  # fmt: skip
    """create, poll, input_required with elicitation, result, invalid arguments, list, cancel
    through the TS SDK."""
    env = {"FLASK_MCP_BACKEND": request.getfixturevalue("redis_url")} if shared else {}
    server = serve("examples.everything:app", "gevent", workers=workers, env=env)
    done = subprocess.run(
        [pinned_node(), "client.mjs", server.url], cwd=tasks_client, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr + server.log_tail()
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["ok"] is True
    assert report["seen"]["elicitations"] == 1
    assert report["seen"]["statuses"]["slow_compute"][-1] == "completed"
    assert "input_required" in report["seen"]["statuses"]["confirm_delete"]
    assert report["seen"]["invalid"] == "failed"  # bad arguments: a failed task, not a bare result


def _frames(
    chunks: t.Iterator[bytes], until: t.Callable[[dict[str, t.Any]], bool]
) -> list[dict[str, t.Any]]:
    found: list[dict[str, t.Any]] = []
    for chunk in chunks:
        for line in chunk.decode().splitlines():
            if line.startswith("data: "):
                found.append(json.loads(line[6:]))
        if found and until(found[-1]):
            return found
    raise AssertionError(f"the stream ended early: {found}")


def test_listen_streams_notifications_tasks_for_the_callers_tasks() -> None:
    _, app, _ = build()
    wire = Wire(app)
    created = result_of(
        wire.post("tools/call", {"name": "work", "arguments": {"seconds": 0.5}}, caps=CAPS)
    )
    task_id = created["result"]["taskId"]
    refused = wire.post("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
    assert refused.status_code == 400 and refused.json["error"]["code"] == -32021
    wanted = {"taskIds": [task_id, "someone-elses-task"]}
    response = wire.post(
        "subscriptions/listen", {"notifications": wanted}, caps=CAPS, buffered=False
    )
    chunks = iter(response.response)
    (ack,) = _frames(chunks, lambda message: True)
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    seen = _frames(chunks, lambda message: message["params"].get("status") == "completed")
    assert all(message["method"] == "notifications/tasks" for message in seen)
    assert seen[-1]["params"]["taskId"] == task_id
    assert seen[-1]["params"]["result"]["content"][0]["text"] == "worked 0.5"
    response.close()


def test_a_listen_names_a_bounded_number_of_tasks_and_uris() -> None:
    """Each task id of a listen is looked up in the backend (300,000 of them, 2.6 MB,
    took 18 s of Redis round trips in one request): past MCP_MAX_SUBSCRIPTIONS distinct
    task ids or URIs a listen gets -32602 naming the key, before any lookup."""
    _, app, _ = build(MCP_MAX_SUBSCRIPTIONS=3, MCP_SSE_MAX_STREAM_SECONDS=1)
    wire = Wire(app)
    for field, values in (("taskIds", ["a", "b", "c", "d"]), ("resourceSubscriptions", "wxyz")):
        wanted = {field: [*values, *values]}
        refused = wire.post("subscriptions/listen", {"notifications": wanted}, caps=CAPS)
        assert refused.status_code == 400 and refused.json is not None
        error = refused.json["error"]
        assert error["code"] == -32602 and "MCP_MAX_SUBSCRIPTIONS" in error["message"], error
        assert error["data"] == {"limit": 3}
    wanted = {"taskIds": ["a", "b", "c", "a"], "resourceSubscriptions": ["x", "y", "z", "z"]}
    response = wire.post(
        "subscriptions/listen", {"notifications": wanted}, caps=CAPS, buffered=False
    )
    (ack,) = _frames(iter(response.response), lambda message: True)
    assert ack["params"]["notifications"]["taskIds"] == []  # nobody's: none is followed
    response.close()


def test_expired_tasks_are_gone_and_the_running_limit_holds() -> None:
    _, app, _ = build(MCP_TASK_TTL=1, MCP_TASK_MAX_RUNNING=1)
    wire = Wire(app)
    first = result_of(
        wire.post("tools/call", {"name": "work", "arguments": {"seconds": 0.3}}, caps=CAPS)
    )
    busy = result_of(wire.post("tools/call", {"name": "work", "arguments": {}}, caps=CAPS))
    assert busy["error"]["code"] == -32603 and "MCP_TASK_MAX_RUNNING" in busy["error"]["message"]
    task_id = first["result"]["taskId"]
    assert first["result"]["ttlMs"] == 1000
    poll(wire, task_id, terminal)
    time.sleep(1.2)
    gone = result_of(task_post(wire, "tasks/get", {"taskId": task_id}, caps=CAPS))
    assert gone["error"]["code"] == -32602


def test_the_running_limit_holds_for_tasks_created_together() -> None:
    """Two tasks created at once under MCP_TASK_MAX_RUNNING=1 both passed the check (made
    before ``prepare`` and the record's creation) and both ran: the slot is taken when the
    run starts, and the one that finds it taken is refused."""
    mcp = MCP(name="tasks", version="1")
    inside, go, release = threading.Event(), threading.Event(), threading.Event()

    def hold(ctx: Context) -> None:
        if not inside.is_set():  # the first request waits here, past the check
            inside.set()
            go.wait(10)

    @mcp.tool(task="optional", prepare=hold)
    def busy() -> str:
        release.wait(10)
        return "done"

    app = make_app(mcp, MCP_TASK_MAX_RUNNING=1)
    answers: list[dict[str, t.Any]] = []
    first = threading.Thread(
        target=lambda: answers.append(
            result_of(Wire(app).post("tools/call", {"name": "busy"}, caps=CAPS))
        )
    )
    first.start()
    try:
        assert inside.wait(10)
        second = result_of(Wire(app).post("tools/call", {"name": "busy"}, caps=CAPS))
        assert second["result"]["status"] == "working"  # it runs, and holds the slot
        go.set()
        first.join(10)
        (refused,) = answers
        assert "MCP_TASK_MAX_RUNNING" in refused["error"]["message"], refused
    finally:
        go.set()
        release.set()
        first.join(10)


def test_tasks_are_bound_to_the_principal() -> None:
    """With authorization, another principal cannot see, update or cancel a task."""
    from flask_mcp import AuthInfo

    mcp = MCP(name="tasks-auth", version="1")
    people = {"alice-token": "alice", "bob-token": "bob"}

    @mcp.authorizer
    def check(token: str, request: t.Any) -> AuthInfo | None:
        return AuthInfo(principal=people[token]) if token in people else None

    @mcp.tool(task="optional")
    def wait(ctx: Context) -> str:
        return f"for {ctx.auth.principal if ctx.auth else None}"

    app = make_app(
        mcp,
        MCP_AUTH_RESOURCE="https://mcp.example.com/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["https://auth.example.com"],
    )
    wire = Wire(app)
    alice = {"Authorization": "Bearer alice-token"}
    bob = {"Authorization": "Bearer bob-token"}
    created = result_of(
        wire.post("tools/call", {"name": "wait", "arguments": {}}, caps=CAPS, headers=alice)
    )
    task_id = created["result"]["taskId"]
    for method, params in (
        ("tasks/get", {"taskId": task_id}),
        ("tasks/cancel", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
    ):
        sent = wire.post(method, params, caps=CAPS, headers={**bob, "Mcp-Name": task_id})
        assert result_of(sent)["error"]["code"] == -32602, method
    done = None
    for _ in range(100):
        sent = wire.post(
            "tasks/get", {"taskId": task_id}, caps=CAPS, headers={**alice, "Mcp-Name": task_id}
        )
        done = result_of(sent)["result"]
        if done["status"] == "completed":
            break
        time.sleep(0.05)
    assert done is not None and done["result"]["content"][0]["text"] == "for alice"


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_supervisor_sweep_fails_dead_tasks_without_a_poll(
    backend: str, request: pytest.FixtureRequest
) -> None:
    from flask_mcp.runtime import supervisor

    config: dict[str, t.Any] = {"MCP_TASK_LEASE": 1}
    if backend != "memory":
        config["MCP_BACKEND"] = request.getfixturevalue(backend)
    mcp, app, _ = build(**config)
    state = mcp.state(app)
    store = state.backend.task_store()
    now = time.time()
    task_id = f"swept-{backend}-" + "y" * 24
    record = {
        "taskId": task_id, "status": "working", "createdAt": tasks_mod.now_iso(now),
        "lastUpdatedAt": tasks_mod.now_iso(now), "ttlMs": 60000, "pollIntervalMs": 100,
        "created": now, "lease": now - 5, "flavour": "2026", "request": {}, "owner": "x",
    }  # fmt: skip
    store.create(record, 60)
    finished: list[str] = []

    def on_finished(sender: t.Any, task_id: str, status: str, **extra: t.Any) -> None:
        finished.append(f"{task_id}:{status}")

    signals.task_finished.connect(on_finished, app)
    supervisor.tick(state, time.monotonic() + 1000, reap=False)
    swept = store.get(task_id)
    assert swept is not None and swept["status"] == "failed"
    assert finished == [f"{task_id}:failed"]
    assert task_id not in [r["taskId"] for r in store.live(100)[0]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_sweep_reaches_dead_tasks_behind_many_long_lived_ones(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Past the first batch of the live index: 520 queued tasks (no lease yet) before a
    dead one and an ended one, which the sweep fails and forgets in later rounds."""
    from flask_mcp.runtime import supervisor

    config: dict[str, t.Any] = {"MCP_TASK_LEASE": 1}
    if backend != "memory":
        prefix = f"sweep-{uuid.uuid4().hex[:8]}:"
        config["MCP_BACKEND"] = f"{request.getfixturevalue(backend)}?prefix={prefix}"
    mcp, app, _ = build(**config)
    state = mcp.state(app)
    store = tasks_mod.store_of(state)
    now = time.time()

    def task(status: str, lease: float | None, n: int) -> dict[str, t.Any]:
        return {
            "taskId": f"{status}-{n}-" + uuid.uuid4().hex, "status": status,
            "createdAt": tasks_mod.now_iso(now), "lastUpdatedAt": tasks_mod.now_iso(now),
            "ttlMs": 60000, "pollIntervalMs": 100, "created": now + n / 1e6, "lease": lease,
            "flavour": "2026", "request": {},
        }  # fmt: skip

    for n in range(520):  # queued on Celery: no lease, alive as long as they wait
        store.create(task("working", None, n), 60)
    dead, ended = task("working", now - 5, 600), task("completed", None, 601)
    store.create(dead, 60)
    store.create(ended, 60)
    finished: list[str] = []

    def on_finished(sender: t.Any, task_id: str, status: str, **extra: t.Any) -> None:
        finished.append(f"{task_id}:{status}")

    signals.task_finished.connect(on_finished, app)
    later = time.monotonic() + 1000
    for round_ in range(4):
        supervisor.tick(state, later + 1000 * round_, reap=False)
    swept = store.get(dead["taskId"])
    assert swept is not None and swept["status"] == "failed"
    assert finished == [f"{dead['taskId']}:failed"]
    if backend != "memory":
        live = redis_client(config["MCP_BACKEND"]).zrange(f"{prefix}{{g}}:tasks:live", 0, -1)
        ids = {i.decode() for i in live}
        assert len(ids) == 520 and dead["taskId"] not in ids and ended["taskId"] not in ids


# -- bounds on one caller's records (issue 33): both stores, a precise error past a bound,
# nobody else's record dropped, large finished results kept for a while, no deep copies --

STORES = ["memory", pytest.param("redis", marks=pytest.mark.redis)]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> t.Iterator[TaskStore]:
    if request.param == "memory":
        yield MemoryBackend().task_store()
        return
    from flask_mcp.backends.redis import RedisBackend

    url = request.getfixturevalue("redis_url")
    backend = RedisBackend.from_url(f"{url}?prefix=bounds-{uuid.uuid4().hex[:8]}:")
    try:
        yield backend.task_store()
    finally:
        backend.close()


def record(owner: str, size: int = 0, status: str = "working") -> dict[str, t.Any]:
    return {
        "taskId": uuid.uuid4().hex,
        "status": status,
        "owner": owner,
        "created": time.time(),
        "request": {"arguments": {"blob": "x" * size}},
    }


def test_records_per_caller_are_bounded_and_others_unaffected(store: TaskStore) -> None:
    store.limits = TaskLimits(max_records=3, max_bytes=None)
    mine = [record("alice") for _ in range(3)]
    for each in mine:
        store.create(each, 60)
    with pytest.raises(TaskQuotaExceeded) as refused:
        store.create(record("alice"), 60)
    assert refused.value.code == -32600 and refused.value.data == {
        "bound": "records",
        "limit": 3,
        "held": 3,
    }
    assert "MCP_TASK_MAX_PER_CLIENT" in refused.value.message
    store.create(record("bob"), 60)  # another caller is not refused
    assert all(store.get(each["taskId"]) is not None for each in mine)  # nothing dropped


def test_records_created_while_another_grows_are_all_counted(store: TaskStore) -> None:
    """A change that grows a record checks the caller's bytes; in Redis that check forgot
    the entries of records it did not see in both indexes, so a record created meanwhile
    stopped counting and the caller got one task past MCP_TASK_MAX_PER_CLIENT (seen in CI
    as 1 run in 20)."""
    store.limits = TaskLimits(max_records=40, max_bytes=10_000_000)
    growing = record("dave")
    store.create(growing, 60)
    done = threading.Event()

    def longer(found: dict[str, t.Any]) -> bool:
        found["n"] = found.get("n", "") + "z"
        return True

    def grow() -> None:
        while not done.is_set():
            store.mutate(growing["taskId"], longer)

    grower = threading.Thread(target=grow)
    grower.start()
    try:
        made = 1
        for _ in range(39):
            store.create(record("dave"), 60)
            made += 1
    finally:
        done.set()
        grower.join(10)
    with pytest.raises(TaskQuotaExceeded) as refused:
        store.create(record("dave"), 60)
    assert made == 40 and refused.value.data["held"] == 40


def test_an_expired_record_frees_its_callers_place(store: TaskStore) -> None:
    """A record that expired no longer counts against its caller's bounds: the next
    creation forgets it first (in Redis, its entries in the caller's counts)."""
    store.limits = TaskLimits(max_records=1, max_bytes=12_000)
    store.create(record("hank", 8_000), 0.2)
    with pytest.raises(TaskQuotaExceeded):
        store.create(record("hank"), 60)
    time.sleep(0.3)
    store.create(record("hank", 8_000), 60)


@pytest.mark.redis
def test_records_created_together_by_two_workers_stay_bounded(redis_url: str) -> None:
    """In Redis, a create read what the caller held, then wrote its record: another worker's
    create in between passed the same check, and the caller kept one task past
    MCP_TASK_MAX_PER_CLIENT (any number, with as many workers). The check and the count
    are one script now."""
    from flask_mcp.backends.redis import RedisBackend

    url = f"{redis_url}?prefix=bounds-{uuid.uuid4().hex[:8]}:"
    one, two = RedisBackend.from_url(url), RedisBackend.from_url(url)
    try:
        mine, theirs = one.task_store(), two.task_store()
        mine.limits = theirs.limits = TaskLimits(max_records=1, max_bytes=None)
        forget = mine._forget_expired

        def forget_then_the_other_creates(caller: str) -> None:
            forget(caller)
            theirs.create(record("erin"), 60)  # the other worker, between check and write

        mine._forget_expired = forget_then_the_other_creates  # type: ignore[method-assign]
        with pytest.raises(TaskQuotaExceeded) as refused:
            mine.create(record("erin"), 60)
        assert refused.value.data == {"bound": "records", "limit": 1, "held": 1}
        assert len(theirs.list("erin", 0, 10)[0]) == 1
    finally:
        one.close()
        two.close()


@pytest.mark.redis
def test_records_growing_together_in_two_workers_stay_bounded(redis_url: str) -> None:
    """In Redis, a change that grew a record read the caller's bytes, then wrote the record:
    two of the caller's tasks finishing with large results on two workers both passed,
    past MCP_TASK_MAX_BYTES_PER_CLIENT. The check and the new size are one script now."""
    from flask_mcp.backends.redis import RedisBackend

    url = f"{redis_url}?prefix=bounds-{uuid.uuid4().hex[:8]}:"
    one, two = RedisBackend.from_url(url), RedisBackend.from_url(url)
    try:
        mine, theirs = one.task_store(), two.task_store()
        mine.limits = theirs.limits = TaskLimits(max_records=None, max_bytes=20_000)
        first, second = record("fred"), record("fred")
        for each in (first, second):
            mine.create(each, 60)

        def big_result(found: dict[str, t.Any]) -> bool:
            found["result"] = {"content": [{"type": "text", "text": "y" * 12_000}]}
            return True

        forget = mine._forget_expired

        def forget_then_the_other_grows(caller: str) -> None:
            forget(caller)
            theirs.mutate(second["taskId"], big_result)  # the other worker, meanwhile
            mine._forget_expired = forget  # type: ignore[method-assign]

        mine._forget_expired = forget_then_the_other_grows  # type: ignore[method-assign]
        with pytest.raises(TaskQuotaExceeded):
            mine.mutate(first["taskId"], big_result)
        kept = mine.get(first["taskId"])
        assert kept is not None and "result" not in kept
    finally:
        one.close()
        two.close()


@pytest.mark.redis
def test_a_full_redis_is_reported_full_by_the_task_store() -> None:
    """Redis at its ``maxmemory`` (``noeviction``) refuses a task's creation and change with
    :class:`BackendFull`, whose message says to raise its maxmemory or lower the bound of
    the task records a caller keeps, and still answers reads.
    The task store turned the refusal into a plain :class:`BackendUnavailable`: the one kind
    of backend error not told apart from an outage (the readiness probe tells them apart)."""
    from flask_mcp.backends.redis import RedisBackend

    missing = "needs redis-server for the full-Redis test"
    with redis_server(
        port := free_port(), missing=missing, extra_args=["--maxmemory-policy", "noeviction"]
    ):
        url = f"redis://127.0.0.1:{port}/0"
        backend = RedisBackend.from_url(url)
        try:
            store = backend.task_store()
            store.limits = TaskLimits(max_records=10, max_bytes=None)
            kept = record("gina")
            store.create(kept, 60)
            with redis_client(url) as admin:
                admin.config_set("maxmemory", 1)  # far below what it holds: full

            def finish(found: dict[str, t.Any]) -> bool:
                found["status"] = "completed"
                return True

            with pytest.raises(BackendFull, match="Raise its maxmemory") as refused:
                store.create(record("gina"), 60)
            assert "MCP_TASK_MAX_BYTES_PER_CLIENT" in str(refused.value)
            with pytest.raises(BackendFull, match="is full"):
                store.mutate(kept["taskId"], finish)
            assert store.get(kept["taskId"]) == kept  # reads are served
            assert store.list("gina", 0, 10)[0] == [kept]
        finally:
            backend.close()


def test_bytes_per_caller_are_bounded_on_create_and_on_change(store: TaskStore) -> None:
    store.limits = TaskLimits(max_records=None, max_bytes=20_000)
    first = record("carol", 8_000)
    store.create(first, 60)
    with pytest.raises(TaskQuotaExceeded) as refused:
        store.create(record("carol", 15_000), 60)
    assert refused.value.data["bound"] == "bytes"
    assert "MCP_TASK_MAX_BYTES_PER_CLIENT" in refused.value.message

    def big_result(found: dict[str, t.Any]) -> bool:
        found["status"] = "completed"
        found["result"] = {"content": [{"type": "text", "text": "y" * 30_000}]}
        return True

    with pytest.raises(TaskQuotaExceeded):
        store.mutate(first["taskId"], big_result)
    kept = store.get(first["taskId"])
    assert kept is not None and kept["status"] == "working" and "result" not in kept


def test_the_live_batches_move_on_past_a_batch_that_ended_on_an_ended_task(
    store: TaskStore,
) -> None:
    first, second, third = (record("o") for _ in range(3))
    second["created"] = first["created"] + 1
    third["created"] = first["created"] + 2
    for each in (first, second, third):
        store.create(each, 60)

    def end(found: dict[str, t.Any]) -> bool:
        found["status"] = "completed"
        return True

    store.mutate(second["taskId"], end)
    seen: list[str] = []
    cursor = None
    for _ in range(3):  # Redis: the first batch ends on the ended one, dropped as it is read
        records, cursor = store.live(2, cursor)
        seen += [r["taskId"] for r in records]
        if cursor is None:
            break
    assert seen == [first["taskId"], third["taskId"]] and cursor is None


def test_a_large_finished_result_is_kept_only_for_a_while(store: TaskStore) -> None:
    store.limits = TaskLimits(large_result=1_000, large_result_ttl=0.5)
    small, large = record("dave"), record("dave")
    for each in (small, large):
        store.create(each, 60)

    def finish(size: int) -> t.Callable[[dict[str, t.Any]], bool]:
        def change(found: dict[str, t.Any]) -> bool:
            found["status"] = "completed"
            found["result"] = {"content": [{"type": "text", "text": "z" * size}]}
            return True

        return change

    store.mutate(small["taskId"], finish(10))
    store.mutate(large["taskId"], finish(5_000))
    assert store.get(large["taskId"]) is not None  # there to be fetched at once
    deadline = time.monotonic() + 10
    while store.get(large["taskId"]) is not None:
        assert time.monotonic() < deadline, "the large result was kept for the whole TTL"
        time.sleep(0.1)
    assert store.get(small["taskId"]) is not None  # a small one stays for its TTL


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_large_finished_result_reports_its_actual_ttl(backend: str, request: t.Any) -> None:
    """``tasks/get`` MUST include the actual ``ttl``: the shorter one of a large result.

    A finished record above ``MCP_TASK_LARGE_RESULT_SIZE`` is kept only
    ``MCP_TASK_LARGE_RESULT_TTL`` seconds, but the task still reported its whole TTL.
    """
    mcp = MCP(name="large", version="1")

    @mcp.tool(task="optional")
    def big(size: int) -> str:
        return "z" * size

    config: dict[str, t.Any] = {"MCP_TASK_LARGE_RESULT_SIZE": 1000, "MCP_TASK_LARGE_RESULT_TTL": 30}
    if backend == "redis":
        config["MCP_BACKEND"] = request.getfixturevalue("redis_url")
    client = make_app(mcp, **config).test_client()
    session = initialize(client)
    ttls = {}
    for size in (10, 5000):
        params = {"name": "big", "arguments": {"size": size}, "task": {"ttl": 600_000}}
        task_id = call_2025(client, session, "tools/call", params)["result"]["task"]["taskId"]
        call_2025(client, session, "tasks/result", {"taskId": task_id})
        ttls[size] = call_2025(client, session, "tasks/get", {"taskId": task_id})["result"]["ttl"]
    assert ttls[10] == 600_000  # a small result is kept for the whole TTL
    assert 30_000 <= ttls[5000] <= 40_000, ttls  # a large one: done within 10 s, then 30 s


def test_the_memory_store_copies_no_record_deeply(monkeypatch: pytest.MonkeyPatch) -> None:
    """Records are kept as JSON: a read decodes, a change encodes once (issue 34 measured
    9.2 s per task with a 4 MB result deep-copied on every read and change)."""
    store = MemoryBackend().task_store()

    def refuse(*args: t.Any, **kwargs: t.Any) -> t.NoReturn:
        raise AssertionError("copy.deepcopy was called")

    monkeypatch.setattr(copy, "deepcopy", refuse)
    task = record("erin", 4 * 1024 * 1024)
    store.create(task, 60)
    got = store.get(task["taskId"])
    assert got is not None
    got["request"]["arguments"]["blob"] = "changed"  # a copy: the store keeps its own
    stored = store.get(task["taskId"])
    assert stored is not None and len(stored["request"]["arguments"]["blob"]) == 4 * 1024 * 1024
    store.mutate(task["taskId"], lambda found: found.update(status="completed") is None)
    assert store.list("erin", 0, 10)[0][0]["status"] == "completed"


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_task_call_past_the_bound_gets_a_json_rpc_error(
    backend: str, request: pytest.FixtureRequest
) -> None:
    config: dict[str, t.Any] = {"MCP_TASK_MAX_PER_CLIENT": 2}
    if backend == "redis":
        url = request.getfixturevalue("redis_url")
        config["MCP_BACKEND"] = f"{url}?prefix=bounds-{uuid.uuid4().hex[:8]}:"
    _, app, _ = build(**config)
    wire = Wire(app)
    call = {"name": "work", "arguments": {"seconds": 0}}
    made = [result_of(wire.post("tools/call", call, caps=CAPS))["result"] for _ in range(2)]
    refused = result_of(wire.post("tools/call", call, caps=CAPS))
    assert refused["error"]["code"] == -32600, refused
    assert refused["error"]["data"]["bound"] == "records"
    assert "MCP_TASK_MAX_PER_CLIENT" in refused["error"]["message"]
    for task in made:  # the caller's earlier tasks are all still there
        assert poll(wire, task["taskId"], terminal)["status"] == "completed"
    if backend == "redis":
        redis_client(config["MCP_BACKEND"].split("?")[0]).close()


def test_the_quota_counts_the_caller_not_the_owner(store: TaskStore) -> None:
    """Records of one owner (anonymous 2026-07-28 callers share one) count against each
    record's ``caller``: one caller's full quota refuses no other caller."""
    store.limits = TaskLimits(max_records=2, max_bytes=None)
    mine = [dict(record("anyone"), caller="addr-a") for _ in range(2)]
    for each in mine:
        store.create(each, 60)
    with pytest.raises(TaskQuotaExceeded):
        store.create(dict(record("anyone"), caller="addr-a"), 60)
    theirs = dict(record("anyone"), caller="addr-b")
    store.create(theirs, 60)  # same owner, another caller: not refused
    page, _ = store.list("anyone", 0, 10)  # the owner's listing holds them all
    assert {r["taskId"] for r in page} == {r["taskId"] for r in [*mine, theirs]}


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_anonymous_callers_have_a_task_quota_each_by_address(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Without authorization every 2026-07-28 caller is the same owner; before issue 33 they
    were one caller too, so one client could take everyone's MCP_TASK_MAX_PER_CLIENT."""
    config: dict[str, t.Any] = {"MCP_TASK_MAX_PER_CLIENT": 2}
    if backend == "redis":
        url = request.getfixturevalue("redis_url")
        config["MCP_BACKEND"] = f"{url}?prefix=bounds-{uuid.uuid4().hex[:8]}:"
    _, app, _ = build(**config)
    flood, other = Wire(app), Wire(app)
    flood.client.environ_base["REMOTE_ADDR"] = "10.0.0.1"
    other.client.environ_base["REMOTE_ADDR"] = "10.0.0.2"
    call = {"name": "work", "arguments": {"seconds": 0}}
    made = [result_of(flood.post("tools/call", call, caps=CAPS))["result"] for _ in range(2)]
    refused = result_of(flood.post("tools/call", call, caps=CAPS))
    assert refused["error"]["data"]["bound"] == "records", refused
    for _ in range(2):  # another address still has its quota
        task = result_of(other.post("tools/call", call, caps=CAPS))["result"]
        assert poll(other, task["taskId"], terminal)["status"] == "completed"
    assert result_of(other.post("tools/call", call, caps=CAPS))["error"]["code"] == -32600
    for task in made:  # ownership is unchanged: the anonymous owner reads them from anywhere
        assert poll(other, task["taskId"], terminal)["status"] == "completed"
    if backend == "redis":
        redis_client(config["MCP_BACKEND"].split("?")[0]).close()


# -- hostile input ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS[:2])
def test_arguments_nested_600_deep_run_as_a_task(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """The memory store deep-copied records by recursion: RecursionError and -32603."""
    config = {} if backend == "memory" else {"MCP_BACKEND": request.getfixturevalue(backend)}
    mcp, app, _ = build(**config)

    @mcp.tool(task="optional")
    def nested(data: list[t.Any]) -> str:
        depth = 0
        while data:
            data, depth = data[0], depth + 1
        return f"{depth} deep"

    deep: list[t.Any] = []
    level = deep
    for _ in range(600):
        level.append([])
        level = level[0]
    client = app.test_client()
    session = initialize(client)
    params = {"name": "nested", "arguments": {"data": deep}, "task": {}}
    task = call_2025(client, session, "tools/call", params)["result"]["task"]
    result = call_2025(client, session, "tasks/result", {"taskId": task["taskId"]})["result"]
    assert result["content"][0]["text"] == "600 deep"


@pytest.mark.parametrize("backend", BACKENDS[:2])
@pytest.mark.parametrize("offset", [2**63, 2**64 + 5])
def test_a_cursor_out_of_range_is_invalid_params(
    request: pytest.FixtureRequest, backend: str, offset: int
) -> None:
    """A cursor above 2**63 reached Redis's signed ranges and gave -32603."""
    config = {} if backend == "memory" else {"MCP_BACKEND": request.getfixturevalue(backend)}
    _, app, _ = build(**config)
    client = app.test_client()
    session = initialize(client)
    cursor = encode_cursor(offset, "tasks")
    answer = call_2025(client, session, "tasks/list", {"cursor": cursor})
    assert answer["error"]["code"] == -32602
    assert "Invalid cursor" in answer["error"]["message"]
    start = encode_cursor(0, "tasks")
    assert call_2025(client, session, "tasks/list", {"cursor": start})["result"]["tasks"] == []


@pytest.mark.parametrize("cursor", ["0", "+0", " 0", "0_0", "\u0660", 0, True, 0.5, "x", "b286MA"])
def test_every_list_refuses_a_garbled_cursor_alike(cursor: t.Any) -> None:
    """Invalid cursors get -32602 (pagination); tasks/list read any int() took as an offset."""
    mcp, app, _ = build(MCP_PAGE_SIZE=1)
    mcp.prompt(name="p")(lambda: "p")
    mcp.resource("test://r")(lambda: "r")
    mcp.resource("test://r/{name}")(lambda name: name)
    client = app.test_client()
    session = initialize(client)
    for _ in range(2):
        call_2025(client, session, "tools/call", {"name": "plain", "arguments": {}, "task": {}})
    lists = ["tools/list", "resources/list", "resources/templates/list", "prompts/list"]
    for method in [*lists, "tasks/list"]:
        answer = call_2025(client, session, method, {"cursor": cursor})
        assert answer.get("error", {}).get("code") == -32602, (method, answer)
        assert answer["error"]["message"].startswith("Invalid cursor"), method
        following = call_2025(client, session, method, {})["result"].get("nextCursor")
        if following is not None:  # and a real one of this list, of no other
            assert "result" in call_2025(client, session, method, {"cursor": following})
            for other in {*lists, "tasks/list"} - {method}:
                mixed = call_2025(client, session, other, {"cursor": following})
                assert mixed["error"]["code"] == -32602, (method, other)


class _FlakyTaskStore(MemoryTaskStore):
    """Task records in memory that the backend cannot reach while ``down`` (a failover)."""

    down = False

    def get(self, task_id: str) -> dict[str, t.Any] | None:
        if self.down:
            raise BackendUnavailable("Redis is unreachable: failing over")
        return super().get(task_id)

    def mutate(self, task_id: str, change: t.Any) -> dict[str, t.Any] | None:
        if self.down:
            raise BackendUnavailable("Redis is unreachable: failing over")
        return super().mutate(task_id, change)


def test_a_task_ending_while_the_backend_fails_over_keeps_its_result() -> None:
    """The outcome of a task that ends while the store is unreachable is written when it
    answers again, as a plain call's answer is; not lost, then failed by the lease."""
    backend = MemoryBackend()
    store = backend._task_store = _FlakyTaskStore()
    mcp = MCP(name="tasks", version="1")
    release = threading.Event()

    @mcp.tool(task="optional")
    def gated() -> str:
        release.wait(10)
        return "survived"

    app = make_app(mcp, MCP_BACKEND=backend, MCP_TASK_LEASE=600)
    wire = Wire(app)
    created = result_of(wire.post("tools/call", {"name": "gated", "arguments": {}}, caps=CAPS))
    task_id = created["result"]["taskId"]
    store.down = True
    release.set()
    time.sleep(1.0)  # the handler ends; its outcome meets the outage
    store.down = False
    settle_owed()  # what the supervisor does every second
    done = poll(wire, task_id, terminal)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "survived"


class _LostReplyTaskStore(MemoryTaskStore):
    """Task records in memory whose creation is kept but reported failed (its reply lost in
    a failover), and which the backend cannot reach while ``down``."""

    down = False

    def create(self, record: dict[str, t.Any], ttl: float | None) -> None:
        super().create(record, ttl)
        self.down = True
        raise BackendUnavailable("Redis is unreachable: Connection closed by server.")

    def discard(self, record: dict[str, t.Any]) -> None:
        if self.down:
            raise BackendUnavailable("Redis is unreachable: failing over")
        with self._lock:
            self._records.pop(record["taskId"], None)


def test_a_refused_task_is_discarded_when_the_store_answers_again() -> None:
    """A task ``tools/call`` refused with 503 because its creation met an outage keeps no
    record, also when the store stays unreachable past the refusal: it is removed as soon
    as the store answers (the supervisor retries every second)."""
    backend = MemoryBackend()
    store = backend._task_store = _LostReplyTaskStore()
    mcp = MCP(name="tasks", version="1")

    @mcp.tool(task="optional")
    def slow() -> str:
        return "never run"

    wire = Wire(make_app(mcp, MCP_BACKEND=backend))
    response = wire.post("tools/call", {"name": "slow", "arguments": {}}, caps=CAPS)
    assert response.status_code == 503
    store.down = False
    settle_owed()  # what the supervisor does every second
    assert store._records == {}  # nothing listed, counted or swept


def test_a_removal_owed_to_a_store_still_down_holds_back_no_other_app() -> None:
    """The removal of a refused task's record, owed while its store stays down (as a
    test's private Redis that never returns), must not hold back another app's owed
    writes: the first try of this fix held every other backend's behind it."""
    lost_backend, backend = MemoryBackend(), MemoryBackend()
    lost = lost_backend._task_store = _LostReplyTaskStore()
    store = backend._task_store = _FlakyTaskStore()
    release = threading.Event()
    apps = []
    for name, app_backend in [("lost", lost_backend), ("kept", backend)]:
        mcp = MCP(name=name, version="1")

        @mcp.tool(task="optional")
        def gated() -> str:
            release.wait(10)
            return "survived"

        apps.append(make_app(mcp, MCP_BACKEND=app_backend, MCP_TASK_LEASE=600))
    call = {"name": "gated", "arguments": {}}
    assert Wire(apps[0]).post("tools/call", call, caps=CAPS).status_code == 503  # owed first
    wire = Wire(apps[1])
    task_id = result_of(wire.post("tools/call", call, caps=CAPS))["result"]["taskId"]
    store.down = True
    release.set()
    time.sleep(1.0)  # the handler ends; its outcome meets the outage
    store.down = False
    settle_owed()  # what the supervisor does every second
    assert poll(wire, task_id, terminal)["status"] == "completed"
    assert lost._records  # still owed its removal
    lost.down = False
    settle_owed()
    assert lost._records == {}


def test_an_immediate_task_error_is_the_plain_calls_error() -> None:
    """A task that fails within ``MCP_TASK_IMMEDIATE_MS`` is answered with the JSON-RPC
    error a plain call gets, its ``data`` included (what ``tasks/get`` would show)."""
    mcp = MCP(name="tasks", version="1")

    @mcp.tool(task="optional")
    def refuse() -> str:
        raise MCPError(-32602, "no such region", {"region": "mars", "known": ["eu", "us"]})

    wire = Wire(make_app(mcp, MCP_TASK_IMMEDIATE_MS=2000))
    plain = result_of(wire.post("tools/call", {"name": "refuse", "arguments": {}}))
    immediate = result_of(wire.post("tools/call", {"name": "refuse", "arguments": {}}, caps=CAPS))
    assert plain["error"]["data"] == {"region": "mars", "known": ["eu", "us"]}
    assert immediate["error"] == plain["error"]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_prepare_gets_the_context_of_a_tool_that_declares_none(version: str) -> None:
    """``prepare=`` runs with the request's ``Context`` in a plain call and before a task,
    whether the tool declares a ``Context`` or not (without one it was skipped in a plain
    call, and handed ``None`` before a task)."""
    mcp = MCP(name="tasks", version="1")

    def confirm(ctx: Context) -> bool:
        answer = ctx.elicit("Sure?", SCHEMA)
        if not answer["content"]["ok"]:
            raise ToolError("not confirmed")
        return True

    @mcp.tool(task="optional", prepare=confirm)
    def reset() -> str:
        return "reset"

    client = MCPTestClient(
        make_app(mcp), protocol_version=version, elicitation=lambda params: {
            "action": "accept", "content": {"ok": False}
        },
    )  # fmt: skip
    with client:
        plain = client.call_tool("reset", {})
        task = client.task_result(client.call_tool_as_task("reset", {}))
    refused = {"content": [{"type": "text", "text": "not confirmed"}], "isError": True}
    assert {k: plain[k] for k in refused} == refused
    assert {k: task[k] for k in refused} == refused


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_task_sees_the_session_a_plain_call_sees(version: str) -> None:
    """``ctx.session_id`` in a 2025-11-25 task is the session that created it (it was
    ``None``), as in a plain call; at 2026-07-28 there is none either way."""
    mcp = MCP(name="tasks", version="1")

    @mcp.tool(task="optional")
    def whose(ctx: Context) -> str:
        return str(ctx.session_id)

    with MCPTestClient(make_app(mcp), protocol_version=version) as client:
        plain = client.call_tool("whose", {})["content"][0]["text"]
        task = client.task_result(client.call_tool_as_task("whose", {}))["content"][0]["text"]
        session = str(client.session_id)
    assert plain == task == session


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_task_sees_the_meta_of_the_request_that_created_it(version: str) -> None:
    """``ctx.meta`` in a task is the ``_meta`` of its ``tools/call``, as in a plain call
    (it was empty: a trace id sent there was lost when the call became a task)."""
    mcp = MCP(name="tasks", version="1")

    @mcp.tool(task="optional")
    def trace(ctx: Context) -> str:
        return str(ctx.meta.get("com.example/trace"))

    meta = {"com.example/trace": "t-1"}
    with MCPTestClient(make_app(mcp), protocol_version=version) as client:
        plain = client.call_tool("trace", {}, **meta)["content"][0]["text"]
        task = client.task_result(client.call_tool_as_task("trace", {}, **meta))
    assert plain == task["content"][0]["text"] == "t-1"


class _TenantWire(Wire):
    """A :class:`Wire` posting to one tenant's endpoint (``MCP_PATH="/t/<tenant>/mcp"``)."""

    def __init__(self, app: t.Any, tenant: str) -> None:
        super().__init__(app)
        self.path = f"/t/{tenant}/mcp"
        post = self.client.post
        self.client.post = lambda _path, **kwargs: post(self.path, **kwargs)  # type: ignore[method-assign]


def test_listen_honours_only_the_tasks_of_its_own_path() -> None:
    """A task belongs to the path it was created under: ``tasks/get`` under another tenant
    does not find it, and ``subscriptions/listen`` there does not stream its notifications
    (its result included)."""
    mcp = MCP(name="tenants", version="1")

    @mcp.tool(task="optional")
    def report(seconds: float = 0.5) -> str:
        time.sleep(seconds)
        return "acme's secret report"

    app = make_app(mcp, MCP_PATH="/t/<tenant>/mcp", MCP_TASK_IMMEDIATE_MS=0)
    acme, globex = _TenantWire(app, "acme"), _TenantWire(app, "globex")
    created = result_of(acme.post("tools/call", {"name": "report", "arguments": {}}, caps=CAPS))
    task_id = created["result"]["taskId"]
    unknown = result_of(task_post(globex, "tasks/get", {"taskId": task_id}, caps=CAPS))
    assert unknown["error"]["code"] == -32602
    wanted = {"taskIds": [task_id]}
    for wire, agreed in [(globex, []), (acme, [task_id])]:
        response = wire.post(
            "subscriptions/listen", {"notifications": wanted}, caps=CAPS, buffered=False
        )
        (ack,) = _frames(iter(response.response), lambda message: True)
        response.close()
        assert ack["params"]["notifications"] == {"taskIds": agreed}


# -- what a task asks its client, on a real server (tests/_apps/task_inputs.py) ----------

URL_CAPS = {"elicitation": {"url": {}}, "extensions": EXT}


def _connect_2026(url: str, account: str, caps: dict[str, t.Any] = URL_CAPS) -> dict[str, t.Any]:
    """Call ``connect`` of ``tests/_apps/task_inputs.py`` at 2026-07-28; return the result."""
    params = {"name": "connect", "arguments": {"account": account}}
    return t.cast("dict[str, t.Any]", post_2026(url, "tools/call", params, caps=caps)["result"])


def _answer_2026(url: str, task_id: str, answers: dict[str, t.Any]) -> dict[str, t.Any]:
    """Send ``tasks/update`` with ``answers``; return the final message."""
    return post_2026(url, "tasks/update", {"taskId": task_id, "inputResponses": answers})


@pytest.mark.e2e
def test_a_task_asks_its_client_as_the_plain_call_does(serve: t.Any) -> None:
    """``URLElicitationRequired`` means "retry once the user has been to the page" in every
    era: -32042 in 2025-11-25 (a task fails with it, as its request would); at 2026-07-28,
    which has no -32042, a plain call answers ``input_required`` and a task moves to
    ``input_required`` with the URL elicitation in its ``inputRequests``, then runs the
    handler again once the client accepts (or ends, cancelled, when the user declines),
    as the call's retry runs it. A client's error answer reaches the handler alike."""
    server = serve("tests._apps.task_inputs:app", "gevent")
    with httpx.Client(timeout=30) as http:
        caps = {"elicitation": {"url": {}}, "sampling": {}, "tasks": {}}
        headers = start_session(http, server.url, caps)

        def send(method: str, params: dict[str, t.Any]) -> dict[str, t.Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            return t.cast(
                "dict[str, t.Any]", http.post(server.url, headers=headers, json=body).json()
            )

        plain = send("tools/call", {"name": "connect", "arguments": {"account": "a"}})
        assert plain["error"]["code"] == -32042
        task = {"name": "connect", "arguments": {"account": "b"}, "task": {}}
        task_id = send("tools/call", task)["result"]["task"]["taskId"]
        assert send("tasks/result", {"taskId": task_id})["error"]["code"] == -32042

        # The user rejects sampling (the client answers with a JSON-RPC error, as the
        # sampling page has it): the handler gets the ClientRequestError in a plain call
        # and in a task alike, and the task ends as the call does.
        def refusing(method: str, params: dict[str, t.Any]) -> list[dict[str, t.Any]]:
            body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
            seen = []
            with http.stream("POST", server.url, headers=headers, json=body) as stream:
                for message in (m for line in stream.iter_lines() for m in sse_data(line + "\n")):
                    seen.append(message)
                    if message.get("method") == "sampling/createMessage":
                        error = {"code": -1, "message": "User rejected sampling request"}
                        answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                        http.post(server.url, headers=headers, json=answer)
                    if "method" not in message:  # the answer to the request
                        break
            return seen

        *_, plain = refusing("tools/call", {"name": "summary", "arguments": {}})
        assert "User rejected sampling request" in plain["result"]["content"][0]["text"]
        task = {"name": "summary", "arguments": {}, "task": {}}
        task_id = send("tools/call", task)["result"]["task"]["taskId"]
        asked, ended = refusing("tasks/result", {"taskId": task_id})
        assert asked["method"] == "sampling/createMessage"
        assert "result" in ended, ended  # not an error of tasks/result's own
        assert ended["result"]["content"] == plain["result"]["content"]

    plain_2026 = _connect_2026(server.url, "c", caps={"elicitation": {"url": {}}})
    assert plain_2026["resultType"] == "input_required"
    (asked,) = plain_2026["inputRequests"].values()
    assert asked["params"]["url"] == "https://example.com/connect?account=c"

    task_id = _connect_2026(server.url, "d")["taskId"]
    waiting = wait_task(server.url, task_id, lambda task: task["status"] != "working")
    assert waiting["status"] == "input_required", waiting
    ((key, request),) = waiting["inputRequests"].items()
    expected = {"mode": "url", "url": "https://example.com/connect?account=d",
                "message": "Connect d."}  # fmt: skip
    assert request == {"method": "elicitation/create", "params": expected}  # no elicitationId
    assert _answer_2026(server.url, task_id, {key: {"action": "accept"}})["result"]
    done = wait_task(server.url, task_id, lambda task: task["status"] in TERMINAL)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "d connected on run 2"

    task_id = _connect_2026(server.url, "e")["taskId"]
    waiting = wait_task(server.url, task_id, lambda task: task["status"] != "working")
    (key,) = waiting["inputRequests"]
    _answer_2026(server.url, task_id, {key: {"action": "decline"}})
    ended = wait_task(server.url, task_id, lambda task: task["status"] in TERMINAL)
    assert ended["status"] == "cancelled", ended
    assert "answered decline" in ended["statusMessage"]

    # A question answered before the URLElicitationRequired is not asked again on the
    # run after it: the plain call's retry replays its answer, and so does the task; the
    # run after it sees the URL elicitation's answer in ctx.input_responses in both, and
    # reports its progress from the start, as a new request does.
    caps = {"elicitation": {"form": {}, "url": {}}}
    name = {"action": "accept", "content": {"name": "Ada"}}
    params = {"name": "sign_in", "arguments": {"account": "x", "tag": "plain"}}
    answers: dict[str, t.Any] = {"elicitation-1": name, "sign-in": {"action": "accept"}}
    rounds: list[dict[str, t.Any]] = []
    for _ in range(3):
        rounds.append(post_2026(server.url, "tools/call", params, caps=caps)["result"])
        pending = rounds[-1].get("inputRequests") or {}
        params = {**params, "requestState": rounds[-1].get("requestState"),
                  "inputResponses": {key: answers[key] for key in pending}}  # fmt: skip
    assert [list(r.get("inputRequests") or ()) for r in rounds] == [
        ["elicitation-1"],
        ["sign-in"],
        [],
    ]
    params = {"name": "sign_in", "arguments": {"account": "x", "tag": "task"}}
    caps = {**caps, "extensions": EXT}
    task_id = post_2026(server.url, "tools/call", params, caps=caps)["result"]["taskId"]
    seen: set[str] = set()

    def news(task: dict[str, t.Any]) -> bool:
        return task["status"] in TERMINAL or bool(set(task.get("inputRequests") or ()) - seen)

    for answer in (name, {"action": "accept"}):
        asking = wait_task(server.url, task_id, news)
        ((key, request),) = asking["inputRequests"].items()
        seen.add(key)
        assert request["params"]["mode"] == ("form" if answer is name else "url"), asking
        _answer_2026(server.url, task_id, {key: answer})
    done = wait_task(server.url, task_id, news)
    assert done["status"] == "completed", done  # not input_required: "Your name?" again
    assert done["statusMessage"] == "run 2"  # ctx.progress(1) on the next run is reported
    assert done["result"]["content"] == rounds[-1]["content"]
    assert rounds[-1]["content"][0]["text"] == "Ada signed in to x on run 2 (accept)"

    # A URL elicitation asked with ctx.ask() has no elicitationId at 2026-07-28 (the
    # schema has none), in a plain call's inputRequests and in a task's alike.
    params = {"name": "visit", "arguments": {}}
    plain = post_2026(server.url, "tools/call", params, caps={"elicitation": {"url": {}}})
    assert "elicitationId" not in plain["result"]["inputRequests"]["visit"]["params"]
    task_id = post_2026(server.url, "tools/call", params, caps=URL_CAPS)["result"]["taskId"]
    asking = wait_task(server.url, task_id, lambda task: task["status"] != "working")
    ((key, request),) = asking["inputRequests"].items()
    assert request == plain["result"]["inputRequests"]["visit"]
    _answer_2026(server.url, task_id, {key: {"action": "accept"}})


@pytest.mark.e2e
def test_2026_task_keys_answers_notifications_and_errors_on_a_real_server(serve: t.Any) -> None:
    """The tasks extension's MUSTs and SHOULDs that the conformance suite leaves out.

    - a key of ``inputRequests`` is unique over the task's life: a second question under
      the handler's same key gets a new one, and an answer sent again to a key already
      answered is ignored (it does not answer the next question);
    - ``tasks/update`` of an unknown task is -32602, of a finished one an ignored ack;
    - a failed task has its ``error`` and a ``statusMessage``;
    - ``notifications/tasks`` carries what ``tasks/get`` returns, and no
      ``notifications/progress`` or ``notifications/message`` goes on a task's listen stream.
    """
    server = serve("tests._apps.task_inputs:app", "gevent")
    url = server.url
    created = post_2026(url, "tools/call", {"name": "twice", "arguments": {}})["result"]
    task_id = created["taskId"]
    first = wait_task(url, task_id, lambda task: task["status"] == "input_required")
    (key_1,) = first["inputRequests"]
    yes = {"action": "accept", "content": {"yes": True}}
    post_2026(url, "tasks/update", {"taskId": task_id, "inputResponses": {key_1: yes}})
    second = wait_task(url, task_id, lambda task: set(task.get("inputRequests") or ()) - {key_1})
    (key_2,) = second["inputRequests"]
    assert key_2 != key_1
    again = {key_1: {"action": "accept", "content": {"yes": False}}}
    assert post_2026(url, "tasks/update", {"taskId": task_id, "inputResponses": again})["result"]
    assert post_2026(url, "tasks/get", {"taskId": task_id})["result"]["inputRequests"] == {
        key_2: second["inputRequests"][key_2]
    }  # still asked: the answer to the answered key was ignored
    no = {key_2: {"action": "accept", "content": {"yes": False}}}
    post_2026(url, "tasks/update", {"taskId": task_id, "inputResponses": no})
    done = wait_task(url, task_id, lambda task: task["status"] in TERMINAL)
    assert done["result"]["content"][0]["text"] == "True False"
    late = post_2026(url, "tasks/update", {"taskId": task_id, "inputResponses": no})
    assert late["result"]["resultType"] == "complete"
    unknown = post_2026(url, "tasks/update", {"taskId": "x" * 32, "inputResponses": no})
    assert unknown["error"]["code"] == -32602

    broken = post_2026(url, "tools/call", {"name": "broken", "arguments": {}})["result"]
    failed = wait_task(url, broken["taskId"], lambda task: task["status"] in TERMINAL)
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": -32603, "message": "broken on purpose"}
    assert failed["statusMessage"] == "broken on purpose"

    chatty = post_2026(url, "tools/call", {"name": "chatty", "arguments": {}})["result"]
    task_id = chatty["taskId"]
    asking = wait_task(url, task_id, lambda task: task["status"] == "input_required")
    (key,) = asking["inputRequests"]
    answer = {"taskId": task_id, "inputResponses": {key: yes}}

    def watch(message: dict[str, t.Any]) -> bool:
        if message["method"] == "notifications/subscriptions/acknowledged":
            post_2026(url, "tasks/update", answer)  # the task goes on once the listen is on
            return False
        return bool(message["params"].get("status") == "completed")

    seen = listen_2026(url, {"taskIds": [task_id]}, watch)
    ack, *notes = seen
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert {note["method"] for note in notes} == {"notifications/tasks"}
    assert any(note["params"].get("statusMessage") == "step 2" for note in notes)
    final = post_2026(url, "tasks/get", {"taskId": task_id})["result"]
    del final["resultType"], final["_meta"]
    note = dict(notes[-1]["params"])
    note.pop("_meta")  # the listen's subscription id
    assert note == final


@pytest.mark.e2e
def test_2025_task_progress_reaches_the_client_waiting_for_its_result(serve: t.Any) -> None:
    """A 2025-11-25 task's ``ctx.progress()`` only set its ``statusMessage``: the client that
    gave a ``progressToken`` got no ``notifications/progress``, though the spec keeps the
    token valid until the task ends. They come on the ``tasks/result`` stream now, with the
    token and the related task, increasing, before the result."""
    related = "io.modelcontextprotocol/related-task"
    server = serve("tests._apps.task_inputs:app", "gevent")
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, server.url, {"elicitation": {}, "tasks": {}})
        params = {"name": "gauged", "arguments": {}, "task": {}, "_meta": {"progressToken": "p-1"}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        task_id = http.post(server.url, headers=headers, json=body).json()["result"]["task"][
            "taskId"
        ]
        body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": task_id}}
        seen: list[dict[str, t.Any]] = []
        with http.stream("POST", server.url, headers=headers, json=body) as stream:
            messages = (m for line in stream.iter_lines() for m in sse_data(line + "\n"))
            for message in messages:
                seen.append(message)
                if message.get("method") == "elicitation/create":
                    answer = {"jsonrpc": "2.0", "id": message["id"],
                              "result": {"action": "accept", "content": {"yes": True}}}  # fmt: skip
                    assert http.post(server.url, headers=headers, json=answer).status_code == 202
                if "result" in message:
                    break
    methods = [m.get("method", "result") for m in seen]
    assert methods[:2] == ["notifications/progress", "elicitation/create"], methods
    assert methods[-1] == "result" and seen[-1]["result"]["content"][0]["text"] == "gauged"
    progress = [m["params"] for m in seen if m.get("method") == "notifications/progress"]
    assert progress[0] == {"progressToken": "p-1", "progress": 1, "total": 3,
                           "message": "asked", "_meta": {related: {"taskId": task_id}}}  # fmt: skip
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values)) and set(values) <= {1, 2, 3}, values
    assert all(p["progressToken"] == "p-1" for p in progress)


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_2025_tasks_result_relaying_a_question_ends_with_its_cancelled_task(
    serve: t.Any, worker: str
) -> None:
    """A ``tasks/result`` that relays the task's question waited for the client's answer
    (``MCP_CLIENT_REQUEST_TIMEOUT``, two minutes) though the task was cancelled meanwhile;
    it answers at once with what ``tasks/result`` of the cancelled task answers, and tells
    the client its question is moot. So does one that a later ``tasks/result`` replaced."""
    related = "io.modelcontextprotocol/related-task"
    env = {"FLASK_MCP_CLIENT_REQUEST_TIMEOUT": "30"}  # the default is 120
    server = serve("tests._apps.task_inputs:app", worker, threads=4, env=env)
    with httpx.Client(timeout=60) as http:
        headers = start_session(http, server.url, {"elicitation": {}, "tasks": {}})

        def send(method: str, params: dict[str, t.Any]) -> dict[str, t.Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            return t.cast(
                "dict[str, t.Any]", http.post(server.url, headers=headers, json=body).json()
            )

        params = {"name": "chatty", "arguments": {"steps": 1}, "task": {}}
        task_id = send("tools/call", params)["result"]["task"]["taskId"]

        def result(request_id: int) -> t.Any:
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tasks/result",
                    "params": {"taskId": task_id}}  # fmt: skip
            return http.stream("POST", server.url, headers=headers, json=body)

        def messages(stream: t.Any) -> t.Iterator[dict[str, t.Any]]:
            return (m for line in stream.iter_lines() for m in sse_data(line + "\n"))

        with result(7) as first:
            earlier = messages(first)
            asked = next(m for m in earlier if m.get("method") == "elicitation/create")
            with result(8) as second:  # the client asks again: the first waits no more
                later = messages(second)
                asked = next(m for m in later if m.get("method") == "elicitation/create")
                replaced = list(earlier)
                assert send("tasks/cancel", {"taskId": task_id})["result"]["status"] == "cancelled"
                rest = list(later)  # the question unanswered: its stream ends all the same
        assert replaced[0].get("method") == "notifications/cancelled", replaced
        assert "A later tasks/result" in replaced[-1]["error"]["message"]
        cancel, final = rest[0], rest[-1]
        assert asked["params"]["_meta"][related] == {"taskId": task_id}
        assert cancel.get("method") == "notifications/cancelled", rest  # drop the question
        assert cancel["params"]["requestId"] == asked["id"]
        assert final["id"] == 8 and final["error"]["code"] == -32603
        assert "cancelled" in final["error"]["message"]
        assert final["error"]["data"][related] == {"taskId": task_id}
        again = send("tasks/result", {"taskId": task_id})  # what a later tasks/result answers
        assert again["error"] == final["error"]


@pytest.mark.e2e
def test_2025_task_meta_timestamps_paging_and_cancel_on_a_real_server(serve: t.Any) -> None:
    """2025-11-25 tasks MUSTs and SHOULDs that no other test drives, on gthread (where a
    cancelled handler's thread runs on to its end):

    - ``createdAt`` and ``lastUpdatedAt`` in every task response (create, get, list, cancel);
    - ``tasks/get`` goes by ``params.taskId``, ignoring a related-task ``_meta``; the results
      of ``tasks/get``, ``tasks/list`` and ``tasks/cancel`` carry no related-task ``_meta``;
    - the elicitation a task sends on the ``tasks/result`` stream carries the related task;
    - ``tasks/list`` pages with ``nextCursor`` and lists every task ``tasks/get`` finds;
    - a cancelled task answers ``cancelled`` to ``tasks/cancel`` and stays cancelled after
      its handler, which ignored the cancellation, returned.
    """
    related = "io.modelcontextprotocol/related-task"
    server = serve("tests._apps.task_inputs:app", "gthread", env={"FLASK_MCP_PAGE_SIZE": "2"})
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, server.url, {"elicitation": {}, "tasks": {}})

        def send(method: str, params: dict[str, t.Any]) -> dict[str, t.Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            reply = http.post(server.url, headers=headers, json=body)
            if reply.headers["content-type"].startswith("text/event-stream"):
                return t.cast("dict[str, t.Any]", sse_data(reply.text)[-1])
            return t.cast("dict[str, t.Any]", reply.json())

        def stamped(task: dict[str, t.Any]) -> dict[str, t.Any]:
            assert {"createdAt", "lastUpdatedAt", "ttl"} <= set(task), task
            assert related not in task.get("_meta", {}), task
            return task

        ids = []
        for _ in range(3):
            params = {"name": "stubborn", "arguments": {"seconds": 0}, "task": {}}
            ids.append(stamped(send("tools/call", params)["result"]["task"])["taskId"])
        other = {"taskId": ids[0], "_meta": {related: {"taskId": ids[1]}}}
        assert stamped(send("tasks/get", other)["result"])["taskId"] == ids[0]
        listed, cursor = [], None
        while True:
            page = send("tasks/list", {} if cursor is None else {"cursor": cursor})["result"]
            assert related not in page.get("_meta", {})
            assert len(page["tasks"]) <= 2
            listed += [stamped(task)["taskId"] for task in page["tasks"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert sorted(listed) == sorted(ids)

        params = {"name": "chatty", "arguments": {"steps": 1}, "task": {}}
        task_id = send("tools/call", params)["result"]["task"]["taskId"]
        body = {"jsonrpc": "2.0", "id": 7, "method": "tasks/result", "params": {"taskId": task_id}}
        with http.stream("POST", server.url, headers=headers, json=body) as stream:
            lines = stream.iter_lines()
            asked = next(
                message
                for message in (sse_data(line + "\n") for line in lines)
                if message and message[0].get("method") == "elicitation/create"
            )[0]
            assert asked["params"]["_meta"][related] == {"taskId": task_id}
            answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept",
                      "content": {"yes": True}}}  # fmt: skip
            assert http.post(server.url, headers=headers, json=answer).status_code == 202
            after = (m for line in lines for m in sse_data(line + "\n"))
            final = next(m for m in after if "result" in m)  # after the task's log messages
        assert final["result"]["content"][0]["text"] == "1 steps"
        assert final["result"]["_meta"][related] == {"taskId": task_id}

        params = {"name": "stubborn", "arguments": {"seconds": 1}, "task": {}}
        task_id = send("tools/call", params)["result"]["task"]["taskId"]
        cancelled = send("tasks/cancel", {"taskId": task_id})["result"]
        assert stamped(cancelled)["status"] == "cancelled"
        deadline = time.monotonic() + 30
        while http.get(f"{server.url.rsplit('/', 1)[0]}/finished").json()["stubborn"] < 4:
            assert time.monotonic() < deadline, "the cancelled handler never returned"
            time.sleep(0.05)
        assert send("tasks/get", {"taskId": task_id})["result"]["status"] == "cancelled"


@pytest.mark.e2e
@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
def test_versions_before_tasks_are_told_of_no_tasks(serve: t.Any, version: str) -> None:
    # Tasks came with 2025-11-25: before it params.task is ignored and a "required" tool
    # runs inline, so neither the tasks capability nor execution.taskSupport is advertised.
    server = serve("tests._apps.task_inputs:app", "gevent")
    with httpx.Client(timeout=30) as http:
        headers = {"Accept": "application/json, text/event-stream"}
        response = http.post(server.url, headers=headers, json=initialize_request(version))
        assert response.json()["result"]["protocolVersion"] == version
        assert "tasks" not in response.json()["result"]["capabilities"]
        headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = version
        http.post(
            server.url,
            headers=headers,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        listed = http.post(
            server.url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        )
        tools = listed.json()["result"]["tools"]
        assert tools and all("execution" not in tool for tool in tools), tools
