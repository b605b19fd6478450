"""The Redis backend at 1, 2 and 4 gevent workers, next to the in-memory backend at 1.

Sessions live in Redis (``FLASK_MCP_BACKEND=redis://127.0.0.1:6379/14``), so
any worker serves any request. With ``--proto DIR`` each patched copy also
runs on Redis at one worker (``flask_mcp-<dir>-redis/w1``). Skipped while
``flask_mcp/backends/redis.py`` does not exist. A Redis already listening on
127.0.0.1:6379 is used as is; otherwise a private ``redis-server`` (no
persistence) is started on that port, pinned to the server core like the
workers, and stopped afterwards.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import typing as t

from . import report
from . import wrk
from .options import Options
from .prepare import prepare
from .servers import ROOT
from .servers import start_all
from .targets import Target
from .targets import flask_mcp
from .throughput import drive
from .throughput import field_ratio
from .throughput import results_table

URL = "redis://127.0.0.1:6379/14"
WORKERS = (1, 2, 4)
CONCURRENCY = (16, 64)


def backend_present() -> bool:
    """Tell whether the Redis backend module exists in the repository."""
    return (ROOT / "flask_mcp" / "backends" / "redis.py").exists()


def _redis_up(port: int = 6379) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _start_redis(core: str | None) -> subprocess.Popen[bytes] | None:
    if _redis_up():
        return None
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(
            "no Redis on 127.0.0.1:6379 and no redis-server to start (apt-get install redis-server)"
        )
    argv = [binary, "--port", "6379", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    if core is not None:
        argv = ["taskset", "-c", core, *argv]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not _redis_up():
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("redis-server did not start")
        time.sleep(0.1)
    return process


def run(options: Options) -> dict[str, t.Any]:
    """Run the Redis-backend benchmark (or report it skipped); print and return its figures."""
    print(report.banner("Redis backend: tools/call at 1, 2 and 4 gevent workers"))
    if not backend_present():
        reason = "flask_mcp/backends/redis.py does not exist yet"
        print(f"skipped: {reason}")
        return {"skipped": reason}
    redis = _start_redis(options.server_core)
    specs = [flask_mcp("gevent", name="memory/w1")] + [
        flask_mcp("gevent", {"FLASK_MCP_BACKEND": URL}, name=f"redis/w{n}", workers=n)
        for n in WORKERS
    ]
    for label, directory in options.proto_labels():
        specs.append(
            flask_mcp(
                "gevent",
                {"FLASK_MCP_BACKEND": URL},
                name=f"{label}-redis/w1",
                pythonpath=(directory,),
            )
        )
    specs = [s for s in specs if options.wanted(s.name)]
    try:
        servers = start_all(specs, options.server_core)
        try:
            prepared = [
                prepare(Target(s.spec.name, s.spec.name), s, wrk.ADD, max(CONCURRENCY))
                for s in servers
            ]
            for item in prepared:
                if item.skipped:
                    print(f"  {item.target.label}: skipped ({item.skipped[:300]})")
            results = drive(prepared, options, CONCURRENCY)
            print()
            print(results_table(prepared, results, CONCURRENCY))
            rows = []
            for spec in specs[1:]:
                cells = [
                    report.fmt_ratio(field_ratio(results, spec.name, "memory/w1", c, "rps"))
                    for c in CONCURRENCY
                ]
                rows.append((f"{spec.name} / memory/w1", *cells))
            print()
            print(report.table(("ratio (req/s)", *[f"c={c}" for c in CONCURRENCY]), rows))
            print(
                "(the workers share the server core"
                + (" with the Redis started for this run" if redis is not None else "")
                + ": this shows the backend's cost, not multi-core scaling)"
            )
            return report.summary(results, prepared, rows)
        finally:
            for server in servers:
                server.stop()
    finally:
        if redis is not None:
            redis.terminate()
            redis.wait(10)
