"""No request left without an answer: worker deaths, Redis blips and overload (issue 19).

Real gunicorn workers sharing a Redis; the official client makes the calls. Each
test kills or stops something while calls are in flight and checks that every
call returns or raises (never hangs), with the answer the design promises:

- a worker killed (SIGKILL), stopped (SIGTERM) or reloaded (SIGHUP to the master)
  answers its running calls with the JSON-RPC error "the worker running this request
  stopped" (at exit, or from the sweep of another worker within ``worker_timeout``);
  the calls on the other workers get their results;
- a Redis killed and restarted from its AOF, or frozen (SIGSTOP) then thawed, leaves
  every call with its result once Redis is back (the progress and log messages sent
  meanwhile are dropped; while it is frozen, 20 in a row cost one socket timeout, not 20);
- a Redis outage longer than ``worker_timeout`` sweeps no live worker: the results
  of calls that ran through it are delivered;
- a gthread worker with every stream slot held still runs new streaming calls, each
  answered with one JSON response (its progress dropped), and answers a plain call;
  20 concurrent calls from one official client, and from 8 clients at once, on 8
  threads: none fails;
- the Redis connections of a worker that held 1,000 streams go back to the baseline.

The numbers each test measured are printed (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import typing as t
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
import redis
from harness import GUNICORN_READY_ARGS
from harness import free_port
from harness import pinned_node
from harness import redis_client
from harness import redis_server
from harness import wait_for_workers_ready
from mcp.shared.exceptions import MCPError
from wire import call
from wire import client
from wire import headers_2026
from wire import initialize_request
from wire import meta
from wire import sse_events
from wire import start_session
from wire import text_of

from flask_mcp.transport import sse

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

VERSION = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
APP = "tests._apps.faults:app"
STOPPED = "worker running this request stopped"
#: What an error answering a call whose handler had started says instead of "retry".
IN_PART = "the request may have been carried out in part"
STORE = "the session store is unavailable"
#: What a best-effort write says that failed at once, Redis having timed out a moment ago.
STALLED = "timed out a moment ago"
#: Seconds within which every call must return or raise; a hang fails the test.
HANG = 60


def backend_env(url: str, **query: t.Any) -> dict[str, str]:
    """Point the app at ``url`` under a fresh key prefix; short stream retry hints."""
    params = {"prefix": f"faults-{uuid.uuid4().hex[:8]}:", **query}
    backend = f"{url}?{'&'.join(f'{k}={v}' for k, v in params.items())}"
    return {"FLASK_MCP_BACKEND": backend, "FLASK_MCP_SSE_RETRY_MS": "500"}


def worker_pids(master: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True, check=False
    ).stdout
    return [int(pid) for pid in out.split()]


def wait_for_workers(master: int, count: int, timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = worker_pids(master)
        if len(pids) == count:
            return pids
        time.sleep(0.1)
    raise AssertionError(f"expected {count} workers, found {worker_pids(master)}")


def serve_two(serve: t.Any, env: dict[str, str]) -> t.Any:
    """Run :data:`APP` on two gevent workers; return once both loaded it, so a fault never
    meets one of the first workers still booting (one that cannot reach Redis then stops
    the server)."""
    server = serve(APP, "gevent", workers=2, env=env, extra_args=GUNICORN_READY_ARGS)
    wait_for_workers_ready(server, 2)
    return server


class Outcome(t.NamedTuple):
    pid: int | None  # the worker that ran the call (from its first progress report)
    text: str | None  # the result's text, or None
    error: str | None  # the error's message (or the exception), or None
    at: float  # monotonic time the call returned or raised


def describe(exc: BaseException) -> str:
    """The message of an MCP error, wherever it is in an exception group; else the exception."""
    if isinstance(exc, MCPError):
        return exc.message
    inner = getattr(exc, "exceptions", None)  # an exception group (Python 3.11+, or anyio's)
    if isinstance(inner, (list, tuple)):
        return " | ".join(describe(e) for e in inner)
    return f"{type(exc).__name__}: {exc}"


def run_calls(
    url: str,
    count: int,
    tool: str,
    seconds: float,
    fault: t.Callable[[dict[int, int]], None],
    *,
    when: int,
) -> list[Outcome]:
    """Make ``count`` concurrent calls of ``tool`` with the official client; once ``when``
    of them reported their worker, call ``fault({call: pid})`` in a thread."""
    pids: dict[int, int] = {}
    outcomes: dict[int, Outcome] = {}

    async def one(i: int) -> None:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            if message and i not in pids:
                pids[i] = int(message.split()[1])

        text = error = None
        try:
            async with client(url) as c:
                await c.set_logging_level("info")  # the tool's log messages go out too
                result = await c.call_tool(tool, {"seconds": seconds}, progress_callback=progress)
                text = text_of(result)
        except Exception as exc:  # a transport failure is an answer too: not a hang
            error = describe(exc)
        outcomes[i] = Outcome(pids.get(i), text, error, time.monotonic())

    async def main() -> None:
        with anyio.fail_after(HANG):
            async with anyio.create_task_group() as group:
                for i in range(count):
                    group.start_soon(one, i)
                while len(pids) < when:
                    if len(outcomes) == count:  # ended before the fault: say so, do not hang
                        raise AssertionError(f"fewer than {when} calls reported: {outcomes}")
                    await anyio.sleep(0.05)
                await anyio.to_thread.run_sync(fault, dict(pids))

    anyio.run(main)
    return [outcomes[i] for i in range(count)]


# -- worker deaths ------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGHUP"])
def test_stopped_worker_answers_its_calls(serve: t.Any, redis_url: str, how: str) -> None:
    """SIGKILL or SIGTERM of one worker, SIGHUP of the master, with calls in flight."""
    env = backend_env(redis_url, worker_timeout=2)
    server = serve_two(serve, env)
    master = server.process.pid
    signalled: list[float] = []
    victims: list[int] = []

    def fault(pids: dict[int, int]) -> None:
        if how == "SIGHUP":
            victims.extend(worker_pids(master))
            os.kill(master, signal.SIGHUP)
        else:
            victims.append(next(iter(pids.values())))
            os.kill(victims[0], getattr(signal, how))
        signalled.append(time.monotonic())

    outcomes = run_calls(server.url, 6, "chatty", 8, fault, when=6)
    latencies = []
    for outcome in outcomes:
        assert outcome.pid is not None
        if outcome.pid in victims:
            assert outcome.error is not None and STOPPED in outcome.error, outcome
            assert IN_PART in outcome.error, outcome  # it used to say "retry the request"
            latencies.append(outcome.at - signalled[0])
        else:
            assert outcome.text == f"chatted on {outcome.pid}", outcome
    assert latencies, outcomes
    wait_for_workers(master, 2)
    log = server.log()
    assert "Traceback" not in log, server.log_tail(80)
    if how != "SIGKILL":  # the worker answered them itself, at exit
        assert re.search(r"exits with \d+ request\(s\) running", log), server.log_tail(80)
    print(
        f"{how}: {len(latencies)} of {len(outcomes)} calls were on stopped workers; each got the "
        f"JSON-RPC error {min(latencies):.1f}-{max(latencies):.1f}s after the signal"
    )


# -- Redis faults -------------------------------------------------------------------------


@contextlib.contextmanager
def aof_redis(port: int, data: str) -> t.Iterator[subprocess.Popen[bytes]]:
    """A private Redis on ``port`` keeping its data in ``data`` (AOF, fsync always)."""
    args = ["--appendonly", "yes", "--appendfsync", "always", "--dir", data]
    with redis_server(
        port, missing="needs redis-server for the Redis fault tests", extra_args=args
    ) as proc:
        yield proc


def test_redis_restart_and_stall_during_calls(serve: t.Any) -> None:
    """Redis killed and restarted 0.5 s later from its AOF, then frozen 7 s (SIGSTOP)."""
    port, data = free_port(), tempfile.mkdtemp(prefix="flask-mcp-aof-")
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(aof_redis(port, data))
        # The client resumes after 1.5 s, then 3 s: Redis is back by then, so every call
        # reads the server's own answer (not one its client made up after giving up).
        env = {**backend_env(f"redis://127.0.0.1:{port}/0"), "FLASK_MCP_SSE_RETRY_MS": "1500"}
        server = serve_two(serve, env)
        back: list[float] = []
        procs = [first]

        def restart(pids: dict[int, int]) -> None:
            first.kill()
            first.wait(10)
            time.sleep(0.5)
            procs.append(stack.enter_context(aof_redis(port, data)))
            back.append(time.monotonic())

        outcomes = run_calls(server.url, 4, "chatty", 4, restart, when=4)
        settled = [o.at - back[0] for o in outcomes]
        for outcome in outcomes:
            # The progress and log messages sent while Redis was away are dropped, and the
            # tool goes on: it used to end with the session store error, though it ran.
            assert outcome.text is not None, outcome
        print(
            f"Redis restart: {sum(o.text is not None for o in outcomes)} results, "
            f"{sum(o.error is not None for o in outcomes)} errors "
            f"({sorted({o.error for o in outcomes if o.error})}); all settled within "
            f"{max(settled):.1f}s of Redis's return"
        )

        def stall(pids: dict[int, int]) -> None:
            redis_pid = procs[-1].pid
            os.kill(redis_pid, signal.SIGSTOP)
            time.sleep(7)
            os.kill(redis_pid, signal.SIGCONT)
            back.append(time.monotonic())

        outcomes = run_calls(server.url, 4, "chatty", 4, stall, when=4)
        settled = [o.at - back[-1] for o in outcomes]
        for outcome in outcomes:
            assert outcome.text is not None, outcome
        print(
            f"Redis SIGSTOP 7s: {sum(o.text is not None for o in outcomes)} results, "
            f"{sum(o.error is not None for o in outcomes)} errors "
            f"({sorted({o.error for o in outcomes if o.error})}); all settled within "
            f"{max(settled):.1f}s of SIGCONT"
        )
        assert server.alive()
        log = server.log()
        assert "Dropped notifications/" in log, server.log_tail(80)
        assert "Traceback" not in log, server.log_tail(80)


def test_a_task_rides_out_a_redis_restart_that_keeps_its_data(serve: t.Any) -> None:
    """Redis killed and restarted from its AOF while a 2026-07-28 task reports progress:
    the task completes (a status message it could not write was skipped); it used to
    fail with the "session store is unavailable" error of the progress write."""
    port, data = free_port(), tempfile.mkdtemp(prefix="flask-mcp-aof-")
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(aof_redis(port, data))
        server = serve_two(serve, backend_env(f"redis://127.0.0.1:{port}/0"))
        caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}

        def post(http: httpx.Client, method: str, params: dict[str, t.Any], name: str) -> t.Any:
            body = {"jsonrpc": "2.0", "id": 1, "method": method}
            body["params"] = {**params, "_meta": meta(caps)}
            headers = {**headers_2026(method, {}), "Mcp-Name": name}
            return http.post(server.url, json=body, headers=headers)

        with httpx.Client(timeout=HANG) as http:
            created = post(http, "tools/call", {"name": "job", "arguments": {"seconds": 4}}, "job")
            task_id = created.json()["result"]["taskId"]
            time.sleep(1)  # the task reports progress
            first.kill()
            first.wait(10)
            time.sleep(0.5)
            stack.enter_context(aof_redis(port, data))
            deadline = time.monotonic() + HANG
            while True:
                answer = post(http, "tasks/get", {"taskId": task_id}, task_id)
                status = answer.json().get("result", {}).get("status")
                if status in ("completed", "failed", "cancelled"):
                    break
                assert answer.status_code in (200, 503), answer.text  # 503: Redis is away
                assert "result" in answer.json() or answer.status_code == 503, answer.text
                assert time.monotonic() < deadline, answer.text
                time.sleep(0.2)
        assert status == "completed", answer.text
        assert server.alive()


def test_a_task_call_during_an_outage_answers_503_like_tasks_get(serve: t.Any) -> None:
    """A 2026-07-28 task ``tools/call`` that meets a stopped Redis creates nothing: it is
    refused as every request that meets the outage before it starts is, with 503 and
    ``Retry-After``, as ``tasks/get`` is. It used to answer 200 with the retryable error
    of a handler that failed (the record is written inside the handler's run)."""
    port = free_port()
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    with redis_server(port, missing="needs redis-server for the Redis fault tests") as proc:
        server = serve(APP, "gthread", workers=1, env=backend_env(f"redis://127.0.0.1:{port}/0"))
        with httpx.Client(timeout=HANG) as http:

            def post(method: str, params: dict[str, t.Any], name: str) -> httpx.Response:
                body = {"jsonrpc": "2.0", "id": 9, "method": method}
                body["params"] = {**params, "_meta": meta(caps)}
                headers = {**headers_2026(method, {}), "Mcp-Name": name}
                return http.post(server.url, json=body, headers=headers)

            created = post("tools/call", {"name": "job", "arguments": {"seconds": 0}}, "job")
            assert created.status_code == 200, created.text  # Redis is up: a task
            task_id = created.json()["result"]["taskId"]
            proc.kill()
            proc.wait(10)
            for method, params, name in [
                ("tasks/get", {"taskId": task_id}, task_id),
                ("tools/call", {"name": "job", "arguments": {"seconds": 0}}, "job"),
            ]:
                answer = post(method, params, name)
                assert answer.status_code == 503, (method, answer.status_code, answer.text)
                assert answer.headers.get("Retry-After") == "2", (method, answer.headers)
                error = answer.json()["error"]
                assert answer.json()["id"] == 9 and error["code"] == -32603, answer.text
                assert STORE in error["message"] and error["data"] == {"retryable": True}
    assert "Traceback" not in server.log(), server.log_tail(80)


def test_a_handler_that_meets_an_outage_says_the_call_may_have_run(serve: t.Any) -> None:
    """Redis killed while a 2025-11-25 call works, before its ``ctx.elicit()``: the
    question cannot be sent, and the call ends with an error (as one JSON response: its
    stream could not be opened) that says the request may have been carried out in part,
    ``retryable`` false. It used to say "retry the request later" (``retryable`` true),
    and a client that did so ran the tool's work twice."""
    port, marks = free_port(), os.path.join(tempfile.mkdtemp(prefix="flask-mcp-"), "marks")
    with redis_server(port, missing="needs redis-server for the Redis fault tests") as proc:
        env = {
            **backend_env(f"redis://127.0.0.1:{port}/0"),
            "FLASK_MCP_SSE_HEARTBEAT": "2",  # the stream would open after the question
            "FAULTS_MARKS": marks,
        }
        server = serve(APP, "gevent", workers=1, env=env, extra_args=GUNICORN_READY_ARGS)
        wait_for_workers_ready(server, 1)
        answers: list[httpx.Response] = []
        with httpx.Client(timeout=HANG) as http:
            headers = start_session(http, server.url, {"elicitation": {}})
            params = {"name": "ask_later", "arguments": {"key": "k", "seconds": 1.5}}
            message = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
            post = threading.Thread(
                target=lambda: answers.append(http.post(server.url, headers=headers, json=message))
            )
            post.start()
            deadline = time.monotonic() + HANG
            while not os.path.exists(marks):  # the handler runs: Redis goes away
                assert time.monotonic() < deadline and post.is_alive(), answers
                time.sleep(0.02)
            proc.kill()
            proc.wait(10)
            post.join(HANG)
    (answer,) = answers
    assert answer.headers["content-type"].startswith("application/json"), answer.text
    error = answer.json()["error"]
    assert answer.json()["id"] == 5 and error["code"] == -32603, answer.text
    assert IN_PART in error["message"], error
    assert "retry the request" not in error["message"] and error["data"] == {"retryable": False}
    assert "Traceback" not in server.log(), server.log_tail(80)


def fill(url: str) -> list[str]:
    """Write to the Redis at ``url`` until it refuses a write for its ``maxmemory``, then
    lower that 128 KiB below what it uses, so that the buffers it frees meanwhile (the
    filler's) make no room; return the keys written (deleting them gives room back)."""
    filler = redis_client(url)
    names: list[str] = []
    with contextlib.closing(filler):
        while True:
            name = f"fill:{len(names)}"
            try:
                filler.set(name, "x" * 10_000)
            except redis.exceptions.OutOfMemoryError:
                break
            names.append(name)
            assert len(names) < 10_000, "Redis took 100 MB: its maxmemory was not applied"
        used = int(filler.info("memory")["used_memory"])
        assert len(names) * 10_000 > 2 * 128 * 1024, f"only {len(names)} keys fit"
        filler.config_set("maxmemory", used - 128 * 1024)
    return names


def test_a_full_redis_answers_503_like_an_outage_and_recovers(serve: t.Any) -> None:
    """Redis at its ``maxmemory`` with ``maxmemory-policy noeviction`` (as the deployment
    docs ask) refuses writes with "OOM command not allowed": ``initialize``, a call in a
    session, a streamed call, and a task ``tools/call`` of both eras get the outage's 503
    with ``Retry-After``, the log says Redis is full and to raise its maxmemory, no
    traceback; once Redis has room the session started before is served again.

    They used to get a 500 (a call, a streamed call) or a 200 carrying "Internal error"
    (``initialize``, a task), with the OOM error's traceback in the log: a full Redis was
    not among the errors taken for an unavailable store. (A gevent worker answers a plain
    call of a session it served a moment ago from memory, writing nothing, until its
    listener's next write is refused: that call may get its result first.)
    """
    port = free_port()
    full = ["--maxmemory", "2mb", "--maxmemory-policy", "noeviction"]
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    tasks = {"tasks": {"requests": {"tools": {"call": {}}}}}
    missing = "needs redis-server for the Redis fault tests"

    def refused(what: str, answer: httpx.Response) -> None:
        assert answer.status_code == 503, (what, answer.status_code, answer.text)
        assert answer.headers.get("Retry-After") == "2", (what, answer.headers)
        error = answer.json()["error"]
        assert STORE in error["message"] and error["data"] == {"retryable": True}, what

    with redis_server(port, missing=missing, extra_args=full):
        url = f"redis://127.0.0.1:{port}/0"
        server = serve(
            APP, "gevent", workers=1, env=backend_env(url), extra_args=GUNICORN_READY_ARGS
        )
        wait_for_workers_ready(server, 1)
        with httpx.Client(timeout=HANG) as http:
            headers = start_session(http, server.url, tasks)
            assert call(http, server.url, headers, "pid").status_code == 200
            filled = fill(url)
            refused("initialize", http.post(server.url, json=initialize_request(), headers=HEADERS))
            deadline = time.monotonic() + HANG
            while (answer := call(http, server.url, headers, "pid")).status_code == 200:
                assert "result" in answer.json(), answer.text  # served from memory
                assert time.monotonic() < deadline, "the worker never noticed Redis was full"
                time.sleep(0.1)
            refused("call", answer)
            params = {"name": "chatty", "arguments": {"seconds": 0}, "_meta": {"progressToken": 1}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            refused("streamed", http.post(server.url, json=body, headers=headers))
            params = {"name": "job", "arguments": {"seconds": 0}, "task": {"ttl": 60_000}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            refused("task", http.post(server.url, json=body, headers=headers))
            params = {"name": "job", "arguments": {"seconds": 0}, "_meta": meta(caps)}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            headers_new = {**headers_2026("tools/call", {}), "Mcp-Name": "job"}
            refused("task 2026", http.post(server.url, json=body, headers=headers_new))
            with contextlib.closing(redis_client(url)) as cleaner:
                cleaner.delete(*filled)  # room again: served, the session was kept
            answer = call(http, server.url, headers, "pid")
            assert answer.status_code == 200 and "result" in answer.json(), answer.text
            answer = http.post(server.url, json=initialize_request(), headers=HEADERS)
            assert answer.status_code == 200 and "result" in answer.json(), answer.text
    log = server.log()
    assert "Traceback" not in log, server.log_tail(80)
    assert "is full (used memory is over its maxmemory)" in log, server.log_tail(20)
    assert "Raise its maxmemory" in log, server.log_tail(20)


def test_readiness_answers_503_while_redis_is_full(serve: t.Any) -> None:
    """A full Redis (``maxmemory``, ``noeviction``) answers reads but refuses every write,
    so every request that writes gets 503: readiness says so too (503, ``Retry-After``,
    ``"backend": "full"`` and why, no address), liveness stays 200, and readiness is 200
    again once Redis has room. It read a key that does not exist, and answered "ready"."""
    port = free_port()
    full = ["--maxmemory", "2mb", "--maxmemory-policy", "noeviction"]
    with redis_server(
        port, missing="needs redis-server for the Redis fault tests", extra_args=full
    ):
        url = f"redis://127.0.0.1:{port}/0"
        probes = {
            "FLASK_MCP_HEALTH_LIVENESS_PATH": "/livez",
            "FLASK_MCP_HEALTH_READINESS_PATH": "/readyz",
        }
        server = serve(APP, "gthread", env={**backend_env(url), **probes})
        with httpx.Client(base_url=server.base_url, timeout=HANG) as http:
            assert http.get("/readyz").status_code == 200
            filled = fill(url)
            ready = http.get("/readyz")
            assert ready.status_code == 503, ready.text
            assert ready.headers["Retry-After"] == "2"
            body = ready.json()
            assert body["status"] == "unavailable" and body["backend"] == "full", body
            assert "refuses writes" in body["reason"], body
            assert "127.0.0.1" not in ready.text and str(port) not in ready.text
            assert http.get("/livez").status_code == 200
            with contextlib.closing(redis_client(url)) as cleaner:
                cleaner.delete(*filled)
            assert http.get("/readyz").status_code == 200
    log = server.log()
    assert "Traceback" not in log, server.log_tail(80)
    assert "Readiness probe: the backend refuses writes: Redis at" in log, server.log_tail(20)


def test_a_frozen_redis_costs_one_socket_timeout_not_two(serve: t.Any) -> None:
    """With Redis frozen (SIGSTOP), a request waits for the session lookup alone, and a
    handler's notifications cost one socket timeout together, not one each.

    The request used to read the shared registry log first (every request past a second
    did), wait the socket timeout there, log "Could not replay the other workers' registry
    changes", then wait the timeout again for its session: its 503 came after 10 s, not
    5. Now the log is read only when a change was announced (issue 33).

    A handler reporting progress 20 times in a row while Redis is frozen used to wait the
    socket timeout for each report it then dropped: 100 s before its result. Once a command
    of the worker timed out, a best-effort write fails at once for a socket timeout (or
    until a command succeeds): at most one of the 20 waits.
    """
    port = free_port()
    marks = os.path.join(tempfile.mkdtemp(prefix="flask-mcp-marks-"), "marks")
    Path(marks).write_text("", encoding="utf-8")
    with redis_server(port, missing="needs redis-server for the Redis fault tests") as proc:
        # gthread: a gevent worker serves a session it served a moment ago from memory
        env = {
            **backend_env(f"redis://127.0.0.1:{port}/0"),
            "FAULTS_MARKS": marks,
            "FAULTS_DEBUG_LOG": "1",
        }
        server = serve(APP, "gthread", workers=1, env=env)
        with httpx.Client(timeout=HANG) as http:
            headers = start_session(http, server.url)
            # The registry watcher's subscription reads the log once more when it is made
            # (an announcement may have been lost before it): let that read happen now,
            # not under the frozen Redis (a loaded machine starts the listener late).
            watcher = redis_client(f"redis://127.0.0.1:{port}/0")
            deadline = time.monotonic() + HANG
            while int(watcher.execute_command("PUBSUB", "NUMPAT")) < 1:
                assert time.monotonic() < deadline, "the worker's listener never subscribed"
                time.sleep(0.05)
            watcher.close()
            time.sleep(0.5)  # the watcher registers its channel once the listener is up
            assert call(http, server.url, headers, "pid").status_code == 200
            params = {"name": "burst", "arguments": {"count": 20}, "_meta": {"progressToken": 1}}
            message = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
            bursts: list[httpx.Response] = []
            burst = threading.Thread(
                target=lambda: bursts.append(http.post(server.url, headers=headers, json=message))
            )
            burst.start()
            deadline = time.monotonic() + HANG
            while "burst" not in Path(marks).read_text(encoding="utf-8").split():
                assert time.monotonic() < deadline and burst.is_alive(), bursts
                time.sleep(0.02)
            time.sleep(1.5)  # past the old one-second interval of the registry read
            os.kill(proc.pid, signal.SIGSTOP)
            try:
                with open(marks, "a", encoding="utf-8") as file:
                    file.write("go\n")  # the handler reports progress 20 times
                started = time.monotonic()
                response = call(http, server.url, headers, "pid")
                waited = time.monotonic() - started
                # Four socket timeouts: one wait (two, should the lookup's and a report's
                # overlap), not the 20 of one a report.
                deadline = time.monotonic() + 4 * 5
                while "sent" not in Path(marks).read_text(encoding="utf-8").split():
                    assert time.monotonic() < deadline, "each report waited the socket timeout"
                    time.sleep(0.05)
            finally:
                os.kill(proc.pid, signal.SIGCONT)
            burst.join(HANG)
            assert response.status_code == 503, response.text
            assert call(http, server.url, headers, "pid").status_code == 200  # thawed
    (answer,) = bursts
    assert answer.status_code == 200, answer.text
    log = server.log()
    assert "registry changes" not in log, server.log_tail(40)
    assert "Traceback" not in log, server.log_tail(80)
    dropped = [line for line in log.splitlines() if "Dropped notifications/progress" in line]
    waits = [line for line in dropped if "Timeout" in line]
    assert len(dropped) == 20, server.log_tail(40)
    assert len(waits) <= 1 and len(dropped) - len(waits) >= 19, dropped
    assert all(STALLED in line for line in dropped if line not in waits), dropped
    print(
        f"Redis SIGSTOP: 503 after {waited:.1f}s (one socket timeout: 5 s); 20 progress "
        f"reports dropped, {len(waits)} of them after waiting the socket timeout"
    )


def test_a_post_stream_ends_during_a_long_redis_stall_and_resumes_after(serve: t.Any) -> None:
    """Redis frozen (SIGSTOP) while a 2025-11-25 call runs: its POST stream, read in the
    worker that runs the call, ends once the outage outlasts the readers' grace, as the
    streams read from Redis do; after SIGCONT a resume with ``Last-Event-ID`` gets the
    answer the worker kept meanwhile.

    The stream used to stay open, heartbeat after heartbeat, for as long as Redis was
    stopped: its reader waited for the kept answer without limit.
    """
    port = free_port()
    with redis_server(port, missing="needs redis-server for the Redis fault tests") as proc:
        url = f"redis://127.0.0.1:{port}/0"
        env = {
            **backend_env(url, worker_timeout=2, socket_timeout=1),
            "FLASK_MCP_SSE_HEARTBEAT": "1",
        }
        server = serve(APP, "gevent", workers=1, env=env, extra_args=GUNICORN_READY_ARGS)
        wait_for_workers_ready(server, 1)
        params = {"name": "quiet", "arguments": {"seconds": 1}, "_meta": {"progressToken": 1}}
        message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        last_id, ended, stopped = "", False, False
        with httpx.Client(timeout=HANG) as http:
            headers = start_session(http, server.url)
            try:
                with http.stream("POST", server.url, headers=headers, json=message) as response:
                    assert response.status_code == 200, response.read()
                    deadline = time.monotonic() + HANG / 2
                    for line in response.iter_lines():
                        assert time.monotonic() < deadline, "the stream stayed open"
                        if line.startswith("id:"):
                            last_id = line[3:].strip()
                        elif line.startswith("data:") and "pid" in line and not stopped:
                            os.kill(proc.pid, signal.SIGSTOP)  # the call is running
                            stopped = True
                        assert '"result"' not in line, line  # Redis is stopped: kept
                    ended = True
            finally:
                os.kill(proc.pid, signal.SIGCONT)
            assert stopped and ended and last_id
            resumed = {k: v for k, v in headers.items() if k != "Content-Type"}
            deadline = time.monotonic() + HANG
            answer: dict[str, t.Any] = {}
            while not answer:  # the kept answer is written within a second or so
                assert time.monotonic() < deadline, "the answer was never written"
                get = http.get(server.url, headers={**resumed, "Last-Event-ID": last_id})
                assert get.status_code in (200, 503), get.text
                for event in sse_events(iter(get.text.splitlines())):
                    if event.get("data"):
                        last_id = event.get("id", last_id)
                        found = json.loads(event["data"])
                        if found.get("id") == 7:
                            answer = found
                time.sleep(0.2)
    assert answer["result"]["content"][0]["text"].startswith("quiet on"), answer
    log = server.log()
    assert "Closed an SSE stream" in log, server.log_tail(40)
    assert "Traceback" not in log, server.log_tail(80)


def test_a_stream_ended_by_a_redis_outage_says_when_to_come_back(serve: t.Any) -> None:
    """A GET stream that a Redis outage ends (past the readers' grace) sends a ``retry``
    hint suited to the outage before it ends, as the transport's resumability section
    asks: the client resumes when Redis is likely back. It used to end with only the
    priming event's hint (here 500 ms, ``MCP_SSE_RETRY_MS``): the client resumed into the
    outage's 503, and the official clients give up a stream after two failed resumes.
    """
    redis_port, server_port = free_port(), free_port()
    with redis_server(redis_port, missing="needs redis-server for the Redis fault tests") as proc:
        env = backend_env(f"redis://127.0.0.1:{redis_port}/0")
        server = serve(
            APP, "gevent", workers=1, env=env, port=server_port, extra_args=GUNICORN_READY_ARGS
        )
        wait_for_workers_ready(server, 1)
        hints: list[int] = []
        with httpx.Client(timeout=HANG) as http:
            headers = start_session(http, server.url)
            del headers["Content-Type"]
            with http.stream("GET", server.url, headers=headers) as response:
                assert response.status_code == 200, response.read()
                deadline = time.monotonic() + HANG / 2
                for line in response.iter_lines():
                    assert time.monotonic() < deadline, "the stream stayed open"
                    if line.startswith("retry:"):
                        hints.append(int(line[6:]))
                        if len(hints) == 1:  # primed: Redis goes away
                            proc.kill()
                            proc.wait(10)
    assert hints[0] == 500 and hints[-1] >= sse.OUTAGE_RETRY_MS, hints
    assert "Closed an SSE stream" in server.log(), server.log_tail(40)


def owned_entries(url: str, prefix: str) -> int:
    """How many request streams the workers' owned-streams sets hold."""
    client = redis_client(url)
    try:
        return sum(int(client.scard(key)) for key in client.scan_iter(f"{prefix}{{g}}:ws:*"))
    finally:
        client.close()


def test_the_owned_stream_set_empties_as_calls_end(serve: t.Any, redis_url: str) -> None:
    """A worker's set of owned request streams (what the sweep ends should it die) loses
    each stream when its call ends.

    Each call whose handler takes a ``Context`` adds its stream; a reply read one field
    off on the in-memory stream path kept every entry (about 104 bytes each), the set's
    expiry refreshed at every beat: it grew for the worker's life (issue 33). The defect
    itself, on the backend: ``tests/test_redis_sweep.py``.
    """
    env = backend_env(redis_url, worker_timeout=4)  # a beat every second
    prefix = env["FLASK_MCP_BACKEND"].split("prefix=")[1].split("&")[0]
    server = serve(APP, "gevent", workers=1, env=env, extra_args=GUNICORN_READY_ARGS)
    wait_for_workers_ready(server, 1)
    count = 30

    async def main() -> list[str]:
        async with client(server.url) as c:
            results = []
            for _ in range(count):
                result = await c.call_tool("quiet", {"seconds": 0})
                results.append(text_of(result))
            return results

    texts = anyio.run(main)
    assert all(text.startswith("quiet on") for text in texts), texts
    deadline = time.monotonic() + 20  # the disowned streams leave the set at the next beat
    left = owned_entries(redis_url, prefix)
    while left and time.monotonic() < deadline:
        time.sleep(0.25)
        left = owned_entries(redis_url, prefix)
    assert left == 0, f"{left} of {count} ended calls still in the owned-streams set"
    assert "Traceback" not in server.log(), server.log_tail(80)


def start_call(url: str, headers: dict[str, str], seconds: float) -> tuple[str, int]:
    """Start ``quiet`` on a new connection and leave once its progress came; return the
    event id to resume from and the pid of the worker running it."""
    params = {"name": "quiet", "arguments": {"seconds": seconds}, "_meta": {"progressToken": 1}}
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    with (
        httpx.Client(timeout=30) as http,
        http.stream("POST", url, headers=headers, json=message) as response,
    ):
        assert response.status_code == 200
        for event in sse_events(response.iter_lines()):
            if event.get("data"):
                pid = re.search(r"pid (\d+)", event["data"])
                assert pid is not None, event
                return event["id"], int(pid.group(1))
    raise AssertionError("the call sent no progress")


def test_outage_longer_than_worker_timeout_sweeps_no_live_worker(serve: t.Any) -> None:
    """Redis (AOF) down 4 s with worker_timeout=2 while calls run: every result arrives."""
    port, data = free_port(), tempfile.mkdtemp(prefix="flask-mcp-aof-")
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(aof_redis(port, data))
        env = backend_env(f"redis://127.0.0.1:{port}/0", worker_timeout=2)
        server = serve_two(serve, env)
        http = stack.enter_context(httpx.Client(timeout=30))
        calls: list[tuple[dict[str, str], str]] = []
        on: dict[int, int] = {}
        # Until both workers run three calls: the kernel hands a new connection to whichever
        # worker accepts first, and one worker can win 37 times in 40 (seen in CI), so try
        # for up to 6 s, pausing between tries; the calls last 14 s, so every one recorded
        # is still running when Redis goes down right after this loop.
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            if len(on) == 2 and min(on.values()) >= 3:
                break
            headers = start_session(http, server.url)
            last_id, pid = start_call(server.url, headers, 14)
            if on.get(pid, 0) < 3:
                on[pid] = on.get(pid, 0) + 1
                calls.append((headers, last_id))
            time.sleep(0.05)
        assert len(on) == 2 and len(calls) == 6, on
        back: list[float] = []

        def outage(pids: dict[int, int]) -> None:
            first.kill()
            first.wait(10)
            time.sleep(4)  # twice the worker_timeout
            stack.enter_context(aof_redis(port, data))
            back.append(time.monotonic())

        official = run_calls(server.url, 2, "quiet", 7, outage, when=2)
        for outcome in official:  # the official client returned or raised
            assert outcome.text is not None or outcome.error is not None, outcome
        answers = []
        for headers, last_id in calls:
            resume = {**headers, "Last-Event-ID": last_id}
            with http.stream("GET", server.url, headers=resume) as response:
                assert response.status_code == 200, response.read()
                found = [e["data"] for e in sse_events(response.iter_lines()) if e.get("data")]
            answers.append(found)
        texts = [a[-1] if a else "" for a in answers]
        assert all('"result"' in text and "quiet on" in text for text in texts), answers
        assert STOPPED not in server.log()
        assert "Traceback" not in server.log(), server.log_tail(80)
        print(
            f"outage 4s > worker_timeout 2s: 6 of 6 raw calls (3 on each worker) got their "
            f"results; the official client: {[o.text or o.error for o in official]}"
        )


def _initialize_status(http: httpx.Client, url: str) -> tuple[int, str]:
    """POST ``initialize``; return the status and the body's error message, if any."""
    response = http.post(url, json=initialize_request(VERSION), headers=HEADERS)
    error = response.json().get("error", {}).get("message", "") if response.content else ""
    return response.status_code, error


def test_a_worker_respawned_while_redis_is_down_starts_and_answers_503(serve: t.Any) -> None:
    """gunicorn's master stops the server when a worker fails to boot: a worker started
    during a Redis outage (here after its predecessor was killed) boots, answers 503
    with the store's error, and serves once Redis is back; the server stays up."""
    port = free_port()
    env = backend_env(f"redis://127.0.0.1:{port}/0")
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(
            redis_server(port, missing="needs redis-server for the Redis fault tests")
        )
        server = serve(APP, "gevent", workers=1, env=env, extra_args=GUNICORN_READY_ARGS)
        wait_for_workers_ready(server, 1)
        http = stack.enter_context(httpx.Client(timeout=30))
        assert _initialize_status(http, server.url)[0] == 200
        master = server.process.pid
        [old] = worker_pids(master)
        first.terminate()
        first.wait(10)
        os.kill(old, signal.SIGKILL)
        wait_for_workers_ready(server, 2)  # the respawned one loaded the app, Redis down
        [new] = wait_for_workers(master, 1)
        assert new != old and server.alive(), server.log_tail(40)
        assert "cannot be reached while this worker starts" in server.log()
        status, error = _initialize_status(http, server.url)
        assert (status, STORE in error) == (503, True), (status, error)
        stack.enter_context(redis_server(port, missing="needs redis-server"))
        deadline = time.monotonic() + 15  # the client's reconnection backs off
        while _initialize_status(http, server.url)[0] != 200:
            assert time.monotonic() < deadline, server.log_tail(40)
            time.sleep(0.2)
        assert server.alive() and worker_pids(master) == [new]
        assert "Traceback" not in server.log(), server.log_tail(80)


def test_the_first_workers_still_fail_fast_without_redis() -> None:
    """A server started with no Redis stops at once, saying where Redis was expected."""
    env = {**os.environ, **backend_env(f"redis://127.0.0.1:{free_port()}/0")}
    bind = f"127.0.0.1:{free_port()}"
    argv = [sys.executable, "-m", "gunicorn", "-k", "gevent", "-w", "1", "-b", bind, APP]
    done = subprocess.run(
        argv, env=env, cwd=Path(__file__).resolve().parent.parent, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Cannot reach Redis at 127.0.0.1:" in done.stderr, done.stderr[-2000:]
    assert "cannot be reached while this worker starts" not in done.stderr


# -- overload on a threaded worker ---------------------------------------------------------


def test_gthread_with_every_slot_held_buffers_streaming_calls(serve: t.Any) -> None:
    """--threads 4 holds 3 streams: 1 GET and 2 streaming calls fill it; then a new streaming
    call gets its result as one JSON response (its progress dropped), a new GET an event
    stream that ends at once, a plain call its answer."""
    server = serve(APP, "gthread", threads=4)
    http = httpx.Client(timeout=30)
    held = httpx.Client(timeout=30)
    with contextlib.ExitStack() as stack:
        stack.callback(http.close)
        stack.callback(held.close)
        first = start_session(http, server.url)
        get = stack.enter_context(held.stream("GET", server.url, headers=first))
        assert get.status_code == 200
        for _ in range(2):
            headers = start_session(http, server.url)
            params = {"name": "chatty", "arguments": {"seconds": 20}, "_meta": {"progressToken": 1}}
            message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
            response = stack.enter_context(
                held.stream("POST", server.url, headers=headers, json=message)
            )
            assert response.headers["content-type"].startswith("text/event-stream")
            next(response.iter_lines())

        timings: dict[str, float] = {}
        headers = start_session(http, server.url)
        params = {"name": "chatty", "arguments": {"seconds": 1}, "_meta": {"progressToken": 4}}
        message = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params}
        started = time.monotonic()
        buffered = http.post(server.url, headers=headers, json=message)
        timings["streaming call: buffered JSON"] = time.monotonic() - started
        assert buffered.status_code == 200, buffered.text
        assert buffered.headers["content-type"].startswith("application/json"), buffered.text
        answer = buffered.json()
        assert answer["id"] == 4 and "chatted on" in answer["result"]["content"][0]["text"]

        started = time.monotonic()
        later = http.get(server.url, headers=headers)  # read to its end: it ends at once
        timings["GET: come back later"] = time.monotonic() - started
        assert later.status_code == 200 and "retry:" in later.text, later.text

        params = {"name": "pid", "arguments": {}}
        message = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
        started = time.monotonic()
        plain = http.post(server.url, headers=headers, json=message)
        timings["plain tools/call"] = time.monotonic() - started
        assert plain.status_code == 200 and plain.json()["id"] == 5, plain.text
    assert "Traceback" not in server.log(), server.log_tail(80)
    print(
        "gthread, every slot held: "
        + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in timings.items())
    )


#: Seconds of each ``chatty`` call of the busy tests (one progress report, then a pause).
#: 160 calls at once overflow 8 threads and their stream slots however long each lasts; they
#: queue for the threads, so a busy test lasts in proportion to it: it is kept short.
BUSY_SECONDS = 0.5


def busy_calls(
    url: str, clients: int, calls: int, fastmcp_mode: str | None = None
) -> list[Outcome]:
    """``calls`` concurrent ``chatty`` calls (:data:`BUSY_SECONDS`) on each of ``clients``
    clients at once, each with a progress handler: the official client, or with
    ``fastmcp_mode`` the FastMCP client (``"auto"``, its default, speaks 2026-07-28 to
    Flask-MCP; ``"legacy"`` 2025-11-25)."""
    outcomes: list[Outcome] = []
    progress_seen = [0]

    async def progress(value: float, total: float | None, message: str | None) -> None:
        progress_seen[0] += 1

    def open_client() -> t.Any:
        if fastmcp_mode is None:
            return client(url)
        import fastmcp

        return fastmcp.Client(url, timeout=HANG, mode=fastmcp_mode)

    async def call(c: t.Any) -> t.Any:
        if fastmcp_mode is None:
            return await c.call_tool(
                "chatty", {"seconds": BUSY_SECONDS}, progress_callback=progress
            )
        return await c.call_tool(
            "chatty", {"seconds": BUSY_SECONDS}, progress_handler=progress, raise_on_error=False
        )

    async def one(c: t.Any) -> None:
        text = error = None
        try:
            result = await call(c)
            text = text_of(result)
            if result.is_error:
                error = text
        except Exception as exc:  # a transport failure is an answer too: not a hang
            error = describe(exc)
        outcomes.append(Outcome(None, text, error, time.monotonic()))

    async def session() -> None:
        async with open_client() as c, anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(one, c)

    async def main() -> None:
        with anyio.fail_after(HANG):
            async with anyio.create_task_group() as group:
                for _ in range(clients):
                    group.start_soon(session)

    anyio.run(main)
    who = "official" if fastmcp_mode is None else f"FastMCP {fastmcp_mode}"
    print(f"{who} {clients} x {calls} calls: {progress_seen[0]} progress notifications")
    return outcomes


def check_busy_gthread(
    serve: t.Any, redis_url: str, backend: str, fastmcp_mode: str | None = None
) -> None:
    """On gthread with 8 threads, 20 concurrent calls from one client, then 8 clients x 20
    at once: every call returns its result and the server logs no traceback."""
    env = backend_env(redis_url) if backend == "redis" else {}
    server = serve(APP, "gthread", threads=8, env=env)
    for clients, calls in ((1, 20), (8, 20)):
        outcomes = busy_calls(server.url, clients, calls, fastmcp_mode)
        failed = [o.error for o in outcomes if o.error is not None or not o.text]
        assert len(outcomes) == clients * calls
        assert not failed, failed
        assert all(o.text and o.text.startswith("chatted on") for o in outcomes)
        print(f"gthread 8 threads, {backend}: {len(outcomes)} calls, {len(failed)} failed")
    assert "Traceback" not in server.log(), server.log_tail(80)


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_gthread_busy_degrades_without_failing(serve: t.Any, redis_url: str, backend: str) -> None:
    """On gthread with 8 threads, 20 concurrent progress-reporting calls from one official
    client, then from 8 clients at once: every call returns its result (issue 33). Calls
    that find no stream slot are answered with buffered JSON instead of a 503."""
    check_busy_gthread(serve, redis_url, backend)


# FastMCP once in each era (``auto`` speaks 2026-07-28, ``legacy`` 2025-11-25), one backend
# each; the official client covers both backends (each run holds every thread ~12 s).
@pytest.mark.parametrize(("backend", "mode"), [("memory", "auto"), ("redis", "legacy")])
def test_gthread_busy_degrades_without_failing_fastmcp(
    serve: t.Any, redis_url: str, backend: str, mode: str
) -> None:
    """:func:`test_gthread_busy_degrades_without_failing` with the FastMCP client: 20
    concurrent progress-reporting calls from one client, then 8 clients x 20 at once on 8
    threads; every call returns its result (issue 33)."""
    check_busy_gthread(serve, redis_url, backend, mode)


@pytest.mark.parametrize("backend", ["redis"])
def test_gthread_busy_degrades_without_failing_typescript_sdk(
    serve: t.Any, conformance: t.Any, tasks_client: Path, redis_url: str, backend: str
) -> None:
    """:func:`test_gthread_busy_degrades_without_failing` with the official TypeScript SDK
    client (``tests/tasks_client/busy.mjs``): 20 concurrent progress-reporting calls from one
    client, then 8 clients x 20 at once on 8 threads; none fails (issue 33)."""
    env = backend_env(redis_url) if backend == "redis" else {}
    server = serve(APP, "gthread", threads=8, env=env)
    for clients, calls in ((1, 20), (8, 20)):
        done = subprocess.run(
            [pinned_node(), "busy.mjs", server.url, str(clients), str(calls), str(BUSY_SECONDS)],
            cwd=tasks_client, capture_output=True, text=True, timeout=HANG * 3,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr + server.log_tail()
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["calls"] == clients * calls, report
        assert report["failed"] == 0 and report["ok"] == clients * calls, report
        print(
            f"TypeScript SDK, gthread 8 threads, {backend}: {clients} client(s) x {calls} "
            f"calls, {report['failed']} failed, {report['progress']} progress notifications"
        )
    assert "Traceback" not in server.log(), server.log_tail(80)


# -- the Redis pool -------------------------------------------------------------------------


def redis_connections(url: str, name: str) -> int:
    """How many connections named ``name`` (``client_name``) Redis has now."""
    client = redis_client(url)
    try:
        return sum(1 for entry in client.client_list() if entry.get("name") == name)
    finally:
        client.close()


def test_redis_connections_return_after_a_thousand_streams(serve: t.Any, redis_url: str) -> None:
    """One gevent worker holds 1,000 GET streams, then they close: its fds go back to the
    baseline (within 10) once the pool's idle timeout (here 1 s) has passed.

    While they close, the worker holds a few Redis connections, as while they are open:
    each closing stream's detach used to take a connection of its own (1,004 of them,
    issue 33); the detaches now go together, a few pipelines on a few connections.
    """
    name = f"faults-{uuid.uuid4().hex[:8]}"
    env = {
        **backend_env(redis_url, pool_idle_timeout=1, client_name=name),
        "FLASK_MCP_SSE_HEARTBEAT": "2",
        # the sessions skip notifications/initialized: keep them past a slow opening phase
        "FLASK_MCP_HANDSHAKE_TIMEOUT": "600",
    }
    # keep-alive: a loaded machine may take more than 2 s to answer some of 1,000 new
    # connections, and the gevent worker drops those (not the server under test)
    args = ["--worker-connections", "2000", "--keep-alive", "30"]
    server = serve(APP, "gevent", workers=1, env=env, extra_args=args)
    fds_url = f"{server.base_url}/debug/fds"
    count = 1000
    peaks: dict[str, int] = {}
    watching = threading.Event()

    def watch(phase: str) -> None:
        """Note the most connections the worker holds until :data:`watching` is cleared."""
        while watching.is_set():
            peaks[phase] = max(peaks.get(phase, 0), redis_connections(redis_url, name))
            time.sleep(0.05)

    async def main() -> dict[str, float]:
        limits = httpx.Limits(max_connections=count + 50, max_keepalive_connections=count + 50)
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            body = initialize_request(VERSION)
            sessions = []
            for _ in range(count):
                response = await http.post(server.url, headers=HEADERS, json=body)
                assert response.status_code == 200
                sessions.append(response.headers["mcp-session-id"])
            baseline = (await http.get(fds_url)).json()["fds"]
            opened = anyio.Event()
            ready: list[int] = []
            close = anyio.Event()

            async def hold(session: str) -> None:
                headers = {**HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION}
                async with http.stream("GET", server.url, headers=headers) as response:
                    assert response.status_code == 200
                    chunks = response.aiter_raw()  # kept: a closed iterator closes the stream
                    await chunks.__anext__()
                    ready.append(1)
                    if len(ready) == count:
                        opened.set()
                    await close.wait()

            async with anyio.create_task_group() as group:
                for session in sessions:
                    group.start_soon(hold, session)
                with anyio.fail_after(HANG):
                    await opened.wait()
                await anyio.sleep(1)
                peak = (await http.get(fds_url)).json()["fds"]
                # Opening 1,000 streams at once grows the pool to its maximum; the idle
                # ones are closed on later releases (the heartbeats'), about a second
                # after. Measure the closing phase from the streams' own few connections.
                with anyio.fail_after(HANG):
                    while (held := redis_connections(redis_url, name)) > 50:
                        await anyio.sleep(0.25)
                peaks["open"] = held
                watching.set()
                watcher = threading.Thread(target=watch, args=("closing",), daemon=True)
                watcher.start()
                close.set()
            closed = time.monotonic()
        async with httpx.AsyncClient(timeout=10) as http:
            with anyio.fail_after(HANG):
                while True:
                    after = (await http.get(fds_url)).json()["fds"]
                    if after <= baseline + 10:
                        break
                    await anyio.sleep(0.5)
        watching.clear()
        watcher.join(10)
        return {"baseline": baseline, "peak": peak, "after": after, "s": time.monotonic() - closed}

    numbers = anyio.run(main)
    assert numbers["peak"] > numbers["baseline"] + count  # the streams were open at once
    assert "Traceback" not in server.log(), server.log_tail(80)
    print(
        f"Redis pool: fds {numbers['baseline']} -> {numbers['peak']} with {count} streams -> "
        f"{numbers['after']} {numbers['s']:.1f}s after they closed; Redis connections: "
        f"{peaks['open']} with the streams open, at most {peaks['closing']} while they closed"
    )
    assert peaks["closing"] <= 50, peaks  # a few, however many streams close at once


# -- session admission -----------------------------------------------------------------------


def test_an_initialize_flood_keeps_no_one_out_past_the_handshake_timeout(
    serve: t.Any, redis_url: str
) -> None:
    """A client loops bare ``initialize`` into MCP_MAX_SESSIONS=200 on two workers; another
    client is refused at most for about MCP_HANDSHAKE_TIMEOUT (2 s here)."""
    env = {
        **backend_env(redis_url),
        "FLASK_MCP_MAX_SESSIONS": "200",
        "FLASK_MCP_HANDSHAKE_TIMEOUT": "2",
    }
    server = serve(APP, "gevent", workers=2, env=env)
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "flood", "version": "1"},
        },
    }
    full = threading.Event()
    stop = threading.Event()
    flooded = {"created": 0, "refused": 0}

    def flood() -> None:
        with httpx.Client(timeout=30) as http:
            while not stop.is_set():
                response = http.post(server.url, headers=HEADERS, json=body)
                if response.status_code == 200:
                    flooded["created"] += 1
                else:
                    assert response.status_code == 503, response.text
                    flooded["refused"] += 1
                    full.set()

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    try:
        assert full.wait(HANG), flooded
        refused_since = time.monotonic()
        attempts = 0
        with httpx.Client(timeout=30) as http:
            while True:
                attempts += 1
                response = http.post(server.url, headers=HEADERS, json=body)
                if response.status_code == 200:
                    break
                assert response.status_code == 503 and response.json()["id"] == 0
                assert time.monotonic() - refused_since < HANG
                time.sleep(0.1)
        kept_out = time.monotonic() - refused_since

        async def official() -> str:
            with anyio.fail_after(HANG):
                for _ in range(100):  # the flood goes on: a refusal is retried
                    try:
                        async with client(server.url) as c:
                            return text_of(await c.call_tool("pid", {}))
                    except Exception:
                        await anyio.sleep(0.1)
            raise AssertionError("the official client never got in")

        answered = anyio.run(official)
    finally:
        stop.set()
        flooder.join(30)
    assert re.fullmatch(r"\{\"result\":\d+\}", answered), answered
    assert kept_out < 2 + 5, kept_out  # the handshake timeout, plus slack for a loaded machine
    assert "Traceback" not in server.log(), server.log_tail(80)
    print(
        f"initialize flood ({flooded['created']} created, {flooded['refused']} refused): another "
        f"client was kept out {kept_out:.1f}s ({attempts} attempts) with MCP_HANDSHAKE_TIMEOUT=2"
    )


def test_a_client_past_its_session_quota_gets_429(serve: t.Any, redis_url: str) -> None:
    """MCP_MAX_SESSIONS_PER_CLIENT=3 on two workers: the 4th session of one address is refused
    until the client ends one."""
    env = {**backend_env(redis_url), "FLASK_MCP_MAX_SESSIONS_PER_CLIENT": "3"}
    server = serve(APP, "gevent", workers=2, env=env)
    with httpx.Client(timeout=30) as http:
        sessions = [start_session(http, server.url) for _ in range(3)]
        body = {
            "jsonrpc": "2.0",
            "id": 11,
            "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        refused = http.post(server.url, headers=HEADERS, json=body)
        assert refused.status_code == 429, refused.text
        assert refused.headers["Retry-After"] == "5" and refused.json()["id"] == 11
        assert "MCP_MAX_SESSIONS_PER_CLIENT" in refused.json()["error"]["message"]
        assert http.delete(server.url, headers=sessions[0]).status_code == 204
        assert http.post(server.url, headers=HEADERS, json=body).status_code == 200
    assert "Traceback" not in server.log(), server.log_tail(80)
