"""The back-channel: a tool sending 10 progress notifications before its result (SSE responses).

Flask-MCP only (the floor has no back-channel). Each call carries a
``progressToken``, so the answer is an SSE stream of 10
``notifications/progress`` events and the result; the wrk script counts the
notifications in every body. The plain ``add`` call on the same server is
measured in the same round-robin, for the cost of streaming.
"""

from __future__ import annotations

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

STEPS = 10
PROGRESS = wrk.Load(
    tool="progress",
    arguments={"steps": STEPS},
    expect=('"result"', f"done {STEPS}"),
    count_pattern='"notifications/progress"',
    count_n=STEPS,
    progress=True,
)


def run(options: Options) -> dict[str, t.Any]:
    """Run the back-channel benchmark, print its tables and return its figures."""
    print(report.banner(f"back-channel: tools/call with {STEPS} progress notifications (SSE)"))
    # A gthread worker holds a thread per open stream; with fewer threads than streaming
    # calls in flight it answers the extra ones as plain JSON, their progress dropped (its
    # documented overload behaviour, which the wrk script counts as bad bodies). Measured
    # here is what streaming costs, so it gets a thread per connection and some to spare.
    threads = max(options.concurrency) + 8
    specs = [flask_mcp("gevent"), flask_mcp("gthread", threads=threads)]
    plan = []
    for spec in specs:
        plan.append((Target(f"{spec.name} progress x{STEPS}", spec.name), PROGRESS))
        plan.append((Target(f"{spec.name} add (JSON)", spec.name), wrk.ADD))
    plan.append(
        (Target(f"flask_mcp/gevent@2026 progress x{STEPS}", "flask_mcp/gevent", "2026"), PROGRESS)
    )
    plan = [(target, load) for target, load in plan if options.wanted(target.label)]
    servers = start_all(
        [s for s in specs if any(t.server == s.name for t, _ in plan)], options.server_core
    )
    try:
        by_name = {server.spec.name: server for server in servers}
        sessions = max(options.concurrency)
        prepared = [
            prepare(target, by_name[target.server], load, sessions) for target, load in plan
        ]
        results = drive(prepared, options)
        print()
        print(results_table(prepared, results, options.concurrency))
        rows = []
        for spec in specs:
            top, bottom = f"{spec.name} progress x{STEPS}", f"{spec.name} add (JSON)"
            cells = [
                report.fmt_ratio(field_ratio(results, top, bottom, c, "rps"))
                for c in options.concurrency
            ]
            rows.append((f"{spec.name}: progress x{STEPS} / add", *cells))
        print()
        print(report.table(("ratio (req/s)", *[f"c={c}" for c in options.concurrency]), rows))
        return report.summary(results, prepared, rows)
    finally:
        for server in servers:
            server.stop()
