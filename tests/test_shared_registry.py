"""Two servers on one Redis stand for two workers: runtime changes travel, others do not."""

from __future__ import annotations

import threading
import time
import typing as t
import uuid

import pytest
from flask import Flask
from harness import redis_client

from flask_mcp import MCP
from flask_mcp import Extension
from flask_mcp import MCPBlueprint
from flask_mcp import signals
from flask_mcp.contrib.view_tools import ViewTools
from flask_mcp.server.shared_registry import ProcessLocalWarning
from flask_mcp.server.shared_registry import import_path
from flask_mcp.testing import MCPTestClient

pytestmark = pytest.mark.redis
pytest.importorskip("redis")


def echo(text: str) -> str:
    """Echo the text."""
    return text


shared_bp = MCPBlueprint("shared", __name__)


@shared_bp.tool()
def ping() -> str:
    return "pong"


def worker(url: str, prefix: str) -> tuple[MCP, Flask]:
    mcp = MCP(name="twin", version="1")

    @mcp.tool()
    def base() -> str:
        return "base"

    app = Flask(__name__)
    app.add_url_rule("/late", "late", lambda: ("late view", 200, {"Content-Type": "text/plain"}))
    app.config.update(MCP_BACKEND=f"{url}?prefix={prefix}", MCP_ALLOWED_HOSTS=["localhost"])
    mcp.init_app(app)
    ViewTools(mcp, app)  # app.extensions["mcp_views"]: replays the other worker's view tools
    return mcp, app


def names(app: Flask) -> list[str]:
    with MCPTestClient(app) as client:
        return sorted(tool["name"] for tool in client.list_tools())


def eventually(app: Flask, expected: list[str]) -> list[str]:
    """The names once they equal ``expected`` (the pub/sub announcement is asynchronous)."""
    deadline = time.monotonic() + 10
    while (found := names(app)) != expected and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def test_changes_made_while_serving_reach_the_other_worker(redis_backend_url: str) -> None:
    prefix = f"t-{uuid.uuid4().hex[:8]}:"
    one, app_one = worker(redis_backend_url, prefix)
    two, app_two = worker(redis_backend_url, prefix)
    one.add_tool(echo, name="import_time")  # not serving: stays here
    assert names(app_two) == ["base"]
    with app_one.test_request_context():
        one.add_tool(echo, name="echo", tags={"t"})
        one.register_blueprint(shared_bp, prefix="bp_")
        app_one.extensions["mcp_views"].add_view("late")
    assert eventually(app_two, ["base", "bp_ping", "echo", "late"]) == [
        "base",
        "bp_ping",
        "echo",
        "late",
    ]
    with MCPTestClient(app_two) as client:
        assert client.call_tool("echo", {"text": "hi"})["content"][0]["text"] == "hi"
        assert client.call_tool("late")["content"][0]["text"] == "late view"
    with app_one.test_request_context():
        one.disable(tags=["t"])
        one.remove_tool("bp_ping")
    assert eventually(app_two, ["base", "late"]) == ["base", "late"]
    with app_two.test_request_context():
        two.enable("echo")  # the other direction
    expected = ["base", "echo", "import_time", "late"]
    assert eventually(app_one, expected) == expected
    # what a worker remembers of its own changes ends once it has read past them
    assert one._syncs[app_one].own == set() and two._syncs[app_two].own == set()


def test_a_change_is_judged_after_the_changes_other_workers_made_before(
    redis_backend_url: str,
) -> None:
    """Changes made one after the other, in turns on two workers, each told to every session.

    A test request context runs no ``before_request``: neither worker has replayed the
    other's last change when it makes its own, as a worker whose pub/sub announcement is
    still on its way. Each must replay the log first: else the second worker knows no
    tag ``t`` to disable, the first enables a tool it still takes for enabled (no change),
    and the second removes a tool it takes for disabled (no list changed): the e2e test's
    lost ``list_changed``. And each is told once it is in the operation log.
    """
    prefix = f"t-{uuid.uuid4().hex[:8]}:"
    one, app_one = worker(redis_backend_url, prefix)
    two, app_two = worker(redis_backend_url, prefix)
    assert names(app_one) == names(app_two) == ["base"]  # both serve: both tell sessions
    log = redis_client(redis_backend_url)
    key = one._syncs[app_one].log.key  # type: ignore[attr-defined]
    sent: list[int] = []  # how many operations the log held when each list_changed went out

    def on_sent(sender: object, method: str, session_id: str) -> None:
        if method == "notifications/tools/list_changed":
            sent.append(int(log.llen(key)))

    with MCPTestClient(app_one), signals.notification_sent.connected_to(on_sent):
        with app_one.test_request_context():
            one.add_tool(echo, name="echo", tags={"t"})
        with app_two.test_request_context():
            assert two.disable(tags=["t"]) == [("tools", "echo")]
        with app_one.test_request_context():
            assert one.enable("echo") == [("tools", "echo")]
        with app_two.test_request_context():
            assert two.remove_tool("echo")
    log.close()
    # one list_changed per change, sent once the change is in the log (a client that
    # lists again at once must not meet workers that cannot know of it yet)
    assert sent == [1, 2, 3, 4]
    # worker two made the last change; worker one replays it once the watcher heard its
    # announcement (pub/sub is asynchronous; on a cluster that took longer than the next
    # request here, 1 run in 3)
    assert eventually(app_one, ["base"]) == names(app_two) == ["base"]


def test_a_change_in_a_worker_that_served_no_mcp_request_is_told(
    redis_backend_url: str,
) -> None:
    """A view of a worker that has served no MCP request yet (an admin page) adds a tool.

    The sessions live in Redis, held by the other workers: they are told, once.
    """
    prefix = f"t-{uuid.uuid4().hex[:8]}:"
    one, app_one = worker(redis_backend_url, prefix)
    two, app_two = worker(redis_backend_url, prefix)
    sent: list[tuple[str, str]] = []

    def on_sent(sender: object, method: str, session_id: str) -> None:
        sent.append((method, session_id))

    with MCPTestClient(app_one) as client, signals.notification_sent.connected_to(on_sent):
        session = client.session_id
        with app_two.test_request_context():
            two.add_tool(echo, name="echo")
    assert sent == [("notifications/tools/list_changed", session)]


def test_a_request_waits_for_the_log_read_another_request_started(
    redis_backend_url: str,
) -> None:
    """Two requests come together after an announcement: the second waits for the first's read.

    The first one took the announcement and read the log; the second, seeing no news,
    was served from the registry the read was about to change (a gevent worker serving
    a burst of sessions listed a tool just removed, or missed one just added).
    """
    prefix = f"t-{uuid.uuid4().hex[:8]}:"
    one, app_one = worker(redis_backend_url, prefix)
    two, app_two = worker(redis_backend_url, prefix)
    assert names(app_two) == ["base"]
    with app_one.test_request_context():
        one.add_tool(echo, name="echo")
    sync = two._syncs[app_two]
    sync._heard += 1  # the announcement reached worker two (its watcher may count it too)
    reading, gate = threading.Event(), threading.Event()
    log = sync.log

    class SlowLog:  # the first read of the log waits at the gate
        def __getattr__(self, name: str) -> t.Any:
            return getattr(log, name)

        def read(self, start: int) -> list[str]:
            reading.set()
            gate.wait(10)
            sync.log = log
            return log.read(start)

    sync.log = SlowLog()  # type: ignore[assignment]
    seen: list[bool] = []

    def second() -> None:
        sync.before_request()
        seen.append("echo" in two.registry.tools)

    first = threading.Thread(target=sync.before_request)
    first.start()
    assert reading.wait(10)
    later = threading.Thread(target=second)
    later.start()
    later.join(0.5)  # (a second request served at once would have answered by now)
    gate.set()
    first.join(10)
    later.join(10)
    assert seen == [True]


def test_a_handler_without_import_path_stays_local_with_a_warning(redis_backend_url: str) -> None:
    prefix = f"t-{uuid.uuid4().hex[:8]}:"
    one, app_one = worker(redis_backend_url, prefix)
    _, app_two = worker(redis_backend_url, prefix)
    with app_one.test_request_context(), pytest.warns(ProcessLocalWarning, match="'local'"):
        one.add_tool(lambda: "x", name="local")
    assert "local" in names(app_one) and "local" not in names(app_two)
    assert import_path(echo) == f"{__name__}:echo"
    assert import_path(lambda: 1) is None


def test_requests_read_the_registry_log_only_when_a_change_was_announced(
    redis_backend_url: str,
) -> None:
    """A request reads the shared registry log only after an announcement (issue 33).

    Read on every request past a second, the log cost a round trip per worker per second
    and, with Redis frozen, a socket timeout before the session lookup's own (the 503
    came after twice the timeout). Requests a second and more apart read it no more
    once the worker's watcher has subscribed; a change another worker makes is read once.
    """
    prefix = f"t-{uuid.uuid4().hex[:8]}:"
    one, app_one = worker(redis_backend_url, prefix)
    two, app_two = worker(redis_backend_url, prefix)
    sync = two._syncs[app_two]
    reads: list[int] = []
    log = sync.log

    class CountingLog:
        def __getattr__(self, name: str) -> t.Any:
            return getattr(log, name)

        def read(self, start: int) -> list[str]:
            reads.append(start)
            return t.cast("list[str]", log.read(start))

    sync.log = CountingLog()  # type: ignore[assignment]
    with MCPTestClient(app_two) as client:
        client.list_tools()  # the worker's first read; its watcher starts
        deadline = time.monotonic() + 10
        while sync._heard < 2:  # subscribed (then it reads once more: see before_request)
            assert time.monotonic() < deadline, "the registry watcher did not subscribe"
            time.sleep(0.01)
        client.list_tools()
        settled = len(reads)
        for _ in range(3):
            time.sleep(1.1)  # longer than RECHECK, the old read interval
            client.list_tools()
        assert len(reads) == settled, reads  # no announcement: no read
        with app_one.test_request_context():
            one.add_tool(echo, name="echo")
        deadline = time.monotonic() + 10
        while "echo" not in [tool["name"] for tool in client.list_tools()]:
            assert time.monotonic() < deadline, "the change never reached the other worker"
            time.sleep(0.05)
        assert len(reads) == settled + 1, reads


def test_a_refused_extension_added_while_serving_changes_no_other_worker(redis_url: str) -> None:
    # Its setup removed a tool and added one, then init_app refused: the undo puts
    # this worker's registry back, and the other worker, which replays the log, had
    # nothing of it either.
    class Wrapping(Extension):
        id = "com.example/wrapping"

        def setup(self, mcp: t.Any) -> None:
            mcp.remove_tool("base")
            mcp.add_tool(echo, name="base")

        def init_app(self, app: Flask, mcp: t.Any) -> None:
            raise ValueError("refused")

    prefix = f"t-{uuid.uuid4().hex[:8]}:"
    one, app_one = worker(redis_url, prefix)
    two, app_two = worker(redis_url, prefix)
    base = two.registry.tools["base"]
    with app_one.test_request_context(), pytest.raises(ValueError, match="refused"):
        one.add_extension(Wrapping())
    assert sorted(one.registry.tools) == ["base"]
    two._syncs[app_two].catch_up()
    assert two.registry.tools == {"base": base}
