"""The stream reader's wake-up flag under gevent (flask_mcp.wakeup)."""

from __future__ import annotations

import gc
import threading

import gevent
import gevent.hub

from flask_mcp.wakeup import ClientReadable
from flask_mcp.wakeup import GreenWakeup
from flask_mcp.wakeup import new_wakeup
from flask_mcp.wakeup import unwatch_client
from flask_mcp.wakeup import watch_client


def start_waiting(flag: GreenWakeup, timeout: float) -> gevent.Greenlet:
    """Spawn a greenlet waiting on ``flag`` and let it start waiting."""
    waiting = gevent.spawn(flag.wait, timeout)
    gevent.sleep(0)
    return waiting


def test_set_before_wait_returns_at_once() -> None:
    flag = GreenWakeup()
    flag.set()
    assert flag.wait(10) is True
    flag.clear()
    assert flag.is_set() is False


def test_timeout_returns_false() -> None:
    assert GreenWakeup().wait(0.01) is False


def test_set_from_another_greenlet_wakes_the_waiter() -> None:
    flag = GreenWakeup()
    waiting = start_waiting(flag, 30)
    flag.set()
    assert waiting.get(timeout=10) is True


def test_set_twice_and_a_late_timer_are_harmless() -> None:
    flag = GreenWakeup()
    waiting = start_waiting(flag, 0.05)
    flag.set()
    flag.set()
    assert waiting.get(timeout=10) is True
    gevent.sleep(0.1)  # past the first wait's timer
    flag.clear()
    assert flag.wait(0.01) is False  # a fresh wait sees nothing stale


def test_set_from_another_thread_wakes_the_waiter() -> None:
    flag = GreenWakeup()
    waiting = start_waiting(flag, 30)
    threading.Thread(target=flag.set).start()
    assert waiting.get(timeout=10) is True


def test_a_killed_waiter_leaves_the_flag_usable() -> None:
    flag = GreenWakeup()
    waiting = start_waiting(flag, 30)
    waiting.kill()
    flag.set()
    assert flag.wait(0) is True


def test_without_gevent_patching_a_threading_event() -> None:
    # The test process is not monkey-patched: readers wait on a plain Event.
    assert isinstance(new_wakeup(), threading.Event)


# -- a wait that watches the client's socket (GET streams under gevent) ------------------------


def test_a_watched_wait_ends_when_the_client_leaves() -> None:
    from gevent import socket as gsocket

    server_side, client_side = gsocket.socketpair()
    with server_side, client_side:
        watch = watch_client(server_side.fileno())
        try:
            waiting = gevent.spawn(_wait_watching, server_side.fileno(), 30)
            gevent.sleep(0)
            client_side.close()
            assert isinstance(waiting.get(timeout=10), ClientReadable)
        finally:
            unwatch_client()
        assert not watch.armed  # another greenlet's watch: this one never waited


def _wait_watching(fd: int, timeout: float) -> object:
    watch = watch_client(fd)
    try:
        GreenWakeup().wait(timeout)
    except ClientReadable as exc:
        assert watch.armed
        return exc
    finally:
        unwatch_client()
    return None


def test_an_unwatched_wait_ignores_the_socket() -> None:
    from gevent import socket as gsocket

    server_side, client_side = gsocket.socketpair()
    with server_side, client_side:
        client_side.close()
        assert GreenWakeup().wait(0.01) is False  # no watch: the timeout ends it


def test_a_wake_up_wins_over_a_readable_socket() -> None:
    from gevent import socket as gsocket

    server_side, client_side = gsocket.socketpair()
    with server_side, client_side:
        flag = GreenWakeup()
        flag.set()
        client_side.close()
        watch_client(server_side.fileno())
        try:
            assert flag.wait(30) is True
        finally:
            unwatch_client()


def test_a_late_wake_up_does_not_disturb_the_greenlet_elsewhere() -> None:
    """A wake-up callback that comes once the wait ended (a timer won) switches nothing."""
    flag = GreenWakeup()
    slept: list[bool] = []

    def waiter() -> None:
        assert flag.wait(0.01) is False
        gevent.sleep(0.2)  # blocked elsewhere when the stale callback runs
        slept.append(True)

    running = gevent.spawn(waiter)
    gevent.sleep(0.05)  # its wait timed out; it sleeps now
    gevent.get_hub().loop.run_callback(flag._on_set)  # as a set() scheduled too late
    gevent.sleep(0.05)
    assert not slept  # still sleeping: not switched into
    running.get(timeout=10)
    assert slept == [True]


def test_waiting_again_allocates_nothing() -> None:
    """Thousands of streams wait at once: objects made for each wait would outlive the young
    collections and fill the oldest generation (whose full collections then take a second).
    A flag's next wait reuses its timer and callbacks, and makes no ``Waiter``."""
    flags = [GreenWakeup() for _ in range(200)]

    def waiter(flag: GreenWakeup) -> None:
        while True:
            flag.wait(5.0)
            flag.clear()

    def waiters_alive() -> int:
        return sum(isinstance(o, gevent.hub.Waiter) for o in gc.get_objects())

    greenlets = [gevent.spawn(waiter, flag) for flag in flags]
    try:
        gevent.sleep(0.01)  # every greenlet waits (its first wait made its timer)
        timers = [flag._timer for flag in flags]
        for flag in flags:
            flag.set()
        gevent.sleep(0.01)  # each woke and waits again
        assert all(flag._timer is timer for flag, timer in zip(flags, timers, strict=True))
        assert waiters_alive() < len(flags) / 10
    finally:
        gevent.killall(greenlets)
