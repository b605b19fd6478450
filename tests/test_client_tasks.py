"""``flask_mcp.client``: tasks from Python through the official ``mcp`` client, both flavours.

Each test drives a real gunicorn with two gevent workers sharing Redis, so a task runs in
one worker while the other answers some of its polls, with ``mcp`` 2.3.0's ``Client`` in
``legacy`` mode (2025-11-25 experimental tasks) and in ``2026-07-28`` mode (the
``io.modelcontextprotocol/tasks`` extension). The docs' own example
(``docs/tasks.md``, "Tasks from Python") runs against ``examples/tasks.py``.
"""

from __future__ import annotations

import os
import re
import signal
import typing as t
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from harness import GUNICORN_READY_ARGS
from harness import Server
from harness import raised_within
from harness import redis_env
from harness import start_server
from harness import wait_for_workers_ready
from mcp import Client
from mcp import MCPError
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client

from flask_mcp.client import TASKS_EXTENSION
from flask_mcp.client import Task
from flask_mcp.client import TaskCancelled
from flask_mcp.client import TaskError
from flask_mcp.client import TasksExtension
from flask_mcp.client import answer_task
from flask_mcp.client import call_tool_as_task
from flask_mcp.client import cancel_task
from flask_mcp.client import get_task
from flask_mcp.client import list_tasks
from flask_mcp.client import task_result
from flask_mcp.client import wait_for_task

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

DOCS = Path(__file__).resolve().parent.parent / "docs"
MODES = ["legacy", "2026-07-28"]
#: What the elicitation callback answers, by the question's text.
NAMES = {"First name?": "Ada", "Second name?": "Grace", "What is your name?": "Lin"}


def two_workers_on_redis(app_spec: str, redis_url: str) -> t.Iterator[Server]:
    with start_server(
        app_spec, "gevent", workers=2, env=redis_env(redis_url), extra_args=GUNICORN_READY_ARGS
    ) as server:
        wait_for_workers_ready(server, 2)
        yield server


@pytest.fixture(scope="module")
def everything(redis_url: str) -> t.Iterator[Server]:
    """``examples/everything.py``: its task tools (slow, failing, asking, multi-round)."""
    yield from two_workers_on_redis("examples.everything:app", redis_url)


@pytest.fixture(scope="module")
def deployer(redis_url: str) -> t.Iterator[Server]:
    """``examples/tasks.py``, the server of the docs."""
    yield from two_workers_on_redis("examples.tasks:app", redis_url)


class Asked:
    """An elicitation callback that answers (and records) every question."""

    def __init__(self) -> None:
        self.questions: list[str] = []

    async def __call__(self, context: t.Any, params: t.Any) -> types.ElicitResult:
        self.questions.append(params.message)
        name = NAMES.get(params.message, "Ada")
        return types.ElicitResult(action="accept", content={"confirm": True, "name": name})


def client(server: Server, mode: str, asked: Asked | None = None, **options: t.Any) -> Client:
    options.setdefault("extensions", [TasksExtension(timeout=60)])
    return Client(server.url, mode=mode, elicitation_callback=asked or Asked(), **options)


def text(result: types.CallToolResult | None) -> str:
    assert result is not None
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def run(main: t.Callable[[], t.Awaitable[None]]) -> None:
    anyio.run(main)


# -- both flavours ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_docs_example_deploys(deployer: Server, mode: str) -> None:
    """The ``deploy_from_python`` of docs/tasks.md, as printed there: progress, a question
    answered by the client's callback, the result."""
    page = (DOCS / "tasks.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```$", page, re.DOTALL | re.MULTILINE)
    found = [code for code in blocks if "async def deploy_from_python" in code]
    assert found, "docs/tasks.md lost its Python client example"
    namespace: dict[str, t.Any] = {}
    exec(compile(found[0], "docs/tasks.md", "exec"), namespace)
    answer = anyio.run(namespace["deploy_from_python"], deployer.url, mode)
    assert answer == "api: deployed and live"


@pytest.mark.parametrize("mode", MODES)
def test_create_poll_and_read_the_result(everything: Server, mode: str) -> None:
    async def main() -> None:
        async with client(everything, mode) as c:
            task = await call_tool_as_task(c, "slow_compute", {"seconds": 1, "label": "x"}, ttl=60)
            assert task.created and task.status == "working" and len(task.task_id) >= 32
            if mode == "legacy":
                assert task.ttl_ms == 60000  # the client's ttl, in milliseconds
            assert task.poll_interval_ms == 500
            seen = await get_task(c, task.task_id)
            assert seen.task_id == task.task_id and seen.status in ("working", "completed")
            done = await wait_for_task(c, task, timeout=60)
            assert done.terminal and done.status == "completed"
            assert text(done.result) == "Computed x after 1 s"
            assert text(await task_result(c, done.task_id, timeout=60)) == "Computed x after 1 s"

    run(main)


@pytest.mark.parametrize("mode", MODES)
def test_questions_are_answered_by_the_clients_callbacks(everything: Server, mode: str) -> None:
    """2025-11-25: on the tasks/result stream; 2026-07-28: inputRequests, then tasks/update.
    Each question reaches the callback once, however often the task is polled."""
    asked = Asked()

    async def main() -> None:
        async with client(everything, mode, asked) as c:
            task = await call_tool_as_task(c, "confirm_delete", {"filename": "notes.txt"})
            assert text(await task_result(c, task, timeout=60)) == "notes.txt deleted"
            task = await call_tool_as_task(c, "multi_input", {})
            assert text(await task_result(c, task, timeout=60)) == "Got Ada, Grace"

    run(main)
    assert asked.questions.count("Delete notes.txt?") == 1
    assert sorted(asked.questions[1:]) == ["First name?", "Second name?"]


@pytest.mark.parametrize("mode", MODES)
def test_tool_errors_are_results_protocol_errors_raise(everything: Server, mode: str) -> None:
    async def main() -> None:
        async with client(everything, mode) as c:
            failing = await call_tool_as_task(c, "failing_job", {})
            result = await task_result(c, failing, timeout=60)
            assert result.is_error and text(result) == "failing_job failed on purpose"
            broken = await call_tool_as_task(c, "protocol_error_job", {})
            with pytest.raises(MCPError, match="failed with a protocol error on purpose"):
                await task_result(c, broken, timeout=60)
            done = await wait_for_task(c, broken, timeout=60)
            assert done.status == "failed" and done.result is None
            assert done.error is not None and done.error.code == -32603

    run(main)


@pytest.mark.parametrize("mode", MODES)
def test_a_question_the_client_cannot_answer_ends_a_task_as_it_ends_a_call(
    everything: Server, mode: str
) -> None:
    """``ctx.elicit()`` to a client that declared no elicitation ends the same tool alike
    as a plain ``tools/call`` and as a task: at 2025-11-25 an ``isError`` result (that
    spec only forbids sending the question), at 2026-07-28 the error ``-32021`` its
    ``basic/index.mdx`` requires."""

    async def outcome(tasks: bool) -> tuple[str, str]:
        extensions = [TasksExtension(timeout=60)] if tasks else []
        async with Client(everything.url, mode=mode, extensions=extensions) as c:
            arguments = {"filename": "a.txt"}
            try:
                if tasks:
                    task = await call_tool_as_task(c, "confirm_delete", arguments)
                    result = await task_result(c, task, timeout=60)
                else:
                    result = await c.call_tool("confirm_delete", arguments)
            except MCPError as exc:
                return str(exc.code), exc.message
            assert result.is_error, result
            return "isError", text(result)

    async def main() -> None:
        called, tasked = await outcome(tasks=False), await outcome(tasks=True)
        assert called == tasked
        assert called[0] == ("isError" if mode == "legacy" else "-32021"), called
        assert "'elicitation'" in called[1]

    run(main)


@pytest.mark.parametrize("mode", MODES)
def test_a_wait_times_out_and_a_cancel_stops_the_task(everything: Server, mode: str) -> None:
    async def main() -> None:
        async with client(everything, mode) as c:
            task = await call_tool_as_task(c, "slow_compute", {"seconds": 60})
            with pytest.raises(TimeoutError, match=f"Task '{task.task_id}' is not over after"):
                await wait_for_task(c, task, timeout=0.3)
            assert (await get_task(c, task)).status == "working"  # it goes on running
            await cancel_task(c, task)
            done = await wait_for_task(c, task, timeout=60)
            assert done.status == "cancelled" and done.result is None
            with pytest.raises(TaskCancelled, match="was cancelled"):
                await task_result(c, task, timeout=60)

    run(main)


def test_2025_a_task_call_gives_up_after_the_sessions_read_timeout(serve: t.Any) -> None:
    """A frozen server (gthread, SIGSTOP): the task-augmented ``tools/call`` of 2025-11-25,
    sent beside ``send_request``, waits the client's ``read_timeout_seconds`` as every
    other request does, not the transport's five-minute read timeout.

    Once a 2025-11-25 request has timed out, ``mcp`` 2.3.0 POSTs its cancel notification
    in the transport's writer itself, which the frozen server holds: every later request
    waits to be written, and the SDK's read timeout only starts once it is. The helpers
    bound the whole request: the session's read timeout, or their ``read_timeout=``.
    (``--keep-alive 60``: the thawed worker would close, under the next request, the
    connections that were idle while it was frozen.)"""
    server = serve("examples.everything:app", "gthread", extra_args=["--keep-alive", "60"])

    finished: list[bool] = []

    async def main() -> None:
        async with Client(server.url, mode="legacy", read_timeout_seconds=1) as c:
            task = await call_tool_as_task(c, "slow_compute", {"seconds": 0.1})
            assert (await wait_for_task(c, task, timeout=60)).status == "completed"
            os.killpg(server.process.pid, signal.SIGSTOP)
            try:
                with pytest.raises(MCPError, match="timed out"):
                    await call_tool_as_task(c, "slow_compute", {"seconds": 0.1})
                with pytest.raises(MCPError, match="'tasks/list' timed out"):
                    await list_tasks(c, read_timeout=0.5)  # behind the cancel notification
            finally:
                os.killpg(server.process.pid, signal.SIGCONT)
            assert (await get_task(c, task)).status == "completed"  # the session goes on
            finished.append(True)

    outcome = raised_within(lambda: run(main), 60, "a 2025 task call to a frozen server")
    closing_errors = getattr(outcome, "exceptions", None)  # an ExceptionGroup
    if (
        finished
        and closing_errors
        and all(isinstance(e, anyio.BrokenResourceError) for e in closing_errors)
    ):
        # mcp 2.3.0 (upstream): the late answer to a request its caller gave up on, arriving
        # while the client closes, raises BrokenResourceError out of the transport's task
        # group. Every check above has passed by then; anything else still fails the test.
        outcome = None
    assert outcome is None


def test_2025_a_task_that_asks_then_works_outlasts_the_sessions_read_timeout(
    serve: t.Any,
) -> None:
    """At 2025-11-25 ``tasks/result`` is held until the task is over: the wait's
    ``timeout`` bounds it, not the client's per-request ``read_timeout_seconds``, which
    a task that asks (``chatty``) and then works longer would end as a failure."""
    server = serve("tests._apps.task_inputs:app", "gthread")

    async def go(context: t.Any, params: t.Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"yes": True})

    async def main() -> None:
        async with Client(server.url, mode="legacy", elicitation_callback=go,
                          read_timeout_seconds=2) as c:  # fmt: skip
            task = await call_tool_as_task(c, "chatty", {"steps": 80})  # 4 s after it asks
            assert text(await task_result(c, task, timeout=120)) == "80 steps"

    run(main)


# -- one flavour -------------------------------------------------------------------------


def test_2025_list_and_what_only_2026_does(everything: Server) -> None:
    async def main() -> None:
        async with client(everything, "legacy") as c:
            first = await call_tool_as_task(c, "slow_compute", {"seconds": 0.1})
            second = await call_tool_as_task(c, "slow_compute", {"seconds": 0.1})
            page = await list_tasks(c)
            assert {first.task_id, second.task_id} <= {task.task_id for task in page.tasks}
            with pytest.raises(TaskError, match="questions arrive on the tasks/result stream"):
                await answer_task(c, first, {})
            with pytest.raises(MCPError) as refused:  # taskSupport "forbidden": -32601
                await call_tool_as_task(c, "test_simple_text", {})
            assert refused.value.code == -32601
            await wait_for_task(c, first, timeout=60)
            with pytest.raises(MCPError) as over:  # a 2025 task that is over: -32602
                await cancel_task(c, first)
            assert over.value.code == -32602

    run(main)


def test_2026_multi_round_then_task_and_call_tool_resolves_tasks(everything: Server) -> None:
    asked = Asked()

    async def main() -> None:
        async with client(everything, "2026-07-28", asked) as c:
            # prepare= asks before the task exists (MRTR); the task then runs
            task = await call_tool_as_task(c, "test_tool_with_task", {})
            assert task.created
            assert text(await task_result(c, task, timeout=60)) == "Hello, Lin! (from a task)"
            # TasksExtension: a plain call_tool waits for the task and returns its result
            result = await c.call_tool("confirm_delete", {"filename": "a.txt"})
            assert text(result) == "a.txt deleted"
            with pytest.raises(TaskError, match="cannot be listed"):
                await list_tasks(c)

    run(main)
    assert asked.questions == ["What is your name?", "Delete a.txt?"]


def test_2026_call_tool_cancels_a_task_it_stops_waiting_for(everything: Server) -> None:
    """``TasksExtension(timeout=...)``: the call raises, and the task it started is
    cancelled on the server (no one holds its id to wait for it)."""

    async def main() -> None:
        extension = TasksExtension(timeout=0.5)
        async with client(everything, "2026-07-28", extensions=[extension]) as c:
            with pytest.raises(TimeoutError, match="it was cancelled") as late:
                await c.call_tool("slow_compute", {"seconds": 60})
            task_id = re.search(r"Task '([^']+)' of tool 'slow_compute'", str(late.value))
            assert task_id, late.value
            done = await wait_for_task(c, task_id[1], timeout=30)
            assert done.status == "cancelled"

    run(main)


def test_2026_call_tool_cancels_a_task_whose_wait_failed(everything: Server) -> None:
    """A question the client's callback refuses ends ``call_tool()`` with ``MCPError``:
    the task it started is cancelled too, not left in ``input_required`` until its TTL
    with an id the caller never saw."""
    asked: list[str] = []

    async def refuse(context: t.Any, params: t.Any) -> types.ErrorData:
        return types.ErrorData(code=-32603, message="the dialog was closed")

    async def record(request: httpx2.Request) -> None:
        if request.headers.get("mcp-method") == "tasks/get":
            asked.append(request.headers["mcp-name"])

    async def main() -> None:
        http = httpx2.AsyncClient(event_hooks={"request": [record]}, timeout=30)
        transport = streamable_http_client(everything.url, http_client=http)
        extension = TasksExtension(timeout=30)
        async with http, Client(transport, mode="2026-07-28", extensions=[extension],
                                elicitation_callback=refuse) as c:  # fmt: skip
            with pytest.raises(MCPError, match="the dialog was closed"):
                await c.call_tool("confirm_delete", {"filename": "a.txt"})
            assert asked, "call_tool() never polled its task"
            done = await get_task(c, asked[0])
            with anyio.move_on_after(10):  # cancelling is cooperative: it may take a poll
                while not done.terminal:
                    await anyio.sleep(0.05)
                    done = await get_task(c, asked[0])
            assert done.status == "cancelled"

    run(main)


def test_2026_without_the_extension_says_how_to_declare_it(everything: Server) -> None:
    async def main() -> None:
        async with client(everything, "2026-07-28", extensions=[]) as c:
            with pytest.raises(MCPError) as refused:  # a "required" task tool
                await call_tool_as_task(c, "failing_job", {})
            assert refused.value.code == -32021
            assert "Client(url, extensions=[TasksExtension()])" in refused.value.message

    run(main)


def test_2026_on_a_bare_client_session(everything: Server) -> None:
    """``ClientSession(read, write, **TasksExtension().session_options())``."""
    options = TasksExtension(timeout=60).session_options()
    assert list(options["extensions"]) == [TASKS_EXTENSION]

    async def main() -> None:
        async with (
            streamable_http_client(everything.url) as (read, write),
            ClientSession(read, write, elicitation_callback=Asked(), **options) as session,
        ):
            await session.discover()
            task = await call_tool_as_task(session, "slow_compute", {"seconds": 0.1})
            assert task.created
            result = await task_result(session, task, timeout=60)
            assert text(result) == "Computed result after 0.1 s"
            claimed = await session.call_tool("slow_compute", {"seconds": 0.1}, allow_claimed=True)
            assert getattr(claimed, "result_type", None) == "task"  # the claimed shape

    run(main)


def test_2026_a_call_answered_at_once_is_a_finished_task(serve: t.Any) -> None:
    """With ``MCP_TASK_IMMEDIATE_MS`` a task over in time is answered as a plain call: the
    helpers take that answer as a terminal task that was never created."""
    server = serve("examples.everything:app", env={"FLASK_MCP_TASK_IMMEDIATE_MS": "5000"})

    async def main() -> None:
        async with client(server, "2026-07-28") as c:
            task = await call_tool_as_task(c, "slow_compute", {"seconds": 0.1})
            assert not task.created and task.terminal and task.task_id == ""
            assert text(task.result) == "Computed result after 0.1 s"
            assert await get_task(c, task) is task  # nothing to ask the server
            assert await cancel_task(c, task) is task
            with pytest.raises(TaskError, match="answered the call at once"):
                await answer_task(c, task, {})  # it has no questions, nor an id to send
            assert text(await task_result(c, task, timeout=5)) == "Computed result after 0.1 s"

    run(main)


@pytest.mark.parametrize(
    ("version", "status"), [("2025-11-25", "failed"), ("2026-07-28", "completed")]
)
def test_a_tool_error_answered_at_once_has_its_eras_status(
    monkeypatch: pytest.MonkeyPatch, version: str, status: str
) -> None:
    """A server may answer a task call with a plain ``CallToolResult``: an ``isError`` one
    is the task's end as that era states it, ``failed`` at 2025-11-25 (its tasks page:
    a tool result with ``isError`` is ``failed``), ``completed`` at 2026-07-28 (the tasks
    extension keeps ``failed`` for JSON-RPC errors)."""
    from flask_mcp.client import tasks as module

    plain = {"content": [{"type": "text", "text": "no such file"}], "isError": True}

    async def answer(session: t.Any, *args: t.Any) -> dict[str, t.Any]:
        return plain

    monkeypatch.setattr(module, "send_unvalidated", answer)  # the 2025-11-25 task call
    monkeypatch.setattr(module, "send", answer)  # the 2026-07-28 one
    capabilities = types.ServerCapabilities.model_validate(
        {"tasks": {"requests": {"tools": {"call": {}}}}}
    )
    fields = {"protocol_version": version, "server_capabilities": capabilities}
    session = t.cast(ClientSession, type("S", (), fields)())

    async def main() -> None:
        task = await call_tool_as_task(session, "delete", {"filename": "a.txt"})
        assert (task.status, task.created, task.terminal) == (status, False, True)
        result = await task_result(session, task, timeout=5)
        assert result.is_error and text(result) == "no such file"

    run(main)


def test_a_session_that_is_not_connected() -> None:
    send, receive = anyio.create_memory_object_stream[t.Any](1)
    session = ClientSession(receive, send)

    async def main() -> None:
        with pytest.raises(TaskError, match="The session is not connected"):
            await get_task(session, "some-task")

    try:
        run(main)
    finally:
        send.close()
        receive.close()


def test_the_task_shape_is_one_for_both_wires() -> None:
    from flask_mcp.client.task import from_2025
    from flask_mcp.client.task import from_2026

    common = {"taskId": "t1", "createdAt": "a", "lastUpdatedAt": "b"}
    old = from_2025({**common, "status": "working", "ttl": 1000, "pollInterval": 200})
    new = from_2026(
        {
            **common,
            "status": "completed",
            "ttlMs": 1000,
            "pollIntervalMs": 200,
            "result": {"content": [{"type": "text", "text": "ok"}]},
        }
    )
    assert (old.ttl_ms, old.poll_interval_ms, old.terminal) == (1000, 200, False)
    assert (new.ttl_ms, new.poll_interval_ms, new.terminal) == (1000, 200, True)
    assert text(new.result) == "ok" and isinstance(new, Task)


def test_polls_no_more_often_than_the_server_suggests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks extension: clients SHOULD respect ``pollIntervalMs``, even a long one (a
    server MAY rate-limit faster polling); only a missing or tiny one is bounded."""
    from flask_mcp.client import tasks as module

    slept: list[float] = []
    done = Task("t1", "completed", result=types.CallToolResult(content=[]))
    states = iter([Task("t1", "working", poll_interval_ms=30_000), done])

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def get(session: t.Any, task: t.Any) -> Task:
        return next(states)

    monkeypatch.setattr(module.anyio, "sleep", sleep)
    monkeypatch.setattr(module, "get_task", get)
    session = t.cast(ClientSession, type("S", (), {"protocol_version": "2026-07-28"})())
    start = Task("t1", "working", poll_interval_ms=60_000)

    async def main() -> None:
        assert await module._wait(session, start) is done

    run(main)
    assert slept == [60.0, 30.0]  # the interval each tasks/get suggested, in turn


@pytest.mark.parametrize(
    ("refusal", "hint"),
    [("Elicitation not supported", True), ("The user declined to answer", False)],
)
def test_a_refused_input_request_names_the_callback_only_when_there_is_none(
    refusal: str, hint: bool
) -> None:
    """The SDK answers "... not supported" for a kind the client has no callback for:
    that error says to give one; a callback's own refusal is passed on as it is."""
    from flask_mcp.client.wire import answer_inputs

    class Session:
        async def dispatch_input_request(self, context: t.Any, request: t.Any) -> t.Any:
            return types.ErrorData(code=-32600, message=refusal)

    request = {
        "method": "elicitation/create",
        "params": {
            "message": "Name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    }
    with pytest.raises(MCPError) as info:
        anyio.run(answer_inputs, t.cast(t.Any, Session()), {"ask": request})
    assert refusal in str(info.value)
    assert ("callback" in str(info.value)) is hint
