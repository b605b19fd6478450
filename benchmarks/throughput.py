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
from .servers import start_all
from .targets import throughput_matrix

#: (numerator, denominator) rows of the ratio table.
RATIOS = (
    ("flask_mcp/gevent", "floor/gevent"),
    ("flask_mcp/gthread", "floor/gthread"),
    ("flask_mcp/gevent", "sdk/default"),
    ("flask_mcp/gevent", "sdk/json"),
    ("flask_mcp/gevent", "sdk/stateless-json"),
    ("flask_mcp/gevent@2026", "floor/gevent"),
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
        ]
    return tuple(rows)


def median_run(runs: list[wrk.WrkResult]) -> wrk.WrkResult:
    """Return the run with the median throughput, its error count summed over all runs."""
    ordered = sorted(runs, key=lambda r: r.rps)
    chosen = (
        ordered[(len(ordered) - 1) // 2] if len(ordered) % 2 == 0 else ordered[len(ordered) // 2]
    )
    total_errors = sum(r.errors for r in runs)
    if total_errors != chosen.errors:
        chosen = wrk.WrkResult(
            **{**chosen.__dict__, "bad_body": chosen.bad_body + total_errors - chosen.errors}
        )
    return chosen


def drive(
    prepared: t.Sequence[Prepared],
    options: Options,
    concurrency: t.Sequence[int] | None = None,
) -> dict[tuple[str, int], wrk.WrkResult]:
    """Warm every target up, then run wrk round-robin; return the median run per (label, c)."""
    live = [p for p in prepared if p.skipped is None]
    for item in live:
        wrk.run(
            item.server.url,
            connections=16,
            seconds=options.warmup,
            load=item.load,
            sessions=item.sessions[:16],
            era=item.target.era,
            core=options.client_core,
        )
    runs: dict[tuple[str, int], list[wrk.WrkResult]] = {}
    for connections in concurrency or options.concurrency:
        for round_ in range(options.rounds):
            order = live[round_ % len(live) :] + live[: round_ % len(live)] if live else []
            for item in order:
                result = wrk.run(
                    item.server.url,
                    connections=connections,
                    seconds=options.seconds,
                    load=item.load,
                    sessions=item.sessions[:connections],
                    era=item.target.era,
                    core=options.client_core,
                )
                runs.setdefault((item.target.label, connections), []).append(result)
                print(
                    f"  {item.target.label:<30} c={connections:<3} {result.rps:>8.0f} req/s  "
                    f"p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:7.2f} ms  "
                    f"errors {result.errors}"
                    + (f"  first bad: {result.first_bad[:160]}" if result.first_bad else ""),
                    flush=True,
                )
    return {key: median_run(value) for key, value in runs.items()}


def results_table(
    prepared: t.Sequence[Prepared],
    results: dict[tuple[str, int], wrk.WrkResult],
    concurrency: t.Sequence[int],
) -> str:
    """Return the per-target table: req/s, p50, p99, errors, peak RSS."""
    rows: list[tuple[t.Any, ...]] = []
    for item in prepared:
        peak = item.server.hwm_kb() / 1024
        if item.skipped:
            rows.append(
                (item.target.label, "–", "–", "–", "–", "–", f"skipped: {item.skipped[:80]}")
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
                    result.errors,
                    f"{peak:.1f}",
                )
            )
    return report.table(("target", "c", "req/s", "p50 ms", "p99 ms", "errors", "peak RSS MB"), rows)


def ratio_rows(
    results: dict[tuple[str, int], wrk.WrkResult],
    concurrency: t.Sequence[int],
    pairs: t.Sequence[tuple[str, str]] = RATIOS,
) -> list[tuple[str, ...]]:
    """Return the req/s ratios (and the p99 ratio) of ``pairs`` that were measured."""
    rows = []
    for top, bottom in pairs:
        cells = []
        for connections in concurrency:
            a, b = results.get((top, connections)), results.get((bottom, connections))
            cells.append(report.fmt_ratio(report.ratio(a.rps if a else None, b.rps if b else None)))
        if all(cell == "–" for cell in cells):
            continue
        last = concurrency[-1]
        a, b = results.get((top, last)), results.get((bottom, last))
        p99 = report.fmt_ratio(report.ratio(a.p99_ms if a else None, b.p99_ms if b else None))
        rows.append((f"{top} / {bottom}", *cells, p99))
    return rows


def verdicts(results: dict[tuple[str, int], wrk.WrkResult]) -> list[report.Verdict]:
    """Evaluate the throughput and latency targets of the issue."""

    def rps(label: str, c: int) -> float | None:
        found = results.get((label, c))
        return found.rps if found else None

    def p99(label: str, c: int) -> float | None:
        found = results.get((label, c))
        return found.p99_ms if found else None

    out = []
    for bottom, want, what in (
        ("floor/gevent", 0.8, "req/s vs bare-Flask floor (gevent), c=16"),
        ("sdk/default", 3.0, "req/s vs official SDK default mode, c=16"),
        ("sdk/json", 1.5, "req/s vs official SDK JSON mode, c=16"),
    ):
        value = report.ratio(rps("flask_mcp/gevent", 16), rps(bottom, 16))
        out.append(
            report.Verdict(
                what,
                f">= {want}x",
                report.fmt_ratio(value),
                None if value is None else value >= want,
            )
        )
    a, b = p99("flask_mcp/gevent", 64), p99("floor/gevent", 64)
    value = report.ratio(a, b)
    out.append(
        report.Verdict(
            "p99 at c=64 vs floor p99 x 1.5",
            "<= 1.50x",
            "–" if value is None else f"{a:.1f} ms vs {b:.1f} ms = {value:.2f}x",
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
        found = verdicts(results)
        print()
        print(report.verdict_table(found))
        return report.summary(results, prepared, ratios) | {
            "peak_rss_kb": {item.target.label: item.server.hwm_kb() for item in prepared},
            "verdicts": [v.__dict__ | {"status": v.status} for v in found],
        }
    finally:
        for server in servers:
            server.stop()
