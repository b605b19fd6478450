"""The Redis backend's per-process listener: pub/sub routing and the liveness beat.

Each process sharing the Redis runs one listener thread (a greenlet under
gevent) on one pub/sub connection. It receives ``notifications/cancelled``
from every worker and hands them to the process's cancel callback, fans the
messages of :meth:`RedisBackend.publish` out to this process's subscribers,
wakes this process's stream readers (:mod:`~flask_mcp.backends.redis.reader`;
all of them after a reconnection, since wake-ups may have been lost meanwhile),
makes this process forget the session records another changed
(:mod:`~flask_mcp.backends.redis.hot`; all of them after a reconnection),
beats: it marks the process alive and ends the running streams of
processes that stopped beating, and writes the busy counts the backend's
ledger owes, within a second.
"""

from __future__ import annotations

import contextlib
import logging
import select
import sys
import threading
import time
import typing as t

import redis

from ...errors import BackendFull
from ...errors import BackendUnavailable
from ..channels import ProcessChannels
from ..channels import QueueSubscription
from .codec import UNAVAILABLE
from .codec import loads
from .codec import text
from .codec import unavailable_reason
from .reader import RedisStreamReader

if t.TYPE_CHECKING:
    from .hot import HotSessions

logger = logging.getLogger("flask_mcp")


class ListenedBackend(t.Protocol):
    """What the listener uses of its :class:`~flask_mcp.backends.redis.RedisBackend`.

    A protocol, so that this module does not import the backend that imports it.
    """

    client: t.Any
    prefix: str
    heartbeat: float
    worker_timeout: float
    cancel_callback: t.Callable[[str, t.Any], None] | None

    @property
    def worker(self) -> str: ...

    @property
    def where(self) -> str: ...

    @property
    def pending(self) -> bool: ...

    def beat(self) -> None: ...

    def flush(self, everything: bool = False) -> None: ...


def _closed(pubsub: t.Any) -> bool:
    """Tell whether the pub/sub's connection was made and has no socket any more (closed)."""
    connection = getattr(pubsub, "connection", None)
    return connection is not None and getattr(connection, "_sock", False) is None


def _poll_for(sock: t.Any) -> t.Any:
    """Return a poll object that tells, without waiting, whether ``sock`` has unread data.

    The operating system's poll, even under gevent (whose patched one would switch).
    """
    monkey = sys.modules.get("gevent.monkey")
    make = monkey.get_original("select", "poll") if monkey is not None else select.poll
    poll = make()
    poll.register(sock.fileno(), select.POLLIN)
    return poll


class Listener:
    """Starts, after any fork, and keeps running this process's listener thread."""

    def __init__(
        self,
        backend: ListenedBackend,
        reader: RedisStreamReader | None = None,
        hot: HotSessions | None = None,
    ) -> None:
        self.backend = backend
        #: The stream reader woken by the ``P wake`` messages.
        self.reader = reader
        #: The session records served from memory, forgotten on ``P session`` messages.
        self.hot = hot
        #: The pub/sub connection, its socket and a poll of it, while subscribed.
        self._watched: tuple[t.Any, t.Any, t.Any] | None = None
        #: Whether the thread handled everything it read from its connection.
        self._caught_up = False
        self.lock = threading.Lock()
        self.channels = ProcessChannels()
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

    def quiet(self) -> bool:
        """Tell whether every message Redis sent this process so far has been handled.

        True while the listener handled every message it read (it waits for the
        next, or writes the ledger) and nothing is unread on its connection.
        Meaningful under gevent only, where the caller and the listener take turns
        (see :mod:`~flask_mcp.backends.redis.hot`).
        """
        watched = self._watched
        if not self._caught_up or watched is None:
            return False
        connection, sock, poll = watched
        return connection._sock is sock and not poll.poll(0) and self.live

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
        channels = [f"{backend.prefix}cancel", f"{backend.prefix}wake", f"{backend.prefix}session"]
        pub_prefix = f"{backend.prefix}pub:"
        backoff = 0.1
        while not stop.is_set():
            pubsub = backend.client.pubsub()
            try:
                pubsub.subscribe(*channels)
                pubsub.psubscribe(pub_prefix + "*")
                pending, last_beat = 4, 0.0
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
                    while message is not None:
                        self._caught_up = False  # read and not handled: no switch before this
                        kind = message["type"]
                        if kind in ("subscribe", "psubscribe"):
                            if self.hot is not None:
                                self.hot.clear()  # subscribed anew: changes may have been missed
                            pending -= 1
                            if pending <= 0:  # (again after redis-py reconnected on its own)
                                self._watch(pubsub.connection)
                            if pending == 0:
                                failed.clear()
                                ready.set()
                                backoff = 0.1
                                if self.reader is not None:
                                    self.reader.wake_all()  # what changed while unsubscribed
                                self.channels.resubscribed()  # (messages were lost meanwhile)
                        elif kind == "message":
                            self._on_message(text(message["channel"]), message["data"])
                        elif kind == "pmessage":
                            self._on_publish(
                                text(message["channel"])[len(pub_prefix) :], message["data"]
                            )
                        message = pubsub.get_message(timeout=0)  # the rest of what was read
                    self._caught_up = True  # nothing read is left unhandled
            except Exception as exc:
                self._watched = None
                self._caught_up = False
                if stop.is_set():  # closing: the backend closed the connection under it
                    break
                ready_before = ready.is_set()
                ready.clear()
                failed.set()
                unavailable = isinstance(exc, (*UNAVAILABLE, BackendUnavailable))
                # Another thread may close the connection (the client's pool closed while a
                # read revived this listener): redis-py then fails with what the closed
                # socket gave it, a TypeError among others. That is a lost connection too.
                if not unavailable and not _closed(pubsub):
                    logger.exception("The Redis listener of Flask-MCP failed; restarting it.")
                    stop.wait(1.0)
                    continue
                if ready_before and isinstance(
                    exc, (BackendFull, redis.exceptions.OutOfMemoryError)
                ):
                    # Not a lost connection: Redis answered, refusing a write (it is full).
                    full = isinstance(exc, BackendFull)
                    logger.warning(
                        "Redis refused a write of the pub/sub listener: %s",
                        exc if full else unavailable_reason(exc, backend.where),
                    )
                elif ready_before:
                    logger.warning(
                        "Lost the pub/sub connection to Redis at %s: %s",
                        backend.where,
                        exc if unavailable else "the connection was closed under the listener",
                    )
                stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
            finally:
                self._watched = None
                self._caught_up = False
                with contextlib.suppress(Exception):
                    pubsub.close()

    def _watch(self, connection: t.Any) -> None:
        """Note the subscribed connection for :meth:`quiet` (none: its socket is hidden)."""
        sock = getattr(connection, "_sock", None)
        try:
            self._watched = (connection, sock, _poll_for(sock)) if sock is not None else None
        except (OSError, ValueError, AttributeError):
            self._watched = None

    def _on_message(self, channel: str, data: t.Any) -> None:
        prefix = self.backend.prefix
        if channel == f"{prefix}session":
            if self.hot is not None:
                self.hot.forget_key(data)
        elif channel == f"{prefix}wake":
            if self.reader is not None:
                self.reader.wake(data)
        else:
            self._on_cancel(data)

    def _on_cancel(self, data: t.Any) -> None:
        callback = self.backend.cancel_callback
        if callback is None:
            return
        try:
            session_id, request_id = loads(data)
            callback(session_id, request_id)
        except Exception:
            logger.exception("Cancelling a request from another worker failed.")

    def _on_publish(self, channel: str, data: t.Any) -> None:
        if self.channels.has(channel):
            self.channels.deliver(channel, loads(data))
