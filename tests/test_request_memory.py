"""A request's objects are freed when it ends, not at a later collection of reference cycles.

A spawned handler's call, its run and its answer once formed cycles (the call and its
``Context``; the run, its task and the work's closure). Python's reference counting
cannot free a cycle: it waited for the garbage collector, whose rare full collections
let the answers of many finished calls pile up. Under gunicorn, a tool returning 4 MB
with progress held about 30 MB per finished call that way (peak RSS 226 MB for calls made
one at a time, 110 MB once freed at once). These tests keep the server's own objects out
of every cycle, on each path a spawned handler takes: in process (threads), and under
gunicorn (gevent and threads) driven by the official client, where ``/cycles`` reports
what the collector found.
"""

from __future__ import annotations

import collections.abc
import gc
import threading
import time
import typing as t

import pytest
from flask import Flask
from harness import start_server

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.testing import MCPTestClient

ERAS = ["2025-11-25", "2026-07-28"]


def app_of() -> Flask:
    mcp = MCP(name="memory", version="1")

    @mcp.tool()
    def report(ctx: Context) -> dict[str, t.Any]:
        """A spawned handler: it reports progress, then returns a structured result."""
        ctx.progress(1, 2)
        return {"items": list(range(100))}

    @mcp.tool()
    def plain() -> dict[str, t.Any]:
        """An inline handler."""
        return {"items": list(range(100))}

    @mcp.tool(task="optional")
    def slow() -> dict[str, t.Any]:
        """A handler that runs as a task."""
        return {"items": list(range(100))}

    app = Flask(__name__)
    app.config.update(TESTING=True)
    mcp.init_app(app)

    @app.post("/cycles")
    def watch_cycles() -> dict[str, t.Any]:
        """Start keeping what the collector frees (``gc.DEBUG_SAVEALL``)."""
        gc.collect()
        gc.garbage.clear()
        gc.set_debug(gc.DEBUG_SAVEALL)
        return {}

    @app.get("/cycles")
    def cycles() -> dict[str, t.Any]:
        """The types of Flask-MCP's objects found in cycles since ``POST /cycles``."""
        gc.collect()
        gc.set_debug(0)
        found = server_objects(gc.garbage)
        gc.garbage.clear()
        return {"found": found}

    return app


def server_objects(objects: list[t.Any]) -> list[str]:
    """The types of the Flask-MCP objects among ``objects``."""
    return sorted(
        f"{type(o).__module__}.{type(o).__qualname__}"
        for o in objects
        if type(o).__module__.startswith("flask_mcp")
    )


def server_objects_in_cycles(call: t.Callable[[], object]) -> list[str]:
    """Run ``call``; return the types of Flask-MCP's objects it left in reference cycles."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    running = set(threading.enumerate())  # the supervisor's thread, for one
    try:
        call()
        handlers_ended(running)
        gc.collect()
        found = server_objects(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found


def handlers_ended(running: set[threading.Thread], timeout: float = 10.0) -> None:
    """Wait until the handlers' threads not in ``running`` are over.

    Their last references to a call go as they end.
    """
    deadline = time.monotonic() + timeout
    while any(th.name == "mcp-handler" for th in set(threading.enumerate()) - running):
        assert time.monotonic() < deadline, "a handler's thread did not end"
        time.sleep(0.01)


def twice(action: collections.abc.Callable[[], object]) -> collections.abc.Callable[[], None]:
    def both() -> None:
        action()
        action()

    return both


@pytest.mark.parametrize("version", ERAS)
def test_a_spawned_call_leaves_no_cycle(version: str) -> None:
    with MCPTestClient(app_of(), protocol_version=version) as client:
        client.call_tool("report")  # warm: first-call caches are not garbage
        found = server_objects_in_cycles(twice(lambda: client.call_tool("report", progressToken=7)))
    assert found == []


@pytest.mark.parametrize("version", ERAS)
def test_an_inline_call_leaves_no_cycle(version: str) -> None:
    with MCPTestClient(app_of(), protocol_version=version) as client:
        client.call_tool("plain")
        found = server_objects_in_cycles(twice(lambda: client.call_tool("plain")))
    assert found == []


@pytest.mark.parametrize("version", ERAS)
def test_a_task_and_its_result_leave_no_cycle(version: str) -> None:
    with MCPTestClient(app_of(), protocol_version=version) as client:

        def run_task() -> None:
            result = client.task_result(client.call_tool_as_task("slow"), timeout=10)
            assert result["structuredContent"] == {"items": list(range(100))}

        run_task()
        found = server_objects_in_cycles(twice(run_task))
    assert found == []


app = app_of()


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_calls_served_by_gunicorn_leave_no_cycle(worker: str, mode: str) -> None:
    import anyio
    import httpx
    from mcp import Client

    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def calls(url: str) -> None:
        async with Client(url, mode=mode) as client:
            for _ in range(3):
                result = await client.call_tool("report", {}, progress_callback=on_progress)
                assert result.structured_content == {"items": list(range(100))}
                plain = await client.call_tool("plain", {})
                assert plain.structured_content == {"items": list(range(100))}

    with start_server("tests.test_request_memory:app", worker) as server:
        anyio.run(calls, server.url)  # warm: first-call caches are not garbage
        assert httpx.post(f"{server.base_url}/cycles").status_code == 200
        anyio.run(calls, server.url)
        time.sleep(0.5)  # the handlers' last steps after their answers
        found = httpx.get(f"{server.base_url}/cycles").json()["found"]
    assert progress == [1] * 6
    assert found == []
