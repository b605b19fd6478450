"""The handshake-era stream loop: a vanished client, heartbeats, and GETs without a free slot."""

from __future__ import annotations

import socket
import threading
import types
import typing as t

import gunicorn.config
import pytest
from flask import Flask
from werkzeug.test import EnvironBuilder
from wire import initialize
from wire import open_get
from wire import read_events
from wire import rpc

from flask_mcp import MCP
from flask_mcp.auth import AuthInfo
from flask_mcp.backends.base import MESSAGE
from flask_mcp.backends.base import Event
from flask_mcp.backends.base import ReadResult
from flask_mcp.runtime.runs import StreamSlots
from flask_mcp.transport import sse
from flask_mcp.wakeup import GreenWakeup


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class IdleOutbox:
    """An outbox on which nothing happens; each read advances the fake clock by its timeout."""

    stream_id = "s"
    resumable = True

    def __init__(self, clock: Clock, events_per_read: int = 0) -> None:
        self.clock = clock
        self.waits: list[float] = []
        self.events_per_read = events_per_read
        self.seq = 0

    def attach(self) -> int:
        return 1

    def detach(self, token: int) -> None:
        return None

    def read(self, after: int, token: int, timeout: float) -> ReadResult:
        self.waits.append(timeout)
        if self.events_per_read:
            self.clock.now += 0.01
            self.seq += 1
            return ReadResult([Event(self.seq, MESSAGE, {"jsonrpc": "2.0", "method": "m"})])
        self.clock.now += timeout
        return ReadResult([])


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(sse, "time", types.SimpleNamespace(monotonic=clock))
    return clock


@pytest.fixture
def connection() -> t.Iterator[tuple[socket.socket, socket.socket]]:
    server_side, client_side = socket.socketpair()
    yield server_side, client_side
    server_side.close()
    client_side.close()


def reader(outbox: t.Any, sock: t.Any, heartbeat: float = 2.5) -> sse.StreamReader:
    return sse.StreamReader(
        outbox,
        after=0,
        with_ids=True,
        heartbeat=heartbeat,
        max_seconds=None,
        retry_ms=1000,
        sock=sock,
    )


def test_idle_stream_checks_the_client_every_second_and_beats_on_time(
    clock: Clock, connection: tuple[socket.socket, socket.socket]
) -> None:
    server_side, client_side = connection
    outbox = IdleOutbox(clock)
    stream = reader(outbox, server_side)
    chunks = stream.iterate()
    assert [next(chunks), next(chunks)] == [sse.HEARTBEAT, sse.HEARTBEAT]
    assert outbox.waits == pytest.approx([1.0, 1.0, 0.5, 1.0, 1.0, 0.5])
    assert clock.now == pytest.approx(5.0)  # a heartbeat every 2.5 s, as configured

    client_side.close()  # the client leaves without a word
    assert list(chunks) == []
    assert stream.reason == "client-gone"
    assert clock.now == pytest.approx(6.0)  # at the next check, not at a failed write


class WatchingOutbox(IdleOutbox):
    """Reads that wait on a GreenWakeup, as the Redis stream reader's do under gevent.

    The fake clock advances by the timeout; the real wait is short, but the
    next one after :attr:`goodbye` is set is long: only the client's socket ends it.
    """

    goodbye = False

    def read(self, after: int, token: int, timeout: float) -> ReadResult:
        self.waits.append(timeout)
        self.clock.now += timeout
        real, self.goodbye = (30.0 if self.goodbye else 0.001), False
        GreenWakeup().wait(real)
        return ReadResult([])


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> t.Iterator[tuple[t.Any, t.Any]]:
    """A gevent socket pair (the server's side, the client's), its client watchable."""
    from gevent import socket as gsocket

    monkeypatch.setattr(sse, "can_watch_clients", lambda: True)
    server_side, client_side = gsocket.socketpair()
    with server_side, client_side:
        yield server_side, client_side


def test_under_gevent_an_idle_stream_watches_its_client_instead_of_checking_each_second(
    clock: Clock, watched: tuple[t.Any, t.Any]
) -> None:
    server_side, client_side = watched
    outbox = WatchingOutbox(clock)
    stream = reader(outbox, server_side)
    chunks = stream.iterate()
    assert [next(chunks), next(chunks)] == [sse.HEARTBEAT, sse.HEARTBEAT]
    # one short read shows the backend's waits watch the socket: then up to the heartbeat
    assert outbox.waits == pytest.approx([1.0, 1.5, 2.5])
    outbox.goodbye = True
    client_side.close()  # the client leaves without a word: the read ends at once
    assert list(chunks) == []
    assert stream.reason == "client-gone"


def test_a_client_that_sends_data_is_checked_each_second_again(
    clock: Clock, watched: tuple[t.Any, t.Any]
) -> None:
    server_side, client_side = watched
    outbox = WatchingOutbox(clock)
    chunks = reader(outbox, server_side).iterate()
    assert next(chunks) == sse.HEARTBEAT
    outbox.goodbye = True
    client_side.sendall(b"x")  # readable, but not a goodbye
    assert [next(chunks), next(chunks)] == [sse.HEARTBEAT, sse.HEARTBEAT]
    assert outbox.waits[:3] == pytest.approx([1.0, 1.5, 2.5])
    assert max(outbox.waits[4:]) <= sse.LIVENESS_INTERVAL


def test_without_a_socket_the_stream_waits_for_the_heartbeat(clock: Clock) -> None:
    outbox = IdleOutbox(clock)
    chunks = reader(outbox, None).iterate()
    assert [next(chunks), next(chunks)] == [sse.HEARTBEAT, sse.HEARTBEAT]
    assert outbox.waits == pytest.approx([2.5, 2.5])


def test_a_busy_stream_does_not_check_the_client_per_event(
    clock: Clock, connection: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[t.Any] = []
    monkeypatch.setattr(sse, "client_gone", lambda sock: checks.append(sock) or False)
    outbox = IdleOutbox(clock, events_per_read=1)
    chunks = reader(outbox, connection[0]).iterate()
    frames = [next(chunks) for _ in range(50)]
    assert all(frame.startswith(b"id: s-") for frame in frames)
    assert len(checks) <= 1  # once, before the first read: not once per event


@pytest.mark.parametrize("events_per_read", [0, 1], ids=["idle", "busy"])
def test_a_stream_ends_as_the_graceful_timeout_of_its_stopping_worker_runs_out(
    clock: Clock,
    connection: tuple[socket.socket, socket.socket],
    monkeypatch: pytest.MonkeyPatch,
    events_per_read: int,
) -> None:
    """A gthread worker that stops gives its connections ``--graceful-timeout``, then its
    process waits at exit for the threads that still serve them. A stream, idle or busy,
    sees the stop at a liveness check and ends before that timeout runs out, as its time
    bound ends it (a ``retry`` hint here), told as ``"shutdown"``. It went on."""
    grace: list[float | None] = [None]  # the worker does not stop
    monkeypatch.setattr(sse, "worker_grace", lambda: grace[0])
    monkeypatch.setattr(sse, "gevent_active", lambda: False)  # a threaded worker
    stream = reader(IdleOutbox(clock, events_per_read), connection[0])
    chunks = stream.iterate()
    while clock.now < 10.0:
        next(chunks)
    grace[0], stopped = 5.0, clock.now  # the worker stops
    assert list(chunks)[-1] == sse.retry(1000)
    assert stream.reason == "shutdown"
    assert stopped + 5.0 - 2 * sse.LIVENESS_INTERVAL <= clock.now
    assert clock.now <= stopped + 5.0 - sse.LIVENESS_INTERVAL + 0.01


def test_a_stopping_worker_leaves_a_stream_its_client_cannot_resume_to_its_answer(
    clock: Clock, connection: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stateless request's stream (no event ids) goes on until its answer: ended, the
    answer would be lost to its client, which cannot resume it."""
    monkeypatch.setattr(sse, "worker_grace", lambda: 0.0)  # stopping
    monkeypatch.setattr(sse, "gevent_active", lambda: False)
    stream = sse.StreamReader(
        IdleOutbox(clock), after=0, with_ids=False, heartbeat=2.5, retry_ms=1000, sock=connection[0]
    )
    chunks = stream.iterate()
    assert [next(chunks) for _ in range(4)] == [sse.HEARTBEAT] * 4


# -- GET streams a threaded worker cannot hold ------------------------------------------------


@pytest.fixture
def small_app(mcp_server: MCP) -> Flask:
    """An app whose worker holds two streams, of which one GET stream (a gthread worker)."""
    app = Flask("small")
    app.config.update(TESTING=True, MCP_MAX_STREAMS=2)
    mcp_server.init_app(app)
    return app


def fields_of(body: bytes) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in body.decode().splitlines() if ": " in line)


def test_one_client_holds_only_its_share_of_the_slots() -> None:
    """``--threads 8``: 7 slots, 3 of them for GET streams; one client may hold 4 and 2."""
    slots = StreamSlots(7, share=0.5)
    hostile = [slots.acquire(None, "192.0.2.1", general=True) for _ in range(3)]
    assert hostile == ["addr:192.0.2.1", "addr:192.0.2.1", None]  # 2 of the 3 GET streams
    assert [slots.acquire(None, "192.0.2.1") for _ in range(3)] == [*hostile[:2], None]
    # Its IPv6 neighbours in one /64 are one client, another one.
    assert slots.acquire(None, "2001:db8::1") == "addr:2001:db8::/64"
    assert slots.acquire(None, "2001:db8::2", general=True) == "addr:2001:db8::/64"
    # An authenticated client is its principal, wherever it connects from.
    alice = AuthInfo(principal="https://as.example|alice")
    assert slots.acquire(alice, "192.0.2.1") == "https://as.example|alice"
    assert slots.acquire(alice, "192.0.2.1") is None  # every slot of the worker is held
    assert (slots.open, slots.open_general) == (7, 3)

    slots.release("addr:192.0.2.1", general=True)
    slots.release("addr:192.0.2.1")
    assert slots.acquire(None, "192.0.2.1", general=True) == "addr:192.0.2.1"
    assert slots.acquire(None, "192.0.2.1") == "addr:192.0.2.1"
    assert slots.acquire(None, "192.0.2.1") is None  # 4 again, 2 of them GET streams
    for general in (True, True, False, False):
        slots.release("addr:192.0.2.1", general=general)
    # A client that holds no slot has no entry.
    assert slots.held == {"addr:2001:db8::/64": 2, "https://as.example|alice": 1}
    assert slots.held_general == {"addr:2001:db8::/64": 1}


def test_a_lone_client_keeps_every_slot_of_a_small_worker() -> None:
    """``--threads 4`` (3 slots): one client keeps its GET stream and two streamed calls."""
    slots = StreamSlots(3, share=0.5)
    assert slots.acquire(None, "192.0.2.1", general=True) is not None
    assert slots.acquire(None, "192.0.2.1") is not None
    assert slots.acquire(None, "192.0.2.1") is not None
    assert slots.acquire(None, "192.0.2.1") is None  # the worker is full


def test_get_without_a_free_slot_is_a_stream_that_says_come_back(
    small_app: Flask, mcp_server: MCP
) -> None:
    client = small_app.test_client()
    held = open_get(client, initialize(client))
    assert held.status_code == 200
    session = initialize(client)

    busy = open_get(client, session)
    assert busy.status_code == 200  # the spec allows a GET an event stream or 405, not 503
    assert busy.mimetype == "text/event-stream"
    assert "Connection" not in busy.headers
    fields = fields_of(busy.get_data())
    assert fields["retry"] == str(sse.BUSY_RETRY_MS)
    assert sse.parse_event_id(fields["id"]) is not None

    mcp_server.add_tool(lambda: "new", name="new_tool", description="added while waiting")
    held.close()  # the first client leaves: its slot is free again

    resumed = open_get(client, session, fields["id"])
    assert resumed.status_code == 200
    events = read_events(iter(resumed.response), 1)
    assert events[0]["method"] == "notifications/tools/list_changed"  # nothing was lost
    resumed.close()
    assert mcp_server.state(small_app).slots.open == 0


def test_the_busy_retry_hint_keeps_clear_of_gunicorns_keepalive() -> None:
    """A client back after the hint must not meet gunicorn closing its idle connections.

    gunicorn closes a connection idle for ``keepalive`` seconds (the gevent worker at
    once, the gthread worker at its next poll, within a second). Measured on gthread with
    two connections idle for the hint, then used: 3 of 40 requests failed with
    "connection reset" at 2 s, none at 1.5 s or 2.5 s; the official client's session
    stops when a POST fails so.
    """
    keepalive_ms = gunicorn.config.Config().keepalive * 1000
    closing = (keepalive_ms - 250, keepalive_ms + 1000 + 250)
    assert not closing[0] <= sse.BUSY_RETRY_MS <= closing[1], closing


@pytest.mark.parametrize(
    ("version", "retry_ms", "expected"),
    [
        ("2025-06-18", None, b"retry: 1500\n\n"),  # no priming events before 2025-11-25
        ("2025-06-18", 5000, b"retry: 5000\n\n"),  # a longer MCP_SSE_RETRY_MS is kept
    ],
)
def test_busy_answer_before_priming_events(
    mcp_server: MCP, version: str, retry_ms: int | None, expected: bytes
) -> None:
    small_app = Flask("small")
    small_app.config.update(TESTING=True, MCP_MAX_STREAMS=2)
    if retry_ms is not None:
        small_app.config["MCP_SSE_RETRY_MS"] = retry_ms
    mcp_server.init_app(small_app)
    client = small_app.test_client()
    held = open_get(client, initialize(client))
    busy = open_get(client, initialize(client, version))
    assert (busy.status_code, busy.mimetype) == (200, "text/event-stream")
    assert busy.get_data() == expected
    held.close()


def test_a_server_that_can_hold_no_stream_keeps_405(small_app: Flask, mcp_server: MCP) -> None:
    client = small_app.test_client()
    session = initialize(client)
    mcp_server.state(small_app).slots.limit = 0  # as on gunicorn's sync worker
    response = open_get(client, session)
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST, DELETE"


def test_a_stream_closed_before_it_was_read_gives_its_slot_back(
    small_app: Flask, mcp_server: MCP
) -> None:
    session = initialize(small_app.test_client())
    environ = EnvironBuilder(
        path="/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session}
    ).get_environ()
    body = small_app(environ, lambda status, headers, exc_info=None: lambda data: None)
    slots = mcp_server.state(small_app).slots
    assert slots.open == 1
    body.close()  # a WSGI server may close the body without reading it (PEP 3333)
    assert slots.open == 0


def test_resume_without_a_free_slot_keeps_its_place(
    small_app: Flask, mcp_server: MCP, two_phase: threading.Event
) -> None:
    client = small_app.test_client()
    session = initialize(client)
    text = rpc(client, session, "tools/call", {"name": "two_phase"}).get_data(as_text=True)
    last = [line[4:] for line in text.splitlines() if line.startswith("id: ")][-1]
    two_phase.set()

    slots = mcp_server.state(small_app).slots
    limit = slots.limit
    assert limit is not None
    slots.open = limit  # every stream this worker can hold is taken
    busy = open_get(client, session, last)
    assert (busy.status_code, busy.mimetype) == (200, "text/event-stream")
    again = fields_of(busy.get_data())["id"]
    assert sse.parse_event_id(again) == sse.parse_event_id(last)  # the same place...
    assert again != last  # ... with an id of its own

    slots.open = 0
    resumed = open_get(client, session, last)
    events = read_events(iter(resumed.response), 2)
    assert events[0]["params"]["data"] == "phase 2"
    assert events[1]["result"]["content"][0]["text"] == "complete"
    resumed.close()
