"""How many round trips to Redis each kind of request costs (a real Redis, counted per send).

A round trip is one send on a connection: a command, or a whole pipeline. Only
the sends of the test's own thread count (the listener thread beats and writes
the ledger on its own). These counts are the Redis backend's cost model
(issue 16); a change that adds a round trip to a hot path fails here.
"""

from __future__ import annotations

import threading
import typing as t
import uuid

import pytest
import redis
from wire import initialize
from wire import post
from wire import rpc
from wire import sse_messages

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.backends.base import GENERAL_STREAM

pytestmark = pytest.mark.redis


class Counting(redis.Connection):
    """A connection that notes which thread sends."""

    sends: t.ClassVar[list[int]] = []

    def send_packed_command(self, command: t.Any, check_health: bool = True) -> None:
        Counting.sends.append(threading.get_ident())
        super().send_packed_command(command, check_health)


@pytest.fixture
def backend(redis_url: str) -> t.Iterator[t.Any]:
    from flask_mcp.backends.redis import RedisBackend

    prefix = f"trips-{uuid.uuid4().hex[:10]}:"
    pool = redis.ConnectionPool.from_url(redis_url, connection_class=Counting)
    made = RedisBackend(redis.Redis(connection_pool=pool), prefix=prefix)
    yield made
    made.close()
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(f"{prefix}*", count=1000):
        client.delete(key)
    client.close()
    pool.disconnect()


@pytest.fixture
def app(backend: t.Any) -> t.Any:
    from flask import Flask
    from wire import ThreadedTestClient

    mcp = MCP(name="trips", version="1.0.0")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    def chatty(ctx: Context) -> str:
        """Report progress."""
        ctx.progress(1, 2)
        return "done"

    app = Flask("trips")
    app.config.update(TESTING=True, SECRET_KEY="s", MCP_BACKEND=backend)
    app.test_client_class = ThreadedTestClient
    mcp.init_app(app)
    app.extensions["trips_mcp"] = mcp
    return app


def trips(action: t.Callable[[], t.Any]) -> tuple[int, t.Any]:
    """Run ``action``; return the round trips this thread made, and its result."""
    me = threading.get_ident()
    before = Counting.sends.count(me)
    result = action()
    return Counting.sends.count(me) - before, result


def test_a_json_tools_call_costs_one_round_trip(app: t.Any) -> None:
    client = app.test_client()
    session = initialize(client)
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    rpc(client, session, "tools/call", call)  # warm: connections, scripts
    for _ in range(3):
        count, response = trips(lambda: rpc(client, session, "tools/call", call))
        assert response.status_code == 200
        assert response.get_json()["result"]["structuredContent"] == {"result": 3}
        assert count == 1


def test_a_notification_costs_one_round_trip(app: t.Any) -> None:
    client = app.test_client()
    session = initialize(client)
    note = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
    post(client, note, session)
    count, response = trips(lambda: post(client, note, session))
    assert response.status_code == 202
    assert count == 1


def test_a_streaming_tools_call(app: t.Any) -> None:
    client = app.test_client()
    session = initialize(client)
    call = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}
    rpc(client, session, "tools/call", call)
    count, response = trips(lambda: rpc(client, session, "tools/call", call))
    messages = sse_messages(response)
    assert messages[-1]["result"]["content"][0]["text"] == "done"
    # The lookup, opening the stream, attaching its reader, reading, appending the
    # progress and the answer (the handler's greenlet counts apart), detaching.
    print("streaming call round trips:", count)
    assert count <= 5


def test_fan_out_costs_one_round_trip_for_many_sessions(app: t.Any, backend: t.Any) -> None:
    client = app.test_client()
    sessions = [initialize(client) for _ in range(20)]
    mcp = app.extensions["trips_mcp"]
    with app.app_context():
        count, _ = trips(lambda: mcp.broadcast("notifications/message", {"x": 1}, app=app))
        # the list of sessions, every append in one pipeline, then the wake-up that
        # carries the event with each stream's sequence number (known after the appends)
        assert count == 3
        for sid in sessions[:5]:
            assert backend.first_seq(sid, GENERAL_STREAM) is not None
        count, _ = trips(lambda: mcp.notify_resource_updated("test://x", app=app))
        # a publish, the list, the records in one pipeline, the (empty) appends
        assert count <= 4
