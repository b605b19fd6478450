"""Hot sessions (:mod:`flask_mcp.backends.redis.hot`) on two servers sharing one Redis.

A gevent worker serves the requests of a session it looked up a moment ago from
memory, with no round trip; a change another server makes (a log level, the
session's end) is seen by the very next request all the same. Redis's ``MONITOR``
counts the lookups: a gthread worker, which never serves from memory, makes one
per request.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import time
import typing as t
from pathlib import Path

import httpx
import pytest
from harness import redis_client
from harness import redis_env
from wire import call
from wire import start_session

from flask_mcp.backends.redis.scripts import LIBRARY
from flask_mcp.backends.redis.scripts import SCRIPTS
from flask_mcp.backends.redis.scripts import SESSION

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

#: The lookup script, as MONITOR shows its EVALSHA.
LOAD = hashlib.sha1((LIBRARY + SESSION + SCRIPTS["load"]).encode()).hexdigest()
APP = "tests._apps.backchannel:app"
CALLS = 30


@contextlib.contextmanager
def monitor(url: str, out: Path) -> t.Iterator[t.Callable[[str], int]]:
    """Record every command Redis runs; yield a count of the lookups of a session id."""
    port = redis_client(url).connection_pool.connection_kwargs.get("port", 6379)
    with out.open("w") as sink:
        watcher = subprocess.Popen(["redis-cli", "-p", str(port), "monitor"], stdout=sink)
        time.sleep(0.3)  # MONITOR on before the traffic

        def lookups(sid: str) -> int:
            time.sleep(0.2)  # what Redis ran has been written out
            return sum(LOAD in line and f"{{{sid}}}:s" in line for line in out.open())

        try:
            yield lookups
        finally:
            watcher.terminate()
            watcher.wait(10)


def set_level(http: httpx.Client, url: str, headers: dict[str, str], level: str) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel", "params": {"level": level}}
    assert http.post(url, headers=headers, json=body).status_code == 200


@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_changes_on_one_server_reach_the_other_at_once(
    serve: t.Any, redis_url: str, tmp_path: Path, worker: str
) -> None:
    env = redis_env(redis_url)
    first = serve(APP, "gevent", env=env)
    second = serve(APP, worker, env=env)  # the same Redis and prefix: one server to clients
    with httpx.Client(timeout=30) as http, monitor(redis_url, tmp_path / "monitor") as lookups:
        sessions = []
        for _ in range(5):
            headers = start_session(http, first.url)
            sid = headers["Mcp-Session-Id"]
            for i in range(CALLS):
                response = call(http, second.url, headers, "add", a=i, b=1)
                assert response.json()["result"]["structuredContent"] == {"result": i + 1}
            sessions.append((headers, lookups(sid)))

            # A log level set on the first server holds for the next call on the second.
            set_level(http, first.url, headers, "error")
            response = call(http, second.url, headers, "note", text="quiet")
            assert "notifications/message" not in response.text
            set_level(http, first.url, headers, "debug")
            response = call(http, second.url, headers, "note", text="loud")
            assert "notifications/message" in response.text, response.text
            assert '"data":"loud"' in response.text.replace(" ", "")

            # A session ended on the first server is gone for the second at once.
            assert http.delete(first.url, headers=headers).status_code in (200, 204)
            assert call(http, second.url, headers, "add", a=1, b=1).status_code == 404

    counts = [count for _, count in sessions]
    print(f"{worker}: lookups of {CALLS} calls per session: {counts}")
    # One more lookup: notifications/initialized on the first server.
    if worker == "gevent":  # the first call looks the session up; most others need not
        assert all(2 <= count <= CALLS // 3 for count in counts), counts
    else:  # threads never serve from memory: every call looks its session up
        assert all(count == CALLS + 1 for count in counts), counts
