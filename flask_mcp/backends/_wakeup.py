"""A one-waiter wake-up flag, cheaper than :class:`threading.Event` under gevent.

An idle stream reader waits for a wake-up or its timeout (a GET stream's
liveness interval, one second) over and over: at 10,000 streams that is
10,000 waits a second. Under gevent, :class:`threading.Event` is gevent's
``Event``, whose timed wait arms a ``Timeout`` that expires by raising an
exception into the waiting greenlet. :class:`GreenWakeup` arms a plain loop
timer that switches back instead, and its :meth:`~GreenWakeup.set` wakes the
one waiter with a loop callback. :func:`new_wakeup` picks it when gevent has
patched the process, else a :class:`threading.Event`.

A greenlet may also have its waits watch its client's socket
(:func:`watch_client`): a GET stream's read then ends, with
:class:`ClientReadable`, as soon as the client leaves, so the stream need not
wake every second to check on it (:class:`flask_mcp.transport.sse.StreamReader`).
"""

from __future__ import annotations

import sys
import threading
import typing as t

_patched = False


class _Gevent:
    """gevent's functions the flags use, imported once (an import in a hot path costs)."""

    getcurrent: t.Callable[[], t.Any]
    spawn: t.Callable[..., t.Any]
    get_hub: t.Callable[[], t.Any]
    get_hub_if_exists: t.Callable[[], t.Any]
    Waiter: t.Callable[[t.Any], t.Any]
    loaded = False

    def load(self) -> None:
        if self.loaded:
            return
        from gevent import getcurrent
        from gevent import spawn
        from gevent._hub_local import get_hub_if_exists
        from gevent.hub import Waiter
        from gevent.hub import get_hub

        self.getcurrent, self.get_hub, self.Waiter = getcurrent, get_hub, Waiter
        self.spawn = spawn
        self.get_hub_if_exists = get_hub_if_exists
        self.loaded = True


_gevent = _Gevent()


def gevent_patched() -> bool:
    """Tell whether gevent patched ``threading``: threads are greenlets that take turns.

    A positive answer is remembered. The twin of
    :func:`flask_mcp.runtime.concurrency.gevent_active`, which the backends may not import.
    """
    global _patched
    if not _patched:
        monkey = sys.modules.get("gevent.monkey")  # not imported: nothing is patched
        _patched = monkey is not None and bool(monkey.is_module_patched("threading"))
    return _patched


class Wakeup(t.Protocol):
    """What a stream reader uses of its wake-up: a flag with a timed wait."""

    def set(self) -> None: ...

    def clear(self) -> None: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class GreenWakeup:
    """A flag one greenlet at a time waits on (see the module's description).

    :meth:`set` may be called from any greenlet of the waiter's thread, or
    from another thread.
    """

    __slots__ = ("_flag", "_waiter")

    def __init__(self) -> None:
        _gevent.load()
        self._flag = False
        self._waiter: t.Any = None

    def set(self) -> None:
        """Raise the flag; wake the waiter, if one waits."""
        self._flag = True
        waiter, self._waiter = self._waiter, None
        if waiter is None:
            return
        loop = waiter.hub.loop
        if _gevent.get_hub_if_exists() is waiter.hub:
            loop.run_callback(waiter.switch, True)
        else:  # another thread
            loop.run_callback_threadsafe(waiter.switch, True)

    def clear(self) -> None:
        """Lower the flag."""
        self._flag = False

    def is_set(self) -> bool:
        """Tell whether the flag is raised."""
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the flag is raised or ``timeout`` seconds passed; return the flag.

        :raises ClientReadable: the client socket the calling greenlet watches
            (:func:`watch_client`) became readable first.
        """
        if self._flag:
            return True
        hub = _gevent.get_hub()
        waiter = _gevent.Waiter(hub)
        self._waiter = waiter
        timer = io = None
        if timeout is not None:
            timer = hub.loop.timer(max(timeout, 0.0))
            # A wake-up that comes with the timer finds this waiter gone: harmless.
            timer.start(waiter.switch, False)
        watch = _watches.get(_gevent.getcurrent()) if _watches else None
        if watch is not None:
            io = hub.loop.io(watch.fd, 1)  # 1: readable (a goodbye reads as EOF)
            io.start(waiter.switch, _READABLE)
            watch.armed = True
        try:
            woke = waiter.get()
        finally:
            if timer is not None:
                timer.close()
            if io is not None:
                io.close()
            if self._waiter is waiter:
                self._waiter = None
        if woke is _READABLE and not self._flag:
            raise ClientReadable
        return self._flag


class ClientReadable(Exception):
    """The watched client socket became readable while a read waited (see :func:`watch_client`)."""


class ClientWatch:
    """A greenlet's client socket, watched by its reads' waits (see :func:`watch_client`)."""

    __slots__ = ("armed", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        #: Set by a wait that watched the socket: the backend's reads honour the watch.
        self.armed = False


#: The watches of the greenlets reading now, by greenlet.
_watches: dict[t.Any, ClientWatch] = {}
_READABLE: t.Any = object()


def watch_client(fd: int) -> ClientWatch:
    """Make the calling greenlet's :class:`GreenWakeup` waits end when ``fd`` becomes readable.

    Until :func:`unwatch_client`, such a wait raises :class:`ClientReadable` when
    the client's socket becomes readable (it left, or sent data), so a GET stream
    needs not wake every second to check on its client: one event-loop watch does.
    The watch's ``armed`` tells afterwards whether a wait used it (a backend
    whose reads do not wait on a :class:`GreenWakeup` never does). Under gevent only.
    """
    _gevent.load()
    watch = _watches[_gevent.getcurrent()] = ClientWatch(fd)
    return watch


def unwatch_client() -> None:
    """End the calling greenlet's :func:`watch_client`."""
    _watches.pop(_gevent.getcurrent(), None)


def can_watch_clients() -> bool:
    """Tell whether :func:`watch_client` works here (gevent patched the process)."""
    return gevent_patched()


def run_soon(function: t.Callable[[], object]) -> None:
    """Run ``function`` in a new greenlet once the greenlets ready now have had their turn
    (under gevent only: see :func:`gevent_patched`)."""
    _gevent.load()
    _gevent.spawn(function)


def new_wakeup() -> Wakeup:
    """Return a :class:`GreenWakeup` when gevent patched the process, else a threading Event."""
    if gevent_patched():
        return GreenWakeup()
    return threading.Event()


__all__ = [
    "ClientReadable",
    "ClientWatch",
    "GreenWakeup",
    "Wakeup",
    "can_watch_clients",
    "gevent_patched",
    "new_wakeup",
    "run_soon",
    "unwatch_client",
    "watch_client",
]
