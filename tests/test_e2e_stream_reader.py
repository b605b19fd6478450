"""The Redis backend's per-process stream reader, end to end (issue 16).

A real gunicorn gevent worker on Redis holds many GET streams on a few Redis
connections; a broadcast reaches every stream; the streams ride out a Redis
restart without missing what was sent meanwhile; closed streams leave nothing
behind in the worker. The numbers each test saw are printed (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
import typing as t
import uuid

import anyio
import httpx
import pytest
from harness import free_port
from harness import redis_server
from wire import initialize_request

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

VERSION = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
APP = "tests._apps.reader:app"
#: Seconds within which anything awaited must happen; longer fails the test.
HANG = 60
#: Redis connections a worker may hold, whatever number of streams it serves.
MAX_CONNECTIONS = 8


def backend_env(url: str) -> dict[str, str]:
    """Point the app at ``url`` under a fresh key prefix, with a short heartbeat."""
    backend = f"{url}?prefix=reader-{uuid.uuid4().hex[:8]}:&pool_idle_timeout=1"
    return {"FLASK_MCP_BACKEND": backend, "FLASK_MCP_SSE_HEARTBEAT": "2"}


class Streams:
    """``count`` sessions, each with an open GET stream, and the messages they received."""

    def __init__(self, http: httpx.AsyncClient, url: str, count: int) -> None:
        self.http = http
        self.url = url
        self.count = count
        self.received: list[list[str]] = [[] for _ in range(count)]
        self.pings = [0] * count
        self.ended = [False] * count
        self.opened = anyio.Event()
        self.close = anyio.Event()
        self._ready = 0

    async def initialize(self) -> str:
        body = initialize_request(VERSION)
        response = await self.http.post(self.url, headers=HEADERS, json=body)
        assert response.status_code == 200, response.text
        return response.headers["mcp-session-id"]

    async def hold(self, index: int, session: str) -> None:
        headers = {**HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION}
        async with self.http.stream("GET", self.url, headers=headers) as response:
            assert response.status_code == 200
            lines = response.aiter_lines()
            self._ready += 1
            if self._ready == self.count:
                self.opened.set()
            with anyio.move_on_after(10 * HANG):
                async with anyio.create_task_group() as group:

                    async def read() -> None:
                        async for line in lines:
                            if line.startswith("data:") and line[5:].strip():
                                message = json.loads(line[5:])
                                self.received[index].append(message["params"]["data"])
                            elif line.startswith(": ping"):
                                self.pings[index] += 1
                        self.ended[index] = True
                        group.cancel_scope.cancel()

                    group.start_soon(read)
                    await self.close.wait()
                    group.cancel_scope.cancel()

    async def wait_all(self, text: str) -> float:
        """Wait until every stream received ``text``; return the seconds it took."""
        started = time.monotonic()
        with anyio.fail_after(HANG):
            while not all(text in got for got in self.received):
                missing = sum(text not in got for got in self.received)
                assert not any(self.ended), f"{sum(self.ended)} streams ended, {missing} missing"
                await anyio.sleep(0.05)
        return time.monotonic() - started


async def _reader_state(http: httpx.AsyncClient, base: str) -> dict[str, int]:
    return t.cast("dict[str, int]", (await http.get(f"{base}/debug/reader")).json())


async def _broadcast(http: httpx.AsyncClient, base: str, text: str) -> None:
    response = await http.post(f"{base}/debug/broadcast", params={"text": text})
    assert response.status_code == 200, response.text


def _run_streams(
    base: str, url: str, count: int, body: t.Callable[[httpx.AsyncClient, Streams], t.Any]
) -> t.Any:
    async def main() -> t.Any:
        limits = httpx.Limits(max_connections=count + 50, max_keepalive_connections=count + 50)
        async with httpx.AsyncClient(timeout=HANG, limits=limits) as http:
            streams = Streams(http, url, count)
            sessions = [await streams.initialize() for _ in range(count)]
            async with anyio.create_task_group() as group:
                for index, session in enumerate(sessions):
                    group.start_soon(streams.hold, index, session)
                with anyio.fail_after(HANG):
                    await streams.opened.wait()
                try:
                    return await body(http, streams)
                finally:
                    streams.close.set()

    return anyio.run(main)


def test_a_broadcast_reaches_every_stream_on_a_few_connections(
    serve: t.Any, redis_backend_url: str
) -> None:
    """200 GET streams on one gevent worker: every stream receives two broadcasts, the
    worker holds at most 8 Redis connections, and closing the streams frees the reader.

    On a cluster the bound holds per node while the readers fetch (a pipeline takes a
    connection of every node it touches), and in all once the pools trimmed the burst."""
    server = serve(APP, "gevent", workers=1, env=backend_env(redis_backend_url))
    base, count = server.base_url, 200

    async def body(http: httpx.AsyncClient, streams: Streams) -> dict[str, t.Any]:
        # Opening 200 streams at once takes connections for the requests in flight; the
        # open streams hold none, so the pool gives them back (idle timeout 1 s here).
        peak = held = await _reader_state(http, base)
        with anyio.fail_after(HANG):
            while held["redis_connections"] > MAX_CONNECTIONS:
                await anyio.sleep(0.5)
                held = await _reader_state(http, base)
        times = []
        for text in ("first", "second"):
            await _broadcast(http, base, text)
            times.append(await streams.wait_all(text))
        during = await _reader_state(http, base)
        await anyio.sleep(3)  # a heartbeat and more: the streams are still there
        assert not any(streams.ended)
        assert min(streams.pings) >= 1
        return {"peak": peak, "held": held, "during": during, "times": times}

    found = _run_streams(base, server.url, count, body)
    assert found["held"]["streams"] >= count, found
    assert 1 <= found["held"]["redis_connections"] <= MAX_CONNECTIONS, found
    assert 1 <= found["during"]["most_per_node"] <= MAX_CONNECTIONS, found

    async def after() -> dict[str, int]:
        async with httpx.AsyncClient(timeout=10) as http:
            with anyio.fail_after(HANG):
                while True:
                    state = await _reader_state(http, base)
                    if state["streams"] == 0 and state["waiting"] == 0:
                        return state
                    await anyio.sleep(0.2)

    left = anyio.run(after)
    assert "Traceback" not in server.log(), server.log_tail(80)
    print(
        f"stream reader: {count} streams on {found['held']['redis_connections']} Redis "
        f"connections ({found['peak']['redis_connections']} while they opened, "
        f"{found['during']['redis_connections']} after broadcasts, at most "
        f"{found['during']['most_per_node']} to one node); broadcasts "
        f"reached all in {', '.join(f'{s:.2f}s' for s in found['times'])}; after closing: "
        f"{left['streams']} streams known, {left['waiting']} reads waiting"
    )


def test_streams_ride_out_a_redis_restart_without_missing_an_event(serve: t.Any) -> None:
    """Redis killed and restarted 0.5 s later from its AOF under 50 open streams: the streams
    stay open (an outage shorter than ``OUTAGE_GRACE``), and a broadcast sent as soon as Redis
    answers again (likely before the worker's pub/sub connection is back, so its wake-ups are
    lost) reaches every one of them."""
    port, data = free_port(), tempfile.mkdtemp(prefix="flask-mcp-aof-")
    args = ["--appendonly", "yes", "--appendfsync", "always", "--dir", data]
    missing = "needs redis-server for the Redis restart test"
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(redis_server(port, missing=missing, extra_args=args))
        server = serve(APP, "gevent", workers=1, env=backend_env(f"redis://127.0.0.1:{port}/0"))
        base, count = server.base_url, 50

        async def body(http: httpx.AsyncClient, streams: Streams) -> dict[str, float]:
            await _broadcast(http, base, "before")
            await streams.wait_all("before")
            first.kill()
            first.wait(10)
            await anyio.sleep(0.5)  # the worker notices: its pub/sub reconnects with backoff
            stack.enter_context(redis_server(port, missing=missing, extra_args=args))
            back = time.monotonic()
            await _broadcast(http, base, "after")
            took = await streams.wait_all("after")
            since_back = time.monotonic() - back
            state = await _reader_state(http, base)
            with anyio.fail_after(HANG):  # the burst of re-reads gives its connections back
                while state["redis_connections"] > MAX_CONNECTIONS:
                    await anyio.sleep(0.5)
                    state = await _reader_state(http, base)
            return {"s": took, "since_back": since_back, **state}

        found = _run_streams(base, server.url, count, body)
        log = server.log()
        assert "Traceback" not in log, server.log_tail(80)
        assert "Closed an SSE stream" not in log, server.log_tail(80)
        print(
            f"Redis restart under {count} streams: none closed; the broadcast sent at once "
            f"reached all {found['since_back']:.2f}s after Redis was back"
        )
