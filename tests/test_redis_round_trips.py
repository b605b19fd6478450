"""How many round trips to Redis each kind of request costs (a real Redis, counted per send).

A round trip is one send on a connection: a command, or a whole pipeline. The
sends of the listener thread do not count (it beats, and writes the ledger and
the deferred stream drops of many requests at once); a streaming call counts its
handler's sends too, command by command. These counts are the Redis backend's
cost model (issue 16); a change that adds a round trip to a hot path fails here.
These tests run on threads, which always look the session up: a gevent worker
serves a session it served a moment ago with none (``test_e2e_hot_sessions``).
"""

from __future__ import annotations

import math
import threading
import time
import typing as t
import uuid

import pytest
import redis
from harness import delete_keys
from wire import initialize
from wire import post
from wire import rpc
from wire import sse_messages

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp.backends.base import GENERAL_STREAM
from flask_mcp.backends.redis import lane as _redis_lane
from flask_mcp.backends.redis.lane import _send as _lane_send
from flask_mcp.runtime import supervisor

pytestmark = pytest.mark.redis


class Counting(redis.Connection):
    """A connection that notes which thread sends, and what."""

    sends: t.ClassVar[list[int]] = []
    #: Per send: the sending thread's name and the commands sent.
    log: t.ClassVar[list[tuple[str, bytes]]] = []

    def send_packed_command(self, command: t.Any, check_health: bool = True) -> None:
        Counting.sends.append(threading.get_ident())
        chunks = [command] if isinstance(command, (bytes, str, memoryview)) else command
        packed = b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)
        Counting.log.append((threading.current_thread().name, packed))
        super().send_packed_command(command, check_health)


def _counting_send(connection: t.Any, packed: bytes) -> None:
    """The lane's send (:mod:`flask_mcp.backends.redis.lane`), noted like the others."""
    Counting.sends.append(threading.get_ident())
    Counting.log.append((threading.current_thread().name, packed))
    _lane_send(connection, packed)


def commands(packed: bytes, scripts: dict[str, str]) -> list[str]:
    """The commands of one send (RESP arrays): their names, a script's for ``EVALSHA``."""
    names, lines, i = [], packed.split(b"\r\n"), 0
    while i < len(lines) and lines[i].startswith(b"*"):
        count = int(lines[i][1:])
        words = [lines[i + 2 + 2 * k] for k in range(count)]
        name = words[0].decode().upper()
        names.append(scripts.get(words[1].decode(), "?") if name == "EVALSHA" else name)
        i += 1 + 2 * count
    return names


@pytest.fixture
def backend(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> t.Iterator[t.Any]:
    from flask_mcp.backends.redis import RedisBackend

    monkeypatch.setattr(_redis_lane, "_send", _counting_send)
    prefix = f"trips-{uuid.uuid4().hex[:10]}:"
    pool = redis.ConnectionPool.from_url(redis_url, connection_class=Counting)
    made = RedisBackend(redis.Redis(connection_pool=pool), prefix=prefix)
    yield made
    made.close()
    delete_keys(redis_url, f"{prefix}*")
    pool.disconnect()


@pytest.fixture
def app(backend: t.Any, monkeypatch: pytest.MonkeyPatch) -> t.Any:
    from flask import Flask
    from wire import ThreadedTestClient

    # The supervisor reaps a second after the first request, then every 10 s: its beat
    # and flush are no request's trips, and on a slow machine they fell in a counted window.
    monkeypatch.setattr(supervisor, "REAP_EVERY", math.inf)

    mcp = MCP(name="trips", version="1.0.0")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    def quiet(ctx: Context) -> str:
        """Could report progress, does not."""
        return "quiet"

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
    settle_registry(app, mcp)
    return app


def settle_registry(app: t.Any, mcp: MCP) -> None:
    """Start the worker's registry watcher and let it subscribe: a worker reads the shared
    registry log once when it starts and once when its watcher has subscribed (an
    announcement could have come between), then only when one is announced."""
    sync = mcp._syncs[app]
    sync.before_request()  # the first read; starts the watcher
    deadline = time.monotonic() + 10
    while sync._heard < 2:
        assert time.monotonic() < deadline, "the registry watcher did not subscribe"
        time.sleep(0.01)
    sync.before_request()


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


def test_a_streaming_tools_call_costs_three_round_trips(app: t.Any, backend: t.Any) -> None:
    client = app.test_client()
    session = initialize(client)
    call = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}
    sse_messages(rpc(client, session, "tools/call", call))  # warm: connections, scripts
    backend.flush()
    scripts = {script.sha: name for name, script in backend.commands.scripts.items()}
    start = len(Counting.log)
    messages = sse_messages(rpc(client, session, "tools/call", call))
    assert messages[0]["params"]["progress"] == 1
    assert messages[-1]["result"]["content"][0]["text"] == "done"
    # Every thread but the listener's (it beats and writes what waits, many requests'
    # worth at once): the request's, and its handler's.
    sent = [
        (name, commands(packed, scripts))
        for name, packed in Counting.log[start:]
        if name != "flask-mcp-redis-listener"
    ]
    request = threading.current_thread().name
    assert [c for name, c in sent if name == request] == [["load"]]
    # The handler opens the stream with its first event (and notes it for the sweep), then
    # writes the answer and the end; the POST reads them in-process, not from Redis.
    assert [c for name, c in sent if name != request] == [["emit", "SADD"], ["emit"]]
    assert len(sent) == 3
    # The drop of the delivered stream waits: it rides on the session's next lookup (unless
    # the listener wrote it first), in the same round trip.
    start = len(Counting.log)
    count, response = trips(lambda: rpc(client, session, "tools/list"))
    assert response.status_code == 200 and count == 1
    sent = [commands(p, scripts) for name, p in Counting.log[start:] if name == request]
    assert sent in ([["drop", "load"]], [["load"]])
    assert not backend.own_streams.pending
    prefix = backend.keys.tagged(session)
    left = {k.decode() for k in backend.client.keys(prefix + "x:*")}
    assert left == set(), left


def test_a_tool_that_could_stream_but_answers_at_once_costs_two(app: t.Any, backend: t.Any) -> None:
    client = app.test_client()
    session = initialize(client)
    call = {"name": "quiet", "arguments": {}}
    rpc(client, session, "tools/call", call)
    backend.flush()  # the warm-up's drop
    scripts = {script.sha: name for name, script in backend.commands.scripts.items()}
    start = len(Counting.log)
    response = rpc(client, session, "tools/call", call)
    assert response.get_json()["result"]["content"][0]["text"] == "quiet"
    sent = [commands(p, scripts) for name, p in Counting.log[start:] if "listener" not in name]
    # The lookup; the answer and the end written (the stream opened with them); read here.
    assert sorted(sent) == [["emit", "SADD"], ["load"]]


def test_fan_out_costs_one_round_trip_for_many_sessions(app: t.Any, backend: t.Any) -> None:
    client = app.test_client()
    sessions = [initialize(client) for _ in range(20)]
    mcp = app.extensions["trips_mcp"]
    with app.app_context():
        # Warm: a Redis that has not run the append script yet answers NOSCRIPT once.
        mcp.broadcast("notifications/message", {"x": 0}, app=app)
        count, _ = trips(lambda: mcp.broadcast("notifications/message", {"x": 1}, app=app))
        # the list of sessions, every append in one pipeline, then the wake-up that
        # carries the event with each stream's sequence number (known after the appends)
        assert count == 3
        for sid in sessions[:5]:
            assert backend.first_seq(sid, GENERAL_STREAM) is not None
        count, _ = trips(lambda: mcp.notify_resource_updated("test://x", app=app))
        # a publish, the list, the records in one pipeline, the (empty) appends
        assert count <= 4
