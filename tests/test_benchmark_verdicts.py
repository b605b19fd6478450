"""``python -m benchmarks`` exits 1 when a target is missed (no benchmark is run here).

Each benchmark's ``run(options)`` returns its figures with ``report.records(found)`` under
``"verdicts"``; the command line collects them and turns them into its exit status.
"""

from __future__ import annotations

import sys
import types
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import __main__ as cli  # noqa: E402
from benchmarks import report  # noqa: E402

#: The module attribute each command's ``run`` is looked up on.
MODULES = (
    "throughput",
    "backchannel",
    "payload",
    "streams",
    "memory",
    "redis_backend",
    "middleware",
    "jwt_auth",
    "oauth_server",
    "wsgi_servers",
    "realistic",
    "large",
)


def figures(*met: bool | None) -> dict[str, t.Any]:
    """What a benchmark returns: its figures and one verdict per ``met``."""
    found = [report.Verdict(f"target {i}", ">= 1.0x", "measured", m) for i, m in enumerate(met)]
    return {"requests": 1, "verdicts": report.records(found)}


@pytest.fixture
def benchmarks(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, t.Any]]:
    """Replace every benchmark by one returning the figures put in the returned dict."""
    answers: dict[str, dict[str, t.Any]] = {name: figures(True) for name in MODULES}
    monkeypatch.setattr(cli.wrk, "available", lambda: True)
    for name in MODULES:
        module = getattr(cli, name)
        monkeypatch.setattr(
            module, "run", lambda *args, _name=name, **kwargs: answers[_name], raising=True
        )
    return answers


def test_targets_met_exit_0(benchmarks: dict[str, t.Any]) -> None:
    assert cli.main(["jwt", "--no-pin"]) == 0
    assert cli.main(["all", "--no-pin", "--full"]) == 0


def test_a_missed_target_exits_1(
    benchmarks: dict[str, t.Any], capsys: pytest.CaptureFixture[str]
) -> None:
    benchmarks["jwt_auth"] = figures(True, False)
    assert cli.main(["jwt", "--no-pin"]) == 1
    out, err = capsys.readouterr()
    assert "| target 1 " in out and "NOT met" in out
    assert "1 target(s) failed: target 1 (NOT met)" in err


def test_all_fails_when_one_benchmark_misses(benchmarks: dict[str, t.Any]) -> None:
    benchmarks["redis_backend"] = figures(False)
    assert cli.main(["all", "--no-pin"]) == 1
    assert cli.main(["throughput", "--no-pin"]) == 0  # only the commands run count


def test_a_skipped_target_fails_only_a_full_run(benchmarks: dict[str, t.Any]) -> None:
    benchmarks["wsgi_servers"] = figures(True, None)
    assert cli.main(["wsgi", "--no-pin"]) == 0
    assert cli.main(["wsgi", "--no-pin", "--full"]) == 1
    # --only and --no-2026 leave targets out on purpose
    assert cli.main(["wsgi", "--no-pin", "--full", "--only", "granian"]) == 0
    assert cli.main(["wsgi", "--no-pin", "--full", "--no-2026"]) == 0


def test_benchmarks_without_verdicts_pass(benchmarks: dict[str, t.Any]) -> None:
    benchmarks["middleware"] = {"medians_us": {}}
    benchmarks["redis_backend"] = {"skipped": "no backend"}
    assert cli.main(["all", "--no-pin", "--full"]) == 0


def test_missing_wrk_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.wrk, "available", lambda: False)
    assert cli.main(["jwt"]) == 2


def _card_results() -> tuple[list[t.Any], dict[tuple[str, str], t.Any]]:
    """Targets of the realistic card (no server) and a result per target and mix."""
    from benchmarks import realistic
    from benchmarks import wrk
    from benchmarks.servers import ServerSpec

    rps = {"flask_mcp/gevent": 3000, "floor/gevent": 4500, "fastmcp/json": 1000}
    rps |= {"fastmcp/stateless-json": 900, "sdk/json": 1500}
    targets = []
    results = {}
    for name, value in rps.items():
        spec = ServerSpec(name=name, kind=name.split("/")[0], runner="gunicorn", app="x:app")
        server = t.cast("t.Any", types.SimpleNamespace(spec=spec))
        for era, factor in (("handshake", 1.0), ("2026", 0.5)):
            target = realistic.Target(server, era)
            targets.append(target)
            for edition in ("v1", "v2"):
                results[(target.label, edition)] = wrk.WrkResult(
                    int(value * factor * 10), 10.0, 0, 0, 0, 0, 0, 5, 8, 10, 20, 5, cpu_us=100
                )
    return targets, results


def test_the_card_floor_is_shown_not_judged() -> None:
    """The card's floor adds ratio rows and a ceiling line; the verdicts stay Flask-MCP's."""
    from benchmarks import realistic

    targets, results = _card_results()
    found = realistic.verdicts(targets, results)
    assert len(found) == 8  # 2 mixes x 2 eras x (FastMCP, the SDK): no verdict on the floor
    assert all("floor" not in v.measured for v in found)
    assert [v.met for v in found[:2]] == [False, True]  # 3.00x FastMCP, 2.00x the SDK
    rows = {(row[0], row[1]): row[2] for row in realistic.ratio_rows(targets, results)}
    assert rows[("v1", "flask_mcp/gevent / floor/gevent")] == "0.67x"
    assert rows[("v1", "fastmcp/json / floor/gevent")] == "0.22x"
    assert rows[("v2", "sdk/json@2026 / floor/gevent@2026")] == "0.33x"
    assert ("v1", "floor/gevent / flask_mcp/gevent") not in rows
    assert ("v1", "flask_mcp/gevent / floor/gevent@2026") not in rows  # eras are not mixed
    ceilings = realistic.ceilings(targets, results)
    assert [(c["mix"], c["era"]) for c in ceilings] == [
        ("v1", "handshake"),
        ("v1", "2026"),
        ("v2", "handshake"),
        ("v2", "2026"),
    ]
    line = realistic.ceiling_line(ceilings[1])
    assert line.startswith("ceiling: floor vs fastmcp 4.50x, card v1 2026"), line
    assert "floor/gevent@2026 2250 vs fastmcp/json@2026 500 req/s" in line
    assert "flask_mcp/gevent@2026 at 0.67x the floor" in line and "not judged" in line


def test_a_card_run_without_its_floor_says_so() -> None:
    from benchmarks import realistic

    targets, results = _card_results()
    targets = [target for target in targets if target.framework != "floor"]
    ceiling = realistic.ceilings(targets, results)[0]
    assert ceiling["floor_vs_fastmcp"] is None
    assert realistic.ceiling_line(ceiling).startswith("ceiling: floor vs fastmcp –, card v1")


@pytest.mark.parametrize(("median", "status"), [(0.92, 0), (0.88, 1)])
def test_side_by_side_compare_oauth_judges_the_median(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    median: float,
    status: int,
) -> None:
    """``side_by_side --compare oauth`` divides by the server without authorization and
    judges issue 30's 0.9x on the median of the rounds."""
    from benchmarks import oauth_server
    from benchmarks import side_by_side

    seen: dict[str, t.Any] = {}

    def rounds(options: t.Any, era: str, repeats: int, *args: t.Any) -> dict[str, t.Any]:
        specs, bottom, setup = args
        seen.update(labels=[s.name for s in specs], bottom=bottom, setup=setup, era=era)
        return {f"{oauth_server.OAUTH}@16": (median, median)}

    monkeypatch.setattr(side_by_side.wrk, "available", lambda: True)
    monkeypatch.setattr(side_by_side, "run", rounds)
    assert side_by_side.main(["--compare", "oauth", "--era", "handshake"]) == status
    assert seen == {
        "labels": [oauth_server.PLAIN, oauth_server.OAUTH],
        "bottom": oauth_server.PLAIN,
        "setup": oauth_server.authorize,
        "era": "handshake",
    }
    assert ("NOT met" in capsys.readouterr().out) is (status == 1)


def test_the_card_side_by_side_judges_flask_mcp_over_each_fastest_mode() -> None:
    """``side_by_side --compare card`` divides Flask-MCP's median ratio to the floor by the
    fastest mode's of each framework, and shows the floor's own ceiling beside it."""
    from benchmarks import realistic

    medians = {
        "flask_mcp/gevent": (0.9, 0.9, 0),
        "floor/gevent": (1.0, 1.0, 0),
        "fastmcp/json": (0.2, 0.2, 3),
        "fastmcp/stateless-json": (0.25, 0.25, 0),
        "sdk/json": (0.5, 0.5, 0),
    }
    frameworks = {label: label.split("/")[0] for label in medians}
    found = realistic.side_by_side_verdicts(medians, frameworks, "handshake", "v1")
    assert [(v.target, v.met) for v in found] == [
        ("card v1 handshake, c=50, side by side: req/s vs fastmcp", False),
        ("card v1 handshake, c=50, side by side: req/s vs sdk", True),
    ]
    assert found[0].measured == "3.60x vs fastmcp/stateless-json (the floor: 4.00x)"
    assert found[1].measured == "1.80x vs sdk/json (the floor: 2.00x)"
    medians["flask_mcp/gevent"] = (2.0, 2.0, 1)  # fast, but a request of its own failed
    failed = realistic.side_by_side_verdicts(medians, frameworks, "handshake", "v1")[1]
    assert failed.met is False and failed.measured.endswith(", 1 failed")
    del frameworks["sdk/json"]
    skipped = realistic.side_by_side_verdicts(medians, frameworks, "2026", "v2")[1]
    assert skipped.met is None and skipped.measured == "–"


@pytest.mark.parametrize(("met", "status"), [(True, 0), (False, 1)])
def test_side_by_side_compare_card_exits_on_its_verdicts(
    monkeypatch: pytest.MonkeyPatch, met: bool, status: int
) -> None:
    from benchmarks import realistic
    from benchmarks import side_by_side

    seen: list[t.Any] = []

    def card_rounds(options: t.Any, era: str, repeats: int) -> list[report.Verdict]:
        seen.append((era, repeats))
        return [report.Verdict("card", ">= 4.0x", "measured", met)]

    monkeypatch.setattr(side_by_side.wrk, "available", lambda: True)
    monkeypatch.setattr(realistic, "side_by_side", card_rounds)
    assert side_by_side.main(["--compare", "card", "--repeats", "3"]) == status
    assert seen == [("2026", 3)]
