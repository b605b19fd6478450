"""The Redis backend: shared state for many workers on many machines.

Session records live in Redis hashes, stream event logs in Redis Streams, and
everything that must reach another process travels through Redis: a client's
answer to a server-to-client request (a list the waiting worker pops with
``BLPOP``), ``notifications/cancelled`` and :meth:`RedisBackend.publish`
(pub/sub, one listener per process). Any worker can therefore serve any
request of any session; no sticky routing is needed. The key layout is
described in :mod:`flask_mcp.backends._redis_scripts`.

Each waiting reader holds one Redis connection while it blocks (``XREAD
BLOCK``), so a server holding many open SSE streams needs Redis's
``maxclients`` (default 10,000) above the number of streams of all workers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
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
from redis.retry import Retry

from ..errors import BackendUnavailable
from ._redis_scripts import LIBRARY
from ._redis_scripts import SCRIPTS
from .base import Backend
from .base import Event
from .base import ReadResult
from .base import SessionRecord

logger = logging.getLogger("flask_mcp")
_UNAVAILABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
_FIX = (
    "Start Redis there, or point MCP_BACKEND (environment: FLASK_MCP_BACKEND) at a running "
    "Redis 6.2 or later, for example redis://127.0.0.1:6379/0."
)
#: Record fields computed by Redis rather than stored from the record.
_COMPUTED = ("created", "last_seen", "busy")


def _text(value: t.Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _dumps(value: t.Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class _RedisSubscription:
    """A subscriber in this process; the process's listener fills its queue."""

    def __init__(self, owner: RedisBackend, channel: str) -> None:
        self.owner = owner
        self.channel = channel
        self.queue: queue.Queue[dict[str, t.Any]] = queue.Queue(maxsize=10_000)

    def get(self, timeout: float) -> dict[str, t.Any] | None:
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        with self.owner._lock:
            subscribers = self.owner._channels.get(self.channel)
            if subscribers is not None:
                subscribers.discard(self)
                if not subscribers:
                    del self.owner._channels[self.channel]


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
            client = redis.Redis(socket_timeout=5.0, socket_connect_timeout=2.0, retry=_retry())
        self.client = client
        pool = client.connection_pool
        kwargs = {**pool.connection_kwargs, "socket_timeout": self.block_slice + 5}
        self._blocking = redis.Redis(
            connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
        )
        self.buffer_size = buffer_size
        self.prefix = prefix
        self.idle_timeout = idle_timeout
        self.max_lifetime = max_lifetime
        self._scripts = {name: client.register_script(LIBRARY + body) for name, body in SCRIPTS.items()}
        self._lock = threading.Lock()
        self._channels: dict[str, set[_RedisSubscription]] = {}
        self._owed: dict[str, int] = {}
        self._pid = 0
        self._worker = ""
        self._ready = threading.Event()
        self._stop = threading.Event()

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

        Two query parameters are read here, the others go to redis-py:
        ``prefix`` (the key prefix, ``redis://host:6379/0?prefix=myapp:``) and
        ``worker_timeout`` (see :attr:`worker_timeout`).

        :param check: make sure Redis answers now.
        :raises BackendUnavailable: ``check`` is true and Redis cannot be reached.
        """
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        ours = {name: value for name, value in query if name in ("prefix", "worker_timeout")}
        rest = urlencode([(name, value) for name, value in query if name not in ours])
        client = redis.Redis.from_url(
            urlunsplit(parts._replace(query=rest)),
            socket_timeout=5.0,
            socket_connect_timeout=2.0,
            retry=_retry(),
        )
        backend = cls(
            client,
            buffer_size=buffer_size,
            prefix=ours.get("prefix", "mcp:"),
            idle_timeout=idle_timeout,
            max_lifetime=max_lifetime,
        )
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
            raise BackendUnavailable(f"Cannot reach Redis at {self.where} ({exc}). {_FIX}") from None
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

    def _run(self, name: str, *args: t.Any) -> t.Any:
        head = (
            self.prefix,
            self.idle_timeout or 0,
            self.max_lifetime or 0,
            self.grace,
            self.worker,
            self.buffer_size,
            self.worker_timeout,
        )
        with self._errors():
            return self._scripts[name](args=[*head, *args])

    def _key(self, kind: str, session_id: str, sub: str) -> str:
        return f"{self.prefix}{kind}:{session_id}:{sub}"

    # -- sessions -----------------------------------------------------------

    def create_session(self, record: SessionRecord, limit: int) -> bool:
        fields: list[str] = []
        for name, value in record.to_dict().items():
            if name not in _COMPUTED:
                fields += [name, _dumps(value)]
        return bool(self._run("create", record.id, limit, *fields))

    def get_session(self, session_id: str) -> SessionRecord | None:
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
            self._ensure_listener(wait=0)  # beats keep this process's requests alive
        try:
            self._run("touch", session_id, busy_delta)
        except BackendUnavailable:
            if busy_delta < 0:  # a request ended: settle its count when Redis is back
                with self._lock:
                    self._owed[session_id] = self._owed.get(session_id, 0) + busy_delta
            raise

    def _settle(self) -> None:
        with self._lock:
            owed, self._owed = self._owed, {}
        for session_id, delta in owed.items():
            self.touch_session(session_id, delta)

    def delete_session(self, session_id: str) -> bool:
        return bool(self._run("delete", session_id))

    def session_ids(self) -> list[str]:
        with self._errors():
            return [_text(sid) for sid in self.client.zrange(f"{self.prefix}seen", 0, -1)]

    def reap(self, idle: float | None, lifetime: float | None) -> list[tuple[str, str]]:
        self.idle_timeout, self.max_lifetime = idle, lifetime
        found = self._run("reap", 1000)
        return [(_text(found[i]), _text(found[i + 1])) for i in range(0, len(found), 2)]

    # -- streams ------------------------------------------------------------

    def open_stream(self, session_id: str, stream_id: str) -> None:
        self._ensure_listener(wait=0)  # beats keep the streams this process opens alive
        self._run("open", session_id, stream_id)

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
        try:
            self._run("detach", session_id, stream_id, token)
        except BackendUnavailable:
            # A stale token is harmless: the next attach replaces it.
            logger.debug("Could not detach from stream %s of session %s", stream_id, session_id)

    def read(
        self, session_id: str, stream_id: str, after: int, token: int, timeout: float
    ) -> ReadResult:
        deadline = time.monotonic() + timeout
        streams = {
            self._key("x", session_id, stream_id): f"0-{after}",
            self._key("z", session_id, stream_id): f"{token}-0",
        }
        while True:
            reply = self._run("check", session_id, stream_id, after, token)
            status = _text(reply[0])
            if status == "missing":
                return ReadResult([], missing=True)
            if status == "superseded":
                return ReadResult([], superseded=True)
            if status == "events":
                return ReadResult(
                    [
                        Event(
                            int(_text(reply[i]).rpartition("-")[2]),
                            _text(reply[i + 1]),
                            json.loads(reply[i + 2]) if reply[i + 2] else None,
                        )
                        for i in range(1, len(reply), 3)
                    ]
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ReadResult([])
            block = max(1, int(min(remaining, self.block_slice) * 1000))
            with self._errors():
                woke = self._blocking.xread(streams, count=1, block=block)  # type: ignore[arg-type]
            if not woke and time.monotonic() >= deadline:
                return ReadResult([])

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
        self._run("cursor", session_id, stream_id, seq)

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
                    [self._key("a", session_id, rid)], timeout=max(0.01, min(remaining, self.block_slice))
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

    # -- cancellation and fan-out ------------------------------------------

    def cancel(self, session_id: str, request_id: t.Any) -> None:
        with self._errors():
            self.client.publish(f"{self.prefix}cancel", _dumps([session_id, request_id]))

    def publish(self, channel: str, message: dict[str, t.Any]) -> None:
        with self._errors():
            self.client.publish(f"{self.prefix}pub:{channel}", _dumps(message))

    def subscribe(self, channel: str) -> _RedisSubscription:
        if not self._ensure_listener():
            raise BackendUnavailable(
                f"Cannot subscribe to {channel!r}: the pub/sub connection to Redis at "
                f"{self.where} is down; retry later."
            )
        subscription = _RedisSubscription(self, channel)
        with self._lock:
            self._channels.setdefault(channel, set()).add(subscription)
        return subscription

    def close(self) -> None:
        """Stop this process's listener and mark it gone, so its running streams end."""
        self._stop.set()
        with contextlib.suppress(Exception):
            self.client.zadd(f"{self.prefix}workers", {self.worker: 0})
        self._pid = 0
        self.client.close()
        self._blocking.close()

    # -- the listener -------------------------------------------------------

    def _ensure_listener(self, wait: float = 5.0) -> bool:
        """Start this process's pub/sub listener if needed; tell whether it is subscribed."""
        worker = self.worker  # a new id after fork
        with self._lock:
            if getattr(self, "_listener_of", None) != worker:
                self._listener_of = worker
                self._ready = threading.Event()
                self._stop = threading.Event()
                thread = threading.Thread(
                    target=self._listen, args=(self._ready, self._stop), daemon=True,
                    name="flask-mcp-redis-listener",
                )  # fmt: skip
                thread.start()
            ready = self._ready
        return ready.wait(wait)

    def _listen(self, ready: threading.Event, stop: threading.Event) -> None:
        cancel_channel = f"{self.prefix}cancel"
        pub_prefix = f"{self.prefix}pub:"
        backoff = 0.1
        while not stop.is_set():
            pubsub = self.client.pubsub()
            try:
                pubsub.subscribe(cancel_channel)
                pubsub.psubscribe(pub_prefix + "*")
                pending, last_beat = 2, 0.0
                while not stop.is_set():
                    if time.monotonic() - last_beat >= min(self.heartbeat, self.worker_timeout / 3):
                        self._run("beat")
                        self._settle()
                        last_beat = time.monotonic()
                    message = pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    kind = message["type"]
                    if kind in ("subscribe", "psubscribe"):
                        pending -= 1
                        if pending == 0:
                            ready.set()
                            backoff = 0.1
                    elif kind == "message":
                        self._on_cancel(message["data"])
                    elif kind == "pmessage":
                        self._on_publish(_text(message["channel"])[len(pub_prefix) :], message["data"])
            except (*_UNAVAILABLE, BackendUnavailable) as exc:
                if ready.is_set():
                    logger.warning("Lost the pub/sub connection to Redis at %s: %s", self.where, exc)
                ready.clear()
                stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
            except Exception:
                logger.exception("The Redis listener of Flask-MCP failed; restarting it.")
                ready.clear()
                stop.wait(1.0)
            finally:
                with contextlib.suppress(Exception):
                    pubsub.close()

    def _on_cancel(self, data: t.Any) -> None:
        callback = getattr(self, "_cancel_callback", None)
        if callback is None:
            return
        try:
            session_id, request_id = json.loads(data)
            callback(session_id, request_id)
        except Exception:
            logger.exception("Cancelling a request from another worker failed.")

    def _on_publish(self, channel: str, data: t.Any) -> None:
        with self._lock:
            subscribers = list(self._channels.get(channel, ()))
        if not subscribers:
            return
        message = json.loads(data)
        for subscriber in subscribers:
            with contextlib.suppress(queue.Full):
                subscriber.queue.put_nowait(message)


def _retry() -> Retry:
    """Retry once at once on a broken connection (a restarted Redis), else fail fast."""
    return Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,))
