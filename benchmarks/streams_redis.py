"""Stream capacity on the Redis backend (issue 16): K idle sessions + GET streams, one worker.

The streams share the worker's few Redis connections (the per-process stream
reader). Besides the figures of :mod:`benchmarks.streams` (RSS, heartbeat
lateness), it counts the worker's Redis connections (its established TCP
connections to Redis's port, from ``/proc``) while the streams open, at rest
and during a broadcast, and times one ``MCP.broadcast``, sent by another
process, until every stream received it. Redis: ``BENCH_REDIS_URL`` (default
``redis://127.0.0.1:6379/14``) under a fresh key prefix whose keys are deleted
afterwards; a private ``redis-server`` is started when nothing answers on
127.0.0.1:6379.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import subprocess
import sys
import threading
import time
import typing as t
import uuid
from urllib.parse import urlsplit

from . import report
from .options import Options
from .redis_backend import _start_redis
from .servers import ROOT
from .servers import Server
from .streams import MARKERS
from .streams import Phase
from .streams import Stream
from .streams import _capacity
from .streams import _report
from .streams import _rows
from .streams import verdicts

#: The Redis of :func:`run_redis`.
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
#: Targets of issue 16, per worker, at 10,000 streams.
MAX_REDIS_CONNECTIONS = 8
MAX_BROADCAST_S = 2.0


def redis_connections(pid: int, port: int) -> int:
    """Count the established TCP connections of process ``pid`` to ``port`` (0 if gone)."""
    inodes = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as handle:
                lines = handle.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port and inode in inodes:
                count += 1
    return count


class _Sampler:
    """Counts a worker's Redis connections every :attr:`INTERVAL` seconds in a thread."""

    #: A scan of 10,000 descriptors holds the client's GIL ~150 ms: not too often.
    INTERVAL = 2.0

    def __init__(self, pid: int, port: int) -> None:
        self.pid, self.port = pid, port
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            self.samples.append((time.monotonic(), redis_connections(self.pid, self.port)))

    def peak(self, start: float, end: float) -> int:
        return max((n for at, n in self.samples if start <= at <= end), default=0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class _CollectorPauses:
    """Sum the pauses of this process's garbage collector while the block runs."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._since = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._since = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._since

    def __enter__(self) -> _CollectorPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


class _Broadcaster:
    """Another process calling ``MCP.broadcast`` on the same Redis (see :func:`_broadcast`)."""

    def __init__(self, backend: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.streams_redis", "broadcast", backend],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        if self.stdout.readline().strip() != "ready":
            raise RuntimeError("the broadcasting process did not start")

    def send(self, text: str) -> float:
        """Broadcast ``text``; return the seconds ``MCP.broadcast`` took in that process."""
        self.stdin.write(text + "\n")
        self.stdin.flush()
        return float(self.stdout.readline())

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(10)


def _broadcast(backend: str) -> None:
    """Serve :class:`_Broadcaster`: one ``MCP.broadcast`` per line of stdin."""
    from flask import Flask

    from flask_mcp import MCP

    app = Flask("bench-broadcaster")
    app.config["MCP_BACKEND"] = backend
    mcp = MCP(name="bench-broadcaster", version="1.0.0")
    mcp.init_app(app)
    print("ready", flush=True)
    for line in sys.stdin:
        started = time.perf_counter()
        mcp.broadcast("notifications/message", {"level": "info", "data": line.strip()}, app=app)
        print(f"{time.perf_counter() - started:.6f}", flush=True)


def _broadcast_phase(broadcaster: _Broadcaster, port: int) -> t.Callable[[Server], Phase]:
    def bind(server: Server) -> Phase:
        pid = server.worker_pids()[0]
        sampler = _Sampler(pid, port)

        async def phase(streams: list[Stream]) -> dict[str, t.Any]:
            rest_at = time.monotonic()
            at_rest = redis_connections(pid, port)
            # No scan while the clock runs: one takes ~150 ms of this process's GIL with
            # 10,000 streams open, which delayed the reading of their events by a second.
            # The count after the broadcast still sees every connection opened during it:
            # the pool gives an idle connection back only after 30 s.
            sampler.stop()
            marker = f"bench-{uuid.uuid4().hex}"
            MARKERS.append(marker.encode())
            paused = _CollectorPauses()
            started = time.monotonic()
            with paused:
                sent = await asyncio.to_thread(broadcaster.send, marker)
                while time.monotonic() - started < 30 and not all(
                    marker.encode() in s.arrivals for s in streams
                ):
                    await asyncio.sleep(0.02)
            after = redis_connections(pid, port)
            got = [
                s.arrivals[marker.encode()] - started
                for s in streams
                if marker.encode() in s.arrivals
            ]
            return {
                "redis_connections_opening_peak": sampler.peak(0, rest_at),
                "redis_connections_rest": at_rest,
                "redis_connections_broadcast": after,
                "broadcast_send_s": sent,
                "client_collector_s": paused.seconds,
                "broadcast_received": len(got),
                "broadcast_p50_s": statistics.median(got) if got else None,
                "broadcast_all_s": max(got) if len(got) == len(streams) else None,
                # what the streams waited once the sender had written every event
                "broadcast_after_send_s": max(got) - sent if len(got) == len(streams) else None,
            }

        return phase

    return bind


def run_redis(options: Options) -> dict[str, t.Any]:
    """Run the stream-capacity benchmark on the Redis backend; print and return its figures.

    Its verdicts (:func:`redis_verdicts`) are under ``"verdicts"``; :func:`met` tells
    whether all of them are met.
    """
    count = options.streams
    print(report.banner(f"stream capacity on Redis: {count} idle sessions + GET streams"))
    prefix = f"bench-streams-{uuid.uuid4().hex[:8]}:"
    backend = f"{REDIS_URL}{'&' if '?' in REDIS_URL else '?'}prefix={prefix}"
    port = urlsplit(REDIS_URL).port or 6379
    private = _start_redis(options.server_core) if port == 6379 else None
    try:
        broadcaster = _Broadcaster(backend)
        try:
            # Streams hold no connection; the requests that opened them did, and the pool
            # gives those back after its idle timeout (30 s) at the next beat (5 s).
            found = _capacity(
                options,
                {"FLASK_MCP_BACKEND": backend},
                "flask_mcp/gevent+redis",
                settle=36.0,
                then=_broadcast_phase(broadcaster, port),
            )
        finally:
            broadcaster.close()
    finally:
        _delete_keys(REDIS_URL, prefix)
        if private is not None:
            private.terminate()
            private.wait(10)
    all_s = found["broadcast_all_s"]
    rows = _rows(found, options) + [
        (
            "Redis connections: opening peak / at rest / broadcast",
            f"{found['redis_connections_opening_peak']} / {found['redis_connections_rest']} / "
            f"{found['redis_connections_broadcast']}",
        ),
        (
            "broadcast: sender's MCP.broadcast / p50 / all streams (after the sender)",
            f"{found['broadcast_send_s']:.2f} s / {found['broadcast_p50_s'] or 0:.2f} s / "
            + (
                f"{all_s:.2f} s ({found['broadcast_after_send_s']:.2f} s)"
                if all_s is not None
                else f"{found['broadcast_received']} got it"
            ),
        ),
        (
            "the client's garbage collector meanwhile (pauses the clock)",
            f"{found['client_collector_s']:.2f} s",
        ),
    ]
    _report(found, rows, redis_verdicts(found))
    return found


def redis_verdicts(found: dict[str, t.Any]) -> list[report.Verdict]:
    """Evaluate the Redis variant against the targets of issue 16."""
    count, all_s = found["streams"], found["broadcast_all_s"]
    return [
        *verdicts(found, "Redis"),
        report.Verdict(
            f"Redis connections of the worker holding {count} streams",
            f"<= {MAX_REDIS_CONNECTIONS} at rest and during a broadcast",
            f"{found['redis_connections_rest']} at rest, "
            f"{found['redis_connections_broadcast']} broadcasting "
            f"({found['redis_connections_opening_peak']} while opening)",
            max(found["redis_connections_rest"], found["redis_connections_broadcast"])
            <= MAX_REDIS_CONNECTIONS,
        ),
        report.Verdict(
            f"MCP.broadcast reaches all {count} streams",
            f"every stream within {MAX_BROADCAST_S:g} s",
            f"all in {all_s:.2f} s"
            if all_s is not None
            else f"{found['broadcast_received']} of {count} in 30 s",
            all_s is not None and all_s <= MAX_BROADCAST_S,
        ),
    ]


def _delete_keys(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        batch = list(client.scan_iter(f"{prefix}*", count=1000))
        for i in range(0, len(batch), 1000):
            client.delete(*batch[i : i + 1000])
    finally:
        client.close()


if __name__ == "__main__" and sys.argv[1:2] == ["broadcast"]:
    _broadcast(sys.argv[2])
