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

import math
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
    loaded = False

    def load(self) -> None:
        if self.loaded:
            return
        from gevent import getcurrent
        from gevent import spawn
        from gevent._hub_local import get_hub_if_exists
        from gevent.hub import get_hub

        self.getcurrent, self.get_hub = getcurrent, get_hub
        self.spawn = spawn
        self.get_hub_if_exists = get_hub_if_exists
        self.loaded = True


_gevent = _Gevent()


def gevent_patched() -> bool:
    """Tell whether gevent patched ``threading``: threads are greenlets that take turns.

    A positive answer is remembered. :mod:`flask_mcp.runtime.concurrency` serves it as
    ``gevent_active`` (the backends may not import the runtime).
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
    from another thread. A wait allocates nothing: its timer and the
    callbacks are kept from one wait to the next, and the waiting greenlet is
    switched to directly (no ``Waiter``). With 10,000 streams waiting, the
    objects of their waits would otherwise outlive the young collections and
    fill the oldest generation, whose full collections then take a second.
    """

    __slots__ = (
        "_after",
        "_flag",
        "_greenlet",
        "_hub",
        "_on_io",
        "_on_set",
        "_on_timer",
        "_scheduled",
        "_timer",
    )

    def __init__(self) -> None:
        _gevent.load()
        self._flag = False
        self._greenlet: t.Any = None  # the greenlet waiting now
        self._hub: t.Any = None
        self._scheduled = False  # a wake-up of set() waits for the loop
        self._timer: t.Any = None
        self._after = -1.0
        # Bound once: the watchers keep them from one wait to the next.
        self._on_set = self._woken_by_set
        self._on_timer = self._woken_by_timer
        self._on_io = self._woken_by_client

    def set(self) -> None:
        """Raise the flag; wake the waiter, if one waits."""
        self._flag = True
        if self._greenlet is None or self._scheduled:
            return
        self._scheduled = True
        hub = self._hub
        if _gevent.get_hub_if_exists() is not hub:  # another thread
            hub.loop.run_callback_threadsafe(self._on_set)
            return
        # One loop callback wakes every flag set in this turn (a wake-up message sets
        # thousands), as gevent's Event does for its links.
        woken = _woken.get(hub)
        if woken is None:
            woken = _woken[hub] = []
        woken.append(self)
        if len(woken) == 1:
            hub.loop.run_callback(_wake_all, woken)

    def clear(self) -> None:
        """Lower the flag."""
        self._flag = False

    def is_set(self) -> bool:
        """Tell whether the flag is raised."""
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the flag is raised or ``timeout`` seconds passed; return the flag.

        A wait of half a second or more may last up to 10 ms longer (its timer is kept).

        :raises ClientReadable: the client socket the calling greenlet watches
            (:func:`watch_client`) became readable first.
        """
        if self._flag:
            return True
        hub = _gevent.get_hub()
        current = _gevent.getcurrent()
        timer = io = None
        if timeout is not None:
            timer = self._timer_for(hub.loop, timeout)
            timer.start(self._on_timer)
        watch = _watches.get(current) if _watches else None
        if watch is not None:
            io = watch.io_for(hub.loop)
            io.start(self._on_io)
            watch.armed = True
        self._hub, self._greenlet = hub, current
        try:
            woke = hub.switch()
        finally:
            self._greenlet = None
            if timer is not None:
                timer.stop()
            if io is not None:
                io.stop()
        if woke is _READABLE and not self._flag:
            raise ClientReadable
        return self._flag

    def _timer_for(self, loop: t.Any, timeout: float) -> t.Any:
        """Return a stopped timer of ``timeout`` seconds: the last one, if it fits."""
        after = max(timeout, 0.0)
        if after >= 0.5:  # rounded up to 10 ms, so the waits of a stream share one timer
            after = math.ceil(after * 100) / 100
        timer = self._timer
        if timer is None or after != self._after or timer.loop is not loop:
            if timer is not None:
                timer.close()
            timer = self._timer = loop.timer(after)
            self._after = after
        return timer

    # The callbacks run in the hub; one that comes after another woke the wait finds no
    # greenlet waiting and does nothing (or, if the same greenlet waits again by then,
    # wakes it early: a wait may always return early).

    def _woken_by_set(self) -> None:
        self._scheduled = False
        self._switch(True)

    def _woken_by_timer(self) -> None:
        self._switch(False)

    def _woken_by_client(self) -> None:
        self._switch(_READABLE)

    def _switch(self, value: t.Any) -> None:
        greenlet, self._greenlet = self._greenlet, None
        if greenlet is not None:
            greenlet.switch(value)


#: Per hub, the flags set in this turn of its loop, woken by one callback (:func:`_wake_all`).
_woken: dict[t.Any, list[GreenWakeup]] = {}


def _wake_all(woken: list[GreenWakeup]) -> None:
    """Wake the greenlets of the flags set since the last call (runs in their hub)."""
    while woken:
        flags = woken[:]
        del woken[:]
        for flag in flags:
            flag._woken_by_set()


class ClientReadable(Exception):
    """The watched client socket became readable while a read waited (see :func:`watch_client`)."""


class ClientWatch:
    """A greenlet's client socket, watched by its reads' waits (see :func:`watch_client`)."""

    __slots__ = ("_io", "armed", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        #: Set by a wait that watched the socket: the backend's reads honour the watch.
        self.armed = False
        self._io: t.Any = None

    def io_for(self, loop: t.Any) -> t.Any:
        """Return the stopped watcher of the socket becoming readable, kept across waits."""
        if self._io is None or self._io.loop is not loop:
            self._io = loop.io(self.fd, 1)  # 1: readable (a goodbye reads as EOF)
        return self._io

    def close(self) -> None:
        """Let go of the socket's watcher (the socket is about to close)."""
        if self._io is not None:
            self._io.close()
            self._io = None


#: The watches of the greenlets reading now, by greenlet.
_watches: dict[t.Any, ClientWatch] = {}
_READABLE: t.Any = object()


def watch_client(fd: int | ClientWatch) -> ClientWatch:
    """Make the calling greenlet's :class:`GreenWakeup` waits end when ``fd`` becomes readable.

    Until :func:`unwatch_client`, such a wait raises :class:`ClientReadable` when
    the client's socket becomes readable (it left, or sent data), so a GET stream
    needs not wake every second to check on its client: one event-loop watch does.
    The watch's ``armed`` tells afterwards whether a wait used it (a backend
    whose reads do not wait on a :class:`GreenWakeup` never does). Under gevent only.

    :param fd: the socket's descriptor, or the watch of an earlier read of the same
        socket (its event-loop watcher is kept, so a read allocates nothing).
    """
    _gevent.load()
    watch = fd if isinstance(fd, ClientWatch) else ClientWatch(fd)
    watch.armed = False
    _watches[_gevent.getcurrent()] = watch
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
