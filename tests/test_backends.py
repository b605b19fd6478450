"""One set of interface tests, run against every backend (``-k memory`` / ``-k redis``).

Each test gets two handles on the same shared state, ``a`` and ``b``: for the
memory backend both are the same object (one process), for Redis they are two
``RedisBackend`` objects on one key prefix, standing for two workers.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import typing as t
import uuid

import pytest
from harness import delete_keys
from harness import listening
from harness import new_session
from harness import redis_client
from harness import redis_server
from harness import untagged_keys

from flask_mcp.backends import from_setting
from flask_mcp.backends.base import END
from flask_mcp.backends.base import GENERAL_STREAM
from flask_mcp.backends.base import MESSAGE
from flask_mcp.backends.base import RESUME_BYTES
from flask_mcp.backends.base import Backend
from flask_mcp.backends.base import SessionQuotaExceeded
from flask_mcp.backends.base import SessionRecord
from flask_mcp.backends.memory import MemoryBackend
from flask_mcp.backends.redis import RedisBackend
from flask_mcp.backends.redis.batch import GROUP
from flask_mcp.errors import BackendUnavailable

Pair = t.Callable[..., tuple[Backend, Backend]]


#: The Redis legs: a standalone Redis (``redis_url``) and a Redis Cluster (``redis_cluster_url``).
REDIS_URLS = {"redis": "redis_url", "redis-cluster": "redis_cluster_url"}


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("redis-cluster", marks=[pytest.mark.redis, pytest.mark.cluster]),
    ]
)
def workers(request: pytest.FixtureRequest) -> t.Iterator[Pair]:
    """``workers(buffer_size=1000, resume_bytes=RESUME_BYTES) -> (a, b)``: two views of one
    shared state."""
    made: list[Backend] = []
    prefix = f"test-{uuid.uuid4().hex[:10]}:"

    def make(buffer_size: int = 1000, resume_bytes: int = RESUME_BYTES) -> tuple[Backend, Backend]:
        if request.param == "memory":
            backend = MemoryBackend(buffer_size=buffer_size, resume_bytes=resume_bytes)
            made.append(backend)
            return backend, backend
        from flask_mcp.backends.redis import RedisBackend

        url = request.getfixturevalue(REDIS_URLS[request.param])
        pair = tuple(
            RedisBackend.from_url(
                f"{url}?prefix={prefix}", buffer_size=buffer_size, resume_bytes=resume_bytes
            )
            for _ in range(2)
        )
        made.extend(pair)
        return pair  # type: ignore[return-value]

    yield make
    for backend in made:
        backend.close()
    if request.param != "memory":
        url = request.getfixturevalue(REDIS_URLS[request.param])
        untagged = untagged_keys(url, prefix)
        delete_keys(url, f"{prefix}*")
        assert untagged == [], f"keys without a hash tag: {untagged}"


def in_thread(fn: t.Callable[[], t.Any]) -> tuple[threading.Thread, list[t.Any]]:
    out: list[t.Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


# -- sessions ---------------------------------------------------------------------------


def test_session_crud(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    record = b.get_session(sid)
    assert record is not None
    assert record.protocol_version == "2025-11-25"
    assert record.client_info == {"name": "c", "version": "1"}
    assert record.client_capabilities == {"sampling": {}}
    assert (record.initialized, record.log_level, record.subscriptions) == (False, "info", [])
    assert record.principal is None and record.busy == 0
    assert abs(record.created - time.time()) < 5

    b.update_session(sid, initialized=True, log_level="error", principal="alice")
    record = a.get_session(sid)
    assert record is not None
    assert (record.initialized, record.log_level, record.principal) == (True, "error", "alice")

    a.add_subscription(sid, "test://x")
    b.add_subscription(sid, "test://x")
    b.add_subscription(sid, "test://y")
    assert a.get_session(sid).subscriptions == ["test://x", "test://y"]  # type: ignore[union-attr]
    a.remove_subscription(sid, "test://x")
    a.remove_subscription(sid, "test://y")
    assert b.get_session(sid).subscriptions == []  # type: ignore[union-attr]

    assert sid in b.session_ids()
    assert a.get_session("nope") is None
    a.update_session("nope", log_level="debug")
    a.touch_session("nope")
    assert b.delete_session(sid) is True
    assert a.delete_session(sid) is False
    assert a.get_session(sid) is None
    assert sid not in b.session_ids()


def test_touch_counts_running_requests(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    before = a.get_session(sid).last_seen  # type: ignore[union-attr]
    time.sleep(0.01)
    a.touch_session(sid, +1)
    b.touch_session(sid, +1)
    record = a.get_session(sid)
    assert record is not None
    assert record.busy == 2 and record.last_seen > before
    a.touch_session(sid, -1)
    b.touch_session(sid, -1)
    b.touch_session(sid, -1)  # never below zero
    assert a.get_session(sid).busy == 0  # type: ignore[union-attr]
    a.touch_session(sid, +1)
    assert b.get_session(sid).busy == 1  # type: ignore[union-attr]
    seen = a.get_session(sid).last_seen  # type: ignore[union-attr]
    time.sleep(0.01)
    record = b.get_session(sid, touch=True)  # traffic and the record in one step
    assert record is not None and record.busy == 1
    assert a.get_session(sid).last_seen > seen  # type: ignore[union-attr]
    assert b.get_session("nope", touch=True) is None


def test_session_limit_holds_across_workers(workers: Pair) -> None:
    a, b = workers()
    results: list[bool] = []
    lock = threading.Lock()

    def create(i: int) -> None:
        record = SessionRecord(id=f"s{i}", protocol_version="2025-06-18")
        ok = (a if i % 2 else b).create_session(record, 5)
        with lock:
            results.append(ok)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 5
    assert len(a.session_ids()) == 5
    assert not b.create_session(SessionRecord(id="late", protocol_version="2025-06-18"), 5)
    assert a.delete_session(a.session_ids()[0])
    assert b.create_session(SessionRecord(id="late", protocol_version="2025-06-18"), 5)


def test_reap_idle_and_lifetime_but_never_busy(workers: Pair) -> None:
    a, b = workers()
    for sid in ("idle", "old", "busy", "fresh"):
        new_session(a, sid)
    a.update_session("idle", last_seen=time.time() - 100)
    b.update_session("old", created=time.time() - 1000)
    a.touch_session("busy", +1)
    a.update_session("busy", last_seen=time.time() - 100, created=time.time() - 1000)
    assert a.reap(None, None) == []
    found = a.reap(50, 500)
    assert sorted(found) == [("idle", "idle"), ("old", "lifetime")]
    assert b.reap(50, 500) == []
    assert sorted(b.session_ids()) == ["busy", "fresh"]
    a.touch_session("busy", -1)
    b.update_session("busy", last_seen=time.time() - 100)
    assert b.reap(50, None) == [("busy", "idle")]
    assert a.get_session("busy") is None


def test_reap_keeps_sessions_with_a_request_running_here() -> None:
    backend = MemoryBackend()
    for sid in ("running", "idle"):
        new_session(backend, sid)
        backend.update_session(sid, last_seen=time.time() - 100)
    assert backend.reap(50, None, keep={"running"}) == [("idle", "idle")]
    assert backend.session_ids() == ["running"]
    assert backend.reap(50, None) == [("running", "idle")]


def test_concurrent_reapers_end_each_session_once(workers: Pair) -> None:
    a, b = workers()
    for i in range(20):
        new_session(a, f"s{i}")
        a.update_session(f"s{i}", last_seen=time.time() - 100)
    found: list[tuple[str, str]] = []
    threads = [
        threading.Thread(target=lambda w=w: found.extend(w.reap(10, None))) for w in (a, b) * 2
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(found) == sorted((f"s{i}", "idle") for i in range(20))


# -- streams ----------------------------------------------------------------------------


def test_sequence_numbers_start_at_one_per_stream(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    a.open_stream(sid, "r1")
    a.open_stream(sid, "r1")  # no-op
    assert a.first_seq(sid, "r1") == 1
    assert [a.append(sid, "r1", MESSAGE, {"n": i}) for i in range(3)] == [1, 2, 3]
    assert b.append(sid, "r2", MESSAGE, {"n": 9}) == 1  # appending creates the stream
    assert b.append(sid, "r1", END) == 4
    assert a.append("nope", "r1", MESSAGE, {}) == 0
    token = b.attach(sid, "r1")
    found = b.read(sid, "r1", 1, token, 1.0)
    assert [(e.seq, e.kind, e.message) for e in found.events] == [
        (2, MESSAGE, {"n": 1}),
        (3, MESSAGE, {"n": 2}),
        (4, END, None),
    ]
    assert not found.superseded and not found.missing
    assert a.first_seq(sid, "r1") == 1
    assert a.first_seq(sid, "unknown") is None
    assert a.first_seq("nope", "r1") is None


def test_read_times_out_then_wakes_on_append_from_another_worker(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    a.open_stream(sid, "r")
    token = a.attach(sid, "r")
    started = time.monotonic()
    assert a.read(sid, "r", 0, token, 0.3).events == []
    assert 0.25 < time.monotonic() - started < 2

    def later() -> None:
        time.sleep(0.3)
        b.append(sid, "r", MESSAGE, {"hello": 1})

    threading.Thread(target=later, daemon=True).start()
    started = time.monotonic()
    found = a.read(sid, "r", 0, token, 10)
    assert [e.message for e in found.events] == [{"hello": 1}]
    assert time.monotonic() - started < 2


def test_attach_supersedes_a_blocked_reader_on_another_worker(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    a.open_stream(sid, "r")
    first = a.attach(sid, "r")
    thread, out = in_thread(lambda: a.read(sid, "r", 0, first, 10))
    time.sleep(0.3)
    started = time.monotonic()
    second = b.attach(sid, "r")
    thread.join(5)
    assert out and out[0].superseded
    assert time.monotonic() - started < 2
    assert second != first
    a.detach(sid, "r", first)  # too late: must not detach the new reader
    b.append(sid, "r", MESSAGE, {"x": 1})
    assert [e.seq for e in b.read(sid, "r", 0, second, 1).events] == [1]
    b.detach(sid, "r", second)
    assert b.read(sid, "r", 0, second, 0.1).superseded


def test_drop_and_delete_wake_blocked_readers(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    for stream in ("r", GENERAL_STREAM):
        a.open_stream(sid, stream)
    token = a.attach(sid, "r")
    thread, out = in_thread(lambda: a.read(sid, "r", 0, token, 10))
    time.sleep(0.3)
    started = time.monotonic()
    b.drop_stream(sid, "r")
    thread.join(5)
    assert out and out[0].missing and time.monotonic() - started < 2
    assert a.first_seq(sid, "r") is None

    token = a.attach(sid, GENERAL_STREAM)
    thread, out = in_thread(lambda: a.read(sid, GENERAL_STREAM, 0, token, 10))
    time.sleep(0.3)
    started = time.monotonic()
    assert b.delete_session(sid)
    thread.join(5)
    assert out and (out[0].missing or out[0].superseded)  # either way: the reader stops
    assert time.monotonic() - started < 2
    assert a.read(sid, GENERAL_STREAM, 0, token, 0.1).missing


def test_cursors_only_move_forward(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    a.open_stream(sid, GENERAL_STREAM)
    assert a.get_cursor(sid, GENERAL_STREAM) == 0
    a.set_cursor(sid, GENERAL_STREAM, 5)
    b.set_cursor(sid, GENERAL_STREAM, 3)
    assert b.get_cursor(sid, GENERAL_STREAM) == 5
    b.set_cursor(sid, "unknown", 7)
    assert a.get_cursor(sid, "unknown") == 0
    assert a.get_cursor("nope", GENERAL_STREAM) == 0


def test_event_logs_are_bounded_per_session(workers: Pair) -> None:
    a, b = workers(buffer_size=3)
    sid = new_session(a)
    for i in range(5):
        a.append(sid, "long", MESSAGE, {"i": i})
    assert b.first_seq(sid, "long") == 3
    token = b.attach(sid, "long")
    assert [e.seq for e in b.read(sid, "long", 0, token, 1).events] == [3, 4, 5]

    # The bound is per session: other streams' messages push out the oldest first.
    b.append(sid, "done", MESSAGE, {"x": 1})
    b.append(sid, "done", END)
    b.append(sid, GENERAL_STREAM, MESSAGE, {"g": 1})
    assert a.first_seq(sid, "long") == 5
    for i in range(2):
        a.append(sid, "other", MESSAGE, {"i": i})
    assert a.first_seq(sid, "long") == 6  # every message gone; its reader keeps it
    # "done" lost its only message, has no reader and only its END left: forgotten.
    assert a.first_seq(sid, "done") is None
    assert a.first_seq(sid, GENERAL_STREAM) == 1
    b.append(sid, "other", MESSAGE, {"i": 2})
    assert a.first_seq(sid, GENERAL_STREAM) == 2  # the general stream is never forgotten
    assert a.first_seq(sid, "other") == 1


#: A message of about 1,050 bytes as JSON, and one of about 250.
LARGE = {"jsonrpc": "2.0", "id": 1, "result": {"text": "x" * 1000}}
SMALL = {"jsonrpc": "2.0", "id": 2, "result": {"text": "y" * 200}}


def test_streams_left_by_their_reader_are_bounded_in_bytes(workers: Pair) -> None:
    """Past ``resume_bytes`` of messages on streams whose reader left (a client that may
    resume them), the streams left first are dropped, then the oldest messages of the one
    left last (see test_the_stream_left_last_is_bounded_too): at the session's next
    message, and when a reader leaves (then the streams left before it count). A stream read
    to its end, or read again, counts nothing."""
    a, b = workers(resume_bytes=2500)
    sid = new_session(a)

    def leave(stream: str, copies: int = 1, message: dict[str, t.Any] = LARGE) -> None:
        """Open a stream on ``a``, read it on ``b``, which leaves after ``copies`` messages
        and the stream's end (a request that ended meanwhile)."""
        a.open_stream(sid, stream)
        token = b.attach(sid, stream)
        for _ in range(copies):
            a.append(sid, stream, MESSAGE, message)
        if copies:
            a.append(sid, stream, END)
        b.detach(sid, stream, token)

    leave("done", copies=3)  # read to its end: its reader leaves, then it is dropped
    b.drop_stream(sid, "done")
    leave("empty", copies=0)  # left before its first message, then resumed
    b.detach(sid, "empty", b.attach(sid, "empty"))
    b.drop_stream(sid, "empty")
    leave("s1")
    leave("s2")
    a.open_stream(sid, "live")
    live = b.attach(sid, "live")
    a.append(sid, "live", MESSAGE, LARGE)  # a stream being read counts nothing either
    leave("read", copies=4)  # read to its end: left a moment, it pushes nothing out
    b.drop_stream(sid, "read")
    assert (a.first_seq(sid, "s1"), a.first_seq(sid, "s2")) == (1, 1)
    leave("s3")  # left before it: s1 + s2, about 2,100 bytes, under the bound
    assert a.first_seq(sid, "s1") == 1

    leave("s4")  # left before it: s1 + s2 + s3, about 3,150 bytes; no message follows
    assert a.first_seq(sid, "s1") is None  # left first: dropped
    assert [a.first_seq(sid, s) for s in ("s2", "s3", "s4")] == [1, 1, 1]
    a.append(sid, "live", MESSAGE, LARGE)  # the next message counts every stream left
    assert a.first_seq(sid, "s2") is None
    assert (a.first_seq(sid, "s3"), a.first_seq(sid, "s4")) == (1, 1)

    b.attach(sid, "s3")  # its client is back: it counts no more
    leave("s5", copies=2)
    a.append(sid, GENERAL_STREAM, MESSAGE, LARGE)  # s4 + s5: about 3,150 bytes
    assert a.first_seq(sid, "s4") is None
    assert (a.first_seq(sid, "s3"), a.first_seq(sid, "s5")) == (1, 1)

    leave("s6", copies=4)  # over the bound alone: the stream left last loses its oldest
    a.append(sid, "live", MESSAGE, LARGE)
    assert a.first_seq(sid, "s5") is None
    assert a.first_seq(sid, "s6") == 3  # two messages went: about 2,100 bytes stay
    a.append(sid, "live", MESSAGE, LARGE)
    assert a.first_seq(sid, "s6") == 3
    assert a.first_seq(sid, "s3") == 1
    assert a.first_seq(sid, GENERAL_STREAM) == 1
    token = b.attach(sid, "s6")
    assert [e.kind for e in b.read(sid, "s6", 2, token, 1).events] == [MESSAGE] * 2 + [END]
    b.detach(sid, "live", live)


def test_the_stream_left_last_is_bounded_too(workers: Pair) -> None:
    """The stream left last counts toward ``resume_bytes`` as the others: alone over it, its
    oldest messages go (a resume from before them gets 410), all of them when its newest
    alone is over; ended with none kept, it is forgotten (a resume gets 400), still
    written, it keeps its numbering. The session's order of messages follows: what
    ``buffer_size`` evicts next is the oldest message still kept."""
    a, b = workers(buffer_size=6, resume_bytes=2500)
    sid = new_session(a)
    a.open_stream(sid, "long")
    token = b.attach(sid, "long")
    for _ in range(5):  # about 5,250 bytes
        a.append(sid, "long", MESSAGE, LARGE)
    a.append(sid, "long", END)
    b.detach(sid, "long", token)
    a.append(sid, GENERAL_STREAM, MESSAGE, SMALL)
    assert a.first_seq(sid, "long") == 4  # three went: about 2,100 bytes stay
    for _ in range(3):  # long's two and four on the general stream: none evicted
        a.append(sid, GENERAL_STREAM, MESSAGE, SMALL)
    assert a.first_seq(sid, "long") == 4
    a.append(sid, GENERAL_STREAM, MESSAGE, SMALL)  # the 7th evicts long's 4th, its oldest
    assert a.first_seq(sid, "long") == 5
    token = b.attach(sid, "long")
    assert [e.seq for e in b.read(sid, "long", 4, token, 1).events] == [5, 6]
    b.detach(sid, "long", token)
    b.drop_stream(sid, "long")

    huge = {"jsonrpc": "2.0", "id": 3, "result": {"text": "h" * 3000}}
    a.open_stream(sid, "huge", request_id=3)  # its one message alone is over the bound
    a.detach(sid, "huge", a.attach(sid, "huge"))
    a.append(sid, "huge", MESSAGE, huge)
    # still written: kept, empty, numbered on (Redis: once the leave is written)
    assert waited(a, lambda: a.first_seq(sid, "huge"), 2) == 2
    a.append(sid, "huge", END)  # ended with nothing kept: forgotten
    assert a.first_seq(sid, "huge") is None


def test_the_streams_one_client_left_are_bounded_across_its_sessions() -> None:
    """``resume_bytes_per_client`` bounds the streams left in all the sessions of one
    client (the memory backend; Redis keeps each session apart): past it, the streams
    that client left first go, in whichever session (the one whose reader leaves now
    counts nothing yet), then the oldest messages of the one left last. Another
    client's streams are not touched."""
    backend = MemoryBackend(resume_bytes=2500)
    backend.resume_bytes_per_client = 3000

    def session(session_id: str, owner: str) -> str:
        record = SessionRecord(
            id=session_id,
            protocol_version="2025-11-25",
            client_info={"name": "c", "version": "1"},
            client_capabilities={},
        )
        assert backend.create_session(record, 100, owner=owner, quota=10)
        return session_id

    def leave(session_id: str, stream: str, copies: int = 1) -> None:
        backend.open_stream(session_id, stream)
        token = backend.attach(session_id, stream)
        for _ in range(copies):
            backend.append(session_id, stream, MESSAGE, LARGE)
        backend.append(session_id, stream, END)
        backend.detach(session_id, stream, token)

    other = session("other", "192.0.2.2")
    leave(other, "o", copies=2)
    c0, c1, c2, c3 = (session(f"c{n}", "192.0.2.1") for n in range(4))
    for session_id in (c0, c1, c2):  # about 3,150 bytes, the last leaving counts nothing
        leave(session_id, "s")
    assert [backend.first_seq(sid, "s") for sid in (c0, c1, c2)] == [1, 1, 1]
    leave(c3, "s")  # c0, c1 and c2 count: over the bound, c0's goes
    assert [backend.first_seq(sid, "s") for sid in (c0, c1, c2, c3)] == [None, 1, 1, 1]
    assert backend.first_seq(other, "o") == 1

    backend.open_stream(c1, "run", request_id=1)  # left while its request runs
    backend.detach(c1, "run", backend.attach(c1, "run"))  # c3's counts now: c1's goes
    assert [backend.first_seq(sid, "s") for sid in (c1, c2, c3)] == [None, 1, 1]
    backend.append(c1, "run", MESSAGE, LARGE)  # a message to a stream left: c2's goes
    assert [backend.first_seq(sid, "s") for sid in (c2, c3)] == [None, 1]
    backend.resume_bytes_per_client = 1500
    backend.append(c1, "run", MESSAGE, LARGE)  # c3's goes, then run's oldest message
    assert (backend.first_seq(c3, "s"), backend.first_seq(c1, "run")) == (None, 2)
    assert backend.first_seq(other, "o") == 1


def test_messages_sent_to_a_stream_after_its_reader_left_count(workers: Pair) -> None:
    """A handler still running after its client left adds to what the session keeps."""
    a, b = workers(resume_bytes=2500)
    sid = new_session(a)
    for stream in ("s1", "s2"):
        a.open_stream(sid, stream)
        token = b.attach(sid, stream)
        a.append(sid, stream, MESSAGE, LARGE)
        b.detach(sid, stream, token)
    a.append(sid, GENERAL_STREAM, MESSAGE, SMALL)  # about 2,100 bytes: both kept
    assert (a.first_seq(sid, "s1"), a.first_seq(sid, "s2")) == (1, 1)
    a.append(sid, "s1", MESSAGE, LARGE)  # s1 grows to about 2,100: over the bound
    # s1, left first, loses its messages; still written, it keeps its numbering
    assert (a.first_seq(sid, "s1"), a.first_seq(sid, "s2")) == (3, 1)


def test_a_stream_still_written_keeps_its_sequence_whatever_is_evicted(workers: Pair) -> None:
    """A stream its request still writes loses only its messages to the event bound: its
    sequence numbers go on, so its client resuming from what it saw gets what came
    later (not numbers starting again at 1, which it would wait past forever)."""
    a, b = workers(buffer_size=3)
    sid = new_session(a)
    a.open_stream(sid, "run", request_id=1)  # a POST's stream, read where it is written
    token = a.attach(sid, "run")
    a.append(sid, "run", MESSAGE, {"progress": 1})
    a.append(sid, "run", MESSAGE, {"progress": 2})
    a.detach(sid, "run", token)  # its client saw both, then left
    for i in range(3):
        a.append(sid, "other", MESSAGE, {"i": i})  # the session's oldest: run's two go
    assert a.first_seq(sid, "run") == 3  # kept, empty: its next event is the third
    a.append(sid, "run", MESSAGE, {"answer": 1})
    a.append(sid, "run", END)
    token = b.attach(sid, "run")
    found = b.read(sid, "run", 2, token, 1).events
    assert [(e.seq, e.kind) for e in found] == [(3, MESSAGE), (4, END)]
    assert found[0].message == {"answer": 1}


def test_a_stream_still_written_and_left_keeps_counting(workers: Pair) -> None:
    """Past ``resume_bytes``, a left stream its request still writes loses its messages but
    stays among the streams left: what its request sends later counts toward the bound
    (a client cannot get answers kept uncounted by leaving streams whose work runs on)."""
    a, b = workers(resume_bytes=2500)
    sid = new_session(a)
    a.open_stream(sid, "run", request_id=1)  # a POST's stream, read where it is written
    token = a.attach(sid, "run")
    a.append(sid, "run", MESSAGE, LARGE)
    a.detach(sid, "run", token)
    for stream in ("s1", "s2"):
        a.open_stream(sid, stream)
        token = b.attach(sid, stream)
        a.append(sid, stream, MESSAGE, LARGE)
        b.detach(sid, stream, token)
    a.append(sid, GENERAL_STREAM, MESSAGE, SMALL)  # run + s1 + s2: about 3,150 bytes
    assert [a.first_seq(sid, s) for s in ("run", "s1", "s2")] == [2, 1, 1]
    a.append(sid, "run", MESSAGE, LARGE)  # its answer counts: over the bound again
    assert a.first_seq(sid, "run") == 3
    a.append(sid, "run", END)  # ended with nothing kept: forgotten, as the event bound would
    assert [a.first_seq(sid, s) for s in ("run", "s1", "s2")] == [None, 1, 1]


def waited(backend: Backend, read: t.Callable[[], t.Any], expected: t.Any) -> t.Any:
    """Return ``read()`` once the detaches that wait are written (memory: at once).

    Redis writes them on a flush, or within a second from its listener's thread, which
    may have taken them first: ``read()`` is asked again until it gives ``expected``, for
    up to 3 seconds.
    """
    if isinstance(backend, RedisBackend):
        backend.flush()
        deadline = time.monotonic() + 3
        while read() != expected and time.monotonic() < deadline:
            time.sleep(0.02)
    return read()


def test_streams_their_writers_reader_left_count_toward_the_bound(workers: Pair) -> None:
    """A stream left by the reader of the process that writes it counts toward
    ``resume_bytes`` however early that reader left: before the stream's first event (on
    Redis the stream was not there yet), or after taking events written before it came
    (on Redis it never attached there). The oldest go, as for any stream left."""
    a, _ = workers(resume_bytes=2500)
    sid = new_session(a)
    for n in range(3):  # its client left before the answer, the stream's first event
        stream = f"early-{n}"
        a.open_stream(sid, stream, request_id=n)
        a.detach(sid, stream, a.attach(sid, stream))
        a.append(sid, stream, MESSAGE, LARGE)
        a.append(sid, stream, END)
    for n in range(3, 5):  # answered before its reader came; the client left mid-answer
        stream = f"whole-{n}"
        a.open_stream(sid, stream, request_id=n)
        a.append(sid, stream, MESSAGE, LARGE)
        a.append(sid, stream, END)
        token = a.attach(sid, stream)
        assert [e.kind for e in a.read(sid, stream, 0, token, 1).events] == [MESSAGE, END]
        a.detach(sid, stream, token)
    # whole-3 left beside early-1 and early-2: over the bound, early-1 goes once both leaves
    # are written (memory: at once; Redis: when the detaches that wait are)
    assert waited(a, lambda: a.first_seq(sid, "early-1"), None) is None
    a.append(sid, GENERAL_STREAM, MESSAGE, SMALL)
    found = [a.first_seq(sid, s) for s in ("early-0", "early-1", "early-2", "whole-3", "whole-4")]
    assert found == [None, None, None, 1, 1]


def test_a_stream_left_that_ends_with_nothing_kept_is_forgotten(workers: Pair) -> None:
    """A stream its client left, whose request ends with nothing a resume would get (it was
    cancelled, or the bounds took its messages while it ran), is forgotten when it ends: it
    would otherwise stay, empty and out of every bound's reach, until its session ends, and
    a client repeating that could fill the server with such records."""
    a, b = workers(buffer_size=3)
    sid = new_session(a)
    for n in range(20):  # left before its first message, then cancelled: only its end
        stream = f"cancelled-{n}"
        a.open_stream(sid, stream, request_id=n)  # a POST's stream, read where it is written
        a.detach(sid, stream, a.attach(sid, stream))
        a.append(sid, stream, END)
        assert a.first_seq(sid, stream) is None
    a.open_stream(sid, "emptied", request_id=99)  # left at its progress, which is evicted
    token = a.attach(sid, "emptied")
    a.append(sid, "emptied", MESSAGE, {"progress": 1})
    a.detach(sid, "emptied", token)
    for i in range(3):
        a.append(sid, GENERAL_STREAM, MESSAGE, {"i": i})
    assert a.first_seq(sid, "emptied") == 2
    a.append(sid, "emptied", END)
    assert a.first_seq(sid, "emptied") is None
    a.open_stream(sid, "answered", request_id=100)  # its answer stays for a resume
    a.detach(sid, "answered", a.attach(sid, "answered"))
    a.append(sid, "answered", MESSAGE, SMALL)
    a.append(sid, "answered", END)
    assert a.first_seq(sid, "answered") == 1
    if isinstance(a, MemoryBackend):
        assert a.stats()["streams"] == 2  # the general stream and "answered"


def test_a_reader_leaving_a_stream_ended_with_nothing_kept_forgets_it(workers: Pair) -> None:
    """A reader that leaves a stream whose request ended with nothing kept (its end came
    while the reader was there) forgets it; one that ended with messages is kept."""
    a, _ = workers()
    sid = new_session(a)
    a.open_stream(sid, "cancelled", request_id=1)  # a POST's stream, read where it is written
    token = a.attach(sid, "cancelled")
    a.append(sid, "cancelled", END)
    assert [e.kind for e in a.read(sid, "cancelled", 0, token, 1).events] == [END]
    a.detach(sid, "cancelled", token)  # the client went before the end reached it
    a.open_stream(sid, "answered", request_id=2)
    token = a.attach(sid, "answered")
    a.append(sid, "answered", MESSAGE, SMALL)
    a.append(sid, "answered", END)
    a.detach(sid, "answered", token)
    token = a.attach(sid, GENERAL_STREAM)  # the general stream is never forgotten so
    a.detach(sid, GENERAL_STREAM, token)
    assert waited(a, lambda: a.first_seq(sid, "cancelled"), None) is None
    assert a.first_seq(sid, "answered") == 1
    assert a.first_seq(sid, GENERAL_STREAM) == 1


def test_a_reader_does_not_open_again_a_request_stream_that_was_forgotten(workers: Pair) -> None:
    """A resume that attaches just after its stream was forgotten (it ended and was dropped,
    or a bound took it) finds it missing at once: attaching opens no empty stream that
    would hold the client until ``MCP_SSE_MAX_STREAM_SECONDS``. The general stream opens
    on its first reader."""
    a, b = workers()
    sid = new_session(a)
    a.open_stream(sid, "gone", request_id=1)
    a.append(sid, "gone", MESSAGE, SMALL)
    a.append(sid, "gone", END)
    a.drop_stream(sid, "gone")  # read to its end where it was written
    assert waited(a, lambda: a.first_seq(sid, "gone"), None) is None
    token = b.attach(sid, "gone")
    assert b.read(sid, "gone", 1, token, 5).missing  # at once, where it waited before
    b.detach(sid, "gone", token)
    assert a.first_seq(sid, "gone") is None
    token = b.attach(sid, GENERAL_STREAM)
    assert a.first_seq(sid, GENERAL_STREAM) == 1
    b.detach(sid, GENERAL_STREAM, token)
    if isinstance(a, MemoryBackend):
        assert a.stats()["streams"] == 1  # the general stream only


def test_the_byte_bound_follows_the_messages_the_event_bound_evicts(workers: Pair) -> None:
    """A left stream's messages evicted by ``buffer_size`` no longer count toward
    ``resume_bytes``; with 0 the streams left are not bounded in bytes."""
    a, b = workers(buffer_size=5, resume_bytes=2500)
    sid = new_session(a)
    token = b.attach(sid, "s1")
    for _ in range(3):
        a.append(sid, "s1", MESSAGE, LARGE)
    b.detach(sid, "s1", token)
    for _ in range(3):  # the sixth message of the session evicts s1's first
        a.append(sid, "tmp", MESSAGE, SMALL)
    assert a.first_seq(sid, "s1") == 2
    b.drop_stream(sid, "tmp")
    token = b.attach(sid, "s2")
    a.append(sid, "s2", MESSAGE, SMALL)
    b.detach(sid, "s2", token)
    a.append(sid, GENERAL_STREAM, MESSAGE, SMALL)  # s1's two left + s2: about 2,350 bytes
    assert (a.first_seq(sid, "s1"), a.first_seq(sid, "s2")) == (2, 1)

    unbounded, other = workers(resume_bytes=0)
    sid = new_session(unbounded, "unbounded")
    for stream in ("s1", "s2", "s3"):
        token = other.attach(sid, stream)
        for _ in range(3):
            unbounded.append(sid, stream, MESSAGE, LARGE)
        other.detach(sid, stream, token)
    unbounded.append(sid, GENERAL_STREAM, MESSAGE, LARGE)
    assert [unbounded.first_seq(sid, s) for s in ("s1", "s2", "s3")] == [1, 1, 1]


# -- server-to-client requests ----------------------------------------------------------


def test_request_ids_are_unique_across_workers(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    ids: list[int] = []
    lock = threading.Lock()

    def take(backend: Backend) -> None:
        for _ in range(50):
            value = backend.next_request_id(sid)
            with lock:
                ids.append(value)

    threads = [threading.Thread(target=take, args=(w,)) for w in (a, b, a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(ids) == list(range(1, 201))
    assert a.next_request_id("nope") == 0


def test_client_answer_reaches_the_waiting_worker(workers: Pair) -> None:
    a, b = workers()
    sid = new_session(a)
    a.expect_response(sid, 7)
    assert a.wait_response(sid, 7, 0.2) is None  # nothing yet
    thread, out = in_thread(lambda: a.wait_response(sid, 7, 10))
    time.sleep(0.3)
    started = time.monotonic()
    answer = {"jsonrpc": "2.0", "id": 7, "result": {"ok": True}}
    assert b.deliver_response(sid, 7, answer)
    assert not b.deliver_response(sid, 7, answer)  # one answer only
    thread.join(5)
    assert out == [answer] and time.monotonic() - started < 2
    assert not b.deliver_response(sid, 7, answer)  # consumed

    # A delivered answer waits for its waiter; ids keep their JSON type.
    a.expect_response(sid, 8)
    assert not b.deliver_response(sid, "8", answer)
    assert b.deliver_response(sid, 8, answer)
    assert a.wait_response(sid, 8, 1) == answer

    a.expect_response(sid, 9)
    a.forget_response(sid, 9)
    assert not b.deliver_response(sid, 9, answer)
    assert a.wait_response(sid, 9, 0.1) is None
    assert not b.deliver_response("nope", 1, answer)


# -- cancellation and fan-out -----------------------------------------------------------


def test_cancel_reaches_the_worker_running_the_request(workers: Pair) -> None:
    a, b = workers()
    seen: list[tuple[str, str, t.Any]] = []
    a.attach_app(lambda sid, rid: seen.append(("a", sid, rid)))
    if b is not a:
        b.attach_app(lambda sid, rid: None)  # b runs nothing: its callback ignores the id
    sid = new_session(a)
    a.open_stream(sid, "r")  # a runs the request
    a.touch_session(sid, +1)
    listening(a)
    b.cancel(sid, "req-1")
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == [("a", sid, "req-1")]


def test_publish_reaches_subscribers_in_every_worker(workers: Pair) -> None:
    a, b = workers()
    b.publish("topic", {"early": True})  # nobody listens yet: lost
    sub_a = a.subscribe("topic")
    sub_b = b.subscribe("topic")
    other = a.subscribe("elsewhere")
    b.publish("topic", {"n": 1})
    a.publish("topic", {"n": 2})
    for sub in (sub_a, sub_b):
        assert sub.get(5) == {"n": 1}
        assert sub.get(5) == {"n": 2}
        assert sub.get(0.05) is None
    assert other.get(0.05) is None
    sub_a.close()
    b.publish("topic", {"n": 3})
    assert sub_b.get(5) == {"n": 3}
    assert sub_a.get(0.1) is None
    sub_b.close()
    other.close()


# -- Redis only -------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.redis
def test_unreachable_redis_at_startup_fails_clearly() -> None:
    pytest.importorskip("redis")
    started = time.monotonic()
    with pytest.raises(BackendUnavailable) as info:
        from_setting(f"redis://127.0.0.1:{_closed_port()}/0", buffer_size=10)
    message = str(info.value)
    assert "Cannot reach Redis" in message and "FLASK_MCP_BACKEND" in message
    assert time.monotonic() - started < 5


@pytest.mark.redis
def test_unreachable_redis_is_logged_when_asked(caplog: pytest.LogCaptureFixture) -> None:
    """``unreachable_ok`` (a gunicorn worker started while the server runs): a backend
    that answers 503 until Redis is back, and an error in the log, instead of a raise."""
    pytest.importorskip("redis")
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    with caplog.at_level(logging.ERROR, logger="flask_mcp"):
        backend = from_setting(url, buffer_size=10, unreachable_ok=True)
    assert backend.multiprocess
    assert "cannot be reached while this worker starts" in caplog.text
    with pytest.raises(BackendUnavailable):
        backend.session_ids()


@pytest.mark.redis
def test_a_refusing_redis_raises_even_when_unreachable_is_ok(redis_url: str) -> None:
    """Only an outage is tolerated: a refused database is a setting to fix, said at once."""
    base = redis_url.rsplit("/", 1)[0]
    with pytest.raises(BackendUnavailable, match="refused the connection"):
        from_setting(f"{base}/99999", buffer_size=10, unreachable_ok=True)


@pytest.mark.redis
def test_a_database_number_redis_refuses_names_mcp_backend(redis_url: str) -> None:
    """A wrong db number gave redis-py's raw ResponseError ("DB index is out of range")."""
    base = redis_url.rsplit("/", 1)[0]
    with pytest.raises(BackendUnavailable) as info:
        from_setting(f"{base}/99999", buffer_size=10)
    message = str(info.value)
    assert "refused the connection: DB index is out of range" in message
    assert "Check MCP_BACKEND (environment: FLASK_MCP_BACKEND)" in message
    assert "database number must be below" in message


@pytest.mark.redis
def test_lost_redis_raises_backend_unavailable_fast() -> None:
    pytest.importorskip("redis")
    from flask_mcp.backends.redis import RedisBackend

    backend = RedisBackend.from_url(f"redis://127.0.0.1:{_closed_port()}/0", check=False)
    started = time.monotonic()
    for call in (
        lambda: backend.get_session("s"),
        lambda: backend.touch_session("s", 1),
        lambda: backend.read("s", "r", 0, 1, 5),
        lambda: backend.wait_response("s", 1, 5),
        lambda: backend.cancel("s", 1),
        lambda: backend.subscribe("c"),
    ):
        with pytest.raises(BackendUnavailable):
            call()
    backend.detach("s", "r", 1)  # best effort: never raises
    assert time.monotonic() - started < 15
    backend.close()


@pytest.mark.redis
def test_a_redis_that_timed_out_fails_best_effort_writes_at_once() -> None:
    """Once a command timed out, a best-effort write (a notification) fails at once, before
    reaching Redis, for the socket timeout; a write that must succeed still tries, and a
    command that succeeds ends the window. Every Redis backend shares the layer: its window
    is the socket timeout of its client, standalone, Sentinel or Cluster (the Cluster's:
    ``tests/test_redis_cluster.py``). End to end: ``tests/test_e2e_faults.py``."""
    redis = pytest.importorskip("redis")
    from flask_mcp.backends.base import best_effort
    from flask_mcp.backends.redis import RedisBackend
    from flask_mcp.backends.redis.codec import Unreachable

    port = _closed_port()
    for url, window in (
        (f"redis://127.0.0.1:{port}/0?socket_timeout=1.5", 1.5),
        (f"redis+sentinel://127.0.0.1:{port}/mymaster/0", 5.0),
    ):
        backend = RedisBackend.from_url(url, check=False)
        assert backend.commands.unreachable.window == window, url
        backend.close()
    unreachable = Unreachable(lambda: "here", 60)
    sent: list[str] = []
    with pytest.raises(BackendUnavailable, match="is unreachable: Timeout"), unreachable:
        raise redis.exceptions.TimeoutError("Timeout reading from socket")
    for _ in range(2):
        with (
            pytest.raises(BackendUnavailable, match="timed out a moment ago"),
            best_effort(),
            unreachable,
        ):
            sent.append("notification")
    with unreachable:  # must succeed: tried, and it succeeds
        sent.append("answer")
    with best_effort(), unreachable:
        sent.append("notification")
    with pytest.raises(BackendUnavailable, match="Connection refused"), unreachable:
        raise redis.exceptions.ConnectionError("Connection refused")  # fails fast anyway
    with best_effort(), unreachable:
        sent.append("notification")
    assert sent == ["answer", "notification", "notification"]


@pytest.fixture
def redis_pair(redis_backend_url: str) -> t.Iterator[tuple[t.Any, t.Any]]:
    """Two ``RedisBackend`` workers on a fresh prefix; their keys are deleted afterwards."""
    from flask_mcp.backends.redis import RedisBackend

    prefix = f"test-{uuid.uuid4().hex[:10]}:"
    pair = [RedisBackend.from_url(f"{redis_backend_url}?prefix={prefix}") for _ in range(2)]
    yield pair[0], pair[1]
    for backend in pair:
        backend.close()
    delete_keys(redis_backend_url, f"{prefix}*")


@pytest.mark.redis
def test_streams_of_a_dead_worker_end_and_its_requests_stop_counting(
    redis_pair: tuple[t.Any, t.Any],
) -> None:
    a, b = redis_pair
    sid = new_session(a)
    a.open_stream(sid, "running")
    a.touch_session(sid, +1)
    b.open_stream(sid, "alive")
    b.touch_session(sid, +1)
    a.append(sid, "running", MESSAGE, {"progress": 1})
    assert b.reap(None, None) == []
    assert b.first_seq(sid, "running") == 1
    a.close()  # as if SIGKILLed: a's heartbeat stops (close marks it stale at once)
    b.reap(None, None)
    token = b.attach(sid, "running")
    assert [e.kind for e in b.read(sid, "running", 0, token, 1).events] == [MESSAGE, END]
    token = b.attach(sid, "alive")
    assert b.read(sid, "alive", 0, token, 0.1).events == []  # a live worker's stream goes on
    assert b.get_session(sid).busy == 1  # type: ignore[union-attr]


@pytest.mark.redis
def test_keys_expire_with_the_session_limits(redis_backend_url: str) -> None:
    from flask_mcp.backends.redis import RedisBackend

    prefix = f"test-{uuid.uuid4().hex[:10]}:"
    backend = RedisBackend.from_url(
        f"{redis_backend_url}?prefix={prefix}", idle_timeout=100, max_lifetime=1000
    )
    client = redis_client(redis_backend_url)
    try:
        sid = new_session(backend)
        backend.append(sid, "r", MESSAGE, {"x": 1})
        for kind in ("s", "m", "o"):
            assert 100 < client.ttl(f"{prefix}{{{sid}}}:{kind}") <= 100 + backend.grace
        assert 100 < client.ttl(f"{prefix}{{{sid}}}:x:r") <= 100 + backend.grace
        backend.update_session(sid, created=time.time() - 950)
        backend.touch_session(sid)  # 50 s of lifetime left
        assert 50 < client.ttl(f"{prefix}{{{sid}}}:s") <= 50 + backend.grace
    finally:
        backend.close()
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
        client.close()


@pytest.mark.redis
def test_a_client_passed_in_may_decode_responses_and_speak_resp3(redis_backend_url: str) -> None:
    from flask_mcp.backends.redis import RedisBackend

    prefix = f"test-{uuid.uuid4().hex[:10]}:"
    raw = redis_client(redis_backend_url, decode_responses=True, protocol=3)
    backend = RedisBackend(client=raw, prefix=prefix)
    try:
        sid = new_session(backend)
        assert backend.get_session(sid, touch=True).client_info == {"name": "c", "version": "1"}  # type: ignore[union-attr]
        backend.open_stream(sid, "r")
        token = backend.attach(sid, "r")
        backend.append(sid, "r", MESSAGE, {"x": "\u00e9t\u00e9"})
        backend.append(sid, "r", END)
        assert [(e.kind, e.message) for e in backend.read(sid, "r", 0, token, 1).events] == [
            (MESSAGE, {"x": "\u00e9t\u00e9"}),
            (END, None),
        ]
        backend.expect_response(sid, 1)
        assert backend.deliver_response(sid, 1, {"id": 1, "result": {}})
        assert backend.wait_response(sid, 1, 1) == {"id": 1, "result": {}}
        assert backend.session_ids() == [sid]
        assert backend.reap(1, None) == []
    finally:
        backend.close()
        delete_keys(redis_backend_url, f"{prefix}*")


@pytest.mark.redis
def test_redis_restarting_at_startup_is_waited_for() -> None:
    """A worker booting while Redis restarts (up within BOOT_WAIT) starts; it does not fail."""
    pytest.importorskip("redis")
    from flask_mcp.backends.redis.urls import BOOT_WAIT

    assert BOOT_WAIT >= 1, "a restart takes a moment"
    port = _closed_port()
    with contextlib.ExitStack() as stack:

        def start_later() -> None:
            time.sleep(0.5)
            stack.enter_context(redis_server(port, missing="needs redis-server"))

        starter = threading.Thread(target=start_later)
        starter.start()
        try:
            backend = from_setting(f"redis://127.0.0.1:{port}/0", buffer_size=10)
        finally:
            starter.join()
        backend.close()


def test_a_broadcast_reaches_every_session_of_many(workers: Pair) -> None:
    """``append_many`` to many general streams (on one Redis, several sessions share a
    script): the sequence numbers, the buffer's eviction and a session gone, as one by one."""
    a, b = workers(buffer_size=2)
    sids = [new_session(a, f"s{i}", limit=1000) for i in range(GROUP + 5)]
    assert a.delete_session(sids[3])
    tokens = {sid: b.attach(sid, GENERAL_STREAM) for sid in sids[:2]}
    for n in range(1, 4):  # the third evicts the first (buffer: 2 messages a session)
        message = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}
        seqs = a.append_many([(sid, GENERAL_STREAM, MESSAGE, message) for sid in sids])
        assert seqs == [0 if sid == sids[3] else n for sid in sids]
    for sid in sids[:2]:
        found = b.read(sid, GENERAL_STREAM, 0, tokens[sid], 1.0)
        assert [(e.seq, e.message["params"]["n"]) for e in found.events] == [(2, 2), (3, 3)]
    assert b.get_session(sids[3]) is None
    assert a.first_seq(sids[-1], GENERAL_STREAM) == 2


@pytest.mark.redis
def test_cursor_saves_that_follow_each_other_share_a_script(redis_pair: t.Any) -> None:
    """The readers' cursor saves, several to a script on one Redis, each as if alone."""
    a, b = redis_pair
    sids = [new_session(a, f"c{i}") for i in range(4)]
    for sid in sids:
        a.append(sid, GENERAL_STREAM, MESSAGE, {"jsonrpc": "2.0", "method": "m"})
    calls = [("cursor", a.keys.session(sid), (GENERAL_STREAM, 1)) for sid in sids[:3]]
    calls.insert(1, ("next_id", a.keys.session(sids[3]), ()))
    calls.append(("cursor", a.keys.session("gone"), (GENERAL_STREAM, 1)))
    assert a.commands.run_many(calls) == [1, 1, 1, 1, 0]
    assert [b.get_cursor(sid, GENERAL_STREAM) for sid in sids] == [1, 1, 1, 0]


# -- the per-client session quota, on by default (issue 33) ---------------------------------

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_one_client_cannot_take_every_session_by_default(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """With the default quota (1,000 sessions a client) one address is refused with 429 at its
    1,001st session while another address, told apart by ProxyFix, still gets one."""
    from werkzeug.middleware.proxy_fix import ProxyFix
    from wire import make_app

    from flask_mcp import MCP

    config: dict[str, t.Any] = {}
    if backend == "redis":
        url = request.getfixturevalue("redis_url")
        config["MCP_BACKEND"] = f"{url}?prefix=quota-{uuid.uuid4().hex[:8]}:"
    app = make_app(MCP(name="quota", version="1"), **config)
    assert app.config["MCP_MAX_SESSIONS_PER_CLIENT"] == 1000
    app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1)  # type: ignore[method-assign]
    client = app.test_client()
    headers = {"Accept": "application/json, text/event-stream", "X-Forwarded-For": "10.0.0.1"}
    for _ in range(1000):
        assert client.post("/mcp", json=INIT, headers=headers).status_code == 200
    refused = client.post("/mcp", json=INIT, headers=headers)
    assert refused.status_code == 429
    assert "MCP_MAX_SESSIONS_PER_CLIENT" in refused.get_json()["error"]["message"]
    other = {**headers, "X-Forwarded-For": "10.0.0.2"}
    assert client.post("/mcp", json=INIT, headers=other).status_code == 200


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_session_stores_its_clients_facts_within_a_small_bound(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """``capabilities`` and ``clientInfo`` larger than MCP_MAX_CLIENT_INFO_SIZE (16 KiB by
    default) are refused with -32602 and store nothing; smaller ones are kept as sent."""
    from wire import make_app

    from flask_mcp import MCP

    config: dict[str, t.Any] = {}
    if backend == "redis":
        url = request.getfixturevalue("redis_url")
        config["MCP_BACKEND"] = f"{url}?prefix=facts-{uuid.uuid4().hex[:8]}:"
    app = make_app(MCP(name="facts", version="1"), **config)
    client = app.test_client()
    headers = {"Accept": "application/json, text/event-stream"}
    big = {**INIT, "params": {**INIT["params"], "capabilities": {"x": {"y": "z" * 20_000}}}}
    refused = client.post("/mcp", json=big, headers=headers)
    body = refused.get_json()
    assert body["error"]["code"] == -32602, body
    assert "MCP_MAX_CLIENT_INFO_SIZE" in body["error"]["message"]
    assert "Mcp-Session-Id" not in refused.headers
    state = app.extensions["mcp"].state(app)
    assert state.backend.session_ids() == []  # nothing stored
    fits = {**INIT, "params": {**INIT["params"], "capabilities": {"x": {"y": "z" * 8_000}}}}
    accepted = client.post("/mcp", json=fits, headers=headers)
    assert accepted.status_code == 200
    record = state.backend.get_session(accepted.headers["Mcp-Session-Id"])
    assert record is not None and record.client_capabilities == {"x": {"y": "z" * 8_000}}


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_session_holds_a_bounded_number_of_subscriptions(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """A template matches any number of URIs: past MCP_MAX_SUBSCRIPTIONS (1,000 by default)
    a ``resources/subscribe`` gets -32600 naming the key and stores nothing; an
    unsubscribe makes room, and subscribing again to a held URI still succeeds."""
    from wire import initialize
    from wire import make_app
    from wire import post

    from flask_mcp import MCP

    mcp = MCP(name="subs", version="1")

    @mcp.resource("test://items/{item_id}")
    def item(item_id: str) -> str:
        return item_id

    config: dict[str, t.Any] = {"MCP_MAX_SUBSCRIPTIONS": 3}
    if backend == "redis":
        url = request.getfixturevalue("redis_url")
        config["MCP_BACKEND"] = f"{url}?prefix=subs-{uuid.uuid4().hex[:8]}:"
    app = make_app(mcp, **config)
    state = app.extensions["mcp"].state(app)
    client = app.test_client()
    session = initialize(client)

    def subscribe(uri: str, method: str = "resources/subscribe") -> dict[str, t.Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"uri": uri}}
        return t.cast("dict[str, t.Any]", post(client, body, session).get_json())

    uris = [f"test://items/{n}" for n in range(3)]
    for uri in uris:
        assert subscribe(uri)["result"] == {}
    refused = subscribe("test://items/" + "x" * 8000)
    assert refused["error"]["code"] == -32600, refused
    assert "MCP_MAX_SUBSCRIPTIONS" in refused["error"]["message"]
    assert refused["error"]["data"] == {"limit": 3}
    assert subscribe(uris[0])["result"] == {}  # held already: no room needed
    record = state.backend.get_session(session)
    assert record is not None and record.subscriptions == uris  # nothing stored
    assert subscribe(uris[0], "resources/unsubscribe")["result"] == {}
    assert subscribe("test://items/3")["result"] == {}
    assert make_app(MCP(name="d", version="1")).config["MCP_MAX_SUBSCRIPTIONS"] == 1000


def test_memory_quota_forgets_the_clients_whose_sessions_ended() -> None:
    """The per-client quota's index drops a session when it ends, and a client with none:
    5,000 sessions from as many addresses, all ended, kept 5,000 entries (2.6 MB) for
    the life of the process."""
    backend = MemoryBackend()
    for n in range(300):
        record = SessionRecord(id=f"s{n}", protocol_version="2025-11-25")
        assert backend.create_session(
            record, 1000, owner=f"address:10.0.{n // 256}.{n % 256}", quota=2
        )
    assert backend.create_session(
        SessionRecord(id="t1", protocol_version="2025-11-25"), 1000, owner="one", quota=2
    )
    assert backend.create_session(
        SessionRecord(id="t2", protocol_version="2025-11-25"), 1000, owner="one", quota=2
    )
    with pytest.raises(SessionQuotaExceeded):  # the quota still holds
        backend.create_session(
            SessionRecord(id="t3", protocol_version="2025-11-25"), 1000, owner="one", quota=2
        )
    for n in range(150):
        assert backend.delete_session(f"s{n}")
    assert len(backend.reap(idle=-1.0, lifetime=None, keep={"t1"})) == 151
    assert backend._owned == {"one": {"t1"}}
    assert backend.create_session(
        SessionRecord(id="t3", protocol_version="2025-11-25"), 1000, owner="one", quota=2
    )


# -- the memory backend under two threads at once -----------------------------------------
#
# Each test forces one interleaving, not a timing: a hook inside the first call makes
# the second happen at the worst moment, between the first's look and its write.


class _WatchedLock:
    """A session lock that tells when another thread waits for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waited = threading.Event()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(False):
            return True
        if not blocking:
            return False
        self.waited.set()
        return self._lock.acquire(True, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _meanwhile(lock: _WatchedLock, fn: t.Callable[[], t.Any]) -> tuple[threading.Thread, list]:
    """Run ``fn`` in another thread until it ends, or waits for ``lock`` (which the
    caller holds: then ``fn`` runs once the caller lets it go)."""
    thread, out = in_thread(fn)
    deadline = time.monotonic() + 5
    while thread.is_alive() and not lock.waited.is_set():
        assert time.monotonic() < deadline, "the other call neither ended nor waited"
        time.sleep(0.001)
    return thread, out


def _watched_session(backend: MemoryBackend, sid: str) -> _WatchedLock:
    lock = _WatchedLock()
    backend._sessions[sid].lock = lock  # type: ignore[assignment]
    return lock


def test_memory_two_answers_to_one_request_are_not_both_taken() -> None:
    """Two reply POSTs for one id: the second is refused, and the waiter gets the first,
    even when the second comes between the first's look at the slot and its write."""
    backend = MemoryBackend()
    sid = new_session(backend)
    backend.expect_response(sid, 7)
    lock = _watched_session(backend, sid)
    first = {"jsonrpc": "2.0", "id": 7, "result": {"n": 1}}
    second = {"jsonrpc": "2.0", "id": 7, "result": {"n": 2}}
    others: list[t.Any] = []

    class Slot(list):  # type: ignore[type-arg]
        def __getitem__(self, index: t.Any) -> t.Any:
            value = super().__getitem__(index)
            if index == 1 and not others:  # the first call looked: the second comes now
                others.append(None)
                others[0] = _meanwhile(lock, lambda: backend.deliver_response(sid, 7, second))
            return value

    backend._sessions[sid].waiters[7] = Slot(backend._sessions[sid].waiters[7])
    taken = backend.deliver_response(sid, 7, first)
    thread, out = others[0]
    thread.join(5)
    assert [taken, *out] == [True, False]
    assert backend.wait_response(sid, 7, 1) == first


def test_memory_a_cursor_never_steps_back_under_two_writers() -> None:
    """A cursor saved by a stream behind another one that saved a later one stays later."""
    backend = MemoryBackend()
    sid = new_session(backend)
    backend.open_stream(sid, GENERAL_STREAM)
    backend.set_cursor(sid, GENERAL_STREAM, 5)
    lock = _watched_session(backend, sid)
    others: list[t.Any] = []

    class Seq(int):
        def __gt__(self, other: t.Any) -> bool:  # max() compares it to the cursor it read
            if not others:
                others.append(None)
                others[0] = _meanwhile(lock, lambda: backend.set_cursor(sid, GENERAL_STREAM, 10))
            return int(self) > other

    backend.set_cursor(sid, GENERAL_STREAM, Seq(7))
    others[0][0].join(5)
    assert backend.get_cursor(sid, GENERAL_STREAM) == 10


def test_memory_reap_spares_a_session_a_request_started_on_meanwhile() -> None:
    """A request that starts on a session after the reaper found it idle, before the
    reaper ends it, keeps it: the reaper judges again, as Redis's script does."""
    backend = MemoryBackend()
    sid = new_session(backend)
    backend.update_session(sid, last_seen=time.time() - 100)
    started: list[bool] = []

    class Idle(float):
        def __lt__(self, other: t.Any) -> bool:  # the reaper compares the idle time to it
            if not started:
                started.append(True)
                backend.touch_session(sid, +1)  # a request starts on it
            return float(self) < other

    assert backend.reap(Idle(50.0), None) == []
    assert backend.get_session(sid) is not None
    backend.touch_session(sid, -1)
    backend.update_session(sid, last_seen=time.time() - 100)
    assert backend.reap(50.0, None) == [(sid, "idle")]


def test_an_unknown_backend_url_is_named_without_its_password() -> None:
    with pytest.raises(ValueError, match="Unknown MCP_BACKEND") as refused:
        from_setting("redis-cluster://admin:s3cret-pw@cache.internal:6379/0", buffer_size=10)
    message = str(refused.value)
    assert "s3cret-pw" not in message
    assert "***@cache.internal:6379" in message  # still says which URL to fix
