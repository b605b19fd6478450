"""``python -m benchmarks`` exits 1 when a target is missed (no benchmark is run here).

Each benchmark's ``run(options)`` returns its figures with ``report.records(found)`` under
``"verdicts"``; the command line collects them and turns them into its exit status.
"""

from __future__ import annotations

import sys
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
