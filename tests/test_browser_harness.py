"""The browser harness itself: Debian's Chromium, driven by Playwright, reaches a real server."""

from __future__ import annotations

import typing as t

import pytest
from harness import ServeFactory

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


def test_chromium_loads_a_page_from_gunicorn(serve: ServeFactory, browser: t.Any) -> None:
    server = serve("examples.quickstart:app", "gevent")
    page = browser.new_page()
    try:
        response = page.goto(f"{server.base_url}/mcp")
        assert response is not None
        # A browser's plain GET without an event-stream Accept is refused by the endpoint,
        # with a JSON-RPC error body the page shows as text.
        assert response.status in (400, 405, 406)
        assert "jsonrpc" in page.content()
    finally:
        page.close()
