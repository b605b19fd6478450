"""``flask_mcp.contrib.opentelemetry``: spans and metrics, read back from the SDK's
in-memory exporter and metric reader."""

from __future__ import annotations

import threading
import time
import typing as t

import pytest
from flask import Flask
from opentelemetry.instrumentation.flask import FlaskInstrumentor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from opentelemetry.trace import StatusCode
from wire import initialize_request

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp.contrib.opentelemetry import MCPInstrumentor
from flask_mcp.testing import MCPTestClient
from flask_mcp.transport.listen import ListenCall
from flask_mcp.transport.stdio_channel import TRANSPORT_KEY

ERAS = ["2025-11-25", "2026-07-28"]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Telemetry:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self, kind: SpanKind | None = SpanKind.SERVER) -> list[ReadableSpan]:
        found = self.exporter.get_finished_spans()
        return [s for s in found if kind is None or s.kind == kind]

    def mcp_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.attributes and "mcp.method.name" in s.attributes]

    def points(self, name: str) -> list[t.Any]:
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found


def make(telemetry: Telemetry, **config: t.Any) -> tuple[MCP, Flask]:
    mcp = MCP(name="traced", version="1")
    otel = MCPInstrumentor(
        mcp,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )

    @mcp.tool()
    def add(a: int, b: int) -> str:
        return str(a + b)

    @mcp.tool()
    def talk(ctx: Context) -> str:
        ctx.log("info", "talking")
        return "said"

    @mcp.tool()
    def fail() -> str:
        raise RuntimeError("secret")

    @mcp.tool()
    def sample(ctx: Context) -> str:
        result = ctx.create_message(
            [{"role": "user", "content": {"type": "text", "text": "hi"}}], 10
        )
        return str(result["content"]["text"])

    @mcp.resource("data://one")
    def one() -> str:
        return "one"

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    app = Flask(__name__)
    app.config.update(TESTING=True, SECRET_KEY="s", **config)
    mcp.init_app(app)
    otel.init_app(app)
    return mcp, app


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry()


@pytest.mark.parametrize("version", ERAS)
def test_spans_of_tools_resources_prompts(telemetry: Telemetry, version: str) -> None:
    _, app = make(telemetry)
    with MCPTestClient(app, protocol_version=version) as client:
        client.call_tool("add", {"a": 1, "b": 2})
        client.read_resource("data://one")
        client.get_prompt("greet", {"name": "Ada"})
        session_id = client.session_id
    spans = {s.name: s for s in telemetry.mcp_spans()}
    tool = spans["tools/call add"]
    assert tool.kind == SpanKind.SERVER
    attributes = dict(tool.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "add"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["mcp.protocol.version"] == version
    assert attributes["jsonrpc.request.id"]
    assert "error.type" not in attributes and tool.status.status_code == StatusCode.UNSET
    if version == "2026-07-28":
        assert "mcp.session.id" not in attributes
    else:
        assert attributes["mcp.session.id"] == session_id
        assert spans["initialize"].attributes is not None
        assert spans["initialize"].attributes["mcp.protocol.version"] == version
        assert spans["initialize"].attributes["mcp.session.id"] == session_id
    read = spans["resources/read"]
    assert read.attributes and read.attributes["mcp.resource.uri"] == "data://one"
    prompt = spans["prompts/get greet"]
    assert prompt.attributes and prompt.attributes["gen_ai.prompt.name"] == "greet"
    assert tool.parent is None  # no HTTP span, no trace context: a root span
    points = telemetry.points("mcp.server.operation.duration")
    by_method = {
        p.attributes["mcp.method.name"]: p for p in points if "gen_ai.tool.name" not in p.attributes
    }
    assert "resources/read" in by_method
    tool_points = [p for p in points if p.attributes.get("gen_ai.tool.name") == "add"]
    assert tool_points and tool_points[0].count == 1 and tool_points[0].sum > 0
    assert "jsonrpc.request.id" not in tool_points[0].attributes  # not on metrics


@pytest.mark.parametrize("version", ERAS)
def test_errors(telemetry: Telemetry, version: str) -> None:
    _, app = make(telemetry)
    with MCPTestClient(app, protocol_version=version) as client:
        with pytest.raises(MCPError):
            client.call_tool("missing", {})
        assert client.call_tool("fail", {})["isError"] is True
    spans = {s.name: s for s in telemetry.mcp_spans()}
    missing = spans["tools/call unknown"]  # not a declared name: never a span name
    assert missing.attributes is not None
    assert missing.attributes["error.type"] == "-32602"
    assert missing.attributes["rpc.response.status_code"] == "-32602"
    assert missing.status.status_code == StatusCode.ERROR
    failed = spans["tools/call fail"]
    assert failed.attributes is not None and failed.attributes["error.type"] == "tool_error"
    assert failed.status.status_code == StatusCode.ERROR
    points = telemetry.points("mcp.server.operation.duration")
    assert any(p.attributes.get("error.type") == "-32602" for p in points)
    assert any(p.attributes.get("rpc.response.status_code") == "-32602" for p in points)


@pytest.mark.parametrize("version", ERAS)
def test_an_exception_is_the_internal_error_the_client_got(
    telemetry: Telemetry, version: str
) -> None:
    """A middleware's bug is answered with -32603: that is the span's ``error.type`` and
    ``rpc.response.status_code`` (it had the exception's class and no status code)."""
    mcp, app = make(telemetry)

    @mcp.middleware
    def broken(call: t.Any, call_next: t.Any) -> dict[str, t.Any]:
        if call.method == "prompts/list":
            raise ValueError("a bug")
        return t.cast(dict[str, t.Any], call_next(call))

    with MCPTestClient(app, protocol_version=version) as client, pytest.raises(MCPError) as raised:
        client.request("prompts/list", {})
    assert raised.value.code == -32603
    (span,) = [s for s in telemetry.mcp_spans() if s.name == "prompts/list"]
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == attributes["rpc.response.status_code"] == "-32603"
    assert span.status.status_code == StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]  # the class is there
    points = telemetry.points("mcp.server.operation.duration")
    (point,) = [p for p in points if p.attributes["mcp.method.name"] == "prompts/list"]
    assert point.attributes["error.type"] == point.attributes["rpc.response.status_code"]


def test_resource_subscriptions_name_their_resource(telemetry: Telemetry) -> None:
    """``mcp.resource.uri`` is conditionally required on every request with a resource URI:
    ``resources/subscribe`` and ``resources/unsubscribe`` spans had none."""
    _, app = make(telemetry)
    with MCPTestClient(app) as client:
        client.request("resources/subscribe", {"uri": "data://one"})
        client.request("resources/unsubscribe", {"uri": "data://one"})
    spans = {s.name: dict(s.attributes or {}) for s in telemetry.mcp_spans()}
    assert spans["resources/subscribe"]["mcp.resource.uri"] == "data://one"
    assert spans["resources/unsubscribe"]["mcp.resource.uri"] == "data://one"
    points = telemetry.points("mcp.server.operation.duration")
    assert all("mcp.resource.uri" not in p.attributes for p in points)  # spans only


def test_sampling_round_trip_is_a_child_client_span(telemetry: Telemetry) -> None:
    _, app = make(telemetry)

    asked: list[dict[str, t.Any]] = []

    def sampling(params: dict[str, t.Any]) -> dict[str, t.Any]:
        asked.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"}

    with MCPTestClient(app, sampling=sampling) as client:
        assert client.call_tool("sample", {})["content"][0]["text"] == "sampled"
    server = next(s for s in telemetry.mcp_spans() if s.name == "tools/call sample")
    child = next(s for s in telemetry.spans(SpanKind.CLIENT))
    assert child.name == "sampling/createMessage"
    assert child.attributes is not None
    assert child.attributes["mcp.method.name"] == "sampling/createMessage"
    assert child.parent is not None and server.context is not None
    assert child.parent.span_id == server.context.span_id
    assert child.context is not None and child.context.trace_id == server.context.trace_id
    assert child.end_time is not None and server.end_time is not None
    assert child.end_time <= server.end_time
    # The client gets the CLIENT span's context in the request's _meta, to continue the trace.
    traceparent = asked[0]["_meta"]["traceparent"]
    assert traceparent.startswith(f"00-{child.context.trace_id:032x}-{child.context.span_id:016x}-")


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("tool", ["add", "talk"])  # in the view, and in a greenlet of its own
def test_parent_from_meta_traceparent(telemetry: Telemetry, version: str, tool: str) -> None:
    _, app = make(telemetry)
    traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
    with MCPTestClient(app, protocol_version=version) as client:
        arguments = {"a": 1, "b": 2} if tool == "add" else {}
        client.call_tool(tool, arguments, traceparent=traceparent, tracestate="k=v")
    span = next(s for s in telemetry.mcp_spans() if s.name == f"tools/call {tool}")
    assert span.context is not None and f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT_ID
    assert span.parent.is_remote
    assert span.context.trace_state.get("k") == "v"


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("tool", ["add", "talk"])
def test_parent_from_the_flask_http_span(telemetry: Telemetry, version: str, tool: str) -> None:
    _, app = make(telemetry)
    FlaskInstrumentor().instrument_app(app, tracer_provider=telemetry.tracer_provider)
    try:
        with MCPTestClient(app, protocol_version=version) as client:
            client.call_tool(tool, {"a": 1, "b": 2} if tool == "add" else {})
            traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
            client.call_tool("add", {"a": 1, "b": 1}, traceparent=traceparent)
    finally:
        FlaskInstrumentor().uninstrument_app(app)
    spans = telemetry.spans(None)
    span = next(s for s in spans if s.name == f"tools/call {tool}")
    http = [
        s
        for s in spans
        if s.kind == SpanKind.SERVER and "mcp.method.name" not in (s.attributes or {})
    ]
    assert http, [s.name for s in spans]
    assert span.parent is not None
    parent = next(s for s in http if s.context and s.context.span_id == span.parent.span_id)
    assert (
        parent.attributes
        and parent.attributes.get("http.request.method", parent.attributes.get("http.method"))
        == "POST"
    )
    # With a traceparent in _meta, that is the parent and the HTTP span a link.
    linked = [
        s for s in telemetry.mcp_spans() if s.context and f"{s.context.trace_id:032x}" == TRACE_ID
    ]
    assert len(linked) == 1 and linked[0].links
    http_ids = {s.context.span_id for s in http if s.context}
    assert linked[0].links[0].context.span_id in http_ids


@pytest.mark.parametrize("version", ERAS)
def test_a_task_runs_in_a_span_of_the_request_that_created_it(
    telemetry: Telemetry, version: str
) -> None:
    """The work of a task was traced apart from its ``tools/call``: the task's handler runs
    in a greenlet or thread of its own, after the request, and a span made there was the
    root of a trace of its own. The run is a span now, child of the ``tools/call`` span
    and linked to it, and the handler's spans are its children."""
    mcp, app = make(telemetry)
    tracer = telemetry.tracer_provider.get_tracer("tests")

    @mcp.tool(task="optional")
    def crunch(fail: bool = False) -> str:
        with tracer.start_as_current_span("crunching"):
            if fail:
                raise MCPError(-32602, "bad input")
            return "crunched"

    with MCPTestClient(app, protocol_version=version) as client:
        done = client.wait_for_task(client.call_tool_as_task("crunch"))
        assert done["status"] == "completed", done
        failed = client.wait_for_task(client.call_tool_as_task("crunch", {"fail": True}))
        assert failed["status"] == "failed", failed
    spans = telemetry.spans(kind=None)
    calls = [s for s in spans if s.name == "tools/call crunch"]
    runs = [s for s in spans if s.name == "execute_tool crunch"]
    inner = [s for s in spans if s.name == "crunching"]
    assert len(calls) == len(runs) == len(inner) == 2, [s.name for s in spans]
    for call, run, work in zip(calls, runs, inner, strict=True):
        assert call.context is not None and run.context is not None
        assert run.parent is not None and run.parent.span_id == call.context.span_id
        assert run.context.trace_id == call.context.trace_id
        assert [link.context.span_id for link in run.links] == [call.context.span_id]
        assert run.kind == SpanKind.INTERNAL
        assert run.attributes is not None and run.attributes["gen_ai.tool.name"] == "crunch"
        assert work.parent is not None and work.parent.span_id == run.context.span_id
    assert runs[0].status.status_code == StatusCode.UNSET
    assert runs[1].status.status_code == StatusCode.ERROR
    assert runs[1].attributes is not None and runs[1].attributes["error.type"] == "-32602"


@pytest.mark.parametrize("version", ERAS)
def test_a_cancelled_task_run_ends_its_span_once(telemetry: Telemetry, version: str) -> None:
    mcp, app = make(telemetry)
    started = threading.Event()

    @mcp.tool(task="optional")
    def wait(ctx: Context) -> str:
        started.set()
        while True:
            ctx.check_cancelled()
            time.sleep(0.01)

    with MCPTestClient(app, protocol_version=version) as client:
        task = client.call_tool_as_task("wait")
        assert started.wait(10)
        client.cancel_task(task)
        deadline = time.monotonic() + 10
        while not [s for s in telemetry.spans(kind=None) if s.name == "execute_tool wait"]:
            assert time.monotonic() < deadline, "the run's span never ended"
            time.sleep(0.01)
    (run,) = [s for s in telemetry.spans(kind=None) if s.name == "execute_tool wait"]
    assert run.attributes is not None and run.attributes["error.type"] == "cancelled"
    assert run.status.status_code == StatusCode.ERROR


@pytest.mark.parametrize("version", ERAS)
def test_questions_of_a_task_are_client_spans_of_its_run(
    telemetry: Telemetry, version: str
) -> None:
    """``ctx.elicit`` and ``ctx.create_message`` inside a task are ``CLIENT`` spans, children
    of the run's span, ended when answered (with the client's error, if it refused) or,
    never answered, when the run ends (``no_response``).

    A task's handler runs in a greenlet or thread of its own, with no list of open child
    spans: its questions to the client made no span at all.
    """
    mcp, app = make(telemetry)
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    asking = threading.Event()

    @mcp.tool(task="optional")
    def interview(ctx: Context, refuse: bool = False, hang: bool = False) -> str:
        if hang:
            asking.set()
            ctx.elicit("Never answered?", schema)
        answer = ctx.elicit("Name?", schema)
        try:
            ctx.create_message([{"role": "user", "content": {"type": "text", "text": "hi"}}], 10)
        except Exception:
            if not refuse:
                raise
        return str(answer["content"]["name"])

    asked: list[dict[str, t.Any]] = []

    def elicitation(params: dict[str, t.Any]) -> dict[str, t.Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    refusing = [False]

    def sampling(params: dict[str, t.Any]) -> dict[str, t.Any]:
        if refusing[0]:
            raise MCPError(-1, "The user rejected the sampling request.")
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    with MCPTestClient(
        app, protocol_version=version, elicitation=elicitation, sampling=sampling
    ) as client:
        done = client.wait_for_task(client.call_tool_as_task("interview"))
        assert done["status"] == "completed", done
        if version == "2025-11-25":  # 2026-07-28 answers a task's questions with results only
            refusing[0] = True
            refused = client.wait_for_task(client.call_tool_as_task("interview", {"refuse": True}))
            assert refused["status"] == "completed", refused
        hung = client.call_tool_as_task("interview", {"hang": True})  # never waited for
        assert asking.wait(10)
        deadline = time.monotonic() + 10
        while client.get_task(hung)["status"] != "input_required":
            assert time.monotonic() < deadline, "the task never asked"
            time.sleep(0.01)
        client.cancel_task(hung)
        runs = 3 if version == "2025-11-25" else 2
        while len([s for s in telemetry.spans(None) if s.name == "execute_tool interview"]) < runs:
            assert time.monotonic() < deadline, "the run's span never ended"
            time.sleep(0.01)
    spans = telemetry.spans(kind=None)
    run_spans = [s for s in spans if s.name == "execute_tool interview"]
    assert len(run_spans) == runs
    by_run: dict[int, list[ReadableSpan]] = {}
    for span in telemetry.spans(SpanKind.CLIENT):
        assert span.parent is not None and span.context is not None
        by_run.setdefault(span.parent.span_id, []).append(span)
    got = []
    for run in run_spans:
        assert run.context is not None and run.end_time is not None
        children = by_run.get(run.context.span_id, [])
        for child in children:
            assert child.context is not None and child.context.trace_id == run.context.trace_id
            assert child.end_time is not None and child.end_time <= run.end_time
        got.append(
            [
                (c.name, (c.attributes or {}).get("error.type"), c.status.status_code)
                for c in sorted(children, key=lambda c: c.start_time or 0)
            ]
        )
    ok, error = StatusCode.UNSET, StatusCode.ERROR
    answered = [("elicitation/create", None, ok), ("sampling/createMessage", None, ok)]
    refusal = [("elicitation/create", None, ok), ("sampling/createMessage", "-1", error)]
    abandoned = [("elicitation/create", "no_response", error)]
    if version == "2025-11-25":
        assert got == [answered, refusal, abandoned]
    else:
        assert got == [answered, abandoned]
        # The client gets the CLIENT span's context in the question's _meta (at 2025-11-25
        # tasks/result relays the question in a CLIENT span of its own, whose context it gets).
        first_run = run_spans[0].context
        assert first_run is not None
        (first,) = [c for c in by_run[first_run.span_id] if c.name == "elicitation/create"]
        assert first.context is not None
        assert asked[0]["_meta"]["traceparent"].startswith(
            f"00-{first.context.trace_id:032x}-{first.context.span_id:016x}-"
        )


def test_session_duration(telemetry: Telemetry) -> None:
    _, app = make(telemetry)
    with MCPTestClient(app) as client:
        client.call_tool("add", {"a": 1, "b": 2})
    points = telemetry.points("mcp.server.session.duration")
    assert len(points) == 1 and points[0].count == 1
    assert points[0].attributes["mcp.protocol.version"] == "2025-11-25"


def test_network_attributes_say_how_the_request_came(telemetry: Telemetry) -> None:
    """Over HTTP ``tcp`` and ``http``; over stdio ``pipe`` (the conventions' value), not HTTP's.

    Spans and metrics of calls over stdio said ``tcp`` and ``http`` as well.
    """
    from wire import Pipes

    mcp, app = make(telemetry)
    with MCPTestClient(app) as client:
        client.call_tool("add", {"a": 1, "b": 2})
    pipes = Pipes(app, mcp)
    try:
        assert pipes.handshake()
        params = {"name": "sample", "arguments": {}}
        pipes.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        asked = pipes.receive()
        assert asked["method"] == "sampling/createMessage"
        answer = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
        pipes.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
        assert pipes.receive()["result"]["content"][0]["text"] == "hi"
    finally:
        pipes.close()
    http, stdio = (
        [dict(s.attributes or {}) for s in telemetry.mcp_spans() if s.name == "tools/call add"],
        [dict(s.attributes or {}) for s in telemetry.mcp_spans() if s.name == "tools/call sample"],
    )
    assert [(a["network.transport"], a["network.protocol.name"]) for a in http] == [("tcp", "http")]
    assert [a["network.transport"] for a in stdio] == ["pipe"]
    assert "network.protocol.name" not in stdio[0]
    (child,) = telemetry.spans(SpanKind.CLIENT)
    assert child.attributes and child.attributes["network.transport"] == "pipe"
    points = telemetry.points("mcp.server.operation.duration")
    transports = {
        p.attributes["gen_ai.tool.name"]: p.attributes["network.transport"]
        for p in points
        if "gen_ai.tool.name" in p.attributes
    }
    assert transports == {"add": "tcp", "sample": "pipe"}
    # network.protocol.name is on the metrics as well (recommended by the conventions).
    protocols = {
        p.attributes["gen_ai.tool.name"]: p.attributes.get("network.protocol.name")
        for p in points
        if "gen_ai.tool.name" in p.attributes
    }
    assert protocols == {"add": "http", "sample": None}
    sessions = sorted(
        (p.attributes["network.transport"], p.attributes.get("network.protocol.name", ""))
        for p in telemetry.points("mcp.server.session.duration")
    )
    assert sessions == [("pipe", ""), ("tcp", "http")]


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_spans_on_gunicorn_with_the_official_client(
    serve: t.Any, worker: str, tmp_path: t.Any
) -> None:
    """Each MCP span is a child of the Flask HTTP span of its POST (or of the client's
    trace context, when the client sends one in _meta), in both eras."""
    import json

    import anyio
    from mcp import Client

    spans_file = tmp_path / "spans.jsonl"
    server = serve(
        "tests._apps.observe:app",
        worker,
        env={"OBSERVE_OTEL": str(spans_file), "OBSERVE_AUDIT": "1"},
    )

    async def main() -> None:
        for mode in ("legacy", "2026-07-28"):
            async with Client(server.url, mode=mode) as client:
                await client.call_tool("add", {"a": 1, "b": 2})
                await client.call_tool("echo", {"text": "hi"})

    anyio.run(main)
    server.stop()
    spans = [json.loads(line) for line in spans_file.read_text().splitlines()]
    by_id = {span["span_id"]: span for span in spans}
    mcp_spans = [s for s in spans if "mcp.method.name" in s["attributes"]]
    calls = [s for s in mcp_spans if s["attributes"]["mcp.method.name"] == "tools/call"]
    assert sorted(s["name"] for s in calls) == ["tools/call add"] * 2 + ["tools/call echo"] * 2
    versions = {s["attributes"]["mcp.protocol.version"] for s in calls}
    assert versions == {"2025-11-25", "2026-07-28"}
    for span in calls:
        assert span["kind"] == "SERVER"
        assert span["attributes"]["gen_ai.operation.name"] == "execute_tool"
        parent = by_id.get(span["parent_id"])
        # The official client sends no trace context unless it is instrumented itself:
        # the parent is the HTTP span of the POST that carried the request.
        assert parent is not None, span
        assert parent["kind"] == "SERVER" and "mcp.method.name" not in parent["attributes"]
        assert parent["trace_id"] == span["trace_id"]


def test_client_chosen_names_add_no_metric_streams_or_span_names(telemetry: Telemetry) -> None:
    """1,000 calls with random names and one with a 1 MB name: no new attribute values."""
    import uuid

    _, app = make(telemetry)
    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        client.call_tool("add", {"a": 1, "b": 2})
        for n in range(1000):
            with pytest.raises(MCPError):
                client.call_tool(f"random-{n}-{uuid.uuid4().hex}")
        with pytest.raises(MCPError):
            client.call_tool("x" * (1 << 20))
        with pytest.raises(MCPError):
            client.request(f"made/up-{uuid.uuid4().hex}", {})
    points = telemetry.points("mcp.server.operation.duration")
    tools = {p.attributes.get("gen_ai.tool.name") for p in points}
    methods = {p.attributes.get("mcp.method.name") for p in points}
    assert tools == {None, "add", "unknown"}
    assert all(not m.startswith("made/") for m in methods)
    names = {span.name for span in telemetry.mcp_spans()}
    assert names <= {"server/discover", "tools/list", "tools/call add", "tools/call unknown"}
    assert (
        max(len(str(v)) for s in telemetry.mcp_spans() for v in (s.attributes or {}).values()) < 200
    )


def test_an_app_without_init_app_is_not_traced(telemetry: Telemetry) -> None:
    mcp, app = make(telemetry)
    other = Flask(__name__)
    other.config.update(TESTING=True, SECRET_KEY="s")
    mcp.init_app(other)
    with MCPTestClient(other) as client:
        client.call_tool("add", {"a": 1, "b": 2})
    assert telemetry.mcp_spans() == []
    with pytest.raises(RuntimeError, match="already registered"):
        t.cast(MCPInstrumentor, mcp.dispatcher.middleware.items[0]).init_app(app)


def test_sessions_ended_unseen_are_not_kept(telemetry: Telemetry) -> None:
    """A session ended without ``session_closed`` here (one another worker reaped, or ended
    for room before its handshake finished) is not kept for ever: bare ``initialize``
    requests at ``MCP_MAX_SESSIONS`` made the instrumentor's table grow one a request."""
    from flask_mcp.contrib.opentelemetry import EXTENSION_KEY

    mcp, app = make(telemetry, MCP_MAX_SESSIONS=2, MCP_HANDSHAKE_TIMEOUT=0.001)
    client = app.test_client()
    body = initialize_request()
    headers = {"Accept": "application/json, text/event-stream"}
    for _ in range(300):
        time.sleep(0.002)  # the oldest session is past its handshake timeout
        assert client.post("/mcp", json=body, headers=headers).status_code == 200
    assert mcp.stats(app)["sessions"] == 2
    kept = app.extensions[EXTENSION_KEY]._of(app).sessions
    assert len(kept) < 100, len(kept)


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_a_timed_out_request_is_the_error_the_client_got_in_spans_and_metrics(
    serve: t.Any, worker: str, tmp_path: t.Any
) -> None:
    """A request ``MCP_REQUEST_TIMEOUT`` ended is an ERROR span, and a Prometheus error, of the
    answer the client got: ``tool_error`` for a tool, the JSON-RPC code for another method, in
    both eras. Both said ``RequestCancelled`` on gevent (the handler interrupted) and success
    on gthread (the handler ran on and returned)."""
    import json
    from concurrent.futures import ThreadPoolExecutor

    import httpx
    from wire import headers_2026
    from wire import meta
    from wire import sse_data
    from wire import start_session

    spans_file = tmp_path / "spans.jsonl"
    env = {
        "OBSERVE_OTEL": str(spans_file),
        "OBSERVE_PROMETHEUS": "1",
        "FLASK_MCP_REQUEST_TIMEOUT": "0.2",
    }
    server = serve("tests._apps.observe:app", worker, env=env)
    tool = {"name": "dawdle", "arguments": {"seconds": 2}}
    prompt = {"name": "dawdling", "arguments": {"seconds": "2"}}
    with httpx.Client(timeout=30) as http:
        session = start_session(http, server.url)
        posts = [
            (session, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": tool}),
            (session, {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": prompt}),
            (
                {**headers_2026("tools/call", tool), "Content-Type": "application/json"},
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {**tool, "_meta": meta()},
                },
            ),
        ]
        with ThreadPoolExecutor(3) as pool:
            answers = list(
                pool.map(lambda post: http.post(server.url, headers=post[0], json=post[1]), posts)
            )
    replies = [
        sse_data(a.text)[-1] if "event-stream" in a.headers["content-type"] else a.json()
        for a in answers
    ]
    assert replies[0]["result"]["isError"] is True and replies[2]["result"]["isError"] is True
    assert replies[1]["error"]["code"] == -32001
    deadline = time.monotonic() + 10  # a thread's handler runs on to its end: its span then
    calls: list[dict[str, t.Any]] = []
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
        lines = spans_file.read_text().splitlines() if spans_file.exists() else []
        spans = [json.loads(line) for line in lines]
        calls = [s for s in spans if s["name"] in ("tools/call dawdle", "prompts/get dawdling")]
    got = sorted(
        (
            s["attributes"]["mcp.protocol.version"],
            s["name"],
            s["status"],
            s["attributes"].get("error.type"),
            s["attributes"].get("rpc.response.status_code"),
        )
        for s in calls
    )
    assert got == [
        ("2025-11-25", "prompts/get dawdling", "ERROR", "-32001", "-32001"),
        ("2025-11-25", "tools/call dawdle", "ERROR", "tool_error", None),
        ("2026-07-28", "tools/call dawdle", "ERROR", "tool_error", None),
    ]
    scrape = httpx.get(server.url.rsplit("/", 1)[0] + "/metrics").text
    errors = sorted(
        line.split("{", 1)[1]
        for line in scrape.splitlines()
        if line.startswith("mcp_server_errors_total{")
    )
    assert errors == [
        'error_type="-32001",method="prompts/get",tool="dawdling"} 1.0',
        'error_type="tool_error",method="tools/call",tool="dawdle"} 2.0',
    ]


@pytest.mark.parametrize("failing", ["ended_early", "error_type"])
def test_a_span_ends_and_its_context_is_detached_when_its_bookkeeping_raises(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """The middleware ends its span and detaches its context whatever its last steps raise.

    Both came after ``ended_early`` and ``LabelBounds.error_type`` in its ``finally``: if
    either raised, the span never ended (never exported) and stayed the current span of
    what ran next in the worker, the parent of its spans.
    """
    from opentelemetry import trace

    from flask_mcp.contrib import labels
    from flask_mcp.contrib import opentelemetry as instrumentation

    mcp = MCP(name="traced", version="1")
    current_after: list[bool] = []

    @mcp.middleware  # outside the instrumentor's: sees the context it leaves behind
    def outer(call: t.Any, call_next: t.Any) -> dict[str, t.Any]:
        try:
            return t.cast(dict[str, t.Any], call_next(call))
        finally:
            if call.method == "tools/call":
                current_after.append(trace.get_current_span().get_span_context().is_valid)

    otel = MCPInstrumentor(
        mcp, tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )

    @mcp.tool()
    def add(a: int, b: int) -> str:
        return str(a + b)

    app = Flask(__name__)
    mcp.init_app(app)
    otel.init_app(app)

    def broken(*args: t.Any) -> t.Any:
        raise RuntimeError("a bug in the instrumentor's bookkeeping")

    from wire import send_2026

    if failing == "ended_early":
        monkeypatch.setattr(instrumentation, "ended_early", broken)
    else:  # the error type of a request the server ended early (cancelled)
        ended = ("cancelled", None, "The request was cancelled.")
        monkeypatch.setattr(instrumentation, "ended_early", lambda call: ended)
        monkeypatch.setattr(labels.LabelBounds, "error_type", broken)
    response = send_2026(
        app.test_client(), "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
    )
    assert response.json["error"]["code"] == -32603  # the raise is answered as any bug
    assert current_after == [False]
    assert [s.name for s in telemetry.mcp_spans() if s.name.startswith("tools/call")] == [
        "tools/call add"
    ]


# -- subscriptions/listen ----------------------------------------------------------------

LISTEN = {"notifications": {"toolsListChanged": True}}


def listen_spans(telemetry: Telemetry) -> dict[str, dict[str, t.Any]]:
    """The ``subscriptions/listen`` spans, by request id: attributes, status, parent."""
    found = {}
    for span in telemetry.mcp_spans():
        if span.name == "subscriptions/listen":
            attributes = dict(span.attributes or {})
            parent = f"{span.parent.span_id:016x}" if span.parent else None
            found[attributes["jsonrpc.request.id"]] = {
                **attributes,
                "status": span.status.status_code,
                "parent": parent,
                "trace": f"{span.context.trace_id:032x}" if span.context else None,
            }
    return found


def listen_points(telemetry: Telemetry) -> list[tuple[str, str, int]]:
    """The listens' ``mcp.server.operation.duration`` points: error type, transport, count."""
    return sorted(
        (p.attributes.get("error.type", ""), p.attributes["network.transport"], p.count)
        for p in telemetry.points("mcp.server.operation.duration")
        if p.attributes["mcp.method.name"] == "subscriptions/listen"
    )


def test_a_listen_over_http_is_a_span_from_its_opening_to_its_end(telemetry: Telemetry) -> None:
    """A listen is a SERVER span as every other request, ended with the stream: ok when
    ``MCP_SSE_MAX_STREAM_SECONDS`` or a stopping worker ended it with its result,
    ``cancelled`` when the client left, the JSON-RPC code of a refusal. Its parent is the
    client's trace context.

    A listen had no span, no duration and no request signals at all: the middleware
    cannot wrap a stream that outlives its view. One a stopping worker ended was an
    error, though its client got its result: each deploy a burst of failed spans.
    """
    from wire import Wire
    from wire import meta

    mcp, app = make(telemetry, MCP_SSE_MAX_STREAM_SECONDS=0.3, MCP_MAX_STREAMS=1)
    wire = Wire(app)
    traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
    held = wire.post(
        "subscriptions/listen", LISTEN, request_id="a", buffered=False, traceparent=traceparent
    )
    chunks = iter(held.response)
    assert b"acknowledged" in next(chunks)
    busy = wire.post("subscriptions/listen", LISTEN, request_id="a")  # the one slot is held
    assert busy.status_code == 503
    bad = wire.post("subscriptions/listen", {"notifications": []}, request_id="b")
    assert bad.status_code == 400
    held.close()  # the client leaves
    whole = wire.post("subscriptions/listen", LISTEN, request_id="c")  # to its graceful end
    assert whole.get_data().count(b"data: ") == 2
    # A stopping worker ends a listen with its result, as the time bound does ("shutdown").
    ListenCall(mcp.state(app), "d", {"_meta": meta()}).finish("shutdown")
    spans = listen_spans(telemetry)
    assert sorted(spans) == ["a", "b", "c", "d"]  # "a" twice: refused, and left
    (left,) = [
        s
        for s in telemetry.mcp_spans()
        if s.attributes and s.attributes.get("error.type") == "cancelled"
    ]
    assert left.context is not None and f"{left.context.trace_id:032x}" == TRACE_ID
    assert left.parent is not None and f"{left.parent.span_id:016x}" == PARENT_ID
    assert left.status.status_code == StatusCode.ERROR
    refused = [
        dict(s.attributes or {})
        for s in telemetry.mcp_spans()
        if s.name == "subscriptions/listen" and s.status.status_code == StatusCode.ERROR
    ]
    assert sorted(
        (a["jsonrpc.request.id"], a["error.type"], a.get("rpc.response.status_code"))
        for a in refused
    ) == [("a", "-32603", "-32603"), ("a", "cancelled", None), ("b", "-32602", "-32602")]
    for ended in (spans["c"], spans["d"]):
        assert ended["status"] == StatusCode.UNSET and "error.type" not in ended
    ended = spans["c"]
    assert ended["mcp.method.name"] == "subscriptions/listen"
    assert ended["mcp.protocol.version"] == "2026-07-28"
    assert (ended["network.transport"], ended["network.protocol.name"]) == ("tcp", "http")
    assert "mcp.session.id" not in ended
    assert listen_points(telemetry) == [
        ("", "tcp", 2), ("-32602", "tcp", 1), ("-32603", "tcp", 1), ("cancelled", "tcp", 1)
    ]  # fmt: skip


def test_a_listen_over_stdio_is_a_span_from_its_opening_to_its_end(telemetry: Telemetry) -> None:
    """Over stdio as over HTTP: the client's cancel and a closed stdin are ``cancelled``,
    a refusal its JSON-RPC code; the parent is the client's trace context. A listen the
    interrupted server cancelled (no result) is ``shutdown``."""
    from wire import Pipes
    from wire import meta

    mcp, app = make(telemetry)
    pipes = Pipes(app, mcp)
    traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
    try:
        for request_id, params in (
            ("a", {**LISTEN, "_meta": meta(traceparent=traceparent)}),
            ("b", {"notifications": [], "_meta": meta()}),
            ("c", {**LISTEN, "_meta": meta()}),
        ):
            message = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen"}
            pipes.send({**message, "params": params})
            answer = pipes.receive()
            if request_id == "b":
                assert answer["error"]["code"] == -32602
            else:
                assert answer["method"] == "notifications/subscriptions/acknowledged"
        pipes.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}}
        )
    finally:
        pipes.close()  # "c" ends with stdin
    with app.test_request_context(environ_base={TRANSPORT_KEY: "stdio"}):
        ListenCall(mcp.state(app), "d", {"_meta": meta()}).finish("interrupted")  # SIGINT
    spans = listen_spans(telemetry)
    assert sorted(
        (i, s["error.type"], s.get("rpc.response.status_code"), s["network.transport"])
        for i, s in spans.items()
    ) == [
        ("a", "cancelled", None, "pipe"),
        ("b", "-32602", "-32602", "pipe"),
        ("c", "cancelled", None, "pipe"),
        ("d", "shutdown", None, "pipe"),
    ]
    assert spans["d"]["status"] == StatusCode.ERROR
    assert spans["a"]["trace"] == TRACE_ID and spans["a"]["parent"] == PARENT_ID
    assert spans["c"]["trace"] != TRACE_ID
    assert spans["a"]["mcp.protocol.version"] == "2026-07-28"
    assert "network.protocol.name" not in spans["a"]
    assert listen_points(telemetry) == [
        ("-32602", "pipe", 1), ("cancelled", "pipe", 2), ("shutdown", "pipe", 1)
    ]  # fmt: skip


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_listen_spans_on_gunicorn(serve: t.Any, worker: str, tmp_path: t.Any) -> None:
    """On a real server a listen's span ends with its stream: ok at its graceful end
    (``MCP_SSE_MAX_STREAM_SECONDS``), ``cancelled`` when the client closed the connection,
    ``-32602`` for a malformed filter; a child of the client's trace context, else of the
    HTTP span of its POST."""
    import http.client
    import json

    from wire import headers_2026
    from wire import meta

    spans_file = tmp_path / "spans.jsonl"
    env = {"OBSERVE_OTEL": str(spans_file), "FLASK_MCP_SSE_MAX_STREAM_SECONDS": "1"}
    server = serve("tests._apps.observe:app", worker, env=env)
    traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"

    def post(request_id: str, params: dict[str, t.Any], **extra: str) -> t.Any:
        body = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen"}
        body["params"] = {**params, "_meta": meta(**extra)}
        headers = {
            **headers_2026("subscriptions/listen", params),
            "Content-Type": "application/json",
        }
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("POST", "/mcp", json.dumps(body), headers)
        return conn, conn.getresponse()

    conn, left = post("gone", LISTEN)
    assert left.readline() == b"event: message\n"
    assert b"notifications/subscriptions/acknowledged" in left.readline()
    left.close()
    conn.close()  # the client leaves
    conn, whole = post("ok", LISTEN, traceparent=traceparent)
    assert whole.read().count(b"data: ") == 2  # the acknowledgement, the result
    conn.close()
    conn, bad = post("bad", {"notifications": []})
    assert bad.status == 400
    conn.close()
    deadline = time.monotonic() + 15  # the server sees the client gone within a second
    listens: dict[str, dict[str, t.Any]] = {}
    while len(listens) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
        lines = spans_file.read_text().splitlines() if spans_file.exists() else []
        spans = {s["span_id"]: s for s in map(json.loads, lines)}
        listens = {
            s["attributes"]["jsonrpc.request.id"]: s
            for s in spans.values()
            if s["name"] == "subscriptions/listen"
        }
    got = {
        request_id: (span["status"], span["attributes"].get("error.type"))
        for request_id, span in listens.items()
    }
    assert got == {
        "ok": ("UNSET", None),
        "gone": ("ERROR", "cancelled"),
        "bad": ("ERROR", "-32602"),
    }
    ok = listens["ok"]
    assert (ok["trace_id"], ok["parent_id"]) == (TRACE_ID, PARENT_ID)
    assert ok["attributes"]["network.transport"] == "tcp"
    http_span = spans[listens["gone"]["parent_id"]]  # no trace context: the POST's span
    assert http_span["kind"] == "SERVER" and "mcp.method.name" not in http_span["attributes"]
