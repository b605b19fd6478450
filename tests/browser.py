"""Headless Chromium for the browser tests, driven by Playwright's Python package.

Browsers cannot be downloaded on these machines (``playwright install`` fails), so the
tests drive Debian's ``chromium`` (``apt-get install chromium``; ``scripts/test`` installs
it in CI) through ``executable_path``.  Without it a browser test fails in CI and skips
elsewhere (:func:`harness.skip_or_fail`).

``launch_chromium()`` is a context manager yielding a Playwright ``Browser``; the
``browser`` fixture in ``conftest.py`` shares one per test session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import typing as t
from collections.abc import Iterator

from harness import skip_or_fail

#: Flags that keep Chromium quiet on a machine with a closed network: no background
#: connections (refused here, many at a time), no component updates, no sync.
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)

CHROMIUM_HINT = (
    "needs Chromium and Playwright's Python package: apt-get install chromium; "
    'pip install -e ".[test]" (scripts/test installs both in CI)'
)


def chromium_path() -> str:
    """The Chromium executable: ``MCP_TEST_CHROMIUM``, else ``chromium`` on the ``PATH``."""
    path = os.environ.get("MCP_TEST_CHROMIUM") or shutil.which("chromium")
    if path is None:
        skip_or_fail(CHROMIUM_HINT)
    return path


@contextlib.contextmanager
def launch_chromium() -> Iterator[t.Any]:
    """Start headless Chromium under Playwright; yields a ``playwright.sync_api.Browser``."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail(CHROMIUM_HINT)
    executable = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=list(CHROMIUM_ARGS))
        try:
            yield browser
        finally:
            browser.close()
