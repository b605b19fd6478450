"""The Redis backend at 1, 2 and 4 gevent workers, next to the in-memory backend at 1.

Sessions live in Redis (``FLASK_MCP_BACKEND=redis://127.0.0.1:6379/14``), so
any worker serves any request. With ``--proto DIR`` each patched copy also
runs on Redis at one worker (``flask_mcp-<dir>-redis/w1``). A Redis already listening on
127.0.0.1:``MCP_BENCH_REDIS_PORT`` (default 6379) is used as is, database
``MCP_BENCH_REDIS_DB`` (default 14); otherwise a private ``redis-server`` (no
persistence) is started on that port, pinned to the server core like the
workers (``MCP_BENCH_REDIS_CORE``: another CPU list, or ``none``), and stopped
afterwards.

The targets of issue 16 (:func:`verdicts`): ``redis/w1`` serves at least 0.8x
the requests per second of ``memory/w1`` at c=16, with at most 1.25x its
server CPU per request. Redis's own CPU per request (``INFO cpu``, user +
system, over one more c=16 run of each one-worker Redis target) is reported
beside them; it counts every client of that Redis, so run it on a Redis of its
own (a free ``MCP_BENCH_REDIS_PORT``) for a clean figure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import typing as t

from . import report
from . import wrk
from .options import Options
from .prepare import prepare
from .servers import start_all
from .targets import Target
from .targets import flask_mcp
from .throughput import drive
from .throughput import field_ratio
from .throughput import results_table

PORT = int(os.environ.get("MCP_BENCH_REDIS_PORT", "6379"))
DB = int(os.environ.get("MCP_BENCH_REDIS_DB", "14"))
URL = f"redis://127.0.0.1:{PORT}/{DB}"
WORKERS = (1, 2, 4)
CONCURRENCY = (16, 64)
#: The issue's targets for redis/w1 against memory/w1 at c=16.
MIN_RPS_RATIO = 0.8
MAX_CPU_RATIO = 1.25


def _redis_up(port: int = PORT) -> bool:
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
            f"no Redis on 127.0.0.1:{PORT} and no redis-server to start "
            "(apt-get install redis-server)"
        )
    argv = [binary, "--port", str(PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
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


def redis_cpu_seconds(port: int = PORT) -> float:
    """Return the CPU seconds (user + system) the Redis on ``port`` has used so far."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"INFO cpu\r\n")
        data = b""
        while b"used_cpu_user:" not in data or not data.endswith(b"\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    fields = dict(line.split(":", 1) for line in data.decode().splitlines() if ":" in line)
    return float(fields["used_cpu_sys"]) + float(fields["used_cpu_user"])


def measure_redis_cpu(prepared: t.Sequence[t.Any], options: Options) -> dict[str, float]:
    """Run each one-worker Redis target once more at c=16; return Redis's CPU µs per request."""
    found: dict[str, float] = {}
    for item in prepared:
        if item.skipped or not item.target.label.endswith("redis/w1"):
            continue
        before = redis_cpu_seconds()
        result = item.drive(16, options.seconds, options.client_core)
        if result.requests:
            found[item.target.label] = (redis_cpu_seconds() - before) / result.requests * 1e6
    return found


def verdicts(
    results: t.Mapping[tuple[str, int], wrk.WrkResult], redis_cpu: t.Mapping[str, float]
) -> list[report.Verdict]:
    """The issue's Redis targets: redis/w1 against memory/w1 at c=16."""
    rps = field_ratio(results, "redis/w1", "memory/w1", 16, "rps")
    cpu = field_ratio(results, "redis/w1", "memory/w1", 16, "cpu_us")
    redis_us = redis_cpu.get("redis/w1")
    return [
        report.Verdict(
            "Redis backend req/s vs memory, c=16, 1 worker",
            f">= {MIN_RPS_RATIO}x",
            report.fmt_ratio(rps),
            None if rps is None else rps >= MIN_RPS_RATIO,
        ),
        report.Verdict(
            "Redis backend server CPU/request vs memory, c=16",
            f"<= {MAX_CPU_RATIO}x",
            report.fmt_ratio(cpu)
            + ("" if redis_us is None else f" (Redis itself: {redis_us:.0f} us/req)"),
            None if cpu is None else cpu <= MAX_CPU_RATIO,
        ),
    ]


def passed(summary: t.Mapping[str, t.Any]) -> bool:
    """Tell whether a summary returned by :func:`run` met every target it measured."""
    return all(v["status"] != "NOT met" for v in summary.get("verdicts", []))


def run(options: Options) -> dict[str, t.Any]:
    """Run the Redis-backend benchmark; print and return its figures."""
    print(report.banner("Redis backend: tools/call at 1, 2 and 4 gevent workers"))
    core = os.environ.get("MCP_BENCH_REDIS_CORE", options.server_core or "none")
    redis = _start_redis(None if core == "none" else core)
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
                + (
                    " with the Redis started for this run"
                    if redis is not None and core != "none"
                    else ""
                )
                + ": this shows the backend's cost, not multi-core scaling)"
            )
            redis_cpu = measure_redis_cpu(prepared, options)
            if redis_cpu:
                print()
                print(
                    report.table(
                        ("Redis's own CPU, c=16", "us/request"),
                        [(label, f"{value:.0f}") for label, value in redis_cpu.items()],
                    )
                )
            found = verdicts(results, redis_cpu)
            print()
            print(report.verdict_table(found))
            summary = report.summary(results, prepared, rows)
            summary["redis_cpu_us"] = redis_cpu
            summary["verdicts"] = [v.__dict__ | {"status": v.status} for v in found]
            return summary
        finally:
            for server in servers:
                server.stop()
    finally:
        if redis is not None:
            redis.terminate()
            redis.wait(10)
