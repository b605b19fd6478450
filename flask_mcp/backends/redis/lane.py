"""A short path for the single commands of the hot path: one send, one read.

Every request of a session costs one script run (the session lookup). Through
:meth:`redis.Redis.execute_command`, redis-py takes a connection from its pool
under a lock, checks the pool's process, polls the connection for stray data
(under gevent, a ``poll()`` through the hub), records metrics, encodes every
argument in Python, sends with ``sendall`` (gevent asks the socket's buffer size
each time) and wraps it all in a retry.

A :class:`Lane` keeps connections borrowed from the client's pool in a stack of
its own and runs a command as one send and one read, the command packed by
hiredis (it comes with the ``redis`` extra). What the pool's checks guard
against cannot happen here: a connection goes back to the stack only after its
reply was read whole, and any failure mid-command disconnects it. Connections
unused for :data:`IDLE` seconds go back to the pool (:meth:`Lane.trim`, on every
liveness beat), which closes them once unused for its own ``idle_timeout``; a
lane keeps at most a few (``keep``), the rest of a burst goes straight back.

CPU instructions per ``EVALSHA`` of the session lookup under gevent, counted by
callgrind (repeatable to 0.1%): 372,000 through ``execute_command``, 68,000
through a lane.
"""

from __future__ import annotations

import contextlib
import os
import time
import typing as t
import weakref

import redis
from redis.sentinel import SentinelConnectionPool

try:
    from hiredis import pack_command as _hiredis_pack
except ImportError:  # pragma: no cover - hiredis comes with the redis extra
    _hiredis_pack = None  # type: ignore[assignment]

from .connections import IDLE_TIMEOUT
from .connections import idle_since

#: Seconds a lane keeps a connection unused before the pool takes it back (the pool keeps
#: a few warm, so a worker at rest holds no more than without a lane).
IDLE = 5.0
#: Most connections a lane keeps between commands: the session lookups in flight at once
#: in one worker (more go through the pool), few enough that a worker at rest holds no
#: more connections than the pool's warm ones and a couple.
KEEP = 2


class Lane:
    """Runs single commands on connections borrowed from ``pool``, one send and one read each.

    :param pool: the standalone client's connection pool.
    :param retry: how often a command is sent again on a broken connection (a
        restarted Redis), as the client's own ``Retry`` does.
    :param keep: most connections kept between commands; the others go back to the pool.
    """

    def __init__(self, pool: redis.ConnectionPool, retry: int = 1, keep: int = KEEP) -> None:
        self.pool = pool
        self.retries = retry
        self.keep = keep
        self.idle_timeout = min(IDLE, float(getattr(pool, "idle_timeout", IDLE_TIMEOUT)))
        #: Connected, unused connections with the time they came back (newest last).
        self._idle: list[tuple[t.Any, float]] = []
        _LANES.add(self)

    def execute(self, *args: t.Any) -> t.Any:
        """Send one command and return its reply.

        :raises redis.ResponseError: Redis answered with an error (the connection is kept).
        :raises redis.ConnectionError: Redis could not be reached, after the retries.
        :raises redis.TimeoutError: Redis did not answer within the socket timeout.
        """
        attempts = self.retries
        packed = _pack(args)
        while True:
            connection = self._take()
            try:
                if packed is None:
                    connection.send_packed_command(connection.pack_command(*args), False)
                else:
                    _send(connection, packed)
                reply = connection.read_response()
            except redis.exceptions.ResponseError:
                self._give(connection)  # the reply was read whole
                raise
            except redis.exceptions.ConnectionError:
                self._drop(connection)  # disconnected by redis-py already
                # The others broke with it, most likely (a restarted Redis): the pool
                # checks each before lending it again.
                self.close()
                if attempts <= 0:
                    raise
                attempts -= 1
            except BaseException:  # a timeout, or an exception thrown into the greenlet
                connection.disconnect()  # its reply may still come: never reuse it
                self._drop(connection)
                raise
            else:
                self._give(connection)
                return reply

    def _take(self) -> t.Any:
        with contextlib.suppress(IndexError):
            return self._idle.pop()[0]
        return self.pool.get_connection()

    def _give(self, connection: t.Any) -> None:
        if len(self._idle) < self.keep:
            self._idle.append((connection, time.monotonic()))
        else:  # a burst: the pool keeps the rest, and closes them when they stay unused
            self.pool.release(connection)

    def _drop(self, connection: t.Any) -> None:
        self.pool.release(connection)

    def trim(self, now: float | None = None) -> int:
        """Give back to the pool the connections unused for ``idle_timeout``; return how many."""
        limit = (time.monotonic() if now is None else now) - self.idle_timeout
        given = 0
        while True:  # one list operation at a time: other threads take and give meanwhile
            try:
                connection, since = self._idle.pop(0)  # the oldest
            except IndexError:
                return given
            if since > limit:
                self._idle.insert(0, (connection, since))
                return given
            self.pool.release(connection)
            idle_since(connection, since)  # the pool counts its idle time from then
            given += 1

    def close(self) -> None:
        """Give every connection back to the pool."""
        while True:  # one list operation at a time: other threads take and give meanwhile
            try:
                connection, _ = self._idle.pop()
            except IndexError:
                return
            self.pool.release(connection)

    @property
    def idle(self) -> int:
        """How many connections the lane holds unused."""
        return len(self._idle)


def _pack(args: tuple[t.Any, ...]) -> bytes | None:
    """Return the command packed by hiredis, or ``None`` to let redis-py pack it."""
    if _hiredis_pack is None:
        return None
    try:
        return t.cast(bytes, _hiredis_pack(args))
    except (TypeError, ValueError):  # a type hiredis does not pack: redis-py's encoder does
        return None


def _send(connection: t.Any, packed: bytes) -> None:
    """Write ``packed`` on ``connection``'s socket: one ``send`` as a rule (gevent's
    ``sendall`` asks the socket's buffer size first), errors as redis-py reports them."""
    sock = connection._sock
    if sock is None:
        connection.connect()
        sock = connection._sock
    try:
        sent = sock.send(packed)
        if sent < len(packed):
            sock.sendall(memoryview(packed)[sent:])
    except TimeoutError:
        connection.disconnect()
        raise redis.exceptions.TimeoutError("Timeout writing to socket") from None
    except OSError as exc:
        connection.disconnect()
        raise redis.exceptions.ConnectionError(f"Error while writing to socket: {exc}") from exc
    except BaseException:
        connection.disconnect()
        raise


#: Every lane of this process (weakly: no leak), for :func:`_forked`.
_LANES: weakref.WeakSet[Lane] = weakref.WeakSet()


def _forked() -> None:
    """In a forked child, forget the parent's connections (without closing its sockets)."""
    for lane in list(_LANES):
        lane._idle = []


os.register_at_fork(after_in_child=_forked)


def lane_for(client: t.Any, retry: int = 1) -> Lane | None:
    """Return a :class:`Lane` on ``client``'s pool, or ``None`` where the short path would
    skip something the client does (a cluster, a client-side cache, RESP3 push messages)."""
    if type(client) is not redis.Redis:
        return None
    pool = client.connection_pool
    if not isinstance(pool, redis.ConnectionPool) or isinstance(pool, redis.BlockingConnectionPool):
        return None
    if isinstance(pool, SentinelConnectionPool):  # its connections follow a failover
        return None
    encoder = client.get_encoder()
    if getattr(pool, "cache", None) is not None or encoder.decode_responses:
        return None
    if encoder.encoding.replace("-", "").lower() != "utf8":  # hiredis packs text as UTF-8
        return None
    if str(pool.connection_kwargs.get("protocol", 2)) == "3":
        return None
    return Lane(pool, retry)


__all__ = ["IDLE", "KEEP", "Lane", "lane_for"]
