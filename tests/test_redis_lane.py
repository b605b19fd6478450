"""The short path of single commands (:mod:`flask_mcp.backends.redis.lane`), on a real Redis."""

from __future__ import annotations

import time
import typing as t
import uuid

import pytest
import redis
from harness import HOST
from harness import free_port
from harness import redis_server

from flask_mcp.backends.base import SessionRecord
from flask_mcp.backends.redis import RedisBackend
from flask_mcp.backends.redis.connections import IdlePool
from flask_mcp.backends.redis.connections import fail_fast
from flask_mcp.backends.redis.lane import Lane
from flask_mcp.backends.redis.lane import lane_for
from flask_mcp.errors import BackendUnavailable

pytestmark = pytest.mark.redis


@pytest.fixture
def pool(redis_url: str) -> t.Iterator[IdlePool]:
    pool = IdlePool.from_url(redis_url, idle_timeout=30.0)
    yield pool
    pool.disconnect()


def test_replies_and_reuses_one_connection(pool: IdlePool) -> None:
    lane = Lane(pool)
    key = f"lane:{uuid.uuid4().hex}"
    assert lane.execute("SET", key, "1") == b"OK"
    assert lane.execute("INCR", key) == 2
    assert lane.execute("DEL", key) == 1
    assert lane.idle == 1
    assert len(pool._in_use_connections) == 1  # borrowed from the pool, counted there


def test_an_error_reply_is_raised_and_keeps_the_connection(pool: IdlePool) -> None:
    lane = Lane(pool)
    key = f"lane:{uuid.uuid4().hex}"
    lane.execute("SET", key, "text")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        lane.execute("INCR", key)
    assert lane.idle == 1
    assert lane.execute("GET", key) == b"text"  # the same connection answers in order
    lane.execute("DEL", key)


def _kill(redis_url: str, name: str) -> None:
    """Make Redis close the connection named ``name``, as a Redis restart would."""
    admin = redis.Redis.from_url(redis_url)
    try:
        found = [c for c in admin.client_list() if c.get("name") == name]
        assert len(found) == 1
        admin.client_kill_filter(_id=found[0]["id"])
    finally:
        admin.close()


def test_a_connection_closed_by_redis_is_replaced_once(pool: IdlePool, redis_url: str) -> None:
    lane = Lane(pool)
    name = f"lane-{uuid.uuid4().hex[:8]}"
    lane.execute("CLIENT", "SETNAME", name)
    _kill(redis_url, name)
    assert lane.execute("PING") == b"PONG"  # sent again on a new connection
    assert lane.idle == 1


def test_after_a_redis_restart_every_kept_connection_is_checked_again(
    pool: IdlePool, redis_url: str
) -> None:
    lane = Lane(pool)
    names = [f"lane-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    for name in names:  # three connections kept at once, as after concurrent requests
        connection = pool.get_connection()
        connection.send_command("CLIENT", "SETNAME", name)
        assert connection.read_response() == b"OK"
        lane._idle.append((connection, time.monotonic()))
    for name in names:  # a restart closes them all
        _kill(redis_url, name)
    assert lane.execute("PING") == b"PONG"  # one retry, on a connection the pool checked
    assert lane.idle == 1


def test_without_retries_a_broken_connection_is_reported(pool: IdlePool, redis_url: str) -> None:
    lane = Lane(pool, retry=0)
    name = f"lane-{uuid.uuid4().hex[:8]}"
    lane.execute("CLIENT", "SETNAME", name)
    _kill(redis_url, name)
    with pytest.raises(redis.ConnectionError):
        lane.execute("PING")
    assert lane.idle == 0  # the broken connection went back to the pool, not to the lane
    assert lane.execute("PING") == b"PONG"


def test_a_burst_leaves_the_lane_with_a_few_connections_and_the_rest_to_the_pool(
    pool: IdlePool,
) -> None:
    lane = Lane(pool, keep=2)
    taken = [lane._take() for _ in range(5)]  # five commands at once
    for connection in taken:
        connection.send_command("PING")
        connection.read_response()
        lane._give(connection)
    assert lane.idle == 2
    assert pool.idle == 3  # the pool closes them once unused for its idle timeout


def test_trim_gives_idle_connections_back_to_the_pool(pool: IdlePool) -> None:
    lane = Lane(pool)
    lane.execute("PING")
    assert lane.trim() == 0  # not idle long enough
    assert lane.trim(now=10**9) == 1
    assert lane.idle == 0
    assert not pool._in_use_connections
    lane.execute("PING")  # borrows again
    lane.close()
    assert lane.idle == 0 and not pool._in_use_connections


def test_what_the_lane_gives_back_idle_the_pool_closes_at_once(redis_url: str) -> None:
    pool = IdlePool.from_url(redis_url, idle_timeout=30.0, min_idle=0)
    lane = Lane(pool)
    try:
        lane._idle.extend((pool.get_connection(), 0.0) for _ in range(3))  # a past burst
        for connection, _ in lane._idle:
            connection.connect()
        assert lane.trim(now=100.0) == 3
        assert pool.trim() == 3  # idle since the lane's last use, not since the give-back
        assert pool.idle == 0 and pool._created_connections == 0
    finally:
        pool.disconnect()


def test_only_plain_standalone_clients_get_a_lane(redis_url: str) -> None:
    assert isinstance(lane_for(redis.Redis.from_url(redis_url)), Lane)
    assert lane_for(redis.Redis.from_url(redis_url, decode_responses=True)) is None
    assert lane_for(redis.Redis.from_url(redis_url, protocol=3)) is None
    blocking = redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url(redis_url))
    assert lane_for(blocking) is None
    assert lane_for(object()) is None


def test_the_backend_runs_its_scripts_on_the_lane_and_reloads_forgotten_ones() -> None:
    port = free_port()  # a Redis of its own: SCRIPT FLUSH empties every database's cache
    with redis_server(port, missing="redis-server is needed to test the script reload"):
        _run_after_script_flush(RedisBackend.from_url(f"redis://{HOST}:{port}/0"))


def _run_after_script_flush(backend: RedisBackend) -> None:
    try:
        assert backend.commands.lane is not None
        record = SessionRecord(id=uuid.uuid4().hex, protocol_version="2025-11-25")
        assert backend.create_session(record, 100)
        assert backend.get_session(record.id, touch=True) is not None
        backend.client.script_flush()  # as after a Redis restart: the next EVALSHA fails
        found = backend.get_session(record.id, touch=True)
        assert found is not None and found.id == record.id
        assert backend.commands.lane.idle >= 1
        backend.delete_session(record.id)
    finally:
        backend.close()


def test_the_backend_reports_an_unreachable_redis_as_unavailable() -> None:
    client = redis.Redis(
        connection_pool=IdlePool(port=1, socket_connect_timeout=0.5), retry=fail_fast()
    )
    backend = RedisBackend(client, prefix=f"lane{uuid.uuid4().hex[:6]}:")
    assert backend.commands.lane is not None
    with pytest.raises(BackendUnavailable, match="unreachable"):
        backend.get_session("x", touch=True)
