"""Memory flatness: N ``tools/call`` on one gevent worker; RSS after the warm-up vs at the end.

wrk runs in chunks; the worker's RSS is read between chunks, while it is
idle, so every sample is taken in the same state. The first chunk (10% of
the calls) is the warm-up: caches, pools and allocator arenas fill there.
"""

from __future__ import annotations

import typing as t

from . import report
from . import wrk
from .options import Options
from .prepare import prepare
from .servers import Server
from .targets import Target
from .targets import flask_mcp

CONNECTIONS = 16
CHUNK_SECONDS = 10.0


def run(options: Options) -> dict[str, t.Any]:
    """Run the memory-flatness benchmark, print its table and return its figures."""
    total = options.memory_calls
    print(
        report.banner(
            f"memory flatness: {total:,} tools/call on flask_mcp/gevent (c={CONNECTIONS})"
        )
    )
    spec = flask_mcp("gevent")
    with Server(spec, options.server_core) as server:
        server.wait_ready()
        item = prepare(Target(spec.name, spec.name), server, wrk.ADD, CONNECTIONS)
        done, errors = 0, 0
        samples: list[tuple[int, int, float]] = []
        warmup = max(total // 10, 1)
        start_kb = None
        while done < total:
            goal = warmup if start_kb is None else total
            rate = max(samples[-1][2], 200.0) if samples else 1000.0
            seconds = min(CHUNK_SECONDS, max(1.0, (goal - done) / rate))
            result = wrk.run(
                server.url,
                connections=CONNECTIONS,
                seconds=seconds,
                sessions=item.sessions,
                core=options.client_core,
            )
            done += result.requests
            errors += result.errors
            rss = server.rss_kb()
            samples.append((done, rss, result.rps))
            if start_kb is None and done >= warmup:
                start_kb = rss
            print(
                f"  {done:>10,} calls  RSS {rss / 1024:7.2f} MB  {result.rps:7.0f} req/s  "
                f"errors {errors}",
                flush=True,
            )
        assert start_kb is not None
        end_kb = samples[-1][1]
        growth = (end_kb - start_kb) / start_kb * 100
        found = {
            "calls": done,
            "errors": errors,
            "rss_start_kb": start_kb,
            "rss_end_kb": end_kb,
            "rss_max_kb": max(s[1] for s in samples),
            "peak_rss_kb": server.hwm_kb(),
            "growth_percent": growth,
            "samples": samples,
        }
    max_kb = t.cast(int, found["rss_max_kb"])
    print()
    print(
        report.table(
            ("calls", "errors", "RSS after warm-up", "RSS at end", "max", "growth"),
            [
                (
                    f"{done:,}",
                    errors,
                    f"{start_kb / 1024:.2f} MB",
                    f"{end_kb / 1024:.2f} MB",
                    f"{max_kb / 1024:.2f} MB",
                    f"{growth:+.2f}%",
                )
            ],
        )
    )
    verdict = report.Verdict(
        f"memory flat over {done:,} calls",
        "within 5%",
        f"{growth:+.2f}% ({errors} errors)",
        abs(growth) <= 5 and errors == 0,
    )
    found["verdicts"] = report.records([verdict])
    print()
    print(report.verdict_table([verdict]))
    return found
