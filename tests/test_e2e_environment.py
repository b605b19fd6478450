"""One environment for every handler, end to end: gunicorn gevent and gthread, both eras.

This module also serves its own app (``tests.test_e2e_environment:app``): a
``before_request`` hook sets ``g.user`` from a header and Flask-Login loads
``current_user`` from it; a tool with ``ctx: Context`` (spawned, streaming its
progress) and one without (run in the view) must see the same request, ``g``,
session and user. ``async def`` tools run through ``app.ensure_sync``.
"""

from __future__ import annotations

import asyncio
import json
import time
import typing as t

import pytest
from flask import Flask
from flask import g
from flask import request
from flask import session
from flask_login import LoginManager
from flask_login import UserMixin
from flask_login import current_user
from harness import start_server

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import current_context

pytestmark = pytest.mark.e2e

mcp = MCP(name="environment-e2e", version="1.0.0")
ASK = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class User(UserMixin):
    def __init__(self, name: str) -> None:
        self.id = name


def facts() -> dict[str, t.Any]:
    """What a handler sees of the request it serves."""
    return {
        "g.user": g.get("user"),
        "header": request.headers.get("X-User"),
        "args": request.args.get("tenant"),
        "method": request.method,
        "session": session.get("user"),
        "current_user": current_user.get_id() if current_user.is_authenticated else None,
    }


@mcp.tool()
def inline_facts() -> str:
    """No Context: runs in the view."""
    return json.dumps(facts())


@mcp.tool()
def ctx_facts(ctx: Context) -> str:
    """A Context: runs in its own greenlet or thread; the progress opens the stream first."""
    ctx.progress(1, 2)
    return json.dumps(facts())


@mcp.tool()
def ask_facts(ctx: Context) -> str:
    """Elicit; on 2026-07-28 the retry runs it again, in the retry's request."""
    name = ctx.elicit("Name?", ASK)["content"]["name"]
    return json.dumps({**facts(), "name": name})


@mcp.tool()
def whose(pause: float, ctx: Context) -> str:
    """After a pause, tell whether current_context() is still this call's context."""
    time.sleep(pause)
    return json.dumps([current_context() is ctx, current_context().request_id == ctx.request_id])


@mcp.tool()
async def async_sleep(seconds: float) -> str:
    """An async tool that awaits."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@mcp.tool()
async def async_ctx(ctx: Context) -> str:
    """An async tool that uses its Context."""
    await asyncio.sleep(0.01)
    ctx.progress(1, 1)
    return json.dumps({**facts(), "same": current_context() is ctx})


app = Flask(__name__)
app.config.update(SECRET_KEY="e2e-environment-secret")
app.config.from_prefixed_env()
login = LoginManager(app)


@login.request_loader
def load_user(req: t.Any) -> User | None:
    name = req.headers.get("X-User")
    return User(name) if name else None


@app.before_request
def identify() -> None:
    g.user = request.headers.get("X-User")
    session["user"] = g.user


mcp.init_app(app)


# -- the official client ---------------------------------------------------------------


@pytest.fixture(params=["gevent", "gthread"], scope="module")
def server(request: pytest.FixtureRequest) -> t.Iterator[t.Any]:
    with start_server("tests.test_e2e_environment:app", request.param, threads=8) as srv:
        yield srv


EXPECTED = {
    "g.user": "ada",
    "header": "ada",
    "args": "acme",
    "method": "POST",
    "session": "ada",
    "current_user": "ada",
}
MODES = ["legacy", "2026-07-28"]


def run(url: str, mode: str, main: t.Callable[[t.Any], t.Awaitable[t.Any]]) -> t.Any:
    """Connect the official client as user ``ada`` and run ``main(client)``."""
    import anyio
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def elicitation(context: t.Any, params: t.Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def connected() -> t.Any:
        http = httpx2.AsyncClient(headers={"X-User": "ada"}, timeout=30)
        transport = streamable_http_client(f"{url}?tenant=acme", http_client=http)
        async with http, Client(transport, mode=mode, elicitation_callback=elicitation) as client:
            return await main(client)

    return anyio.run(connected)


def text_of(result: t.Any) -> str:
    assert not result.is_error, result
    return str(result.content[0].text)


@pytest.mark.parametrize("mode", MODES)
def test_handlers_see_one_environment(server: t.Any, mode: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def main(client: t.Any) -> list[t.Any]:
        seen = [json.loads(text_of(await client.call_tool("inline_facts", {})))]
        result = await client.call_tool("ctx_facts", {}, progress_callback=on_progress)
        seen.append(json.loads(text_of(result)))
        seen.append(json.loads(text_of(await client.call_tool("ask_facts", {}))))
        return seen

    inline, spawned, asked = run(server.url, mode, main)
    assert inline == EXPECTED
    assert spawned == EXPECTED
    assert asked == {**EXPECTED, "name": "Ada"}
    assert progress == [1]


@pytest.mark.parametrize("mode", MODES)
def test_async_tools(server: t.Any, mode: str) -> None:
    async def main(client: t.Any) -> tuple[str, t.Any]:
        slept = text_of(await client.call_tool("async_sleep", {"seconds": 0.01}))
        return slept, json.loads(text_of(await client.call_tool("async_ctx", {})))

    slept, seen = run(server.url, mode, main)
    assert slept == "slept 0.01"
    assert seen == {**EXPECTED, "same": True}


def test_current_context_is_per_greenlet_or_thread(server: t.Any) -> None:
    import anyio

    async def main(client: t.Any) -> list[t.Any]:
        answers: list[t.Any] = []

        async def one(pause: float) -> None:
            answers.append(json.loads(text_of(await client.call_tool("whose", {"pause": pause}))))

        async with anyio.create_task_group() as group:
            for pause in (0.3, 0.2, 0.1, 0.0):
                group.start_soon(one, pause)
        return answers

    assert run(server.url, "legacy", main) == [[True, True]] * 4
