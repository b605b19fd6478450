"""Hot sessions (:mod:`flask_mcp.backends.redis.hot`): which records serve without a round
trip, how a change anywhere makes a process forget one, and the traffic the ledger owes.

The requests served from memory under gevent, end to end: ``test_e2e_hot_sessions``.
"""

from __future__ import annotations

import time
import typing as t

import pytest
from harness import listening
from harness import new_session
from harness import redis_backends

from flask_mcp.backends.base import SessionRecord
from flask_mcp.backends.redis import hot as _redis_hot
from flask_mcp.backends.redis.batch import Ledger
from flask_mcp.backends.redis.hot import HotSessions


@pytest.fixture
def under_gevent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep entries as a gevent worker does (this test process is not patched)."""
    monkeypatch.setattr(_redis_hot, "cooperative", lambda: True)


def record(
    sid: str = "s1", initialized: bool = True, created: float | None = None
) -> SessionRecord:
    return SessionRecord(
        id=sid,
        protocol_version="2025-11-25",
        initialized=initialized,
        created=time.time() if created is None else created,
    )


def hot(quiet: bool = True, **options: t.Any) -> HotSessions:
    options = {"idle_timeout": None, "max_lifetime": None, **options}
    return HotSessions(lambda: quiet, **options)


def test_an_initialized_record_serves_while_the_listener_is_quiet(under_gevent: None) -> None:
    sessions = hot()
    kept = record()
    sessions.keep("s1", kept, sessions.changes, time.monotonic())
    assert sessions.get("s1") is kept
    sessions.keep("s2", record("s2", initialized=False), sessions.changes, time.monotonic())
    assert sessions.get("s2") is None  # the handshake is not over: Redis decides
    assert hot(quiet=False).get("s1") is None
    loud = hot(quiet=False)
    loud.keep("s1", record(), loud.changes, time.monotonic())
    assert loud.get("s1") is None  # a message is unread or unhandled: ask Redis


def test_a_change_while_the_lookup_was_in_flight_keeps_nothing(under_gevent: None) -> None:
    sessions = hot()
    before = sessions.changes
    sessions.forget("other")  # any change: the reply may predate it
    sessions.keep("s1", record(), before, time.monotonic())
    assert "s1" not in sessions.entries


def test_an_entry_serves_until_its_age_and_its_lifetime(under_gevent: None) -> None:
    sessions = hot(idle_timeout=10.0)
    assert sessions.max_age == 5.0
    sessions.keep("s1", record(), sessions.changes, time.monotonic() - 6.0)
    assert sessions.get("s1") is None
    sessions.confirm("s1", True, time.monotonic())  # the listener wrote its traffic
    assert sessions.get("s1") is not None
    sessions.confirm("s1", False, time.monotonic())  # Redis no longer has it
    assert "s1" not in sessions.entries

    lived = hot(max_lifetime=60.0)
    lived.keep("old", record("old", created=time.time() - 61), lived.changes, time.monotonic())
    assert lived.get("old") is None  # past its lifetime: the reaper ends it


def test_forget_key_clear_and_the_bound(
    under_gevent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_redis_hot, "MAX_ENTRIES", 2)
    sessions = hot()
    for sid in ("a", "b", "c"):
        sessions.keep(sid, record(sid), sessions.changes, time.monotonic())
    assert list(sessions.entries) == ["b", "c"]  # the oldest went
    sessions.forget_key(b"mcp:{b}:s")
    assert list(sessions.entries) == ["c"]
    sessions.clear()
    assert sessions.entries == {}


def test_entries_are_kept_only_under_gevent() -> None:
    sessions = hot()
    sessions.keep("s1", record(), sessions.changes, time.monotonic())
    assert sessions.entries == {}  # a threaded worker: the listener and requests overlap


def test_the_ledger_owes_the_traffic_it_served() -> None:
    ledger = Ledger()
    ledger.served("s1")
    assert ledger.surplus("s1") == 0  # Redis has not counted it, nor taken it ahead
    assert ledger.claim("s1")  # the request's +1: already owed
    assert ledger.release("s1")
    assert ledger.pending
    due = ledger.due()
    assert due == {"s1": 0}  # its count went up and down: only its last_seen
    assert not ledger.pending
    ledger.give_back(due)  # Redis was unreachable
    assert ledger.due() == {"s1": 0}
    ledger.served("s2")
    assert ledger.take("s2") == 1 and not ledger.seen  # the next lookup writes it


@pytest.mark.redis
def test_a_change_through_another_worker_is_forgotten(redis_url: str, under_gevent: None) -> None:
    with redis_backends(redis_url, "hot") as (here, there):
        sid = new_session(here)
        here.update_session(sid, initialized=True)
        listening(here)
        for change in (
            lambda: there.update_session(sid, log_level="debug"),
            lambda: there.add_subscription(sid, "test://x"),
            lambda: there.delete_session(sid),
        ):
            found = here.get_session(sid, touch=True)
            assert found is not None and sid in here.hot.entries
            change()
            deadline = time.monotonic() + 5
            while sid in here.hot.entries:  # the listener reads the announcement
                assert time.monotonic() < deadline, "the change was not announced"
                time.sleep(0.01)
        assert here.get_session(sid, touch=True) is None


@pytest.mark.redis
def test_the_listener_is_quiet_only_with_nothing_unread(redis_url: str) -> None:
    with redis_backends(redis_url, "quiet", count=1) as (backend,):
        listening(backend)
        deadline = time.monotonic() + 5
        while not backend.listener.quiet():
            assert time.monotonic() < deadline, "the listener never caught up"
            time.sleep(0.01)
        backend.listener._caught_up = False  # reading a message, as the thread does
        assert not backend.listener.quiet()
        backend.close()
        assert not backend.listener.quiet()
