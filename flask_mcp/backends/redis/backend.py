"""The Redis backend: shared state for many workers on many machines.

Session records live in Redis hashes, stream event logs in Redis Streams, and
everything that must reach another process travels through Redis: a client's
answer to a server-to-client request (a list the waiting worker pops with
``BLPOP``), ``notifications/cancelled`` and :meth:`RedisBackend.publish`
(pub/sub, one listener per process). Any worker can therefore serve any
request of any session. Keys (hash-tagged per session, so that a Redis
Cluster works): :mod:`flask_mcp.backends.redis.keys`. A JSON request costs
one round trip (:meth:`RedisBackend.get_session`), none on a gevent worker that
served its session a moment ago (:mod:`flask_mcp.backends.redis.hot`). Open streams
hold no connection while they wait: the listener wakes them
(:mod:`flask_mcp.backends.redis.reader`), so a worker needs a few connections
however many SSE streams it holds.

The backend is composed of parts, each in a module of this package, all sending
through one :class:`~.commands.RedisCommands`: :class:`~.sessions.SessionIndex`
(admission, the reaper), :class:`~.streams.StreamLogs` (event logs, the sweep of
dead workers), :class:`~.own_streams.OwnStreams` (the streams a process writes and
reads itself), :class:`~.messaging.Messaging` (server-to-client requests, pub/sub),
:class:`~.tasks.RedisTaskStore`, the per-process :class:`~.listener.Listener` and
:class:`~.hot.HotSessions`. The Lua scripts are ``.lua`` files (:mod:`~.scripts`).
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import logging
import os
import time
import typing as t
import weakref

from ...errors import BackendUnavailable
from ..base import READINESS_PROBE_ID
from ..base import RESUME_BYTES
from ..base import SHARED_LOG
from ..base import Backend
from ..base import ReadResult
from ..base import SessionQuotaExceeded
from ..base import SessionRecord
from ..base import TooManySubscriptions
from ..base import new_write_id
from ..channels import QueueSubscription
from .batch import Ledger
from .codec import UNAVAILABLE
from .codec import decode_record
from .codec import dumps
from .codec import text
from .commands import Limits
from .commands import RedisCommands
from .connections import blocking_twin
from .connections import fail_fast as _retry
from .connections import make_client
from .hot import HotSessions
from .hot import cooperative
from .keys import Keys
from .listener import Listener
from .messaging import Messaging
from .messaging import SharedLog
from .own_streams import OwnStreams
from .own_streams import ProcessStreamReader
from .sessions import OVER_QUOTA
from .sessions import SessionIndex
from .streams import StreamLogs
from .tasks import RedisTaskStore
from .urls import check_version
from .urls import clients_from_url

logger = logging.getLogger("flask_mcp")
#: Milliseconds the readiness probe's key lives: Redis drops it on its own.
READINESS_PROBE_TTL_MS = 10_000
#: Connections per pool and process: redis-py 8 caps a pool at 100 by default, fewer
#: than a gevent worker's concurrent requests and open streams.
MAX_CONNECTIONS = 50_000
#: Record fields computed by Redis rather than stored from the record.
_COMPUTED = ("created", "last_seen", "busy")


#: The backends whose worker id changes in a forked child (a weak set: no leak).
_LIVE: weakref.WeakSet[RedisBackend] = weakref.WeakSet()


def _forked() -> None:
    for backend in list(_LIVE):
        backend.forked()


os.register_at_fork(after_in_child=_forked)


class RedisBackend(Backend):
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
    :param resume_bytes: bytes of messages kept per session on the streams whose reader
        left (0: no bound); see :meth:`Backend.append <flask_mcp.backends.base.Backend.append>`.
    :param prefix: prepended to every key and channel; share it between all
        workers of one server, vary it to run several servers on one database.
    :param idle_timeout: ``MCP_SESSION_IDLE_TIMEOUT``, for the keys' expiry.
    :param max_lifetime: ``MCP_SESSION_MAX_LIFETIME``, for the keys' expiry.
    """

    multiprocess = True
    capabilities = frozenset({SHARED_LOG})
    unavailable_errors = UNAVAILABLE  #: What a raw command raises while Redis is unreachable.
    #: Seconds between the liveness beats of each process (each beat also ends the
    #: streams of dead processes).
    heartbeat = 5.0
    #: Longest single blocking call; the socket timeout of blocking calls is this plus 5.
    block_slice = 10.0

    def __init__(
        self,
        client: t.Any = None,
        *,
        buffer_size: int = 1000,
        resume_bytes: int = RESUME_BYTES,
        prefix: str = "mcp:",
        idle_timeout: float | None = None,
        max_lifetime: float | None = None,
        blocking: t.Any = None,
    ) -> None:
        if client is None:
            client = make_client(None, retry=_retry(), max_connections=MAX_CONNECTIONS)
        # Every waiting reader holds a connection of this pool while it blocks.
        blocking = blocking or blocking_twin(client, self.block_slice + 5, MAX_CONNECTIONS)
        limits = Limits(
            idle_timeout, max_lifetime, buffer_size=buffer_size, resume_bytes=resume_bytes
        )
        #: What every part sends through: the clients, the scripts, the worker id.
        self.commands = RedisCommands(client, blocking, Keys(prefix), limits)
        self.client = client
        self.cluster = self.commands.cluster
        self.keys = self.commands.keys
        self.prefix = prefix
        self._owns_client = False
        #: The busy counts this process took ahead or owes (see :meth:`get_session`).
        self.ledger = Ledger()
        self.logs = StreamLogs(self.commands)
        self.sessions = SessionIndex(self.commands, self.logs)
        self.messaging = Messaging(self.commands, self.block_slice)
        self.reader = ProcessStreamReader(self.commands.run_many, lambda: self.listener.live)
        self.own_streams = self._new_own_streams()
        self.hot = HotSessions(
            lambda: self.listener.quiet(),
            idle_timeout=idle_timeout,
            max_lifetime=max_lifetime,
            enabled=not self.cluster,
        )
        self.listener = Listener(self, self.reader, self.hot)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        buffer_size: int = 1000,
        resume_bytes: int = RESUME_BYTES,
        idle_timeout: float | None = None,
        max_lifetime: float | None = None,
        check: bool = True,
        unreachable_ok: bool = False,
    ) -> RedisBackend:
        """Connect to the Redis at ``url`` (``redis://``, ``rediss://``, ``unix://``), or
        to the Redis Cluster at ``url`` (``redis+cluster://``, ``rediss+cluster://``: any
        node; the client finds the others).

        These query parameters are read here, the others go to redis-py:
        ``prefix`` (the key prefix, ``redis://host:6379/0?prefix=myapp:``),
        ``worker_timeout`` (see :attr:`worker_timeout`), ``max_connections``
        (per pool and process, default :data:`MAX_CONNECTIONS`) and
        ``pool_idle_timeout`` (seconds an unused connection is kept, default 30;
        see :mod:`flask_mcp.backends.redis.connections`; on a cluster, per node).

        :param check: make sure Redis answers now.
        :param unreachable_ok: with ``check``, a Redis that cannot be reached is logged,
            not raised (see :meth:`check`).
        :raises BackendUnavailable: ``check`` is true and Redis cannot be reached.
        :raises ValueError: the prefix holds a brace (it would break the hash tags).
        """
        client, blocking, ours = clients_from_url(
            url, retry=_retry(), max_connections=MAX_CONNECTIONS, block=cls.block_slice + 5
        )
        backend = cls(
            client,
            buffer_size=buffer_size,
            resume_bytes=resume_bytes,
            prefix=ours.get("prefix", "mcp:"),
            idle_timeout=idle_timeout,
            max_lifetime=max_lifetime,
            blocking=blocking,
        )
        backend._owns_client = True
        if "worker_timeout" in ours:
            backend.worker_timeout = float(ours["worker_timeout"])
        if check:
            backend.check(unreachable_ok=unreachable_ok)
        return backend

    # -- the settings every script receives -------------------------------------

    @property
    def idle_timeout(self) -> float | None:
        """``MCP_SESSION_IDLE_TIMEOUT``, for the keys' expiry."""
        return self.commands.limits.idle_timeout

    @idle_timeout.setter
    def idle_timeout(self, value: float | None) -> None:
        self.commands.limits.idle_timeout = value

    @property
    def max_lifetime(self) -> float | None:
        """``MCP_SESSION_MAX_LIFETIME``, for the keys' expiry."""
        return self.commands.limits.max_lifetime

    @max_lifetime.setter
    def max_lifetime(self, value: float | None) -> None:
        self.commands.limits.max_lifetime = value

    @property
    def worker_timeout(self) -> float:
        """Seconds after which a silent process counts as dead: the streams of its
        running requests are ended and its requests stop keeping sessions busy.
        Keep it above the longest time a worker may block (gunicorn's ``timeout``)."""
        return self.commands.limits.worker_timeout

    @worker_timeout.setter
    def worker_timeout(self, value: float) -> None:
        self.commands.limits.worker_timeout = value

    @property
    def grace(self) -> int:
        """Seconds Redis keeps a session past its limits, so that the reaper ends it first."""
        return self.commands.limits.grace

    @grace.setter
    def grace(self, value: int) -> None:
        self.commands.limits.grace = value

    @property
    def buffer_size(self) -> int:
        """Messages kept per session for ``Last-Event-ID`` replay."""
        return self.commands.limits.buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        self.commands.limits.buffer_size = value

    @property
    def resume_bytes(self) -> int:
        """Bytes of messages kept per session on the streams whose reader left (0: no bound)."""
        return self.commands.limits.resume_bytes

    @resume_bytes.setter
    def resume_bytes(self, value: int) -> None:
        self.commands.limits.resume_bytes = value

    @property
    def where(self) -> str:
        """Where Redis is, for messages (no password)."""
        return self.commands.where

    def check(self, *, unreachable_ok: bool = False) -> None:
        """Make sure Redis answers and is recent enough, waiting up to
        :data:`~flask_mcp.backends.redis.urls.BOOT_WAIT` seconds for one that restarts.

        :param unreachable_ok: log a Redis that cannot be reached instead of raising: the
            process starts, and its requests are answered "the session store is
            unavailable" (HTTP 503) until Redis is back. For a gunicorn worker started
            while the server runs, whose failed boot would stop the whole server.
        :raises BackendUnavailable: Redis cannot be reached (unless ``unreachable_ok``),
            refused the connection, or is older than 6.2.
        """
        if not check_version(self.client, self.where, unreachable_ok=unreachable_ok):
            logger.error(
                "Redis at %s cannot be reached while this worker starts; it starts anyway "
                "and answers 503 (the session store is unavailable) until Redis is back.",
                self.where,
            )

    def check_ready(self) -> None:
        """Make sure Redis takes a write now (the readiness probe): one ``SET`` of a short
        key that expires in :data:`READINESS_PROBE_TTL_MS`, bounded by the socket timeout.

        A full Redis (``maxmemory``, ``noeviction``) answers reads but refuses every write,
        so every request that writes gets 503: reading alone would answer "ready". The key
        has the hash tag of :data:`~flask_mcp.backends.base.READINESS_PROBE_ID`.

        :raises BackendUnavailable: Redis does not answer (:class:`~flask_mcp.errors.BackendFull`:
            it refuses the write, full).
        """
        with self.commands.errors():
            self.client.set(
                self.keys.tagged(READINESS_PROBE_ID) + "w", b"1", px=READINESS_PROBE_TTL_MS
            )

    # -- this process ---------------------------------------------------------

    @property
    def worker(self) -> str:
        """This process's id among the workers sharing the Redis."""
        _LIVE.add(self)
        return self.commands.worker

    def forked(self) -> None:
        """Start afresh in a forked child: the parent's counts and streams are its own."""
        self.commands.forget_worker()
        self.ledger = Ledger()
        self.hot.clear()
        self.own_streams = self._new_own_streams()

    def _new_own_streams(self) -> OwnStreams:
        own = OwnStreams(
            self.commands, self.logs, self.reader.calls.call, lambda: self.listener.live
        )
        self.reader.local = own
        return own

    def _on_stream(self, name: str, session_id: str, stream_id: str, *args: t.Any) -> t.Any:
        """Run the script ``name`` on a stream, with the stream id and ``args``."""
        keys = self.commands.stream_keys(session_id, stream_id)
        return self.commands.run(name, keys, stream_id, *args)

    def _load(self, sid: str) -> t.Any:
        """Count a request of ``sid`` ahead and return its hash (field, value, ...): one round
        trip, with what the ledger owes for it and its streams' detaches and drops."""
        commands, ledger = self.commands, self.ledger
        keys = commands.keys.session(sid)
        owed = ledger.take(sid)
        change = ledger.change_id()
        later = self.own_streams.take(sid)  # detaches and drops ride along
        try:
            if not later:
                return commands.run_counted("load", keys, 1 + owed, change)
            batch = commands.batch()
            self.own_streams.queue_into(batch, later)
            index, registering = commands.counted(batch, "load", keys, 1 + owed, change)
            replies = commands.send(batch)
            if registering:
                commands.registered_now()
            self.own_streams.settled(later, replies)
            return replies[index]
        except BackendUnavailable:
            # Made or not: send it again with its id, then take back the request's count
            # (the request fails).
            ledger.doubt([(sid, change, 1 + owed), (sid, ledger.change_id(), -1)])
            self.own_streams.give_back(later)
            raise

    @property
    def pending(self) -> bool:
        """Whether busy counts, stream detaches or drops wait to be written."""
        return self.ledger.pending or self.own_streams.pending

    def flush(self, everything: bool = False) -> None:
        """Write, in one pipeline, the busy counts the ledger owes and the detaches and drops
        that wait (:mod:`~.own_streams`); kept while Redis is unreachable.

        :param everything: also give back the counts taken ahead and not claimed yet.
        """
        ledger = self.ledger
        due = ledger.due(everything)
        doubts = ledger.take_doubts()  # first: before the changes made after them
        later = self.own_streams.take()
        if not due and not later and not doubts:
            return
        commands = self.commands
        batch = commands.batch()
        self.own_streams.queue_into(batch, later)
        sent = [*doubts, *((sid, ledger.change_id(), d) for sid, d in due.items() if d)]
        touched: dict[str, int] = {}
        for sid, change, delta in sent:
            index = batch.script("touch", commands.keys.session(sid), delta, change)
            touched.setdefault(sid, index)
        for sid in due.keys() - touched.keys():  # the traffic alone: its last_seen
            touched[sid] = batch.script("touch", commands.keys.session(sid), 0, "")
        asked = time.monotonic()
        try:
            replies = commands.send(batch)
        except BackendUnavailable:
            ledger.doubt(sent)
            ledger.give_back(dict.fromkeys(due, 0))  # their traffic
            self.own_streams.give_back(later)
            raise
        self.own_streams.settled(later, replies)
        for sid, index in touched.items():  # whether each session still exists
            self.hot.confirm(sid, bool(int(replies[index])), asked)

    def beat(self) -> None:
        """Mark this process alive, end the streams of dead ones, settle unsaved counts,
        forget the own streams nobody uses."""
        commands = self.commands
        self.logs.sweep(commands.run("beat", [commands.keys.workers, commands.keys.alive]))
        commands.registered_now()
        commands.trim()  # give back the connections a past peak left idle
        self.logs.write_disowned()
        self.flush(everything=False)
        self.own_streams.sweep()

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
        self.check_client_info(record)
        items = record.to_dict().items()
        fields = [x for k, v in items if k not in _COMPUTED for x in (k, dumps(v))]
        stored = self.sessions.admit(
            record.id, limit, handshake_timeout or 0, owner, quota or 0, fields
        )
        if stored == OVER_QUOTA:
            raise SessionQuotaExceeded(owner)
        return bool(stored)

    def get_session(self, session_id: str, touch: bool = False) -> SessionRecord | None:
        """Return a session's record; with ``touch``, also count a request of it ahead, in
        the same round trip (see :class:`~flask_mcp.backends.redis.batch.Ledger`), or
        with none for a session this gevent worker served a moment ago
        (:mod:`~flask_mcp.backends.redis.hot`)."""
        if not session_id:
            return None
        if touch:
            self.listener.ensure(0)  # its loop writes what the ledger owes
            hot = self.hot.get(session_id)
            if hot is not None:  # served from memory: the listener writes its traffic
                self.ledger.served(session_id)
                return hot
            changes, asked = self.hot.changes, time.monotonic()
            raw = self._load(session_id)
            if raw:
                self.ledger.reserve(session_id)
                record = self._record(session_id, raw)
                self.hot.keep(session_id, record, changes, asked)
                return record
        else:
            with self.commands.errors():
                raw = self.client.hgetall(self.keys.record(session_id))
        return self._record(session_id, raw)

    def get_sessions(self, session_ids: cabc.Iterable[str]) -> dict[str, SessionRecord]:
        ids, batch = [sid for sid in session_ids if sid], self.commands.batch()
        for sid in ids:
            batch.command("HGETALL", self.keys.record(sid))
        found = {
            sid: self._record(sid, raw)
            for sid, raw in zip(ids, self.commands.send(batch), strict=True)
        }
        return {sid: record for sid, record in found.items() if record is not None}

    def _record(self, session_id: str, raw: t.Any) -> SessionRecord | None:
        return decode_record(session_id, raw, self.ledger.surplus(session_id))

    def update_session(self, session_id: str, **changes: t.Any) -> None:
        fields: list[str] = []
        for name, value in changes.items():
            fields += [name, dumps(value)]
        if not fields or not self.commands.run("update", self.keys.session(session_id), *fields):
            return
        self.hot.forget(session_id)
        batch = self.commands.batch()  # the reaper's indexes follow a changed time
        if "last_seen" in changes:
            batch.command("ZADD", self.keys.seen, "XX", changes["last_seen"], session_id)
        if "created" in changes:
            batch.command("ZADD", self.keys.born, "XX", changes["created"], session_id)
        self.commands.send(batch)

    def add_subscription(self, session_id: str, uri: str) -> None:
        limit = self.max_subscriptions or 0
        reply = self.commands.run("subscription", self.keys.session(session_id), uri, 1, limit)
        self.hot.forget(session_id)
        if reply == -1:
            raise TooManySubscriptions(limit)

    def remove_subscription(self, session_id: str, uri: str) -> None:
        self.commands.run("subscription", self.keys.session(session_id), uri, 0, 0)
        self.hot.forget(session_id)

    def touch_session(self, session_id: str, busy_delta: int = 0) -> None:
        if busy_delta > 0:
            self.listener.ensure(0)  # beats keep this process's requests alive
            if self.ledger.claim(session_id):
                return  # the session lookup counted it already
        elif busy_delta < 0 and self.ledger.release(session_id):
            return  # written with a later command
        change = self.ledger.change_id() if busy_delta else ""
        try:
            self.commands.run_counted("touch", self.keys.session(session_id), busy_delta, change)
        except BackendUnavailable:
            if busy_delta:  # made or not: send it again with its id when Redis is back
                changes = [(session_id, change, busy_delta)]
                if busy_delta > 0:  # the request does not run: take its count back
                    changes.append((session_id, self.ledger.change_id(), -busy_delta))
                self.ledger.doubt(changes)
            raise

    def delete_session(self, session_id: str) -> bool:
        reply = self.commands.run("delete", self.keys.session(session_id))
        self.hot.forget(session_id)
        batch = self.commands.batch()
        self.logs.forget(batch, session_id, reply[1:])
        self.commands.send(batch)
        return bool(int(reply[0]))

    def session_ids(self) -> list[str]:
        with self.commands.errors():
            return [text(sid) for sid in self.client.zrange(self.keys.seen, 0, -1)]

    def reap(
        self, idle: float | None, lifetime: float | None, keep: cabc.Container[str] = ()
    ) -> list[tuple[str, str]]:
        # every running request is counted in Redis (busy), so keep adds nothing
        self.idle_timeout, self.max_lifetime = idle, lifetime
        self.flush(everything=True)
        self.logs.sweep(self.commands.run("beat", [self.keys.workers, self.keys.alive]))
        return self.sessions.reap(1000)

    # -- streams ------------------------------------------------------------

    def open_stream(self, session_id: str, stream_id: str, *, request_id: t.Any = None) -> None:
        """Open a stream; a request's stream opens in Redis with its first write (see
        :mod:`~flask_mcp.backends.redis.own_streams`)."""
        self.listener.ensure(0)  # beats keep the streams this process opens alive
        rid = "" if request_id is None else dumps(request_id)
        if request_id is not None and stream_id != "g":
            self.own_streams.open(session_id, stream_id, rid)
            return
        batch = self.commands.batch()
        batch.script("open", self.commands.stream_keys(session_id, stream_id), stream_id, rid)
        if stream_id != "g":  # for the sweep, should this process die
            batch.command("SADD", self.commands.owned(), f"{session_id} {stream_id}")
        self.commands.send(batch)

    def append(
        self,
        session_id: str,
        stream_id: str,
        kind: str,
        message: dict[str, t.Any] | None = None,
        *,
        write_id: str | None = None,
    ) -> int:
        """Append an event (see :meth:`Backend.append`). The write carries its id (a new
        one without ``write_id``) for the script to recognise it sent again: redis-py
        resends a command once on a broken connection, also one that ran and lost only
        its reply."""
        wid = write_id or new_write_id()
        local = self.own_streams.get(session_id, stream_id)
        if local is not None:
            return self.own_streams.write(local, [(kind, message)], wid)[0]
        body = "" if message is None else dumps(message)
        keys = self.commands.stream_keys(session_id, stream_id)
        reply = self.commands.run("append", keys, stream_id, kind, body, "0", wid)
        return self.logs.appended(session_id, reply)

    def append_many(
        self,
        events: cabc.Iterable[tuple[str, str, str, dict[str, t.Any] | None]],
        *,
        write_ids: cabc.Sequence[str] | None = None,
    ) -> list[int]:
        """Append events (see :meth:`~.streams.StreamLogs.append_many`); those of a stream
        this process writes go the way of :meth:`append`, one write per stream."""
        items = list(events)
        ids = [new_write_id() for _ in items] if write_ids is None else list(write_ids)
        seqs, rest = self.own_streams.write_many(items, ids)
        if len(rest) == len(items):
            return self.logs.append_many(items, ids)
        appended = self.logs.append_many([items[i] for i in rest], [ids[i] for i in rest])
        for i, seq in zip(rest, appended, strict=True):
            seqs[i] = seq
        return seqs

    def attach(self, session_id: str, stream_id: str) -> int:
        local = self.own_streams.attach(session_id, stream_id)
        if local is not None:
            return local
        return int(self._on_stream("attach", session_id, stream_id))

    def detach(self, session_id: str, stream_id: str, token: int) -> None:
        """Give up a stream's reader. Not waited for: the detaches of the streams that close
        together (a thousand clients gone at once) go to Redis together, a few pipelines
        on a few connections, with the cursors saved meanwhile (see
        :meth:`~.reader.Batches.post`). A detach that never arrives is harmless: the next
        attach replaces the token."""
        local = self.own_streams.detach(session_id, stream_id, token)
        if local == "":
            return  # nothing in Redis, or written later
        self.reader.forget(self.keys.stream(session_id, stream_id)[0], token)
        keys = self.commands.stream_keys(session_id, stream_id)
        self.reader.calls.post(
            "detach",
            keys,
            stream_id,
            local or token,
            then=lambda reply: self.logs.settle_reply(session_id, reply, stream_id),
        )

    def read(
        self, session_id: str, stream_id: str, after: int, token: int, timeout: float
    ) -> ReadResult:
        # No connection is held while waiting: the listener wakes the reader.
        self.listener.ensure(0)
        local = self.own_streams.reads(session_id, stream_id, token)
        if local is not None:  # this process writes it: the events are here
            return self.own_streams.read(local, after, timeout)
        keys = self.commands.stream_keys(session_id, stream_id)
        return self.reader.read(keys, stream_id, after, token, timeout)

    def first_seq(self, session_id: str, stream_id: str) -> int | None:
        found = self.commands.run(
            "first", self.commands.stream_keys(session_id, stream_id), stream_id
        )
        return None if found is None else int(found)

    def drop_stream(self, session_id: str, stream_id: str) -> None:
        if self.own_streams.drop(session_id, stream_id):
            return  # written later (see own_streams)
        reply = self.commands.run(
            "drop", self.commands.stream_keys(session_id, stream_id), stream_id
        )
        self.logs.settle_reply(session_id, reply)

    def get_cursor(self, session_id: str, stream_id: str) -> int:
        with self.commands.errors():
            value = self.client.hget(self.keys.meta(session_id), f"c:{stream_id}")
        unsent = self.reader.calls.posted("cursor", self.keys.session(session_id), stream_id)
        return max(int(value) if value is not None else 0, int(unsent[1]) if unsent else 0)

    def set_cursor(self, session_id: str, stream_id: str, seq: int) -> None:
        # Every GET stream woken by a broadcast saves its cursor at once: together, after
        # the reads, and without waiting (the event is written: the stream goes on).
        self.reader.calls.post("cursor", self.keys.session(session_id), stream_id, seq)

    def cancel(self, session_id: str, request_id: t.Any) -> None:
        self.messaging.cancel(session_id, request_id)

    def publish(self, channel: str, message: dict[str, t.Any]) -> None:
        self.messaging.publish(channel, message)

    def subscribe(self, channel: str) -> QueueSubscription:
        return self.listener.subscribe(channel)

    def caught_up(self) -> bool:
        """Under gevent, while the listener waits with nothing unread (see :mod:`.hot`).

        Redis sends a published message to the subscribers before it answers the
        ``PUBLISH``; so once the listener has handled everything on its connection,
        it has handed on every message published before the current request came.
        Never on a cluster, nor with threads (the listener reads in parallel).
        """
        return self.hot.enabled and cooperative() and self.listener.quiet()

    # -- server-to-client requests ------------------------------------------

    def next_request_id(self, session_id: str) -> int:
        return self.messaging.next_request_id(session_id)

    def expect_response(self, session_id: str, request_id: t.Any) -> None:
        self.messaging.expect_response(session_id, request_id)

    def wait_response(
        self, session_id: str, request_id: t.Any, timeout: float
    ) -> dict[str, t.Any] | None:
        return self.messaging.wait_response(session_id, request_id, timeout)

    def deliver_response(
        self, session_id: str, request_id: t.Any, message: dict[str, t.Any]
    ) -> bool:
        return self.messaging.deliver_response(session_id, request_id, message)

    def forget_response(self, session_id: str, request_id: t.Any) -> None:
        self.messaging.forget_response(session_id, request_id)

    # -- tasks and shared logs ----------------------------------------------

    def task_store(self) -> RedisTaskStore:  # noqa: D102 (see Backend.task_store)
        return RedisTaskStore(self.commands)

    def shared_log(self, name: str) -> SharedLog:
        """Return the log ``name`` that every worker sharing this Redis reads (a list)."""
        return SharedLog(self.commands, self.keys.log(name))

    def close(self) -> None:
        """Stop this process's listener and mark it gone, so its running streams end."""
        self.listener.stop()
        with contextlib.suppress(Exception):
            self.reader.calls.drain()  # the cursors not saved yet
        with contextlib.suppress(Exception):
            self.flush(everything=True)
        with contextlib.suppress(Exception):
            self.client.zadd(self.keys.workers, {self.worker: 0})
        self.commands.forget_worker()
        self.hot.clear()
        if self.commands.lane is not None:
            self.commands.lane.close()
        if self._owns_client:
            self.client.close()
        if self.commands.blocking is not self.client:
            self.commands.blocking.close()


__all__ = [
    "MAX_CONNECTIONS",
    "RedisBackend",
]
