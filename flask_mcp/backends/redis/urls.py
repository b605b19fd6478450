"""The Redis backend's URLs: ``redis://``, ``rediss://``, ``unix://``, a cluster's and
a Sentinel's.

``redis+cluster://host:port/?prefix=myapp:`` (``rediss+cluster://`` with TLS)
names any node of a Redis Cluster; redis-py's
:class:`~redis.cluster.RedisCluster` finds the others. A cluster has one
database: a path (``/0``) is ignored.

``redis+sentinel://host1:26379,host2:26379,host3:26379/mymaster/0?prefix=myapp:``
(``rediss+sentinel://`` with TLS to the master) names the Sentinels of the master
``mymaster`` (database ``0``, the default); redis-py's :class:`~redis.sentinel.Sentinel`
asks them where the master is, and again after a failover. A password before the
hosts (``redis+sentinel://:secret@host1:26379,...``) is the master's;
``sentinel_password=`` in the query is the Sentinels' own.
"""

from __future__ import annotations

import time
import typing as t
from urllib.parse import parse_qsl
from urllib.parse import unquote
from urllib.parse import urlencode
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

from redis.cluster import RedisCluster
from redis.exceptions import ResponseError
from redis.sentinel import Sentinel
from redis.sentinel import SentinelConnectionPool

from ...errors import BackendUnavailable
from ..base import describe_url
from .codec import UNAVAILABLE
from .codec import text
from .connections import CONNECT_TIMEOUT
from .connections import IDLE_TIMEOUT
from .connections import SOCKET_TIMEOUT
from .connections import make_client
from .connections import make_cluster

#: The query parameters the backend reads itself; the others go to redis-py.
OURS = ("prefix", "worker_timeout", "max_connections", "pool_idle_timeout")
#: The schemes of a Redis Cluster, and the plain scheme redis-py takes for each.
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
#: The schemes of a master behind Redis Sentinel, and whether each speaks TLS to it.
SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}
#: The port of a Sentinel named without one.
SENTINEL_PORT = 26379
#: The query parameters of a Sentinel URL passed to redis-py's connections.
SENTINEL_OPTIONS = ("client_name", "username", "sentinel_username", "sentinel_password")
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
    client: t.Any
    if parts.scheme.lower() in SENTINEL_SCHEMES:
        client, blocking = sentinel_clients(url, retry=retry, max_connections=most, block=block)
        return client, blocking, ours
    scheme = CLUSTER_SCHEMES.get(parts.scheme.lower())
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


def sentinel_clients(
    url: str, *, retry: t.Any, max_connections: int, block: float
) -> tuple[t.Any, t.Any]:
    """Return the client and the client for blocking reads of the master a
    ``redis+sentinel://`` URL names (see the module docstring).

    :raises ValueError: the URL names no master, or a database that is not a number.
    """
    parts = urlsplit(url)
    tls = SENTINEL_SCHEMES[parts.scheme.lower()]
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    hosts = []
    for node in hostlist.split(","):
        host, _, port = node.strip().rpartition(":") if ":" in node else (node.strip(), "", "")
        hosts.append((host.strip("[]"), int(port or SENTINEL_PORT)))
    names = [p for p in parts.path.split("/") if p]
    if not names or not hosts or not hosts[0][0]:
        raise ValueError(
            f"The Sentinel URL {describe_url(url)!r} names no master: use "
            "redis+sentinel://host1:26379,host2:26379/MASTER_NAME/0"
        )
    service, db = names[0], int(names[1]) if len(names) > 1 else 0
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(k for k in query if k not in (*OURS, *SENTINEL_OPTIONS))
    if unknown:
        raise ValueError(
            f"Unknown query parameters {unknown} in the Sentinel URL {describe_url(url)!r}; "
            f"it takes {', '.join((*OURS, *SENTINEL_OPTIONS))}."
        )
    options: dict[str, t.Any] = {
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "retry": retry,
        "db": db,
        "ssl": tls,
    }
    if username or query.get("username"):
        options["username"] = unquote(username) or query["username"]
    if password:
        options["password"] = unquote(password)
    if query.get("client_name"):
        options["client_name"] = query["client_name"]
    asking: dict[str, t.Any] = {"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
    if query.get("sentinel_username"):
        asking["username"] = query["sentinel_username"]
    if query.get("sentinel_password"):
        asking["password"] = query["sentinel_password"]
    sentinel = Sentinel(hosts, sentinel_kwargs=asking, **options)  # type: ignore[no-untyped-call]
    most = max_connections
    client = sentinel.master_for(service, max_connections=most)  # type: ignore[no-untyped-call]
    blocking = sentinel.master_for(  # type: ignore[no-untyped-call]
        service, socket_timeout=block, max_connections=most
    )
    return client, blocking


def describe(client: t.Any) -> str:
    """Where ``client`` connects, for messages (no password)."""
    pool = getattr(client, "connection_pool", None)
    if isinstance(pool, SentinelConnectionPool):
        sentinels = ",".join(
            f"{s.connection_pool.connection_kwargs.get('host')}:"
            f"{s.connection_pool.connection_kwargs.get('port')}"
            for s in pool.sentinel_manager.sentinels
        )
        return f"the Redis master {pool.service_name!r} of the Sentinels at {sentinels}"
    if isinstance(client, RedisCluster):
        node = client.get_default_node()  # type: ignore[no-untyped-call]
        where = f"{node.host}:{node.port}" if node is not None else "?"
        return f"the Redis Cluster at {where}"
    kw = client.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    return f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"


def check_version(
    client: t.Any, where: str, wait: float = BOOT_WAIT, *, unreachable_ok: bool = False
) -> bool:
    """Make sure the Redis (every node of a cluster) answers and is 6.2 or later.

    :param wait: seconds to keep trying while Redis cannot be reached.
    :param unreachable_ok: a Redis that cannot be reached within ``wait`` is not an
        error: return ``False`` (a refusal or an old version still raises).
    :returns: whether Redis answered (and so was checked).
    :raises BackendUnavailable: it cannot be reached within ``wait`` (unless
        ``unreachable_ok``), refused the connection, or is older.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            info = client.info("server")
            break
        except UNAVAILABLE as exc:
            if time.monotonic() >= deadline:
                if unreachable_ok:
                    return False
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
    return True


__all__ = [
    "BOOT_WAIT",
    "CLUSTER_SCHEMES",
    "OURS",
    "SENTINEL_SCHEMES",
    "check_version",
    "clients_from_url",
    "describe",
    "describe_url",
    "sentinel_clients",
]
