"""In-process delivery of a request stream (``flask_mcp.backends.redis.own_streams``), on Redis.

The worker that runs a request reads its events from memory, yet they are in Redis
for a client resuming on another worker, whose reader then supersedes this one; the
drop after the end waits and is written later. Round trips: ``test_redis_round_trips.py``.
"""

from __future__ import annotations

import threading
import typing as t

import pytest
from flask import Flask
from harness import listening
from harness import new_session
from harness import redis_backends
from wire import ThreadedTestClient
from wire import add_two_phase
from wire import initialize
from wire import open_get
from wire import read_events
from wire import rpc

from flask_mcp import MCP
from flask_mcp.backends.base import END
from flask_mcp.backends.base import MESSAGE

pytestmark = pytest.mark.redis


@pytest.fixture
def pair(redis_url: str) -> t.Iterator[tuple[t.Any, t.Any]]:
    """Two ``RedisBackend`` workers on a fresh prefix, listening; keys deleted afterwards."""
    with redis_backends(redis_url, "local") as (a, b):
        listening(a, 10)
        listening(b, 10)
        yield a, b


def test_events_are_read_here_and_resumed_elsewhere(pair: tuple[t.Any, t.Any]) -> None:
    a, b = pair
    sid = new_session(a, "s1", 1000)
    a.open_stream(sid, "r", request_id=7)
    assert a.first_seq(sid, "r") is None  # not in Redis before its first event
    token = a.attach(sid, "r")
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"p": 1}}
    assert a.append(sid, "r", MESSAGE, progress) == 1
    found = a.read(sid, "r", 0, token, 1)
    assert [(e.seq, e.message) for e in found.events] == [(1, progress)]
    # The client resumes on worker b: the event is in Redis, and a's reader is superseded.
    other = b.attach(sid, "r")
    assert [e.message for e in b.read(sid, "r", 0, other, 1).events] == [progress]
    assert a.read(sid, "r", 1, token, 5).superseded
    # a's handler answers; b's reader is woken and gets it.
    a.append_many(
        [(sid, "r", MESSAGE, {"jsonrpc": "2.0", "id": 7, "result": {}}), (sid, "r", END, None)]
    )
    kinds = [e.kind for e in b.read(sid, "r", 1, other, 5).events]
    assert kinds == [MESSAGE, END]


def test_a_silent_stream_opens_once_its_reader_waited(pair: tuple[t.Any, t.Any]) -> None:
    a, b = pair
    sid = new_session(a, "s2", 1000)
    a.open_stream(sid, "r", request_id="q")
    token = a.attach(sid, "r")
    assert a.read(sid, "r", 0, token, 0.05).events == []
    assert b.first_seq(sid, "r") == 1  # a client may resume it from its priming event
    assert b.client.hget(b.keys.meta(sid), "w:r").decode() == a.worker  # for the sweep
    assert b.client.sismember(b.keys.owned(a.worker), f"{sid} r")


def test_the_drop_after_the_end_waits_for_a_flush(pair: tuple[t.Any, t.Any]) -> None:
    a, b = pair
    sid = new_session(a, "s3", 1000)
    a.open_stream(sid, "r", request_id=1)
    token = a.attach(sid, "r")
    a.append_many(
        [(sid, "r", MESSAGE, {"jsonrpc": "2.0", "id": 1, "result": {}}), (sid, "r", END, None)]
    )
    assert [e.kind for e in a.read(sid, "r", 0, token, 1).events] == [MESSAGE, END]
    a.detach(sid, "r", token)
    a.drop_stream(sid, "r")
    assert a.own_streams.get(sid, "r") is None
    a.flush()
    assert b.first_seq(sid, "r") is None
    assert not b.client.exists(b.keys.stream(sid, "r")[0])


def test_a_deleted_session_ends_the_stream_read_here(pair: tuple[t.Any, t.Any]) -> None:
    a, b = pair
    sid = new_session(a, "s4", 1000)
    a.open_stream(sid, "r", request_id=1)
    token = a.attach(sid, "r")
    a.append(sid, "r", MESSAGE, {"jsonrpc": "2.0", "method": "x"})
    assert len(a.read(sid, "r", 0, token, 1).events) == 1
    assert b.delete_session(sid)  # on another worker: its wake-up reaches a
    assert a.read(sid, "r", 1, token, 5).missing


def test_a_closed_post_stream_resumes_on_another_worker(pair: tuple[t.Any, t.Any]) -> None:
    """Two apps on one Redis (two workers): the POST runs on the first, which reads its
    events in memory; the client resumes on the second, from Redis."""
    release = threading.Event()
    apps = []
    for backend in pair:
        mcp = MCP(name="local", version="1.0.0")
        add_two_phase(mcp, release)
        app = Flask(f"local{len(apps)}")
        app.config.update(TESTING=True, SECRET_KEY="s", MCP_BACKEND=backend)
        app.test_client_class = ThreadedTestClient
        mcp.init_app(app)
        apps.append(app)
    first, second = apps[0].test_client(), apps[1].test_client()
    session = initialize(first)
    text = rpc(first, session, "tools/call", {"name": "two_phase"}).get_data(as_text=True)
    ids = [line[4:] for line in text.splitlines() if line.startswith("id: ")]
    assert "phase 1" in text and "complete" not in text
    release.set()
    events = read_events(iter(open_get(second, session, ids[-1]).response), 2)
    assert events[0]["params"]["data"] == "phase 2"
    assert events[1]["result"]["content"][0]["text"] == "complete"
    # The resume reads the stream, it does not write it: the second worker does not own it
    # (an entry there, which the stream's end does not take out, stayed for its life).
    reader = pair[1]
    assert reader.client.smembers(reader.keys.owned(reader.worker)) == set()


def test_shedding_after_a_written_leave_fails_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """The streams a leave puts over ``MCP_SSE_RESUME_BYTES`` are evicted after the detach
    was written (its reply names them); Redis failing then fails neither the request nor
    the listener that wrote it: the disowned streams are noted, the session's next message
    applies the bound again."""
    from flask_mcp.backends.redis.streams import StreamLogs
    from flask_mcp.errors import BackendUnavailable

    class Down:
        def stream_keys(self, session_id: str, stream_id: str) -> list[str]:
            return [session_id, stream_id]

        def run(self, name: str, keys: list[str], *args: t.Any) -> t.Any:
            raise BackendUnavailable(f"{name} on {keys}: Redis is down")

    logs = StreamLogs(t.cast(t.Any, Down()))
    with caplog.at_level("DEBUG", logger="flask_mcp"):
        logs.settle_reply("sid", [0, b"left-first", b"worker-1", b"ended"])
    assert logs.disowned == {"worker-1": {"sid ended"}}
    assert "evict on ['sid', 'left-first']: Redis is down" in caplog.text
