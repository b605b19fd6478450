"""Command line: ``python -m benchmarks [options] COMMAND``.

Commands: ``throughput``, ``streams``, ``backchannel``, ``payload``,
``memory``, ``redis``, ``middleware``, ``jwt``, ``oauth`` (tokens of the built-in
authorization server; ``--backend redis://...`` for its Redis storage), ``wsgi``, ``realistic`` (the
TM Dev Lab card against FastMCP, the SDK and a bare Flask floor), ``large`` (1 KB to 4 MB
results), ``profile``, and ``all`` (every one but ``profile``). ``--full`` gives the figures for the
record; the default quick mode takes a few minutes and is meant for checking
the harness and for noisy machines.

Exit status: 1 when a target of the issue was not met, in either mode (and in
a ``--full`` run without ``--only`` or ``--no-2026``, also when a target could
not be measured); 2 when wrk is missing; 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import typing as t

from . import backchannel
from . import jwt_auth
from . import large
from . import memory
from . import middleware
from . import oauth_server
from . import payload
from . import profiling
from . import realistic
from . import redis_backend
from . import report
from . import streams
from . import throughput
from . import wrk
from . import wsgi_servers
from .options import Options

COMMANDS = (
    "throughput",
    "streams",
    "backchannel",
    "payload",
    "memory",
    "redis",
    "middleware",
    "jwt",
    "oauth",
    "wsgi",
    "realistic",
    "large",
    "profile",
    "all",
)


def parse(argv: t.Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument(
        "--full",
        action="store_true",
        help="full mode: longer runs, 3 rounds, 10,000 "
        "streams, 1,000,000 calls (default: quick mode)",
    )
    parser.add_argument("--seconds", type=float, help="length of one measured wrk run")
    parser.add_argument("--warmup", type=float, help="length of each server's warm-up run")
    parser.add_argument(
        "--rounds", type=int, help="interleaved runs per target and concurrency (median kept)"
    )
    parser.add_argument(
        "--concurrency",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        help="wrk connection counts, e.g. 1,16,64",
    )
    parser.add_argument(
        "--streams", type=int, help="idle GET streams of the stream-capacity benchmark"
    )
    parser.add_argument(
        "--heartbeat", type=float, help="FLASK_MCP_SSE_HEARTBEAT of the stream benchmark"
    )
    parser.add_argument(
        "--calls", type=int, dest="memory_calls", help="calls of the memory-flatness run"
    )
    parser.add_argument(
        "--only",
        action="append",
        help="run only targets whose label contains this "
        "(repeatable), e.g. --only flask_mcp/gevent --only floor/gevent",
    )
    parser.add_argument(
        "--proto",
        action="append",
        help="directory holding a patched copy of the "
        "flask_mcp package, measured side by side as flask_mcp-<directory name> "
        "(repeatable; profile uses the first)",
    )
    parser.add_argument("--no-2026", action="store_true", help="leave out the 2026-07-28 targets")
    parser.add_argument("--server-core", help="CPU list for the servers (default 0)")
    parser.add_argument("--client-core", help="CPU list for wrk and the Python clients (default 1)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin anything to cores")
    parser.add_argument("--json", dest="json_path", help="write every figure to this JSON file")
    parser.add_argument("--profile-seconds", type=float, default=20.0, help="py-spy sampling time")
    parser.add_argument(
        "--profile-raw", default="/tmp/flask_mcp_profile.txt", help="collapsed stacks file"
    )
    parser.add_argument("--svg", help="also write a py-spy flame graph here")
    parser.add_argument(
        "--chart",
        help="where realistic and large write their SVG chart (default: "
        "docs/_static/benchmarks/<command>.svg; 'none' for no chart)",
    )
    parser.add_argument(
        "--era",
        choices=("handshake", "2026"),
        default="handshake",
        help="protocol form of the profiled calls",
    )
    parser.add_argument(
        "--profile-target",
        choices=("flask_mcp", "floor"),
        default="flask_mcp",
        help="server to profile (with --proto, flask_mcp is the patched copy)",
    )
    parser.add_argument(
        "--backend",
        help="FLASK_MCP_BACKEND of the profiled server and of both oauth servers, "
        "e.g. redis://127.0.0.1:6379/14",
    )
    return parser.parse_args(argv)


def main(argv: t.Sequence[str] | None = None) -> int:
    """Run the chosen benchmark(s) and print their tables; return the exit status."""
    args = parse(argv)
    if not wrk.available():
        print("wrk is not installed: apt-get install -y wrk", file=sys.stderr)
        return 2
    options = Options.for_mode(
        "full" if args.full else "quick",
        seconds=args.seconds,
        warmup=args.warmup,
        rounds=args.rounds,
        concurrency=args.concurrency,
        streams=args.streams,
        heartbeat=args.heartbeat,
        memory_calls=args.memory_calls,
        proto=tuple(args.proto or ()),
        only=tuple(args.only or ()),
        json_path=args.json_path,
        server_core=args.server_core,
        client_core=args.client_core,
    )
    if args.no_pin:
        options.server_core = options.client_core = None
    options.pin_self()
    info = report.machine()
    print(
        f"# Flask-MCP benchmarks ({options.mode} mode) {info['date']}, {info['cpus']} CPUs, "
        f"Python {info['python']}, load average {info['loadavg']}"
    )
    figures: dict[str, t.Any] = {"machine": info, "mode": options.mode}
    plan: list[tuple[str, t.Callable[[], dict[str, t.Any]]]] = [
        ("throughput", lambda: throughput.run(options, with_2026=not args.no_2026)),
        ("backchannel", lambda: backchannel.run(options)),
        ("payload", lambda: payload.run(options)),
        ("streams", lambda: streams.run(options)),
        ("memory", lambda: memory.run(options)),
        ("redis", lambda: redis_backend.run(options)),
        ("middleware", lambda: middleware.run(options)),
        ("jwt", lambda: jwt_auth.run(options)),
        ("oauth", lambda: oauth_server.run(options, args.backend)),
        ("wsgi", lambda: wsgi_servers.run(options)),
        (
            "realistic",
            lambda: realistic.run(
                options,
                args.concurrency[0] if args.concurrency else realistic.CONNECTIONS,
                _chart(args.chart, realistic.CHART),
            ),
        ),
        ("large", lambda: large.run(options, _chart(args.chart, large.CHART))),
        (
            "profile",
            lambda: profiling.run(
                options,
                args.profile_seconds,
                args.profile_raw,
                args.svg,
                args.era,
                args.profile_target,
                args.backend,
            ),
        ),
    ]
    for name, step in plan:
        if args.command == name or (args.command == "all" and name != "profile"):
            figures[name] = step()
    report.save_json(options.json_path, figures)
    return verdict_status(figures, strict=args.full and not args.only and not args.no_2026)


def _chart(given: str | None, default: str) -> str | None:
    """Return where a chart goes: ``--chart``, ``None`` for ``none``, else the default."""
    if given is None:
        return default
    return None if given == "none" else given


def verdict_status(figures: t.Mapping[str, t.Any], *, strict: bool) -> int:
    """Print every verdict of the commands run; return 1 when a target failed, else 0.

    :param strict: a target that was not measured (skipped) fails too (``--full`` runs).
    """
    found = report.collect(figures)
    if found:
        print(report.banner("targets"))
        print(
            report.table(
                ("target", "wanted", "measured", "status"),
                [(v["target"], v["wanted"], v["measured"], v["status"]) for v in found],
            )
        )
    missed = report.failed(found, strict=strict)
    if missed:
        print(f"\n{len(missed)} target(s) failed: {'; '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
