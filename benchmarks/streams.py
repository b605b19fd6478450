"""Stream capacity: K idle sessions, each holding a GET stream, on one gevent worker.

Measures the worker's RSS per session and per session+stream, and checks that
heartbeats still flow on time: with ``FLASK_MCP_SSE_HEARTBEAT`` set small, a
sample of the streams must each receive a keep-alive comment at least every
``1.5 x heartbeat + 0.5 s``. A ``tools/call`` on a fresh session is timed
meanwhile, to show the worker still answers.

Then the same on the Redis backend (:mod:`benchmarks.streams_redis`, issue 16).
"""

from __future__ import annotations

import asyncio
import dataclasses
import resource
import statistics
import time
import typing as t
from urllib.parse import urlsplit

from . import report
from .aio_http import Connection
from .aio_http import handshake
from .client import ACCEPT
from .client import HANDSHAKE_VERSION
from .options import Options
from .servers import Server
from .targets import flask_mcp

#: Streams whose keep-alive timing is recorded.
SAMPLE = 200
#: Handshakes and stream openings in flight at once.
PARALLEL = 64


#: A byte string whose arrival on each stream is timed (see :data:`MARKERS`).
Marker = bytes


@dataclasses.dataclass
class Stream:
    """One open GET stream and what arrived on it."""

    conn: Connection
    sampled: bool
    pings: list[float] = dataclasses.field(default_factory=list)
    bytes: int = 0
    closed: bool = False
    #: When each watched marker (see :data:`MARKERS`) first arrived.
    arrivals: dict[Marker, float] = dataclasses.field(default_factory=dict)


#: Markers whose arrival on every stream is timed (the broadcast's text).
MARKERS: list[Marker] = []


def raise_fd_limit(wanted: int) -> None:
    """Raise this process's open-file limit (inherited by the servers it starts)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, max(soft, wanted)) if hard != resource.RLIM_INFINITY else max(soft, wanted)
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


async def _read_stream(stream: Stream) -> None:
    # A keep-alive comment is written as one chunk, so it arrives in one read.
    try:
        while True:
            chunk = await stream.conn.reader.read(65536)
            if not chunk:
                break
            stream.bytes += len(chunk)
            for marker in MARKERS:
                if marker in chunk and marker not in stream.arrivals:
                    stream.arrivals[marker] = time.monotonic()
            if stream.sampled:
                stream.pings.extend([time.monotonic()] * chunk.count(b": ping"))
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    stream.closed = True


async def _open_sessions(host: str, port: int, path: str, count: int) -> list[str]:
    ids: list[str] = []
    next_index = iter(range(count))

    async def worker() -> None:
        conn = await Connection.open(host, port)
        try:
            for _ in next_index:
                ids.append(await handshake(conn, path))
        finally:
            conn.close()

    await asyncio.gather(*(worker() for _ in range(min(PARALLEL, count))))
    return ids


async def _open_streams(
    host: str, port: int, path: str, ids: t.Sequence[str]
) -> tuple[list[Stream], list[asyncio.Task[None]]]:
    step = max(1, len(ids) // SAMPLE)
    streams: list[Stream] = []
    tasks: list[asyncio.Task[None]] = []
    gate = asyncio.Semaphore(PARALLEL)

    async def one(index: int, session_id: str) -> None:
        async with gate:
            conn = await Connection.open(host, port)
            await conn.send(
                "GET",
                path,
                {
                    "Accept": ACCEPT.split(", ")[1],
                    "Mcp-Session-Id": session_id,
                    "MCP-Protocol-Version": HANDSHAKE_VERSION,
                },
            )
            status, head = await conn.read_head()
            if status != 200 or not head.get("content-type", "").startswith("text/event-stream"):
                raise RuntimeError(f"GET stream: HTTP {status} {head}")
            stream = Stream(conn, sampled=index % step == 0)
            streams.append(stream)
            tasks.append(asyncio.ensure_future(_read_stream(stream)))

    await asyncio.gather(*(one(i, sid) for i, sid in enumerate(ids)))
    return streams, tasks


async def _time_calls(host: str, port: int, path: str, calls: int) -> list[float]:
    conn = await Connection.open(host, port)
    try:
        session_id = await handshake(conn, path)
        headers = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": HANDSHAKE_VERSION}
        times = []
        for i in range(calls):
            started = time.monotonic()
            status, _, body = await conn.post(
                path,
                {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
                },
                headers,
            )
            if status != 200 or b'"result"' not in body:
                raise RuntimeError(
                    f"tools/call during the stream test: HTTP {status} {body[:200]!r}"
                )
            times.append((time.monotonic() - started) * 1000)
            await asyncio.sleep(0.1)
        return times
    finally:
        conn.close()


Phase = t.Callable[[list[Stream]], t.Awaitable[dict[str, t.Any]]]


async def _measure(
    server: Server,
    count: int,
    heartbeat: float,
    settle: float = 0.0,
    then: Phase | None = None,
) -> dict[str, t.Any]:
    parts = urlsplit(server.url)
    host, port, path = t.cast(str, parts.hostname), t.cast(int, parts.port), parts.path
    await _time_calls(host, port, path, 5)  # warm the worker up
    await asyncio.sleep(1)
    rss_start = server.rss_kb()
    started = time.monotonic()
    ids = await _open_sessions(host, port, path, count)
    sessions_s = time.monotonic() - started
    await asyncio.sleep(1)
    rss_sessions = server.rss_kb()
    started = time.monotonic()
    streams, tasks = await _open_streams(host, port, path, ids)
    streams_s = time.monotonic() - started
    await asyncio.sleep(max(2.0, heartbeat))
    rss_streams = server.rss_kb()
    window_start = time.monotonic()
    window = max(5 * heartbeat, 10.0)
    call_times = await asyncio.gather(
        _time_calls(host, port, path, int(window / 0.2)), asyncio.sleep(window)
    )
    window_end = time.monotonic()
    rss_end = server.rss_kb()
    extra = {}
    if then is not None:
        await asyncio.sleep(max(0.0, started + streams_s + settle - time.monotonic()))
        extra = await then(streams)
    sampled = [s for s in streams if s.sampled]
    gaps, counts = [], []
    for stream in sampled:
        marks = (
            [window_start]
            + [p for p in stream.pings if window_start <= p <= window_end]
            + [window_end]
        )
        counts.append(len(marks) - 2)
        gaps.append(max(b - a for a, b in zip(marks, marks[1:], strict=False)))
    closed = sum(1 for s in streams if s.closed)
    for stream in streams:
        stream.conn.close()
    for task in tasks:
        task.cancel()
    limit = 1.5 * heartbeat + 0.5
    late = sum(1 for gap in gaps if gap > limit)
    return {
        "streams": count,
        "heartbeat_s": heartbeat,
        "open_sessions_s": sessions_s,
        "open_streams_s": streams_s,
        "rss_start_kb": rss_start,
        "rss_sessions_kb": rss_sessions,
        "rss_streams_kb": rss_streams,
        "rss_end_kb": rss_end,
        "peak_rss_kb": server.hwm_kb(),
        "kb_per_session": (rss_sessions - rss_start) / count,
        "kb_per_session_stream": (rss_streams - rss_start) / count,
        "sampled": len(sampled),
        "window_s": window,
        "pings_per_stream_median": statistics.median(counts) if counts else 0,
        "max_gap_s": max(gaps) if gaps else None,
        "median_gap_s": statistics.median(gaps) if gaps else None,
        "late_streams": late,
        "gap_limit_s": limit,
        "closed_streams": closed,
        "call_p50_ms": statistics.median(call_times[0]),
        "call_max_ms": max(call_times[0]),
        **extra,
    }


def run(options: Options) -> dict[str, t.Any]:
    """Run the stream-capacity benchmarks, memory then Redis; print and return their figures.

    The Redis figures are under ``"redis"``; ``"verdicts"`` holds both runs' verdicts.
    """
    from .streams_redis import run_redis

    found = run_memory(options)
    found["redis"] = run_redis(options)
    found["verdicts"] = found["verdicts"] + found["redis"]["verdicts"]
    return found


def _capacity(
    options: Options,
    env: t.Mapping[str, str],
    name: str,
    settle: float = 0.0,
    then: t.Callable[[Server], Phase] | None = None,
) -> dict[str, t.Any]:
    count = options.streams
    raise_fd_limit(count * 2 + 1000)
    spec = flask_mcp(
        "gevent",
        {
            "FLASK_MCP_SSE_HEARTBEAT": f"{options.heartbeat:g}",
            "FLASK_MCP_MAX_SESSIONS": str(count + 1000),
            # every session comes from this one address: lift the per-client quota too
            "FLASK_MCP_MAX_SESSIONS_PER_CLIENT": str(count + 1000),
            # and the stream bounds a gevent worker takes from its open files (GET streams:
            # half of MCP_MAX_STREAMS, one client a share of them)
            "FLASK_MCP_MAX_STREAMS": str(2 * count + 1000),
            "FLASK_MCP_STREAM_SHARE_PER_CLIENT": "1",
            **env,
        },
        name=name,
    )
    with Server(spec, options.server_core, worker_connections=count + 1000) as server:
        server.wait_ready()
        phase = None if then is None else then(server)
        found = asyncio.run(_measure(server, count, options.heartbeat, settle, phase))
    per = found["kb_per_session_stream"]
    found["projected_10k_mb"] = (found["rss_start_kb"] + per * 10_000) / 1024
    return found


def _rows(found: dict[str, t.Any], options: Options) -> list[tuple[str, t.Any]]:
    return [
        ("sessions + GET streams", found["streams"]),
        (
            "time to open sessions / streams",
            f"{found['open_sessions_s']:.1f} s / {found['open_streams_s']:.1f} s",
        ),
        (
            "worker RSS: start / sessions / +streams",
            f"{found['rss_start_kb'] / 1024:.1f} / "
            f"{found['rss_sessions_kb'] / 1024:.1f} / "
            f"{found['rss_streams_kb'] / 1024:.1f} MB",
        ),
        ("peak RSS (VmHWM)", f"{found['peak_rss_kb'] / 1024:.1f} MB"),
        ("per session", f"{found['kb_per_session']:.1f} KB"),
        ("per session + stream", f"{found['kb_per_session_stream']:.1f} KB"),
        ("projected RSS at 10,000", f"{found['projected_10k_mb']:.0f} MB"),
        ("heartbeat / window", f"{options.heartbeat:g} s / {found['window_s']:g} s"),
        (
            "sampled streams: pings (median), max gap",
            f"{found['sampled']}: {found['pings_per_stream_median']}, "
            f"{found['max_gap_s']:.2f} s (limit {found['gap_limit_s']:.2f} s)",
        ),
        ("late / closed streams", f"{found['late_streams']} / {found['closed_streams']}"),
        (
            "tools/call meanwhile p50 / max",
            f"{found['call_p50_ms']:.1f} / {found['call_max_ms']:.1f} ms",
        ),
    ]


def _report(found: dict[str, t.Any], rows: list[tuple[str, t.Any]], judged: list[t.Any]) -> None:
    print(report.table(("figure", "value"), rows))
    found["verdicts"] = [v.__dict__ | {"status": v.status} for v in judged]
    print()
    print(report.verdict_table(judged))


def run_memory(options: Options) -> dict[str, t.Any]:
    """Run the stream-capacity benchmark on the memory backend; print and return its figures."""
    count = options.streams
    print(report.banner(f"stream capacity: {count} idle sessions + GET streams, one gevent worker"))
    found = _capacity(options, {}, "flask_mcp/gevent")
    _report(found, _rows(found, options), verdicts(found))
    return found


def verdicts(found: dict[str, t.Any], backend: str = "") -> list[report.Verdict]:
    """Evaluate the 10,000-stream memory target and the heartbeat check.

    :param backend: named in the targets (``"Redis"``), empty for the memory backend.
    """
    per = found["kb_per_session_stream"]
    total = found["rss_streams_kb"] / 1024
    measured_10k = found["streams"] >= 10_000
    on = f" ({backend})" if backend else ""
    return [
        report.Verdict(
            f"10,000 sessions + GET streams, one gevent worker{on}",
            "< 400 MB RSS (< 40 KB each)",
            f"{total:.0f} MB, {per:.1f} KB each"
            if measured_10k
            else f"{per:.1f} KB each at {found['streams']}; "
            f"projected {found['projected_10k_mb']:.0f} MB",
            per < 40 and (total if measured_10k else found["projected_10k_mb"]) < 400,
        ),
        report.Verdict(
            f"heartbeats on time under load{on}",
            f"every sampled gap <= {found['gap_limit_s']:.1f} s",
            f"max gap {found['max_gap_s']:.2f} s, {found['late_streams']} late, "
            f"{found['closed_streams']} closed",
            found["late_streams"] == 0 and found["closed_streams"] == 0,
        ),
    ]


def met(found: dict[str, t.Any]) -> bool:
    """Tell whether every verdict of a run's figures (:func:`run`, :func:`run_redis`) is met."""
    return all(v["status"] != "NOT met" for v in found.get("verdicts", []))
