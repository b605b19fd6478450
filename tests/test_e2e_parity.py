"""One handler, one behaviour: a call and a task, over stdio and streamable HTTP.

The official ``mcp`` client drives ``tests._apps.parity`` under ``flask mcp stdio`` and on
gunicorn, and compares what it sees of the same tool called plainly and as a task.
"""

from __future__ import annotations

import pathlib
import sys
import typing as t

import anyio
import mcp_types as types
import pytest
from harness import flask_mcp_stdio
from mcp import Client
from mcp import MCPError

from flask_mcp.client import TasksExtension
from flask_mcp.client import call_tool_as_task
from flask_mcp.client import task_result
from flask_mcp.client import wait_for_task

pytestmark = pytest.mark.e2e

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLASK = str(pathlib.Path(sys.executable).parent / "flask")
RELATED = "io.modelcontextprotocol/related-task"
APP = "tests._apps.parity"


@pytest.fixture(params=["stdio", "gevent", "gthread"])
def target(request: pytest.FixtureRequest, serve: t.Any) -> t.Any:
    """Where the client connects: ``flask mcp stdio`` (``flask_mcp`` imported from this
    checkout, not from wherever the ``flask`` command's entry point finds it), or a
    gunicorn server."""
    if request.param == "stdio":
        return flask_mcp_stdio(APP)
    return serve(f"{APP}:app", request.param).url


def test_a_2025_task_logs_as_its_call_does(target: t.Any) -> None:
    """A 2025-11-25 task dropped every ``ctx.log()``, where the same tool called plainly
    sent its messages. They come on the ``tasks/result`` stream now, filtered by the
    session's ``logging/setLevel`` as a call's are, each with the related task, before
    the result."""
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def main() -> tuple[list[t.Any], list[t.Any], str]:
        async with Client(
            target,
            mode="legacy",
            logging_callback=on_log,
            extensions=[TasksExtension()],
            read_timeout_seconds=30,
        ) as client:
            await client.set_logging_level("warning")
            await client.call_tool("logs", {})
            from_call = list(logs)
            logs.clear()
            task = await call_tool_as_task(client, "logs", {})
            result = await task_result(client, task, timeout=20)
            assert result.content[0].text == "logged"  # type: ignore[union-attr]
        return from_call, list(logs), task.task_id  # the client handled every message

    from_call, from_task, task_id = anyio.run(main)
    levels = ["warning", "error", "critical", "alert", "emergency"]
    assert [(p.level, p.logger, p.data) for p in from_call] == [
        (level, "parity", f"at {level}") for level in levels
    ]
    assert [(p.level, p.logger, p.data) for p in from_task] == [
        (p.level, p.logger, p.data) for p in from_call
    ]
    assert all(p.meta is not None and p.meta[RELATED] == {"taskId": task_id} for p in from_task)


def test_a_task_result_is_its_call_result(target: t.Any) -> None:
    """A task's result was read back from the backend with orjson, which turns an integer
    beyond 64 bits into a float: ``2**70 + 1`` came back as ``1180591620717411303424.0``
    from a task, exact from the call. A task's result is now the call's, to the digit,
    in both eras (at 2026-07-28 the server makes both calls tasks).

    A middleware's ``ToolError`` after ``call_next`` made the task is the call's
    ``isError`` result too. At 2025-11-25 it was that plain result, though the server had
    accepted the task-augmented request (which MUST be answered with a
    ``CreateTaskResult``) and the task ran on unseen: the task now fails with it, and
    its run is stopped. At 2026-07-28 the server may answer at once: it does.

    One raised before ``call_next`` on a plain call of a ``required`` tool was that
    ``isError`` result at 2025-11-25, where the spec says the server MUST answer -32601
    (as it did for arguments that failed validation): the task mode is checked first
    now. At 2026-07-28 the server can answer without a task, so it does (no -32021)."""
    arguments = {"n": 2**70 + 1, "text": "h\u00e9 \U0001f600 \x00 \u2028 end"}

    async def main(mode: str) -> list[t.Any]:
        async with Client(
            target, mode=mode, extensions=[TasksExtension()], read_timeout_seconds=30
        ) as client:
            called = await client.call_tool("same", arguments)
            task = await call_tool_as_task(client, "same", arguments)
            vetoed = await call_tool_as_task(client, "vetoed", {})
            try:
                before: t.Any = await client.call_tool("vetoed_before", {})
            except MCPError as exc:
                before = exc.code
            return [
                called,
                await task_result(client, task, timeout=20),
                vetoed,
                await wait_for_task(client, vetoed, timeout=20),
                before,
            ]

    for mode in ("legacy", "2026-07-28"):
        called, result, vetoed, ended, before = anyio.run(main, mode)
        assert called.structured_content == arguments, mode
        assert result.structured_content == arguments, mode
        assert result.content == called.content, mode
        assert vetoed.created is (mode == "legacy"), (mode, vetoed)
        assert ended.status == ("failed" if mode == "legacy" else "completed"), (mode, ended)
        assert ended.result is not None and ended.result.is_error, (mode, ended)
        assert ended.result.content[0].text == "vetoed after the call", (mode, ended)  # type: ignore[union-attr]
        if mode == "legacy":
            assert before == -32601, before
        else:
            assert before.is_error and before.content[0].text == "vetoed before the call", before
