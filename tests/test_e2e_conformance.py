"""The official conformance suites (the project's pinned copy) against examples/everything.py.

Handshake-era legs: suite 0.1.16 ``--suite all`` and 0.2.0-alpha.12 at 2025-11-25, under
every server of ``harness.SERVERS`` (gunicorn gevent and gthread, waitress, uWSGI in gevent
mode and with threads). The 2026-07-28 leg lives in test_e2e_stateless.py; the alpha's
skills scenarios (``sep-2640-*``, which need ``--force``) in test_e2e_skills.py, against
the skills app, in both eras.
"""

from __future__ import annotations

import typing as t

import pytest
from harness import SERVERS
from harness import run_suite
from harness import start_server

pytestmark = [pytest.mark.e2e, pytest.mark.conformance]


@pytest.fixture(params=SERVERS, scope="module")
def everything(request: pytest.FixtureRequest) -> t.Iterator[t.Any]:
    with start_server("examples.everything:app", request.param, threads=8) as server:
        yield server


def test_suite_0_1_16(everything: t.Any, conformance: t.Any) -> None:
    result = run_suite(conformance, everything.url, "--suite", "all")
    assert result.failed == 0 and result.returncode == 0, result.output[-4000:]
    assert not result.by_status.get("FAILURE")
    assert result.passed >= 46
    assert result.warnings() == []


def test_alpha_2025_11_25(everything: t.Any, conformance: t.Any) -> None:
    result = run_suite(
        conformance, everything.url, "--suite", "all", "--spec-version", "2025-11-25", next=True
    )
    assert result.failed == 0 and result.returncode == 0, result.output[-4000:]
    assert not result.by_status.get("FAILURE")
    assert result.passed >= 83
    assert result.warnings() == []
