"""Large payloads: a tool whose result is 1 MB of text, against the floor returning the same."""

from __future__ import annotations

import typing as t

from . import report
from . import wrk
from .options import Options
from .prepare import prepare
from .servers import start_all
from .targets import Target
from .targets import flask_mcp
from .targets import floor
from .throughput import drive
from .throughput import results_table

SIZE = 1_000_000
BLOB = wrk.Load(tool="blob", arguments={}, expect=('"result"', "xxxxxxxxxx"), min_bytes=SIZE)
CONCURRENCY = (1, 16)


def run(options: Options) -> dict[str, t.Any]:
    """Run the large-payload benchmark, print its tables and return its figures."""
    print(report.banner("large payload: tools/call answering 1 MB"))
    specs = [flask_mcp("gevent"), floor("gevent"), flask_mcp("gthread"), floor("gthread")]
    specs = [s for s in specs if options.wanted(s.name)]
    servers = start_all(specs, options.server_core)
    try:
        prepared = [
            prepare(Target(s.spec.name, s.spec.name), s, BLOB, max(CONCURRENCY)) for s in servers
        ]
        results = drive(prepared, options, CONCURRENCY)
        print()
        print(results_table(prepared, results, CONCURRENCY))
        rows = []
        for worker in ("gevent", "gthread"):
            for connections in CONCURRENCY:
                a = results.get((f"flask_mcp/{worker}", connections))
                b = results.get((f"floor/{worker}", connections))
                if a and b:
                    rows.append(
                        (
                            f"flask_mcp/{worker} / floor/{worker}",
                            connections,
                            f"{a.mb_per_s:.0f} / {b.mb_per_s:.0f}",
                            report.fmt_ratio(report.ratio(a.rps, b.rps)),
                            report.fmt_ratio(report.ratio(a.p99_ms, b.p99_ms)),
                        )
                    )
        print()
        print(report.table(("ratio", "c", "MB/s", "req/s ratio", "p99 ratio"), rows))
        return {
            "results": {
                f"{label}@c{c}": r.as_dict() | {"mb_per_s": r.mb_per_s}
                for (label, c), r in results.items()
            },
            "peak_rss_kb": {s.spec.name: s.hwm_kb() for s in servers},
            "ratios": rows,
        }
    finally:
        for server in servers:
            server.stop()
