"""A task call is one call (issue 27): one middleware pass, one validation, one pair of
request signals and one Prometheus count, in both task flavours.

The task's run goes on from where the request that created it left it (after the
middleware, the authorization and the validation); ``CallInfo.task_id`` tells the
middleware that the call became a task.
"""

from __future__ import annotations

import time
import typing as t

import pytest
from flask import Flask
from prometheus_client import CollectorRegistry

from flask_mcp import MCP
from flask_mcp import CallInfo
from flask_mcp import Context
from flask_mcp import current_context
from flask_mcp import signals
from flask_mcp.contrib.prometheus import PrometheusMetrics
from flask_mcp.testing import MCPTestClient

EXT = {"io.modelcontextprotocol/tasks": {}}
FLAVOURS = ["2025-11-25", "2026-07-28"]


def sample(text: str, name: str, **labels: str) -> float:
    import re

    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.partition(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.parametrize("version", FLAVOURS)
def test_a_task_call_is_seen_once(version: str) -> None:
    mcp = MCP(name="once", version="1")
    metrics = PrometheusMetrics(mcp, registry=CollectorRegistry())
    seen: list[tuple[str, t.Any, str | None, str | None]] = []

    @mcp.middleware
    def record(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        before = call.task_id
        result = call_next(call)
        seen.append((call.method, call.request_id, before, call.task_id))
        return result

    @mcp.tool(task="optional")
    def work(n: int, ctx: Context) -> str:
        ctx.progress(1, 2, "half way")
        return f"worked {n}"

    validations: list[t.Any] = []
    spec = mcp.registry.tools["work"].input
    validate = spec.validate

    def counted(arguments: dict[str, t.Any]) -> t.Any:
        validations.append(arguments)
        return validate(arguments)

    spec.validate = counted  # type: ignore[method-assign]
    started: list[str] = []
    finished: list[str] = []
    called: list[str] = []

    def on_started(sender: t.Any, *, method: str, **_: t.Any) -> None:
        started.append(method)

    def on_finished(sender: t.Any, *, method: str, **_: t.Any) -> None:
        finished.append(method)

    def on_tool(sender: t.Any, *, tool: str, **_: t.Any) -> None:
        called.append(tool)

    app = Flask(__name__)
    app.config.update(TESTING=True, SECRET_KEY="s")
    mcp.init_app(app)
    metrics.init_app(app)
    with (
        signals.request_started.connected_to(on_started, app),
        signals.request_finished.connected_to(on_finished, app),
        signals.tool_called.connected_to(on_tool, app),
        MCPTestClient(
            app,
            protocol_version=version,
            capabilities={"extensions": EXT} if version == "2026-07-28" else {"tasks": {}},
        ) as client,
    ):
        params: dict[str, t.Any] = {"name": "work", "arguments": {"n": 3}}
        if version == "2025-11-25":
            params["task"] = {}
        created = client.request("tools/call", params)
        task = created.get("task", created)
        task_id = task["taskId"]
        # tasks/* are routed by Mcp-Name (the taskId) at 2026-07-28; MCPTestClient
        # mirrors only the core methods' names
        client.extra_headers["Mcp-Name"] = task_id
        deadline = time.monotonic() + 20
        while task["status"] not in ("completed", "failed", "cancelled"):
            assert time.monotonic() < deadline, task
            time.sleep(0.02)
            task = client.request("tasks/get", {"taskId": task_id})
        assert task["status"] == "completed"
        if version == "2026-07-28":
            result = task["result"]
        else:
            result = client.request("tasks/result", {"taskId": task_id})
        assert result["content"][0]["text"] == "worked 3"
        scrape = app.test_client().get("/metrics").get_data(as_text=True)
    tool_calls = [entry for entry in seen if entry[0] == "tools/call"]
    assert tool_calls == [("tools/call", tool_calls[0][1], None, task_id)]
    assert not any(str(entry[1]).startswith("task-") for entry in seen)
    assert validations == [{"n": 3}]
    assert started.count("tools/call") == 1 and finished.count("tools/call") == 1
    assert called == ["work"]  # the tool ran once, in the task
    assert sample(scrape, "mcp_server_requests_total", method="tools/call", tool="work") == 1


def test_a_plain_call_has_no_task_id() -> None:
    mcp = MCP(name="plain", version="1")
    ids: list[str | None] = []

    @mcp.middleware
    def record(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        result = call_next(call)
        ids.append(call.task_id)
        return result

    @mcp.tool(task="optional")
    def work(n: int) -> str:
        return f"worked {n}"

    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app) as client:
        assert client.call_tool("work", {"n": 1})["content"][0]["text"] == "worked 1"
    assert ids[-1] is None


@pytest.mark.parametrize("version", FLAVOURS)
def test_a_tasks_call_carries_the_facts_its_record_kept(version: str) -> None:
    """current_context() in a task's tool without a Context parameter tells who called.

    The task's call carries the one ``ClientFacts`` record its task record kept, so the
    inline context reads the caller's ``clientInfo`` and capabilities as its
    ``TaskContext`` does (it read an empty ``_meta``).
    """
    mcp = MCP(name="facts", version="1")
    seen: list[tuple[t.Any, t.Any]] = []

    @mcp.tool(task="optional")
    def who() -> str:
        ctx = current_context()
        seen.append((ctx.client_info, ctx.client_capabilities))
        return "ok"

    app = Flask(__name__)
    mcp.init_app(app)
    capabilities = {"extensions": EXT} if version == "2026-07-28" else {"tasks": {}}
    info = {"name": "facts-client", "version": "2.0"}
    with MCPTestClient(
        app, protocol_version=version, capabilities=capabilities, client_info=info
    ) as client:
        result = client.task_result(client.call_tool_as_task("who"))
    assert result["content"][0]["text"] == "ok"
    assert seen == [(info, capabilities)]
