"""The Redis backend's pipelines (:class:`~flask_mcp.backends.redis.batch.Batch`): a
keyless command such as the ``PUBLISH`` announcing what the others wrote takes effect
after them, on a Redis Cluster (which runs a pipeline node by node in no set order) and
when a script Redis had forgotten runs again after its pipeline."""

from __future__ import annotations

import threading
import time
import typing as t
import uuid

import pytest
from harness import delete_keys
from harness import free_port
from harness import redis_client
from harness import redis_server

pytestmark = pytest.mark.redis


def _record_pipelines(client: t.Any) -> list[list[str]]:
    """Wrap ``client.pipeline``: each executed pipeline's command names, in order."""
    runs: list[list[str]] = []
    real = client.pipeline

    def pipeline(*args: t.Any, **kwargs: t.Any) -> t.Any:
        pipe, queued = real(*args, **kwargs), []
        queue, execute = pipe.execute_command, pipe.execute

        def execute_command(*cmd: t.Any, **options: t.Any) -> t.Any:
            queued.append(str(cmd[0]).upper())
            return queue(*cmd, **options)

        def run(*a: t.Any, **k: t.Any) -> t.Any:
            runs.append(list(queued))
            return execute(*a, **k)

        pipe.execute_command, pipe.execute = execute_command, run
        return pipe

    client.pipeline = pipeline
    return runs


@pytest.mark.cluster
def test_on_a_cluster_a_batch_publishes_after_every_other_command(
    redis_cluster_url: str,
) -> None:
    """Whoever a ``PUBLISH`` wakes finds what the batch's other commands wrote, on every
    node, however the batch interleaves them; the replies keep the batch's order."""
    from flask_mcp.backends.redis import RedisBackend

    prefix = f"batch-{uuid.uuid4().hex[:8]}:"
    backend = RedisBackend.from_url(f"{redis_cluster_url}?prefix={prefix}")
    watcher = redis_client(redis_cluster_url)
    pubsub = redis_client(redis_cluster_url).pubsub()
    channel = f"{prefix}wake"
    pubsub.subscribe(channel)
    deadline = time.monotonic() + 10
    while pubsub.get_message(timeout=0.2) is None:  # the subscription's confirmation
        assert time.monotonic() < deadline
    missing: list[str] = []
    heard: list[int] = []
    rounds = 20

    def watch() -> None:
        stop = time.monotonic() + 30
        while len(heard) < rounds and time.monotonic() < stop:
            message = pubsub.get_message(timeout=0.5)
            if message and message["type"] == "message":
                keys = message["data"].decode().split("\n")
                missing.extend(k for k in keys if not watcher.exists(k))
                heard.append(len(keys))

    thread = threading.Thread(target=watch)
    thread.start()
    runs = _record_pipelines(backend.client)
    try:
        nodes = set()
        for r in range(rounds):
            keys = [f"{prefix}{r}:{i}" for i in range(30)]
            nodes |= {watcher.get_node_from_key(k).name for k in keys}
            batch = backend.commands.batch()
            for key in keys[:25]:
                batch.command("SET", key, "1", "EX", 60)
            batch.command("PUBLISH", channel, "\n".join(keys))
            for key in keys[25:]:  # queued after it, written before it all the same
                batch.command("SET", key, "1", "EX", 60)
            replies = backend.commands.send(batch)
            assert replies[:25] == [True] * 25 and replies[26:] == [True] * 5
            assert isinstance(replies[25], int)  # the subscribers on the node it reached
        thread.join(35)
        assert len(nodes) == 3  # the keys spread over every master
        assert heard == [30] * rounds
        assert missing == []
        assert runs == [["SET"] * 30, ["PUBLISH"]] * rounds
    finally:
        pubsub.close()
        backend.close()
        watcher.close()
        delete_keys(redis_cluster_url, f"{prefix}*")


def test_a_batch_publishes_again_after_a_script_redis_had_forgotten() -> None:
    """On one Redis the ``PUBLISH`` rides in the pipeline; a script that failed there
    with NOSCRIPT runs after the pipeline, so the ``PUBLISH`` is sent again after it."""
    pytest.importorskip("redis")
    from flask_mcp.backends.redis import RedisBackend

    port = free_port()
    with redis_server(port, missing="needs redis-server for a private Redis"):
        url = f"redis://127.0.0.1:{port}/0"
        backend = RedisBackend.from_url(url)
        client = redis_client(url)
        pubsub = client.pubsub()
        pubsub.subscribe("announce")
        assert pubsub.get_message(timeout=5)["type"] == "subscribe"
        try:
            runs = _record_pipelines(backend.client)
            batch = backend.commands.batch()
            batch.command("SET", "k", "1")
            batch.command("PUBLISH", "announce", "one")
            assert backend.commands.send(batch) == [True, 1]
            assert pubsub.get_message(timeout=5)["data"] == b"one"
            client.script_flush()
            batch.script("next_id", backend.keys.session("nobody"))
            batch.command("PUBLISH", "announce", "two")
            assert backend.commands.send(batch) == [0, 1]
            assert [pubsub.get_message(timeout=5)["data"] for _ in range(2)] == [b"two"] * 2
            assert pubsub.get_message(timeout=0.2) is None
            assert runs == [["SET", "PUBLISH"], ["EVALSHA", "PUBLISH"], ["PUBLISH"]]
        finally:
            pubsub.close()
            client.close()
            backend.close()
