"""Two apps from one factory, side by side: every integration keeps each app's state apart.

The objects live at module level and ``create_app()`` registers them on each app, as
docs/testing.md recommends (the Flask-SQLAlchemy contract; issue 32). Each app has its own
SQLite database and configuration; nothing of one app may reach the other, tasks included.
"""

from __future__ import annotations

import pathlib
import re
import sqlite3
import typing as t

import pytest
from flask import Flask
from flask import current_app
from flask import jsonify
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flask_mcp import MCP
from flask_mcp import MCPError
from flask_mcp.contrib.opentelemetry import MCPInstrumentor
from flask_mcp.contrib.prometheus import PrometheusMetrics
from flask_mcp.contrib.ratelimit import RateLimiter
from flask_mcp.contrib.view_tools import ViewTools
from flask_mcp.testing import MCPTestClient

pytest.importorskip("flask_smorest")

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))

mcp = MCP(name="factory", version="1")
views = ViewTools(mcp)
views.add_routes(include=["/notes"])
metrics = PrometheusMetrics(mcp)
otel = MCPInstrumentor(mcp, tracer_provider=provider, max_label_values=2)
limiter = RateLimiter(mcp)
limiter.limit("3/minute", per="tool", tools=["count_notes"])


@mcp.tool()
def count_notes() -> int:
    """Count the notes in the database of the app serving the call."""
    with sqlite3.connect(current_app.config["DATABASE"]) as db:
        return int(db.execute("SELECT count(*) FROM notes").fetchone()[0])


@mcp.tool()
def app_name() -> str:
    return str(current_app.config["APP_NAME"])


@mcp.tool(task="optional")
def count_notes_later() -> str:
    """Count the notes as a task: it runs in a worker thread of the app serving the call."""
    with sqlite3.connect(current_app.config["DATABASE"]) as db:
        count = int(db.execute("SELECT count(*) FROM notes").fetchone()[0])
    return f"{current_app.config['APP_NAME']}: {count}"


@mcp.resource("notes://count")
def note_count() -> str:
    """The number of notes in the database of the app serving the read."""
    with sqlite3.connect(current_app.config["DATABASE"]) as db:
        return str(db.execute("SELECT count(*) FROM notes").fetchone()[0])


@mcp.resource("notes://marker")
def marker() -> str:
    """A resource the tests notify about, to see what came before."""
    return "marker"


@mcp.tool()
def add_note(text: str) -> str:
    """Add a note to this app's database and tell its subscribers that the count changed."""
    with sqlite3.connect(current_app.config["DATABASE"]) as db:
        db.execute("INSERT INTO notes VALUES (?)", (text,))
    mcp.notify_resource_updated("notes://count")
    return "added"


def create_app(name: str, database: pathlib.Path, **config: t.Any) -> Flask:
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES (?)", (f"a note of {name}",))
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=name, APP_NAME=name, DATABASE=str(database),
        MCP_HEALTH_READINESS_PATH="/readyz", **config,
    )  # fmt: skip

    @app.get("/notes")
    def list_notes() -> t.Any:
        """List the notes."""
        with sqlite3.connect(app.config["DATABASE"]) as db:
            rows = [row[0] for row in db.execute("SELECT text FROM notes")]
        return jsonify({"app": app.config["APP_NAME"], "notes": rows})

    mcp.init_app(app)
    views.init_app(app)
    metrics.init_app(app)
    otel.init_app(app)
    limiter.init_app(app)
    return app


@pytest.fixture
def apps(tmp_path: pathlib.Path) -> tuple[Flask, Flask]:
    exporter.clear()
    first = create_app("first", tmp_path / "first.db")
    second = create_app("second", tmp_path / "second.db", MCP_ALLOWED_HOSTS=["second.test"])
    return first, second


def scrape(app: Flask, **headers: str) -> str:
    return app.test_client().get("/metrics", headers=headers).get_data(as_text=True)


def requests_of(text: str, tool: str) -> float:
    pattern = rf'mcp_server_requests_total\{{method="tools/call",tool="{tool}"\}} (\S+)'
    found = re.search(pattern, text)
    return float(found.group(1)) if found else 0.0


def test_view_tools_run_their_own_apps_view_and_database(apps: tuple[Flask, Flask]) -> None:
    first, second = apps
    with MCPTestClient(first) as client:
        result = client.call_tool("list_notes")["structuredContent"]
        assert result == {"app": "first", "notes": ["a note of first"]}
        assert client.call_tool("count_notes")["structuredContent"] == {"result": 1}
    with MCPTestClient(second, headers={"Host": "second.test"}) as client:
        result = client.call_tool("list_notes")["structuredContent"]
        assert result == {"app": "second", "notes": ["a note of second"]}
    with MCPTestClient(first) as client:  # the first app still runs its own view
        assert client.call_tool("list_notes")["structuredContent"]["app"] == "first"
    assert views.tools(first)["list_notes"] is not views.tools(second)["list_notes"]


def test_metrics_count_in_each_apps_registry(apps: tuple[Flask, Flask]) -> None:
    first, second = apps
    with MCPTestClient(first) as client:
        for _ in range(2):
            client.call_tool("app_name")
    with MCPTestClient(second, headers={"Host": "second.test"}) as client:
        client.call_tool("app_name")
    assert requests_of(scrape(first), "app_name") == 2
    assert requests_of(scrape(second, Host="second.test"), "app_name") == 1


def test_rate_limits_are_not_shared(apps: tuple[Flask, Flask]) -> None:
    first, second = apps
    with MCPTestClient(first) as client:
        for _ in range(3):
            client.call_tool("count_notes")
        with pytest.raises(MCPError) as info:
            client.call_tool("count_notes")
        assert info.value.code == -32000
    with MCPTestClient(second, headers={"Host": "second.test"}) as client:
        for _ in range(3):  # the second app has counters of its own (memory:// per app)
            assert client.call_tool("count_notes")["structuredContent"] == {"result": 1}


def test_each_app_traces_with_its_own_label_bounds(apps: tuple[Flask, Flask]) -> None:
    """max_label_values=2 per app: the first app's tools do not use up the second's."""
    first, second = apps
    with MCPTestClient(first, protocol_version="2026-07-28") as client:
        client.call_tool("app_name")
        client.call_tool("count_notes")
    with MCPTestClient(second, protocol_version="2026-07-28", headers={"Host": "second.test"}) as c:
        c.call_tool("list_notes")
    names = [s.name for s in exporter.get_finished_spans() if s.name.startswith("tools/call")]
    assert names == ["tools/call app_name", "tools/call count_notes", "tools/call list_notes"]


def test_health_and_host_checks_follow_each_apps_settings(apps: tuple[Flask, Flask]) -> None:
    first, second = apps
    assert first.test_client().get("/readyz").status_code == 200
    assert second.test_client().get("/readyz").status_code == 421  # Host: localhost
    assert second.test_client().get("/readyz", headers={"Host": "second.test"}).status_code == 200
    assert "mcp_server_requests_total" not in scrape(second)  # refused: 421
    assert first.extensions["mcp"].state(first).backend is not (
        second.extensions["mcp"].state(second).backend
    )


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_resource_update_reaches_only_the_apps_own_subscribers(
    apps: tuple[Flask, Flask], version: str
) -> None:
    """``notify_resource_updated`` in a handler of one app tells that app's subscribers: the
    other app's ``notes://count`` (its own database) did not change."""
    first, second = apps
    uris = ["notes://count", "notes://marker"]
    with (
        MCPTestClient(first, protocol_version=version) as one,
        MCPTestClient(second, protocol_version=version, headers={"Host": "second.test"}) as two,
        one.listen(resource_uris=uris) as first_stream,
        two.listen(resource_uris=uris) as second_stream,
    ):
        assert one.call_tool("add_note", {"text": "more"})["content"][0]["text"] == "added"
        received = first_stream.get()
        assert received is not None and received["params"]["uri"] == "notes://count"
        with second.app_context():  # outside a handler: the app whose context is pushed
            mcp.notify_resource_updated("notes://marker")
        received = second_stream.get()
        assert received is not None and received["params"]["uri"] == "notes://marker"
        mcp.notify_resource_updated("notes://marker")  # no app context: every app
        for stream in (first_stream, second_stream):
            received = stream.get()
            assert received is not None and received["params"]["uri"] == "notes://marker"


def test_each_app_runs_its_own_tasks(apps: tuple[Flask, Flask]) -> None:
    """Both apps run a task at once; each task reads its own app's database and is known
    only to the app (and session) that created it."""
    first, second = apps
    with (
        MCPTestClient(first) as one,
        MCPTestClient(second, headers={"Host": "second.test"}) as two,
    ):
        call = {"name": "count_notes_later", "arguments": {}, "task": {"ttl": 60000}}
        first_task = one.request("tools/call", call)["task"]["taskId"]
        second_task = two.request("tools/call", call)["task"]["taskId"]
        assert first_task != second_task
        assert one.request("tasks/result", {"taskId": first_task})["content"][0]["text"] == (
            "first: 1"
        )
        assert two.request("tasks/result", {"taskId": second_task})["content"][0]["text"] == (
            "second: 1"
        )
        assert [task["taskId"] for task in one.request("tasks/list")["tasks"]] == [first_task]
        assert [task["taskId"] for task in two.request("tasks/list")["tasks"]] == [second_task]
        with pytest.raises(MCPError) as unknown:
            two.request("tasks/get", {"taskId": first_task})
        assert unknown.value.code == -32602
    first_store = first.extensions["mcp"].state(first).backend
    assert first_store is not second.extensions["mcp"].state(second).backend
