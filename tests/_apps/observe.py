"""An MCP app with the observability integrations, configured from the environment.

- ``FLASK_MCP_*``: the app's ``MCP_*`` keys (``from_prefixed_env``);
- ``OBSERVE_TOOL_LIMIT``: a per-tool rate limit of ``add`` and ``work`` (``"40/hour"``), counted in
  ``MCP_RATELIMIT_STORAGE_URI`` under the key prefix ``OBSERVE_PREFIX``;
- ``OBSERVE_PROMETHEUS=1``: Prometheus metrics at ``/metrics``
  (``PROMETHEUS_MULTIPROC_DIR`` for several workers);
- ``OBSERVE_OTEL=<file>``: OpenTelemetry spans of the Flask instrumentation and of
  ``MCPInstrumentor``, one JSON line per finished span appended to ``<file>``;
- ``OBSERVE_AUDIT=1``: a middleware that appends ``"audited"`` to tool results;
- ``OBSERVE_SIGNALS=<file>``: the request signals (``request_started``,
  ``request_finished``, ``request_cancelled``), ``listen_finished`` and ``stream_closed``,
  one JSON line each appended to ``<file>``.

``GET /pid`` answers with the worker's process id.
"""

from __future__ import annotations

import os
import time
import typing as t

from flask import Flask

from flask_mcp import MCP
from flask_mcp import CallInfo
from flask_mcp import Context

mcp = MCP(name="observe", version="1.0.0")

if os.environ.get("OBSERVE_OTEL"):
    import json
    import threading

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from flask_mcp.contrib.opentelemetry import MCPInstrumentor

    class JSONLines(SpanExporter):
        lock = threading.Lock()

        def export(self, spans: t.Any) -> SpanExportResult:
            with self.lock, open(os.environ["OBSERVE_OTEL"], "a") as out:
                for span in spans:
                    record = {
                        "name": span.name,
                        "kind": span.kind.name,
                        "trace_id": f"{span.context.trace_id:032x}",
                        "span_id": f"{span.context.span_id:016x}",
                        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                        "attributes": dict(span.attributes or {}),
                        "status": span.status.status_code.name,
                    }
                    out.write(json.dumps(record) + "\n")
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JSONLines()))
    otel = MCPInstrumentor(mcp, tracer_provider=provider)  # first: its span covers the others


@mcp.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@mcp.tool()
def echo(text: str, ctx: Context) -> str:
    """Echo, from a handler with a Context."""
    ctx.log("info", "echo")
    return text


@mcp.tool()
def work() -> str:
    """Work for 50 ms (other requests run meanwhile); return the worker's process id."""
    time.sleep(0.05)
    return str(os.getpid())


@mcp.tool()
def dawdle(seconds: float) -> str:
    """Sleep ``seconds``: past a short ``MCP_REQUEST_TIMEOUT``, the request times out."""
    time.sleep(seconds)
    return "woke"


@mcp.prompt()
def dawdling(seconds: str) -> str:
    """Sleep ``seconds``, as ``dawdle`` does, for a method that times out with an error."""
    time.sleep(float(seconds))
    return "woke"


if os.environ.get("OBSERVE_AUDIT"):

    @mcp.middleware
    def audit(call: CallInfo, call_next: t.Any) -> dict[str, t.Any]:
        if call.kind == "tool" and call.name == "add":
            arguments = dict(call.arguments)
            arguments["a"] = int(arguments.get("a", 0)) * 10
            call.params = {**call.params, "arguments": arguments}
        result = t.cast(dict[str, t.Any], call_next(call))
        if call.kind == "tool":
            extra = {"type": "text", "text": f"audited {call.name} {call.era}"}
            result = {**result, "content": [*result["content"], extra]}
        return result


if os.environ.get("OBSERVE_TOOL_LIMIT"):
    from flask_mcp.contrib.ratelimit import RateLimiter

    limiter = RateLimiter(mcp, key_prefix=os.environ.get("OBSERVE_PREFIX", "observe"))
    limiter.limit(os.environ["OBSERVE_TOOL_LIMIT"], per="tool", tools=["add", "work"])

app = Flask(__name__)
app.config.from_prefixed_env()
mcp.init_app(app)

if os.environ.get("OBSERVE_PROMETHEUS"):
    from flask_mcp.contrib.prometheus import PrometheusMetrics

    PrometheusMetrics(mcp, app)

if os.environ.get("OBSERVE_OTEL"):
    from opentelemetry.instrumentation.flask import FlaskInstrumentor

    otel.init_app(app)
    FlaskInstrumentor().instrument_app(app, tracer_provider=provider)


if os.environ.get("OBSERVE_SIGNALS"):
    import json

    from flask_mcp import signals

    def record(name: str) -> t.Callable[..., None]:
        def receiver(sender: t.Any, **kwargs: t.Any) -> None:
            kwargs.pop("duration", None)
            with open(os.environ["OBSERVE_SIGNALS"], "a") as out:
                out.write(json.dumps({"signal": name, **kwargs}) + "\n")

        return receiver

    recorded = ("request_started", "request_finished", "request_cancelled")
    for name in (*recorded, "listen_finished", "stream_closed"):
        getattr(signals, name).connect(record(name), app, weak=False)


@app.get("/pid")
def worker_pid() -> dict[str, int]:
    return {"pid": os.getpid()}
