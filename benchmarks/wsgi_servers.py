"""The same Flask-MCP app on five WSGI servers (six set-ups), side by side: JSON calls, SSE.

Every server runs ``benchmarks.apps.flask_mcp_app:app`` in one worker process
pinned to the server core; the threaded ones get 8 threads:

- ``gunicorn/gevent``: ``gunicorn -k gevent -w 1``;
- ``gunicorn/gthread``: ``gunicorn -k gthread -w 1 --threads 8``;
- ``waitress``: ``waitress.serve(app, threads=8)`` (one process);
- ``uwsgi/gevent``: uWSGI (the ``pyuwsgi`` wheel), ``--gevent 1000``, one process;
- ``uwsgi/threads``: uWSGI with ``--threads 8``, one process;
- ``granian/wsgi``: ``granian --interface wsgi --workers 1 --blocking-threads 8``.

uWSGI runs standalone: its HTTP router (``--http``, ``--http-keepalive``,
``--http-auto-chunked``) in front of the worker, both pinned to the server
core, and the CPU of both is counted. uWSGI's in-worker HTTP sockets do not
fit: ``--http-socket`` ends a streamed (SSE) response by closing the
connection, with neither length nor chunks, which wrk counts as an error, and
``--http11-socket`` kills the gevent worker (a libev assertion on a closed
descriptor).

Part one: ``tools/call`` of ``add`` (2025-11-25 session, and the 2026-07-28
per-request form) at c=16 and 64, and of ``progress(steps=10)`` with a
``progressToken`` (an SSE answer) at c=4 and 16, round-robin as in ``throughput``.

Part two, per server, each in a fresh process: can it hold a GET stream (a
keep-alive comment arrives within 3 heartbeats)? Then GET streams are opened
one by one (up to ``MAX_STREAMS``); after each, a ``tools/call`` on a fresh
connection must be answered within ``PROBE_TIMEOUT`` seconds. Reported: the
streams held, how the next GET stream was answered (Flask-MCP ends it at once
with a ``retry`` hint when its stream slots are taken: half of threads - 1 on a
threaded server whose thread count it reads), and the count of held streams at
which a new request first waited. Then again with ``MCP_MAX_STREAMS=1000``,
which lifts Flask-MCP's limit to show what the server itself holds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import sys
import time
import typing as t

from . import aio_http
from . import client
from . import report
from . import wrk
from .backchannel import PROGRESS
from .options import Options
from .prepare import prepare
from .servers import HOST
from .servers import ROOT
from .servers import Server
from .servers import ServerSpec
from .servers import _children
from .targets import FLASK_MCP_APP
from .targets import Target
from .throughput import drive
from .throughput import field_ratio
from .throughput import results_table

THREADS = 8
CONCURRENCY = (16, 64)
#: Concurrencies of the streaming call: 4 is within what every server holds; at 16, a threaded
#: server with 8 threads answers some calls 503 (it holds 7 streams).
SSE_CONCURRENCY = (4, 16)
HEARTBEAT = 1.0
#: GET streams opened at most per server in part two.
MAX_STREAMS = 64
#: Seconds a probe request (or a GET stream's headers) may take before it counts as waiting.
PROBE_TIMEOUT = 3.0

_WAITRESS = """\
import importlib, sys
import waitress
module, _, name = sys.argv[1].partition(":")
app = getattr(importlib.import_module(module), name)
waitress.serve(app, host=sys.argv[2], port=int(sys.argv[3]), threads=int(sys.argv[4]),
               backlog=4096, connection_limit=4096, channel_timeout=120, _quiet=True)
"""

_UWSGI_APP = """\
import importlib
module, _, name = {app!r}.partition(":")
application = getattr(importlib.import_module(module), name)
"""

#: (label, server kind, the Python module it needs).
SERVERS = (
    ("gunicorn/gevent", "gunicorn-gevent", "gunicorn"),
    ("gunicorn/gthread", "gunicorn-gthread", "gunicorn"),
    ("waitress", "waitress", "waitress"),
    ("uwsgi/gevent", "uwsgi-gevent", "pyuwsgi"),
    ("uwsgi/threads", "uwsgi-threads", "pyuwsgi"),
    ("granian/wsgi", "granian", "granian"),
)


@dataclasses.dataclass(frozen=True)
class WsgiSpec(ServerSpec):
    """A :class:`ServerSpec` run by gunicorn, waitress, uWSGI or Granian (``server``)."""

    server: str = "gunicorn-gevent"

    @property
    def forks(self) -> bool:
        """Tell whether requests are served by child processes of the started one."""
        return self.server != "waitress"

    def argv(self, port: int, worker_connections: int) -> list[str]:
        """Return the command line serving ``app`` on ``port``."""
        if self.server.startswith("gunicorn"):
            return super().argv(port, worker_connections)
        if self.server == "waitress":
            return [sys.executable, "-c", _WAITRESS, self.app, HOST, str(port), str(self.threads)]
        if self.server == "granian":
            return [
                sys.executable, "-m", "granian", "--interface", "wsgi",
                "--host", HOST, "--port", str(port), "--http", "1",
                "--workers", str(self.workers), "--blocking-threads", str(self.threads),
                "--backlog", "4096", "--no-ws", "--log-level", "warning", "--working-dir",
                str(ROOT), self.app,
            ]  # fmt: skip
        # uWSGI's HTTP router (--http) in front of the worker: keep-alive, and a streamed
        # response chunked. Its own --http-socket ends such a response by closing the connection
        # (wrk counts that as an error), and --http11-socket kills gevent workers.
        http = ["--http", f"{HOST}:{port}", "--http-keepalive", "--http-auto-chunked",
                "--http-timeout", "120"]  # fmt: skip
        argv = [
            sys.executable, "-c", "import sys, pyuwsgi; sys.exit(pyuwsgi.run())", *http,
            "--master", "--die-on-term", "--need-app", "--single-interpreter",
            "--processes", str(self.workers), "--listen", "1024",
            "--eval", _UWSGI_APP.format(app=self.app),
            "--pythonpath", str(ROOT), "--disable-logging", "--buffer-size", "65535",
        ]  # fmt: skip
        if self.server == "uwsgi-threads":
            return [*argv, "--threads", str(self.threads)]
        return [*argv, "--gevent", str(worker_connections), "--gevent-early-monkey-patch"]


class WsgiServer(Server):
    """A running server whose workers may be children of the started process."""

    spec: WsgiSpec

    def worker_pids(self) -> list[int]:
        """Return the serving processes: the children (gunicorn, uWSGI, Granian) or itself."""
        if not self.spec.forks:
            return [self.process.pid]
        return _children(self.process.pid)


def specs(options: Options) -> list[WsgiSpec]:
    """Return the servers to compare: those installed and kept by ``--only``."""
    found = []
    for label, server, module in SERVERS:
        if importlib.util.find_spec(module) is None or not options.wanted(label):
            continue
        worker = "gthread" if server == "gunicorn-gthread" else "gevent"
        found.append(
            WsgiSpec(
                name=label,
                kind="flask_mcp",
                runner="gunicorn",
                app=FLASK_MCP_APP,
                worker=worker,
                threads=THREADS,
                env={"FLASK_MCP_SSE_HEARTBEAT": str(HEARTBEAT)},
                server=server,
            )
        )
    return found


def start(items: t.Sequence[WsgiSpec], core: str | None) -> list[WsgiServer]:
    """Start the servers and wait until each answers a handshake; stop them all on failure."""
    servers = [WsgiServer(spec, core) for spec in items]
    try:
        for server in servers:
            server.wait_ready()
            deadline = time.monotonic() + 30
            while True:  # gunicorn/uWSGI/Granian bind before the worker imports the app
                try:
                    client.initialize(server.url)
                    break
                except (OSError, RuntimeError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers


# -- part two: streams -------------------------------------------------------------------------


async def _open_stream(port: int) -> tuple[aio_http.Connection, str]:
    """Open a session and its GET stream; return the connection and what came of it.

    ``held`` (an event stream that stays open), ``ended at once`` (an event
    stream that closes with a ``retry`` hint: Flask-MCP's answer when its
    stream slots are taken), ``HTTP <status>``, ``waits`` (no answer within
    ``PROBE_TIMEOUT``) or ``closed`` (the server closed the connection).
    """
    conn = await aio_http.Connection.open(HOST, port)
    try:
        session = await asyncio.wait_for(aio_http.handshake(conn, "/mcp"), PROBE_TIMEOUT)
        headers = {
            "Accept": "text/event-stream",
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": client.HANDSHAKE_VERSION,
        }
        await conn.send("GET", "/mcp", headers)
        status, head = await asyncio.wait_for(conn.read_head(), PROBE_TIMEOUT)
    except TimeoutError:
        return conn, "waits"
    except (OSError, asyncio.IncompleteReadError, RuntimeError):
        return conn, "closed"
    if status != 200 or not head.get("content-type", "").startswith("text/event-stream"):
        return conn, f"HTTP {status}"
    try:
        await asyncio.wait_for(conn.read_body(head), 0.5)
    except TimeoutError:
        return conn, "held"
    except (OSError, asyncio.IncompleteReadError):
        pass
    return conn, "ended at once"


def _probe(url: str) -> float | None:
    """Time one ``tools/call`` on a new session and connection; ``None`` when it waited."""
    started = time.perf_counter()
    try:
        session = client.initialize(url)
        reply = client.call_tool(url, "add", {"a": 1234567, "b": 7654321}, session_id=session)
    except (OSError, RuntimeError):
        return None
    if client.check_call(reply, 1, wrk.ADD.expect) is not None:
        return None
    elapsed = time.perf_counter() - started
    return elapsed if elapsed < PROBE_TIMEOUT else None


def _probe_in_time(url: str) -> float | None:
    """:func:`_probe` with a socket timeout of ``PROBE_TIMEOUT``."""
    import socket

    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(PROBE_TIMEOUT)
    try:
        return _probe(url)
    finally:
        socket.setdefaulttimeout(previous)


async def _heartbeat(conn: aio_http.Connection) -> bool:
    """Tell whether a keep-alive comment (or any event) arrives within 3 heartbeats."""
    try:
        data = await asyncio.wait_for(conn.reader.read(256), HEARTBEAT * 3 + 1)
    except TimeoutError:
        return False
    return bool(data)


async def _streams(server: WsgiServer) -> dict[str, t.Any]:
    """Open GET streams one by one on ``server``; see the module's docstring."""
    held: list[aio_http.Connection] = []
    found: dict[str, t.Any] = {"get_stream": "no", "held": 0, "next": None, "waits_after": None}
    try:
        for count in range(1, MAX_STREAMS + 1):
            conn, outcome = await _open_stream(server.port)
            if outcome == "held":
                held.append(conn)
                if count == 1:
                    found["get_stream"] = "yes" if await _heartbeat(conn) else "no heartbeat"
            else:
                conn.close()
                found["next"] = outcome
                if count == 1:
                    found["get_stream"] = outcome
            found["held"] = len(held)
            probe = await asyncio.get_running_loop().run_in_executor(
                None, _probe_in_time, server.url
            )
            if probe is None:
                found["waits_after"] = len(held)
                break
            if found["next"] is not None:
                break
    finally:
        for conn in held:
            conn.close()
    return found


def stream_table(results: dict[str, dict[str, t.Any]]) -> str:
    """Return the table of part two."""
    rows = []
    for label, found in results.items():
        waits = found["waits_after"]
        rows.append(
            (
                label,
                found["get_stream"],
                f"{found['held']} (all tried)" if found["held"] == MAX_STREAMS else found["held"],
                found["next"] or "–",
                "no" if waits is None else f"with {waits} streams open",
            )
        )
    headers = ("server", "GET stream", "streams held", "next GET stream", "a new tools/call waits")
    return report.table(headers, rows)


def _with_limit(spec: WsgiSpec, limit: int) -> WsgiSpec:
    return dataclasses.replace(
        spec,
        name=f"{spec.name} MAX_STREAMS={limit}",
        env={**spec.env, "FLASK_MCP_MAX_STREAMS": str(limit)},
    )


def stream_capacity(specs: t.Sequence[WsgiSpec], core: str | None) -> dict[str, t.Any]:
    """Part two on each server as configured, then with Flask-MCP's stream limit lifted.

    ``MCP_MAX_STREAMS=1000`` shows what the server itself holds: a server that
    gives each stream a thread stops answering once its threads are taken.
    Granian, whose thread count Flask-MCP cannot read, runs a third time with
    ``MCP_MAX_STREAMS`` at its threads - 1, the setting its users need.
    """
    chosen = [*specs, *(_with_limit(spec, 1000) for spec in specs)]
    chosen += [_with_limit(spec, THREADS - 1) for spec in specs if spec.server == "granian"]
    found: dict[str, t.Any] = {}
    for spec in chosen:
        print(f"  streams: {spec.name} ...", flush=True)
        (server,) = start([spec], core)
        try:
            found[spec.name] = asyncio.run(_streams(server))
        finally:
            server.stop()
    return found


def throughput(chosen: t.Sequence[WsgiSpec], options: Options) -> dict[str, t.Any]:
    """Part one: ``add`` in both eras and ``progress``, every server side by side."""
    servers = start(chosen, options.server_core)
    try:
        plan: list[tuple[Target, wrk.Load]] = []
        for spec in chosen:
            plan.append((Target(spec.name, spec.name), wrk.ADD))
            plan.append((Target(f"{spec.name}@2026", spec.name, "2026"), wrk.ADD))
            plan.append((Target(f"{spec.name} progress", spec.name), PROGRESS))
        by_name = {server.spec.name: server for server in servers}
        prepared = [
            prepare(target, by_name[target.server], load, max(CONCURRENCY)) for target, load in plan
        ]
        for item in prepared:
            if item.skipped:
                print(f"  {item.target.label}: skipped ({item.skipped[:200]})")
        json_items = [item for item in prepared if item.load is wrk.ADD]
        sse_items = [item for item in prepared if item.load is PROGRESS]
        results = drive(json_items, options, CONCURRENCY)
        results |= drive(sse_items, options, SSE_CONCURRENCY)
        print()
        print(results_table(json_items, results, CONCURRENCY))
        print()
        print(results_table(sse_items, results, SSE_CONCURRENCY))
        rows = ratio_rows(chosen, results)
        print()
        print(report.table(RATIO_HEADERS, rows))
        labels = {item.target.label for item in json_items}
        bad = sorted({label for (label, _), r in results.items() if label in labels and r.errors})
        bad += [item.target.label for item in json_items if item.skipped]
        return report.summary(results, prepared, rows) | {"json_failures": bad}
    finally:
        for server in servers:
            server.stop()


BASE = "gunicorn/gevent"
RATIO_HEADERS = (
    f"vs {BASE}",
    "req/s c=16",
    "req/s c=64",
    "@2026 req/s c=16",
    "CPU/req c=16 (higher: cheaper)",
    "progress req/s c=4",
)


def ratio_rows(
    chosen: t.Sequence[WsgiSpec], results: dict[tuple[str, int], wrk.WrkResult]
) -> list[tuple[str, ...]]:
    """Return each server's figures over ``gunicorn/gevent``'s, measured in the same run."""
    rows = []
    for spec in chosen:
        cells = [
            report.fmt_ratio(field_ratio(results, top, bottom, c, field))
            for top, bottom, c, field in (
                (spec.name, BASE, 16, "rps"),
                (spec.name, BASE, 64, "rps"),
                (f"{spec.name}@2026", f"{BASE}@2026", 16, "rps"),
                (BASE, spec.name, 16, "cpu_us"),
                (f"{spec.name} progress", f"{BASE} progress", 4, "rps"),
            )
        ]
        rows.append((spec.name, *cells))
    return rows


def run(options: Options) -> dict[str, t.Any]:
    """Run both parts; print the tables and return the figures and the verdict."""
    print(report.banner("WSGI servers: the same Flask-MCP app, one worker each, side by side"))
    chosen = specs(options)
    missing = [label for label, _, module in SERVERS if importlib.util.find_spec(module) is None]
    if missing:
        print(f"  not installed (pip install -e '.[bench]'): {', '.join(missing)}")
    found = throughput(chosen, options)
    streams = stream_capacity(chosen, options.server_core)
    print()
    print(stream_table(streams))
    bad = found.pop("json_failures")
    verdict = report.Verdict(
        "every WSGI server answers JSON tools/call correctly (both eras)",
        f"0 errors on all {len(SERVERS)} servers",
        f"errors on {', '.join(bad)}" if bad else f"0 errors on {len(chosen)}",
        False if bad else (True if len(chosen) == len(SERVERS) else None),
    )
    print()
    print(report.verdict_table([verdict]))
    return found | {
        "streams": streams,
        "versions": versions(),
        "verdicts": report.records([verdict]),
    }


def versions() -> dict[str, str]:
    """Return the installed versions of the servers, for the record."""
    from importlib import metadata

    found = {}
    for name in ("gunicorn", "gevent", "waitress", "pyuwsgi", "granian"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


__all__ = ["run"]
