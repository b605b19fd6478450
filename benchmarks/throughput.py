"""``tools/call`` of ``add(a, b)`` at several concurrencies, every server side by side.

All servers run at once, pinned to the server core; wrk, pinned to the other
core, drives them in turn (round-robin, so a burst of noise from other work on
the machine hits every server alike), and the ratios compare runs made minutes
apart at most.
"""

from __future__ import annotations

import typing as t

from . import report
from . import wrk
from .options import Options
from .prepare import Prepared
from .prepare import prepare
from .servers import Server
from .servers import start_all
from .targets import Target
from .targets import throughput_matrix

#: (numerator, denominator) rows of the ratio table.
RATIOS = (
    ("flask_mcp/gevent", "floor/gevent"),
    ("flask_mcp/gthread", "floor/gthread"),
    ("flask_mcp/gevent", "sdk/default"),
    ("flask_mcp/gevent", "sdk/json"),
    ("flask_mcp/gevent", "sdk/stateless-json"),
    ("flask_mcp/gevent@2026", "floor/gevent"),
    ("flask_mcp/gevent@2026", "floor/gevent@2026"),
    ("flask_mcp/gevent@2026", "sdk/stateless-json@2026"),
)


def proto_ratios(options: Options) -> tuple[tuple[str, str], ...]:
    """Return the ratio rows of the patched copies: each vs the repository's and vs the floor."""
    rows: list[tuple[str, str]] = []
    for label, _ in options.proto_labels():
        rows += [
            (f"{label}/gevent", "flask_mcp/gevent"),
            (f"{label}/gevent", "floor/gevent"),
            (f"{label}/gevent@2026", "flask_mcp/gevent@2026"),
            (f"{label}/gevent@2026", "floor/gevent@2026"),
        ]
    return tuple(rows)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2] if len(ordered) % 2 == 0 else ordered[len(ordered) // 2]


def median_run(runs: list[wrk.WrkResult]) -> wrk.WrkResult:
    """Return the run with the median throughput, its error count summed over all runs.

    Its ``cpu_us`` is the median of the runs' (a measure of its own, far less
    sensitive than req/s to other work on the machine).
    """
    chosen = next(r for r in runs if r.rps == _median([r.rps for r in runs]))
    cpu = [r.cpu_us for r in runs if r.cpu_us is not None]
    total_errors = sum(r.errors for r in runs)
    return wrk.WrkResult(
        **{
            **chosen.__dict__,
            "bad_body": chosen.bad_body + total_errors - chosen.errors,
            "cpu_us": _median(cpu) if cpu else None,
        }
    )


def drive(
    prepared: t.Sequence[Prepared],
    options: Options,
    concurrency: t.Sequence[int] | None = None,
) -> dict[tuple[str, int], wrk.WrkResult]:
    """Warm every target up, then run wrk round-robin; return the median run per (label, c)."""
    live = [p for p in prepared if p.skipped is None]
    for item in live:
        item.drive(16, options.warmup, options.client_core)
    runs: dict[tuple[str, int], list[wrk.WrkResult]] = {}
    for connections in concurrency or options.concurrency:
        for round_ in range(options.rounds):
            order = live[round_ % len(live) :] + live[: round_ % len(live)] if live else []
            for item in order:
                cpu_before = item.server.cpu_seconds()
                result = item.drive(connections, options.seconds, options.client_core)
                if result.requests:
                    used = item.server.cpu_seconds() - cpu_before
                    result.cpu_us = used / result.requests * 1e6
                runs.setdefault((item.target.label, connections), []).append(result)
                print(
                    f"  {item.target.label:<30} c={connections:<3} {result.rps:>8.0f} req/s  "
                    f"p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:7.2f} ms  "
                    f"CPU {result.cpu_us or 0:5.0f} us/req  errors {result.errors}"
                    + (f"  first bad: {result.first_bad[:160]}" if result.first_bad else ""),
                    flush=True,
                )
    return {key: median_run(value) for key, value in runs.items()}


def compare_add(
    servers: t.Sequence[Server],
    options: Options,
    concurrency: t.Sequence[int],
    verdicts: t.Callable[[dict[tuple[str, int], wrk.WrkResult]], list[report.Verdict]],
) -> dict[str, t.Any]:
    """Drive ``tools/call add`` on every started server, print the results and the
    ``verdicts`` found in them; return the summary with the verdicts."""
    prepared = [
        prepare(Target(s.spec.name, s.spec.name), s, wrk.ADD, max(concurrency)) for s in servers
    ]
    for item in prepared:
        if item.skipped:
            print(f"  {item.target.label}: skipped ({item.skipped[:300]})")
    results = drive(prepared, options, concurrency)
    print()
    print(results_table(prepared, results, concurrency))
    found = verdicts(results)
    print()
    print(report.verdict_table(found))
    summary = report.summary(results, prepared, [])
    summary["verdicts"] = report.records(found)
    return summary


def results_table(
    prepared: t.Sequence[Prepared],
    results: dict[tuple[str, int], wrk.WrkResult],
    concurrency: t.Sequence[int],
) -> str:
    """Return the per-target table: req/s, p50, p99, server CPU per request, errors, peak RSS."""
    rows: list[tuple[t.Any, ...]] = []
    for item in prepared:
        peak = item.server.hwm_kb() / 1024
        if item.skipped:
            rows.append(
                (item.target.label, "–", "–", "–", "–", "–", "–", f"skipped: {item.skipped[:80]}")
            )
            continue
        for connections in concurrency:
            result = results.get((item.target.label, connections))
            if result is None:
                continue
            rows.append(
                (
                    item.target.label,
                    connections,
                    result.rps,
                    result.p50_ms,
                    result.p99_ms,
                    "–" if result.cpu_us is None else f"{result.cpu_us:.0f}",
                    result.errors,
                    f"{peak:.1f}",
                )
            )
    headers = ("target", "c", "req/s", "p50 ms", "p99 ms", "CPU µs/req", "errors", "peak RSS MB")
    return report.table(headers, rows)


def figure(
    results: dict[tuple[str, int], wrk.WrkResult], label: str, c: int, field: str
) -> float | None:
    """Return one figure (``rps``, ``p99_ms``, ``cpu_us``) of a target at ``c``, if measured."""
    found = results.get((label, c))
    return None if found is None else getattr(found, field)


def field_ratio(
    results: dict[tuple[str, int], wrk.WrkResult], top: str, bottom: str, c: int, field: str
) -> float | None:
    """Return ``top``'s figure over ``bottom``'s at concurrency ``c``."""
    return report.ratio(figure(results, top, c, field), figure(results, bottom, c, field))


def cpu_ratio(
    results: dict[tuple[str, int], wrk.WrkResult], top: str, bottom: str, c: int
) -> float | None:
    """Return ``bottom``'s server CPU per request over ``top``'s: a req/s ratio at full load."""
    return field_ratio(results, bottom, top, c, "cpu_us")


def ratio_rows(
    results: dict[tuple[str, int], wrk.WrkResult],
    concurrency: t.Sequence[int],
    pairs: t.Sequence[tuple[str, str]] = RATIOS,
) -> list[tuple[str, ...]]:
    """Return the req/s ratios (and the p99 ratio) of ``pairs`` that were measured."""
    rows = []
    for top, bottom in pairs:
        cells = [report.fmt_ratio(field_ratio(results, top, bottom, c, "rps")) for c in concurrency]
        if all(cell == "–" for cell in cells):
            continue
        p99 = report.fmt_ratio(field_ratio(results, top, bottom, concurrency[-1], "p99_ms"))
        rows.append((f"{top} / {bottom}", *cells, p99))
    return rows


def cpu_ratio_rows(
    results: dict[tuple[str, int], wrk.WrkResult],
    concurrency: t.Sequence[int],
    pairs: t.Sequence[tuple[str, str]] = RATIOS,
) -> list[tuple[str, ...]]:
    """Return the ratios of server CPU per request of ``pairs`` (higher: ``top`` is cheaper)."""
    rows = []
    for top, bottom in pairs:
        cells = [report.fmt_ratio(cpu_ratio(results, top, bottom, c)) for c in concurrency]
        if any(cell != "–" for cell in cells):
            rows.append((f"{top} / {bottom}", *cells))
    return rows


#: (target, baseline, wanted ratio, what) of the issue's throughput targets at c=16.
TARGETS = (
    ("flask_mcp/gevent", "floor/gevent", 0.8, "vs bare-Flask floor (gevent)"),
    ("flask_mcp/gevent", "sdk/default", 3.0, "vs official SDK default mode"),
    ("flask_mcp/gevent", "sdk/json", 1.5, "vs official SDK JSON mode"),
    ("flask_mcp/gevent@2026", "floor/gevent", 0.8, "2026-07-28 vs bare-Flask floor"),
    ("flask_mcp/gevent@2026", "sdk/stateless-json@2026", 1.5, "2026-07-28 vs SDK (JSON)"),
)


#: Issue 16: the 2026-07-28 form against the floor driven with the same request, at c=16.
STATELESS_TARGET = (
    "flask_mcp/gevent@2026",
    "floor/gevent@2026",
    0.9,
    "2026-07-28 vs bare-Flask floor driven with the same request",
)


def throughput_verdict(
    results: dict[tuple[str, int], wrk.WrkResult], top: str, bottom: str, want: float, what: str
) -> report.Verdict:
    """Judge ``top``'s req/s over ``bottom``'s at c=16 against ``want``.

    The ratio of server CPU per request is printed next to it, as the check on noise.
    """
    value = field_ratio(results, top, bottom, 16, "rps")
    cpu = cpu_ratio(results, top, bottom, 16)
    return report.Verdict(
        f"req/s {what}, c=16",
        f">= {want}x",
        f"{report.fmt_ratio(value)} (CPU/req {report.fmt_ratio(cpu)})",
        None if value is None else value >= want,
    )


def stateless_target_met(results: dict[tuple[str, int], wrk.WrkResult]) -> bool | None:
    """Tell whether the 2026-07-28 form reached 0.9x the floor driven with the same request.

    ``None`` when either row was not measured (``--no-2026``, ``--only``, a
    skipped probe); a miss makes ``python -m benchmarks throughput`` exit 1.
    """
    return throughput_verdict(results, *STATELESS_TARGET).met


def verdicts(results: dict[tuple[str, int], wrk.WrkResult]) -> list[report.Verdict]:
    """Evaluate the throughput and latency targets of the issue.

    A throughput target is judged on req/s; the ratio of server CPU per
    request is printed next to it, as the check on noise.
    """
    out = [throughput_verdict(results, *target) for target in (*TARGETS, STATELESS_TARGET)]
    a_p99 = figure(results, "flask_mcp/gevent", 64, "p99_ms")
    b_p99 = figure(results, "floor/gevent", 64, "p99_ms")
    value = report.ratio(a_p99, b_p99)
    out.append(
        report.Verdict(
            "p99 at c=64 vs floor p99 x 1.5",
            "<= 1.50x",
            "–" if value is None else f"{a_p99:.1f} ms vs {b_p99:.1f} ms = {value:.2f}x",
            None if value is None else value <= 1.5,
        )
    )
    return out


def run(options: Options, with_2026: bool = True) -> dict[str, t.Any]:
    """Run the throughput benchmark, print its tables, and return its figures."""
    specs, targets = throughput_matrix(options, with_2026)
    sessions = max(options.concurrency)
    print(report.banner("tools/call throughput (add, 2025-11-25 session unless @2026)"))
    print(
        f"servers on core {options.server_core}, wrk on core {options.client_core}; "
        f"{options.seconds:g}s per run, {options.rounds} round(s), c={list(options.concurrency)}, "
        f"{sessions} sessions per target used round-robin",
        flush=True,
    )
    servers = start_all(specs, options.server_core)
    try:
        by_name = {server.spec.name: server for server in servers}
        for server in servers:
            if server.spec.pythonpath:
                print(f"  {server.spec.name} imports flask_mcp from {server.imported_from()}")
        prepared = [
            prepare(target, by_name[target.server], wrk.ADD, sessions) for target in targets
        ]
        for item in prepared:
            if item.skipped and item.target.era != "2026":
                raise RuntimeError(f"{item.target.label}: {item.skipped}")
        for item in prepared:
            if item.skipped:
                print(f"  {item.target.label}: skipped ({item.skipped[:200]})")
        results = drive(prepared, options)
        print()
        print(results_table(prepared, results, options.concurrency))
        print()
        ratios = ratio_rows(results, options.concurrency, RATIOS + proto_ratios(options))
        print(
            report.table(
                (
                    "ratio (req/s)",
                    *[f"c={c}" for c in options.concurrency],
                    f"p99 ratio c={options.concurrency[-1]}",
                ),
                ratios,
            )
        )
        cpu_rows = cpu_ratio_rows(results, options.concurrency, RATIOS + proto_ratios(options))
        print()
        print(
            report.table(
                ("ratio (server CPU per request, baseline / target)",)
                + tuple(f"c={c}" for c in options.concurrency),
                cpu_rows,
            )
        )
        found = verdicts(results)
        print()
        print(report.verdict_table(found))
        return report.summary(results, prepared, ratios) | {
            "cpu_ratios": cpu_rows,
            "peak_rss_kb": {item.target.label: item.server.hwm_kb() for item in prepared},
            "verdicts": [v.__dict__ | {"status": v.status} for v in found],
        }
    finally:
        for server in servers:
            server.stop()
