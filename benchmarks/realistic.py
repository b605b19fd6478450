"""The realistic card: the TM Dev Lab MCP benchmark's tools on Flask-MCP, FastMCP and the SDK.

``python -m benchmarks realistic [--full] [--chart PATH]``

Two mixes of ``tools/call``, each request checked (``lua/card.lua``):

- **v1**, the card's first edition: ``calculate_fibonacci(10)``,
  ``fetch_external_data`` (an HTTP GET of the local API), ``process_json_data``
  and ``simulate_database_query`` (10 ms), in turn;
- **v2**, its second edition: ``search_products``, ``get_user_cart`` and
  ``checkout``, each an HTTP call to the local API plus Redis reads and writes,
  spread over 50 seeded users.

Part one, **one core**: every server has one worker pinned to the server core,
wrk (50 connections) and the local API on the client core; targets run in turn,
each round in another order (as :mod:`benchmarks.throughput`), the median of the
rounds kept. Flask-MCP (``gunicorn -k gevent``) in both protocol eras against
FastMCP 4.1.6 and the SDK under uvicorn (uvloop and httptools), each in its
JSON modes with and without sessions; the fastest mode of each is the baseline
of the targets (issue 34): Flask-MCP at least 4x FastMCP's and 1.5x the SDK's
req/s, with a p99 no worse, in each era and edition.

Next to them the **floor** (``floor/gevent``, ``apps/card_floor.py``): a bare
Flask view under ``gunicorn -k gevent`` running the same tools on the same
clients, doing for each call only what an MCP server must (as ``apps/floor_app.py``
does for ``add``). Its req/s is the ceiling of any Flask server here: the ratio
table gives every server's figures over the floor's, and under the verdicts a
line per mix and era gives the floor's req/s over FastMCP's fastest mode (the
ceiling of the 4x target). The floor is not judged.

Part two, **all cores**: as many workers as the machine has cores, nothing
pinned; Flask-MCP's handshake-era sessions on its Redis backend (so any
worker serves any session), the ASGI servers stateless (their sessions live in
one process). Reported, not judged.
"""

from __future__ import annotations

import functools
import os
import statistics
import typing as t

from . import card
from . import client
from . import report
from . import svg
from . import wrk
from .options import Options
from .servers import Server
from .servers import ServerSpec
from .servers import asgi_stack
from .servers import proc_cpu_seconds
from .servers import proc_status_kb
from .servers import start_all
from .throughput import median_run

CONNECTIONS = 50
#: The issue's targets at one core: Flask-MCP over each framework's fastest mode.
TARGETS = {"fastmcp": 4.0, "sdk": 1.5}
#: Where the chart goes unless ``--chart`` says otherwise.
CHART = "docs/_static/benchmarks/realistic.svg"


class Target:
    """One row: a server driven in one protocol era, its sessions, and why it was skipped."""

    def __init__(self, server: Server, era: str) -> None:
        self.server = server
        self.era = era
        self.label = server.spec.name + ("@2026" if era == "2026" else "")
        self.sessions: list[str] = []
        self.skipped: str | None = None

    @property
    def framework(self) -> str:
        """``flask_mcp``, ``floor``, ``fastmcp`` or ``sdk``."""
        return self.server.spec.kind


def prepare(server: Server, era: str, the_world: card.World, sessions: int) -> Target:
    """Open the sessions a handshake-era target needs and call every tool once."""
    target = Target(server, era)
    if era == "handshake" and server.spec.stateful:
        for _ in range(sessions):
            session_id = client.initialize(server.url)
            if session_id is None:
                break
            target.sessions.append(session_id)
    for edition in card.EDITIONS.values():
        for i, call in enumerate(edition):
            problem = card.call_once(
                server.url,
                card.with_api(call, the_world.api_url),
                era=era,
                session_id=target.sessions[0] if target.sessions else None,
                request_id=100 + i,
            )
            if problem is not None:
                target.skipped = f"{call.tool}: {problem}"[:300]
                return target
    return target


def _drive_one(
    target: Target, calls: t.Sequence[card.Call], seconds: float, core: str | None, connections: int
) -> wrk.WrkResult:
    before = target.server.cpu_seconds()
    result = card.drive_mix(
        target.server.url,
        calls,
        connections=connections,
        seconds=seconds,
        sessions=target.sessions[:connections],
        era=target.era,
        core=core,
    )
    if result.requests:
        result.cpu_us = (target.server.cpu_seconds() - before) / result.requests * 1e6
    return result


def drive(
    targets: t.Sequence[Target],
    the_world: card.World,
    options: Options,
    core: str | None,
    connections: int,
) -> dict[tuple[str, str], wrk.WrkResult]:
    """Warm every target up on each mix, then run the rounds in turn; return the medians."""
    live = [target for target in targets if target.skipped is None]
    runs: dict[tuple[str, str], list[wrk.WrkResult]] = {}
    api_cpu = proc_cpu_seconds(the_world.api.pid)
    for edition, calls in card.EDITIONS.items():
        mix = [card.with_api(call, the_world.api_url) for call in calls]
        for target in live:
            _drive_one(target, mix, options.warmup, core, connections)
        for round_ in range(options.rounds):
            order = live[round_ % len(live) :] + live[: round_ % len(live)] if live else []
            for target in order:
                result = _drive_one(target, mix, options.seconds, core, connections)
                runs.setdefault((target.label, edition), []).append(result)
                print(
                    f"  {edition} {target.label:<32} c={connections} {result.rps:>7.0f} req/s  "
                    f"p50 {result.p50_ms:6.2f}  p95 {result.p95_ms or 0:7.2f}  "
                    f"p99 {result.p99_ms:7.2f} ms  CPU {result.cpu_us or 0:5.0f} us/req  "
                    f"errors {result.errors}"
                    + (f"  first bad: {result.first_bad[:200]}" if result.first_bad else ""),
                    flush=True,
                )
    used = proc_cpu_seconds(the_world.api.pid) - api_cpu
    print(f"  (the local API used {used:.1f} CPU seconds over these runs)")
    return {key: median_run(value) for key, value in runs.items()}


def rss_mb(server: Server) -> float:
    """Peak RSS of a server: its worker's, or the sum of its workers' (``VmHWM``)."""
    return sum(proc_status_kb(pid, "VmHWM") for pid in server.worker_pids()) / 1024


def results_rows(
    targets: t.Sequence[Target], results: t.Mapping[tuple[str, str], wrk.WrkResult]
) -> list[tuple[t.Any, ...]]:
    """Rows of the per-target table."""
    rows: list[tuple[t.Any, ...]] = []
    for edition in card.EDITIONS:
        for target in targets:
            if target.skipped:
                if edition == "v1":
                    rows.append(
                        (edition, target.label, *["–"] * 7, f"skipped: {target.skipped[:80]}")
                    )
                continue
            found = results.get((target.label, edition))
            if found is None:
                continue
            rows.append(
                (
                    edition,
                    target.label,
                    found.rps,
                    found.p50_ms,
                    found.p95_ms,
                    found.p99_ms,
                    "–" if found.cpu_us is None else f"{found.cpu_us:.0f}",
                    f"{rss_mb(target.server):.1f}",
                    found.errors,
                    "",
                )
            )
    return rows


HEADERS = (
    "mix",
    "target",
    "req/s",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "CPU µs/req",
    "RSS MB",
    "errors",
    "",
)


def fastest(
    targets: t.Sequence[Target],
    results: t.Mapping[tuple[str, str], wrk.WrkResult],
    framework: str,
    era: str,
    edition: str,
) -> Target | None:
    """Return ``framework``'s target with the most req/s in ``era`` on ``edition``."""
    best: Target | None = None
    best_rps = -1.0
    for target in targets:
        if target.framework != framework or target.era != era or target.skipped:
            continue
        found = results.get((target.label, edition))
        if found is not None and found.rps > best_rps:
            best, best_rps = target, found.rps
    return best


def verdicts(
    targets: t.Sequence[Target], results: t.Mapping[tuple[str, str], wrk.WrkResult]
) -> list[report.Verdict]:
    """Judge the issue's targets: Flask-MCP over FastMCP's and the SDK's fastest mode."""
    found: list[report.Verdict] = []
    for edition in card.EDITIONS:
        for era in ("handshake", "2026"):
            ours = fastest(targets, results, "flask_mcp", era, edition)
            for framework, want in TARGETS.items():
                theirs = fastest(targets, results, framework, era, edition)
                what = (
                    f"card {edition} {era}, c={CONNECTIONS}, one core: req/s and p99 vs {framework}"
                )
                if ours is None or theirs is None:
                    found.append(report.Verdict(what, f">= {want}x, p99 <= 1x", "–", None))
                    continue
                a, b = results[(ours.label, edition)], results[(theirs.label, edition)]
                rps = a.rps / b.rps if b.rps else 0.0
                p99 = a.p99_ms / b.p99_ms if b.p99_ms else float("inf")
                cpu = (b.cpu_us or 0) / (a.cpu_us or 1)
                found.append(
                    report.Verdict(
                        what,
                        f">= {want}x, p99 <= 1x",
                        f"{rps:.2f}x vs {theirs.label} (CPU/req {cpu:.2f}x), p99 {a.p99_ms:.1f} "
                        f"vs {b.p99_ms:.1f} ms = {p99:.2f}x",
                        rps >= want and p99 <= 1.0 and a.errors == 0,
                    )
                )
    return found


def _ratio_row(
    edition: str, a_label: str, a: wrk.WrkResult, b_label: str, b: wrk.WrkResult
) -> tuple[str, ...]:
    """One ratio row: ``a``'s req/s and p99 over ``b``'s, ``b``'s CPU per request over ``a``'s."""
    return (
        edition,
        f"{a_label} / {b_label}",
        report.fmt_ratio(report.ratio(a.rps, b.rps)),
        report.fmt_ratio(report.ratio(a.p99_ms, b.p99_ms)),
        report.fmt_ratio(report.ratio(b.cpu_us, a.cpu_us)),
    )


def ratio_rows(
    targets: t.Sequence[Target], results: t.Mapping[tuple[str, str], wrk.WrkResult]
) -> list[tuple[str, ...]]:
    """Flask-MCP's req/s, p99 and CPU per request over every other target's, per mix and era.

    The floor among them (Flask-MCP / floor), then every other target's over the
    floor's (FastMCP / floor, the SDK / floor).
    """
    rows: list[tuple[str, ...]] = []
    for edition in card.EDITIONS:
        for era in ("handshake", "2026"):
            ours = fastest(targets, results, "flask_mcp", era, edition)
            floor = fastest(targets, results, "floor", era, edition)
            others = []
            for target in targets:
                found = results.get((target.label, edition))
                if found is not None and target.era == era:
                    others.append((target, found))
            if ours is not None:
                a = results[(ours.label, edition)]
                for target, found in others:
                    if target is not ours:
                        rows.append(_ratio_row(edition, ours.label, a, target.label, found))
            if floor is not None:
                b = results[(floor.label, edition)]
                for target, found in others:
                    if target is not ours and target is not floor:
                        rows.append(_ratio_row(edition, target.label, found, floor.label, b))
    return rows


def ceilings(
    targets: t.Sequence[Target], results: t.Mapping[tuple[str, str], wrk.WrkResult]
) -> list[dict[str, t.Any]]:
    """The floor's req/s over FastMCP's fastest mode, per mix and era: not judged.

    The floor is what any Flask server could reach on the card, so this ratio
    tells whether the 4x target is within reach of one at all; Flask-MCP's
    req/s over the floor's says how much of it Flask-MCP reaches.
    """
    found: list[dict[str, t.Any]] = []
    for edition in card.EDITIONS:
        for era in ("handshake", "2026"):
            labels = {}
            rps = {}
            for framework in ("floor", "fastmcp", "flask_mcp"):
                target = fastest(targets, results, framework, era, edition)
                labels[framework] = target.label if target else None
                rps[framework] = results[(target.label, edition)].rps if target else None
            found.append(
                {
                    "mix": edition,
                    "era": era,
                    "labels": labels,
                    "rps": rps,
                    "floor_vs_fastmcp": report.ratio(rps["floor"], rps["fastmcp"]),
                    "flask_mcp_vs_floor": report.ratio(rps["flask_mcp"], rps["floor"]),
                }
            )
    return found


def ceiling_line(ceiling: t.Mapping[str, t.Any]) -> str:
    """One informational line under the verdicts: ``ceiling: floor vs fastmcp 4.20x, ...``."""
    labels, rps = ceiling["labels"], ceiling["rps"]
    line = (
        f"ceiling: floor vs fastmcp {report.fmt_ratio(ceiling['floor_vs_fastmcp'])}, "
        f"card {ceiling['mix']} {ceiling['era']}"
    )
    if ceiling["floor_vs_fastmcp"] is not None:
        line += (
            f" ({labels['floor']} {rps['floor']:.0f} vs {labels['fastmcp']} "
            f"{rps['fastmcp']:.0f} req/s)"
        )
    if ceiling["flask_mcp_vs_floor"] is not None:
        line += (
            f"; {labels['flask_mcp']} at {report.fmt_ratio(ceiling['flask_mcp_vs_floor'])} "
            "the floor"
        )
    return line + " (informational, not judged)"


def chart(
    targets: t.Sequence[Target],
    results: t.Mapping[tuple[str, str], wrk.WrkResult],
    subtitle: str,
) -> str:
    """Return the SVG chart of req/s: one cluster per mix and era, one bar per server."""
    groups = [
        f"{edition} {era_name}"
        for edition in card.EDITIONS
        for era_name in ("2025-11-25", "2026-07-28")
    ]
    series = sorted({t.server.spec.name for t in targets if not t.skipped}, key=_series_order)
    values: dict[tuple[str, str], float | None] = {}
    for target in targets:
        for edition in card.EDITIONS:
            found = results.get((target.label, edition))
            if found is None:
                continue
            group = f"{edition} {'2026-07-28' if target.era == '2026' else '2025-11-25'}"
            values[(group, target.server.spec.name)] = found.rps
    return svg.bar_chart(
        f"Realistic MCP card, {CONNECTIONS} connections, one worker on one core",
        groups,
        series,
        values,
        "tools/call per second",
        subtitle,
    )


def _series_order(name: str) -> tuple[int, str]:
    order = {"flask_mcp": 0, "fastmcp": 1, "sdk": 2, "floor": 3}
    return (order.get(name.split("/")[0], 4), name)


def one_core_specs(the_world: card.World) -> list[ServerSpec]:
    """Part one's servers: one worker each, the floor among them."""
    specs = [
        card.flask_mcp_spec("flask_mcp/gevent", the_world),
        card.floor_spec("floor/gevent", the_world),
    ]
    if card.fastmcp_available():
        specs += [card.asgi_spec("fastmcp", mode, the_world) for mode in ("json", "stateless-json")]
    specs += [card.asgi_spec("sdk", mode, the_world) for mode in ("json", "stateless-json")]
    return specs


def all_core_specs(the_world: card.World, workers: int) -> list[ServerSpec]:
    """Part two's servers: ``workers`` workers each, sessions shared or none."""
    specs = [
        card.flask_mcp_spec(
            f"flask_mcp/gevent-redis-w{workers}",
            the_world,
            workers=workers,
            FLASK_MCP_BACKEND=the_world.redis_url,
        )
    ]
    if card.fastmcp_available():
        specs.append(
            card.asgi_spec(
                "fastmcp",
                "stateless-json",
                the_world,
                workers,
                f"fastmcp/stateless-json-w{workers}",
            )
        )
    specs.append(
        card.asgi_spec(
            "sdk", "stateless-json", the_world, workers, f"sdk/stateless-json-w{workers}"
        )
    )
    return specs


def _part(
    title: str,
    specs: t.Sequence[ServerSpec],
    the_world: card.World,
    options: Options,
    server_core: str | None,
    client_core: str | None,
    connections: int,
) -> tuple[list[Target], dict[tuple[str, str], wrk.WrkResult], list[Server]]:
    print(report.banner(title))
    for spec in specs:
        stack = asgi_stack(spec) if spec.runner == "uvicorn" else f"gunicorn -k {spec.worker}"
        print(f"  {spec.name}: {spec.workers} worker(s), {stack}")
    servers = start_all(specs, server_core, timeout=card.START_TIMEOUT)
    targets: list[Target] = []
    for server in servers:
        for era in ("handshake", "2026"):
            target = prepare(server, era, the_world, connections)
            if options.wanted(target.label):
                targets.append(target)
            if target.skipped:
                print(f"  {target.label}: skipped ({target.skipped})")
    results = drive(targets, the_world, options, client_core, connections)
    print()
    print(report.table(HEADERS, results_rows(targets, results)))
    return targets, results, servers


def run(
    options: Options, connections: int = CONNECTIONS, chart_path: str | None = CHART
) -> dict[str, t.Any]:
    """Run both parts, print their tables and verdicts, write the chart; return the figures."""
    print(report.banner("realistic card (TM Dev Lab MCP benchmark, editions 1 and 2)"))
    workers = os.cpu_count() or 1
    print(
        f"FastMCP {card.fastmcp_version() or 'not installed'}; {connections} connections; "
        f"{options.seconds:g}s per run after {options.warmup:g}s of warm-up per target and mix, "
        f"{options.rounds} round(s), median kept",
        flush=True,
    )
    figures: dict[str, t.Any] = {}
    with card.world(options.client_core) as the_world:
        targets, results, servers = _part(
            f"one core: one worker on core {options.server_core}, wrk and the API on core "
            f"{options.client_core}",
            one_core_specs(the_world),
            the_world,
            options,
            options.server_core,
            options.client_core,
            connections,
        )
        try:
            rows = ratio_rows(targets, results)
            print()
            print(report.table(("mix", "ratio", "req/s", "p99", "CPU/req (right / left)"), rows))
            found = verdicts(targets, results)
            print()
            print(report.verdict_table(found))
            ceils = ceilings(targets, results)
            for ceiling in ceils:
                print(ceiling_line(ceiling))
            subtitle = (
                f"{report.machine()['date']}, {workers} CPUs, load {report.machine()['loadavg']}; "
                f"wrk, {options.rounds} round(s) of {options.seconds:g}s, median"
            )
            svg.write(chart_path, chart(targets, results, subtitle))
            figures["one_core"] = _figures(targets, results) | {
                "ratios": rows,
                "ceilings": ceils,
            }
        finally:
            for server in servers:
                server.stop()
        if workers > 1:
            try:
                many, many_results, many_servers = _part(
                    f"all cores: {workers} workers per server, nothing pinned",
                    all_core_specs(the_world, workers),
                    the_world,
                    options,
                    None,
                    None,
                    connections,
                )
            except RuntimeError as exc:  # not judged: keep part one's figures and verdicts
                print(f"  all cores: not measured ({exc})")
                figures["all_cores"] = {"error": str(exc)[:2000]}
            else:
                try:
                    figures["all_cores"] = _figures(many, many_results)
                finally:
                    for server in many_servers:
                        server.stop()
    return figures | {"verdicts": report.records(found)}


def _figures(
    targets: t.Sequence[Target], results: t.Mapping[tuple[str, str], wrk.WrkResult]
) -> dict[str, t.Any]:
    return {
        "results": {
            f"{label}/{edition}": r.as_dict() | {"p95_ms": r.p95_ms}
            for (label, edition), r in results.items()
        },
        "rss_mb": {target.label: rss_mb(target.server) for target in targets},
        "skipped": {target.label: target.skipped for target in targets if target.skipped},
    }


def side_by_side(options: Options, era: str, repeats: int) -> list[report.Verdict]:
    """Drive part one's servers all at once on one core, per mix; print the median ratios.

    :mod:`benchmarks.side_by_side`'s method on the card (``python -m
    benchmarks.side_by_side --compare card``): every server pinned to the server
    core and loaded at the same time, one wrk each (50 connections) on the client
    core, so that each gets the same slices of whatever the machine leaves and a
    server's req/s over another's is the inverse of their CPU cost per request.
    Sequential runs of the card on a shared VM moved Flask-MCP's ratio to the
    floor between 0.79x and 1.02x from one run to the next. Latencies are not
    comparable here (each includes the others' slices), so the verdicts judge
    req/s only: the p99 targets stay with ``python -m benchmarks realistic``.

    :returns: the req/s verdicts of the issue's targets (Flask-MCP over each
        framework's fastest mode), on the median of the rounds.
    """
    found: list[report.Verdict] = []
    with card.world(options.client_core) as the_world:
        servers = start_all(
            one_core_specs(the_world), options.server_core, timeout=card.START_TIMEOUT
        )
        try:
            live = []
            for server in servers:
                target = prepare(server, era, the_world, CONNECTIONS)
                if target.skipped:
                    print(f"  {target.label}: skipped ({target.skipped})")
                else:
                    live.append(target)
            frameworks = {target.label: target.framework for target in live}
            if "floor" not in frameworks.values():
                raise RuntimeError("the floor was skipped: the ratios have nothing to divide by")
            for edition, calls in card.EDITIONS.items():
                mix = [card.with_api(call, the_world.api_url) for call in calls]
                for target in live:
                    _drive_one(target, mix, options.warmup, options.client_core, CONNECTIONS)
                medians = _simultaneous_rounds(live, mix, options, repeats, edition)
                print()
                print(
                    report.table(
                        (
                            f"{edition} {era}: vs the floor",
                            "req/s (median)",
                            "CPU (median)",
                            "failed",
                        ),
                        [
                            (label, f"{r:.3f}x", f"{c:.3f}x", str(failed))
                            for label, (r, c, failed) in medians.items()
                        ],
                    )
                )
                found += side_by_side_verdicts(medians, frameworks, era, edition)
        finally:
            for server in servers:
                server.stop()
    return found


def _simultaneous_rounds(
    live: t.Sequence[Target],
    mix: t.Sequence[card.Call],
    options: Options,
    repeats: int,
    edition: str,
) -> dict[str, tuple[float, float, int]]:
    """Load every target at once ``repeats`` times; return each one's median ratios to the floor.

    :returns: ``{label: (req/s ratio, CPU ratio, failed requests)}``, the CPU ratio
        being the floor's CPU per request over the target's (higher is better in
        both), the failures summed over the rounds.
    """
    floor = next(target.label for target in live if target.framework == "floor")
    rounds: dict[str, list[tuple[float, float]]] = {target.label: [] for target in live}
    errors = dict.fromkeys(rounds, 0)
    for _ in range(repeats):
        results = wrk.at_once(
            {
                target.label: functools.partial(
                    _drive_one, target, mix, options.seconds, options.client_core, CONNECTIONS
                )
                for target in live
            }
        )
        base = results[floor]
        for label, result in results.items():
            errors[label] += result.errors
            rounds[label].append((result.rps / base.rps, (base.cpu_us or 0) / (result.cpu_us or 1)))
        print(
            f"  {edition} {floor} {base.rps:5.0f} req/s  "
            + "  ".join(
                f"{label} {result.rps / base.rps:.3f}"
                + (f" ({result.errors} failed)" if result.errors else "")
                for label, result in results.items()
                if label != floor
            ),
            flush=True,
        )
    return {
        label: (
            statistics.median(p[0] for p in pairs),
            statistics.median(p[1] for p in pairs),
            errors[label],
        )
        for label, pairs in rounds.items()
    }


def side_by_side_verdicts(
    medians: t.Mapping[str, tuple[float, float, int]],
    frameworks: t.Mapping[str, str],
    era: str,
    edition: str,
) -> list[report.Verdict]:
    """Judge the req/s targets on one mix's side-by-side medians (ratios to the floor).

    Flask-MCP's ratio over the fastest mode of each framework, with no failed request
    of its own; the floor's ratio over it is shown beside it (the ceiling of any
    Flask server).

    :param medians: ``{label: (req/s ratio, CPU ratio, failed requests)}``.
    :param frameworks: each label's framework (``flask_mcp``, ``floor``, ``fastmcp``, ``sdk``).
    """
    found: list[report.Verdict] = []
    ours = next((medians[label] for label, kind in frameworks.items() if kind == "flask_mcp"), None)
    for framework, want in TARGETS.items():
        modes = [
            (medians[label][0], label) for label, kind in frameworks.items() if kind == framework
        ]
        what = f"card {edition} {era}, c={CONNECTIONS}, side by side: req/s vs {framework}"
        if ours is None or not modes:
            found.append(report.Verdict(what, f">= {want}x", "–", None))
            continue
        theirs, label = max(modes)
        ratio = ours[0] / theirs
        failed = f", {ours[2]} failed" if ours[2] else ""
        found.append(
            report.Verdict(
                what,
                f">= {want}x",
                f"{ratio:.2f}x vs {label} (the floor: {1 / theirs:.2f}x){failed}",
                ratio >= want and ours[2] == 0,
            )
        )
    return found
