"""The official ``mcp`` Python client against real servers (gunicorn, waitress, uWSGI)."""

from __future__ import annotations

import typing as t

import anyio
import pytest
from harness import SERVERS
from harness import start_server
from wire import client
from wire import text_of

pytestmark = pytest.mark.e2e


#: Besides every server, uWSGI behind its own HTTP router, whose buffering and keep-alive
#: handling sit between the client and Flask-MCP.
@pytest.fixture(params=[*SERVERS, "uwsgi-router"], scope="module")
def server(request: pytest.FixtureRequest) -> t.Iterator[t.Any]:
    with start_server("tests._apps.backchannel:app", request.param, threads=8) as srv:
        yield srv


def test_back_channel_round_trips(server: t.Any) -> None:
    async def main() -> None:
        async with client(server.url) as c:
            assert text_of(await c.call_tool("add", {"a": 2, "b": 40})) == '{"result":42}'
            assert text_of(await c.call_tool("sample", {"prompt": "hi"})) == "model said: HI"
            assert text_of(await c.call_tool("ask", {})) == "accept:Ada"
            assert text_of(await c.call_tool("roots", {})) == "file:///tmp/a,file:///tmp/b"

    anyio.run(main)


def test_progress_survives_server_closed_stream(server: t.Any) -> None:
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    async def main() -> None:
        async with client(server.url) as c:
            result = await c.call_tool("polled", {"steps": 6}, progress_callback=progress)
            assert text_of(result) == "finished 6"

    anyio.run(main)
    assert seen == [1, 2, 3, 4, 5, 6]
