"""Fast checks that the test harness itself works (independent of flask_mcp)."""

from __future__ import annotations

import os
import socket
import urllib.request
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ConformanceRunner
    from conftest import ServeFactory

HELLO = "tests._apps.hello:app"


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


@pytest.mark.e2e
@pytest.mark.parametrize(
    "worker",
    ["gevent", "gthread", "sync", "dev", "waitress", "uwsgi", "uwsgi-threads", "uwsgi-router"],
)
def test_serve_starts_and_stops(serve: ServeFactory, worker: str) -> None:
    server = serve(HELLO, worker)
    assert server.url == f"http://127.0.0.1:{server.port}/mcp"
    assert server.base_url == f"http://127.0.0.1:{server.port}"
    assert get(server.base_url + "/") == (200, "hello")
    assert server.alive()

    server.stop()
    assert not server.alive()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.port), timeout=1):
        pass
    if worker in ("gevent", "gthread", "sync"):
        assert "Booting worker" in server.log()
    if worker.startswith("uwsgi"):
        assert "spawned uWSGI worker 1" in server.log()


@pytest.mark.e2e
def test_serve_gthread_with_two_workers(serve: ServeFactory) -> None:
    server = serve(HELLO, "gthread", workers=2, threads=2, env={"HARNESS_CHECK": "1"})
    assert all(get(server.base_url + "/") == (200, "hello") for _ in range(4))
    assert server.argv[server.argv.index("--threads") + 1] == "2"
    assert server.argv[server.argv.index("-w") + 1] == "2"


@pytest.mark.e2e
def test_serve_reports_a_server_that_cannot_start(serve: ServeFactory) -> None:
    with pytest.raises(RuntimeError, match="exited with code"):
        serve("tests._apps.does_not_exist:app", "gevent", timeout=30)


@pytest.mark.redis
def test_redis_url_answers_ping(redis_url: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        assert client.ping()
        expected_db = int(os.environ.get("MCP_TEST_REDIS_DB", "15"))
        assert client.connection_pool.connection_kwargs["db"] == expected_db
        client.set("flask-mcp:harness", "ok", ex=10)
        assert client.get("flask-mcp:harness") == b"ok"
        client.delete("flask-mcp:harness")
    finally:
        client.close()


@pytest.mark.conformance
@pytest.mark.parametrize("next_suite", [False, True], ids=["0.1.16", "next"])
def test_conformance_runner_prints_help(conformance: ConformanceRunner, next_suite: bool) -> None:
    result = conformance("--help", next=next_suite, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--spec-version" in result.stdout
    assert "--suite" in result.stdout
