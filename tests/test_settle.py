"""Settlement without HTTP (issue 19): owed answers, the sweep's error and outage epoch,
session admission, the idle-trimming Redis pool."""

from __future__ import annotations

import time
import typing as t
import uuid

import pytest
from harness import delete_keys

from flask_mcp.backends.base import END
from flask_mcp.backends.base import MESSAGE
from flask_mcp.backends.base import Backend
from flask_mcp.backends.base import SessionQuotaExceeded
from flask_mcp.backends.base import SessionRecord
from flask_mcp.backends.memory import MemoryBackend
from flask_mcp.errors import BackendUnavailable
from flask_mcp.runtime import settle
from flask_mcp.runtime.runs import StreamOutbox


def record(session_id: str) -> SessionRecord:
    return SessionRecord(id=session_id, protocol_version="2025-11-25")


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("redis-cluster", marks=[pytest.mark.redis, pytest.mark.cluster]),
    ]
)
def backend(request: pytest.FixtureRequest) -> t.Iterator[Backend]:
    if request.param == "memory":
        yield MemoryBackend()
        return
    from flask_mcp.backends.redis import RedisBackend

    url = request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")
    prefix = f"settle-{uuid.uuid4().hex[:10]}:"
    made = RedisBackend.from_url(f"{url}?prefix={prefix}")
    yield made
    delete_keys(url, f"{prefix}*")
    made.close()


class Flaky(MemoryBackend):
    """A memory backend whose appends fail while ``down`` is true."""

    down = False

    def append(self, *args: t.Any, **kwargs: t.Any) -> int:
        if self.down:
            raise BackendUnavailable("down")
        return super().append(*args, **kwargs)


def test_an_answer_the_backend_cannot_take_is_written_when_it_returns() -> None:
    store = Flaky()
    assert store.create_session(record("s"), 10)
    outbox = StreamOutbox(store, "s", "r", request_id=3)
    store.down = True
    answer = settle.error_answer(3, settle.STORE_UNAVAILABLE_WHILE_RUNNING)
    assert outbox.finish(answer)  # kept, not lost, not raised
    assert not outbox.finish(None)  # answered once
    assert settle.settle_owed() >= 1  # still down: still owed
    store.down = False
    assert settle.settle_owed() == 0
    token = store.attach("s", "r")
    events = store.read("s", "r", 0, token, 0.1).events
    assert [(e.kind, e.message) for e in events] == [(MESSAGE, answer), (END, None)]
    assert answer["error"]["data"] == {"retryable": False}  # its handler had started


class Refusing(MemoryBackend):
    """A memory backend that counts the writes it refuses while ``down`` is true."""

    down = False
    refused = 0

    def append(self, *args: t.Any, **kwargs: t.Any) -> int:
        if self.down:
            self.refused += 1
            raise BackendUnavailable("down")
        return super().append(*args, **kwargs)


def owe(store: MemoryBackend, stream_id: str, request_id: int) -> dict[str, t.Any]:
    """Finish a stream of session ``s`` on ``store`` while it is down; return the answer."""
    outbox = StreamOutbox(store, "s", stream_id, request_id=request_id)
    answer = settle.error_answer(request_id, settle.STORE_UNAVAILABLE_WHILE_RUNNING)
    assert outbox.finish(answer)
    return answer


def written(store: MemoryBackend, stream_id: str) -> list[t.Any]:
    token = store.attach("s", stream_id)
    return [(e.kind, e.message) for e in store.read("s", stream_id, 0, token, 0.05).events]


@pytest.mark.parametrize("text", [settle.WORKER_STOPPED, settle.STORE_UNAVAILABLE_WHILE_RUNNING])
def test_an_error_after_the_handler_started_invites_no_blind_retry(text: str) -> None:
    """The worker stopped, or the handler met an outage it could not go on through: the
    request may have done part of its work, so its error says so and is not retryable
    (both used to say "retry the request", and a tool sent again did its work twice)."""
    error = settle.error_answer(1, text)["error"]
    assert "may have been carried out in part" in error["message"], error
    assert "retry" not in error["message"] and error["data"] == {"retryable": False}, error


def test_a_backend_that_stays_down_holds_back_only_its_own_answers() -> None:
    """The process-wide set of owed answers stopped a round at the first backend still
    down: with two apps on two Redis servers, one server that stayed down (or was gone for
    good) held back every answer owed to the other's clients. Now only its own wait, in
    their order."""
    down, back = Refusing(), Refusing()
    for store in (down, back):
        assert store.create_session(record("s"), 10)
        store.down = True
    owe(down, "r1", 1)  # owed first: first in the set
    owe(down, "r2", 2)
    answer = owe(back, "r", 3)
    back.down = False
    down.refused = 0
    assert settle.settle_owed() >= 2  # the down backend's two answers
    assert written(back, "r") == [(MESSAGE, answer), (END, None)]
    assert down.refused == 1  # its second answer was not tried before its first
    down.down = False
    settle.settle_owed()
    assert [kind for kind, _ in written(down, "r1")] == [MESSAGE, END]
    assert [kind for kind, _ in written(down, "r2")] == [MESSAGE, END]


def test_an_answer_owed_too_long_is_dropped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A backend that never returns (its app torn down, its server gone) must not keep
    its answers, and the outbox and backend they hold, for the life of the process."""
    store = Refusing()
    assert store.create_session(record("s"), 10)
    store.down = True
    owe(store, "r", 1)
    settle.settle_owed()
    monkeypatch.setattr(settle, "KEEP_OWED_FOR", 0.0)
    with caplog.at_level("WARNING", logger="flask_mcp"):
        settle.settle_owed()
    assert "dropped" in caplog.text
    refused = store.refused
    store.down = False
    settle.settle_owed()
    assert store.refused == refused  # no more tries
    assert written(store, "r") == []


def test_handshake_timeout_makes_room(backend: Backend) -> None:
    assert backend.create_session(record("old"), 2, handshake_timeout=30)
    assert backend.create_session(record("done"), 2, handshake_timeout=30)
    backend.update_session("done", initialized=True)
    assert not backend.create_session(record("new"), 2, handshake_timeout=30)
    backend.update_session("old", created=time.time() - 60)
    backend.update_session("done", created=time.time() - 60)
    if hasattr(backend, "client"):  # Redis orders pending handshakes by creation time
        backend.client.zadd(backend.keys.hs, {"old": 1, "done": 1})  # type: ignore[attr-defined]
    assert backend.create_session(record("new"), 2, handshake_timeout=30)
    assert backend.get_session("old") is None  # never finished its handshake: ended
    assert backend.get_session("done") is not None  # finished it: kept


def test_quota_per_client(backend: Backend) -> None:
    for i in range(3):
        assert backend.create_session(record(f"a{i}"), 100, owner="addr:1", quota=3)
    with pytest.raises(SessionQuotaExceeded):
        backend.create_session(record("a3"), 100, owner="addr:1", quota=3)
    assert backend.create_session(record("b0"), 100, owner="addr:2", quota=3)
    backend.delete_session("a0")
    assert backend.create_session(record("a3"), 100, owner="addr:1", quota=3)


@pytest.mark.redis
def test_the_sweep_answers_with_an_error_and_spares_workers_after_an_outage(
    redis_url: str,
) -> None:
    from flask_mcp.backends.redis import RedisBackend

    prefix = f"settle-{uuid.uuid4().hex[:10]}:"
    a = RedisBackend.from_url(f"{redis_url}?prefix={prefix}&worker_timeout=2")
    b = RedisBackend.from_url(f"{redis_url}?prefix={prefix}&worker_timeout=2")
    for backend in (a, b):  # no listener threads: this test beats by hand
        backend.listener.ensure = lambda wait: True  # type: ignore[method-assign]
    try:
        assert a.create_session(record("s"), 10)
        a.open_stream("s", "r", request_id="req-1")
        # A request's stream opens in Redis with its first event, or once its reader waited
        # for one (flask_mcp.backends.redis.own_streams): here, the reader waited.
        assert a.read("s", "r", 0, a.attach("s", "r"), 0.05).events == []
        a.touch_session("s", +1)
        b.beat()
        # a beat just before Redis went away for 5 s (more than worker_timeout): the outage
        # does not count as a's silence.
        a.client.set(a.keys.alive, f"{time.time() - 5:.6f}")
        a.client.zadd(a.keys.workers, {a.worker: time.time() - 5.5})
        b.beat()
        token = b.attach("s", "r")
        assert b.read("s", "r", 0, token, 0.1).events == []  # a was spared
        # Now a is silent past worker_timeout while b beats: a is dead.
        a.client.zadd(a.keys.workers, {a.worker: time.time() - 10})
        b.beat()
        events = b.read("s", "r", 0, token, 1).events
        assert [e.kind for e in events] == [MESSAGE, END]
        message = events[0].message
        assert message is not None and message["id"] == "req-1"
        assert "worker running this request stopped" in message["error"]["message"]
    finally:
        a.client.delete(*a.client.keys(f"{prefix}*"))
        b.close()


@pytest.mark.redis
def test_the_pool_closes_idle_connections(redis_url: str) -> None:
    from flask_mcp.backends.redis.connections import IdlePool

    pool = IdlePool.from_url(redis_url, idle_timeout=0.2, min_idle=1)
    connections = [pool.get_connection() for _ in range(5)]
    for connection in connections:
        connection.send_command("PING")
        connection.read_response()
        pool.release(connection)
    assert pool.idle == 5
    time.sleep(0.3)
    assert pool.trim() == 4
    assert pool.idle == 1 and pool._created_connections == 1
    pool.disconnect()


def test_a_timeout_answer_that_cannot_be_written_is_written_later() -> None:
    from flask_mcp.config import load_settings
    from flask_mcp.runtime import supervisor
    from flask_mcp.runtime.runs import RequestRun
    from flask_mcp.runtime.state import AppState

    store = Flaky()
    state = AppState(load_settings({"MCP_REQUEST_TIMEOUT": 5}), backend=store)
    assert store.create_session(record("s"), 10)
    outbox = StreamOutbox(store, "s", "r", request_id=9)
    run = RequestRun("s", 9, "tools/call", outbox, deadline=time.monotonic() - 1)
    state.inflight.add(run)
    store.down = True
    supervisor.tick(state, time.monotonic(), reap=False)  # times it out: the answer is owed
    assert len(state.inflight) == 0 and run.cancelled.is_set()
    store.down = False
    supervisor.tick(state, time.monotonic(), reap=False)  # writes it
    token = store.attach("s", "r")
    events = store.read("s", "r", 0, token, 0.1).events
    assert [e.kind for e in events] == [MESSAGE, END]
    assert events[0].message is not None and events[0].message["id"] == 9


def test_a_stopping_worker_answers_its_running_requests() -> None:
    from flask_mcp.config import load_settings
    from flask_mcp.runtime import supervisor
    from flask_mcp.runtime.runs import RequestRun
    from flask_mcp.runtime.state import AppState

    store = MemoryBackend()
    state = AppState(load_settings({}), backend=store)
    assert store.create_session(record("s"), 10)
    outbox = StreamOutbox(store, "s", "r", request_id="a")
    state.inflight.add(RequestRun("s", "a", "tools/call", outbox, deadline=time.monotonic() + 60))
    assert supervisor.stop_runs(state) == 1
    token = store.attach("s", "r")
    events = store.read("s", "r", 0, token, 0.1).events
    assert [e.kind for e in events] == [MESSAGE, END]
    assert events[0].message is not None
    assert events[0].message["error"]["message"] == settle.WORKER_STOPPED


def test_the_exit_hook_ends_the_supervisor_before_it_closes_the_backend() -> None:
    """At exit the supervisor stops with the backend: it would otherwise go on using the
    closed backend (a Redis one revives as a new worker) until the interpreter stops."""
    import os
    import weakref

    from flask_mcp.config import load_settings
    from flask_mcp.runtime import supervisor
    from flask_mcp.runtime.state import AppState

    state = AppState(load_settings({}), backend=MemoryBackend())
    supervisor.ensure_supervisor(state)
    task = state.supervisor
    assert not task.done.wait(0.1)
    supervisor._at_exit(weakref.ref(state), os.getpid())
    assert task.done.wait(supervisor.TICK + 5), "the supervisor outlived the exit hook"
    supervisor.ensure_supervisor(state)  # a request after that starts it again
    assert state.supervisor is not task and not state.supervisor.done.wait(0.1)
    supervisor.stop_supervisor(state)


def test_requests_arriving_together_start_one_supervisor(monkeypatch: t.Any) -> None:
    """The first requests of a threaded worker, arriving together, each found no supervisor
    and each started one: every overdue request was timed out (and signalled) once per loop.
    The check and the start are one step now: the second request waits, then finds it."""
    import threading

    from flask_mcp.config import load_settings
    from flask_mcp.runtime import supervisor
    from flask_mcp.runtime.state import AppState

    state = AppState(load_settings({}), backend=MemoryBackend())
    real = supervisor._concurrency.spawn
    inside, second = threading.Event(), threading.Event()
    started: list[t.Any] = []

    def spawn(fn: t.Any) -> t.Any:
        started.append(fn)
        if len(started) == 1:  # the first request starts it: the second one checks meanwhile
            inside.set()
            second.wait(0.5)  # it never comes once the check waits for the start
        else:
            second.set()
        return real(fn)

    monkeypatch.setattr(supervisor._concurrency, "spawn", spawn)
    first = threading.Thread(target=supervisor.ensure_supervisor, args=(state,))
    first.start()
    try:
        assert inside.wait(10)
        supervisor.ensure_supervisor(state)
        first.join(10)
        assert len(started) == 1, "two supervisors started"
    finally:
        supervisor.stop_supervisor(state)
        first.join(10)
