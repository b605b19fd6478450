"""Fast checks that the test harness itself works (independent of flask_mcp)."""

from __future__ import annotations

import ast
import os
import socket
import typing as t
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from harness import CLAIM_KEY
from harness import TEST_DATABASES
from harness import _claimed_database

if TYPE_CHECKING:
    from harness import ConformanceRunner
    from harness import ServeFactory

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
        chosen = os.environ.get("MCP_TEST_REDIS_DB")
        expected = TEST_DATABASES if chosen is None else (int(chosen),)
        assert client.connection_pool.connection_kwargs["db"] in expected
        client.set("flask-mcp:harness", "ok", ex=10)
        assert client.get("flask-mcp:harness") == b"ok"
        client.delete("flask-mcp:harness")
    finally:
        client.close()


@pytest.mark.redis
def test_a_second_test_run_takes_another_redis_database(redis_url: str) -> None:
    """A run's database is claimed: a second run at once skips it (it would flush this
    one's data and take its Celery tasks), and fails, naming the holder, when none is free."""
    import redis

    base, _, mine = redis_url.rpartition("/")
    others = [db for db in TEST_DATABASES if db != int(mine)]
    client = redis.Redis.from_url(redis_url)
    try:
        client.set("flask-mcp:kept", "1", ex=30)
        with _claimed_database(base, (int(mine), *others)) as second:
            assert second.rpartition("/")[2] != mine
            assert client.get("flask-mcp:kept") == b"1"  # not flushed
        taken = pytest.raises(pytest.fail.Exception, match=r"taken by another test run \(db ")
        with taken, _claimed_database(base, (int(mine),)):
            pass
        assert client.get(CLAIM_KEY) is not None  # the second run left this one's claim
    finally:
        client.delete("flask-mcp:kept")
        client.close()


@pytest.mark.conformance
@pytest.mark.parametrize("next_suite", [False, True], ids=["0.1.16", "next"])
def test_conformance_runner_prints_help(conformance: ConformanceRunner, next_suite: bool) -> None:
    result = conformance("--help", next=next_suite, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--spec-version" in result.stdout
    assert "--suite" in result.stdout


TESTS = Path(__file__).resolve().parent
#: Where code shared by test modules lives; ``conftest.py`` is pytest's, not a module to import.
SHARED = ("wire.py (talking to an app), harness.py (servers, Redis, conformance), "
          "jwt_keys.py (signing keys and tokens)")  # fmt: skip


def imports_of(path: Path) -> t.Iterator[tuple[int, str]]:
    """Every module that ``path`` imports, at any depth, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module


def test_no_test_module_imports_another() -> None:
    private = {path.stem for path in TESTS.glob("test_*.py")} | {"conftest"}
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for line, module in imports_of(path):
            parts = module.split(".")
            name = parts[1] if parts[0] == "tests" and len(parts) > 1 else parts[0]
            if name in private:
                found.append(f"{path.relative_to(TESTS.parent)}:{line} imports {module}")
    assert not found, f"move what test modules share to {SHARED}:\n" + "\n".join(found)
