"""The Redis backend's per-process stream reader, against a real Redis (issue 16).

Many readers of one process wait without a connection each, every one is woken by
an append from another process, and the reader forgets them when they detach or
vanish. End to end (gunicorn, a Redis restart): ``test_e2e_stream_reader.py``.
"""

from __future__ import annotations

import os
import resource
import socket
import threading
import time
import typing as t

import pytest
from harness import listening
from harness import new_session
from harness import redis_backends

from flask_mcp.backends.base import GENERAL_STREAM
from flask_mcp.backends.base import MESSAGE
from flask_mcp.transport import sse

pytestmark = pytest.mark.redis


@pytest.fixture
def pair(redis_url: str) -> t.Iterator[tuple[t.Any, t.Any]]:
    """Two ``RedisBackend`` workers on a fresh prefix; their keys are deleted afterwards."""
    with redis_backends(redis_url, "reader") as (a, b):
        yield a, b


def test_one_append_wakes_each_of_many_readers_and_detach_frees_them(
    pair: tuple[t.Any, t.Any],
) -> None:
    a, b = pair
    count = 50
    sids = [new_session(a, f"s{i}", 1000) for i in range(count)]
    tokens = {sid: a.attach(sid, GENERAL_STREAM) for sid in sids}
    listening(a, 10)
    got: dict[str, list[int]] = {}

    def read(sid: str) -> None:
        found = a.read(sid, GENERAL_STREAM, 0, tokens[sid], 20)
        got[sid] = [event.seq for event in found.events]

    threads = [threading.Thread(target=read, args=(sid,)) for sid in sids]
    for thread in threads:
        thread.start()
    pool = a.client.connection_pool
    deadline = time.monotonic() + 10
    # Every reader waits, none holding a connection (lent out: the pub/sub connection,
    # and those the short path of single scripts keeps between commands).
    while a.reader.counts()[1] < count or pool.in_use - a.commands.lane.idle > 1:
        assert time.monotonic() < deadline, (a.reader.counts(), pool.in_use, a.commands.lane.idle)
        time.sleep(0.02)
    message = {"jsonrpc": "2.0", "method": "notifications/message"}
    b.append_many([(sid, GENERAL_STREAM, MESSAGE, message) for sid in sids])
    for thread in threads:
        thread.join(10)
    assert got == {sid: [1] for sid in sids}
    assert a.reader.counts()[0] == count  # each remembers its answer until it detaches
    for sid in sids:
        a.detach(sid, GENERAL_STREAM, tokens[sid])
    assert a.reader.counts() == (0, 0)


def test_an_idle_reader_asks_redis_nothing_until_woken(pair: tuple[t.Any, t.Any]) -> None:
    a, b = pair
    sid = new_session(a, "quiet", 1000)
    token = a.attach(sid, GENERAL_STREAM)
    listening(a, 10)
    asked: list[t.Any] = []
    run_many = a.reader.calls.run_many
    a.reader.calls.run_many = lambda calls: asked.extend(calls) or run_many(calls)
    for _ in range(5):
        assert a.read(sid, GENERAL_STREAM, 0, token, 0.05).events == []
    assert len(asked) == 1  # the first read asked; the others trusted its answer
    b.append(sid, GENERAL_STREAM, MESSAGE, {"n": 1})
    assert [e.seq for e in a.read(sid, GENERAL_STREAM, 0, token, 5).events] == [1]
    assert len(asked) == 2


def test_a_reader_that_vanished_without_detaching_is_forgotten(
    pair: tuple[t.Any, t.Any],
) -> None:
    from flask_mcp.backends.redis.reader import FORGET_AFTER

    a, _ = pair
    sid = new_session(a, "gone", 1000)
    token = a.attach(sid, GENERAL_STREAM)
    assert a.read(sid, GENERAL_STREAM, 0, token, 0.05).events == []
    assert a.reader.counts() == (1, 0)
    assert a.reader.sweep(time.monotonic() + 1) == 0  # recent: kept
    assert a.reader.sweep(time.monotonic() + FORGET_AFTER + 1) == 1
    assert a.reader.counts() == (0, 0)
    # It simply asks again should it come back.
    assert a.read(sid, GENERAL_STREAM, 0, token, 0.05).events == []


def test_a_reconnection_makes_every_reader_ask_again(pair: tuple[t.Any, t.Any]) -> None:
    """An event whose wake-up was lost (the pub/sub connection was down) is read at once
    when the listener subscribes again (it calls ``wake_all``)."""
    a, b = pair
    sid = new_session(a, "lost", 1000)
    token = a.attach(sid, GENERAL_STREAM)
    listening(a, 10)
    assert a.read(sid, GENERAL_STREAM, 0, token, 0.05).events == []
    stream = a.reader.streams[a.keys.stream(sid, GENERAL_STREAM)[0]]
    b.append(sid, GENERAL_STREAM, MESSAGE, {"n": 1})
    deadline = time.monotonic() + 5
    while stream.version == 0:  # its wake-up arrives...
        assert time.monotonic() < deadline
        time.sleep(0.01)
    stream.version = 0  # ...and is lost
    found: list[t.Any] = []
    thread = threading.Thread(
        target=lambda: found.append(a.read(sid, GENERAL_STREAM, 0, token, 20))
    )
    thread.start()
    time.sleep(0.3)
    assert not found  # it trusts its last answer
    a.reader.wake_all()
    thread.join(5)
    assert [e.seq for e in found[0].events] == [1]


def test_client_gone_watches_descriptors_past_select_s_limit() -> None:
    """select() cannot take a descriptor past 1023: a worker holding 1,000 streams has them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip("needs an open-file limit above 1100")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    server_side, client_side = socket.socketpair()
    high = socket.socket(fileno=os.dup2(server_side.fileno(), 1050))
    try:
        assert high.fileno() >= 1024
        assert not sse.client_gone(high)
        client_side.sendall(b"x")  # unread data is not a goodbye
        assert not sse.client_gone(high)
        client_side.close()
        high.recv(1)
        assert sse.client_gone(high)
    finally:
        high.close()
        server_side.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_fan_out_wakes_its_readers_when_redis_had_forgotten_the_script() -> None:
    """The wake-up of a fan-out follows the replies of its appends, including those that
    ran again after their pipeline (Redis forgot the script: a restart, SCRIPT FLUSH)."""
    pytest.importorskip("redis")
    from harness import free_port
    from harness import redis_server

    from flask_mcp.backends.redis import RedisBackend

    port = free_port()
    with redis_server(port, missing="needs redis-server for a private Redis"):
        url = f"redis://127.0.0.1:{port}/0"
        a, b = RedisBackend.from_url(url), RedisBackend.from_url(url)
        try:
            sids = [new_session(a, f"f{i}", 1000) for i in range(5)]
            tokens = {sid: a.attach(sid, GENERAL_STREAM) for sid in sids}
            listening(a, 10)
            for sid in sids:
                assert a.read(sid, GENERAL_STREAM, 0, tokens[sid], 0.01).events == []
            b.client.script_flush()
            got: dict[str, list[int]] = {}

            def read(sid: str) -> None:
                found = a.read(sid, GENERAL_STREAM, 0, tokens[sid], 10)
                got[sid] = [event.seq for event in found.events]

            threads = [threading.Thread(target=read, args=(sid,)) for sid in sids]
            for thread in threads:
                thread.start()
            time.sleep(0.2)
            started = time.monotonic()
            b.append_many([(sid, GENERAL_STREAM, MESSAGE, {"n": 1}) for sid in sids])
            for thread in threads:
                thread.join(10)
            assert got == {sid: [1] for sid in sids}
            assert time.monotonic() - started < 5  # woken, not found by a later read
        finally:
            a.close()
            b.close()


# -- wake-ups that carry their event (a broadcast) ------------------------------------------


class _Redis:
    """Stands in for Redis behind a ``StreamReader``: records the questions, answers "wait"."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, list[str], tuple[t.Any, ...]]] = []

    def __call__(self, calls: list[tuple[str, list[str], tuple[t.Any, ...]]]) -> list[t.Any]:
        self.asked.extend(calls)
        return [[b"wait"] if name == "check" else 1 for name, _, _ in calls]


def _waiting_reader(token: int = 7) -> tuple[t.Any, _Redis, list[str]]:
    """A reader of one stream that has asked once (nothing new after event 4)."""
    from flask_mcp.backends.redis.reader import RedisStreamReader as StreamReader

    redis = _Redis()
    reader = StreamReader(redis, lambda: True)
    keys = ["s", "m", "o", "x:g", "z:g", "P{s}:x:g", "P{s}:z:g"]
    assert reader.read(keys, "g", 4, token, 0).events == []
    assert len(redis.asked) == 1
    return reader, redis, keys


@pytest.mark.parametrize(
    ("wakes", "asks"),
    [
        pytest.param([("inline", 5, "7")], False, id="the-next-event-for-this-reader"),
        pytest.param([("inline", 5, "8")], True, id="for-another-reader-token"),
        pytest.param([("inline", 5, "")], True, id="appended-with-no-reader"),
        pytest.param([("inline", 6, "7")], True, id="a-gap-before-it"),
        pytest.param([("plain",), ("inline", 5, "7")], True, id="after-another-wake-up"),
        pytest.param([("inline", 5, "7"), ("plain",)], True, id="before-another-wake-up"),
        pytest.param([("inline", 5, "7"), ("inline", 6, "7")], True, id="two-carried"),
        pytest.param([("inline", 5, "7"), ("reconnect",)], True, id="after-a-reconnection"),
    ],
)
def test_a_reader_takes_a_carried_event_only_when_it_is_surely_its_next(
    wakes: list[tuple[t.Any, ...]], asks: bool
) -> None:
    """The event a wake-up carries is delivered without asking Redis only if nothing else
    happened to the stream since the reader's last answer, the append saw this reader
    (its token), and it is the event right after the reader's last one."""
    from flask_mcp.backends.redis.reader import inline_wake

    reader, redis, keys = _waiting_reader()
    for wake in wakes:
        if wake[0] == "plain":
            reader.wake(keys[-2].encode())
        elif wake[0] == "reconnect":
            reader.wake_all()
        else:
            reader.wake(inline_wake(MESSAGE, '{"n":5}', [(keys[-2], wake[1], wake[2])]).encode())
    found = reader.read(keys, "g", 4, 7, 0)
    assert [c[0] for c in redis.asked[1:]] == (["check"] if asks else [])
    if not asks:
        assert [(e.seq, e.kind, e.message) for e in found.events] == [(5, MESSAGE, {"n": 5})]
        assert reader.read(keys, "g", 5, 7, 0).events == []  # and it trusts that answer
        assert len(redis.asked) == 1


def test_an_inline_wake_up_ignores_streams_this_process_does_not_read() -> None:
    from flask_mcp.backends.redis.reader import inline_wake

    reader, redis, keys = _waiting_reader()
    message = inline_wake(MESSAGE, "{}", [("P{other}:x:g", 1, "1"), ("P{a b}:x:g", 2, "")])
    reader.wake(message + "\nnot a line of this format")
    assert reader.read(keys, "g", 4, 7, 0).events == []
    assert len(redis.asked) == 1


def test_a_broadcast_reaches_readers_without_questions_and_stays_resumable(
    pair: tuple[t.Any, t.Any],
) -> None:
    """Readers woken by a broadcast from another process take its event from the wake-up;
    Redis holds it all the same, numbered, for a resumption on another worker."""
    a, b = pair
    sids = [new_session(a, f"b{i}", 1000) for i in range(20)]
    b.append(sids[0], GENERAL_STREAM, MESSAGE, {"before": True})  # seq 1 on that stream
    tokens = {sid: a.attach(sid, GENERAL_STREAM) for sid in sids}
    listening(a, 10)
    first = {sid: [e.seq for e in a.read(sid, GENERAL_STREAM, 0, tokens[sid], 0.05).events]
             for sid in sids}  # fmt: skip
    assert first == {sid: [1] if sid == sids[0] else [] for sid in sids}
    after = {sid: 1 if sid == sids[0] else 0 for sid in sids}
    asked: list[t.Any] = []
    run_many = a.reader.calls.run_many
    a.reader.calls.run_many = lambda calls: asked.extend(calls) or run_many(calls)
    got: dict[str, list[tuple[int, t.Any]]] = {}

    def read(sid: str) -> None:
        found = a.read(sid, GENERAL_STREAM, after[sid], tokens[sid], 20)
        got[sid] = [(event.seq, event.message) for event in found.events]

    threads = [threading.Thread(target=read, args=(sid,)) for sid in sids]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while a.reader.counts()[1] < len(sids):
        assert time.monotonic() < deadline, a.reader.counts()
        time.sleep(0.02)
    message = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "é\n"}}
    assert b.append_many([(sid, GENERAL_STREAM, MESSAGE, message) for sid in sids]) == [
        after[sid] + 1 for sid in sids
    ]
    for thread in threads:
        thread.join(10)
    assert got == {sid: [(after[sid] + 1, message)] for sid in sids}
    assert [name for name, _, _ in asked] == []  # nobody asked Redis
    for sid in sids:  # the next question trusts the carried answer too
        assert a.read(sid, GENERAL_STREAM, after[sid] + 1, tokens[sid], 0.01).events == []
    assert asked == []
    # Another worker resuming from the start finds every event, numbered.
    for sid in sids:
        token = b.attach(sid, GENERAL_STREAM)
        found = b.read(sid, GENERAL_STREAM, 0, token, 5)
        expected = [(1, {"before": True})] if sid == sids[0] else []
        assert [(e.seq, e.message) for e in found.events] == [*expected, (after[sid] + 1, message)]


def test_saved_cursors_do_not_wait_and_are_read_back_before_they_are_sent(
    pair: tuple[t.Any, t.Any],
) -> None:
    """``set_cursor`` queues the save behind the readers' questions and returns; a cursor
    not sent yet is what ``get_cursor`` reads; a later save replaces an unsent one."""
    a, b = pair
    sid = new_session(a, "cursor", 1000)
    a.append(sid, GENERAL_STREAM, MESSAGE, {"n": 1})
    calls = a.reader.calls
    release, sent = threading.Event(), []
    run_many = calls.run_many

    def slow(batch: list[t.Any]) -> list[t.Any]:
        release.wait(10)
        sent.append([name for name, _, _ in batch])
        return run_many(batch)

    calls.run_many, calls.slots = slow, 1
    busy = threading.Thread(target=a.set_cursor, args=(sid, GENERAL_STREAM, 1))
    busy.start()  # it takes the one slot and waits in slow()
    deadline = time.monotonic() + 5
    while calls.sending < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    a.set_cursor(sid, GENERAL_STREAM, 2)  # returns at once: the slot is taken
    a.set_cursor(sid, GENERAL_STREAM, 3)
    assert a.get_cursor(sid, GENERAL_STREAM) == 3
    assert b.get_cursor(sid, GENERAL_STREAM) == 0  # not in Redis yet
    release.set()
    busy.join(5)
    assert sent == [["cursor"], ["cursor"]]  # the unsent 2 was replaced by 3
    assert b.get_cursor(sid, GENERAL_STREAM) == 3


def test_closing_the_backend_saves_the_cursors_not_sent_yet(pair: tuple[t.Any, t.Any]) -> None:
    a, b = pair
    sid = new_session(a, "closing", 1000)
    a.append(sid, GENERAL_STREAM, MESSAGE, {"n": 1})
    a.reader.calls.slots = 0  # nothing is sent until the backend closes
    a.set_cursor(sid, GENERAL_STREAM, 1)
    assert (a.get_cursor(sid, GENERAL_STREAM), b.get_cursor(sid, GENERAL_STREAM)) == (1, 0)
    a.close()
    assert b.get_cursor(sid, GENERAL_STREAM) == 1


def test_a_connection_closed_under_the_listener_is_a_lost_connection(
    pair: tuple[t.Any, t.Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The pub/sub connection closed by another thread (the client's pool closed while a
    read revived the listener) is lost, not a failure: no traceback, and the listener
    subscribes again and hears the next wake-up. (Depending on where the thread was,
    redis-py reconnects by itself, or fails with a ``TypeError`` from its closed-socket
    check, which the listener used to log as its own failure.)"""
    a, b = pair
    listening(a, 10)
    caplog.set_level("WARNING", logger="flask_mcp")
    deadline = time.monotonic() + 5
    while a.listener._watched is None:
        assert time.monotonic() < deadline, "the listener did not note its connection"
        time.sleep(0.01)
    before = a.listener._watched[1]
    a.client.connection_pool.disconnect()  # the pub/sub connection too, under the thread
    deadline = time.monotonic() + 10
    while a.listener._watched is None or a.listener._watched[1] is before:
        assert time.monotonic() < deadline, "the listener did not subscribe again"
        time.sleep(0.01)
    listening(a, 10)
    assert not [r for r in caplog.records if r.exc_info], [r.message for r in caplog.records]
    sid = new_session(a, "closed", 1000)
    token = a.attach(sid, GENERAL_STREAM)
    assert a.read(sid, GENERAL_STREAM, 0, token, 0.05).events == []
    b.append(sid, GENERAL_STREAM, MESSAGE, {"n": 1})
    assert [e.seq for e in a.read(sid, GENERAL_STREAM, 0, token, 5).events] == [1]


class _Killed(BaseException):
    """What a killed greenlet raises (``GreenletExit``), as a thread can raise it."""


def test_a_call_queued_behind_a_killed_sender_is_still_sent() -> None:
    """A sender killed mid-send (its request was cancelled) leaves no caller it had not
    taken waiting for traffic that may never come: the caller sends its call itself."""
    from flask_mcp.backends.redis.reader import Batches

    entered, release = threading.Event(), threading.Event()

    def run_many(batch: list[tuple[str, list[str], tuple[t.Any, ...]]]) -> list[t.Any]:
        if batch[0][0] == "first":
            entered.set()
            release.wait(10)
            raise _Killed
        return [f"reply to {name}" for name, _, _ in batch]

    batches = Batches(run_many, slots=1)
    outcomes: dict[str, t.Any] = {}

    def ask(name: str) -> None:
        try:
            outcomes[name] = batches.call(name, ["k"])
        except BaseException as exc:  # the killed sender's own end
            outcomes[name] = type(exc).__name__

    first = threading.Thread(target=ask, args=("first",), daemon=True)
    first.start()
    assert entered.wait(10)
    second = threading.Thread(target=ask, args=("second",), daemon=True)
    second.start()
    while not batches.queue:  # queued behind the sender, which holds the only slot
        time.sleep(0.01)
    release.set()
    first.join(10)
    second.join(10)
    assert outcomes == {"first": "_Killed", "second": "reply to second"}
    assert batches.sending == 0
