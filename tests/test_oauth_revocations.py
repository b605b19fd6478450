"""Revocations heard on the backend's pub/sub (flask_mcp.contrib.oauth_server.revocations).

Two :class:`KnownLiveFamilies` on one backend stand for two workers: the backend's
pub/sub is the one the Redis backend offers every process (here in memory, with
:meth:`caught_up` and the subscription's generation under the test's control). The
Redis backend's own ``caught_up`` under gevent is exercised end to end by
tests/test_e2e_oauth_server.py (2 gevent workers).
"""

from __future__ import annotations

import time
import typing as t

import pytest

pytest.importorskip("authlib")

from flask_mcp.backends.base import Subscription
from flask_mcp.backends.memory import MemoryBackend
from flask_mcp.contrib.oauth_server import revocations
from flask_mcp.contrib.oauth_server.revocations import CHANNEL
from flask_mcp.contrib.oauth_server.revocations import KnownLiveFamilies


class SharedBackend(MemoryBackend):
    """A memory backend that says it is shared: its pub/sub stands for Redis's."""

    multiprocess = True

    def __init__(self) -> None:
        super().__init__()
        self.live_subscription = True
        self.fail_subscribe = False

    def caught_up(self) -> bool:
        return self.live_subscription

    def subscribe(self, channel: str) -> t.Any:
        if self.fail_subscribe:
            raise ConnectionError("Redis is down")
        return super().subscribe(channel)


class Storage:
    """The revocation records, counting the reads."""

    def __init__(self) -> None:
        self.revoked: set[str] = set()
        self.reads = 0

    def check(self, family: str) -> t.Callable[[], bool]:
        def revoked() -> bool:
            self.reads += 1
            return family in self.revoked

        return revoked

    def revoke(self, backend: SharedBackend, family: str, by: KnownLiveFamilies) -> None:
        """What AppServer.revoke_family does: the record, then the message."""
        self.revoked.add(family)
        by.heard(family)
        backend.publish(CHANNEL, {"family": family})


def later() -> float:
    return time.time() + 3600


def test_known_family_is_served_without_reading_the_storage() -> None:
    backend, storage = SharedBackend(), Storage()
    worker = KnownLiveFamilies(lambda: backend)
    assert worker.live("f1", later(), storage.check("f1"))
    assert worker.live("f1", later(), storage.check("f1"))
    assert worker.live("f1", later(), storage.check("f1"))
    assert storage.reads == 1


def test_revocation_on_one_worker_refuses_the_token_on_the_other_at_once() -> None:
    backend, storage = SharedBackend(), Storage()
    worker_a = KnownLiveFamilies(lambda: backend)
    worker_b = KnownLiveFamilies(lambda: backend)
    for worker in (worker_a, worker_b):
        assert worker.live("f1", later(), storage.check("f1"))
        assert worker.live("f2", later(), storage.check("f2"))
    storage.revoke(backend, "f1", by=worker_a)
    assert not worker_b.live("f1", later(), storage.check("f1"))
    assert not worker_a.live("f1", later(), storage.check("f1"))
    assert worker_b.live("f2", later(), storage.check("f2"))  # the others still serve
    reads = storage.reads
    assert not worker_b.live("f1", later(), storage.check("f1"))  # never kept once revoked
    assert storage.reads == reads + 1


def test_revocation_heard_while_the_storage_answered_is_not_overwritten() -> None:
    backend, storage = SharedBackend(), Storage()
    worker_a = KnownLiveFamilies(lambda: backend)
    worker_b = KnownLiveFamilies(lambda: backend)
    assert worker_a.live("f0", later(), storage.check("f0"))  # subscribed

    def read_then_revoked() -> bool:
        storage.reads += 1
        storage.revoke(backend, "f1", by=worker_a)  # after the read, before it is kept
        return False

    assert worker_b.live("f1", later(), read_then_revoked)
    assert "f1" not in worker_b.families
    assert not worker_b.live("f1", later(), storage.check("f1"))


def test_worker_whose_subscription_is_not_live_reads_the_storage() -> None:
    backend, storage = SharedBackend(), Storage()
    worker = KnownLiveFamilies(lambda: backend)
    assert worker.live("f1", later(), storage.check("f1"))
    backend.live_subscription = False  # dropped, or messages unread
    storage.revoked.add("f1")  # revoked while nothing was heard
    assert not worker.live("f1", later(), storage.check("f1"))
    assert storage.reads == 2


def test_a_new_subscription_forgets_every_family() -> None:
    backend, storage = SharedBackend(), Storage()
    worker = KnownLiveFamilies(lambda: backend)
    assert worker.live("f1", later(), storage.check("f1"))
    storage.revoked.add("f1")  # the message was lost while the subscription was down
    backend._channels.resubscribed()
    assert not worker.live("f1", later(), storage.check("f1"))


def test_no_subscription_means_a_storage_read(caplog: pytest.LogCaptureFixture) -> None:
    backend, storage = SharedBackend(), Storage()
    backend.fail_subscribe = True
    worker = KnownLiveFamilies(lambda: backend)
    assert worker.live("f1", later(), storage.check("f1"))
    assert worker.live("f1", later(), storage.check("f1"))
    assert storage.reads == 2
    assert "Cannot hear token revocations" in caplog.text


def test_single_process_backend_reads_the_storage() -> None:
    storage = Storage()
    worker = KnownLiveFamilies(lambda: MemoryBackend())
    assert worker.live("f1", later(), storage.check("f1"))
    assert worker.live("f1", later(), storage.check("f1"))
    assert storage.reads == 2
    no_backend = KnownLiveFamilies(lambda: None)
    assert no_backend.live("f1", later(), storage.check("f1"))
    assert storage.reads == 3


def test_entries_end_with_the_token_and_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    backend, storage = SharedBackend(), Storage()
    worker = KnownLiveFamilies(lambda: backend)
    assert worker.live("short", time.time() - 1, storage.check("short"))  # expired already
    assert worker.live("short", time.time() - 1, storage.check("short"))
    assert storage.reads == 2
    monkeypatch.setattr(revocations, "MAX_FAMILIES", 3)
    for index in range(5):
        worker.live(f"f{index}", later(), storage.check(f"f{index}"))
    assert list(worker.families) == ["f2", "f3", "f4"]


def test_subscription_protocol_is_the_backends() -> None:
    subscription: Subscription = SharedBackend().subscribe(CHANNEL)
    assert subscription.get(0) is None


@pytest.mark.redis
def test_redis_backend_is_not_caught_up_with_threads(redis_url: str) -> None:
    from flask_mcp.backends.redis import RedisBackend

    backend = RedisBackend.from_url(redis_url)
    try:
        backend.subscribe(CHANNEL)
        assert not backend.caught_up()  # the listener reads in parallel: cannot tell
    finally:
        backend.close()
