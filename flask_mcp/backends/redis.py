"""The Redis backend: shared state for many workers on many machines.

Session records live in Redis hashes, stream event logs in Redis Streams, and
everything that must reach another process travels through Redis: a client's
answer to a server-to-client request (a list the waiting worker pops with
``BLPOP``), ``notifications/cancelled`` and :meth:`RedisBackend.publish`
(pub/sub, one listener per process). Any worker can therefore serve any
request of any session. Keys (hash-tagged per session, so that a Redis
Cluster works): :mod:`flask_mcp.backends._redis_keys`. A JSON request costs
one round trip (:meth:`RedisBackend.get_session`), none on a gevent worker that
served its session a moment ago (:mod:`flask_mcp.backends._redis_hot`). Open streams hold no
connection while they wait: the listener wakes them
(:mod:`flask_mcp.backends._redis_reader`), so a worker needs a few connections
however many SSE streams it holds.
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import logging
import os
import secrets
import socket
import time
import typing as t
import weakref

from redis.cluster import RedisCluster

from ..errors import BackendUnavailable
from ._channels import QueueSubscription
from ._redis_answers import Answers
from ._redis_batch import Ledger
from ._redis_batch import spread
from ._redis_codec import Unreachable
from ._redis_codec import decode_record
from ._redis_codec import dumps as _dumps
from ._redis_hot import HotSessions
from ._redis_housekeeping import Housekeeping
from ._redis_keys import Keys
from ._redis_lane import lane_for
from ._redis_listener import UNAVAILABLE as _UNAVAILABLE
from ._redis_listener import Listener
from ._redis_listener import text as _text
from ._redis_local import LocalStreams
from ._redis_local import Reader
from ._redis_pool import blocking_twin
from ._redis_pool import fail_fast as _retry
from ._redis_pool import make_client
from ._redis_scripts import LIBRARY
from ._redis_scripts import SCRIPTS
from ._redis_scripts import SESSION
from ._redis_shared_scripts import SHARED
from ._redis_tasks import RedisTaskStore
from ._redis_url import check_version
from ._redis_url import clients_from_url
from ._redis_url import describe
from .base import Backend
from .base import ReadResult
from .base import SessionQuotaExceeded
from .base import SessionRecord

logger = logging.getLogger("flask_mcp")
#: Connections per pool and process: redis-py 8 caps a pool at 100 by default, fewer
#: than a gevent worker's concurrent requests and open streams.
MAX_CONNECTIONS = 50_000
#: Record fields computed by Redis rather than stored from the record.
_COMPUTED = ("created", "last_seen", "busy")


#: The backends whose worker id changes in a forked child (a weak set: no leak).
_LIVE: weakref.WeakSet[RedisBackend] = weakref.WeakSet()


def _forked() -> None:
    for backend in list(_LIVE):
        backend._worker, backend._ledger = "", Ledger()  # the parent's counts are its own
        backend._hot.clear()
        backend._local = backend._new_local()  # and so are its streams


os.register_at_fork(after_in_child=_forked)


class RedisBackend(Housekeeping, Answers, Backend):
    """Keeps sessions, event logs and message routing in Redis or a Redis Cluster.

    Pass a client, or build one from a URL with :meth:`from_url`::

        app.config["MCP_BACKEND"] = "redis://127.0.0.1:6379/0"
        app.config["MCP_BACKEND"] = "redis+cluster://10.0.0.1:7000/?prefix=myapp:"
        app.config["MCP_BACKEND"] = RedisBackend(client=redis.Redis(...))

    A client passed in should fail fast when Redis is gone, for example with
    ``retry=Retry(NoBackoff(), 1)``; :meth:`from_url` configures that. A
    :class:`redis.cluster.RedisCluster` passed in also serves the blocking
    reads: give it a ``socket_timeout`` above 15 seconds, or none.

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
        client: t.Any = None,
        *,
        buffer_size: int = 1000,
        prefix: str = "mcp:",
        idle_timeout: float | None = None,
        max_lifetime: float | None = None,
        blocking: t.Any = None,
    ) -> None:
        if client is None:
            client = make_client(None, retry=_retry(), max_connections=MAX_CONNECTIONS)
        self.client = client
        self.cluster = isinstance(client, RedisCluster)
        self._unreachable = Unreachable(lambda: self.where)
        self._lane = lane_for(client)  # the short path of single scripts (standalone only)
        # Every waiting reader holds a connection of this pool while it blocks.
        self._blocking = blocking or blocking_twin(client, self.block_slice + 5, MAX_CONNECTIONS)
        self.buffer_size = buffer_size
        self.keys = Keys(prefix)
        self.prefix = prefix
        self.idle_timeout = idle_timeout
        self.max_lifetime = max_lifetime
        bodies = {name: SESSION + body for name, body in SCRIPTS.items()}
        bodies.update(SHARED)
        self._scripts = {name: client.register_script(LIBRARY + b) for name, b in bodies.items()}
        self._owns_client = False
        self._ledger = Ledger()
        self._disowned: dict[str, set[str]] = {}
        self._pid = 0
        self._worker = ""
        self._registered = (0.0, "")
        self._reader = Reader(self._run_many, lambda: self._listener.live)
        self._local = self._reader.local = self._new_local()
        self._hot = HotSessions(
            lambda: self._listener.quiet(),
            idle_timeout=idle_timeout,
            max_lifetime=max_lifetime,
            enabled=not self.cluster,
        )
        self._listener = Listener(self, self._reader, self._hot)

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
        """Connect to the Redis at ``url`` (``redis://``, ``rediss://``, ``unix://``), or
        to the Redis Cluster at ``url`` (``redis+cluster://``, ``rediss+cluster://``: any
        node; the client finds the others).

        These query parameters are read here, the others go to redis-py:
        ``prefix`` (the key prefix, ``redis://host:6379/0?prefix=myapp:``),
        ``worker_timeout`` (see :attr:`worker_timeout`), ``max_connections``
        (per pool and process, default :data:`MAX_CONNECTIONS`) and
        ``pool_idle_timeout`` (seconds an unused connection is kept, default 30;
        see :mod:`flask_mcp.backends._redis_pool`; on a cluster, per node).

        :param check: make sure Redis answers now.
        :raises BackendUnavailable: ``check`` is true and Redis cannot be reached.
        :raises ValueError: the prefix holds a brace (it would break the hash tags).
        """
        client, blocking, ours = clients_from_url(
            url, retry=_retry(), max_connections=MAX_CONNECTIONS, block=cls.block_slice + 5
        )
        backend = cls(
            client,
            buffer_size=buffer_size,
            prefix=ours.get("prefix", "mcp:"),
            idle_timeout=idle_timeout,
            max_lifetime=max_lifetime,
            blocking=blocking,
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
        return describe(self.client)

    def check(self) -> None:
        """Make sure Redis answers and is recent enough, waiting up to
        :data:`~flask_mcp.backends._redis_url.BOOT_WAIT` seconds for one that restarts.

        :raises BackendUnavailable: Redis cannot be reached or is older than 6.2.
        """
        check_version(self.client, self.where)

    # -- plumbing -----------------------------------------------------------

    def _errors(self) -> Unreachable:
        """Turn the errors of an unreachable Redis into :class:`BackendUnavailable`."""
        return self._unreachable

    @property
    def worker(self) -> str:
        """This process's id among the workers sharing the Redis."""
        if not self._worker:  # a new id after fork (see _forked) and after close
            self._pid = os.getpid()
            self._worker = f"{socket.gethostname()}:{self._pid}:{secrets.token_hex(3)}"
            _LIVE.add(self)
        return self._worker

    def _new_local(self) -> LocalStreams:
        local = LocalStreams(self, self._reader.calls.call, lambda: self._listener.live)
        self._reader.local = local
        return local

    def _owned(self) -> str:
        return self.keys.owned(self.worker)

    def _run_many(self, calls: list[tuple[str, list[str], tuple[t.Any, ...]]]) -> list[t.Any]:
        """Run the readers' scripts in one round trip; on one Redis, the cursor saves that
        follow each other share scripts (a broadcast wakes thousands of streams)."""
        batch = self._batch()
        where = batch.scripts(calls, grouped="cursor")
        return spread(self._send(batch), where)

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
        stored = self._admit(record.id, limit, handshake_timeout or 0, owner, quota or 0, fields)
        if stored == 2:
            raise SessionQuotaExceeded(owner)
        return bool(stored)

    def get_session(self, session_id: str, touch: bool = False) -> SessionRecord | None:
        """Return a session's record; with ``touch``, also count a request of it ahead, in
        the same round trip (see :class:`~flask_mcp.backends._redis_batch.Ledger`), or
        with none for a session this gevent worker served a moment ago
        (:mod:`~flask_mcp.backends._redis_hot`)."""
        if not session_id:
            return None
        if touch:
            self._listener.ensure(0)  # its loop writes what the ledger owes
            hot = self._hot.get(session_id)
            if hot is not None:  # served from memory: the listener writes its traffic
                self._ledger.served(session_id)
                return hot
            changes, asked = self._hot.changes, time.monotonic()
            raw = self._load(session_id)
            if raw:
                self._ledger.reserve(session_id)
                record = self._record(session_id, raw)
                self._hot.keep(session_id, record, changes, asked)
                return record
        else:
            with self._errors():
                raw = self.client.hgetall(self.keys.record(session_id))
        return self._record(session_id, raw)

    def get_sessions(self, session_ids: cabc.Iterable[str]) -> dict[str, SessionRecord]:
        ids, batch = [sid for sid in session_ids if sid], self._batch()
        for sid in ids:
            batch.command("HGETALL", self.keys.record(sid))
        found = {
            sid: self._record(sid, raw) for sid, raw in zip(ids, self._send(batch), strict=True)
        }
        return {sid: record for sid, record in found.items() if record is not None}

    def _record(self, session_id: str, raw: t.Any) -> SessionRecord | None:
        return decode_record(session_id, raw, self._ledger.surplus(session_id))

    def update_session(self, session_id: str, **changes: t.Any) -> None:
        fields: list[str] = []
        for name, value in changes.items():
            fields += [name, _dumps(value)]
        if not fields or not self._run("update", self.keys.session(session_id), *fields):
            return
        self._hot.forget(session_id)
        batch = self._batch()  # the reaper's indexes follow a changed time
        if "last_seen" in changes:
            batch.command("ZADD", self.keys.seen, "XX", changes["last_seen"], session_id)
        if "created" in changes:
            batch.command("ZADD", self.keys.born, "XX", changes["created"], session_id)
        self._send(batch)

    def add_subscription(self, session_id: str, uri: str) -> None:
        self._run("subscription", self.keys.session(session_id), uri, 1)
        self._hot.forget(session_id)

    def remove_subscription(self, session_id: str, uri: str) -> None:
        self._run("subscription", self.keys.session(session_id), uri, 0)
        self._hot.forget(session_id)

    def touch_session(self, session_id: str, busy_delta: int = 0) -> None:
        if busy_delta > 0:
            self._listener.ensure(0)  # beats keep this process's requests alive
            if self._ledger.claim(session_id):
                return  # the session lookup counted it already
        elif busy_delta < 0 and self._ledger.release(session_id):
            return  # written with a later command
        try:
            self._run_counted("touch", self.keys.session(session_id), busy_delta)
        except BackendUnavailable:
            if busy_delta < 0:  # a request ended: settle its count when Redis is back
                self._ledger.owe(session_id, busy_delta)
            raise

    def delete_session(self, session_id: str) -> bool:
        reply = self._run("delete", self.keys.session(session_id))
        self._hot.forget(session_id)
        batch = self._batch()
        self._forget(batch, session_id, reply[1:])
        self._send(batch)
        return bool(int(reply[0]))

    def session_ids(self) -> list[str]:
        with self._errors():
            return [_text(sid) for sid in self.client.zrange(self.keys.seen, 0, -1)]

    def reap(
        self, idle: float | None, lifetime: float | None, keep: cabc.Container[str] = ()
    ) -> list[tuple[str, str]]:
        # every running request is counted in Redis (busy), so keep adds nothing
        self.idle_timeout, self.max_lifetime = idle, lifetime
        self.flush(everything=True)
        self._sweep(self._run("beat", [self.keys.workers, self.keys.alive]))
        return self._reap(1000)

    # -- streams ------------------------------------------------------------

    def open_stream(self, session_id: str, stream_id: str, *, request_id: t.Any = None) -> None:
        """Open a stream; a request's stream opens in Redis with its first write (see
        :mod:`~flask_mcp.backends._redis_local`)."""
        self._listener.ensure(0)  # beats keep the streams this process opens alive
        rid = "" if request_id is None else _dumps(request_id)
        if request_id is not None and stream_id != "g":
            self._local.open(session_id, stream_id, rid)
            return
        batch = self._batch()
        batch.script("open", self._stream(session_id, stream_id), stream_id, rid)
        if stream_id != "g":  # for the sweep, should this process die
            batch.command("SADD", self.keys.owned(self.worker), f"{session_id} {stream_id}")
        self._send(batch)

    def append(
        self,
        session_id: str,
        stream_id: str,
        kind: str,
        message: dict[str, t.Any] | None = None,
    ) -> int:
        local = self._local.get(session_id, stream_id)
        if local is not None:
            return self._local.write(local, [(kind, message)])[0]
        body = "" if message is None else _dumps(message)
        reply = self._run("append", self._stream(session_id, stream_id), stream_id, kind, body)
        return self._appended(session_id, reply)

    def append_many(
        self, events: cabc.Iterable[tuple[str, str, str, dict[str, t.Any] | None]]
    ) -> list[int]:
        """Append events (see :meth:`Housekeeping.append_many`); those of a stream this
        process writes go the way of :meth:`append`, one write per stream."""
        items = list(events)
        seqs, rest = self._local.write_many(items)
        if len(rest) == len(items):
            return super().append_many(items)
        for i, seq in zip(rest, super().append_many([items[i] for i in rest]), strict=True):
            seqs[i] = seq
        return seqs

    def attach(self, session_id: str, stream_id: str) -> int:
        local = self._local.attach(session_id, stream_id)
        if local is not None:
            return local
        return int(self._run("attach", self._stream(session_id, stream_id), stream_id))

    def detach(self, session_id: str, stream_id: str, token: int) -> None:
        local = self._local.detach(session_id, stream_id, token)
        if local == "":
            return  # nothing in Redis, or written later
        self._reader.forget(self.keys.stream(session_id, stream_id)[0], token)
        try:
            self._run("detach", self._stream(session_id, stream_id), stream_id, local or token)
        except BackendUnavailable:
            # A stale token is harmless: the next attach replaces it.
            logger.debug("Could not detach from stream %s of session %s", stream_id, session_id)

    def read(
        self, session_id: str, stream_id: str, after: int, token: int, timeout: float
    ) -> ReadResult:
        # No connection is held while waiting: the listener wakes the reader.
        self._listener.ensure(0)
        local = self._local.reads(session_id, stream_id, token)
        if local is not None:  # this process writes it: the events are here
            return self._local.read(local, after, timeout)
        keys = self._stream(session_id, stream_id)
        return self._reader.read(keys, stream_id, after, token, timeout)

    def first_seq(self, session_id: str, stream_id: str) -> int | None:
        found = self._run("first", self._stream(session_id, stream_id), stream_id)
        return None if found is None else int(found)

    def drop_stream(self, session_id: str, stream_id: str) -> None:
        if self._local.drop(session_id, stream_id):
            return  # written later (see _redis_local)
        reply = self._run("drop", self._stream(session_id, stream_id), stream_id)
        self._disown(session_id, reply[2:])

    def get_cursor(self, session_id: str, stream_id: str) -> int:
        with self._errors():
            value = self.client.hget(self.keys.meta(session_id), f"c:{stream_id}")
        unsent = self._reader.calls.posted("cursor", self.keys.session(session_id), stream_id)
        return max(int(value) if value is not None else 0, int(unsent[1]) if unsent else 0)

    def set_cursor(self, session_id: str, stream_id: str, seq: int) -> None:
        # Every GET stream woken by a broadcast saves its cursor at once: together, after
        # the reads, and without waiting (the event is written: the stream goes on).
        self._reader.calls.post("cursor", self.keys.session(session_id), stream_id, seq)

    def beat(self) -> None:
        """See :meth:`Housekeeping.beat`; also forget the local streams nobody uses."""
        super().beat()
        self._local.sweep()

    def cancel(self, session_id: str, request_id: t.Any) -> None:
        with self._errors():
            self.client.publish(f"{self.prefix}cancel", _dumps([session_id, request_id]))

    def publish(self, channel: str, message: dict[str, t.Any]) -> None:
        with self._errors():
            self.client.publish(f"{self.prefix}pub:{channel}", _dumps(message))

    def subscribe(self, channel: str) -> QueueSubscription:
        return self._listener.subscribe(channel)

    def task_store(self) -> RedisTaskStore:  # noqa: D102 (see Backend.task_store)
        return RedisTaskStore(self.client, self.keys)

    def close(self) -> None:
        """Stop this process's listener and mark it gone, so its running streams end."""
        self._listener.stop()
        with contextlib.suppress(Exception):
            self._reader.calls.drain()  # the cursors not saved yet
        with contextlib.suppress(Exception):
            self.flush(everything=True)
        with contextlib.suppress(Exception):
            self.client.zadd(self.keys.workers, {self.worker: 0})
        self._pid, self._worker = 0, ""
        self._hot.clear()
        if self._lane is not None:
            self._lane.close()
        if self._owns_client:
            self.client.close()
        if self._blocking is not self.client:
            self._blocking.close()


__all__ = [
    "MAX_CONNECTIONS",
    "RedisBackend",
]
