"""The Redis backend's per-process listener: pub/sub routing and the liveness beat.

Each process sharing the Redis runs one listener thread (a greenlet under
gevent) on one pub/sub connection. It receives ``notifications/cancelled``
from every worker and hands them to the process's cancel callback, fans the
messages of :meth:`RedisBackend.publish` out to this process's subscribers,
wakes this process's stream readers (:mod:`~flask_mcp.backends._redis_reader`;
all of them after a reconnection, since wake-ups may have been lost meanwhile),
beats: it marks the process alive and ends the running streams of
processes that stopped beating, and writes the busy counts the backend's
ledger owes, within a second.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import typing as t

import redis

from ..errors import BackendUnavailable
from ._channels import LocalChannels
from ._channels import QueueSubscription
from ._redis_reader import StreamReader

logger = logging.getLogger("flask_mcp")
UNAVAILABLE = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.RedisClusterException,  # no node of a cluster answers
    redis.exceptions.ClusterDownError,  # CLUSTERDOWN: slots not served (failover)
)


try:
    from orjson import JSONDecodeError as _OrjsonError
    from orjson import loads as _orjson_loads
except ImportError:  # the optional extra: pip install flask-mcp[orjson]
    _orjson_loads = None  # type: ignore[assignment]


def loads(value: t.Any) -> t.Any:
    """Decode a JSON value read from Redis (with orjson when installed: 4x faster)."""
    if _orjson_loads is not None:
        try:
            return _orjson_loads(value)
        except _OrjsonError:  # integers beyond 64 bits: the stdlib reads them
            pass
    return json.loads(value)


def text(value: t.Any) -> str:
    """Return a Redis reply as text, whether the client decodes responses or not."""
    return value.decode() if isinstance(value, bytes) else str(value)


class Host(t.Protocol):
    """What the listener uses of its :class:`~flask_mcp.backends.redis.RedisBackend`.

    A protocol, so that this module does not import the backend that imports it.
    """

    client: t.Any
    prefix: str
    heartbeat: float
    worker_timeout: float

    @property
    def worker(self) -> str: ...

    @property
    def where(self) -> str: ...

    @property
    def pending(self) -> bool: ...

    def beat(self) -> None: ...

    def flush(self, everything: bool = False) -> None: ...


class Listener:
    """Starts, after any fork, and keeps running this process's listener thread."""

    def __init__(self, backend: Host, reader: StreamReader | None = None) -> None:
        self.backend = backend
        #: The stream reader woken by the ``P wake`` messages.
        self.reader = reader
        self.lock = threading.Lock()
        self.channels = LocalChannels()
        self._of = ""
        self._ready = threading.Event()
        self._failed = threading.Event()
        self._stop = threading.Event()

    def ensure(self, wait: float) -> bool:
        """Start the thread in this process if needed; tell whether it is subscribed.

        Waits up to ``wait`` seconds, less if connecting fails.
        """
        worker = self.backend.worker  # a new id after fork
        if self._of == worker and self._ready.is_set():
            return True  # the hot path: running and subscribed
        with self.lock:
            if self._of != worker:
                self._of = worker
                self._ready, self._failed, self._stop = (threading.Event() for _ in range(3))
                threading.Thread(
                    target=self._listen, args=(self._ready, self._failed, self._stop), daemon=True,
                    name="flask-mcp-redis-listener",
                ).start()  # fmt: skip
            ready, failed = self._ready, self._failed
        deadline = time.monotonic() + wait
        while not ready.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            if failed.is_set() or time.monotonic() >= deadline:
                return False
        return True

    @property
    def live(self) -> bool:
        """Tell whether this process's listener is subscribed now (wake-ups arrive)."""
        return self._of == self.backend.worker and self._ready.is_set()

    def subscribe(self, channel: str) -> QueueSubscription:
        """Register a subscriber of ``channel`` in this process.

        :raises BackendUnavailable: the pub/sub connection is down.
        """
        if not self.ensure(5.0):
            raise BackendUnavailable(
                f"Cannot subscribe to {channel!r}: the pub/sub connection to Redis at "
                f"{self.backend.where} is down; retry later."
            )
        return self.channels.add(channel)

    def stop(self) -> None:
        """Stop the thread (within a second)."""
        self._stop.set()
        self._of = ""

    def _listen(
        self, ready: threading.Event, failed: threading.Event, stop: threading.Event
    ) -> None:
        backend = self.backend
        cancel_channel = f"{backend.prefix}cancel"
        wake_channel = f"{backend.prefix}wake"
        pub_prefix = f"{backend.prefix}pub:"
        backoff = 0.1
        while not stop.is_set():
            pubsub = backend.client.pubsub()
            try:
                pubsub.subscribe(cancel_channel, wake_channel)
                pubsub.psubscribe(pub_prefix + "*")
                pending, last_beat = 3, 0.0
                # Beats well inside worker_timeout / 2, the gap the sweep takes for an outage.
                every = min(backend.heartbeat, backend.worker_timeout / 4)
                while not stop.is_set():
                    if time.monotonic() - last_beat >= every:
                        backend.beat()
                        last_beat = time.monotonic()
                        if self.reader is not None:
                            self.reader.sweep()  # the readers that vanished without detaching
                    if backend.pending:  # busy counts to write (see RedisBackend.get_session)
                        backend.flush()
                    wait = 0.25 if backend.pending else min(1.0, every / 4)
                    message = pubsub.get_message(timeout=wait)
                    if message is None:
                        continue
                    kind = message["type"]
                    if kind in ("subscribe", "psubscribe"):
                        pending -= 1
                        if pending == 0:
                            failed.clear()
                            ready.set()
                            backoff = 0.1
                            if self.reader is not None:
                                self.reader.wake_all()  # what changed while unsubscribed
                    elif kind == "message":
                        if text(message["channel"]) == wake_channel:
                            if self.reader is not None:
                                self.reader.wake(message["data"])
                        else:
                            self._on_cancel(message["data"])
                    elif kind == "pmessage":
                        self._on_publish(
                            text(message["channel"])[len(pub_prefix) :], message["data"]
                        )
            except (*UNAVAILABLE, BackendUnavailable) as exc:
                if ready.is_set():
                    logger.warning(
                        "Lost the pub/sub connection to Redis at %s: %s", backend.where, exc
                    )
                ready.clear()
                failed.set()
                stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
            except Exception:
                if stop.is_set():  # closing: the backend closed the connection under it
                    break
                logger.exception("The Redis listener of Flask-MCP failed; restarting it.")
                ready.clear()
                failed.set()
                stop.wait(1.0)
            finally:
                with contextlib.suppress(Exception):
                    pubsub.close()

    def _on_cancel(self, data: t.Any) -> None:
        callback = getattr(self.backend, "_cancel_callback", None)
        if callback is None:
            return
        try:
            session_id, request_id = json.loads(data)
            callback(session_id, request_id)
        except Exception:
            logger.exception("Cancelling a request from another worker failed.")

    def _on_publish(self, channel: str, data: t.Any) -> None:
        if self.channels.has(channel):
            self.channels.deliver(channel, json.loads(data))
