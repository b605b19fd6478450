"""The commands of one Redis backend: its clients, its scripts and its worker identity.

Every part of the backend (sessions, streams, messaging, the stream readers)
sends through one :class:`RedisCommands`: a script by name (:meth:`RedisCommands.run`),
many at once in a pipeline (:meth:`RedisCommands.batch`, :meth:`RedisCommands.send`),
each turning the errors of an unreachable Redis into
:class:`~flask_mcp.errors.BackendUnavailable` (at once for a best-effort write while
Redis stalls: see :class:`~.codec.Unreachable`).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import socket
import time
import typing as t

import redis
from redis.cluster import RedisCluster

from ..base import RESUME_BYTES
from .batch import Batch
from .batch import spread
from .codec import Unreachable
from .codec import stall_window
from .connections import trim
from .keys import Keys
from .lane import Lane
from .lane import lane_for
from .scripts import bodies
from .urls import describe


@dataclasses.dataclass
class Limits:
    """The times and sizes every script receives first (see :data:`~.scripts.HEAD`)."""

    #: ``MCP_SESSION_IDLE_TIMEOUT``, for the keys' expiry (``None``: none).
    idle_timeout: float | None = None
    #: ``MCP_SESSION_MAX_LIFETIME``, for the keys' expiry (``None``: none).
    max_lifetime: float | None = None
    #: Seconds Redis keeps a session past its limits, so that the reaper ends it first.
    grace: int = 60
    #: Messages kept per session for ``Last-Event-ID`` replay.
    buffer_size: int = 1000
    #: Seconds after which a silent process counts as dead.
    worker_timeout: float = 30.0
    #: ``MCP_SSE_RESUME_BYTES``: bytes kept per session on the streams whose reader left.
    resume_bytes: int = RESUME_BYTES


class RedisCommands:
    """Sends the backend's scripts and commands to Redis.

    :param client: the Redis (or Redis Cluster) client.
    :param blocking: the client of blocking reads (``BLPOP``), with a longer socket timeout.
    :param keys: the key layout.
    :param limits: the times and sizes the scripts receive.
    """

    def __init__(self, client: t.Any, blocking: t.Any, keys: Keys, limits: Limits) -> None:
        self.client = client
        self.blocking = blocking
        self.keys = keys
        self.limits = limits
        self.cluster = isinstance(client, RedisCluster)
        #: The short path of single scripts (standalone Redis only).
        self.lane: Lane | None = lane_for(client)
        self.scripts = {name: client.register_script(body) for name, body in bodies().items()}
        #: Also remembers that Redis timed out a moment ago, for the best-effort writes.
        self.unreachable = Unreachable(lambda: self.where, stall_window(client))
        self._worker = ""
        #: Until when this worker's registration counts as fresh, and for which worker id.
        self.registered = (0.0, "")

    @property
    def where(self) -> str:
        """Where Redis is, for messages (no password)."""
        return describe(self.client)

    @property
    def worker(self) -> str:
        """This process's id among the workers sharing the Redis (a new one after a fork)."""
        if not self._worker:
            self._worker = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        return self._worker

    def forget_worker(self) -> None:
        """Take a new worker id at the next use (after a fork, or once closed)."""
        self._worker = ""

    def errors(self) -> Unreachable:
        """Turn the errors of an unreachable Redis into :class:`BackendUnavailable`, and
        a full Redis's refusal into :class:`~flask_mcp.errors.BackendFull`."""
        return self.unreachable

    def head(self) -> tuple[t.Any, ...]:
        """The arguments every script receives first (:data:`~.scripts.HEAD`)."""
        limits = self.limits
        return (
            limits.idle_timeout or 0,
            limits.max_lifetime or 0,
            limits.grace,
            self.worker,
            limits.buffer_size,
            limits.worker_timeout,
            limits.resume_bytes,
        )

    def sha(self, name: str) -> str:
        """The SHA1 of the script ``name``, for ``EVALSHA``."""
        return t.cast(str, self.scripts[name].sha)

    def run(self, name: str, keys: list[str], *args: t.Any) -> t.Any:
        """Run the script ``name`` on ``keys`` with ``args``; return its reply.

        :raises BackendUnavailable: Redis is unreachable.
        """
        script = self.scripts[name]
        send = self.client.execute_command if self.lane is None else self.lane.execute
        with self.unreachable:
            try:  # EVALSHA straight away: fewer layers than redis-py's Script
                return send("EVALSHA", script.sha, len(keys), *keys, *self.head(), *args)
            except redis.exceptions.NoScriptError:  # a new or restarted Redis: load, run
                return script(keys=keys, args=[*self.head(), *args])

    def batch(self) -> Batch:
        """A new pipeline of scripts and commands."""
        return Batch(self)

    def send(self, batch: Batch) -> list[t.Any]:
        """Send ``batch``; return its replies in order.

        :raises BackendUnavailable: Redis is unreachable.
        """
        with self.unreachable:
            return batch.run()

    def run_many(self, calls: list[tuple[str, list[str], tuple[t.Any, ...]]]) -> list[t.Any]:
        """Run scripts in one round trip: ``[(name, keys, args), ...]`` to their replies."""
        batch = self.batch()
        where = batch.scripts(calls, grouped="cursor")
        return spread(self.send(batch), where)

    def stream_keys(self, session_id: str, stream_id: str) -> list[str]:
        """The keys of a session script working on one of the session's streams."""
        return [*self.keys.session(session_id), *self.keys.stream(session_id, stream_id)]

    def owned(self) -> str:
        """The key of the set of the request streams this worker writes (for the sweep)."""
        return self.keys.owned(self.worker)

    def trim(self) -> None:
        """Give back the connections a past peak left idle."""
        if self.lane is not None:
            self.lane.trim()  # first: what it gives back, the pool may close
        trim(self.client, self.blocking)

    # -- the worker's registration ---------------------------------------------

    def fresh(self) -> bool:
        """Whether this worker beat recently enough to count requests without registering."""
        fresh_until, worker = self.registered
        return worker == self.worker and time.monotonic() < fresh_until

    def registered_now(self) -> None:
        """Note that this worker registered (or beat) just now."""
        self.registered = (time.monotonic() + self.limits.worker_timeout / 4, self.worker)

    def counted(self, batch: Batch, name: str, keys: list[str], *args: t.Any) -> tuple[int, bool]:
        """Queue a script that may count a request of this worker in ``batch``, after the
        worker's registration unless it is fresh; return the script's index and whether it
        registers (then call :meth:`registered_now` once the batch ran)."""
        registering = not self.fresh()
        if registering:
            batch.script("register", [self.keys.workers])
        return batch.script(name, keys, *args), registering

    def run_counted(self, name: str, keys: list[str], *args: t.Any) -> t.Any:
        """Run a script that may count a request of this worker: register the worker first
        (in the same round trip) unless it beat recently, so that no reaper takes the
        count for a dead worker's."""
        if self.fresh():
            return self.run(name, keys, *args)
        batch = self.batch()
        index, registering = self.counted(batch, name, keys, *args)
        reply = self.send(batch)[index]
        if registering:
            self.registered_now()
        return reply


__all__ = ["Limits", "RedisCommands"]
