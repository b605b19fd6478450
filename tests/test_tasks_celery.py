"""Tasks on a real Celery worker (``Flask-MCP[celery]``), on the Redis broker.

The web server (gunicorn, gevent) and a Celery worker (``-P threads``) both import
``examples.tasks_celery``; the task's record, its progress, its input requests and its
outcome go through Redis. Killing the web worker (SIGKILL) does not touch the task:
it completes on the Celery worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest

pytest.importorskip("celery")

from celery import Celery
from flask import Flask
from harness import redis_client
from tasks_wire import TERMINAL
from tasks_wire import post_2026
from tasks_wire import wait_task
from wire import make_app

from flask_mcp import MCP
from flask_mcp import Extension
from flask_mcp import ToolError
from flask_mcp.contrib.celery import CeleryExecutor
from flask_mcp.runtime.tasks import RELATED_TASK
from flask_mcp.server.call import ToolCall
from flask_mcp.server.call import ToolCallNext
from flask_mcp.testing import MCPTestClient

ISSUER = "https://issuer.example"
#: What a task record holds about who runs it (shown when a test about leases fails).
LEASE_FIELDS = ("status", "lease", "worker", "executor", "statusMessage")
ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def celery_worker(
    env: dict[str, str], log: Path, module: str = "examples.tasks_celery"
) -> t.Iterator[subprocess.Popen[bytes]]:
    """A Celery worker on ``module`` (its ``celery`` app) until the block ends."""
    argv = [sys.executable, "-m", "celery", "-A", f"{module}:celery", "worker",
            "-P", "threads", "-c", "4", "--loglevel", "INFO", "--without-mingle",
            "--without-gossip"]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv, cwd=ROOT, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while b"ready." not in log.read_bytes():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def gunicorn_workers(master: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True
    )
    return [int(pid) for pid in out.stdout.split()]


@pytest.mark.e2e
def test_celery_task_survives_sigkill_of_the_web_worker(
    serve: t.Any, redis_url: str, tmp_path: Path
) -> None:
    env = {"FLASK_MCP_BACKEND": redis_url, "CELERY_BROKER_URL": redis_url,
           "FLASK_MCP_TASK_LEASE": "3"}  # fmt: skip
    server = serve("examples.tasks_celery:app", "gevent", env=env)
    with celery_worker(env, tmp_path / "celery.log") as worker:
        created = post_2026(
            server.url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 4}}
        )
        task_id = created["result"]["taskId"]
        assert created["result"]["resultType"] == "task"
        running = wait_task(server.url, task_id, lambda task: "statusMessage" in task)
        assert running["status"] == "working"
        web_workers = gunicorn_workers(server.process.pid)
        assert web_workers
        for pid in web_workers:
            os.kill(pid, signal.SIGKILL)
        done = wait_task(server.url, task_id, lambda task: task["status"] in TERMINAL, 60)
        assert done["status"] == "completed", done
        text = done["result"]["content"][0]["text"]
        assert text.endswith(f"in process {worker.pid}"), text  # the Celery worker ran it


@pytest.mark.e2e
def test_sigkill_of_the_celery_worker_running_a_task_fails_it_saying_so(
    serve: t.Any, redis_url: str, tmp_path: Path
) -> None:
    """The Celery worker dies mid-task: its lease runs out and the task fails, with an
    error about the Celery worker; it said to "run tasks on Celery", which they were."""
    env = {"FLASK_MCP_BACKEND": redis_url, "CELERY_BROKER_URL": redis_url,
           "FLASK_MCP_TASK_LEASE": "3"}  # fmt: skip
    server = serve("examples.tasks_celery:app", "gevent", workers=2, env=env)
    with celery_worker(env, tmp_path / "celery.log") as worker:
        created = post_2026(
            server.url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}}
        )
        task_id = created["result"]["taskId"]
        wait_task(server.url, task_id, lambda task: "statusMessage" in task)
        os.killpg(worker.pid, signal.SIGKILL)
        try:
            done = wait_task(server.url, task_id, lambda task: task["status"] in TERMINAL, 30)
        except AssertionError as exc:  # say what the record holds and what the worker said
            kept = redis_client(redis_url).get(f"mcp:{{{task_id}}}:task")
            fields = {k: v for k, v in json.loads(kept or "{}").items() if k in LEASE_FIELDS}
            log = (tmp_path / "celery.log").read_text(errors="replace")[-4000:]
            raise AssertionError(f"{exc}\nrecord: {fields}\nCelery worker log:\n{log}") from None
    assert done["status"] == "failed", done
    message = done["error"]["message"]
    assert "Celery worker running this task stopped" in message, message
    assert "Run tasks on Celery" not in message, message


@pytest.mark.e2e
def test_celery_task_asks_for_input_through_the_backend(
    serve: t.Any, redis_url: str, tmp_path: Path
) -> None:
    env = {"FLASK_MCP_BACKEND": redis_url, "CELERY_BROKER_URL": redis_url}
    server = serve("examples.tasks_celery:app", "gevent", env=env)
    with celery_worker(env, tmp_path / "celery.log"):
        created = post_2026(server.url, "tools/call", {"name": "confirm_delete", "arguments": {}})
        task_id = created["result"]["taskId"]
        asking = wait_task(server.url, task_id, lambda task: task["status"] == "input_required")
        ((key, request),) = asking["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        answer = {key: {"action": "accept", "content": {"confirm": True}}}
        post_2026(server.url, "tasks/update", {"taskId": task_id, "inputResponses": answer})
        done = wait_task(server.url, task_id, lambda task: task["status"] in TERMINAL)
        assert done["result"]["content"][0]["text"] == "file.txt deleted"
        cancel_me = post_2026(
            server.url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}}
        )["result"]["taskId"]
        wait_task(server.url, cancel_me, lambda task: "statusMessage" in task)
        post_2026(server.url, "tasks/cancel", {"taskId": cancel_me})
        assert wait_task(server.url, cancel_me, lambda t_: t_["status"] in TERMINAL)["status"] == (
            "cancelled"
        )


@pytest.mark.e2e
def test_celery_task_runs_under_the_callers_auth(
    serve: t.Any, redis_url: str, tmp_path: Path
) -> None:
    """A scoped task tool runs on the worker with the caller's AuthInfo (issue 32)."""
    env = {"FLASK_MCP_BACKEND": redis_url, "CELERY_BROKER_URL": redis_url}
    server = serve("tests._apps.celery_auth:app", "gevent", env=env)
    worker_env = {**env, "PYTHONPATH": str(ROOT / "tests")}
    with celery_worker(worker_env, tmp_path / "celery.log", "tests._apps.celery_auth") as worker:
        outcomes = {}
        for token, arguments in (
            ("alice-run", {}),
            ("alice-admin", {"purge": True}),
            ("alice-run", {"purge": True}),
        ):
            created = post_2026(
                server.url, "tools/call", {"name": "report", "arguments": arguments}, token
            )
            task_id = created["result"]["taskId"]
            done = wait_task(
                server.url, task_id, lambda task: task["status"] in TERMINAL, 60, token
            )
            outcomes[(token, bool(arguments))] = done
        ran = outcomes[("alice-run", False)]
        assert ran["status"] == "completed", ran
        text = ran["result"]["content"][0]["text"]
        assert text == f"{ISSUER}|alice jobs:run in process {worker.pid}", text
        admin = outcomes[("alice-admin", True)]
        assert admin["status"] == "completed", admin
        assert admin["result"]["content"][0]["text"].startswith(
            f"{ISSUER}|alice jobs:admin jobs:run"
        )
        refused = outcomes[("alice-run", True)]  # the step-up is refused under the grant
        assert refused["status"] == "failed", refused
        assert "jobs:admin" in refused["error"]["message"], refused


@pytest.mark.e2e
def test_celery_task_past_mcp_task_timeout_fails(
    serve: t.Any, redis_url: str, tmp_path: Path
) -> None:
    """``MCP_TASK_TIMEOUT`` ends a task on a Celery worker as in the web worker.

    The worker serves no HTTP request, so nothing had started the app's supervisor
    there, which is what times runs out: the task ran to its end.
    """
    env = {"FLASK_MCP_BACKEND": redis_url, "CELERY_BROKER_URL": redis_url,
           "FLASK_MCP_TASK_TIMEOUT": "1"}  # fmt: skip
    server = serve("examples.tasks_celery:app", "gevent", env=env)
    with celery_worker(env, tmp_path / "celery.log"):
        created = post_2026(
            server.url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 8}}
        )
        task_id = created["result"]["taskId"]
        done = wait_task(server.url, task_id, lambda task: task["status"] in TERMINAL, 30)
        assert done["status"] == "failed", done
        assert "MCP_TASK_TIMEOUT (1 s)" in done["error"]["message"], done
        assert "statusMessage" in done


class _Stamp(Extension):
    """Refuses ``x=13`` and stamps every other result, around each tool run."""

    id = "com.example/stamp"

    def intercept_tool_call(self, tool_call: ToolCall, call_next: ToolCallNext) -> dict[str, t.Any]:
        if tool_call.arguments.get("x") == 13:
            raise ToolError("13 is refused")
        result = dict(call_next(tool_call))
        result["_meta"] = {**(result.get("_meta") or {}), "stamped": True}
        return result


def _stamped_app(on_celery: bool) -> Flask:
    executor = None
    if on_celery:
        eager = Celery("eager", broker="memory://")
        eager.conf.task_always_eager = True  # the worker's code, in this process
        executor = CeleryExecutor(eager)
    mcp = MCP(name="stamped", version="1", task_executor=executor)
    mcp.add_extension(_Stamp())

    @mcp.tool(task="optional")
    def double(x: int) -> int:
        return 2 * x

    return make_app(mcp)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_celery_task_runs_the_extensions_interceptors_as_in_process(version: str) -> None:
    """The interceptors of extensions added after Tasks wrap a task's run on Celery too.

    The run rebuilt on the worker called the tool directly: the result was not stamped
    and the refused call completed.
    """
    outcomes = []
    for on_celery in (False, True):
        with MCPTestClient(_stamped_app(on_celery), protocol_version=version) as client:
            done = [client.wait_for_task(client.call_tool_as_task("double", {"x": x}))
                    for x in (2, 13)]  # fmt: skip
        for task in done:
            task.pop("taskId")
            for key in ("createdAt", "lastUpdatedAt"):
                task.pop(key)
            task.get("result", {}).get("_meta", {}).pop(RELATED_TASK, None)
        outcomes.append(done)
    assert outcomes[1] == outcomes[0]
    stamped, refused = outcomes[1]
    assert stamped["result"]["_meta"]["stamped"] is True, stamped
    assert refused["result"]["isError"] is True, refused


def test_a_celery_task_runs_on_the_app_of_the_factory_that_created_it() -> None:
    """One server on two apps of a factory (each its own backend): a task of the first app
    was queued for no server (the second app had replaced it) and stayed ``working``."""
    eager = Celery("eager", broker="memory://")
    eager.conf.task_always_eager = True  # the worker's code, in this process
    mcp = MCP(name="factory", version="1", task_executor=CeleryExecutor(eager))

    @mcp.tool(task="optional")
    def double(x: int) -> int:
        return 2 * x

    first, second = make_app(mcp), make_app(mcp)
    for app, x in ((first, 2), (second, 5), (first, 7)):
        with MCPTestClient(app, protocol_version="2026-07-28") as client:
            task = client.get_task(client.call_tool_as_task("double", {"x": x}))
            assert task["status"] == "completed", task
            assert task["result"]["structuredContent"] == {"result": 2 * x}


def test_two_servers_on_celery_each_run_their_tasks() -> None:
    """Two servers in one process, each with its ``CeleryExecutor`` (on one Celery app, or
    on two): Celery kept the first executor's task under ``flask_mcp.run_task`` for every
    app (a shared task), so the second server's tasks reached the first executor, which
    serves no such server, and stayed ``working``."""
    one = Celery("one", broker="memory://")
    two = Celery("two", broker="memory://")
    for celery in (one, two):
        celery.conf.task_always_eager = True  # the worker's code, in this process
    for name, celery in (("first", one), ("second", one), ("third", two)):
        mcp = MCP(name=name, version="1", task_executor=CeleryExecutor(celery))

        @mcp.tool(task="optional")
        def double(x: int) -> int:
            return 2 * x

        with MCPTestClient(make_app(mcp), protocol_version="2026-07-28") as client:
            task = client.get_task(client.call_tool_as_task("double", {"x": 4}))
        assert task["status"] == "completed", (name, task)
        assert task["result"]["structuredContent"] == {"result": 8}


def test_a_queued_task_whose_record_is_gone_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A Celery worker that finds no record for a queued task (it expired while queued, or
    the worker reads another ``MCP_BACKEND`` or prefix than the web workers) says so:
    it returned without a word, and the misconfiguration left no trace."""
    eager = Celery("eager", broker="memory://")
    eager.conf.task_always_eager = True
    executor = CeleryExecutor(eager)
    mcp = MCP(name="gone", version="1", task_executor=executor)
    make_app(mcp)
    with caplog.at_level(logging.WARNING, logger="flask_mcp"):
        executor._run("gone", "no-such-task")
    assert "no-such-task" in caplog.text and "MCP_BACKEND" in caplog.text


@pytest.mark.e2e
def test_a_celery_task_is_traced_in_the_trace_of_the_request_that_created_it(
    serve: t.Any, redis_url: str, tmp_path: Path
) -> None:
    """The spans of a task's run on a Celery worker started a trace of their own: the
    creating request's trace context stayed in the web worker. It travels in the task's
    record (``traceparent``) now, and the run's span on the worker is a child of the
    ``tools/call`` span, linked to it, with the handler's spans below it."""
    env = {"FLASK_MCP_BACKEND": redis_url, "CELERY_BROKER_URL": redis_url}
    web_spans, worker_spans = tmp_path / "web.jsonl", tmp_path / "worker.jsonl"
    server = serve(
        "tests._apps.celery_traced:app", "gevent", env={**env, "MCP_TEST_SPANS": str(web_spans)}
    )
    worker_env = {**env, "MCP_TEST_SPANS": str(worker_spans), "PYTHONPATH": str(ROOT / "tests")}
    with celery_worker(worker_env, tmp_path / "celery.log", "tests._apps.celery_traced") as worker:
        created = post_2026(server.url, "tools/call", {"name": "crunch", "arguments": {}})
        task_id = created["result"]["taskId"]
        done = wait_task(server.url, task_id, lambda task: task["status"] in TERMINAL, 60)
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == f"crunched in process {worker.pid}"
    spans = {}
    for path in (web_spans, worker_spans):
        for line in path.read_text().splitlines():
            span = json.loads(line)
            spans[span["name"]] = span
    call, run, work = spans["tools/call crunch"], spans["execute_tool crunch"], spans["crunching"]
    assert run["pid"] == work["pid"] == worker.pid != call["pid"]
    assert run["trace"] == work["trace"] == call["trace"]
    assert run["parent"] == call["span"] and run["links"] == [call["span"]]
    assert work["parent"] == run["span"]
