"""The stream reader's wake-up flag under gevent (flask_mcp.backends._wakeup)."""

from __future__ import annotations

import threading

import gevent

from flask_mcp.backends._wakeup import GreenWakeup
from flask_mcp.backends._wakeup import new_wakeup


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
    waiting = gevent.spawn(flag.wait, 30)
    gevent.sleep(0)  # the waiter waits now
    flag.set()
    assert waiting.get(timeout=10) is True


def test_set_twice_and_a_late_timer_are_harmless() -> None:
    flag = GreenWakeup()
    waiting = gevent.spawn(flag.wait, 0.05)
    gevent.sleep(0)
    flag.set()
    flag.set()
    assert waiting.get(timeout=10) is True
    gevent.sleep(0.1)  # past the first wait's timer
    flag.clear()
    assert flag.wait(0.01) is False  # a fresh wait sees nothing stale


def test_set_from_another_thread_wakes_the_waiter() -> None:
    flag = GreenWakeup()
    waiting = gevent.spawn(flag.wait, 30)
    gevent.sleep(0)
    threading.Thread(target=flag.set).start()
    assert waiting.get(timeout=10) is True


def test_a_killed_waiter_leaves_the_flag_usable() -> None:
    flag = GreenWakeup()
    waiting = gevent.spawn(flag.wait, 30)
    gevent.sleep(0)
    waiting.kill()
    flag.set()
    assert flag.wait(0) is True


def test_without_gevent_patching_a_threading_event() -> None:
    # The test process is not monkey-patched: readers wait on a plain Event.
    assert isinstance(new_wakeup(), threading.Event)
