"""The official conformance suites (the project's pinned copy) against examples/everything.py.

Handshake-era legs: suite 0.1.16 ``--suite all`` and 0.2.0-alpha.12 at 2025-11-25, under
gunicorn gevent and gthread workers. The 2026-07-28 leg lives in test_e2e_stateless.py.
"""

from __future__ import annotations

import re
import typing as t

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.conformance]
TOTAL = re.compile(r"^Total: (\d+) passed, (\d+) failed", re.MULTILINE)


def summary(output: str) -> tuple[int, int, int]:
    """Return (passed, failed, warnings) from a suite's output."""
    found = TOTAL.findall(output)
    assert found, f"no summary in the suite's output:\n{output[-3000:]}"
    passed, failed = (int(n) for n in found[-1])
    warnings = len(re.findall(r"WARNING", output))
    return passed, failed, warnings


@pytest.fixture(params=["gevent", "gthread"], scope="module")
def everything(request: pytest.FixtureRequest) -> t.Iterator[t.Any]:
    from conftest import start_server

    with start_server("examples.everything:app", request.param, threads=8) as server:
        yield server


def test_suite_0_1_16(everything: t.Any, conformance: t.Any) -> None:
    result = conformance(everything.url, "--suite", "all", timeout=300)
    passed, failed, warnings = summary(result.stdout)
    print(f"0.1.16 --suite all: {passed} passed, {failed} failed, {warnings} warnings")
    assert failed == 0 and result.returncode == 0, result.stdout[-4000:]
    assert passed >= 46


def test_alpha_2025_11_25(everything: t.Any, conformance: t.Any) -> None:
    result = conformance(
        everything.url, "--suite", "all", "--spec-version", "2025-11-25", next=True, timeout=300
    )
    passed, failed, warnings = summary(result.stdout)
    print(f"alpha 2025-11-25 --suite all: {passed} passed, {failed} failed, {warnings} warnings")
    assert failed == 0 and result.returncode == 0, result.stdout[-4000:]
    assert warnings == 0, result.stdout[-4000:]
    assert passed >= 83
