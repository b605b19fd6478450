"""The Redis backend's URLs: ``redis://``, ``rediss://``, ``unix://`` and a cluster's.

``redis+cluster://host:port/?prefix=myapp:`` (``rediss+cluster://`` with TLS)
names any node of a Redis Cluster; redis-py's
:class:`~redis.cluster.RedisCluster` finds the others. A cluster has one
database: a path (``/0``) is ignored.
"""

from __future__ import annotations

import time
import typing as t
from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

from ..errors import BackendUnavailable
from ._redis_listener import UNAVAILABLE
from ._redis_listener import text
from ._redis_pool import IDLE_TIMEOUT
from ._redis_pool import make_client
from ._redis_pool import make_cluster

#: The query parameters the backend reads itself; the others go to redis-py.
OURS = ("prefix", "worker_timeout", "max_connections", "pool_idle_timeout")
#: The schemes of a Redis Cluster, and the plain scheme redis-py takes for each.
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
#: Seconds a starting app waits for an unreachable Redis before it gives up. A Redis
#: restarting while a gunicorn worker boots (a respawn, a reload) would otherwise fail the
#: worker's boot, and gunicorn's master stops the whole server when a worker fails to boot.
BOOT_WAIT = 2.0
_FIX = (
    "Start Redis there, or point MCP_BACKEND (environment: FLASK_MCP_BACKEND) at a running "
    "Redis 6.2 or later, for example redis://127.0.0.1:6379/0."
)


def clients_from_url(
    url: str, *, retry: t.Any, max_connections: int, block: float
) -> tuple[t.Any, t.Any, dict[str, str]]:
    """Return the client, the client for blocking reads (``None``: make one like the
    client) and the backend's own query parameters of ``url``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {name: value for name, value in query if name in OURS}
    rest = urlencode([(name, value) for name, value in query if name not in ours])
    most = int(ours.get("max_connections", max_connections))
    idle = float(ours.get("pool_idle_timeout", IDLE_TIMEOUT))
    scheme = CLUSTER_SCHEMES.get(parts.scheme.lower())
    client: t.Any
    if scheme is not None:
        plain = urlunsplit(parts._replace(scheme=scheme, path="", query=rest))
        client = make_cluster(plain, retry=retry, max_connections=most, idle_timeout=idle)
        blocking = make_cluster(
            plain, retry=retry, max_connections=most, socket_timeout=block, idle_timeout=idle
        )
        return client, blocking, ours
    client = make_client(
        urlunsplit(parts._replace(query=rest)),
        retry=retry,
        max_connections=most,
        idle_timeout=idle,
    )
    return client, None, ours


def describe(client: t.Any) -> str:
    """Where ``client`` connects, for messages (no password)."""
    if isinstance(client, RedisCluster):
        node = client.get_default_node()  # type: ignore[no-untyped-call]
        where = f"{node.host}:{node.port}" if node is not None else "?"
        return f"the Redis Cluster at {where}"
    kw = client.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    return f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"


def check_version(client: t.Any, where: str, wait: float = BOOT_WAIT) -> None:
    """Make sure the Redis (every node of a cluster) answers and is 6.2 or later.

    :param wait: seconds to keep trying while Redis cannot be reached.
    :raises BackendUnavailable: it cannot be reached within ``wait``, or is older.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            info = client.info("server")
            break
        except UNAVAILABLE as exc:
            if time.monotonic() >= deadline:
                raise BackendUnavailable(f"Cannot reach Redis at {where} ({exc}). {_FIX}") from None
            time.sleep(0.2)
        except ResponseError as exc:  # a refused SELECT (no such db), AUTH or HELLO
            raise BackendUnavailable(
                f"Redis at {where} refused the connection: {exc}. Check MCP_BACKEND"
                " (environment: FLASK_MCP_BACKEND): the database number must be below the"
                " server's 'databases' setting (16 by default), and the user and password"
                " must be valid, for example redis://127.0.0.1:6379/0."
            ) from None
    nodes = [info] if "redis_version" in info else list(info.values())  # a cluster: per node
    for node in nodes:
        version = text(node.get("redis_version", "0"))
        if tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < (6, 2):
            raise BackendUnavailable(
                f"Redis at {where} is version {version}; Flask-MCP needs 6.2 or later."
            )


__all__ = ["BOOT_WAIT", "CLUSTER_SCHEMES", "OURS", "check_version", "clients_from_url", "describe"]
