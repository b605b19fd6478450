"""Several gunicorn gevent workers sharing one Redis: any worker serves any request.

(a) 50 concurrent sessions of the official client with sampling, elicitation,
progress and a resume after a server-side close, across 4 workers; (b) a
worker killed with SIGKILL loses only its own running request; (c) a Redis
outage gives quick 503s and the server recovers; (d) the conformance suites.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import subprocess
import threading
import time
import typing as t

import anyio
import httpx
import pytest
from harness import GUNICORN_READY_ARGS
from harness import free_port
from harness import redis_client
from harness import redis_env
from harness import redis_server
from harness import run_suite
from harness import wait_for_workers_ready
from wire import call
from wire import client
from wire import initialize_request
from wire import sse_events
from wire import start_session
from wire import text_of

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

VERSION = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
#: gunicorn access log lines: "<pid> METHOD STATUS".
ACCESS = ["--access-logformat", "%(p)s %(m)s %(s)s"]
INITIALIZE = initialize_request(VERSION)


def worker_pids(master: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True, check=False
    ).stdout
    return [int(pid) for pid in out.split()]


# -- (a) many sessions across workers ----------------------------------------------------


def test_fifty_sessions_across_four_workers(serve: t.Any, redis_backend_url: str) -> None:
    server = serve(
        "tests._apps.backchannel:app",
        "gevent",
        workers=4,
        env=redis_env(redis_backend_url),
        extra_args=ACCESS,
    )
    done: list[int] = []

    async def session(i: int) -> None:
        seen: list[float] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append(value)

        async with client(server.url) as c:
            assert (
                text_of(await c.call_tool("add", {"a": i, "b": 1000})) == f'{{"result":{i + 1000}}}'
            )
            assert (
                text_of(await c.call_tool("sample", {"prompt": f"hello {i}"}))
                == f"model said: HELLO {i}"
            )
            assert text_of(await c.call_tool("ask", {})) == "accept:Ada"
            result = await c.call_tool("polled", {"steps": 6}, progress_callback=progress)
            assert text_of(result) == "finished 6"
            assert seen == [1, 2, 3, 4, 5, 6]
            assert (
                text_of(await c.call_tool("sample", {"prompt": f"bye {i}"}))
                == f"model said: BYE {i}"
            )
        done.append(i)

    async def main() -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for i in range(50):
                    group.start_soon(session, i)

    started = time.monotonic()
    anyio.run(main)
    elapsed = time.monotonic() - started
    assert sorted(done) == list(range(50))
    served = collections.Counter(
        line.split()[0] for line in server.log().splitlines() if re.match(r"<\d+> POST 20", line)
    )
    print(f"50 sessions in {elapsed:.1f}s; POSTs per worker: {dict(served)}")
    assert len(served) == 4, served  # every worker took part
    assert "Traceback" not in server.log(), server.log_tail(60)


# -- (b) SIGKILL --------------------------------------------------------------------------


def test_sigkilled_worker_loses_only_its_running_request(
    serve: t.Any, redis_backend_url: str
) -> None:
    env = {**redis_env(redis_backend_url, worker_timeout=2), "FLASK_MCP_SSE_RETRY_MS": "200"}
    server = serve("tests._apps.backchannel:app", "gevent", workers=4, env=env)
    prefix = env["FLASK_MCP_BACKEND"].split("prefix=")[1].split("&")[0]
    progress: dict[int, list[str]] = collections.defaultdict(list)
    killed = threading.Event()

    def official_sessions() -> None:
        async def one(i: int) -> None:
            async with client(server.url) as c:
                assert (
                    text_of(await c.call_tool("sample", {"prompt": f"p{i}"})) == f"model said: P{i}"
                )
                progress[i].append("before")
                while not killed.is_set():
                    await anyio.sleep(0.05)
                assert (
                    text_of(await c.call_tool("sample", {"prompt": f"q{i}"})) == f"model said: Q{i}"
                )
                assert text_of(await c.call_tool("ask", {})) == "accept:Ada"
                progress[i].append("after")

        async def main() -> None:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    for i in range(8):
                        group.start_soon(one, i)

        anyio.run(main)

    thread = threading.Thread(target=official_sessions, daemon=True)
    thread.start()
    store = redis_client(redis_backend_url)
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, server.url)
        session_id = headers["Mcp-Session-Id"]
        deadline = time.monotonic() + 30
        while len(progress) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(progress) == 8, dict(progress)

        # A request that streams progress, then works for a minute on some worker.
        arguments = {"name": "slow_chatty", "arguments": {"seconds": 60}}
        params = {**arguments, "_meta": {"progressToken": "p"}}
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        last_id = None
        with http.stream("POST", server.url, headers=headers, json=message) as response:
            lines = response.iter_lines()
            for event in sse_events(lines):
                last_id = event.get("id", last_id)
                if event.get("data"):
                    break
            # The worker running it holds the session's busy count: b:HOST:PID:RANDOM.
            record_key = f"{prefix}{{{session_id}}}:s"
            leases = [f.decode() for f in store.hkeys(record_key) if f.startswith(b"b:")]
            assert len(leases) == 1, leases
            victim = int(leases[0].split(":")[-2])
            assert victim in worker_pids(server.process.pid)
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
            with pytest.raises(httpx.HTTPError):
                for _ in lines:
                    pass
        killed.set()

        # The resumed stream lives on: another worker serves it until the dead
        # worker's silence ends it (worker_timeout), with a JSON-RPC error.
        assert last_id is not None
        with http.stream(
            "GET", server.url, headers={**headers, "Last-Event-ID": last_id}
        ) as response:
            assert response.status_code == 200
            data = [e["data"] for e in sse_events(response.iter_lines()) if e.get("data")]
        ended_after = time.monotonic() - killed_at
        assert len(data) == 1 and ended_after < 10, (data, ended_after)
        assert '"id":2' in data[0] and "worker running this request stopped" in data[0], data

        # The session itself, and every other session, keep working.
        response = call(http, server.url, headers, "add", a=2, b=3)
        assert response.status_code == 200 and '"result":5' in response.text, response.text
    store.close()
    thread.join(60)
    assert all(steps == ["before", "after"] for steps in progress.values()), dict(progress)
    assert len(worker_pids(server.process.pid)) == 4  # gunicorn replaced the dead worker
    print(f"SIGKILL: the cut stream ended {ended_after:.1f}s after the kill; 9 sessions went on")


# -- (c) Redis outage ---------------------------------------------------------------------


def private_redis(port: int) -> t.ContextManager[subprocess.Popen[bytes]]:
    return redis_server(port, missing="needs redis-server to stop and restart a private Redis")


def test_redis_outage_gives_quick_503_and_recovers(serve: t.Any) -> None:
    port = free_port()
    with contextlib.ExitStack() as stack:
        redis_server = stack.enter_context(private_redis(port))
        env = {"FLASK_MCP_BACKEND": f"redis://127.0.0.1:{port}/0"}
        server = serve(
            "tests._apps.backchannel:app",
            "gevent",
            workers=4,
            env=env,
            extra_args=GUNICORN_READY_ARGS,
        )
        # Every worker booted before Redis goes: a worker that boots during an outage longer
        # than BOOT_WAIT fails its boot, and gunicorn's master then stops the whole server (in
        # CI the fourth worker reached init_app 3 s after the first answered).
        wait_for_workers_ready(server, 4)
        http = stack.enter_context(httpx.Client(timeout=30))
        sessions = [start_session(http, server.url) for _ in range(4)]
        for headers in sessions:
            assert call(http, server.url, headers, "add", a=1, b=1).status_code == 200

        ended: list[float] = []

        def general_stream() -> None:
            with (
                contextlib.suppress(httpx.HTTPError),
                http.stream("GET", server.url, headers=sessions[0]) as response,
            ):
                for _ in response.iter_bytes():
                    pass
            ended.append(time.monotonic())

        reader = threading.Thread(target=general_stream, daemon=True)
        reader.start()
        time.sleep(0.3)
        redis_server.terminate()
        redis_server.wait(10)
        stopped = time.monotonic()

        slowest = 0.0
        for headers in sessions:
            for send, request_id in (
                (lambda h=headers: call(http, server.url, h, "add", a=1, b=2), 1),
                (lambda h=headers: http.get(server.url, headers=h), None),
                (lambda: http.post(server.url, headers=HEADERS, json=INITIALIZE), 0),
            ):
                started = time.monotonic()
                response = send()
                assert response.json()["id"] == request_id, response.text
                slowest = max(slowest, time.monotonic() - started)
                assert response.status_code == 503, response.text
                assert response.headers["content-type"].startswith("application/json")
                error = response.json()["error"]
                assert error["code"] == -32603 and "unavailable" in error["message"]
                assert str(port) not in response.text and "Errno" not in response.text
        assert slowest < 2, slowest
        reader.join(5)
        assert ended and ended[0] - stopped < 5  # the open GET stream closed, no hang
        assert server.alive()

        with private_redis(port):  # the same port, empty: old sessions are gone
            recovered = time.monotonic()
            headers = start_session(http, server.url)
            for _ in range(8):  # land on every worker
                assert call(http, server.url, headers, "add", a=2, b=2).status_code == 200
            again = time.monotonic() - recovered
            assert call(http, server.url, sessions[1], "add", a=1, b=1).status_code == 404
        log = server.log()
        assert "Traceback" not in log, server.log_tail(80)
        print(f"outage: slowest 503 {slowest * 1000:.0f} ms; working {again:.2f}s after restart")


# -- (d) conformance ------------------------------------------------------------------------


@pytest.mark.conformance
def test_conformance_on_four_workers(serve: t.Any, redis_url: str, conformance: t.Any) -> None:
    server = serve("examples.everything:app", "gevent", workers=4, env=redis_env(redis_url))
    for args, next_, least in (
        (("--suite", "all"), False, 46),
        (("--suite", "all", "--spec-version", VERSION), True, 83),
    ):
        result = run_suite(conformance, server.url, *args, next=next_)
        assert result.failed == 0 and result.returncode == 0, result.output[-4000:]
        assert not result.by_status.get("FAILURE")
        assert result.passed >= least
        assert result.warnings() == []
