"""``flask_mcp.contrib.prometheus``: counters, histograms and gauges at /metrics, in one
process and summed over 2 gunicorn workers (prometheus_client's multiprocess mode)."""

from __future__ import annotations

import concurrent.futures
import re
import threading
import time
import typing as t
import uuid

import httpx
import pytest
from flask import Flask
from harness import ROOT
from harness import start_server
from prometheus_client import CollectorRegistry

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import signals
from flask_mcp.contrib.prometheus import EXTENSION_KEY
from flask_mcp.contrib.prometheus import PRUNE_AT
from flask_mcp.contrib.prometheus import PrometheusMetrics
from flask_mcp.testing import MCPTestClient


def sample(text: str, name: str, **labels: str) -> float:
    """The value of the sample ``name{labels}`` in a scrape (0 if absent)."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.partition(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def make(**config: t.Any) -> tuple[MCP, Flask]:
    mcp = MCP(name="measured", version="1")
    PrometheusMetrics(mcp, registry=CollectorRegistry())

    @mcp.tool()
    def add(a: int, b: int) -> str:
        return str(a + b)

    @mcp.tool()
    def fail() -> str:
        raise RuntimeError("x")

    app = Flask(__name__)
    app.config.update(TESTING=True, SECRET_KEY="s", **config)
    mcp.init_app(app)
    metrics = t.cast(PrometheusMetrics, mcp.dispatcher.middleware.items[0])
    metrics.init_app(app)
    return mcp, app


def test_an_exception_counts_as_the_internal_error_the_client_got() -> None:
    """A middleware's bug is answered with -32603, its ``error_type`` (it was the class)."""
    mcp, app = make()

    @mcp.middleware
    def broken(call: t.Any, call_next: t.Any) -> dict[str, t.Any]:
        if call.method == "prompts/list":
            raise ValueError("a bug")
        return t.cast(dict[str, t.Any], call_next(call))

    with MCPTestClient(app) as client:
        with pytest.raises(MCPError):
            client.request("prompts/list", {})
        text = app.test_client().get("/metrics").get_data(as_text=True)
    assert sample(text, "mcp_server_errors_total", method="prompts/list", error_type="-32603") == 1
    assert "ValueError" not in text


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_requests_errors_durations_sessions(version: str) -> None:
    _, app = make()
    with MCPTestClient(app, protocol_version=version) as client:
        for _ in range(3):
            client.call_tool("add", {"a": 1, "b": 2})
        client.call_tool("fail")
        with pytest.raises(MCPError):
            client.call_tool("missing")
        text = app.test_client().get("/metrics").get_data(as_text=True)
    assert sample(text, "mcp_server_requests_total", method="tools/call", tool="add") == 3
    assert sample(text, "mcp_server_errors_total", tool="fail", error_type="tool_error") == 1
    assert sample(text, "mcp_server_errors_total", tool="unknown", error_type="-32602") == 1
    assert 'tool="missing"' not in text  # not a declared name: never a label
    count = sample(text, "mcp_server_operation_duration_seconds_count", tool="add", error_type="")
    assert count == 3
    sessions = sample(text, "mcp_server_sessions", server="measured")
    assert sessions == (1 if version == "2025-11-25" else 0)


def test_streams_and_tasks_gauges_fed_by_signals() -> None:
    _, app = make()
    signals.stream_opened.send(app, session_id="s", stream_id="a", kind="get")
    signals.stream_opened.send(app, session_id="s", stream_id="b", kind="get")
    signals.stream_closed.send(app, session_id="s", stream_id="a", kind="get", reason="end")
    signals.stream_opened.send(object(), session_id="s", stream_id="c", kind="get")  # not ours
    for task, status in (("t1", "working"), ("t2", "working"), ("t1", "input_required")):
        signals.task_status_changed.send(app, task_id=task, status=status)
    signals.task_status_changed.send(app, task_id="t2", status="completed")
    text = app.test_client().get("/metrics").get_data(as_text=True)
    assert sample(text, "mcp_server_open_streams", kind="get") == 1
    assert sample(text, "mcp_server_tasks", status="working") == 0
    assert sample(text, "mcp_server_tasks", status="input_required") == 1
    assert sample(text, "mcp_server_task_status_changes_total", status="completed") == 1


def test_a_task_is_counted_from_its_creation() -> None:
    """A task whose handler changes no status (no progress, no question) is ``working``
    from ``task_created`` on: the gauge counted no task until its first change."""
    mcp, app = make()
    release = threading.Event()

    @mcp.tool(task="optional")
    def quiet() -> str:
        release.wait(30)
        return "done"

    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        task = client.call_tool_as_task("quiet")
        assert task["status"] == "working"
        text = app.test_client().get("/metrics").get_data(as_text=True)
        assert sample(text, "mcp_server_tasks", status="working") == 1
        release.set()
        deadline = time.monotonic() + 30
        while mcp.stats(app)["running_requests"] and time.monotonic() < deadline:
            time.sleep(0.05)
    text = app.test_client().get("/metrics").get_data(as_text=True)
    assert sample(text, "mcp_server_tasks", status="working") == 0
    assert sample(text, "mcp_server_task_status_changes_total", status="completed") == 1


def test_tasks_that_ended_unseen_are_not_counted_for_ever() -> None:
    """A task whose record expired before its handler ended sends no terminal
    ``task_status_changed`` (nor does one another worker ended): the table of live tasks
    kept one entry per such task for ever, and the ``tasks`` gauge counted it."""
    mcp, app = make(MCP_TASK_TTL=0.05, MCP_TASK_MAX_RUNNING=100)

    @mcp.tool(task="optional")
    def held(ctx: Context) -> str:
        ctx.progress(1, 2)  # task_status_changed: working
        while True:  # until its record expires: the executor cancels its run then
            ctx.check_cancelled()
            time.sleep(0.01)

    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        for _ in range(4):
            for _ in range(40):
                assert client.call_tool_as_task("held")["status"] == "working"
            deadline = time.monotonic() + 30
            while mcp.stats(app)["running_requests"] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert mcp.stats(app)["running_requests"] == 0
    live = app.extensions[EXTENSION_KEY].metrics(app).live_tasks
    assert len(live) <= PRUNE_AT, len(live)
    text = app.test_client().get("/metrics").get_data(as_text=True)
    assert sample(text, "mcp_server_tasks", status="working") == len(live)


def test_client_chosen_names_add_no_series() -> None:
    """1,000 calls with random names and one with a 1 MB name: the series stay the same."""
    _, app = make()
    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        client.call_tool("add", {"a": 1, "b": 2})
        with pytest.raises(MCPError):
            client.call_tool("nope")
        before = app.test_client().get("/metrics").get_data(as_text=True)
        for n in range(1000):
            with pytest.raises(MCPError):
                client.call_tool(f"random-{n}-{uuid.uuid4().hex}")
        with pytest.raises(MCPError):
            client.request(f"made/up-{uuid.uuid4().hex}", {})
        huge = "x" * (1 << 20)
        with pytest.raises(MCPError):
            client.call_tool(huge)
        with pytest.raises(MCPError):
            client.get_prompt(huge, {})
        after = app.test_client().get("/metrics").get_data(as_text=True)

    def series(text: str) -> set[str]:
        return {line.rsplit(" ", 1)[0] for line in text.splitlines() if line.startswith("mcp_")}

    new = series(after) - series(before)
    assert new <= {
        'mcp_server_requests_total{method="unknown",tool=""}',
        'mcp_server_requests_created{method="unknown",tool=""}',
        'mcp_server_requests_total{method="prompts/get",tool="unknown"}',
        'mcp_server_requests_created{method="prompts/get",tool="unknown"}',
    } | {s for s in series(after) if 'method="unknown"' in s or 'method="prompts/get"' in s}
    assert all("random-" not in s and "made/up" not in s for s in series(after))
    assert len(after) < len(before) + 20_000  # no 1 MB label (the new series are a few lines)
    assert sample(after, "mcp_server_requests_total", method="tools/call", tool="unknown") == 1002


def test_label_values_are_capped() -> None:
    mcp = MCP(name="many", version="1")
    PrometheusMetrics(mcp, max_label_values=2, max_label_length=8)
    for n in range(5):
        mcp.add_tool(lambda: "ok", name=f"t{n}_is_a_long_name")
    app = Flask(__name__)
    mcp.init_app(app)
    t.cast(PrometheusMetrics, mcp.dispatcher.middleware.items[0]).init_app(app)
    with MCPTestClient(app) as client:
        for n in range(5):
            client.call_tool(f"t{n}_is_a_long_name")
        text = app.test_client().get("/metrics").get_data(as_text=True)
    found = re.findall(r'mcp_server_requests_total\{method="tools/call",tool="([^"]*)"', text)
    assert set(found) == {"t0_is_a_", "t1_is_a_", "other"}  # cut to 8; 2 values, then other
    assert sample(text, "mcp_server_requests_total", tool="other") == 3


def test_metrics_get_the_host_check_of_the_endpoint() -> None:
    _, app = make()
    client = app.test_client()
    assert client.get("/metrics").status_code == 200
    refused = client.get("/metrics", headers={"Host": "evil.example"})  # a loopback caller
    assert refused.status_code == 421
    app.config["MCP_ALLOWED_HOSTS"] = ["metrics.internal"]
    _, listed = make(MCP_ALLOWED_HOSTS=["metrics.internal"])
    remote = {"REMOTE_ADDR": "10.0.0.9"}
    assert listed.test_client().get("/metrics", environ_base=remote).status_code == 421
    ok = listed.test_client().get(
        "/metrics", headers={"Host": "metrics.internal"}, environ_base=remote
    )
    assert ok.status_code == 200


LISTEN = {"notifications": {"toolsListChanged": True}}


def listen_samples(text: str) -> dict[str, float]:
    """The ``subscriptions/listen`` samples of a scrape: requests, errors by type, durations."""
    method = "subscriptions/listen"
    found = {
        "requests": sample(text, "mcp_server_requests_total", method=method, tool=""),
        "durations": sample(text, "mcp_server_operation_duration_seconds_count", method=method),
        "ok": sample(
            text, "mcp_server_operation_duration_seconds_count", method=method, error_type=""
        ),
    }
    for error_type in ("cancelled", "shutdown", "-32602", "-32603"):
        found[error_type] = sample(
            text, "mcp_server_errors_total", method=method, error_type=error_type
        )
    return found


def test_a_listen_counts_as_a_request_when_it_ends() -> None:
    """A ``subscriptions/listen`` counts in requests, errors and durations as other methods
    do, when its stream ends: ok at ``MCP_SSE_MAX_STREAM_SECONDS``, ``cancelled`` when the
    client left, ok too when a stopping worker ended it with its result, ``shutdown`` when
    an interrupted stdio server cancelled it, the JSON-RPC code of a refusal.

    The middleware cannot wrap a stream that outlives its view: a listen counted nowhere.
    One the server ended as it stopped counted as ``cancelled``, as if its client had left,
    then as an error even when its client got its result: each deploy a burst of errors.
    """
    from wire import Wire

    _, app = make(MCP_SSE_MAX_STREAM_SECONDS=0.3, MCP_MAX_STREAMS=1)
    wire = Wire(app)
    held = wire.post("subscriptions/listen", LISTEN, request_id="a", buffered=False)
    chunks = iter(held.response)
    assert b"acknowledged" in next(chunks)
    scrape = app.test_client().get("/metrics").get_data(as_text=True)
    assert listen_samples(scrape)["requests"] == 0  # counted when it ends, as other requests
    busy = wire.post("subscriptions/listen", LISTEN, request_id="b")  # the one slot is held
    assert busy.status_code == 503
    bad = wire.post("subscriptions/listen", {"notifications": []}, request_id="c")
    assert bad.status_code == 400
    held.close()  # the client leaves
    whole = wire.post("subscriptions/listen", LISTEN, request_id="d")  # to its graceful end
    assert whole.get_data().count(b"data: ") == 2
    # A stopping worker ends a listen with its result, as the time bound does, and says
    # "shutdown"; an interrupted stdio server cancels it, and says "interrupted".
    ended = {"request_id": "e", "stream_id": "e", "duration": 1.0, "error": None}
    signals.listen_finished.send(app, reason="shutdown", **ended)
    signals.listen_finished.send(app, reason="interrupted", **{**ended, "stream_id": "f"})
    scrape = app.test_client().get("/metrics").get_data(as_text=True)
    assert listen_samples(scrape) == {
        "requests": 6, "durations": 6, "ok": 2, "cancelled": 1, "shutdown": 1, "-32602": 1,
        "-32603": 1,
    }  # fmt: skip


@pytest.mark.e2e
def test_a_listen_is_counted_on_gunicorn(serve: t.Any) -> None:
    """On a real server a listen that ended (``MCP_SSE_MAX_STREAM_SECONDS``) and one refused
    for its filter are in the scrape of ``/metrics``, by method and outcome."""
    from wire import headers_2026
    from wire import meta

    env = {"OBSERVE_PROMETHEUS": "1", "FLASK_MCP_SSE_MAX_STREAM_SECONDS": "0.5"}
    server = serve("tests._apps.observe:app", "gevent", env=env)

    def listen(request_id: str, params: dict[str, t.Any]) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen"}
        body["params"] = {**params, "_meta": meta()}
        headers = {**headers_2026("subscriptions/listen", params), "Connection": "close"}
        return httpx.post(server.url, json=body, headers=headers, timeout=30)

    ended = listen("ok", LISTEN)
    assert ended.status_code == 200 and ended.text.count("data: ") == 2, ended.text
    assert listen("bad", {"notifications": []}).status_code == 400
    scrape = httpx.get(f"{server.base_url}/metrics", headers={"Connection": "close"}).text
    found = listen_samples(scrape)
    assert (found["requests"], found["ok"], found["-32602"]) == (2, 1, 1), found


@pytest.mark.e2e
def test_two_gunicorn_workers_sum_in_one_scrape(tmp_path: t.Any) -> None:
    directory = tmp_path / "prom"
    directory.mkdir()
    env = {"OBSERVE_PROMETHEUS": "1", "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    config = ["-c", str(ROOT / "contrib" / "gunicorn.conf.py")]
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "work",
        "Connection": "close",
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    with start_server(
        "tests._apps.observe:app", "gevent", workers=2, env=env, extra_args=config
    ) as server:

        def call(n: int) -> str:
            body = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "work", "arguments": {}, "_meta": meta},
            }
            response = http.post(server.url, json=body, headers=headers)
            assert response.status_code == 200, response.text
            return t.cast(str, response.json()["result"]["content"][0]["text"])

        pids: list[str] = []
        # One client for every thread: httpx.post would build a client (and its TLS context)
        # per call, and threads starved of the GIL between connect and send outlast
        # gunicorn's keep-alive timeout (2 s), which also bounds the first request's read.
        with httpx.Client(timeout=30) as http, concurrent.futures.ThreadPoolExecutor(16) as pool:
            # The kernel decides which worker accepts a connection; one worker may take a
            # whole round, so rounds go on (at most 10) until both have served calls.
            for _ in range(10):
                pids += pool.map(call, range(len(pids), len(pids) + 60))
                if len(set(pids)) == 2:
                    break
        per_worker = {pid: pids.count(pid) for pid in set(pids)}
        scrapes = [
            httpx.get(f"{server.base_url}/metrics", headers={"Connection": "close"}).text
            for _ in range(4)
        ]
    print(f"{len(pids)} calls over 2 workers: {per_worker}")
    assert len(per_worker) == 2, f"both workers should have served calls: {per_worker}"
    for text in scrapes:  # whichever worker answers the scrape, it shows both workers' calls
        calls = sample(text, "mcp_server_requests_total", method="tools/call", tool="work")
        assert calls == len(pids)
        count = sample(text, "mcp_server_operation_duration_seconds_count", tool="work")
        assert count == len(pids)
    print(
        "scrape: mcp_server_requests_total{tool=work} =",
        sample(scrapes[0], "mcp_server_requests_total", tool="work"),
    )
