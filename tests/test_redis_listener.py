"""The pub/sub listener of the Redis backend (``flask_mcp.backends.redis.listener``)."""

from __future__ import annotations

import contextlib
import logging
import time

import pytest
from harness import free_port
from harness import listening
from harness import redis_backends
from harness import redis_client
from harness import redis_server


@pytest.mark.redis
def test_a_write_a_full_redis_refuses_is_logged_as_such(caplog: pytest.LogCaptureFixture) -> None:
    """A full Redis (``maxmemory``, ``noeviction``) refusing the listener's write (its
    beat) is logged as what it is, Redis refusing a write because it is full, not as
    "Lost the pub/sub connection to Redis": the connection is fine."""
    port = free_port()
    full = ["--maxmemory-policy", "noeviction"]
    with redis_server(port, missing="needs redis-server", extra_args=full):
        url = f"redis://127.0.0.1:{port}/0"
        with redis_backends(url, "full", count=1) as (backend,):
            backend.heartbeat = 0.05  # a beat (a write) soon after Redis is full
            listening(backend)
            admin = redis_client(url)
            with contextlib.closing(admin), caplog.at_level(logging.WARNING, logger="flask_mcp"):
                admin.config_set("maxmemory", 1)  # over it: every write is refused
                deadline = time.monotonic() + 30  # guards a hang, measures nothing
                while not any("pub/sub" in r.getMessage() for r in caplog.records):
                    assert time.monotonic() < deadline, "the listener never wrote"
                    time.sleep(0.02)
                admin.config_set("maxmemory", 0)
    messages = [record.getMessage() for record in caplog.records]
    refused = [m for m in messages if "pub/sub" in m]
    assert refused[0].startswith("Redis refused a write of the pub/sub listener: Redis at")
    assert "is full" in refused[0] and "Raise its maxmemory" in refused[0], refused
    assert not any("Lost the pub/sub connection" in m for m in messages), messages
