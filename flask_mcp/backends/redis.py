"""The Redis backend: shared state for many workers on many machines.

Session records live in Redis hashes, stream event logs in Redis Streams, and
everything that must reach another process travels through Redis: a client's
answer to a server-to-client request (a list the waiting worker pops with
``BLPOP``), ``notifications/cancelled`` and :meth:`RedisBackend.publish`
(pub/sub, one listener per process). Any worker can therefore serve any
request of any session. Keys: :mod:`flask_mcp.backends._redis_scripts`. Open
streams hold no connection while they wait: the listener wakes them
(:mod:`flask_mcp.backends._redis_reader`), so a worker needs a few connections
however many SSE streams it holds.
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import json
import logging
import os
import secrets
import socket
import threading
import time
import typing as t
from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError
from redis.retry import Retry

from ..errors import BackendUnavailable
from ._channels import QueueSubscription
from ._redis_listener import UNAVAILABLE as _UNAVAILABLE
from ._redis_listener import Listener
from ._redis_listener import text as _text
from ._redis_pool import IDLE_TIMEOUT
from ._redis_pool import blocking_twin
from ._redis_pool import make_client
from ._redis_pool import trim
from ._redis_reader import StreamReader
from ._redis_scripts import LIBRARY
from ._redis_scripts import SCRIPTS
from ._redis_tasks import RedisTaskStore
from .base import Backend
from .base import ReadResult
from .base import SessionQuotaExceeded
from .base import SessionRecord

logger = logging.getLogger("flask_mcp")
_FIX = (
    "Start Redis there, or point MCP_BACKEND (environment: FLASK_MCP_BACKEND) at a running "
    "Redis 6.2 or later, for example redis://127.0.0.1:6379/0."
)
#: Connections per pool and process: redis-py 8 caps a pool at 100 by default, fewer
#: than a gevent worker's concurrent requests and open streams.
MAX_CONNECTIONS = 50_000
#: Record fields computed by Redis rather than stored from the record.
_COMPUTED = ("created", "last_seen", "busy")


def _dumps(value: t.Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class RedisBackend(Backend):
    """Keeps sessions, event logs and message routing in Redis.

    Pass a client, or build one from a URL with :meth:`from_url`::

        app.config["MCP_BACKEND"] = "redis://127.0.0.1:6379/0"
        app.config["MCP_BACKEND"] = RedisBackend(client=redis.Redis(...))

    A client passed in should fail fast when Redis is gone, for example with
    ``retry=Retry(NoBackoff(), 1)``; :meth:`from_url` configures that.

    :param client: the Redis client; default: Redis on localhost.
    :param buffer_size: messages kept per session for ``Last-Event-ID`` replay.
    :param prefix: prepended to every key and channel; share it between all
        workers of one server, vary it to run several servers on one database.
    :param idle_timeout: ``MCP_SESSION_IDLE_TIMEOUT``, for the keys' expiry.
    :param max_lifetime: ``MCP_SESSION_MAX_LIFETIME``, for the keys' expiry.
    """

    multiprocess = True
    unavailable_errors = _UNAVAILABLE  #: What a raw command raises while Redis is unreachable.
    #: Seconds between the liveness beats of each process (each beat also ends the
    #: streams of dead processes).
    heartbeat = 5.0
    #: Seconds after which a silent process counts as dead: the streams of its
    #: running requests are ended and its requests stop keeping sessions busy.
    #: Keep it above the longest time a worker may block (gunicorn's ``timeout``).
    worker_timeout = 30.0
    #: Seconds Redis keeps a session past its limits, so that the reaper ends it first.
    grace = 60
    #: Longest single blocking call; the socket timeout of blocking calls is this plus 5.
    block_slice = 10.0

    def __init__(
        self,
        client: redis.Redis | None = None,
        *,
        buffer_size: int = 1000,
        prefix: str = "mcp:",
        idle_timeout: float | None = None,
        max_lifetime: float | None = None,
    ) -> None:
        if client is None:
            client = make_client(None, retry=_retry(), max_connections=MAX_CONNECTIONS)
        self.client = client
        # Every waiting reader holds a connection of this pool while it blocks.
        self._blocking = blocking_twin(client, self.block_slice + 5, MAX_CONNECTIONS)
        self.buffer_size = buffer_size
        self.prefix = prefix
        self.idle_timeout = idle_timeout
        self.max_lifetime = max_lifetime
        self._scripts = {
            name: client.register_script(LIBRARY + body) for name, body in SCRIPTS.items()
        }
        self._owns_client = False
        self._lock = threading.Lock()
        self._owed: dict[str, int] = {}
        self._pid = 0
        self._worker = ""
        self._reader = StreamReader(self._run_many, lambda: self._listener.live)
        self._listener = Listener(self, self._reader)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        buffer_size: int = 1000,
        idle_timeout: float | None = None,
        max_lifetime: float | None = None,
        check: bool = True,
    ) -> RedisBackend:
        """Connect to the Redis at ``url`` (``redis://``, ``rediss://`` or ``unix://``).

        These query parameters are read here, the others go to redis-py:
        ``prefix`` (the key prefix, ``redis://host:6379/0?prefix=myapp:``),
        ``worker_timeout`` (see :attr:`worker_timeout`), ``max_connections``
        (per pool and process, default :data:`MAX_CONNECTIONS`) and
        ``pool_idle_timeout`` (seconds an unused connection is kept, default 30;
        see :mod:`flask_mcp.backends._redis_pool`).

        :param check: make sure Redis answers now.
        :raises BackendUnavailable: ``check`` is true and Redis cannot be reached.
        """
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        names = ("prefix", "worker_timeout", "max_connections", "pool_idle_timeout")
        ours = {name: value for name, value in query if name in names}
        rest = urlencode([(name, value) for name, value in query if name not in ours])
        client = make_client(
            urlunsplit(parts._replace(query=rest)),
            retry=_retry(),
            max_connections=int(ours.get("max_connections", MAX_CONNECTIONS)),
            idle_timeout=float(ours.get("pool_idle_timeout", IDLE_TIMEOUT)),
        )
        backend = cls(
            client,
            buffer_size=buffer_size,
            prefix=ours.get("prefix", "mcp:"),
            idle_timeout=idle_timeout,
            max_lifetime=max_lifetime,
        )
        backend._owns_client = True
        if "worker_timeout" in ours:
            backend.worker_timeout = float(ours["worker_timeout"])
        if check:
            backend.check()
        return backend

    @property
    def where(self) -> str:
        """Where Redis is, for messages (no password)."""
        kw = self.client.connection_pool.connection_kwargs
        if "path" in kw:
            return f"unix://{kw['path']}"
        return f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"

    def check(self) -> None:
        """Make sure Redis answers and is recent enough.

        :raises BackendUnavailable: Redis cannot be reached or is older than 6.2.
        """
        try:
            version = _text(self.client.info("server").get("redis_version", "0"))
        except _UNAVAILABLE as exc:
            raise BackendUnavailable(
                f"Cannot reach Redis at {self.where} ({exc}). {_FIX}"
            ) from None
        if tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < (6, 2):
            raise BackendUnavailable(
                f"Redis at {self.where} is version {version}; Flask-MCP needs 6.2 or later."
            )

    # -- plumbing -----------------------------------------------------------

    @contextlib.contextmanager
    def _errors(self) -> t.Iterator[None]:
        try:
            yield
        except _UNAVAILABLE as exc:
            raise BackendUnavailable(f"Redis at {self.where} is unreachable: {exc}") from exc

    @property
    def worker(self) -> str:
        """This process's id among the workers sharing the Redis."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._worker = f"{socket.gethostname()}:{self._pid}:{secrets.token_hex(3)}"
        return self._worker

    def _head(self) -> tuple[t.Any, ...]:
        return (
            self.prefix,
            self.idle_timeout or 0,
            self.max_lifetime or 0,
            self.grace,
            self.worker,
            self.buffer_size,
            self.worker_timeout,
        )

    def _run(self, name: str, *args: t.Any) -> t.Any:
        with self._errors():
            return self._scripts[name](args=[*self._head(), *args])

    def _run_many(self, calls: list[tuple[str, tuple[t.Any, ...]]]) -> list[t.Any]:
        """Run several scripts in one round trip (a pipeline, not a transaction).

        A script Redis does not know yet (it restarted) is loaded and its calls run again.
        """
        head = self._head()
        with self._errors():
            pipe = self.client.pipeline(transaction=False)
            for name, args in calls:
                pipe.evalsha(self._scripts[name].sha, 0, *head, *args)
            replies: list[t.Any] = pipe.execute(raise_on_error=False)
            missing = [i for i, r in enumerate(replies) if isinstance(r, NoScriptError)]
            for name in {calls[i][0] for i in missing}:
                self.client.script_load(self._scripts[name].script)
            for i in missing:
                replies[i] = self._scripts[calls[i][0]](args=[*head, *calls[i][1]])
        return replies

    def _key(self, kind: str, session_id: str, sub: str) -> str:
        return f"{self.prefix}{kind}:{session_id}:{sub}"

    # -- sessions -----------------------------------------------------------

    def create_session(
        self,
        record: SessionRecord,
        limit: int,
        *,
        handshake_timeout: float | None = None,
        owner: str | None = None,
        quota: int | None = None,
    ) -> bool:
        items = record.to_dict().items()
        fields = [x for k, v in items if k not in _COMPUTED for x in (k, _dumps(v))]
        admission = (handshake_timeout or 0, owner or "", quota or 0)
        stored = int(self._run("create", record.id, limit, *admission, *fields))
        if stored == 2:
            raise SessionQuotaExceeded(owner)
        return bool(stored)

    def get_session(self, session_id: str, touch: bool = False) -> SessionRecord | None:
        if touch:
            flat = self._run("load", session_id)
            raw = dict(zip(flat[::2], flat[1::2], strict=True))
        else:
            with self._errors():
                raw = self.client.hgetall(f"{self.prefix}s:{session_id}")
        if not raw:
            return None
        data: dict[str, t.Any] = {"id": session_id, "busy": 0}
        for name, value in raw.items():
            field = _text(name)
            if field.startswith("b:"):
                data["busy"] += max(0, int(value))
            else:
                data[field] = json.loads(value)
        if not isinstance(data.get("subscriptions", []), list):
            data["subscriptions"] = []
        return SessionRecord.from_dict(data)

    def update_session(self, session_id: str, **changes: t.Any) -> None:
        fields: list[str] = []
        for name, value in changes.items():
            fields += [name, _dumps(value)]
        if fields:
            self._run("update", session_id, *fields)

    def add_subscription(self, session_id: str, uri: str) -> None:
        self._run("subscription", session_id, uri, 1)

    def remove_subscription(self, session_id: str, uri: str) -> None:
        self._run("subscription", session_id, uri, 0)

    def touch_session(self, session_id: str, busy_delta: int = 0) -> None:
        if busy_delta > 0:
            self._listener.ensure(0)  # beats keep this process's requests alive
        try:
            self._run("touch", session_id, busy_delta)
        except BackendUnavailable:
            if busy_delta < 0:  # a request ended: settle its count when Redis is back
                with self._lock:
                    self._owed[session_id] = self._owed.get(session_id, 0) + busy_delta
            raise

    def beat(self) -> None:
        """Mark this process alive, end the streams of dead ones, settle unsaved counts."""
        self._run("beat")
        trim(self.client, self._blocking)  # give back the connections a past peak left idle
        with self._lock:
            owed, self._owed = self._owed, {}
        for session_id, delta in owed.items():
            self.touch_session(session_id, delta)

    def delete_session(self, session_id: str) -> bool:
        return bool(self._run("delete", session_id))

    def session_ids(self) -> list[str]:
        with self._errors():
            return [_text(sid) for sid in self.client.zrange(f"{self.prefix}seen", 0, -1)]

    def reap(
        self, idle: float | None, lifetime: float | None, keep: cabc.Container[str] = ()
    ) -> list[tuple[str, str]]:
        # every running request is counted in Redis (busy), so keep adds nothing
        self.idle_timeout, self.max_lifetime = idle, lifetime
        found = self._run("reap", 1000)
        return [(_text(found[i]), _text(found[i + 1])) for i in range(0, len(found), 2)]

    # -- streams ------------------------------------------------------------

    def open_stream(self, session_id: str, stream_id: str, *, request_id: t.Any = None) -> None:
        self._listener.ensure(0)  # beats keep the streams this process opens alive
        rid = "" if request_id is None else _dumps(request_id)
        self._run("open", session_id, stream_id, rid)

    def append(
        self,
        session_id: str,
        stream_id: str,
        kind: str,
        message: dict[str, t.Any] | None = None,
    ) -> int:
        body = "" if message is None else _dumps(message)
        return int(self._run("append", session_id, stream_id, kind, body))

    def attach(self, session_id: str, stream_id: str) -> int:
        return int(self._run("attach", session_id, stream_id))

    def detach(self, session_id: str, stream_id: str, token: int) -> None:
        self._reader.forget(session_id, stream_id, token)
        try:
            self._run("detach", session_id, stream_id, token)
        except BackendUnavailable:
            # A stale token is harmless: the next attach replaces it.
            logger.debug("Could not detach from stream %s of session %s", stream_id, session_id)

    def read(
        self, session_id: str, stream_id: str, after: int, token: int, timeout: float
    ) -> ReadResult:
        # No connection is held while waiting: the listener wakes the reader.
        self._listener.ensure(0)
        return self._reader.read(session_id, stream_id, after, token, timeout)

    def first_seq(self, session_id: str, stream_id: str) -> int | None:
        found = self._run("first", session_id, stream_id)
        return None if found is None else int(found)

    def drop_stream(self, session_id: str, stream_id: str) -> None:
        self._run("drop", session_id, stream_id)

    def get_cursor(self, session_id: str, stream_id: str) -> int:
        with self._errors():
            value = self.client.hget(f"{self.prefix}m:{session_id}", f"c:{stream_id}")
        return int(value) if value is not None else 0

    def set_cursor(self, session_id: str, stream_id: str, seq: int) -> None:
        # Every GET stream woken by a broadcast saves its cursor at once: through the
        # reader's few connections, as its reads.
        self._reader.calls.call("cursor", session_id, stream_id, seq)

    # -- server-to-client requests -----------------------------------------

    def next_request_id(self, session_id: str) -> int:
        return int(self._run("next_id", session_id))

    def expect_response(self, session_id: str, request_id: t.Any) -> None:
        self._run("expect", session_id, _dumps(request_id))

    def wait_response(
        self, session_id: str, request_id: t.Any, timeout: float
    ) -> dict[str, t.Any] | None:
        rid = _dumps(request_id)
        deadline = time.monotonic() + timeout
        while True:
            reply = self._run("poll", session_id, rid)
            status = _text(reply[0])
            if status == "none":
                return None
            if status == "ok":
                return t.cast("dict[str, t.Any]", json.loads(reply[1]))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with self._errors():
                found = self._blocking.blpop(
                    [self._key("a", session_id, rid)],
                    timeout=max(0.01, min(remaining, self.block_slice)),
                )
            if found is not None:
                with self._errors():
                    self.client.delete(self._key("e", session_id, rid))
                return t.cast("dict[str, t.Any]", json.loads(found[1]))

    def deliver_response(
        self, session_id: str, request_id: t.Any, message: dict[str, t.Any]
    ) -> bool:
        return bool(self._run("deliver", session_id, _dumps(request_id), _dumps(message)))

    def forget_response(self, session_id: str, request_id: t.Any) -> None:
        rid = _dumps(request_id)
        with self._errors():
            self.client.delete(self._key("e", session_id, rid), self._key("a", session_id, rid))

    def cancel(self, session_id: str, request_id: t.Any) -> None:
        with self._errors():
            self.client.publish(f"{self.prefix}cancel", _dumps([session_id, request_id]))

    def publish(self, channel: str, message: dict[str, t.Any]) -> None:
        with self._errors():
            self.client.publish(f"{self.prefix}pub:{channel}", _dumps(message))

    def subscribe(self, channel: str) -> QueueSubscription:
        return self._listener.subscribe(channel)

    def task_store(self) -> RedisTaskStore:  # noqa: D102 (see Backend.task_store)
        return RedisTaskStore(self.client, self.prefix)

    def close(self) -> None:
        """Stop this process's listener and mark it gone, so its running streams end."""
        self._listener.stop()
        with contextlib.suppress(Exception):
            self.client.zadd(f"{self.prefix}workers", {self.worker: 0})
        self._pid = 0
        if self._owns_client:
            self.client.close()
        self._blocking.close()


def _retry() -> Retry:
    """Retry once at once on a broken connection (a restarted Redis), else fail fast."""
    return Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,))


__all__ = [
    "MAX_CONNECTIONS",
    "RedisBackend",
]
