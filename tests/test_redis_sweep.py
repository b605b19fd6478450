"""The sweep of a dead worker's request streams (:mod:`flask_mcp.backends.redis.streams`),
on a real Redis: each running stream ends with the JSON-RPC error that says the worker
stopped, a large owned-streams set in chunks, and an ended stream leaves the set."""

from __future__ import annotations

import json
import typing as t

import pytest
from harness import new_session
from harness import redis_backends

from flask_mcp.backends.base import END
from flask_mcp.backends.base import MESSAGE
from flask_mcp.backends.redis.streams import SWEEP_CHUNK
from flask_mcp.runtime import settle

pytestmark = pytest.mark.redis


def stream_messages(backend: t.Any, sid: str, st: str) -> list[t.Any]:
    entries = backend.client.xrange(backend.keys.stream(sid, st)[0])
    return [(f[b"k"].decode(), f[b"m"].decode()) for _, f in entries]


def test_a_dead_workers_streams_end_in_chunks(redis_url: str) -> None:
    count = SWEEP_CHUNK * 2 + 100
    with redis_backends(redis_url, "sweep") as (dead, alive):
        sids = [new_session(dead, f"s{i}", limit=count + 10) for i in range(count)]
        for i, sid in enumerate(sids):
            dead.open_stream(sid, "r1", request_id=i)
            dead.append(sid, "r1", MESSAGE, {"jsonrpc": "2.0", "method": "x", "params": {}})
        owned = dead.keys.owned(dead.worker)
        assert dead.client.scard(owned) == count
        sizes: list[int] = []
        send = alive.commands.send

        def counting(batch: t.Any) -> list[t.Any]:
            sizes.append(sum(1 for name, *_ in batch.items if name == "orphan"))
            return t.cast("list[t.Any]", send(batch))

        alive.commands.send = counting  # type: ignore[method-assign]
        assert alive.logs.sweep([dead.worker]) == count
        assert 0 < max(sizes) <= SWEEP_CHUNK
        assert not dead.client.exists(owned)
        for i in (0, count // 2, count - 1):
            kinds = stream_messages(alive, sids[i], "r1")
            assert [k for k, _ in kinds] == [MESSAGE, MESSAGE, END]
            error = json.loads(kinds[1][1])
            assert error == settle.error_answer(i, settle.WORKER_STOPPED)  # as at exit


def test_an_ended_stream_leaves_the_owned_set(redis_url: str) -> None:
    """The end written on the in-memory path disowns the stream: the next beat takes it out
    of the set (its reply was read one field off, so every entry stayed)."""
    with redis_backends(redis_url, "owned", count=1) as (backend,):
        sids = [new_session(backend, f"s{i}") for i in range(5)]
        for i, sid in enumerate(sids):
            backend.open_stream(sid, "r1", request_id=i)
            backend.append(sid, "r1", MESSAGE, {"jsonrpc": "2.0", "id": i, "result": {}})
        owned = backend.keys.owned(backend.worker)
        assert backend.client.scard(owned) == 5
        for sid in sids[:3]:
            backend.append(sid, "r1", END)
        backend.beat()
        assert backend.client.scard(owned) == 2
        for sid in sids[3:]:
            backend.drop_stream(sid, "r1")
        backend.flush()  # the drops of streams written here wait for it
        backend.beat()
        assert backend.client.scard(owned) == 0
