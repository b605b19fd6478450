"""Flask-MCP and the floor driven at the same time, on one core: ratios a noisy machine keeps.

``python -m benchmarks.side_by_side [--era 2026] [--concurrency 16] [--proto DIR]
[--fair-floor] [--compare floor|oauth|card]``

With ``--era 2026`` (the default) it judges issue 16's target for the
2026-07-28 form at c=16 (at least 0.9x the floor driven with the same request,
on the median of the rounds) and exits 1 when it is missed.

``--fair-floor`` adds ``floor-fair/gevent`` (:mod:`benchmarks.apps.floor_app` with
``BENCH_FLOOR_FAIR=1``): the floor ending each call as Flask-MCP's inline calls
end, giving the other greenlets a turn when the same one would serve a second
request in one turn of the loop. The bare floor does not, which is cheaper and
starves the other connections (its p99 at c=64 is ten times Flask-MCP's); the
ratio to the fair floor is Flask-MCP's own cost with fairness on both sides.

``--compare oauth [--backend redis://...]`` drives the same way the two servers of
``python -m benchmarks oauth`` (:mod:`benchmarks.oauth_server`): tools/call with the
built-in authorization server's tokens against the same app without authorization,
and judges issue 30's target (at least 0.9x) on the median of the rounds.

``--compare card`` drives the realistic card's one-core servers this way
(:func:`benchmarks.realistic.side_by_side`: Flask-MCP, its bare-Flask floor, FastMCP
and the SDK in their JSON modes, 50 connections each), mix by mix, and judges issue
34's req/s targets (4x FastMCP's fastest mode, 1.5x the SDK's) on the medians; its
p99 targets need a server alone and stay with ``python -m benchmarks realistic``.

:mod:`benchmarks.throughput` drives one server at a time, so a burst of other
work on the machine lands on one target and not the other: on a shared 2-vCPU
VM, runs a minute apart differed by 30% in req/s and in CPU per request.
Here every server runs pinned to the server core and all are loaded at once,
one wrk each on the client core: the kernel shares the core between them,
each gets the same slices of whatever the machine leaves, and a server's
req/s over the floor's is the inverse of its CPU cost per request over the
floor's (both columns are printed; they agree when the core was saturated).
Repeated runs of this ratio spread by about ±2%, where sequential runs spread
by ±30%.

What it cannot show: the latencies of a server alone (they include the
others' slices), and effects of scheduling between greenlets of one server
that depend on having the core to itself. It is the check of a cost, not a
replacement for the record run.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import typing as t

from . import oauth_server
from . import realistic
from . import report
from . import wrk
from .options import Options
from .prepare import Prepared
from .prepare import prepare
from .servers import Server
from .servers import start_all
from .targets import Target
from .targets import flask_mcp
from .targets import floor
from .throughput import STATELESS_TARGET

#: The label of the row every other is divided by.
FLOOR = "floor/gevent"
#: The label of the Flask-MCP row.
SERVED = "flask_mcp/gevent"
#: The label of the floor that yields as Flask-MCP's inline calls do (``--fair-floor``).
FAIR_FLOOR = "floor-fair/gevent"


def _specs(options: Options, fair_floor: bool = False) -> list[t.Any]:
    specs = [flask_mcp("gevent"), floor("gevent")]
    if fair_floor:
        specs.append(floor("gevent", fair=True))
    for label, directory in options.proto_labels():
        specs.append(flask_mcp("gevent", name=f"{label}/gevent", pythonpath=(directory,)))
    return specs


def _round(
    prepared: t.Sequence[Prepared], connections: int, options: Options
) -> dict[str, wrk.WrkResult]:
    """Load every target at once for ``options.seconds``; return each one's result."""
    before = {item.target.label: item.server.cpu_seconds() for item in prepared}
    results = wrk.at_once(
        {
            item.target.label: functools.partial(
                item.drive, connections, options.seconds, options.client_core
            )
            for item in prepared
        }
    )
    for item in prepared:
        result = results[item.target.label]
        if result.requests:
            used = item.server.cpu_seconds() - before[item.target.label]
            result.cpu_us = used / result.requests * 1e6
    return results


def run(
    options: Options,
    era: str,
    repeats: int,
    specs: t.Sequence[t.Any] | None = None,
    bottom: str = FLOOR,
    setup: t.Callable[[t.Sequence[Server]], None] | None = None,
) -> dict[str, tuple[float, float]]:
    """Run ``repeats`` simultaneous rounds per concurrency; print and return the median ratios.

    :param specs: the servers (default: Flask-MCP, the floor and each ``--proto`` copy).
    :param bottom: the label of the row every other is divided by.
    :param setup: called with the started servers before the first request.
    :returns: ``{"label@c": (req/s ratio, CPU ratio)}`` against ``bottom``, each
        the median over the rounds (CPU ratio: the bottom's CPU per request over
        the row's, so that higher is better in both).
    """
    servers = start_all(_specs(options) if specs is None else specs, options.server_core)
    medians: dict[str, tuple[float, float]] = {}
    try:
        if setup is not None:
            setup(servers)
        prepared = [
            prepare(Target(server.spec.name, server.spec.name, era), server, wrk.ADD, 64)
            for server in servers
        ]
        for item in prepared:
            if item.skipped:
                raise RuntimeError(f"{item.target.label}: {item.skipped}")
        for item in prepared:
            item.drive(16, options.warmup, options.client_core)
        for connections in options.concurrency:
            ratios: dict[str, list[tuple[float, float]]] = {}
            for _ in range(repeats):
                results = _round(prepared, connections, options)
                errors = {label: r.errors for label, r in results.items() if r.errors}
                if errors:
                    raise RuntimeError(f"failed requests: {errors}")
                base = results[bottom]
                cells = []
                for label, result in results.items():
                    if label == bottom:
                        continue
                    pair = (result.rps / base.rps, (base.cpu_us or 0) / (result.cpu_us or 1))
                    ratios.setdefault(label, []).append(pair)
                    cells.append(f"{label} {pair[0]:.3f} (CPU {pair[1]:.3f})")
                print(
                    f"  c={connections} {bottom} {base.rps:6.0f} req/s  " + "  ".join(cells),
                    flush=True,
                )
            for label, pairs in ratios.items():
                medians[f"{label}@{connections}"] = (
                    statistics.median(p[0] for p in pairs),
                    statistics.median(p[1] for p in pairs),
                )
    finally:
        for server in servers:
            server.stop()
    rows = [(key, f"{rps:.3f}x", f"{cpu:.3f}x") for key, (rps, cpu) in medians.items()]
    print()
    print(report.table((f"@{era} vs {bottom}@{era}, c", "req/s (median)", "CPU (median)"), rows))
    return medians


def main(argv: t.Sequence[str] | None = None) -> int:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.side_by_side", description=__doc__)
    parser.add_argument("--era", choices=("handshake", "2026"), default="2026")
    parser.add_argument("--concurrency", default="16", help="wrk connection counts, e.g. 16,64")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of one round")
    parser.add_argument("--repeats", type=int, default=7, help="rounds per concurrency")
    parser.add_argument("--proto", action="append", default=[], help="a patched flask_mcp copy")
    parser.add_argument(
        "--compare",
        choices=("floor", "oauth", "card"),
        default="floor",
        help="floor: Flask-MCP vs the bare-Flask floor; oauth: the built-in authorization "
        "server's tokens vs no authorization; card: the realistic card's servers (Flask-MCP, "
        "its floor, FastMCP, the SDK) at 50 connections each, per mix",
    )
    parser.add_argument("--backend", help="with --compare oauth: MCP_BACKEND of both servers")
    parser.add_argument(
        "--fair-floor",
        action="store_true",
        help="with --compare floor: also drive floor-fair/gevent, the floor giving the other "
        "greenlets a turn after each call as Flask-MCP does (what fairness costs)",
    )
    args = parser.parse_args(argv)
    options = Options.for_mode(
        "quick",
        seconds=args.seconds,
        concurrency=tuple(int(c) for c in args.concurrency.split(",")),
        proto=tuple(args.proto),
    )
    if not wrk.available():
        print("wrk is not installed")
        return 2
    if args.compare == "card":
        judged = realistic.side_by_side(options, args.era, args.repeats)
    elif args.compare == "oauth":
        specs = oauth_server.specs(options, args.backend)
        try:
            medians = run(
                options, args.era, args.repeats, specs, oauth_server.PLAIN, oauth_server.authorize
            )
        finally:
            oauth_server.forget_token()
        judged = oauth_server.side_by_side_verdicts(medians)
    else:
        medians = run(options, args.era, args.repeats, _specs(options, args.fair_floor))
        judged = verdicts(medians, args.era)
        for connections in options.concurrency if args.fair_floor else ():
            served, fair = (medians[f"{name}@{connections}"] for name in (SERVED, FAIR_FLOOR))
            print(
                f"c={connections}: {SERVED} / {FAIR_FLOOR} (ratio of the medians): "
                f"req/s {served[0] / fair[0]:.3f}x, CPU {served[1] / fair[1]:.3f}x"
            )
    if judged:
        print()
        print(report.verdict_table(judged))
    return 1 if any(v.met is False for v in judged) else 0


def verdicts(medians: dict[str, tuple[float, float]], era: str) -> list[report.Verdict]:
    """Judge issue 16's target for the 2026-07-28 form (:data:`~.throughput.STATELESS_TARGET`,
    at c=16) on the median of the rounds; none for the handshake era."""
    top, _, want, what = STATELESS_TARGET
    found = medians.get(f"{top.split('@')[0]}@16")
    if era != "2026" or found is None:
        return []
    rps, cpu = found
    return [
        report.Verdict(
            f"req/s {what}, c=16, side by side",
            f">= {want}x",
            f"{rps:.3f}x (CPU/req {cpu:.3f}x)",
            rps >= want,
        )
    ]


if __name__ == "__main__":
    raise SystemExit(main())
