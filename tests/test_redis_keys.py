"""The Redis backend's key layout (one cluster slot per session) and its busy-count ledger.

No Redis needed: slots are computed with redis-py's own CRC16.
"""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from flask_mcp.backends._redis_batch import Ledger
from flask_mcp.backends._redis_keys import Keys
from flask_mcp.backends._redis_url import CLUSTER_SCHEMES
from flask_mcp.backends.base import GENERAL_STREAM
from flask_mcp.backends.base import MESSAGE
from flask_mcp.backends.base import SessionRecord
from flask_mcp.backends.memory import MemoryBackend


def slots(keys: list[str]) -> set[int]:
    return {key_slot(key.encode()) for key in keys}


@pytest.mark.parametrize("sid", ["abc", "x" * 32, "a}b", "a{b", "g", "with:colon"])
def test_every_key_of_a_session_shares_one_slot(sid: str) -> None:
    keys = Keys("mcp:")
    every = [
        *keys.session(sid),
        *keys.stream(sid, "r1"),
        *keys.stream(sid, "{odd}"),
        *keys.answer(sid, '"{id}"'),
        keys.record(sid),
        keys.meta(sid),
    ]
    assert len(slots(every)) == 1
    assert all(key.startswith("mcp:") for key in every)


def test_shared_keys_share_a_slot_of_their_own() -> None:
    keys = Keys("app:")
    shared = [
        keys.seen,
        keys.born,
        keys.hs,
        keys.workers,
        keys.alive,
        keys.reaping,
        keys.owned("host:1:ab"),
        keys.own("addr:1"),
        keys.tasks("live"),
        keys.tasks("alice"),
    ]
    assert len(slots(shared)) == 1
    assert keys.task("t1") == "app:{t1}:task"


@pytest.mark.parametrize("prefix", ["a{b:", "a}b:", "{x}:"])
def test_a_prefix_with_braces_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="must not contain"):
        Keys(prefix)


def test_cluster_url_schemes() -> None:
    assert CLUSTER_SCHEMES == {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def test_the_ledger_never_lets_redis_count_less_than_is_running() -> None:
    ledger = Ledger()
    ledger.reserve("s")  # a lookup counted a request ahead: Redis +1
    assert ledger.surplus("s") == 1
    assert ledger.claim("s")  # the request takes it: no round trip
    assert not ledger.claim("s")  # a second request must ask Redis
    assert ledger.surplus("s") == 0
    assert ledger.release("s")  # its end is owed
    assert not ledger.release("s")  # a request that did not claim writes its own -1
    assert ledger.surplus("s") == 1
    assert ledger.due() == {"s": -1}
    assert not ledger.pending


def test_unclaimed_credits_are_given_back() -> None:
    ledger = Ledger()
    ledger.reserve("s")
    assert ledger.due() == {}  # young: a request may still claim it
    assert ledger.due(everything=True) == {"s": -1}
    ledger.owe("t", -2)
    assert ledger.take("t") == -2 and ledger.take("t") == 0


def test_memory_backend_appends_and_reads_many() -> None:
    backend = MemoryBackend()
    for sid in ("a", "b"):
        backend.create_session(SessionRecord(id=sid, protocol_version="2025-11-25"), 10)
    events = [(sid, GENERAL_STREAM, MESSAGE, {"n": 1}) for sid in ("a", "b")]
    assert backend.append_many(events) == [1, 1]
    assert set(backend.get_sessions(["a", "b", "nope"])) == {"a", "b"}
