"""Run wrk with ``lua/tools_call.lua`` and read its one-line JSON summary."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import subprocess
import typing as t
from pathlib import Path
from urllib.parse import urlsplit

SCRIPT = Path(__file__).resolve().parent / "lua" / "tools_call.lua"
SEP = "\x1f"


@dataclasses.dataclass(frozen=True)
class Load:
    """What to send: the tool, its arguments, the checks on every response.

    :param tool: tool name.
    :param arguments: JSON arguments.
    :param expect: substrings every correct body contains.
    :param count_pattern: a substring that must occur exactly ``count_n`` times.
    :param min_bytes: smallest correct body.
    :param progress: send a ``progressToken``.
    """

    tool: str = "add"
    arguments: t.Mapping[str, t.Any] = dataclasses.field(
        default_factory=lambda: {"a": 1234567, "b": 7654321}
    )
    expect: tuple[str, ...] = ('"result"', "8888888")
    count_pattern: str | None = None
    count_n: int = 0
    min_bytes: int = 0
    progress: bool = False


ADD = Load()


@dataclasses.dataclass
class WrkResult:
    """The summary of one wrk run."""

    requests: int
    seconds: float
    bytes: int
    socket_errors: int
    timeouts: int
    bad_status: int
    bad_body: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    first_bad: str | None = None
    #: The server workers' CPU time per request, in microseconds (set by the caller).
    cpu_us: float | None = None
    #: The 95th percentile latency (scripts that print it: ``lua/card.lua``).
    p95_ms: float | None = None

    @property
    def rps(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def errors(self) -> int:
        """Every failed request: socket errors, timeouts, wrong statuses and wrong bodies."""
        return self.socket_errors + self.timeouts + self.bad_status + self.bad_body

    @property
    def mb_per_s(self) -> float:
        """Megabytes per second received."""
        return self.bytes / self.seconds / 1e6 if self.seconds else 0.0

    def as_dict(self) -> dict[str, t.Any]:
        """Return the figures as plain data, with the derived ones."""
        data = dataclasses.asdict(self)
        data.update(rps=self.rps, errors=self.errors)
        return data


def at_once(drives: t.Mapping[str, t.Callable[[], WrkResult]]) -> dict[str, WrkResult]:
    """Start every drive at the same moment, one thread each; return each label's result.

    The side-by-side benchmarks load their servers this way, so that each gets the
    same slices of whatever the machine leaves.
    """
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(drives)) as pool:
        futures = {label: pool.submit(drive) for label, drive in drives.items()}
        return {label: future.result() for label, future in futures.items()}


def available() -> bool:
    """Tell whether ``wrk`` is on ``PATH``."""
    return shutil.which("wrk") is not None


def run(
    url: str,
    *,
    connections: int,
    seconds: float,
    load: Load = ADD,
    sessions: t.Sequence[str] = (),
    era: str = "handshake",
    threads: int = 1,
    core: str | None = None,
    timeout_s: float = 10.0,
    script: Path = SCRIPT,
    env_extra: t.Mapping[str, str] | None = None,
) -> WrkResult:
    """Run wrk against ``url`` and return its summary.

    :param sessions: session ids used round-robin (none for stateless servers).
    :param era: ``handshake`` or ``2026`` (per-request form of 2026-07-28).
    :param core: the CPU list wrk is pinned to (``taskset -c``).
    :param script: the Lua script (``lua/tools_call.lua``; ``lua/card.lua`` for a mix).
    :param env_extra: more environment for the script (``BENCH_CALLS`` of a mix).
    :raises RuntimeError: wrk failed or printed no summary.
    """
    env = dict(os.environ)
    env.update(
        BENCH_SESSIONS=",".join(sessions),
        BENCH_ERA=era,
        BENCH_TOOL=load.tool,
        BENCH_ARGS=json.dumps(dict(load.arguments), separators=(",", ":")),
        BENCH_PROGRESS="1" if load.progress else "0",
        BENCH_EXPECT=SEP.join(load.expect),
        BENCH_MIN_BYTES=str(load.min_bytes),
        BENCH_PATH=urlsplit(url).path or "/",
    )
    if load.count_pattern:
        env.update(BENCH_COUNT_PATTERN=load.count_pattern, BENCH_COUNT_N=str(load.count_n))
    else:
        env.pop("BENCH_COUNT_PATTERN", None)
    env.update(env_extra or {})
    argv = [
        "wrk",
        "-t",
        str(max(1, min(threads, connections))),
        "-c",
        str(connections),
        "-d",
        f"{max(1, round(seconds))}s",
        "--timeout",
        f"{timeout_s:g}s",
        "-s",
        str(script),
        url,
    ]
    if core is not None:
        argv = ["taskset", "-c", core, *argv]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + 60)
    summary = None
    first_bad = None
    for line in done.stdout.splitlines():
        if line.startswith("BENCHJSON "):
            summary = json.loads(line[len("BENCHJSON ") :])
        elif line.startswith("BENCHFIRSTBAD "):
            first_bad = line[len("BENCHFIRSTBAD ") :]
    if summary is None:
        raise RuntimeError(
            f"wrk printed no summary (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return WrkResult(
        requests=summary["requests"],
        seconds=summary["duration_us"] / 1e6,
        bytes=summary["bytes"],
        socket_errors=summary["connect_errors"] + summary["read_errors"] + summary["write_errors"],
        timeouts=summary["timeouts"],
        bad_status=summary["bad_status"],
        bad_body=summary["bad_body"],
        p50_ms=summary["lat_p50_us"] / 1000,
        p90_ms=summary["lat_p90_us"] / 1000,
        p99_ms=summary["lat_p99_us"] / 1000,
        max_ms=summary["lat_max_us"] / 1000,
        mean_ms=summary["lat_mean_us"] / 1000,
        first_bad=first_bad,
        p95_ms=summary["lat_p95_us"] / 1000 if "lat_p95_us" in summary else None,
    )
