"""MCPTestClient and tasks: both flavours (2025-11-25 ``params.task``, the 2026-07-28 tasks
extension), one set of methods: call as a task, get, wait, result, answer, cancel, list.

The tasks run on the in-process executor of an app served by Flask's test client, on
the memory backend and on Redis.
"""

from __future__ import annotations

import threading
import time
import typing as t

import pytest
from flask import Flask
from wire import make_app

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import ToolError
from flask_mcp import protocol
from flask_mcp.testing import MCPTestClient
from flask_mcp.testing import TaskCancelled
from flask_mcp.testing import TaskError

ERAS = ["2025-11-25", "2026-07-28"]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
EXT = {"io.modelcontextprotocol/tasks": {}}


def build(**config: t.Any) -> tuple[Flask, threading.Event]:
    mcp = MCP(name="tasks", version="1")
    stopped = threading.Event()

    @mcp.tool(task="optional")
    def work(ctx: Context, seconds: float = 0.0) -> str:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if ctx.cancelled:
                stopped.set()
                return "stopped"
            time.sleep(0.01)
        return f"worked {seconds:g}"

    @mcp.tool(task="optional")
    def refuse(ctx: Context) -> str:
        raise ToolError("tool failure")

    @mcp.tool(task="optional")
    def broken(ctx: Context) -> str:
        raise MCPError(-32603, "protocol failure")

    @mcp.tool(task="optional")
    def ask(ctx: Context) -> str:
        answer = ctx.elicit("Sure?", SCHEMA)
        return f"ok={answer['content']['ok']}"

    @mcp.tool()
    def plain() -> str:
        return "plain"

    return make_app(mcp, **config), stopped


def accept(params: dict[str, t.Any]) -> dict[str, t.Any]:
    return {"action": "accept", "content": {"ok": True}}


@pytest.mark.parametrize("version", ERAS)
def test_a_task_from_creation_to_result(version: str, backend_config: dict[str, t.Any]) -> None:
    app, _ = build(**backend_config)
    with MCPTestClient(app, protocol_version=version) as client:
        task = client.call_tool_as_task("work", {"seconds": 0.05})
        assert task["taskId"] and task["status"] == "working"
        assert "resultType" not in task and "_meta" not in task
        result = client.task_result(task)
        assert result["content"][0]["text"] == "worked 0.05"
        done = client.wait_for_task(task["taskId"])
        assert done["status"] == "completed" and done["result"] == result
        assert client.get_task(task)["status"] == "completed"


@pytest.mark.parametrize("version", ERAS)
def test_a_tool_error_is_a_result_and_a_protocol_error_raises(version: str) -> None:
    app, _ = build()
    with MCPTestClient(app, protocol_version=version) as client:
        failed_tool = client.task_result(client.call_tool_as_task("refuse"))
        assert failed_tool["isError"] is True
        assert failed_tool["content"][0]["text"] == "tool failure"
        broken = client.call_tool_as_task("broken")
        with pytest.raises(MCPError, match="protocol failure") as caught:
            client.task_result(broken)
        assert caught.value.code == -32603
        failed = client.wait_for_task(broken)
        assert failed["status"] == "failed" and failed["error"]["code"] == -32603


@pytest.mark.parametrize("version", ERAS)
def test_the_task_questions_are_answered_by_the_handlers(version: str) -> None:
    """2026-07-28: inputRequests by tasks/update; 2025-11-25: on the tasks/result stream."""
    app, _ = build()
    with MCPTestClient(app, protocol_version=version, elicitation=accept) as client:
        task = client.call_tool_as_task("ask")
        assert client.task_result(task)["content"][0]["text"] == "ok=True"


@pytest.mark.parametrize("version", ERAS)
def test_cancel_a_task(version: str) -> None:
    app, stopped = build()
    with MCPTestClient(app, protocol_version=version) as client:
        task = client.call_tool_as_task("work", {"seconds": 30})
        cancelled = client.cancel_task(task)
        assert cancelled["taskId"] == task["taskId"]
        assert cancelled["status"] == "cancelled"
        with pytest.raises(TaskCancelled) as caught:
            client.task_result(task)
        assert caught.value.task["status"] == "cancelled"
        assert stopped.wait(10)  # the handler saw ctx.cancelled


def test_2025_tasks_are_listed_and_take_a_ttl() -> None:
    app, _ = build()
    with MCPTestClient(app, protocol_version="2025-11-25") as client:
        first = client.call_tool_as_task("work", ttl=60)
        assert first["ttl"] == 60_000
        second = client.call_tool_as_task("work")
        listed = {task["taskId"] for task in client.list_tasks()}
        assert listed == {first["taskId"], second["taskId"]}
        with pytest.raises(TaskError, match="tasks/result stream"):
            client.answer_task(first, {})
    with MCPTestClient(app, protocol_version="2025-11-25") as other:
        assert other.list_tasks() == []  # a task belongs to its session


def test_2025_a_tool_that_does_not_run_as_a_task_is_refused() -> None:
    app, _ = build()
    with MCPTestClient(app, protocol_version="2025-11-25") as client:
        with pytest.raises(MCPError, match="does not support tasks") as caught:
            client.call_tool_as_task("plain")
        assert caught.value.code == -32601


def test_2026_tasks_requests_carry_mcp_name() -> None:
    """tasks/get sent through request() passes the server's Mcp-Name check."""
    app, _ = build()
    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        task = client.call_tool_as_task("work")
        declared = {protocol.META_CLIENT_CAPABILITIES: {"extensions": EXT}}
        got = client.request("tasks/get", {"taskId": task["taskId"], "_meta": declared})
        assert got["taskId"] == task["taskId"] and got["resultType"] == "complete"
        with pytest.raises(TaskError, match="cannot be listed"):
            client.list_tasks()


def test_2026_manual_answers_with_answer_task() -> None:
    """The handler declares elicitation; the test answers the task's question itself."""
    app, _ = build()
    with MCPTestClient(app, protocol_version="2026-07-28", elicitation=accept) as client:
        task = client.call_tool_as_task("ask")
        current = client.get_task(task)
        for _ in range(1000):
            if current["status"] == "input_required":
                break
            time.sleep(0.01)
            current = client.get_task(task)
        ((key, request),) = current["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        client.answer_task(task, {key: {"action": "accept", "content": {"ok": False}}})
        assert client.task_result(task)["content"][0]["text"] == "ok=False"


def test_a_call_answered_at_once_is_a_finished_task() -> None:
    """Its status is the one its era gives a task that ended so, as flask_mcp.client has it.

    2026-07-28 (the tasks extension): a tool error (``isError``) is ``completed``.
    2025-11-25 (a server without the ``tasks`` capability ignores ``params.task``): a
    tool error is ``failed`` (it was ``completed``).
    """
    app, _ = build(MCP_TASK_IMMEDIATE_MS=5000)
    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        task = client.call_tool_as_task("work")
        assert task["taskId"] == "" and task["status"] == "completed"
        assert client.get_task(task) == task
        assert client.task_result(task)["content"][0]["text"] == "worked 0"
        task = client.call_tool_as_task("refuse")
        assert task["taskId"] == "" and task["status"] == "completed", task
        assert client.task_result(task)["isError"] is True
    mcp = MCP(name="no-tasks", version="1")

    @mcp.tool()
    def refuse() -> str:
        raise ToolError("tool failure")

    with MCPTestClient(make_app(mcp), protocol_version="2025-11-25") as client:
        task = client.call_tool_as_task("refuse")
        assert task["taskId"] == "" and task["status"] == "failed", task
        assert client.task_result(task)["content"][0]["text"] == "tool failure"


@pytest.mark.parametrize("version", ERAS)
def test_waiting_gives_up_and_the_task_goes_on(version: str) -> None:
    """2025-11-25 waits on ``tasks/result``, whose answer is one JSON response: the wait
    is bounded all the same."""
    app, _ = build()
    with MCPTestClient(app, protocol_version=version) as client:
        task = client.call_tool_as_task("work", {"seconds": 10})
        with pytest.raises(TimeoutError, match="goes on running"):
            client.wait_for_task(task, timeout=0.05)
        assert client.get_task(task)["status"] == "working"
        client.cancel_task(task)
