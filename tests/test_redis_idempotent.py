"""A write whose reply the connection lost is not made twice.

redis-py sends a command (or a pipeline) once more when the connection breaks, also one
that Redis ran before the break took its reply; an answer the backend could not take is
written again once Redis returns (the owed answers), and so is a change of a busy count.
Each write to a stream, and each change of a busy count, carries an id, and the scripts
make a write they have seen once only. A TCP proxy on 127.0.0.1
between the backend and Redis forwards the command and drops the connection in place of
Redis's reply.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import typing as t
import uuid
from urllib.parse import urlsplit

import pytest
from harness import delete_keys
from redis.cluster import RedisCluster
from wire import Wire
from wire import make_app

from flask_mcp import MCP
from flask_mcp.backends.base import END
from flask_mcp.backends.base import GENERAL_STREAM
from flask_mcp.backends.base import MESSAGE
from flask_mcp.backends.base import Backend
from flask_mcp.backends.base import SessionRecord
from flask_mcp.backends.memory import MemoryBackend
from flask_mcp.backends.redis import RedisBackend
from flask_mcp.backends.redis.connections import fail_fast
from flask_mcp.errors import BackendUnavailable
from flask_mcp.runtime import settle
from flask_mcp.runtime.runs import StreamOutbox
from flask_mcp.runtime.tasks import owner_key

pytestmark = pytest.mark.redis


class Proxy:
    """A TCP proxy to the Redis at ``target`` that, when armed, forwards the next commands
    holding ``marker`` and drops their connection in place of Redis's reply (after the
    first ``skip`` of them, which it lets through)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.marker = b""
        self.armed = 0
        self.skip = 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, marker: str, times: int = 1, skip: int = 0) -> None:
        with self.lock:
            self.marker, self.armed, self.skip = marker.encode(), times, skip

    def close(self) -> None:
        for sock in [self.server, *self.sockets]:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            drop = threading.Event()  # this connection's next reply is dropped
            threading.Thread(target=self._up, args=(client, upstream, drop), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client, drop), daemon=True).start()

    def _up(self, client: socket.socket, upstream: socket.socket, drop: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                with self.lock:
                    # (not a cluster client's COMMAND GETKEYS, which finds the keys)
                    if self.armed and self.marker in data and b"GETKEYS" not in data.upper():
                        if self.skip:
                            self.skip -= 1
                        else:
                            self.armed -= 1
                            drop.set()  # before Redis can answer
                upstream.sendall(data)
        _close(client, upstream)

    def _down(self, upstream: socket.socket, client: socket.socket, drop: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                if drop.is_set():  # Redis ran it and answered: the answer is lost
                    with self.lock:
                        self.dropped += 1
                    break
                client.sendall(data)
        _close(client, upstream)


def _close(*socks: socket.socket) -> None:
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()


class Rig(t.NamedTuple):
    proxied: RedisBackend  # through the proxies
    direct: RedisBackend  # straight to Redis, to look
    proxy: t.Callable[..., None]  # arm every proxy: marker, times, skip


@pytest.fixture(params=["standalone", pytest.param("cluster", marks=pytest.mark.cluster)])
def rig(request: pytest.FixtureRequest) -> t.Iterator[Rig]:
    prefix = f"idem-{uuid.uuid4().hex[:10]}:"
    proxies: dict[tuple[str, int], Proxy] = {}

    def proxy_of(address: tuple[str, int]) -> Proxy:
        if address not in proxies:
            proxies[address] = Proxy(address)
        return proxies[address]

    def arm(marker: str, times: int, skip: int = 0) -> None:
        for each in list(proxies.values()):
            each.arm(marker, times, skip)

    if request.param == "standalone":
        url = request.getfixturevalue("redis_url")
        parts = urlsplit(url)
        proxy = proxy_of((parts.hostname or "127.0.0.1", parts.port or 6379))
        proxied = RedisBackend.from_url(
            f"redis://127.0.0.1:{proxy.port}{parts.path}?prefix={prefix}"
        )
    else:
        url = request.getfixturevalue("redis_cluster_url")
        parts = urlsplit(url)
        seed = (parts.hostname or "127.0.0.1", t.cast(int, parts.port))

        def remap(address: tuple[str, int]) -> tuple[str, int]:
            return ("127.0.0.1", proxy_of(address).port)

        client = RedisCluster(
            host=seed[0], port=seed[1], address_remap=remap, retry=fail_fast(), socket_timeout=20
        )
        proxied = RedisBackend(client=client, prefix=prefix)
        proxied._owns_client = True
    direct = RedisBackend.from_url(f"{url}?prefix={prefix}")
    for backend in (proxied, direct):  # no listener threads: nothing else on the wire
        backend.listener.ensure = lambda wait: True  # type: ignore[method-assign]
    try:
        yield Rig(proxied, direct, arm)
        assert sum(p.dropped for p in proxies.values()) >= 1
    finally:
        proxied.close()
        direct.close()
        for each in proxies.values():
            each.close()
        delete_keys(url, f"{prefix}*")


def session(backend: Backend) -> str:
    sid = uuid.uuid4().hex
    assert backend.create_session(SessionRecord(id=sid, protocol_version="2025-11-25"), 100)
    return sid


def events(backend: Backend, sid: str, stream: str) -> list[tuple[int, str, t.Any]]:
    token = backend.attach(sid, stream)
    found = backend.read(sid, stream, 0, token, 0.1).events
    return [(e.seq, e.kind, e.message) for e in found]


def answer(marker: str) -> dict[str, t.Any]:
    return {"jsonrpc": "2.0", "id": 7, "result": {"marker": marker}}


def test_an_append_whose_reply_is_lost_is_appended_once(rig: Rig) -> None:
    sid = session(rig.proxied)
    warmup = {"jsonrpc": "2.0", "method": "notifications/warmup"}
    assert rig.proxied.append(sid, GENERAL_STREAM, MESSAGE, warmup) == 1
    marker = uuid.uuid4().hex
    rig.proxy(marker, 1)
    assert rig.proxied.append(sid, GENERAL_STREAM, MESSAGE, answer(marker)) == 2
    assert events(rig.direct, sid, GENERAL_STREAM) == [
        (1, MESSAGE, warmup),
        (2, MESSAGE, answer(marker)),
    ]


def warm(backend: Backend, sid: str) -> None:
    """Run ``emit`` once on the node of ``sid``, so that Redis knows the script: a script it
    does not know fails there without running (and runs again on its own)."""
    backend.open_stream(sid, "warm", request_id=6)
    assert backend.append(sid, "warm", END) == 1


def test_an_emit_whose_reply_is_lost_is_appended_once(rig: Rig) -> None:
    sid = session(rig.proxied)
    warm(rig.proxied, sid)
    rig.proxied.open_stream(sid, "r", request_id=7)  # this process writes it: ``emit``
    marker = uuid.uuid4().hex
    rig.proxy(marker, 1)
    assert rig.proxied.append(sid, "r", MESSAGE, answer(marker)) == 1
    assert rig.proxied.append(sid, "r", END) == 2
    assert events(rig.direct, sid, "r") == [(1, MESSAGE, answer(marker)), (2, END, None)]


def test_a_broadcast_whose_replies_are_lost_is_appended_once(rig: Rig) -> None:
    sids = [session(rig.proxied) for _ in range(3)]
    first = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"m": 1}}
    assert rig.proxied.append_many([(s, GENERAL_STREAM, MESSAGE, first) for s in sids]) == [1] * 3
    marker = uuid.uuid4().hex
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"m": marker}}
    rig.proxy(marker, 1)  # ``append_all`` on one Redis; on a cluster, one node's pipeline
    assert rig.proxied.append_many([(s, GENERAL_STREAM, MESSAGE, note) for s in sids]) == [2] * 3
    for sid in sids:
        assert events(rig.direct, sid, GENERAL_STREAM) == [(1, MESSAGE, first), (2, MESSAGE, note)]


def test_an_owed_answer_that_reached_redis_is_not_written_again(rig: Rig) -> None:
    sid = session(rig.proxied)
    warm(rig.proxied, sid)
    outbox = StreamOutbox(rig.proxied, sid, "r", request_id=7)
    marker = uuid.uuid4().hex
    rig.proxy(marker, 2)  # the write and redis-py's retry both lose their reply: owed
    assert outbox.finish(answer(marker))
    assert settle.settle_owed() == 0  # written again, with the same write ids
    assert events(rig.direct, sid, "r") == [(1, MESSAGE, answer(marker)), (2, END, None)]


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_a_write_sent_again_with_its_id_returns_its_first_sequence(
    kind: str, request: pytest.FixtureRequest
) -> None:
    if kind == "memory":
        backend: Backend = MemoryBackend()
    else:
        prefix = f"idem-{uuid.uuid4().hex[:10]}:"
        url = request.getfixturevalue("redis_url")
        backend = RedisBackend.from_url(f"{url}?prefix={prefix}")
        request.addfinalizer(lambda: delete_keys(url, f"{prefix}*"))
        request.addfinalizer(backend.close)
    sid = session(backend)
    first, again = {"n": 1}, {"n": 2}
    assert backend.append(sid, GENERAL_STREAM, MESSAGE, first, write_id="a" * 16) == 1
    assert backend.append(sid, GENERAL_STREAM, MESSAGE, again, write_id="b" * 16) == 2
    assert backend.append(sid, GENERAL_STREAM, MESSAGE, first, write_id="a" * 16) == 1
    assert backend.append_many(
        [(sid, GENERAL_STREAM, MESSAGE, again), (sid, GENERAL_STREAM, MESSAGE, {"n": 3})],
        write_ids=["b" * 16, "c" * 16],
    ) == [2, 3]
    for n in range(20):  # the ids of a stream's last 16 writes are kept
        backend.append(sid, GENERAL_STREAM, MESSAGE, {"n": 4 + n}, write_id=f"{n:016x}")
    assert backend.append(sid, GENERAL_STREAM, MESSAGE, first, write_id="a" * 16) == 24
    assert [e[2] for e in events(backend, sid, GENERAL_STREAM)] == [
        first,
        again,
        {"n": 3},
        *({"n": 4 + n} for n in range(20)),
        first,
    ]


def test_an_unreachable_redis_still_fails_the_write(rig: Rig) -> None:
    """More lost replies than retries: the caller hears of it (the owed answers keep it)."""
    sid = session(rig.proxied)
    marker = uuid.uuid4().hex
    rig.proxy(marker, 2)
    with pytest.raises(BackendUnavailable):
        rig.proxied.append(sid, GENERAL_STREAM, MESSAGE, answer(marker))
    # Sent again by its caller without the write's id, it is a new write.
    assert rig.proxied.append(sid, GENERAL_STREAM, MESSAGE, answer(marker)) == 2


def busy(backend: RedisBackend, sid: str, worker: str) -> int:
    """The busy count ``worker`` holds in the session's record (0: none)."""
    raw = backend.client.hget(backend.keys.record(sid), f"b:{worker}")
    return 0 if raw is None else int(raw)


def test_a_session_lookup_whose_reply_is_lost_counts_its_request_once(rig: Rig) -> None:
    sid = session(rig.proxied)
    worker = rig.proxied.worker
    rig.proxy(sid, 1)  # the lookup (``load``, with the worker's registration): reply lost
    assert rig.proxied.get_session(sid, touch=True) is not None
    assert busy(rig.direct, sid, worker) == 1
    rig.proxied.touch_session(sid, 1)  # the request claims the lookup's count
    rig.proxied.touch_session(sid, -1)
    rig.proxied.flush(everything=True)
    assert busy(rig.direct, sid, worker) == 0  # idle: the reaper may end it


def test_a_busy_count_change_whose_reply_is_lost_is_made_once(rig: Rig) -> None:
    sid = session(rig.proxied)
    worker = rig.proxied.worker
    rig.proxied.touch_session(sid, 1)
    rig.proxied.touch_session(sid, 1)
    rig.proxy(sid, 1)  # ``touch``: its reply is lost, redis-py sends it again
    rig.proxied.touch_session(sid, 1)
    assert busy(rig.direct, sid, worker) == 3
    rig.proxy(sid, 1)
    rig.proxied.touch_session(sid, -1)
    assert busy(rig.direct, sid, worker) == 2  # not 1: a running request stays counted


def test_a_busy_count_change_that_got_no_reply_is_made_once_when_redis_is_back(
    rig: Rig,
) -> None:
    """Both tries lose their reply: Redis made the change (twice, as things were), or not;
    sent again with its id once Redis answers, it counts once."""
    sid = session(rig.proxied)
    worker = rig.proxied.worker
    rig.proxied.touch_session(sid, 1)
    rig.proxied.touch_session(sid, 1)
    rig.proxy(sid, 2)  # a request ends
    with pytest.raises(BackendUnavailable):
        rig.proxied.touch_session(sid, -1)
    rig.proxied.flush(everything=True)
    assert busy(rig.direct, sid, worker) == 1
    rig.proxy(sid, 2)  # a request starts: it does not run
    with pytest.raises(BackendUnavailable):
        rig.proxied.touch_session(sid, 1)
    rig.proxied.flush(everything=True)
    assert busy(rig.direct, sid, worker) == 1
    rig.proxy(sid, 2)  # a session lookup: its request fails
    with pytest.raises(BackendUnavailable):
        rig.proxied.get_session(sid, touch=True)
    rig.proxied.flush(everything=True)
    assert busy(rig.direct, sid, worker) == 1  # the one request still running
    rig.proxied.touch_session(sid, -1)
    assert busy(rig.direct, sid, worker) == 0


def test_a_shared_log_append_whose_reply_is_lost_is_appended_once(rig: Rig) -> None:
    """The registry's log: a change stored twice is replayed twice by every other worker,
    and once more by its own (it knows the second position only)."""
    name = f"registry:app:{uuid.uuid4().hex[:8]}"
    log = rig.proxied.shared_log(name)
    assert log.append('{"op": "warmup"}') == 1
    marker = uuid.uuid4().hex
    rig.proxy(marker, 1)
    assert log.append(f'{{"op": "{marker}"}}') == 2
    assert rig.direct.shared_log(name).read(0) == ['{"op": "warmup"}', f'{{"op": "{marker}"}}']


def test_a_client_answer_taken_by_a_poll_whose_reply_is_lost_reaches_its_waiter(
    rig: Rig,
) -> None:
    sid = session(rig.proxied)
    rid = rig.proxied.next_request_id(sid)
    rig.proxied.expect_response(sid, rid)
    message = {"jsonrpc": "2.0", "id": rid, "result": {"action": "accept"}}
    assert rig.direct.deliver_response(sid, rid, message)
    rig.proxy(f"{{{sid}}}:a:", 1)  # ``poll`` takes the answer; its reply is lost
    assert rig.proxied.wait_response(sid, rid, 1.0) == message


def test_a_client_answer_taken_by_a_blocking_wait_whose_reply_is_lost_reaches_its_waiter(
    rig: Rig,
) -> None:
    sid = session(rig.proxied)
    rid = rig.proxied.next_request_id(sid)
    rig.proxied.expect_response(sid, rid)
    message = {"jsonrpc": "2.0", "id": rid, "result": {"action": "accept"}}
    rig.proxy(f"{{{sid}}}:a:", 1, 1)  # not ``poll`` (no answer yet): the blocking wait
    threading.Timer(0.2, rig.direct.deliver_response, (sid, rid, message)).start()
    assert rig.proxied.wait_response(sid, rid, 1.0) == message


def test_a_task_change_whose_reply_is_lost_is_made_once_and_seen_made(rig: Rig) -> None:
    """A task's input answers taken by a change whose ``EXEC`` reply is lost: redis-py
    reports a conflict, and the change must not run again on the record it already made."""
    store = rig.proxied.task_store()
    task_id = uuid.uuid4().hex
    record = {"taskId": task_id, "status": "input_required", "responses": {"k": "yes"}}
    store.create(record, 60)
    marker = uuid.uuid4().hex
    taken: dict[str, t.Any] = {}

    def take(record: dict[str, t.Any]) -> bool:
        taken.clear()
        if "k" not in record.get("responses", {}):
            return False
        taken["k"] = record["responses"].pop("k")
        record["status"], record["mark"] = "working", marker
        return True

    rig.proxy(marker, 1)
    changed = store.mutate(task_id, take)
    assert taken == {"k": "yes"}
    assert changed is not None and changed["mark"] == marker
    assert rig.direct.task_store().get(task_id) == changed


def test_a_task_whose_creation_reply_is_lost_is_not_kept(rig: Rig) -> None:
    """A task ``tools/call`` whose last creation write ran in Redis but lost its reply (and
    its resend's): the client is refused (503), so nothing of the task may stay in Redis:
    no record that ``tasks/list`` shows and the lease sweep fails, no per-client count."""
    mcp = MCP(name="tasks", version="1")

    @mcp.tool(task="optional")
    def slow() -> str:
        return "never run"

    wire = Wire(make_app(mcp, MCP_BACKEND=rig.proxied))
    # The last write of the creation: the ZADD to the tasks/list index of an anonymous
    # 2026-07-28 caller, every time it is sent (a cluster client sends it again on other
    # connections), and nothing of the removal that follows.
    index = rig.direct.task_store()._index(owner_key(None, None))  # type: ignore[attr-defined]
    rig.proxy(f"ZADD\r\n${len(index)}\r\n{index}\r\n", 10)
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    response = wire.post("tools/call", {"name": "slow", "arguments": {}}, caps=caps)
    assert response.status_code == 503
    keys = rig.direct.client.scan_iter(f"{rig.direct.keys.prefix}*")
    assert [k for k in keys if b"task" in k] == []  # the record, its indexes and counts
