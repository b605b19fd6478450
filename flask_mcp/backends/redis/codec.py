"""How values cross between the Redis backend and Redis: JSON text, session records, errors.

JSON is written and read by :mod:`flask_mcp.json_codec`, as on the wire (orjson
when installed).
"""

from __future__ import annotations

import dataclasses
import time
import typing as t

import redis

from ...errors import BackendFull
from ...errors import BackendUnavailable
from ...json_codec import dumps
from ...json_codec import loads_stored as loads
from ..base import BEST_EFFORT
from ..base import SessionRecord
from .connections import SOCKET_TIMEOUT

#: What a command raises while Redis is unreachable, or full: at its ``maxmemory`` with
#: ``maxmemory-policy noeviction`` (as the deployment docs ask) Redis refuses every write
#: that may grow it ("OOM command not allowed"), keeps what it holds, and takes writes again
#: once it has room. A refused script wrote nothing (Redis checks before its first write).
UNAVAILABLE = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.RedisClusterException,  # no node of a cluster answers
    redis.exceptions.ClusterDownError,  # CLUSTERDOWN: slots not served (failover)
    redis.exceptions.OutOfMemoryError,  # full: answered as an outage until it has room
)

#: How to end a full Redis's refusals, for the log.
FULL_FIX = (
    "Raise its maxmemory (CONFIG SET maxmemory, and in redis.conf), or lower"
    " MCP_MAX_SESSIONS, MCP_SSE_RESUME_BYTES or MCP_TASK_MAX_BYTES_PER_CLIENT; requests"
    " get 503 until it has room again, and what it holds is kept."
)


def unavailable_reason(exc: BaseException, where: str) -> str:
    """Say why Redis at ``where`` failed a command with ``exc`` (one of :data:`UNAVAILABLE`).

    A full Redis is not unreachable: the message says so, and how to fix it.
    """
    if isinstance(exc, redis.exceptions.OutOfMemoryError):
        return f"Redis at {where} is full (used memory is over its maxmemory): {exc} {FULL_FIX}"
    return f"Redis at {where} is unreachable: {exc}"


#: The stored fields of a session's hash, by name as Redis returns it (bytes or text).
FIELDS = {
    spelling: field.name
    for field in dataclasses.fields(SessionRecord)
    if field.name not in ("id", "busy")
    for spelling in (field.name, field.name.encode())
}


def text(value: t.Any) -> str:
    """Return a Redis reply as text, whether the client decodes responses or not."""
    return value.decode() if isinstance(value, bytes) else str(value)


def decode_record(session_id: str, raw: t.Any, surplus: int) -> SessionRecord | None:
    """Decode a session's hash: a dict, or the flat field-value list a script returns.

    :param surplus: by how much Redis's count of running requests exceeds this
        process's (see :meth:`~.batch.Ledger.surplus`).
    :return: ``None`` when the hash is empty (the session does not exist).
    """
    if not raw:
        return None
    pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=True)
    data: dict[str, t.Any] = {"id": session_id}
    busy = -surplus
    for name, value in pairs:
        field = FIELDS.get(name)
        if field is None:  # a worker's count of running requests, "b:<worker>"
            if text(name).startswith("b:"):
                busy += max(0, int(value))
            continue
        data[field] = loads(value)
    data["busy"] = max(0, busy)
    if not isinstance(data.get("subscriptions", []), list):
        data["subscriptions"] = []
    return SessionRecord.from_dict(data)


class Unreachable:
    """Turns the errors of an unreachable Redis into :class:`BackendUnavailable`, and
    remembers that Redis stalled.

    One per backend, entered around every command (no generator built each time). Once
    a command timed out (a Redis that keeps its connections but does not answer: frozen,
    swapping, or a network that drops packets), a best-effort write
    (:func:`~flask_mcp.backends.base.best_effort`: a notification) fails at once for
    ``window`` seconds, instead of waiting the socket timeout again to be dropped: a
    handler reporting progress 20 times while Redis stalls waits once, not 20 times.
    Every other command still tries. The window ends as soon as a command succeeds.

    :param where: tells where Redis is, for the message.
    :param window: seconds best-effort writes fail at once after a timeout: the socket
        timeout (:func:`stall_window`).
    """

    __slots__ = ("stalled_until", "where", "window")

    def __init__(self, where: t.Callable[[], str], window: float = SOCKET_TIMEOUT) -> None:
        self.where = where
        self.window = window
        #: Until when (:func:`time.monotonic`) best-effort writes fail at once (0: they try).
        self.stalled_until = 0.0

    def __enter__(self) -> None:
        if self.stalled_until and BEST_EFFORT.get() and time.monotonic() < self.stalled_until:
            raise BackendUnavailable(
                f"Redis at {self.where()} timed out a moment ago (no answer within its "
                f"socket timeout); a best-effort write is not sent until a command "
                f"succeeds or {self.window:g} s have passed"
            )
        return None

    def __exit__(self, kind: t.Any, exc: BaseException | None, traceback: t.Any) -> None:
        if exc is None:
            if self.stalled_until:
                self.stalled_until = 0.0
            return
        if isinstance(exc, UNAVAILABLE):
            if timed_out(exc):
                self.stalled_until = time.monotonic() + self.window
            full = isinstance(exc, redis.exceptions.OutOfMemoryError)
            error = BackendFull if full else BackendUnavailable
            raise error(unavailable_reason(exc, self.where())) from exc


def timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` comes of a command that timed out (a Redis Cluster client raises
    another error once its retries are spent: its cause or context then)."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if isinstance(seen, redis.exceptions.TimeoutError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def stall_window(client: t.Any) -> float:
    """The socket timeout of ``client`` (a standalone, Sentinel or Cluster client), for
    :class:`Unreachable`'s window; :data:`SOCKET_TIMEOUT` when it has none."""
    manager = getattr(client, "nodes_manager", None)  # a Redis Cluster client
    if manager is not None:
        kwargs = getattr(manager, "connection_kwargs", {})
    else:
        kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    value = kwargs.get("socket_timeout")
    return float(value) if value else SOCKET_TIMEOUT


__all__ = [
    "FIELDS",
    "FULL_FIX",
    "UNAVAILABLE",
    "Unreachable",
    "decode_record",
    "dumps",
    "loads",
    "stall_window",
    "text",
    "timed_out",
    "unavailable_reason",
]
