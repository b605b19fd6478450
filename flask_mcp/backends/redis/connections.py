"""A Redis connection pool that gives back the connections it no longer needs.

redis-py's pool keeps every connection it ever opened: a worker that once ran
1,000 requests at once (or waited for 1,000 back-channel answers) keeps 1,000 idle
connections, and their file descriptors, for the rest of its life; across
several workers a past peak can exhaust Redis's ``maxclients``. This pool is
bounded (``max_connections``; past it a command fails fast, which the backend
reports as unavailable) and closes connections idle for longer than
``idle_timeout`` seconds, keeping ``min_idle`` of them warm. It trims on every
release and whenever :meth:`IdlePool.trim` is called (the backend's liveness
beat does, every few seconds).

A Redis Cluster client has one pool per node: :func:`make_cluster` makes each
an :class:`IdlePool` keeping :data:`CLUSTER_MIN_IDLE` warm connections, so that
a worker's idle connections stay few however many masters the cluster has.
"""

from __future__ import annotations

import contextlib
import functools
import time
import typing as t

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

#: Seconds a pooled connection may stay unused before it is closed.
IDLE_TIMEOUT = 30.0
#: Seconds a command waits for Redis's answer, unless the URL (``?socket_timeout=``) or
#: the client passed in says otherwise.
SOCKET_TIMEOUT = 5.0
#: Seconds connecting to Redis may take before it is reported unreachable.
CONNECT_TIMEOUT = 2.0
#: Idle connections kept open whatever their age, so that bursts do not reconnect.
MIN_IDLE = 4
#: Idle connections kept per node of a Redis Cluster (a worker talks to every master).
CLUSTER_MIN_IDLE = 1
_STAMP = "_flask_mcp_idle_since"


class IdlePool(redis.ConnectionPool):
    """A :class:`redis.ConnectionPool` that closes connections idle past ``idle_timeout``.

    :param idle_timeout: seconds an unused connection is kept (beyond ``min_idle``).
    :param min_idle: unused connections kept whatever their age.
    """

    def __init__(
        self,
        *args: t.Any,
        idle_timeout: float = IDLE_TIMEOUT,
        min_idle: int = MIN_IDLE,
        **kwargs: t.Any,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.min_idle = min_idle
        self._next_trim = 0.0
        super().__init__(*args, **kwargs)

    def release(self, connection: t.Any) -> None:
        """Return ``connection`` to the pool, then close connections idle too long."""
        setattr(connection, _STAMP, time.monotonic())
        super().release(connection)
        now = time.monotonic()
        if now >= self._next_trim:  # at most a few times a second, however busy
            self._next_trim = now + min(1.0, self.idle_timeout / 4)
            self.trim(now)

    def trim(self, now: float | None = None) -> int:
        """Close the unused connections idle past ``idle_timeout``; return how many."""
        now = time.monotonic() if now is None else now
        limit = now - self.idle_timeout
        closing: list[t.Any] = []
        with self._lock:
            available = self._available_connections
            # The list is a stack (the newest released at the end): the oldest come first.
            while len(available) > self.min_idle:
                if getattr(available[0], _STAMP, now) > limit:
                    break
                closing.append(available.pop(0))
                self._created_connections -= 1
        for connection in closing:
            with contextlib.suppress(Exception):
                connection.disconnect()
        return len(closing)

    @property
    def idle(self) -> int:
        """How many unused connections the pool holds."""
        return len(self._available_connections)

    @property
    def in_use(self) -> int:
        """How many connections are lent out."""
        return len(self._in_use_connections)


def idle_since(connection: t.Any, since: float) -> None:
    """Tell an :class:`IdlePool` that ``connection``, just released, has been unused since
    ``since`` (a :func:`time.monotonic` time), so that its next trim counts from then."""
    setattr(connection, _STAMP, since)


def make_client(
    url: str | None,
    *,
    retry: t.Any,
    max_connections: int,
    idle_timeout: float = IDLE_TIMEOUT,
) -> redis.Redis:
    """Return a client on an :class:`IdlePool` for ``url`` (``None``: Redis on localhost).

    Commands time out after 5 seconds and connecting after 2, so that an
    unreachable Redis is reported at once rather than hanging a request.
    """
    options: dict[str, t.Any] = {
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "retry": retry,
        "max_connections": max_connections,
        "idle_timeout": idle_timeout,
    }
    pool = IdlePool(**options) if url is None else IdlePool.from_url(url, **options)
    return _owning(redis.Redis(connection_pool=pool))


def _owning(client: redis.Redis) -> redis.Redis:
    """Make ``client.close()`` close its pool too, as for a pool the client made itself."""
    client.auto_close_connection_pool = True
    return client


def blocking_twin(client: t.Any, socket_timeout: float, default_max: int) -> t.Any:
    """Return a client like ``client`` for blocking commands, with its own pool.

    Its pool is as large as the client's if that is an :class:`IdlePool`, else
    ``default_max``. A cluster client is its own twin (give one passed to the
    backend a ``socket_timeout`` above ``socket_timeout`` here, or none);
    :meth:`~flask_mcp.backends.redis.RedisBackend.from_url` makes a second one.
    """
    if isinstance(client, RedisCluster):
        return client
    pool = client.connection_pool
    kwargs = {**pool.connection_kwargs, "socket_timeout": socket_timeout}
    kwargs.pop("max_connections", None)
    return _owning(
        redis.Redis(
            connection_pool=IdlePool(
                connection_class=pool.connection_class,
                max_connections=pool.max_connections if isinstance(pool, IdlePool) else default_max,
                idle_timeout=getattr(pool, "idle_timeout", IDLE_TIMEOUT),
                **kwargs,
            )
        )
    )


def fail_fast() -> Retry:
    """Retry once at once on a broken connection (a restarted Redis), else fail fast."""
    return Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,))


def make_cluster(
    url: str,
    *,
    retry: t.Any,
    max_connections: int,
    socket_timeout: float = SOCKET_TIMEOUT,
    idle_timeout: float = IDLE_TIMEOUT,
) -> RedisCluster:
    """Return a :class:`redis.cluster.RedisCluster` for ``url`` (``redis://`` or ``rediss://``).

    The client discovers the other nodes from the one named; each node gets an
    :class:`IdlePool` of at most ``max_connections`` that keeps
    :data:`CLUSTER_MIN_IDLE` connections past ``idle_timeout`` seconds unused.
    """
    pool_class = functools.partial(IdlePool, idle_timeout=idle_timeout, min_idle=CLUSTER_MIN_IDLE)
    return RedisCluster.from_url(
        url,
        socket_timeout=socket_timeout,
        socket_connect_timeout=CONNECT_TIMEOUT,
        retry=retry,
        max_connections=max_connections,
        connection_pool_class=pool_class,
    )


def pools(client: t.Any) -> list[t.Any]:
    """The connection pools of ``client``: its pool, or one per known node of a cluster."""
    if isinstance(client, RedisCluster):
        nodes = client.get_nodes()  # type: ignore[no-untyped-call]
        return [n.redis_connection.connection_pool for n in nodes if n.redis_connection]
    pool = getattr(client, "connection_pool", None)
    return [] if pool is None else [pool]


def trim(*clients: t.Any) -> None:
    """Close the connections left idle too long in the pools of ``clients``."""
    for client in clients:
        for pool in pools(client):
            if isinstance(pool, IdlePool):
                pool.trim()


__all__ = [
    "CLUSTER_MIN_IDLE",
    "CONNECT_TIMEOUT",
    "IDLE_TIMEOUT",
    "MIN_IDLE",
    "SOCKET_TIMEOUT",
    "IdlePool",
    "blocking_twin",
    "fail_fast",
    "idle_since",
    "make_client",
    "make_cluster",
    "pools",
    "trim",
]
